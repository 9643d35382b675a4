"""A decode iteration: what it runs at some steps (`DecodeIteration`), and the common one timed in
one go. In the common iteration every request verifies all it drafted and no prompt chunk rides
along, so each pass runs over the running batch's uniform lengths and only its seconds are needed
(the run keeps no pass rows). What that costs to work out for one design steps and batch size is
kept once (`IterationTiming`, built by `Engine.timing_at`): each pass's PassTimer
(costs/pass_timer.py), the pass-time column it counts in, whether it hides host time, the host
seconds, and whether the iteration runs eagerly. `run` gives what Engine.decode's general path
gives (record_passes and iteration_cost), the same floats summed in the same order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from mtpsim.costs.iteration import hiding_window
from mtpsim.costs.pass_timer import PassTimer
from mtpsim.designs import DesignShape, iteration_passes
from mtpsim.results import PASS_COLUMN, PASS_TIME_COLUMNS

MEMO_KEPT = 4096  # an IterationTiming's remembered results (cleared past this)


@dataclass(frozen=True)
class DecodeIteration:
    """What a decode iteration at some steps runs, worked out once per steps (`Engine.iteration_at`):
    the design at those steps, its passes in order and their kinds, the same passes with a
    ragged verify (each request checks the drafts a confidence rule kept), and the pass kinds
    that hide host time."""

    design: DesignShape
    passes: list
    ragged_passes: list
    kinds: list[str]
    window: tuple[str, ...]

    @classmethod
    def of(cls, design: DesignShape, host, overlap: bool) -> DecodeIteration:
        """`design`'s iteration under the engine's host model (`host`, costs/deployment.py)."""
        passes = iteration_passes(design)
        ragged = [ragged_verify(shape) if shape.kind == "verify" else shape for shape in passes]
        return cls(design, passes, ragged, [p.kind for p in passes], hiding_window(design, host, overlap))


@lru_cache(maxsize=64)
def ragged_verify(shape):
    """A verify whose requests each check their own kept drafts (PassShape.ragged)."""
    return replace(shape, ragged=True)


class IterationTiming:
    """A decode iteration of `it` (a DecodeIteration) over n requests, when every pass has a
    PassTimer (`of`)."""

    __slots__ = ("timers", "columns", "hides", "host_s", "eager", "memo")

    def __init__(self, timers: list, it, host_s: float, eager: bool):
        # (timer, its tokens per request, its KV offset, whether its cores are the pass before's: priced once)
        self.timers = [(timer, shape.tokens_per_request, timer.offset, i > 0 and timer.shares_cores(timers[i - 1]))
                       for i, (timer, shape) in enumerate(zip(timers, it.passes))]
        self.columns = [PASS_COLUMN[kind] for kind in it.kinds]
        self.hides = [kind in it.window for kind in it.kinds]
        self.host_s, self.eager = host_s, eager
        # run's result by the batch's (KV sum, longest KV), where every pass's seconds read the
        # lengths' sums alone: with the timing's n requests and each pass's q and offset fixed,
        # those two give every BatchLens field a pass reads. Only for plain decoding, whose batches
        # recur (each request one token an iteration); a speculative batch's sums, drawn, rarely
        # do, and a memo of misses slowed the nextn run ~6%. None: no memo.
        self.memo = {} if it.design.steps == 0 and all(timer.by_sums for timer in timers) else None

    @classmethod
    def of(cls, engine, it, n: int) -> IterationTiming | None:
        """The timing of `it` over n requests, or None where a pass is priced whole (PassTimer
        does not apply to it, or the run keeps its pass rows, which need each PassCost)."""
        pricer = engine.pricer
        if engine.records.keep_passes or not all(PassTimer.applies(pricer, shape) for shape in it.passes):
            return None
        eager = not pricer.uses_graphs(it.passes[0], pricer.group_batch(n))
        return cls([PassTimer(pricer, shape, n) for shape in it.passes], it, engine.host_s(it.design.design, n), eager)

    def run(self, batch) -> tuple[dict, list[float], float]:
        """(seconds per pass-time column, each pass's seconds, the host seconds the overlap leaves
        exposed) of an iteration over `batch` (a RunningBatch of the timing's n requests); a
        remembered result is shared: its callers only read it."""
        memo = self.memo
        if memo is not None:
            key = (batch.kv_sum, batch.kv_max)
            found = memo.get(key)
            if found is None:
                if len(memo) >= MEMO_KEPT:
                    memo.clear()
                found = memo[key] = self._run(batch)
            return found
        return self._run(batch)

    def _run(self, batch) -> tuple[dict, list[float], float]:
        durations, cores, lens = [], None, batch.lens
        for timer, q, offset, shared in self.timers:
            whole = lens(q).shifted(offset) if offset else lens(q)
            if not shared:
                cores = timer.core_times(whole)
            durations.append(timer.total(whole, cores))
        times, hidden = dict.fromkeys(PASS_TIME_COLUMNS, 0.0), 0.0
        for column, hides, seconds in zip(self.columns, self.hides, durations):
            times[column] += seconds
            if hides:
                hidden += seconds
        return times, durations, max(0.0, self.host_s - hidden)
