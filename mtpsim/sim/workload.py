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
        sigma2 = np.log1p((spec.std / spec.mean) ** 2)
        values = rng.lognormal(np.log(spec.mean) - sigma2 / 2, np.sqrt(sigma2), size=n)
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


def scheduled_poisson(rng: np.random.Generator, schedule, n: int) -> np.ndarray:
    """The first `n` arrival times of a Poisson process with a piecewise-constant rate: phase i
    holds rate_i from the previous phase's until_s to its own, and the schedule repeats after
    the last. Per phase of length d, a Poisson(rate * d) count of uniform times: the same
    process as exponential gaps, without redrawing a gap at each phase's end."""
    period, starts = schedule[-1].until_s, [0.0] + [p.until_s for p in schedule[:-1]]
    phases, drawn, cycle = [], 0, 0
    while drawn < n:
        for start, phase in zip(starts, schedule):
            lo, hi = cycle * period + start, cycle * period + phase.until_s
            expected = phase.rate_per_s * (hi - lo)
            if expected > LARGE_PHASE:
                # a phase holding far more arrivals than can be drawn at once (12 req/s for 1e9 s):
                # only its first n - drawn matter, drawn as exponential gaps (the same process)
                times = lo + np.cumsum(rng.exponential(1.0 / phase.rate_per_s, n - drawn))
                times = times[times < hi]
            else:
                times = np.sort(rng.uniform(lo, hi, rng.poisson(expected)))
            phases.append(times)
            drawn += len(times)
        cycle += 1
    return np.concatenate(phases)[:n]
