"""Ops an engine runs on side CUDA streams, beside the layer's main stream: what of a layer's
time they hide.

Two regions of a layer run that way (each a set of chains of ops, in dependency order):

- **MoE: the shared experts beside the router and routed experts** (MOE_CHAINS), where the
  shared experts are not fused into the routed kernel:
  - SGLang's DeepSeek MoE (srt/models/deepseek_v2.py `DeepseekV2MoE.forward` ->
    `forward_normal_dual_stream`; DeepSeek-V2/V3/V3.2, Kimi-K2, and V4's layers reuse it) when no
    all-to-all MoE backend (DeepEP) runs: v0.4.8 to v0.5.5 in passes of at most
    DUAL_STREAM_TOKEN_THRESHOLD = 1024 tokens, from v0.5.6 in passes captured in CUDA graphs
    (`get_is_capture_mode()`), whatever their size. Read in each release's wheel (0.4.7 has no
    dual stream; 0.4.8, 0.4.10, 0.5.3, 0.5.5: the token threshold; 0.5.6, 0.5.7, 0.5.8, 0.5.10,
    0.5.12, 0.5.14: CUDA graphs). The engine rules are in mtpsim/data/engines/sglang.yaml.
  - TensorRT-LLM (tensorrt_llm/_torch/models/modeling_deepseekv3.py `Deepseekv3MoE.forward`:
    `maybe_execute_in_parallel(_compute_routed_output, _compute_shared_output, ..., aux_stream)`,
    which modules/multi_stream_utils.py enables only while CUDA graphs are captured;
    mtpsim/data/engines/trtllm.yaml).
  Which deployments run it is `Deployment.stream_regions` (costs/deployment.py).
- **Attention: SGLang's DeepSeek-V4 layer** (ATTENTION_CHAINS; read in the v0.5.14 wheel, built
  2026-06-26, the release the DSpark PR #29538 of 2026-06-28 branched from, and the same in
  v0.5.15 and v0.5.16): srt/models/deepseek_v4.py `MQALayer.forward` ->
  `_forward_prepare_multi_stream`, when `SGLANG_OPT_USE_MULTI_STREAM_OVERLAP` (srt/environ.py:
  default True), in capture mode and `x.shape[0] <= _multi_stream_bs_limit` = 128 tokens on
  Blackwell (`is_blackwell_supported()`), 64 otherwise: the main stream runs wqkv_a, q_norm and
  wq_b; the compressor (`forward_core_compressor`) starts on its own stream when the layer
  starts; the indexer (srt/layers/attention/dsv4/indexer.py `_forward_prepare_multi_stream`)
  runs its compressor on a third stream from the start, weights_proj on a fourth, and its wq_b
  once q_lora is ready (after wqkv_a) and the weights are; the main stream waits for all of them
  before the attention core.

A region's time is its critical path: the longest of its chains (an op may sit in several
chains), as aiconfigurator prices its `OverlapOp` (max of the branches). At these batch sizes
every kernel is latency bound on a few SMs, so concurrent kernels are taken not to slow each
other: an optimistic bound at larger batches, where both branches stream weights at full rate.
Ops off the critical path are priced 0 and their source is marked `hidden:`; their flops and
bytes stay counted. Torch-free.
"""
from __future__ import annotations

from mtpsim.costs.roofline import OpTime

BLACKWELL_CAPABILITY = 10.0  # sglang utils is_blackwell_supported: compute capability 10.x and up
ATTENTION_MAX_TOKENS = {True: 128, False: 64}  # MQALayer._multi_stream_bs_limit, by Blackwell or not
SMALL_PASS_TOKENS = 1024  # SGLang v0.4.8-v0.5.5 DUAL_STREAM_TOKEN_THRESHOLD (deepseek_v2.py)
HIDDEN = "hidden:"        # the source prefix of an op off the critical path

# region -> chains of op names (costs/compressed.py and ffn.py name the ops)
ATTENTION_CHAINS = (
    ("attn.wqkv_a", "attn.wq_b"),              # main: q path
    ("attn.compressor",),                       # compressor stream, from the layer's start
    ("attn.indexer_compressor",),               # the indexer's stream, from the start
    ("attn.wqkv_a", "attn.indexer_q"),          # indexer wq_b waits for q_lora ...
    ("attn.indexer_weights", "attn.indexer_q"),  # ... and for weights_proj on its own stream
)
MOE_CHAINS = (
    ("moe.shared_gate_up", "moe.shared_down"),  # main stream
    ("moe.router", "moe.experts"),              # alternate stream
)


def moe_runs(mode: str, tokens: int, graphs: bool) -> bool:
    """Whether a pass of `tokens` tokens per GPU (`graphs`: replayed from a CUDA graph) runs its
    shared experts on a second stream under the engine's `mode` (EngineSpec.shared_expert_stream)."""
    return (mode == "graphs" and graphs) or (mode == "small_passes" and 0 < tokens <= SMALL_PASS_TOKENS)


def attention_runs(engine: str, att_kind: str, tokens: int, graphs: bool, capability: float | None) -> bool:
    """Whether SGLang runs this layer's attention prologue on side streams: DeepSeek-V4's layers
    (attention kind `compressed`), in a CUDA-graph pass within the token limit."""
    blackwell = (capability or 0.0) >= BLACKWELL_CAPABILITY
    return engine == "sglang" and att_kind == "compressed" and graphs and tokens <= ATTENTION_MAX_TOKENS[blackwell]


def hide(rows: list, chain_sets: tuple) -> list:
    """One layer's priced rows (op, OpTime, n) with the ops off each region's critical path
    priced 0 (source `hidden:...`). Ops a region names but the layer lacks (an HCA layer has no
    indexer, a fused layer no shared experts) drop out of its chains."""
    if not chain_sets:
        return rows
    seconds = {op.name: t.total_s for op, t, _ in rows}
    hidden: set[str] = set()
    for chains in chain_sets:
        present = [tuple(n for n in c if n in seconds) for c in chains]
        present = [c for c in present if c]
        if len(present) < 2:
            continue
        critical = max(present, key=lambda c: sum(seconds[n] for n in c))
        hidden |= {n for c in present for n in c} - set(critical)
    return [(op, OpTime(0.0, 0.0, 0.0, 0.0, HIDDEN + t.source), n) if op.name in hidden else (op, t, n)
            for op, t, n in rows]
