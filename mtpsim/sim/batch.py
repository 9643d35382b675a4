"""A replica's decoding requests as arrays, one row per request in the scheduler's running order:
what a decode iteration reads (committed KV, its sum and longest, remaining tokens, acceptance
levels) and updates, with no per-request Python work per iteration. The Request objects are
brought up to date when they leave the batch."""
from __future__ import annotations

import numpy as np

from mtpsim.costs.ops import BatchLens
from mtpsim.sim.workload import Request


class RunningBatch:
    """Requests past their first token and not yet finished."""

    def __init__(self, steps: int, per_request_levels: bool):
        self.requests: list[Request] = []
        self.kv = np.zeros(0, np.int64)          # committed KV: prompt + emitted - 1 (the last one is fed next)
        self.remaining = np.zeros(0, np.int64)   # output tokens still to emit
        self.accepted = np.zeros(0, np.int64)    # drafts accepted so far
        self.iterations = np.zeros(0, np.int64)  # decode iterations taken part in
        self.levels = np.zeros((0, steps)) if per_request_levels else None
        self.kv_sum, self.kv_max = 0, 0
        self._lens: dict[int, BatchLens] = {}  # lens(q) since the last change

    def __len__(self) -> int:
        return len(self.requests)

    def lens(self, q: int) -> BatchLens:
        """Every request adding q tokens after its committed KV, as the pricer takes it (built
        once per q between changes: an iteration's passes read the same KV)."""
        found = self._lens.get(q)
        if found is None:
            found = self._lens[q] = BatchLens.uniform(q, self.kv, self.kv_sum, self.kv_max)
        return found

    def add(self, requests: list[Request]) -> None:
        """Requests whose prefill just emitted their first token."""
        if not requests:
            return
        self.requests += requests
        self.kv = np.concatenate([self.kv, [r.input_len + r.generated - 1 for r in requests]])
        self.remaining = np.concatenate([self.remaining, [r.remaining for r in requests]])
        self.accepted = np.concatenate([self.accepted, [r.accepted for r in requests]])
        self.iterations = np.concatenate([self.iterations, [r.iterations for r in requests]])
        if self.levels is not None:
            self.levels = np.concatenate([self.levels, np.stack([r.levels for r in requests])])
        self._totals()

    def commit(self, accepted: np.ndarray) -> None:
        """Each request emits its accepted drafts + 1 (the bonus)."""
        self.kv += accepted
        self.kv += 1
        self.remaining -= accepted
        self.remaining -= 1
        self.accepted += accepted
        self.iterations += 1
        self.kv_sum += int(accepted.sum()) + len(self.requests)
        self.kv_max = int(self.kv.max(initial=0))
        self._lens = {}

    def pop_finished(self) -> list[Request]:
        """Remove the requests with nothing left to emit; returns them, brought up to date."""
        if not len(self.requests) or self.remaining.min() > 0:  # most iterations finish no one
            return []
        done = np.flatnonzero(self.remaining == 0)
        finished = [self.requests[i] for i in done.tolist()]
        for r, i in zip(finished, done.tolist()):
            r.generated = r.output_len
            r.accepted, r.iterations = int(self.accepted[i]), int(self.iterations[i])
        keep = self.remaining != 0
        self.requests = [r for r, k in zip(self.requests, keep.tolist()) if k]
        self.kv, self.remaining = self.kv[keep], self.remaining[keep]
        self.accepted, self.iterations = self.accepted[keep], self.iterations[keep]
        if self.levels is not None:
            self.levels = self.levels[keep]
        self._totals()
        return finished

    def _totals(self) -> None:
        self.kv_sum, self.kv_max = int(self.kv.sum()), int(self.kv.max(initial=0))
        self._lens = {}
