"""The primitive torch calls of a decoder layer: one implementation, run by the decode loop's
models (layers.py, models.py) and timed by `mtpsim calibrate` (mtpsim/calibration/kernels.py),
so the op a profile measures is the op the decode loop runs.

- `attend_cache`: SDPA over a layer's KV slots, reading slots 0..(the batch's furthest position)
  -- the batch's *longest* live length, padded, masked by position (`Batch.mask`) -- so its cost
  follows batch x max length, not the sum of per-request lengths a paged kernel reads;
- `rope`: rotate-half RoPE with the pass's cos / sin table (`rope_table`, built once per pass);
- `moe_experts`: softmax top-k routing, each touched expert over its tokens, weighted combine;
- `centroid_logits`: the centroid head's top clusters, rows gathered, logits by einsum;
- `glu`: SiLU(gate) x up.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from mtpsim.torchkit.cache import Batch, KVSlots


def rope_table(batch: Batch, half: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [B, q, 1, half] at the batch's positions, computed once per pass and width."""
    key = ("rope", half, dtype)
    if key not in batch.memo:
        freq = 10000.0 ** (-torch.arange(half, device=batch.q_pos.device, dtype=torch.float32) / half)
        angle = (batch.q_pos[..., None].float() * freq)[:, :, None, :]
        batch.memo[key] = angle.cos().to(dtype), angle.sin().to(dtype)
    return batch.memo[key]


def rope(x: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Rotary embedding on the last dim of x [B, q, heads, dim] at the batch's positions."""
    half = x.shape[-1] // 2
    cos, sin = rope_table(batch, half, x.dtype)
    a, b = x[..., :half], x[..., half:2 * half]
    return torch.cat([a * cos - b * sin, a * sin + b * cos, x[..., 2 * half:]], dim=-1)


def attend_cache(query: torch.Tensor, kv: KVSlots, batch: Batch, window: int | None,
                 v_width: int | None = None, scale: float | None = None) -> torch.Tensor:
    """SDPA of query [B, heads, q, dim] over the slots the batch can see: slots up to its furthest
    position (capacity at most), masked by position. MLA (kv.v None): values are the first
    `v_width` columns of the latent keys."""
    n = batch.read_len(kv.capacity)
    keys = kv.k[:, :, :n]
    values = keys[..., :v_width] if kv.v is None else kv.v[:, :, :n]
    return attend(query, keys, values, batch.mask(kv.capacity, window, n), scale)


def attend(query, keys, values, mask, scale=None) -> torch.Tensor:
    """SDPA over [B, heads, q, dim] queries and [B, kv_heads, n, dim] keys / values."""
    return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale,
                                          enable_gqa=query.shape[1] != keys.shape[1])


def glu(gate_up: torch.Tensor) -> torch.Tensor:
    gate, up = gate_up.chunk(2, -1)
    return F.silu(gate) * up


def moe_experts(x, logits, w13, w2, top_k: int) -> torch.Tensor:
    """x [T, d], router logits [T, E]: softmax top-k routing, each touched expert over its
    tokens (w13 [E, d, 2 inter], w2 [E, inter, d]), weighted combine."""
    weights, experts = torch.softmax(logits, -1).topk(top_k, -1)
    weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)  # logits may be fp32
    order = experts.flatten().argsort()
    token = order // top_k
    counts = torch.bincount(experts.flatten(), minlength=w13.shape[0]).tolist()
    xs, outs, start = x[token], [], 0
    for e, n in enumerate(counts):
        if n:
            outs.append(glu(xs[start:start + n] @ w13[e]) @ w2[e])
            start += n
    routed = torch.cat(outs) * weights.flatten()[order, None]
    return torch.zeros_like(x).index_add_(0, token, routed)


def centroid_logits(x, scores, rows, top: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x [T, d], centroid scores [T, C], rows [C, per, d] -> (logits [T, top * per], clusters [T, top])."""
    clusters = scores.topk(top, -1).indices
    return torch.einsum("td,tcrd->tcr", x, rows[clusters]).flatten(1), clusters


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3   # glibc mallopt parameters
MMAP_THRESHOLD_MAX = 32 << 20                  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit


def without_cudnn_attention() -> None:
    """CUDA: SDPA without its cuDNN backend. cuDNN builds an execution plan for every new shape,
    and a decode loop's key length grows each pass: on an H200 (torch 2.11) that cost ~98 ms of
    host time per attention call against 0.01 ms on the GPU (torch.profiler over the `none` loop,
    calibrate/gpu_profile_loop.py), so every measured iteration was host time. The efficient and
    math backends take the same masks without per-shape plans. Called by `mtpsim calibrate` and
    `mtpsim verify` on CUDA, so both time the same kernels."""
    torch.backends.cuda.enable_cudnn_sdp(False)


def keep_freed_memory() -> bool:
    """CPU: let glibc keep freed memory in the process (no trimming; blocks up to 32 MiB from the
    heap, not fresh mmaps), as PyTorch's caching allocator does on CUDA. Otherwise a pass's large
    temporaries (SDPA's expanded K / V, logits) land on fresh pages whenever the heap was just
    trimmed, and page faults -- not the op -- set its time, by up to 4x, depending on what ran
    before: a microbenchmark repeating one op and a decode loop would time different things.
    Called by `mtpsim calibrate` and `mtpsim verify` on CPU; False where glibc is absent."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) and libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1))
    except (OSError, AttributeError, TypeError):
        return False
