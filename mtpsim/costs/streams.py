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

A region's time is its critical path, the longest of its chains (an op may sit in several
chains), plus what the GPU could not run beside it: each op off that path is priced at
(1 - overlap) of its time, where `overlap` is the share of it the second stream hides.
- Attention (overlap 1): every branch is a few small latency-bound GEMMs at <= 128 tokens, so
  the branches are taken not to slow each other (the max of the chains, as aiconfigurator
  prices its `OverlapOp`).
- MoE (`cost.moe_stream_overlap`, default 0): the routed branch's kernels cover the GPU from a
  couple of tokens on (the trtllm-gen batched GEMMs of SGLang's flashinfer_trtllm runner and
  TensorRT-LLM's TRTLLM MoE backend launch grids of thousands of CTAs, [32,120,1] and [56,120,1]
  for DeepSeek-R1's experts on B200 in the profile of SemiAnalysisAI/InferenceX issue #863), so
  the shared experts' kernels wait for SMs rather than run beside them. Measured end to end, the
  unfused-shared-expert decode steps in benchmarks/absolute.py fit taking turns, not the max of
  the branches: at 1-64 streams, A7 (B200, SGLang v0.5.12) is -3...-20% with the branches
  overlapped and +10...-10% without them; A8 (B300) -4...-20% against +4...-7%; A9 and A10
  (B300, 8k/1k) -11...-18% against -4...+2%; A3 (TensorRT-LLM, B200) -29% against -12%
  (2026-12-05). A pricing that hid as much of the shared experts as the routed branch leaves of
  the memory bandwidth (its bytes over its time at peak) still came out -6...-14% on A7 and
  -10...-13% on A8 at 2-8 streams. Reports from other engines agree: vLLM's ROCm dual-stream
  decode (vllm-project/vllm PR #48223) ran DeepSeek-V3 3-5% slower than one stream at 1-4
  streams; ROCm/ATOM PR #1049 found decode slower with the two streams on, the two kernels
  slowing each other. Set the key to 1 for the max of the branches.
Ops a region prices below their time keep their flops and bytes; a wholly hidden op is priced 0
and its source marked `hidden:`. Torch-free.
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
    ("attn.compressor", "attn.indexer_wk"),     # compressor stream, from the layer's start (V4.1: then its index keys)
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


def moe_stream_passes(mode: str, cuda_graphs: bool) -> str:
    """Which passes `moe_runs` gives the second stream under `mode`: "small" (any pass of at most
    SMALL_PASS_TOKENS tokens, prefill too), "graphs" (CUDA-graph passes: decode-shaped, never
    prefill), or "" (none: no such rule, or it needs CUDA graphs and `cuda_graphs` is off)."""
    if mode == "small_passes":
        return "small"
    return "graphs" if mode == "graphs" and cuda_graphs else ""


def attention_runs(engine: str, att_kind: str, tokens: int, graphs: bool, capability: float | None) -> bool:
    """Whether SGLang runs this layer's attention prologue on side streams: DeepSeek-V4's layers
    (attention kind `compressed`), in a CUDA-graph pass within the token limit."""
    blackwell = (capability or 0.0) >= BLACKWELL_CAPABILITY
    return engine == "sglang" and att_kind == "compressed" and graphs and tokens <= ATTENTION_MAX_TOKENS[blackwell]


def hide(rows: list, regions: tuple) -> list:
    """One layer's priced rows (op, OpTime, n) with each region's ops off its critical path
    priced at (1 - overlap) of their time (0 and source `hidden:...` where wholly hidden);
    `regions`: (chains, overlap) pairs. Ops a region names but the layer lacks (an HCA layer has
    no indexer, a fused layer no shared experts) drop out of its chains."""
    if not regions:
        return rows
    seconds = {op.name: t.total_s for op, t, _ in rows}
    left: dict[str, float] = {}  # op -> the share of its time the region still pays
    for chains, overlap in regions:
        present = [tuple(n for n in c if n in seconds) for c in chains]
        present = [c for c in present if c]
        if len(present) < 2 or overlap <= 0:
            continue
        critical = max(present, key=lambda c: sum(seconds[n] for n in c))
        left |= dict.fromkeys({n for c in present for n in c} - set(critical), 1.0 - overlap)
    return [(op, _share(t, left[op.name]), n) if op.name in left else (op, t, n) for op, t, n in rows]


def _share(t: OpTime, left: float) -> OpTime:
    """An op's time with `left` of it paid: 0, marked hidden, when nothing is."""
    if left <= 0:
        return OpTime(0.0, 0.0, 0.0, 0.0, HIDDEN + t.source)
    return OpTime(t.compute_s * left, t.memory_s * left, t.comm_s * left, t.launch_s * left, t.source)
