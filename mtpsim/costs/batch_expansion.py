"""A verify pass as a batch-expansion scorer runs it (engine `verify_scorer: batch_expansion`,
vLLM V0's): the verify's window of N tokens per request becomes N one-token sequences per request,
so the pass is priced as a decode over the expanded batch (`Pricer.price_lens` and costs/mixed.py
reshape it before pricing).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mtpsim.costs import ops as O
from mtpsim.designs import PassShape


def expanded_verify(shape: PassShape, lens: O.BatchLens) -> tuple[PassShape, O.BatchLens]:
    """A verify of N tokens per request as a batch-expansion scorer runs it (vLLM V0
    spec_decode/batch_expansion.py, BatchExpansionTop1Scorer): each request's window becomes N
    sequences of one query token, the j-th holding the request's KV plus its first j window
    tokens, so the pass is a decode over B * N sequences and each reads its request's whole KV
    (a ragged verify: over the sum of the requests' own widths)."""
    n = shape.tokens_per_request
    q, kv = lens.requests()
    if shape.ragged:  # request i's own q[i] sequences
        q = q.astype(np.int64)
        kv = np.repeat(kv + shape.kv_offset, q) + np.arange(int(q.sum())) - np.repeat(np.cumsum(q) - q, q)
    else:
        kv = np.repeat(kv + shape.kv_offset, n) + np.tile(np.arange(n), len(kv))
    one = replace(shape, tokens_per_request=1, logits_per_request=1, kv_offset=0, ragged=False)
    return one, O.BatchLens.uniform(1, kv, int(kv.sum()), int(kv.max(initial=0)))
