"""Whole decoder layers built from the primitive calls in kernels.py, to time against the sum of
their ops' predictions (the check that op times add up to what a layer costs).

A layer runs: RMSNorm, attention (projections, RoPE, KV write, SDPA, output projection),
residual add, RMSNorm, FFN (dense gated, or router + routed experts + shared experts), residual
add, over B requests x q new tokens after a cache of kv - q tokens (visible kv).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from mtpsim.calibration import kernels as K
from mtpsim.calibration.grid import LAYER_KINDS, layer_spec
from mtpsim.calibration.timing import Pool


def layer_case(row: dict, pool: Pool):
    """Rotated layer instances (weights + caches + input) and a call running one layer forward."""
    d, att, ffn = layer_spec(row["layer"], row["scale"])
    query_only = LAYER_KINDS[row["layer"]][3]
    B, q, kv = row["batch"], row["q"], row["kv"]
    dev = pool.device
    pos = torch.arange(kv - q, kv, device=dev)[None, :].expand(B, q)
    window = att.window or 0
    seen = min(kv, window) if window else kv
    mask = torch.ones(q, seen, dtype=torch.bool, device=dev) if query_only else K.causal_mask(q, seen, window, dev)
    ones = torch.ones(d, device=dev, dtype=pool.dtype)

    def make():
        w = {"x": pool.rand(B, q, d)}
        w.update(_attention_weights(att, d, B, kv, query_only, pool))
        w.update(_ffn_weights(ffn, d, pool))
        return w
    sets = pool.sets(make)

    def run(w):
        x = w["x"]
        h = F.rms_norm(x, ones.shape, ones)
        x = x + _attention(att, w, h, pos, mask, kv, query_only)
        h = F.rms_norm(x, ones.shape, ones)
        return x + _ffn(ffn, w, h)
    return sets, run


def _attention_weights(att, d, B, kv, query_only, pool):
    if att.kind == "mla":
        h, nope, rope, lora, vd = att.num_heads, att.qk_nope_head_dim, att.qk_rope_head_dim, att.kv_lora_rank, att.v_head_dim
        return {"q_a": pool.rand(att.q_lora_rank, d), "q_b": pool.rand(h * (nope + rope), att.q_lora_rank),
                "kv_a": pool.rand(lora + rope, d), "w_uk": pool.rand(h, nope, lora), "w_uv": pool.rand(h, lora, vd),
                "o": pool.rand(d, h * vd), "cache": pool.rand(B, 1, kv, lora + rope),
                "qn": torch.ones(att.q_lora_rank, dtype=pool.dtype, device=pool.device),
                "kvn": torch.ones(lora, dtype=pool.dtype, device=pool.device)}
    h, kvh, hd = att.num_heads, att.num_kv_heads, att.head_dim
    vd = att.v_head_dim or hd
    cap = kv + (kv if att.window else 0)
    w = {"q": pool.rand(h * hd, d), "o": pool.rand(d, h * vd), "k": pool.rand(B, kvh, cap, hd), "v": pool.rand(B, kvh, cap, vd)}
    if not query_only:
        w["kv"] = pool.rand(kvh * (hd + vd), d)
    return w


def _attention(att, w, h, pos, mask, kv, query_only):
    B, q, _ = h.shape
    if att.kind == "mla":
        return _mla(att, w, h, pos, mask, kv)
    heads, kvh, hd = att.num_heads, att.num_kv_heads, att.head_dim
    vd = att.v_head_dim or hd
    query = K.rope(F.linear(h, w["q"]).view(B, q, heads, hd), pos).transpose(1, 2)
    cap = w["k"].shape[2]
    if not query_only:
        k, v = F.linear(h, w["kv"]).view(B, q, kvh, hd + vd).split([hd, vd], -1)
        K.write_kv(w["k"], K.rope(k, pos), cap - q)
        K.write_kv(w["v"], v, cap - q)
    seen = mask.shape[1]
    out = K.attend(query, w["k"][:, :, cap - seen:], w["v"][:, :, cap - seen:], mask)
    return F.linear(out.transpose(1, 2).reshape(B, q, -1), w["o"])


def _mla(att, w, h, pos, mask, kv):
    B, q, _ = h.shape
    heads, nope, rope, lora = att.num_heads, att.qk_nope_head_dim, att.qk_rope_head_dim, att.kv_lora_rank
    hq = F.rms_norm(F.linear(h, w["q_a"]), w["qn"].shape, w["qn"])
    q_nope, q_rope = F.linear(hq, w["q_b"]).view(B, q, heads, -1).split([nope, rope], -1)
    latent, k_rope = F.linear(h, w["kv_a"]).split([lora, rope], -1)
    k_rope = K.rope(k_rope[:, :, None], pos)
    K.write_kv(w["cache"], torch.cat([F.rms_norm(latent, w["kvn"].shape, w["kvn"])[:, :, None], k_rope], -1), kv - q)
    q_latent = torch.einsum("bqhn,hnl->bqhl", q_nope, w["w_uk"])
    query = torch.cat([q_latent, K.rope(q_rope, pos)], -1).transpose(1, 2)
    keys = w["cache"]
    out = K.attend(query, keys, keys[..., :lora], mask, scale=(nope + rope) ** -0.5)
    out = torch.einsum("bhql,hlv->bqhv", out, w["w_uv"])
    return F.linear(out.reshape(B, q, -1), w["o"])


def _ffn_weights(ffn, d, pool):
    if ffn.kind == "dense":
        return {"gu": pool.rand(2 * ffn.intermediate_size, d), "down": pool.rand(d, ffn.intermediate_size)}
    e, inter = ffn.num_experts, ffn.expert_intermediate_size
    w = {"router": pool.rand(e, d), "w13": pool.rand(e, d, 2 * inter), "w2": pool.rand(e, inter, d)}
    if ffn.num_shared_experts:
        shared = ffn.num_shared_experts * (ffn.shared_intermediate_size or inter)
        w.update({"gu": pool.rand(2 * shared, d), "down": pool.rand(d, shared)})
    return w


def _ffn(ffn, w, h):
    out = 0
    if ffn.kind == "moe":
        x = h.reshape(-1, h.shape[-1])
        out = K.moe_experts(x, F.linear(x, w["router"]), w["w13"], w["w2"], ffn.top_k).view(h.shape)
    if "gu" in w:
        gate, up = F.linear(h, w["gu"]).chunk(2, -1)
        out = out + F.linear(F.silu(gate) * up, w["down"])
    return out
