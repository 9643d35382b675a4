"""Attention op shapes that do not depend on the batch's lengths: the weight GEMMs around a
layer's attention on one GPU of a replica (projections, the indexer's projections of sparse
attention) and the KV, index cache or state it keeps per token or request. The core over each
request's query and KV lengths is attention_core.py's. Like ops.py, which re-exports these names,
it only counts: flops and bytes per GPU, family and shape.

Units: flops in FLOP, bytes in bytes, token counts in tokens.
"""
from __future__ import annotations

import math

from mtpsim.costs.op import ACT, Op, Parallel, bmm, gemm
from mtpsim.specs import DTYPE_BYTES, AttentionSpec


def attention_projections(att: AttentionSpec, d: int, tokens: int, dtype: str, par: Parallel,
                          query_only: bool = False, act: str = ACT) -> list[Op]:
    """Weight GEMMs around the attention core for `tokens` tokens on one GPU. The q/k/v projections
    read `att.input_size` wide inputs where the spec says so (EAGLE-3: embedding ++ hidden)."""
    tp = par.tp
    if att.kind == "gqa":
        heads, kv_heads = heads_per_gpu(att.num_heads, tp), heads_per_gpu(att.num_kv_heads, tp)
        hd, vd, d_in = att.head_dim, att.v_head_dim or att.head_dim, att.input_size or d
        # queries, keys and values in one GEMM, as every engine runs them (SGLang and vLLM
        # QKVParallelLinear `qkv_proj` in models/llama.py, qwen3.py, gemma4.py, llama_eagle3.py;
        # TensorRT-LLM _torch/modules/attention.py `qkv_proj`); a query-only layer has its queries alone
        ops = [gemm("attn.q_proj", tokens, d_in, heads * hd, dtype, act=act) if query_only else
               gemm("attn.qkv_proj", tokens, d_in, heads * hd + kv_heads * (hd + vd), dtype, act=act)]
        ops += indexer_projections(att, d, tokens, dtype, act) if att.sparse else []
        return ops + [gemm("attn.o_proj", tokens, heads * vd, d, dtype, act=act)]
    if att.kind == "mla":
        heads, rope, nope = heads_per_gpu(att.num_heads, tp), att.qk_rope_head_dim, att.qk_nope_head_dim
        lora = att.kv_lora_rank
        if att.q_lora_rank:
            # q_a_proj and kv_a_proj_with_mqa read the same hidden states: engines run them as one
            # GEMM of n = q_lora_rank + kv_lora_rank + rope (SGLang models/deepseek_v2.py
            # fused_qkv_a_proj_with_mqa; TensorRT-LLM _torch/modules/attention.py MLA
            # kv_a_proj_with_mqa, 'fused_a'; vLLM models/deepseek_v2.py fused_qkv_a_proj)
            q = [gemm("attn.qkv_a_proj", tokens, d, att.q_lora_rank + lora + rope, dtype, act=act),
                 gemm("attn.q_b_proj", tokens, att.q_lora_rank, heads * (nope + rope), dtype, act=act)]
        else:
            q = [gemm("attn.q_proj", tokens, d, heads * (nope + rope), dtype, act=act),
                 gemm("attn.kv_a_proj", tokens, d, lora + rope, dtype, act=act)]
        # absorbed decode: q_nope is multiplied into the latent space (W_UK) and the latent output
        # out of it (W_UV), per head, so the cache stays kv_lora_rank + rope wide. Both are batched
        # matmuls in the activation dtype: SGLang dequantizes a 128x128 block-FP8 kv_b_proj to BF16
        # at load and runs torch.bmm (models/deepseek_common/deepseek_weight_loader.py
        # block_quant_dequant unless SGL_USE_DEEPGEMM_BMM, v0.5.13 wheel); aiconfigurator's vLLM
        # tables time its torch.bmm (kernel_source vllm_torch_bmm). TensorRT-LLM keeps an FP8
        # checkpoint's weights in FP8 (its fp8 bmm rows): not modelled, priced as BF16 too
        q += indexer_projections(att, d, tokens, dtype, act) if att.sparse else []
        return q + [bmm("attn.w_uk", tokens, heads, nope, lora, act, act=act),
                    bmm("attn.w_uv", tokens, heads, lora, att.v_head_dim, act, act=act),
                    gemm("attn.o_proj", tokens, heads * att.v_head_dim, d, dtype, act=act)]
    # linear (Gated DeltaNet): q, k (key heads), v, z gate (value heads), per-head a/b gates
    qk = 2 * heads_per_gpu(att.num_kv_heads, tp) * att.head_dim
    vz = 2 * heads_per_gpu(att.num_heads, tp) * att.value_head_dim
    return [gemm("attn.in_proj", tokens, d, qk + vz + 2 * heads_per_gpu(att.num_heads, tp), dtype, act=act),
            gemm("attn.o_proj", tokens, vz // 2, d, dtype, act=act)]


def indexer_projections(att: AttentionSpec, d: int, tokens: int, dtype: str, act: str = ACT) -> list[Op]:
    """DSA's lightning indexer projections, whole on every GPU (plain, not tensor-parallel, Linear
    layers in DeepSeek-V3.2-Exp's inference/model.py `Indexer`): its queries from the q latent
    (wq_b, q_lora_rank -> index_n_heads x index_head_dim), its one key head from the hidden
    states (wk), and a weight per head (weights_proj, in the activation dtype). QSA's (gqa with an
    indexer, Qwen4-Exp) is one GEMM: vLLM v0.34.0 vllm/models/qwen4_exp/nvidia/qsa_indexer.py
    `QSAIndexer.index_qk_proj`, a ReplicatedLinear to (indexer_n_heads + indexer_kv_heads) x
    indexer_head_dim (indexer_kv_heads is 1), then two RMSNorms and RoPE."""
    heads, width = att.index_n_heads, att.index_head_dim
    if att.kind == "gqa":  # QSA: one replicated index_qk_proj, d -> (heads + 1 key head) x width, no head weights
        return [gemm("attn.indexer_qk", tokens, d, (heads + 1) * width, dtype, act=act)]  # (vLLM v0.34.0 qsa_indexer.py)
    return [gemm("attn.indexer_q", tokens, att.q_lora_rank or d, heads * width, dtype, act=act),
            gemm("attn.indexer_k", tokens, d, width, dtype, act=act),
            gemm("attn.indexer_weights", tokens, d, heads, act, act=act)]


def index_cache_bytes(att: AttentionSpec) -> float:
    """Bytes of the indexer's key cache per token per layer: index_head_dim FP8 values and one
    FP32 scale per 128 of them (DeepSeek-V3.2-Exp inference/model.py `Indexer` k_cache in
    float8_e4m3fn, k_scale_cache with block_size 128); QSA's pooled keys, per token (below); 0
    without an indexer. QSA's ring of the last index_block raw keys per request is not counted."""
    if not att.sparse:
        return 0.0
    if att.kind == "gqa":  # QSA: one BF16 key per index_block tokens (vLLM v0.34.0 qsa_indexer.py: indexer_kv_dtype
        return att.index_head_dim * 2.0 / (att.index_block or 1)  # resolves to "bf16" unless FP8 is asked for)
    return att.index_head_dim * 1.0 + 4.0 * math.ceil(att.index_head_dim / 128)


def kv_bytes_per_token(att: AttentionSpec, kv_dtype: str, tp: int) -> float:
    """KV cache bytes one token adds to one layer on one GPU (0 for linear attention).

    MLA's latent cache is replicated on every tp rank; GQA's KV heads are split (and replicated
    when there are fewer KV heads than ranks)."""
    w = DTYPE_BYTES[kv_dtype]
    if att.kind == "mla":  # a sparse (DSA) layer keeps its indexer's keys beside the latent
        return (att.kv_lora_rank + att.qk_rope_head_dim) * w + index_cache_bytes(att)
    if att.kind == "gqa":  # K head_dim wide, V v_head_dim wide (equal unless the model says so); QSA: its index keys
        return (heads_per_gpu(att.num_kv_heads, tp) * (att.head_dim + (att.v_head_dim or att.head_dim)) * w
                + index_cache_bytes(att))
    return 0.0


def linear_state_bytes(att: AttentionSpec, tp: int) -> float:
    """Gated DeltaNet recurrent state per request per layer on one GPU (fp32), conv state included."""
    heads = heads_per_gpu(att.num_heads, tp)
    conv = (2 * heads_per_gpu(att.num_kv_heads, tp) * att.head_dim + heads * att.value_head_dim) * (att.conv_kernel - 1)
    return (heads * att.head_dim * att.value_head_dim + conv) * 4.0


def heads_per_gpu(heads: int, tp: int) -> int:
    """Heads on one GPU of `tp`: at least one (heads replicate past tp)."""
    return max(1, math.ceil(heads / tp))

