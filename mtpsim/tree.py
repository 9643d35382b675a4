"""Tree drafts (topk K > 1, draft_tokens N): the verify tree SGLang's EAGLE path builds, the
distribution of accepted drafts it yields (issue 12 §3), and the one-parameter rank family a
tree's accept length alone is read through (`tree_rank_rows`, `tree_rank_rate`).

How SGLang builds the tree (python/sglang/srt/speculative/eagle_worker.py `draft_forward`,
spec_utils.py `select_top_k_tokens`, eagle_utils.py `organize_draft_results`):
- depth 1: the K best tokens of the extend's (or seed's) logits, scored by their draft
  probability; all K are live;
- depth d > 1: each of the K live nodes proposes its K best children, scored by the parent's
  score times the child's draft probability; the K best of those K*K become the live nodes;
- every proposed node is a candidate (K + (S-1)*K*K of them); the verify tree is the root plus
  the N-1 candidates with the best scores (`torch.topk` over all of them).
Greedy verify (`verify_tree_greedy`) walks from the root along the target's own tokens: the
accepted drafts are the depth of the deepest node of the target's path that the tree holds.

The acceptance input, rank_probs[k][j] (`acceptance.per_depth_topk`), is P(the target's token at
depth k+1 is the draft's (j+1)-th best candidate | the path so far was accepted), the same at
every node of a depth. Assumption (the draft is calibrated and ranks consistently): the draft's
probability of a node's rank-j child is rank_probs[depth][j] too, so a node's score is the product
of the rank probabilities along its path. The tree is then the same every iteration, and the
distribution of accepted drafts is exact. Ties in score go to the earlier proposed node (torch
leaves them unspecified); a parent is proposed before its children and scores at least as much,
so the tree always holds a node's ancestors.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


@dataclass(frozen=True)
class DraftTree:
    """The verify tree's drafts (root excluded), in proposal order: depth (1..S), rank (0-based
    within its parent's children) and parent (index into these arrays, -1 for the root)."""

    depth: np.ndarray
    rank: np.ndarray
    parent: np.ndarray


def build_tree(rank_probs: np.ndarray, topk: int, draft_tokens: int) -> DraftTree:
    """The verify tree for S = len(rank_probs) steps, K = topk, N = draft_tokens (root included)."""
    q = np.asarray(rank_probs, dtype=float)
    steps = len(q)
    scores, depth, rank, parent = [], [], [], []
    live_scores, live_ids = np.ones(1), np.full(1, -1)  # the root
    for d in range(steps):
        children = (live_scores[:, None] * q[d][None, :topk]).ravel()
        first = len(scores)
        scores += children.tolist()
        depth += [d + 1] * len(children)
        rank += list(range(topk)) * len(live_ids)
        parent += np.repeat(live_ids, topk).tolist()
        best = np.argsort(-children, kind="stable")[:topk]  # select_top_k_tokens: the K live nodes
        live_scores, live_ids = children[best], first + best
    chosen = np.sort(np.argsort(-np.asarray(scores), kind="stable")[: draft_tokens - 1])
    index = np.full(len(scores), -1)
    index[chosen] = np.arange(len(chosen))
    parents = np.asarray(parent)[chosen]
    return DraftTree(np.asarray(depth)[chosen], np.asarray(rank)[chosen],
                     np.where(parents >= 0, index[np.maximum(parents, 0)], -1))


def accept_distribution(rank_probs, topk: int, draft_tokens: int) -> np.ndarray:
    """P(exactly a drafts accepted), a = 0..S, for the tree of `build_tree`.

    A node is reached with the product of the target's rank probabilities along its path; the
    walk stops at node v (a = depth(v)) unless the target's next token is one of v's children in
    the tree: P(a) = sum over v at depth a of reach(v) * (1 - sum over v's children c of p(c))."""
    q = np.asarray(rank_probs, dtype=float)
    tree = build_tree(q, topk, draft_tokens)
    p = q[tree.depth - 1, tree.rank]              # P(target picks this child | parent reached)
    reach = np.empty(len(p))
    for i in range(len(p)):                       # parents come first in proposal order
        reach[i] = p[i] * (1.0 if tree.parent[i] < 0 else reach[tree.parent[i]])
    onward = np.zeros(len(p) + 1)                 # index 0: the root, i + 1: node i
    np.add.at(onward, tree.parent + 1, p)
    stay = reach * (1.0 - onward[1:])
    pmf = np.zeros(len(q) + 1)
    pmf[0] = 1.0 - onward[0]
    np.add.at(pmf, tree.depth, stay)
    return pmf


def tree_rank_rows(rate: float, steps: int, topk: int) -> list[list[float]]:
    """per_depth_topk of the one-parameter family a tree's accept length alone is read with: at
    every depth the draft's rank j (0 = best) catches the target's token with rate (1 - rate)^j,
    so the better ranks catch more and the topk together catch 1 - (1 - rate)^topk. An assumption
    about how acceptance splits over ranks, not a measurement (checks.py says so where it is used)."""
    return [[rate * (1 - rate) ** j for j in range(topk)] for _ in range(steps)]


def tree_accept_length(rate: float, steps: int, topk: int, draft_tokens: int) -> float:
    """E[A] of the verify tree (`build_tree`) under the rank family at `rate`."""
    pmf = accept_distribution(tree_rank_rows(rate, steps, topk), topk, draft_tokens)
    return 1.0 + float(np.arange(len(pmf)) @ pmf)


def tree_most(steps: int, draft_tokens: int) -> int:
    """The longest accept length a tree of draft_tokens tokens (root included) over `steps` depths
    allows: its deepest path accepted whole."""
    return 1 + min(steps, draft_tokens - 1)


@cache
def tree_rank_rate(accept_length: float, steps: int, topk: int, draft_tokens: int) -> float:
    """The family's rate whose tree yields `accept_length`, by bisection: E[A] rises with the rate
    (checked over steps 1-8, topk 2-8 and every tree size in tests/test_tree_accept_length.py),
    from 1 at rate 0 to tree_most at rate 1."""
    if not 1.0 <= accept_length <= tree_most(steps, draft_tokens) + 1e-9:
        raise ValueError(f"accept length {accept_length} outside [1, {tree_most(steps, draft_tokens)}]")
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tree_accept_length(mid, steps, topk, draft_tokens) < accept_length else (lo, mid)
    return (lo + hi) / 2
