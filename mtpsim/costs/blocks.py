"""The ops a block drafter (design `block`, `role: block_draft` models) runs outside its decoder
layers: injecting the target's context into its KV, and the head that turns its block into draft
tokens. passes.py prices them with the drafter's layers (part `block`) or alone (part
`block_context`: a prompt's context, no block).

Context injection (z-lab/dflash `DFlashDraftModel.forward` and its attention: the fc fuses the
tapped target layers' hidden states, `k_proj` / `v_proj` of every draft layer project them, and
the result stays in that layer's cache): per context token an fc of len(taps) x target width ->
hidden, then one K/V projection per draft layer (the layer's own k/v weights, read again: their
bytes count once in memory, `REUSED_WEIGHT_OPS`).

The head: the target's LM head (borrowed: its weights are the target's) over the block's draft
positions, greedy sampling, and the optional refinement: a low-rank Markov head (DSpark: each
position's logits corrected from the previous token, priced as a rank-r x vocab GEMM per draft
position, one after another since each reads the token sampled before it, and a second sampling)
and a confidence head (hidden, ++ the Markov head's rank-r features where it has one, -> 1 per
position; deepseek-ai/DeepSpec deepspec/modeling/dspark/qwen3/modeling.py AcceptRatePredictor).
The Markov head's token-to-rank lookup table is a gather of one row per position and is not
priced or counted; its exact layout (DeepSpec markov_head.py) is assumed, not read.
"""
from __future__ import annotations

import math

from mtpsim.costs import ops as O
from mtpsim.specs import AttentionSpec, ModelSpec

REUSED_WEIGHT_OPS = ("block.context_kv",)  # ops whose weights a draft layer already holds


def context_kv_width(att: AttentionSpec, tp: int) -> int:
    """Output width of one draft layer's K/V projection on one GPU: GQA's K and V heads (split over
    tp, replicated below one head a GPU); MLA's latent + rope (replicated, as kv_a_proj is)."""
    if att.kind == "mla":
        return att.kv_lora_rank + att.qk_rope_head_dim
    if att.kind == "compressed":  # DeepSeek-V4's one K=V head (wkv), replicated
        return att.head_dim
    if att.kind == "gqa":
        heads = max(1, att.num_kv_heads // tp)
        return heads * (att.head_dim + (att.v_head_dim or att.head_dim))
    raise ValueError(f"a block drafter's context KV needs gqa, mla or compressed attention, not {att.kind}")


def context_ops(draft: ModelSpec, tokens: int, from_target: bool, tp: int, act: str) -> list[tuple[O.Op, int]]:
    """(op, count) for `tokens` context positions: the fc over the taps (fed the target's hidden
    states), then each draft layer's K/V projection of the fused hidden."""
    fc = O.gemm("block.fc", tokens, len(draft.block.target_layer_ids) * draft.backbone_hidden_size,
                draft.hidden_size, draft.dtypes.dense_ffn, act=act)
    rows = [(fc, 1)] if from_target else []
    counts: dict[str, int] = {}
    for g in draft.layers:
        counts[g.attention] = counts.get(g.attention, 0) + g.count
    for name, n in counts.items():
        att = draft.attention_kinds[name]
        rows.append((O.gemm("block.context_kv", tokens, draft.hidden_size, context_kv_width(att, tp),
                            draft.dtypes.attention, act=act), n))
    return rows


def head_ops(draft: ModelSpec, target: ModelSpec, rows: int, positions: int, tp: int, act: str) -> list[tuple[O.Op, int]]:
    """(op, count) for the head over `rows` requests x `positions` draft positions: the target's LM
    head and sampling, then the refinement the drafter has."""
    logits = rows * positions
    vocab_shard = math.ceil(target.vocab_size / tp)
    out = [(op, 1) for op in O.lm_head_ops(target, logits, target.dtypes.lm_head, tp, act=act)]
    out.append((O.greedy_sample(logits, vocab_shard, act), 1))
    block = draft.block
    if block.markov_rank:
        step = O.gemm("block.markov_head", rows, block.markov_rank, vocab_shard, draft.dtypes.dense_ffn, act=act)
        out += [(step, positions), (O.greedy_sample(rows, vocab_shard, act), positions)]
    if block.confidence_head:
        # DeepSpec's AcceptRatePredictor reads the hidden and, with a Markov head, its rank-r features
        width = draft.hidden_size + (block.markov_rank or 0)
        out.append((O.gemm("block.confidence_head", logits, width, 1, draft.dtypes.dense_ffn, act=act), 1))
    return out
