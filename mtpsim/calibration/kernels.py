"""The primitive torch calls, one function per op family, and builders of timed cases.

The calls mirror how the verification mode's layers compute (mtpsim/verify/layers.py): F.linear
for weights, SDPA with a boolean mask (enable_gqa when KV heads are fewer), absorbed MLA over
one latent cache, experts one by one after a softmax top-k, the centroid head's gather + einsum,
RMSNorm and rotate-half RoPE. Whole layers (layers.py) are built from these same functions.

A case is `(inputs, fn)`: `inputs` a list of rotated input sets, `fn(set)` runs the op once.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from mtpsim.calibration.timing import Pool

# ----------------------------------------------------------------------------- primitives


def rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on the last dim of x [B, q, heads, dim] at positions pos [B, q]."""
    half = x.shape[-1] // 2
    freq = 10000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angle = (pos[..., None].float() * freq)[:, :, None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:2 * half]
    return torch.cat([a * cos - b * sin, a * sin + b * cos, x[..., 2 * half:]], dim=-1)


def causal_mask(q: int, visible: int, window: int, device) -> torch.Tensor:
    """[q, visible] boolean: query i (at position visible - q + i) sees keys <= its position,
    and within `window` of it when window > 0."""
    qpos = torch.arange(visible - q, visible, device=device)[:, None]
    kpos = torch.arange(visible, device=device)[None, :]
    ok = kpos <= qpos
    return ok & (kpos > qpos - window) if window else ok


def attend(query, keys, values, mask, scale=None) -> torch.Tensor:
    """SDPA over [B, heads, q, dim] queries and [B, kv_heads, n, dim] keys / values."""
    return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale,
                                          enable_gqa=query.shape[1] != keys.shape[1])


def write_kv(cache: torch.Tensor, new: torch.Tensor, start: int) -> None:
    """new [B, q, heads, dim] into cache [B, heads, capacity, dim] at start..start+q (as index)."""
    B, q = new.shape[:2]
    pos = torch.arange(start, start + q, device=new.device)[None, :].expand(B, q)
    rows = torch.arange(B, device=new.device)[:, None].expand(B, q)
    cache[rows, :, pos] = new


def moe_experts(x, logits, w13, w2, top_k: int) -> torch.Tensor:
    """Softmax top-k routing, each touched expert over its tokens, weighted combine."""
    weights, experts = torch.softmax(logits, -1).topk(top_k, -1)
    weights = weights / weights.sum(-1, keepdim=True)
    order = experts.flatten().argsort()
    token = order // top_k
    counts = torch.bincount(experts.flatten(), minlength=w13.shape[0]).tolist()
    xs, outs, start = x[token], [], 0
    for e, n in enumerate(counts):
        if n:
            gate, up = (xs[start:start + n] @ w13[e]).chunk(2, -1)
            outs.append((F.silu(gate) * up) @ w2[e])
            start += n
    routed = torch.cat(outs) * weights.flatten()[order, None]
    return torch.zeros_like(x).index_add_(0, token, routed)


def centroid_expand(x, scores, rows, top: int) -> torch.Tensor:
    """Top clusters of the centroid scores, their rows gathered, logits by einsum."""
    clusters = scores.topk(top, -1).indices
    return torch.einsum("td,tcrd->tcr", x, rows[clusters]).flatten(1)


def norms_rope_act(x, attn_out, ffn_out, q, k, pos, gate_up, norm_w) -> torch.Tensor:
    """The elementwise work around one layer's GEMMs: two RMSNorms, RoPE on q and k, two
    residual adds, SiLU x up."""
    h = F.rms_norm(x, norm_w.shape, norm_w)
    rope(q, pos), rope(k, pos)
    x = x + attn_out
    h = F.rms_norm(x, norm_w.shape, norm_w)
    gate, up = gate_up.chunk(2, -1)
    F.silu(gate) * up
    return x + ffn_out + h


# ----------------------------------------------------------------------------- cases

def case(family: str, p: dict, pool: Pool):
    """Rotated inputs and the call for one grid point of `family`."""
    return {"gemm": _gemm, "lm_head": _lm_head, "attention": _attention, "moe": _moe,
            "elementwise": _elementwise}[family](p, pool)


def _gemm(p, pool):
    sets = pool.sets(lambda: (pool.rand(p["m"], p["k"]), pool.rand(p["n"], p["k"])))
    return sets, lambda s: F.linear(s[0], s[1])


def _lm_head(p, pool):
    if p["kind"] == "full":
        return _gemm(p, pool)
    m, d, n, top = p["m"], p["k"], p["n"], 32
    per = max(1, n // top)                      # rows per cluster; 4 * top clusters to choose from
    sets = pool.sets(lambda: (pool.rand(m, d), pool.rand(m, 4 * top), pool.rand(4 * top, per, d)))
    return sets, lambda s: centroid_expand(s[0], s[1], s[2], top)


def _attention(p, pool):
    B, q, kv, h, kvh = p["batch"], p["q"], p["kv"], p["heads"], p["kv_heads"]
    hd, vd, dev = p["head_dim"], p["v_head_dim"], pool.device
    mask = causal_mask(q, kv, 0, dev)
    if p["kind"] == "mla":  # one latent head: keys [latent | rope], values the latent part
        def make():
            return pool.rand(B, h, q, hd), pool.rand(B, 1, kv, hd), pool.rand(B, q, 1, hd)
        sets = pool.sets(make)

        def run(s):
            write_kv(s[1], s[2], kv - q)
            return attend(s[0], s[1], s[1][..., :vd], mask, scale=hd ** -0.5)
        return sets, run
    cap = kv + (kv if p["kind"] == "swa" else 0)  # a sliding layer's cache runs past its window
    sets = pool.sets(lambda: (pool.rand(B, h, q, hd), pool.rand(B, kvh, cap, hd), pool.rand(B, kvh, cap, vd),
                              pool.rand(B, q, kvh, hd), pool.rand(B, q, kvh, vd)))
    if p["kind"] == "frozen":  # query-only: reads another layer's cache, writes nothing
        seen = torch.ones(q, kv, dtype=torch.bool, device=dev)
        return sets, lambda s: attend(s[0], s[1][:, :, :kv], s[2][:, :, :kv], seen)
    start = cap - kv  # swa: the window is the last kv positions of a longer cache

    def run(s):
        write_kv(s[1], s[3], cap - q)
        write_kv(s[2], s[4], cap - q)
        return attend(s[0], s[1][:, :, start:], s[2][:, :, start:], mask)
    return sets, run


def _moe(p, pool):
    T, u, k, d, inter, e = p["tokens"], p["touched"], p["top_k"], p["d"], p["inter"], p["num_experts"]
    logits = routing_logits(T, u, k, max(e, u), pool.device)
    sets = pool.sets(lambda: (pool.rand(T, d), pool.rand(max(e, u), d, 2 * inter), pool.rand(max(e, u), inter, d)))
    return sets, lambda s: moe_experts(s[0], logits, s[1], s[2], k)


def routing_logits(tokens: int, touched: int, top_k: int, experts: int, device) -> torch.Tensor:
    """Router logits whose top-k hits exactly min(touched, tokens * top_k) experts (at least
    top_k): token t prefers experts (t * top_k + j) mod touched, j < top_k, evenly loaded."""
    used = max(top_k, min(touched, tokens * top_k))
    logits = torch.full((tokens, experts), -10.0)
    for t in range(tokens):
        for j in range(top_k):
            logits[t, (t * top_k + j) % used] = 1.0 + 0.01 * j
    return logits.to(device)


def _elementwise(p, pool):
    T, d = p["tokens"], p["d"]
    hd = 64
    heads = max(1, d // hd)
    pos = torch.arange(T, device=pool.device)[None, :]
    norm_w = torch.ones(d, device=pool.device, dtype=pool.dtype)
    sets = pool.sets(lambda: (pool.rand(T, d), pool.rand(T, d), pool.rand(T, d), pool.rand(1, T, heads, hd),
                              pool.rand(1, T, max(1, heads // 4), hd), pool.rand(T, 2 * d)))
    return sets, lambda s: norms_rope_act(s[0], s[1], s[2], s[3], s[4], pos, s[5], norm_w)


def tiny_call(pool: Pool):
    """The cheapest torch call (a 1-element add): the per-call dispatch floor."""
    a, b = pool.rand(1), pool.rand(1)
    return [(a, b)], lambda s: torch.add(s[0], s[1])


CEILING_SIZES = {"cpu": (512 << 20, 2048), "cuda": (4 << 30, 8192)}  # copy bytes, matmul n


def ceilings_cases(pool: Pool, device: str):
    """A large copy (bytes read + written) and a large matmul (2 n^3 flops)."""
    n_bytes, n = CEILING_SIZES[device]
    elements = n_bytes // pool.element_bytes
    src, dst = torch.empty(elements, dtype=pool.dtype, device=pool.device).normal_(), \
        torch.empty(elements, dtype=pool.dtype, device=pool.device)
    a, b = torch.randn(n, n, device=pool.device).to(pool.dtype), torch.randn(n, n, device=pool.device).to(pool.dtype)
    return {"copy": ([(dst, src)], lambda s: s[0].copy_(s[1]), 2.0 * n_bytes),
            "matmul": ([(a, b)], lambda s: s[0] @ s[1], 2.0 * n ** 3)}

