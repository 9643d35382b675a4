"""Ops an engine runs on side CUDA streams, beside the layer's main stream: what of a layer's
time they hide.

SGLang's DeepSeek-V4 model code forks side streams inside a captured CUDA graph (read in the
v0.5.14 wheel, `pip download sglang==0.5.14 --no-deps`, built 2026-06-26: the release the
DSpark PR #29538 of 2026-06-28 branched from; the same code in v0.5.15 and v0.5.16):

- attention (srt/models/deepseek_v4.py `MQALayer.forward` -> `_forward_prepare_multi_stream`,
  when `SGLANG_OPT_USE_MULTI_STREAM_OVERLAP` (srt/environ.py: default True), in capture mode
  (a CUDA-graph pass) and `x.shape[0] <= _multi_stream_bs_limit` = 128 tokens on Blackwell
  (`is_blackwell_supported()`), 64 otherwise): the main stream runs wqkv_a, q_norm and wq_b;
  the compressor (`forward_core_compressor`) starts on its own stream when the layer starts; the
  indexer (srt/layers/attention/dsv4/indexer.py `_forward_prepare_multi_stream`) runs its
  compressor on a third stream from the start, weights_proj on a fourth, and its wq_b once
  q_lora is ready (after wqkv_a) and the weights are; the main stream waits for all of them
  before the attention core;
- MoE (srt/models/deepseek_v2.py `DeepseekV2MoE.forward` -> `forward_normal_dual_stream`, in
  capture mode with no shared-expert fusion, which DeepSeek-V4 always disables:
  deepseek_v4.py `determine_num_fused_shared_experts`): the shared expert on the main stream,
  the router, top-k and routed experts on the alternate stream, joined before the all-reduce.

A region's time is its critical path: the longest of its chains (each a list of op names in
dependency order; an op may sit in several chains). At these batch sizes every kernel is latency
bound on a few SMs, so concurrent kernels are taken not to slow each other (an optimistic
bound at larger batches). Ops off the critical path are priced 0 and labelled `hidden`; the
flops and bytes stay counted. Torch-free.
"""
from __future__ import annotations

from mtpsim.costs.roofline import OpTime

BLACKWELL_CAPABILITY = 10.0  # sglang utils is_blackwell_supported: compute capability 10.x and up
ATTENTION_MAX_TOKENS = {True: 128, False: 64}  # MQALayer._multi_stream_bs_limit, by Blackwell or not

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


def applies(engine: str, att_kind: str) -> bool:
    """Whether an engine runs this attention kind's layers with side streams: SGLang's
    DeepSeek-V4 layers (attention kind `compressed`)."""
    return engine == "sglang" and att_kind == "compressed"


def regions(tokens: int, graphs: bool, capability: float | None) -> tuple[tuple, ...]:
    """The regions whose chains run concurrently in a layer over `tokens` tokens: none outside a
    CUDA graph; the attention's above its token limit drops out."""
    if not graphs:
        return ()
    blackwell = (capability or 0.0) >= BLACKWELL_CAPABILITY
    return ((ATTENTION_CHAINS, MOE_CHAINS) if tokens <= ATTENTION_MAX_TOKENS[blackwell] else (MOE_CHAINS,))


def hide(rows: list, chain_sets: tuple) -> list:
    """One layer's priced rows (op, OpTime, n) with the ops off each region's critical path
    priced 0 (source `hidden`). Ops a region names but the layer lacks (an HCA layer has no
    indexer) drop out of its chains."""
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
    return [(op, OpTime(0.0, 0.0, 0.0, 0.0, f"hidden:{t.source}"), n) if op.name in hidden else (op, t, n)
            for op, t, n in rows]
