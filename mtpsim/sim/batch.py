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
        self._kv = np.zeros(0, np.int64)         # `kv`, less the plain commits not applied yet
        self._remaining = np.zeros(0, np.int64)  # `remaining`, plus the plain commits not applied yet
        # plain commits (one token each) not yet applied to the arrays: a plain iteration whose
        # timing is remembered (sim/timing.py) reads neither, so two numpy ops wait for a reader
        self._plain = 0
        self.levels = np.zeros((0, steps)) if per_request_levels else None
        self.steps = steps                         # the most drafts a request accepts in an iteration
        self.kv_sum, self.kv_max = 0, 0
        self.fewest_left: int | None = None       # remaining.min() when known (None: not worked out)
        self.fewest_floor = 0                     # at most remaining.min(): spares working it out (`all_beyond`)
        self.emitted: np.ndarray | None = None    # each request's tokens out at the last commit (None: one each)
        # every request decodes in every iteration of its batch: its iterations are the batch's
        # since it joined, and its accepted drafts what it emitted beyond one token each
        self.iterations = 0
        self.joined: list[int] = []              # self.iterations when each request joined
        self.last_emit_s = np.zeros(0)           # when each request last streamed tokens (its ITL's start)
        self._lens: dict[int, BatchLens] = {}    # lens(q) since the last change

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def kv(self) -> np.ndarray:
        """Committed KV per request: prompt + emitted - 1 (the last one is fed next)."""
        self._apply_plain()
        return self._kv

    @property
    def remaining(self) -> np.ndarray:
        """Output tokens each request has still to emit."""
        self._apply_plain()
        return self._remaining

    def _apply_plain(self) -> None:
        if self._plain:  # whole numbers: adding k at once is adding 1 k times
            self._kv += self._plain
            self._remaining -= self._plain
            self._plain = 0

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
        self.joined += [self.iterations] * len(requests)
        self._kv = np.concatenate([self.kv, [r.input_len + r.generated - 1 for r in requests]])
        self._remaining = np.concatenate([self.remaining, [r.remaining for r in requests]])
        self.last_emit_s = np.concatenate([self.last_emit_s, [r.first_token_s for r in requests]])
        if self.levels is not None:
            self.levels = np.concatenate([self.levels, np.stack([r.levels for r in requests])])
        self._totals()

    def commit(self, accepted: np.ndarray | None) -> int:
        """Each request emits its accepted drafts + 1 (the bonus); None: no drafts (S = 0), one
        token each. Returns the tokens emitted."""
        self.iterations += 1
        self._lens = {}
        n = len(self.requests)
        if accepted is None:  # every KV grows by one, so the longest does too, and the fewest left falls by one
            self.emitted = None
            self._plain += 1
            self.kv_sum += n
            self.kv_max = self.kv_max + 1 if n else 0
            self.fewest_left = self.fewest_left - 1 if self.fewest_left is not None else None
            self.fewest_floor -= 1
            return n
        emitted = self.emitted = accepted + 1
        self._apply_plain()
        self._kv += emitted
        self._remaining -= emitted
        self.fewest_left = None
        self.fewest_floor -= self.steps + 1  # each request emitted at most steps + 1
        tokens = int(accepted.sum()) + n
        self.kv_sum += tokens
        self.kv_max = int(self._kv.max(initial=0))
        return tokens

    def chunk_gaps(self, now_s: float) -> np.ndarray:
        """Each request's time since it last streamed tokens, as of an iteration that emits
        tokens for all of them at `now_s` (one streamed chunk each: the inter-token latency the
        engines' benchmarks record per chunk); they all last streamed at `now_s` after it."""
        gaps = now_s - self.last_emit_s
        self.last_emit_s.fill(now_s)
        return gaps

    def fewest(self) -> int:
        """The fewest tokens a request has left to emit (worked out once between changes)."""
        if self.fewest_left is None:
            self.fewest_left = self.fewest_floor = int(self.remaining.min())
        return self.fewest_left

    def all_beyond(self, k: int) -> bool:
        """Whether every request has more than k tokens left to emit: known from the floor (the
        fewest when last worked out, less the most each commit since could emit) until it
        reaches k, most iterations of long outputs, without a numpy min each."""
        return self.fewest_floor > k or self.fewest() > k

    def pop_finished(self) -> list[Request]:
        """Remove the requests with nothing left to emit; returns them, brought up to date."""
        if not len(self.requests):
            return []
        if self.all_beyond(0):  # most iterations finish no one
            return []
        done = np.flatnonzero(self.remaining == 0).tolist()
        finished = [self.requests[i] for i in done]
        for r, i in zip(finished, done):
            taken = self.iterations - self.joined[i]  # decode iterations since it joined
            r.accepted += r.remaining - taken  # it emitted all it had left: a token an iteration, plus drafts
            r.generated, r.iterations = r.output_len, r.iterations + taken
        keep = self.remaining != 0
        kept = keep.tolist()
        self.requests = [r for r, k in zip(self.requests, kept) if k]
        self.joined = [j for j, k in zip(self.joined, kept) if k]
        self._kv, self._remaining, self.last_emit_s = self.kv[keep], self.remaining[keep], self.last_emit_s[keep]
        if self.levels is not None:
            self.levels = self.levels[keep]
        self._totals()
        return finished

    def _totals(self) -> None:
        self.kv_sum, self.kv_max = int(self.kv.sum()), int(self.kv.max(initial=0))
        self.fewest_left, self.fewest_floor = None, 0
        self._lens = {}
