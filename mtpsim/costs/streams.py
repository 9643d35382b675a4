"""Shared experts on a second CUDA stream: the routed experts hide them.

At decode sizes the engines run an MoE layer's shared experts and its routed branch (router +
routed experts) on two CUDA streams, so the layer pays about the longer of the two rather than
their sum:
- SGLang, DeepSeek-family models (srt/models/deepseek_v2.py `DeepseekV2MoE.forward` ->
  `forward_normal_dual_stream`) when the shared experts are not fused into the routed kernel
  (`num_fused_shared_experts == 0`) and no all-to-all MoE backend (DeepEP) runs. v0.4.8 to v0.5.5:
  passes of at most DUAL_STREAM_TOKEN_THRESHOLD = 1024 tokens; from v0.5.6, passes captured in CUDA
  graphs (`get_is_capture_mode()`), whatever their size. Read in each release's wheel (0.4.7 has
  no dual stream; 0.4.8, 0.4.10, 0.5.3, 0.5.5: the token threshold; 0.5.6, 0.5.7, 0.5.8, 0.5.10,
  0.5.12: CUDA graphs). The rules are in mtpsim/data/engines/sglang.yaml.
- TensorRT-LLM (tensorrt_llm/_torch/models/modeling_deepseekv3.py `Deepseekv3MoE.forward`:
  `maybe_execute_in_parallel(_compute_routed_output, _compute_shared_output, ..., aux_stream)`,
  which modules/multi_stream_utils.py enables only while CUDA graphs are captured).

Priced as aiconfigurator prices it (its `OverlapOp`: max of the two branches): each shared-expert
op keeps the share of its time that the routed branch does not cover, max(0, S - R) / S; its
flops and bytes stay, so the work is counted and only the time is hidden. Not modelled: the two
streams competing for memory bandwidth and SMs, which makes the real overlap less than perfect
where both branches stream weights at full rate (large batches). Torch-free.
"""
from __future__ import annotations

SHARED = frozenset({"moe.shared_gate_up", "moe.shared_down"})
ROUTED = frozenset({"moe.router", "moe.experts"})
SMALL_PASS_TOKENS = 1024  # SGLang v0.4.8-v0.5.5 DUAL_STREAM_TOKEN_THRESHOLD (deepseek_v2.py)
LABEL = ":side-stream"    # appended to a hidden op's source, so `cost --ops` shows why it shrank


def runs(mode: str, tokens: int, graphs: bool) -> bool:
    """Whether a pass of `tokens` tokens per GPU (`graphs`: replayed from a CUDA graph) runs its
    shared experts on a second stream under the engine's `mode` (EngineSpec.shared_expert_stream)."""
    return (mode == "graphs" and graphs) or (mode == "small_passes" and 0 < tokens <= SMALL_PASS_TOKENS)


def hide_shared(rows: list) -> list:
    """One layer group's (op, OpTime, count) rows with the shared experts' time cut to what the
    routed branch does not hide; rows without both branches come back as they are."""
    shared = sum(t.total_s for op, t, _ in rows if op.name in SHARED)
    routed = sum(t.total_s for op, t, _ in rows if op.name in ROUTED)
    if shared <= 0.0 or routed <= 0.0:
        return rows
    keep = max(0.0, shared - routed) / shared
    return [(op, t._replace(compute_s=t.compute_s * keep, memory_s=t.memory_s * keep, comm_s=t.comm_s * keep,
                            overhead_s=t.overhead_s * keep, source=t.source + LABEL), n)
            if op.name in SHARED else (op, t, n) for op, t, n in rows]
