"""DeepSeek-V4's hybrid attention (attention kind `compressed`) as the ops one GPU runs, by flops
and bytes. No measured table holds these shapes: every op here is priced by the roofline (their
families are not ones a profile looks up), and says so in its source.

What a layer runs, following DeepSeek's reference inference code for V4 (inference/model.py,
`Attention`, `Compressor`, `Indexer`, `Block`; as carried in SGLang python/sglang/srt/models/
deepseek_v4.py and vLLM vllm/models/deepseek_v4):
- queries from a low-rank q (wq_a: d -> q_lora_rank, wq_b: -> heads x head_dim, heads split
  over the attention GPUs), one shared K=V head from wkv (d -> head_dim, replicated); wq_a and wkv
  as SGLang's one wqkv_a GEMM;
- ratio > 0: a compressor (wkv and wgate, d -> coff x head_dim each, coff 2 when ratio is 4 and
  windows overlap, else 1) pooling every `ratio` tokens into one cached entry, its running
  state (kv_state and score_state, coff x ratio x coff x head_dim FP32 each) kept per request;
- ratio 4 (CSA): a lightning indexer (wq_b: q_lora_rank -> index_n_heads x index_head_dim,
  weights_proj: d -> index_n_heads, its own compressor over index_head_dim) scoring every
  compressed entry and keeping index_topk; ratio 128 (HCA): every compressed entry is read;
- the core: each query attends the last `window` tokens and the chosen compressed entries,
  QK and PV both head_dim wide (K = V), plus a per-head sink;
- the grouped output projection: wo_a per group (heads / o_groups x head_dim -> o_lora_rank),
  wo_b (o_groups x o_lora_rank -> d);
- hyper-connections (hc_mult copies of the residual, `Block.hc_pre` / `hc_post`): before the
  attention and before the FFN, a (2 + hc) x hc mix from the flattened hc x d stream (FP32),
  Sinkhorn-normalised, then the copies are reduced and re-expanded; one fused kernel each for
  the pre and the post side, as SGLang's TileLang kernels run them (`hyper_connection_ops`).
Cache entries keep head_dim - rope values in the KV dtype and the rope values at least BF16
(the reference quantises only the non-rope dims); the indexer's keys are FP8 with one FP32
scale per 128 (as DeepSeek-V3.2's indexer cache).

DeepSeek-V4.1's CSA2 (ratios 1 and 2; SGLang v0.5.23 srt/layers/attention/dsv4/dsv41_sparse.py):
only a layer of mode `full` writes compressed entries (its compressor: wkv, and at ratio 2 wgate)
and, with an indexer, derives index keys from each pooled latent (wk: head_dim -> index_head_dim);
a `reindex` layer's indexer (wq_b, weights_proj) scores only its candidate pool; a `reuse` layer
runs neither and attends the entries the last indexer chose. Every layer keeps its own window. With
an FP4 cache the ratio-1/2 entries are E2M1 with one E4M3 scale per 16 values and the index keys
E2M1 with one E8M0 scale per 32 (windows stay FP8).
"""
from __future__ import annotations

import math

import numpy as np

from mtpsim.costs import ops as O
from mtpsim.costs.ops import ACT, BatchLens, Op, gemm
from mtpsim.specs import DTYPE_BYTES, AttentionSpec

FAMILY = "sparse_attention"  # not a profile family: the roofline prices it


def coff(ratio: int) -> int:
    """Compressor width factor: overlapping windows (ratio 4) double it (reference `Compressor`)."""
    return 2 if ratio == 4 else 1


def _packs_fp4(att: AttentionSpec, kv_dtype: str) -> bool:
    """Whether a layer's compressed entries are stored as FP4: an fp4 KV cache packs V4.1's
    ratio-1/2 latents, which its compressor already rounds to E2M1; ratios 4 and 128 are not
    FP4-rounded and stay FP8 (SGLang v0.5.23 mem_cache/deepseek_v4_memory_pool.py
    resolve_compressed_kv_layout)."""
    return kv_dtype == "fp4" and att.compressed.csa2


def entry_bytes(att: AttentionSpec, kv_dtype: str) -> float:
    """Bytes of one cached compressed K=V entry: V4's layout (`window_entry_bytes`), or with an fp4
    cache V4.1's packed ratio-1/2 latent, E2M1 with one E4M3 scale per 16 values, rope dims
    included (DeepSeek-V4.1 model card: 890 bytes of global KV per token)."""
    return att.head_dim * (0.5 + 1 / 16) if _packs_fp4(att, kv_dtype) else window_entry_bytes(att, kv_dtype)


def window_entry_bytes(att: AttentionSpec, kv_dtype: str) -> float:
    """Bytes of one sliding-window slot, and of a compressed entry FP4 does not pack: V4's layout,
    the non-rope dims in the KV dtype (FP8 at least) and the rope dims at least BF16 (the
    reference quantises only the non-rope dims)."""
    rope, width = att.qk_rope_head_dim, max(DTYPE_BYTES[kv_dtype], 1.0)
    return (att.head_dim - rope) * width + rope * max(width, 2.0)


def index_entry_bytes(att: AttentionSpec, kv_dtype: str = "fp8") -> float:
    """Bytes of one indexer key: index_head_dim FP8 values and an FP32 scale per 128 (V4), or with
    an fp4 cache V4.1's E2M1 keys with one E8M0 scale per 32; 0 without an indexer."""
    c = att.compressed
    if c.index_n_heads is None:
        return 0.0
    if _packs_fp4(att, kv_dtype):
        return c.index_head_dim * (0.5 + 1 / 32)
    return c.index_head_dim + 4.0 * math.ceil(c.index_head_dim / 128)


def state_bytes(att: AttentionSpec, head_dim: int) -> float:
    """A compressor's running state per request: kv_state and score_state, FP32; none at ratio 1,
    where every token is its own entry."""
    r = att.compressed.ratio
    return 0.0 if r <= 1 else 2 * (coff(r) * r) * (coff(r) * head_dim) * 4.0


def state_per_token(att: AttentionSpec) -> float:
    """State bytes a new token moves in a compressed layer: its own row written (one of coff x
    ratio), and once per `ratio` tokens the whole state read to pool an entry."""
    r = att.compressed.ratio
    return state_bytes(att, att.head_dim) * (1 / (coff(r) * r) + 1 / r) if r else 0.0


def layer_kv(att: AttentionSpec, kv_dtype: str) -> tuple[float, float]:
    """(bytes per committed token, bytes per request) one layer keeps on one GPU (the single K=V
    head is replicated): compressed entries and indexer keys grow with the tokens, one per
    `ratio`, in the layer that writes them (mode full: a reindex or reuse layer reads another's);
    the window ring and the compressors' states are per request."""
    c = att.compressed
    per_token = 0.0
    if c.owns_entries:
        keys = index_entry_bytes(att, kv_dtype) if c.runs_indexer else 0.0
        per_token = (entry_bytes(att, kv_dtype) + keys) / c.ratio
    fixed = c.window * window_entry_bytes(att, kv_dtype)
    if c.owns_entries:
        fixed += state_bytes(att, att.head_dim)
        if c.runs_indexer and not c.csa2:  # V4's indexer pools its keys with a compressor of its own
            fixed += state_bytes(att, c.index_head_dim)
    return per_token, fixed


def attention_projections(att: AttentionSpec, d: int, tokens: int, dtype: str, par: O.Parallel,
                          query_only: bool = False, act: str = ACT) -> list[Op]:
    """ops.attention_projections for any kind, this module's for kind compressed (ops.py does
    not import this module: it imports ops)."""
    if att.kind == "compressed":
        return projections(att, d, tokens, dtype, par.tp, act)
    return O.attention_projections(att, d, tokens, dtype, par, query_only, act) + hyper_connection_ops(att, d, tokens, act)


def kv_bytes_per_token(att: AttentionSpec, kv_dtype: str, tp: int) -> float:
    """ops.kv_bytes_per_token for any kind; kind compressed: its entries that grow with the
    tokens (the window and the states are per request: `layer_kv`)."""
    return layer_kv(att, kv_dtype)[0] if att.kind == "compressed" else O.kv_bytes_per_token(att, kv_dtype, tp)


def projections(att: AttentionSpec, d: int, tokens: int, dtype: str, tp: int, act: str = ACT) -> list[Op]:
    """The weight GEMMs of one layer's attention and its hyper-connections for `tokens` tokens on
    one of `tp` attention GPUs (heads and output groups split; wkv, compressors and the indexer's
    key side whole on every GPU)."""
    c = att.compressed
    heads, groups = max(1, math.ceil(att.num_heads / tp)), max(1, math.ceil(c.o_groups / tp))
    # wq_a and wkv read the same input: SGLang runs them as one GEMM, wqkv_a (SGLANG_OPT_FUSE_WQA_WKV,
    # on by default in v0.5.16 srt/models/deepseek_v4.py MqaAttentionBase)
    ops = [gemm("attn.wqkv_a", tokens, d, att.q_lora_rank + att.head_dim, dtype, act=act),
           gemm("attn.wq_b", tokens, att.q_lora_rank, heads * att.head_dim, dtype, act=act)]
    if c.owns_entries:  # reference: wkv and wgate of the compressor stored BF16 (ratio 1: wkv alone)
        width = att.head_dim if c.ratio == 1 else 2 * coff(c.ratio) * att.head_dim
        ops.append(gemm("attn.compressor", tokens, d, width, "bf16", act=act))
    if c.runs_indexer:
        ops += [gemm("attn.indexer_q", tokens, att.q_lora_rank, c.index_n_heads * c.index_head_dim, dtype, act=act),
                gemm("attn.indexer_weights", tokens, d, c.index_n_heads, "bf16", act=act)]
        if c.owns_entries and c.csa2:  # keys from each new pooled latent (DeepseekV41Indexer.wk)
            ops.append(gemm("attn.indexer_wk", math.ceil(tokens / c.ratio), att.head_dim, c.index_head_dim, "bf16",
                            act=act))
        elif c.owns_entries:
            ops.append(gemm("attn.indexer_compressor", tokens, d, 2 * coff(c.ratio) * c.index_head_dim, "bf16", act=act))
    per_group = att.num_heads * att.head_dim // c.o_groups  # wo_a: one k x o_lora_rank matrix per group
    w = DTYPE_BYTES[dtype]
    ops.append(Op("attn.wo_a", "gemm", flops=2.0 * tokens * groups * per_group * c.o_lora_rank,
                  weight_bytes=groups * per_group * c.o_lora_rank * w,
                  act_bytes=tokens * (heads * att.head_dim + groups * c.o_lora_rank) * DTYPE_BYTES[act], dtype=dtype,
                  shape={"m": tokens, "k": per_group, "n": groups * c.o_lora_rank, "dtype": dtype}))
    ops.append(gemm("attn.wo_b", tokens, groups * c.o_lora_rank, d, dtype, act=act))
    return ops + hyper_connection_ops(att, d, tokens, act)


def hyper_connection_ops(att: AttentionSpec, d: int, tokens: int, act: str = ACT) -> list[Op]:
    """Two mixing sites per layer (before attention, before the FFN), each a pre and a post kernel
    as SGLang runs them (v0.5.16 srt/models/deepseek_v4.py `hc_pre` / `hc_post`: TileLang `mhc_pre`
    and `mhc_post`, SGLANG_OPT_USE_TILELANG_MHC_PRE / _POST on by default). The pre kernel does the
    mix (the flattened hc x d stream times the (2 + hc) x hc FP32 mixing matrix), its RMS scale,
    Sinkhorn (iters passes over an hc x hc matrix), the reduce to d and the layer's RMSNorm: read
    hc x d, write d. The post kernel re-expands: read d + hc x d, write hc x d. The mix is no GEMM
    of its own there (DeepSeek's reference code runs it as F.linear before its Sinkhorn kernel).

    Qwen4-Exp's gated residual (a gqa or linear kind with hc_lowrank; vLLM v0.34.0
    vllm/models/qwen4_exp/nvidia/hyperconnection.py `GatedResidual.combine_and_mix`): at each site
    the copies' grouped RMSNorm, a down GEMM (hc x d -> hc_lowrank + hc, padded to a multiple of
    16; SiLU fused), an up GEMM (hc_lowrank -> hc x d) fused with the sigmoid gate and the gated
    mean over the copies, and the combine that writes the copies back. Both GEMMs are BF16
    (quant_config None) and replicated on every GPU (disable_tp)."""
    hc = att.hc_copies
    if hc == 1:
        return []
    if att.compressed is None:  # a gqa or linear kind's copies mix through Qwen4-Exp's gated residual
        return _gated_residual_ops(hc, att.hc_lowrank, d, tokens, act)
    iters = att.compressed.hc_sinkhorn_iters
    pre, post = mhc_pre(hc, d, tokens, iters, act), hc_post(hc, d, tokens, act, iters)
    return [pre, post, pre, post]


def mhc_pre(hc: int, d: int, tokens: int, iters: int, act: str = ACT) -> Op:
    """DeepSeek-V4's mHC pre kernel at one site (hyper_connection_ops). Its shape keys the
    measured `hyper_connection` rows (costs/lookup.py): kind, d, hc, the Sinkhorn iterations."""
    mix = (2 + hc) * hc
    return Op("hc.pre", "hyper_connection", flops=tokens * (2.0 * hc * d * mix + 4.0 * iters * hc * hc + 2 * hc * d),
              act_bytes=tokens * (hc + 1) * d * DTYPE_BYTES[act], weight_bytes=hc * d * mix * 4.0, kernels=1, dtype=act,
              shape={"kind": "pre", "tokens": tokens, "d": d, "hc": hc, "iters": iters})


def hc_post(hc: int, d: int, tokens: int, act: str = ACT, iters: int | None = None) -> Op:
    """The combine after a block: read its output and the hc copies, write the copies. `iters`:
    DeepSeek-V4's mHC post kernel (its layer's Sinkhorn iterations, which key the measured rows
    beside its pre's); None for Qwen4-Exp's gated residual, which no table times."""
    shape = {"kind": "post", "tokens": tokens, "d": d, "hc": hc}
    return Op("hc.post", "hyper_connection", flops=tokens * 2.0 * hc * d,
              act_bytes=tokens * (2 * hc + 1) * d * DTYPE_BYTES[act], kernels=1, dtype=act,
              shape=shape if iters is None else {**shape, "iters": iters})


def _gated_residual_ops(hc: int, rank: int, d: int, tokens: int, act: str) -> list[Op]:
    """Qwen4-Exp's gated residual at a layer's two sites (hyper_connection_ops)."""
    down = rank + hc + (-(rank + hc)) % 16
    norm = Op("hc.pre", "hyper_connection", flops=tokens * 4.0 * hc * d, act_bytes=tokens * 2 * hc * d * DTYPE_BYTES[act],
              kernels=1, dtype=act, shape={"kind": "pre", "tokens": tokens, "d": d, "hc": hc})
    site = [norm, gemm("hc.down", tokens, hc * d, down, "bf16", act=act),
            gemm("hc.up_mix", tokens, rank, hc * d, "bf16", act=act), hc_post(hc, d, tokens, act)]
    return site + site


def query_heads(num_heads: int, tp: int, padding: str = "per_rank") -> int:
    """Query heads one GPU's compressed-attention kernel runs at attention tp `tp`: its own, or,
    where the engine pads them for FlashMLA's sparse kernels (EngineSpec.compressed_query_heads),
    every head of the model or 64 where its own fit in 64. At tp 1 a GPU holds them all."""
    own = max(1, math.ceil(num_heads / tp))
    if tp == 1 or padding == "per_rank":
        return own
    return num_heads if padding == "all_heads" or own > 64 else 64


class CompressedKernel:
    """One compressed attention kind on one GPU of `tp`: the core over a batch's lengths (window
    plus chosen compressed entries), the indexer and the compressors' state traffic, as one op
    (three kernels) that the roofline prices. A tree mask's queries see the same window and
    entries as a chain's (the block is within the window). Every query of a request is charged
    its last query's window and entries: exact for decode and verify, an upper bound for a
    prefill chunk (causally, early queries see fewer: about half the indexer's pairs)."""

    def __init__(self, att: AttentionSpec, kv_dtype: str, tp: int, act: str = ACT, padding: str = "per_rank"):
        self.att, self.kv_dtype, self.tp, self.act = att, kv_dtype, tp, act
        self.heads = query_heads(att.num_heads, tp, padding)
        self.entry, self.slot = entry_bytes(att, kv_dtype), window_entry_bytes(att, kv_dtype)

    def core(self, lens: BatchLens, tree_keys: float = 0.0) -> Op:
        c, att = self.att.compressed, self.att
        q, kv = lens.requests()
        seen = kv + q                                     # tokens each request's last query sees
        window = np.minimum(seen, c.window)
        entries = seen // c.ratio if c.ratio else np.zeros_like(seen)
        chosen = np.minimum(entries, c.index_topk) if c.index_topk is not None else entries
        picked = np.minimum(entries, q * c.index_topk) if c.index_topk is not None else entries
        keys = q * (window + chosen)                      # query-key pairs
        flops = 4.0 * float(keys.sum()) * self.heads * att.head_dim
        kv_bytes = float(window.sum()) * self.slot + float(picked.sum()) * self.entry
        act_bytes = 2 * lens.q_tokens * self.heads * att.head_dim * DTYPE_BYTES[self.act]
        kernels = 1
        if c.owns_entries:  # each new token writes its row of the state; every ratio-th pools the whole state
            kv_bytes += lens.q_tokens * state_per_token(att)
            kernels += 1
        if c.runs_indexer:  # every query scores the entries in its scope (all, or a reindex layer's pool), top-k of FP32 scores
            scope = entries if c.candidate_pool is None else np.minimum(entries, c.candidate_pool)
            pairs = float((q * scope).sum())
            flops += 2.0 * pairs * c.index_n_heads * c.index_head_dim
            kv_bytes += float(scope.sum()) * index_entry_bytes(att, self.kv_dtype)
            act_bytes += 2 * 4.0 * pairs
            kernels += 2
        return Op("attn.compressed_core", FAMILY, flops=flops, kv_bytes=kv_bytes, act_bytes=act_bytes, kernels=kernels,
                  dtype=self.act, shape={"kind": "compressed", "batch": lens.batch, "ratio": c.ratio,
                                         "q": lens.q_tokens / max(lens.batch, 1), "kv_tokens": float(seen.sum())})
