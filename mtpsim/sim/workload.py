"""Workload: request lengths and arrival times, seeded.

`closed` arrivals are driven by completions (the engine's arrival process); batch and poisson
arrivals are known up front as arrays of (arrival_s, input_len, output_len); a trace streams
from its file in chunks (mtpsim/tracefiles).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(slots=True)
class Request:
    """One request and its progress. Times in simulated seconds."""

    request_id: int
    arrival_s: float
    input_len: int
    output_len: int
    replica: int = -1
    admitted_s: float = -1.0
    first_token_s: float = -1.0
    finish_s: float = -1.0
    generated: int = 0          # output tokens so far (the prefill emits the first)
    iterations: int = 0         # decode iterations this request took part in
    accepted: int = 0           # draft tokens accepted over its life
    levels: np.ndarray | None = None   # per-depth acceptance of this request (spread)
    done: object = None         # simpy event, triggered at finish
    blocks: list | None = None  # prefix-cache keys of its prompt's full blocks (prefix_cache.py)
    cached_len: int = 0         # prompt tokens found in the prefix cache (their prefill skipped)

    @property
    def remaining(self) -> int:
        return self.output_len - self.generated


def sample_lengths(rng: np.random.Generator, spec, n: int) -> np.ndarray:
    """`n` lengths from an int (fixed) or a LengthDist, rounded and clipped to [min, max]."""
    if isinstance(spec, int):
        return np.full(n, spec, dtype=np.int64)
    if spec.dist == "uniform":
        values = rng.integers(spec.min, spec.max + 1, size=n)
    elif spec.dist == "normal":
        values = rng.normal(spec.mean, spec.std, size=n)
    else:  # lognormal with the given mean and std of the lengths themselves
        values = rng.lognormal(*spec.lognormal(), size=n)
    return np.clip(np.rint(values), spec.min, spec.max or np.iinfo(np.int64).max).astype(np.int64)


def open_arrivals(workload, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays of arrival_s, input_len and output_len for batch and poisson workloads (arrays,
    not rows: a million requests take 24 MB rather than ~200)."""
    n = workload.num_requests
    inputs, outputs = sample_lengths(rng, workload.input_len, n), sample_lengths(rng, workload.output_len, n)
    if workload.arrival == "batch":
        times = np.zeros(n)
    elif workload.rate_schedule:
        times = scheduled_poisson(rng, workload.rate_schedule, n)
    else:
        times = np.cumsum(rng.exponential(1.0 / workload.rate_per_s, size=n))
    return times, inputs, outputs


LARGE_PHASE = 1e6  # expected arrivals past which a phase is drawn gap by gap (scheduled_poisson)
MAX_BLOCK = 1 << 16  # phases whose arrival counts are drawn in one call (skip_empty_phases)


def scheduled_poisson(rng: np.random.Generator, schedule, n: int) -> np.ndarray:
    """The first `n` arrival times of a Poisson process with a piecewise-constant rate: phase i
    holds rate_i from the previous phase's until_s to its own, and the schedule repeats after
    the last. Per phase of length d, a Poisson(rate * d) count of uniform times: the same
    process as exponential gaps, without redrawing a gap at each phase's end. The cycle that
    brings the n-th arrival is drawn to its end (what follows draws from the same stream).
    Phases that draw no arrival are skipped in blocks (skip_empty_phases) with the random stream
    as drawing them one at a time leaves it: a sparse schedule (8 requests at 8e-6 per cycle)
    took a Python loop over a million phases, ~30 s a run."""
    period, ends = schedule[-1].until_s, np.array([p.until_s for p in schedule])
    starts, rates = np.concatenate([[0.0], ends[:-1]]), np.array([p.rate_per_s for p in schedule])
    phases, drawn, at, block = [], 0, 0, 1  # at: phases walked so far, repeats included
    while drawn < n or at % len(ends):
        size = block if drawn < n else min(block, len(ends) - at % len(ends))  # past n: to the cycle's end
        lo, hi, expected = _phase_windows(at, size, period, starts, ends, rates)
        large = np.flatnonzero(expected > LARGE_PHASE)
        if large.size and large[0] == 0:
            # a phase holding far more arrivals than can be drawn at once (12 req/s for 1e9 s):
            # only its first n - drawn matter, drawn as exponential gaps (the same process)
            times = lo[0] + np.cumsum(rng.exponential(1.0 / rates[at % len(ends)], max(0, n - drawn)))
            at, times = at + 1, times[times < hi[0]]
        else:
            skipped, count = skip_empty_phases(rng, expected[: large[0]] if large.size else expected)
            at += skipped
            if count is None:  # none of the block's phases drew an arrival: try a longer block
                block = min(2 * block, MAX_BLOCK)
                continue
            times = np.sort(rng.uniform(lo[skipped], hi[skipped], count))
            at, block = at + 1, max(1, skipped)  # the next block about as long as this gap
        phases.append(times)
        drawn += len(times)
    return np.concatenate(phases)[:n]


def _phase_windows(at: int, count: int, period: float, starts: np.ndarray, ends: np.ndarray,
                   rates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, expected arrivals) of the `count` phases from phase number `at` on, repeats
    included, computed as one phase at a time would: cycle * period + the phase's own bound."""
    index = np.arange(at, at + count)
    cycle, phase = index // len(ends), index % len(ends)
    lo, hi = cycle * period + starts[phase], cycle * period + ends[phase]
    return lo, hi, rates[phase] * (hi - lo)


def skip_empty_phases(rng: np.random.Generator, expected: np.ndarray) -> tuple[int, int | None]:
    """Draw the arrival counts of phases with these `expected` arrivals up to the first that has
    any: (phases before it, its count), or (all of them, None) when none does. The random stream
    is left as drawing each phase's count alone would leave it: one vectorised Poisson draw per
    phase in order, and where an arrival turns up before the block's end the stream is rewound
    and only the counts up to it drawn again (the same values), so its uniform times follow."""
    state = rng.bit_generator.state if len(expected) > 1 else None
    counts = rng.poisson(expected)
    hits = np.flatnonzero(counts)
    if not hits.size:
        return len(expected), None
    first = int(hits[0])
    if first < len(expected) - 1:
        rng.bit_generator.state = state
        rng.poisson(expected[: first + 1])
    return first, int(counts[first])
