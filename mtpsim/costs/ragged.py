"""The lengths each pass of an iteration runs over when every request keeps its own number of
drafts (`acceptance.kept_length`): the one rule the engine and the `cost` report both price by.

- The verify checks what each request kept: kept[i] + 1 tokens for request i (a ragged verify,
  PassShape.ragged), whoever set the widths.
- Under a confidence rule (DSpark's head scores the block it drafted) every request drafts
  first, so the draft passes keep their full shape.
- Under a depth controller (`kept_by: controller`) the width is chosen before drafting: a request
  at width 0 runs no draft pass, and an iteration whose requests are all at 0 is a plain decode
  step (the caller swaps in the plain passes: `all_plain`). A request at 0 < width < S is still
  priced drafting the whole chain or block (a block drafts it in one forward anyway).
- Passes after the verify (nextn's extend) keep their shape: they refresh the draft's KV for
  every request, drafting or not.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mtpsim.costs.ops import BatchLens


def all_plain(kept: np.ndarray | None, before_drafting: bool) -> bool:
    """A controller set every request to width 0: the iteration is a plain decode step."""
    return kept is not None and before_drafting and not kept.any()


def pass_lens(kind: str, tokens_per_request: int, kept: np.ndarray | None, kv: np.ndarray,
              uniform: Callable[[int], BatchLens], before_drafting: bool) -> BatchLens | None:
    """The batch one pass of `kind` runs over; None: no request runs it (it is skipped).
    `uniform(q)` is every request adding q tokens (the running batch's cached lengths)."""
    if kept is None:
        return uniform(tokens_per_request)
    if kind == "verify":
        return BatchLens.of(kept + 1, kv)
    if kind == "draft" and before_drafting:
        drafting = kept > 0
        if drafting.all():
            return uniform(tokens_per_request)
        if not drafting.any():
            return None
        return BatchLens.of(np.full(int(drafting.sum()), tokens_per_request), kv[drafting])
    return uniform(tokens_per_request)
