"""Decoder-layer building blocks in PyTorch, computing what `mtpsim.costs.ops` prices.

Each module runs the ops the cost model counts for it, at the catalog's (shrunken) shapes:
GQA/MHA (q, kv, o projections; sliding window; query-only layers of a frozen-KV assistant),
absorbed MLA (q_a, q_b, kv_a, per-head W_UK / W_UV, o; attention over the kv_lora + rope
latent), Gated DeltaNet linear attention (in_proj, short conv, per-token delta-rule state,
o_proj), dense gated FFN, MoE (router, top-k, routed experts one by one, shared experts), and
the LM heads (full; centroid: score clusters, expand the top ones). Heads return greedy tokens.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from mtpsim.specs import AttentionSpec, FFNSpec, LMHeadSpec
from mtpsim.torchkit.cache import Batch, KVSlots, LinearState
from mtpsim.torchkit.kernels import attend, attend_cache, centroid_logits, glu, moe_experts, rope


def linear(d_in: int, d_out: int) -> nn.Linear:
    layer = nn.Linear(d_in, d_out, bias=False)
    nn.init.normal_(layer.weight, std=d_in ** -0.5)
    return layer


class Attention(nn.Module):
    """GQA (MHA when kv heads = heads), optionally sliding-window, optionally query-only. Queries,
    keys and values come out of one projection, as the engines run it (and costs/attention.py
    prices it); a query-only layer's projection gives the queries alone."""

    def __init__(self, att: AttentionSpec, d: int, query_only: bool = False):
        super().__init__()
        self.heads, self.kv_heads, self.window = att.num_heads, att.num_kv_heads, att.window
        self.hd, self.vd, self.query_only = att.head_dim, att.v_head_dim or att.head_dim, query_only
        self.q_size = self.heads * self.hd
        self.qkv_proj = linear(d, self.q_size + (0 if query_only else self.kv_heads * (self.hd + self.vd)))
        self.o_proj = linear(self.heads * self.vd, d)

    def _split(self, out: torch.Tensor, with_query: bool = True):
        """A projection's output [B, q, width] -> (queries [B, q, heads, hd] or None, k, v [B, q, kv_heads, *])."""
        B, q, _ = out.shape
        query = out[..., :self.q_size].reshape(B, q, self.heads, self.hd) if with_query else None
        kv = out[..., self.q_size:] if with_query else out
        k, v = kv.reshape(B, q, self.kv_heads, self.hd + self.vd).split([self.hd, self.vd], -1)
        return query, k, v

    def new_storage(self, batch: int, capacity: int, max_pass: int, dtype, device) -> KVSlots | None:
        if self.query_only:
            return None
        slots = min(capacity, self.window + max_pass) if self.window else capacity
        return KVSlots(batch, self.kv_heads, slots, self.hd, self.vd, dtype, device)

    def forward(self, x: torch.Tensor, batch: Batch, kv: KVSlots) -> torch.Tensor:
        B, q, _ = x.shape
        if self.query_only:
            query = rope(self.qkv_proj(x).view(B, q, self.heads, self.hd), batch).transpose(1, 2)
        else:
            query, k, v = self._split(self.qkv_proj(x))
            query, k = rope(query, batch).transpose(1, 2), rope(k, batch)
            if batch.prefill and q > kv.capacity:  # a prompt longer than the ring: attend to it fresh
                out = attend(query, k.transpose(1, 2), v.transpose(1, 2), batch.mask(NEVER_WRAP, self.window, q))
                kv.write(batch.q_pos[:, -kv.capacity:], k[:, -kv.capacity:], v[:, -kv.capacity:])
                return self.o_proj(out.transpose(1, 2).reshape(B, q, -1))
            kv.write(batch.q_pos, k, v)
        out = attend_cache(query, kv, batch, self.window)
        return self.o_proj(out.transpose(1, 2).reshape(B, q, -1))


    def write_context(self, x: torch.Tensor, batch: Batch, kv: KVSlots) -> None:
        """A block drafter's context: K/V of the fused target hidden x [B, c, d] into the cache."""
        _, k, v = self._split(torch.nn.functional.linear(x, self.qkv_proj.weight[self.q_size:]), with_query=False)
        kv.write(batch.q_pos, rope(k, batch), v)

    def block(self, x: torch.Tensor, batch: Batch, kv: KVSlots) -> torch.Tensor:
        """A block drafter's queries x [B, q, d]: each reads the cache below the block's first
        position and every key of the block (bidirectional); the block's K/V is not kept."""
        B, q, _ = x.shape
        query, k, v = self._split(self.qkv_proj(x))
        query = rope(query, batch).transpose(1, 2)
        context = Batch(batch.q_pos[:, :1].expand(B, q) - 1, prefill=False)  # positions before the block
        n = context.read_len(kv.capacity)
        mask = torch.cat([context.mask(kv.capacity, self.window, n),
                          torch.ones(B, 1, q, q, dtype=torch.bool, device=x.device)], -1)
        keys = torch.cat([kv.k[:, :, :n], rope(k, batch).transpose(1, 2)], 2)
        values = torch.cat([kv.v[:, :, :n], v.transpose(1, 2)], 2)
        out = attend(query, keys, values, mask)
        return self.o_proj(out.transpose(1, 2).reshape(B, q, -1))


NEVER_WRAP = 1 << 40  # a "capacity" under which slot j holds position j (fresh, unwrapped KV)


class MLA(nn.Module):
    """DeepSeek multi-head latent attention, absorbed: the cache holds kv_lora + rope per token;
    q_nope goes through W_UK into the latent space and the latent output through W_UV."""

    def __init__(self, att: AttentionSpec, d: int):
        super().__init__()
        self.heads, self.lora, self.rope_dim = att.num_heads, att.kv_lora_rank, att.qk_rope_head_dim
        self.nope, self.vd = att.qk_nope_head_dim, att.v_head_dim
        width = self.heads * (self.nope + self.rope_dim)
        if att.q_lora_rank:
            self.q_a_proj, self.q_norm = linear(d, att.q_lora_rank), nn.RMSNorm(att.q_lora_rank)
            self.q_b_proj = linear(att.q_lora_rank, width)
        else:
            self.q_a_proj, self.q_norm, self.q_b_proj = None, None, linear(d, width)
        self.kv_a_proj, self.kv_norm = linear(d, self.lora + self.rope_dim), nn.RMSNorm(self.lora)
        self.w_uk = nn.Parameter(torch.randn(self.heads, self.nope, self.lora) * self.nope ** -0.5)
        self.w_uv = nn.Parameter(torch.randn(self.heads, self.lora, self.vd) * self.lora ** -0.5)
        self.o_proj = linear(self.heads * self.vd, d)
        self.window = att.window

    def new_storage(self, batch: int, capacity: int, max_pass: int, dtype, device) -> KVSlots:
        return KVSlots(batch, 1, capacity, self.lora + self.rope_dim, None, dtype, device)

    def forward(self, x: torch.Tensor, batch: Batch, kv: KVSlots) -> torch.Tensor:
        B, q, _ = x.shape
        hq = x if self.q_a_proj is None else self.q_norm(self.q_a_proj(x))
        q_nope, q_rope = self.q_b_proj(hq).view(B, q, self.heads, -1).split([self.nope, self.rope_dim], -1)
        latent, k_rope = self.kv_a_proj(x).split([self.lora, self.rope_dim], -1)
        k_rope = rope(k_rope[:, :, None], batch)
        kv.write(batch.q_pos, torch.cat([self.kv_norm(latent)[:, :, None], k_rope], -1), None)
        q_latent = torch.einsum("bqhn,hnl->bqhl", q_nope, self.w_uk)
        query = torch.cat([q_latent, rope(q_rope, batch)], -1).transpose(1, 2)
        out = attend_cache(query, kv, batch, self.window, self.lora, (self.nope + self.rope_dim) ** -0.5)
        out = torch.einsum("bhql,hlv->bqhv", out, self.w_uv)
        return self.o_proj(out.reshape(B, q, -1))


class LinearAttention(nn.Module):
    """Gated DeltaNet: S_t = g_t S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t g_t)^T, o_t = S_t^T q_t,
    one token at a time; the state after every token of a pass is kept for rollback."""

    def __init__(self, att: AttentionSpec, d: int):
        super().__init__()
        self.heads, self.k_heads, self.dk, self.dv = att.num_heads, att.num_kv_heads, att.head_dim, att.value_head_dim
        self.kernel = att.conv_kernel
        self.channels = 2 * self.k_heads * self.dk + self.heads * self.dv
        self.in_proj = linear(d, self.channels + self.heads * self.dv + 2 * self.heads)
        self.conv = nn.Parameter(torch.randn(self.channels, 1, self.kernel) * self.kernel ** -0.5)
        self.norm = nn.RMSNorm(self.dv)
        self.o_proj = linear(self.heads * self.dv, d)

    def new_storage(self, batch: int, capacity: int, max_pass: int, dtype, device) -> LinearState:
        return LinearState(batch, self.heads, self.dk, self.dv, self.channels, self.kernel, device,
                           torch.promote_types(dtype, torch.float32))

    def forward(self, x: torch.Tensor, batch: Batch, st: LinearState) -> torch.Tensor:
        B, q, _ = x.shape
        mixed, z, a, b = self.in_proj(x).split([self.channels, self.heads * self.dv, self.heads, self.heads], -1)
        seq = torch.cat([st.conv, mixed.transpose(1, 2).to(st.conv.dtype)], -1)   # [B, C, k-1+q]
        conv = F.silu(F.conv1d(seq, self.conv.to(seq.dtype), groups=self.channels))  # [B, C, q]
        qs, ks, vs = conv.transpose(1, 2).split([self.k_heads * self.dk, self.k_heads * self.dk, self.heads * self.dv], -1)
        rep = self.heads // self.k_heads
        qs = F.normalize(qs.view(B, q, self.k_heads, self.dk), dim=-1).repeat_interleave(rep, 2)
        ks = F.normalize(ks.view(B, q, self.k_heads, self.dk), dim=-1).repeat_interleave(rep, 2)
        vs = vs.view(B, q, self.heads, self.dv)
        decay = torch.exp(-F.softplus(a.to(seq.dtype)))
        beta = torch.sigmoid(b.to(seq.dtype))
        state, states, outs = st.state, [st.state], []
        for t in range(q):
            state = state * decay[:, t, :, None, None]
            error = vs[:, t] - torch.einsum("bhk,bhkv->bhv", ks[:, t], state)
            state = state + torch.einsum("bhk,bhv->bhkv", ks[:, t], beta[:, t, :, None] * error)
            outs.append(torch.einsum("bhk,bhkv->bhv", qs[:, t], state))
            states.append(state)
        convs = seq.unfold(-1, self.kernel - 1, 1).transpose(1, 2)               # [B, q+1, C, k-1]
        st.pending = (torch.stack(states, 1), convs)
        out = self.norm(torch.stack(outs, 1).to(x.dtype)) * F.silu(z.view(B, q, self.heads, self.dv))
        return self.o_proj(out.reshape(B, q, -1))


class DenseFFN(nn.Module):
    def __init__(self, d: int, inter: int):
        super().__init__()
        self.gate_up, self.down = linear(d, 2 * inter), linear(inter, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(glu(self.gate_up(x)))


class MoE(nn.Module):
    """Router, softmax top-k, each touched expert over its tokens, plus shared experts."""

    def __init__(self, ffn: FFNSpec, d: int):
        super().__init__()
        e, inter = ffn.num_experts, ffn.expert_intermediate_size
        self.top_k = ffn.top_k
        self.router = linear(d, e)
        self.w13 = nn.Parameter(torch.randn(e, d, 2 * inter) * d ** -0.5)
        self.w2 = nn.Parameter(torch.randn(e, inter, d) * inter ** -0.5)
        shared = ffn.num_shared_experts * (ffn.shared_intermediate_size or inter)
        self.shared = DenseFFN(d, shared) if ffn.num_shared_experts else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        out = moe_experts(x, self.router(x), self.w13, self.w2, self.top_k)
        if self.shared is not None:
            out = out + self.shared(x)
        return out.view(shape)


class DecoderLayer(nn.Module):
    def __init__(self, att: AttentionSpec, ffn: FFNSpec, d: int, query_only: bool = False):
        super().__init__()
        self.attn_norm, self.ffn_norm = nn.RMSNorm(d), nn.RMSNorm(d)
        self.attn = {"gqa": lambda: Attention(att, d, query_only), "mla": lambda: MLA(att, d),
                     "linear": lambda: LinearAttention(att, d)}[att.kind]()
        self.ffn = DenseFFN(d, ffn.intermediate_size) if ffn.kind == "dense" else MoE(ffn, d)

    def new_storage(self, *args):
        return self.attn.new_storage(*args)

    def forward(self, x: torch.Tensor, batch: Batch, storage) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), batch, storage)
        return x + self.ffn(self.ffn_norm(x))


class FullHead(nn.Module):
    """T x d x V logits, greedy token per row."""

    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.proj = linear(d, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).argmax(-1)


class CentroidHead(nn.Module):
    """Score num_centroids clusters, expand the top_clusters' V / C rows each, greedy token."""

    def __init__(self, d: int, vocab: int, head: LMHeadSpec):
        super().__init__()
        self.top, self.per, self.vocab = head.top_clusters, math.ceil(vocab / head.num_centroids), vocab
        self.centroids = linear(d, head.num_centroids)
        self.rows = nn.Parameter(torch.randn(head.num_centroids, self.per, d) * d ** -0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
        logits, clusters = centroid_logits(x, self.centroids(x), self.rows, self.top)  # [T, top * per]
        best = logits.argmax(-1)
        token = clusters.gather(1, (best // self.per)[:, None])[:, 0] * self.per + best % self.per
        return (token % self.vocab).view(shape)  # the last cluster may run past the vocabulary


def make_head(d: int, vocab: int, head: LMHeadSpec) -> nn.Module:
    return FullHead(d, vocab) if head.kind == "full" else CentroidHead(d, vocab, head)
