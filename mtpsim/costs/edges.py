"""What a model part runs outside its decoder layers (input projections, the LM head, sampling,
a block drafter's context injection), one function per kind of part. Each part's record
(costs/deployment.py `ModelPart.edge`) names its function, and the Pricer calls it as

    edge(deployment, part, tokens, logits, from_target, context) -> [(op, count)]

for `tokens` query tokens, `logits` LM-head rows, whether the pass reads the target's hidden
states, and `context` positions a block drafter injects. An op of None (a collective one GPU
does not run) is left for the caller to drop. The head's vocabulary splits over the attention
GPUs (all tp without DP attention).
"""
from __future__ import annotations

import math

from mtpsim.costs import blocks
from mtpsim.costs import ops as O


def target(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """The target's LM head and sampling, and under DP attention the token-count sync once per
    forward (one scheduler batch)."""
    m, tp, act = dep.model, dep.parallel.attention_tp, dep.act
    ops = O.lm_head_ops(m, logits, m.dtypes.lm_head, tp, act=act) + [sample(m.lm_head, logits, m.vocab_size, tp, act)]
    par = dep.parallel
    ops += [O.mlp_sync(par.tp, par.nodes(par.tp))] if par.attention_dp > 1 else []
    return [(op, 1) for op in ops]


def own_mtp(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """The model's own MTP layer (`part.copies` of it, parallel heads): its 2h x h input
    projection where it has one, then the target's LM head, or its own over `mtp.vocab_size`."""
    m, tp, act, n = dep.model, dep.parallel.attention_tp, dep.act, part.copies
    mtp = m.mtp
    proj = O.gemm("mtp.eh_proj", tokens, 2 * m.hidden_size, m.hidden_size, m.dtypes.mtp, act=act)
    head, vocab = (m.lm_head, m.vocab_size) if not mtp.vocab_size else (None, mtp.vocab_size)
    ops = ([proj] * n if mtp.input_projection else []) + \
        O.lm_head_ops(m, logits * n, m.dtypes.lm_head, tp, vocab=mtp.vocab_size, act=act) + \
        [sample(head, logits * n, vocab, tp, act)]
    return [(op, 1) for op in ops]


def external_draft(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """An external draft (EAGLE-3): fed the target's hidden states, its fc fuses the target
    layers it reads (fused_target_layers x backbone width -> hidden); fed its own last hidden
    (the chained draft passes) it skips the fc. The embedding is the target's; the LM head is
    its own, over its pruned vocabulary (a d2t table maps the winners to target tokens)."""
    d, tp, act = part.spec, dep.parallel.attention_tp, dep.act
    fc = [O.gemm("draft.fc", tokens, d.fused_target_layers * d.backbone_hidden_size, d.hidden_size,
                 d.dtypes.dense_ffn, act=act)] if d.fused_target_layers and from_target else []
    vocab = d.draft_vocab_size or d.vocab_size
    ops = fc + O.lm_head_ops(d, logits, d.dtypes.lm_head, tp, vocab=vocab, act=act) + [sample(d.lm_head, logits, vocab, tp, act)]
    return [(op, 1) for op in ops]


def assistant(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """The frozen_kv assistant's projections from and back to the target's width, its own LM
    head and sampling."""
    a, tp, act = part.spec, dep.parallel.attention_tp, dep.act
    ops = [O.gemm("assistant.pre_proj", tokens, 2 * a.backbone_hidden_size, a.hidden_size, a.dtypes.dense_ffn, act=act),
           O.gemm("assistant.post_proj", tokens, a.hidden_size, a.backbone_hidden_size, a.dtypes.dense_ffn, act=act),
           *O.lm_head_ops(a, logits, a.dtypes.lm_head, tp, act=act), sample(a.lm_head, logits, a.vocab_size, tp, act)]
    return [(op, 1) for op in ops]


def block_context(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """A block drafter's context injection over `context` positions (costs/blocks.py)."""
    return blocks.context_ops(part.spec, context, from_target, dep.parallel.attention_tp, dep.act)


def block(dep, part, tokens: int, logits: int, from_target: bool, context: int) -> list:
    """A block drafter's forward beside its layers: the context injection, then the borrowed head
    over its draft positions. A block pass has k + 1 query positions and k logits rows per
    request, so its requests are tokens - logits and its draft positions logits / requests."""
    rows = block_context(dep, part, tokens, logits, from_target, context)
    requests = max(tokens - logits, 1)
    return rows + blocks.head_ops(part.spec, dep.model, requests, max(logits // requests, 1),
                                  dep.parallel.attention_tp, dep.act)


def sample(head, rows: int, vocab: int, tp: int, act: str) -> O.Op:
    """Greedy sampling over a head's logits: the vocabulary (its tp shard), or the centroid head's
    expanded rows (top clusters x vocab / centroids)."""
    if head is not None and head.kind == "centroid":
        return O.greedy_sample(rows, head.top_clusters * math.ceil(vocab / head.num_centroids), act)
    return O.greedy_sample(rows, math.ceil(vocab / tp), act)
