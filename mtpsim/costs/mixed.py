"""Pricing a mixed pass: one forward over a decode batch and a prefill chunk together.

vLLM V1 and TensorRT-LLM run waiting prompts' chunks inside decode iterations (the engine files
mtpsim/data/engines/<kind>.yaml `mixed_batches` cite their schedulers). The forward is ragged: its
token-count ops (GEMMs, experts, LM head, collectives) run once over every token of both, while
attention runs twice, over the decode requests' KV and over the chunk's, as the engines' attention
backends split a mixed batch into its decode and prefill parts. A mixed batch replays no CUDA
graph (TensorRT-LLM and SGLang capture decode-only batches; vLLM's piecewise graphs for mixed
batches of up to 512 tokens are not modelled), so it runs eagerly as a prefill does.

`price_mixed(pricer, shape, lens, chunk_shape, chunk_lens)` returns the `PassCost` of that pass,
named after the decode pass it extends.
"""
from __future__ import annotations

from mtpsim.costs import ops as O
from mtpsim.costs.batch_expansion import expanded_verify
from mtpsim.costs.passes import PassCost


def price_mixed(pricer, shape, lens: O.BatchLens, chunk_shape, chunk_lens: O.BatchLens) -> PassCost:
    """`shape` over the decode batch `lens` (before its kv_offset) and `chunk_shape` (a prefill pass
    of the same part) over the chunk `chunk_lens` (request i adds q[i] prompt tokens after kv[i]
    already in KV), as one eager pass. Under DP attention both are split over the attention
    groups; every group runs the largest group's token count, and the pass waits for the
    slowest group's attention."""
    if pricer.host.expands_verify and shape.kind == "verify":
        shape, lens = expanded_verify(shape, lens)
    if pricer.par.attention_dp == 1:
        pairs = [(lens.shifted(shape.kv_offset), chunk_lens.shifted(chunk_shape.kv_offset))]
    else:
        pairs = [pair for pair in zip(pricer._groups(lens, shape.kv_offset),
                                      pricer._groups(chunk_lens, chunk_shape.kv_offset)) if pair[0].batch or pair[1].batch]
    tokens = max(_decode_rows(shape, d, shape.tokens_per_request) + int(p.q_tokens) for d, p in pairs)
    logits = max(_decode_rows(shape, d, shape.logits_per_request) + p.batch * chunk_shape.logits_per_request
                 for d, p in pairs)
    context = max(d.batch for d, _ in pairs) * shape.context_per_request
    static, work, sources = pricer.static_ops_memo(shape.part, shape.layer, tokens, logits, False, shape.from_target,
                                                   context)
    # the chunk's prefill plan holds the part's attention kernels, priced eagerly
    largest = max(pairs, key=lambda pair: pair[1].q_tokens)[1]
    plan = pricer.plan_memo(chunk_shape, largest.batch, int(largest.q_tokens))
    dynamic = max(([*_cores(pricer, shape, d, plan), *_cores(pricer, chunk_shape, p, plan)] for d, p in pairs),
                  key=lambda priced: sum(n * t.total_s for _, t, n in priced))
    if shape.compact_tokens:  # a tree verify compacts its decode requests' accepted paths
        op = O.kv_copy(max(d.batch for d, _ in pairs) * shape.compact_tokens, pricer.deployment.kv_bytes_per_token(shape.part))
        dynamic.append((op, pricer.costs.time(op, False), 1))
    whole = (lens.shifted(shape.kv_offset), chunk_lens.shifted(chunk_shape.kv_offset))
    batch = whole[0].batch + whole[1].batch
    q = (_decode_rows(shape, whole[0], shape.tokens_per_request) + whole[1].q_tokens) / max(batch, 1)
    dynamic.append(pricer.frame_memo(batch, q, max(whole[0].visible_max, whole[1].visible_max),
                                     pricer.deployment.part(shape.part).spec.hidden_size, False))
    work = work.plus(dynamic, pricer.costs.pass_launch_s(False))
    return PassCost.of(shape.kind, shape.part, tokens, work,
                       tuple(sorted(sources | {t.source for _, t, _ in dynamic})))


def _decode_rows(shape, lens: O.BatchLens, per_request: int) -> int:
    """Token (or logits) rows of the decode part: a ragged verify's own widths, else per request."""
    return int(lens.q_tokens) if shape.ragged else lens.batch * per_request


def _cores(pricer, shape, lens: O.BatchLens, plan) -> list:
    """The part's attention cores over `lens` (none for an empty side)."""
    return pricer._attention(shape, lens, plan) if lens.batch else []
