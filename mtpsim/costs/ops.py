"""Op shapes: what one GPU of a replica computes and moves for each op of a pass.

Every function returns `Op`s with flops and bytes *per GPU* (the shard under tp/ep), their
family and shape (the keys a calibrated profile is looked up by), and how many kernels they
launch. Pricing them is the cost models' job (roofline.py, calibrated.py); this file only counts.
The op record is op.py's, the attention shapes attention.py's and attention_core.py's, the FFN
builders ffn.py's and the collectives comms.py's; all are re-exported here, so callers name `ops.X`.

Units: flops in FLOP, bytes in bytes, token counts in tokens.
"""
from __future__ import annotations

import math

# re-exported: the op record (op.py), attention (attention.py, attention_core.py), the FFN builders
# (ffn.py) and the collectives (comms.py)
from mtpsim.costs.attention import attention_projections as attention_projections
from mtpsim.costs.attention import index_cache_bytes as index_cache_bytes
from mtpsim.costs.attention import indexer_projections as indexer_projections
from mtpsim.costs.attention import kv_bytes_per_token as kv_bytes_per_token
from mtpsim.costs.attention import linear_state_bytes as linear_state_bytes
from mtpsim.costs.attention_core import AttentionKernel as AttentionKernel
from mtpsim.costs.attention_core import BatchLens as BatchLens
from mtpsim.costs.attention_core import CoreCounts as CoreCounts
from mtpsim.costs.attention_core import IndexerKernel as IndexerKernel
from mtpsim.costs.attention_core import attention_core as attention_core
from mtpsim.costs.attention_core import sparse_lens as sparse_lens
from mtpsim.costs.comms import allreduce as allreduce
from mtpsim.costs.comms import dispatch_combine as dispatch_combine
from mtpsim.costs.comms import mlp_sync as mlp_sync
from mtpsim.costs.ffn import deepseek_v3_architecture as deepseek_v3_architecture
from mtpsim.costs.ffn import experts_touched as experts_touched
from mtpsim.costs.ffn import ffn_ops as ffn_ops
from mtpsim.costs.ffn import fusable_shared_experts as fusable_shared_experts
from mtpsim.costs.ffn import moe_experts as moe_experts
from mtpsim.costs.ffn import routed_imbalance as routed_imbalance
from mtpsim.costs.ffn import shared_routing as shared_routing
from mtpsim.costs.op import ACT as ACT
from mtpsim.costs.op import MLA_ABSORB_MAX_Q as MLA_ABSORB_MAX_Q
from mtpsim.costs.op import Op as Op
from mtpsim.costs.op import Parallel as Parallel
from mtpsim.costs.op import as_gemm as as_gemm
from mtpsim.costs.op import bmm as bmm
from mtpsim.costs.op import gemm as gemm
from mtpsim.specs import DTYPE_BYTES, AttentionSpec, FFNSpec, ModelSpec


def pass_frame(batch: int, q: float, kv_max: float, d: int) -> Op:
    """What a pass runs once outside its layers and heads: token positions, the attention mask
    over the batch's longest visible KV, rotary tables, the token embedding and the final norm.
    Bytes: the embedded and normed activations written, the boolean mask written; two kernels
    (the embedding gather and the final norm: the roofline prices their launches and bytes); a
    calibrated profile measures it."""
    fixed, per_kv = frame_bytes(batch, q, d)
    return Op("pass.frame", "pass", act_bytes=fixed + per_kv * kv_max, kernels=2,
              shape={"batch": batch, "q": q, "kv": kv_max, "d": d})


def frame_bytes(batch: int, q: float, d: int) -> tuple[float, float]:
    """pass_frame's bytes as (what does not depend on the longest KV, the share that does):
    bytes = fixed + per_kv * kv_max, 2 * batch * q * d * width + batch * q * kv_max in that order
    (the frame pricers, core_pricer.py and roofline.py, add them per kv_max the same way)."""
    return 2 * batch * q * d * DTYPE_BYTES[ACT], batch * q


def kv_copy(tokens: int, bytes_per_token: float) -> Op:
    """Copy `tokens` KV entries (every layer's) to other slots: each read and written once, in
    one kernel (SGLang's `move_kv_cache`)."""
    return Op("kv.compact", "copy", kv_bytes=2.0 * tokens * bytes_per_token, kernels=1,
              shape={"tokens": tokens, "bytes_per_token": bytes_per_token})


def layer_elementwise(tokens: int, d: int, act: str = ACT) -> Op:
    """Norms, RoPE, activation and residual adds of one layer: about six passes over the
    tokens x d hidden states, in four kernels."""
    return Op("norms+rope+act", "elementwise", act_bytes=6 * tokens * d * DTYPE_BYTES[act], kernels=4,
              dtype=act, shape={"tokens": tokens, "d": d})


def greedy_sample(rows: int, width: int, act: str = ACT) -> Op:
    """Greedy sampling: argmax over `rows` x `width` logits, read once, in one kernel."""
    return Op("sample.argmax", "argmax", act_bytes=rows * width * DTYPE_BYTES[act], kernels=1, dtype=act,
              shape={"m": rows, "n": width})


def layer_glue(kind: str, tokens: int, d: int) -> Op:
    """What one layer runs besides its priced ops (views, transposes, cat, index building, the
    residual adds' dispatch): no flops or bytes, so the roofline prices it 0; a calibrated
    profile prices it from whole-layer measurements. kind: `layer_kind`."""
    return Op("layer.glue", "glue", kernels=0, shape={"layer": kind, "tokens": tokens, "d": d})


def layer_kind(att: AttentionSpec, ffn: FFNSpec, query_only: bool = False) -> str:
    """mla_moe, gqa_dense, swa_dense, assistant (query-only), ...: the whole-layer kinds."""
    if query_only:
        return "assistant"
    a = "swa" if att.kind == "gqa" and att.window else att.kind
    return f"{a}_{ffn.kind}"


# ----------------------------------------------------------------------------- heads

def lm_head_ops(model: ModelSpec, rows: int, dtype: str, tp: int, d: int | None = None,
                vocab: int | None = None, act: str = ACT) -> list[Op]:
    """Logits for `rows` tokens, vocab split over tp. The centroid head scores num_centroids
    clusters, then the top_clusters' rows of the full head (V / C rows each) per token."""
    d, vocab = d or model.hidden_size, vocab or model.vocab_size
    head = model.lm_head
    if head.kind == "full":
        return [_head_kind(gemm("lm_head", rows, d, math.ceil(vocab / tp), dtype, family="lm_head", act=act), "full")]
    c, top = head.num_centroids, head.top_clusters
    rows_per_token = top * math.ceil(vocab / c)
    w = DTYPE_BYTES[dtype]
    expand = Op("lm_head.centroid_expand", "lm_head", flops=2.0 * rows * rows_per_token * d / tp,
                weight_bytes=min(rows * rows_per_token, vocab) * d * w / tp, kernels=3, dtype=dtype,
                shape={"m": rows, "k": d, "n": rows_per_token, "dtype": dtype, "kind": "expand"})
    return [_head_kind(gemm("lm_head.centroids", rows, d, c, dtype, family="lm_head", act=act), "full"), expand]


def _head_kind(op: Op, kind: str) -> Op:
    """Tag an LM-head op `full` (a plain matmul) or `expand` (top clusters' rows, gathered)."""
    op.shape["kind"] = kind
    return op
