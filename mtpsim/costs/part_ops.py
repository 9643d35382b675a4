"""What a model part's layers run, as unpriced ops: per layer group, costs/layer.py's one list of
a decoder layer's ops with the Engram lookup where a layer has one, for a batch of `tokens` tokens
on one GPU of the deployment; a prefill's replay tail (ModelPart.tail) over its own tokens; and a
part's weight bytes, read from the same ops. Nothing here knows a cost model: passes.py prices
these ops, overlap.py splits them into micro-batches, memory.py sizes their weights."""
from __future__ import annotations

from collections.abc import Iterator

from mtpsim.costs import blocks
from mtpsim.costs import compressed as C
from mtpsim.costs import ops as O
from mtpsim.costs.deployment import Deployment, ModelPart
from mtpsim.costs.engram import engram_ops
from mtpsim.costs.layer import decoder_layer_ops
from mtpsim.spec_base import DTYPE_BYTES
from mtpsim.specs import AttentionSpec, LayerRef

ALL_EXPERTS_TOKENS = 1 << 30  # enough tokens that every expert is touched (weight_bytes)


def layer_groups(dep: Deployment, part: ModelPart, tokens: int, glue: bool = False, moe_only: bool = False,
                 per_request: int = 1, tail_tokens: int | None = None
                 ) -> Iterator[tuple[int, AttentionSpec, list[O.Op]]]:
    """(count, attention spec, the layer's ops) per layer group of a part, each request bringing
    `per_request` consecutive tokens (two-batch overlap's micro-batches and mixed passes route
    every token independently: the default); `glue`: with the layer glue op a profile with
    whole-layer timings prices; `moe_only`: the groups whose FFN is experts alone. `tail_tokens`:
    a prefill's replay tail runs its layers over that many tokens, and the layer that starts it
    writes the other tokens' compressed entries too (its compressor and index keys)."""
    tail = {ref: n for n, ref in part.tail} if tail_tokens is not None else {}
    for count, ref in part.groups:
        att, ffn = part.spec.attention_kinds[ref.attention], part.spec.ffn_kinds[ref.ffn]
        if moe_only and ffn.kind != "moe":
            continue
        late = tail.get(ref, 0)
        if count > late:
            yield count - late, att, _layer(dep, part, ref, tokens, glue, per_request)
        if late:
            yield late, att, _layer(dep, part, ref, tail_tokens, glue, per_request)
    if tail and tokens > tail_tokens:  # SGLang write_tail_source_kv: the source's entries for every row
        att = part.spec.attention_kinds[part.tail_source.attention]
        rest = C.projections(att, part.spec.hidden_size, tokens - tail_tokens, part.attn_dtype,
                             dep.parallel.attention_tp, dep.act)
        yield 1, att, [op for op in rest if op.name in ("attn.compressor", "attn.indexer_wk")]


def layer_ops(dep: Deployment, part: ModelPart, tokens: int, glue: bool = False,
              moe_only: bool = False) -> Iterator[tuple[int, O.Op]]:
    """(count, op) of `layer_groups`, flat."""
    for count, _, layer in layer_groups(dep, part, tokens, glue, moe_only):
        yield from ((count, op) for op in layer)


def weight_bytes(dep: Deployment, name: str, shared_head: bool = True, resident: bool = False) -> float:
    """Weight bytes of a part on one GPU: its ops over enough tokens to touch every expert, fc
    over target layers included; without the target's LM head when `shared_head` is False and
    the part shares it; `resident`: with the block scales 4-bit weights are kept with in memory
    (ModelSpec.fp4_scale_bytes a weight; the ops count the values alone, as the measured tables do)."""
    part = dep.part(name)
    rows = [(op, count) for count, op in layer_ops(dep, part, ALL_EXPERTS_TOKENS)]
    rows += part.edge(dep, part, ALL_EXPERTS_TOKENS, 1, True, 1)
    drop = not shared_head and part.shares_target_head
    scales = part.spec.fp4_scale_bytes / DTYPE_BYTES["fp4"] if resident else 0.0
    return sum(n * op.weight_bytes * (1 + scales * (op.dtype == "fp4")) for op, n in rows if op is not None
               and not (drop and op.family == "lm_head") and op.name not in blocks.REUSED_WEIGHT_OPS)


def _layer(dep: Deployment, part: ModelPart, ref: LayerRef, tokens: int, glue: bool, per_request: int) -> list[O.Op]:
    """One layer's ops (costs/layer.py's list, and an Engram lookup where the layer has one)."""
    par = dep.parallel
    att, ffn = part.spec.attention_kinds[ref.attention], part.spec.ffn_kinds[ref.ffn]
    independent = O.shared_routing(dep.routing_locality, per_request)
    ops = decoder_layer_ops(att, ffn, part.spec.hidden_size, tokens, part.attn_dtype, part.ffn_dtype,
                            part.expert_dtype, par, part.query_only, dep.moe_skew, dep.act, glue,
                            fuse_shared=dep.fuses_shared_experts, independent=independent)
    if ref.engram:  # DeepSeek-V4.1's Engram lookup, Qwen4-Exp's PLE n-gram table (costs/engram.py)
        ops += engram_ops(part.spec.engram, part.spec.hidden_size, att.hc_copies, tokens, part.attn_dtype, par.tp,
                          tokens * par.attention_dp, dep.act, par.nodes(par.tp), dep.engram_tables)
    return ops
