"""Builders of timed cases, one per op family, calling the primitives the decode loop runs
(mtpsim/torchkit/kernels.py: attention over KV slots read up to the batch's furthest position
with a position mask, MoE routing + experts, the centroid head, RoPE, SiLU x up) on the cache
and batch structures the decode loop uses (`KVSlots`, `Batch`), so a profile times the very
calls the loop makes. Whole layers (layers.py) run torchkit's `DecoderLayer`.

A case is `(inputs, fn)`: `inputs` a list of rotated input sets, `fn(set)` runs the op once.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from mtpsim.calibration.timing import Pool
from mtpsim.torchkit.cache import Batch, KVSlots
from mtpsim.torchkit.kernels import attend_cache, centroid_logits, glu, moe_experts, rope, rope_table

MAX_PASS = 8  # a sliding layer's ring holds window + the longest pass (torchkit.layers.Attention)

# ----------------------------------------------------------------------------- primitives

def norms_rope_act(x, attn_out, ffn_out, q, k, batch, gate_up, norm_w) -> torch.Tensor:
    """The elementwise work around one layer's GEMMs: two RMSNorms, RoPE on q and k, two
    residual adds, SiLU x up."""
    h = F.rms_norm(x, norm_w.shape, norm_w)
    rope(q, batch), rope(k, batch)
    x = x + attn_out
    h = F.rms_norm(x, norm_w.shape, norm_w)
    glu(gate_up)
    return x + ffn_out + h


# ----------------------------------------------------------------------------- cases

def case(family: str, p: dict, pool: Pool):
    """Rotated inputs and the call for one grid point of `family`."""
    return {"gemm": _gemm, "lm_head": _lm_head, "attention": _attention, "prefill_attention": _prefill_attention,
            "moe": _moe, "elementwise": _elementwise, "pass": _pass, "argmax": _argmax}[family](p, pool)


def _gemm(p, pool):
    sets = pool.sets(lambda: (pool.rand(p["m"], p["k"]), pool.rand(p["n"], p["k"])))
    return sets, lambda s: F.linear(s[0], s[1])


def _lm_head(p, pool):
    if p["kind"] == "full":
        return _gemm(p, pool)
    m, d, n, top = p["m"], p["k"], p["n"], 32
    per = max(1, n // top)                      # rows per cluster; 4 * top clusters to choose from
    sets = pool.sets(lambda: (pool.rand(m, d), pool.rand(m, 4 * top), pool.rand(4 * top, per, d)))
    return sets, lambda s: centroid_logits(s[0], s[1], s[2], top)


def _prefill_attention(p, pool):
    """A prompt's attention as the loop prefills it: q new tokens a request written to empty
    slots and attended causally (the attention case at kv = q)."""
    return _attention({**p, "kv": p["q"]}, pool)


def _attention(p, pool):
    """KV write of the q new tokens (not for frozen) and SDPA over the slots, as the loop runs a
    layer's attention: requests at kv - q..kv - 1 (frozen: kv..kv + q - 1 reading kv cached)."""
    B, q, kv, h, kvh = p["batch"], p["q"], p["kv"], p["heads"], p["kv_heads"]
    hd, vd, dev, kind = p["head_dim"], p["v_head_dim"], pool.device, p["kind"]
    if kind == "frozen":
        batch, cap, window = Batch.at(np.full(B, kv), q, dev, limit=np.full(B, kv)), kv + q, None
    elif kind == "swa":  # a ring of window + MAX_PASS slots, long past its first wrap
        cap, window = kv + MAX_PASS, kv
        batch = Batch.at(np.full(B, 4 * cap - q), q, dev)
    else:
        batch, cap, window = Batch.at(np.full(B, kv - q), q, dev), kv + MAX_PASS, None
    if kind == "mla":  # one latent head: keys [latent | rope], values the latent part
        sets = pool.sets(lambda: (pool.rand(B, h, q, hd), pool.rand(B, 1, cap, hd), pool.rand(B, q, 1, hd)))

        def run_mla(s):
            slots = KVSlots.of(s[1], None)
            slots.write(batch.q_pos, s[2], None)
            return attend_cache(s[0], slots, batch, None, vd, hd ** -0.5)
        return sets, run_mla
    sets = pool.sets(lambda: (pool.rand(B, h, q, hd), pool.rand(B, kvh, cap, hd), pool.rand(B, kvh, cap, vd),
                              pool.rand(B, q, kvh, hd), pool.rand(B, q, kvh, vd)))

    def run(s):
        slots = KVSlots.of(s[1], s[2])
        if kind != "frozen":
            slots.write(batch.q_pos, s[3], s[4])
        return attend_cache(s[0], slots, batch, window)
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
    batch = Batch.at(np.zeros(1, np.int64), T, pool.device)
    norm_w = torch.ones(d, device=pool.device, dtype=pool.dtype)
    sets = pool.sets(lambda: (pool.rand(T, d), pool.rand(T, d), pool.rand(T, d), pool.rand(1, T, heads, hd),
                              pool.rand(1, T, max(1, heads // 4), hd), pool.rand(T, 2 * d)))
    return sets, lambda s: norms_rope_act(s[0], s[1], s[2], s[3], s[4], batch, s[5], norm_w)


def _pass(p, pool):
    """A pass's frame as the loop builds it: positions (`Batch.at`), the mask over the batch's
    longest visible KV, a rotary table, the token embedding, the final RMSNorm."""
    B, q, kv, d, dev = p["batch"], p["q"], p["kv"], p["d"], pool.device
    starts = np.full(B, kv - q)
    norm_w = torch.ones(d, device=dev, dtype=pool.dtype)
    sets = pool.sets(lambda: (pool.rand(1024, d), torch.randint(1024, (B, q)).to(dev)))

    def run(s):
        batch = Batch.at(starts, q, dev)
        batch.mask(kv + MAX_PASS, None, batch.read_len(kv + MAX_PASS))
        rope_table(batch, 32, pool.dtype)
        return F.rms_norm(F.embedding(s[1], s[0]), norm_w.shape, norm_w)
    return sets, run


def _argmax(p, pool):
    sets = pool.sets(lambda: (pool.rand(p["m"], p["n"]),))
    return sets, lambda s: s[0].argmax(-1)


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

