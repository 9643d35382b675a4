"""Warnings about a scenario's load (advice.py runs them with the rest): workload keys its
arrival never reads, trace settings its file makes moot, and length distributions whose bounds
reshape them. Each check takes the scenario and returns (dotted key, reason) pairs."""
from __future__ import annotations

import math
from dataclasses import dataclass

from mtpsim.schema import LengthDist, Scenario, max_length


@dataclass(frozen=True)
class LoadBounds:
    """What the requests a run simulates reach: how many, the longest prompt, the longest output;
    from a trace's selection or from the workload's own keys."""

    requests: int
    longest_input: int
    longest_output: int
    from_trace: bool

    @property
    def requests_by(self) -> str:
        """Where the request count comes from, as a warning says it."""
        return "the trace's requests" if self.from_trace else "workload.num_requests"

    def key(self, length: str) -> str:
        """The key a warning about the prompts (`input_len`) or the outputs (`output_len`) names."""
        return "workload.trace" if self.from_trace else f"workload.{length}"


def load_bounds(s: Scenario) -> LoadBounds:
    """The bounds of the requests `run` simulates: a trace's selection (scanned once already,
    checks.py), which the workload's num_requests, input_len and output_len (64, 1024 and 256
    unless given) do not set; else those keys."""
    w = s.workload
    if w.arrival == "trace":
        from mtpsim.tracefiles import scan
        stats = scan(w.trace)
        return LoadBounds(stats.num_requests, stats.max_input_len, stats.max_output_len, True)
    return LoadBounds(w.num_requests, max_length(w.input_len), max_length(w.output_len), False)


def reshaped_lengths(s: Scenario) -> list[tuple[str, str]]:
    """A length distribution whose mean its bounds cut off, or whose bounds reshape it so that the
    lengths drawn average far from its mean (clipped_mean)."""
    found = []
    for key in ("input_len", "output_len"):
        length = getattr(s.workload, key)
        if not isinstance(length, LengthDist) or length.mean is None:
            continue
        if not length.min <= length.mean <= length.max:
            found.append((f"workload.{key}.mean", f"{length.mean:g} lies outside min {length.min}..max {length.max}: "
                          "lengths are clipped to those bounds, so their mean is not this one"))
        elif length.std and abs(clipped_mean(length) - length.mean) > 0.2 * length.mean:
            found.append((f"workload.{key}.std", f"{length.std:g} around mean {length.mean:g}, clipped to "
                          f"{length.min}..{length.max}: the lengths drawn average about {clipped_mean(length):,.0f}, "
                          f"not {length.mean:g} (the bounds cut off much of the {length.dist} distribution)"))
    return found


# workload keys one arrival alone reads (sim/__init__.py); concurrency is not among them, since
# `cost` and `verify` take it as their batch under any arrival
READ_BY = {"rate_per_s": ("poisson",), "trace": ("trace",),
           # a trace brings its own requests and lengths (workload.trace.max_requests caps them; `cost`
           # takes the trace's mean prompt)
           **dict.fromkeys(("num_requests", "input_len", "output_len"), ("closed", "poisson", "batch"))}


def clipped_mean(length: LengthDist) -> float:
    """The mean of a normal or lognormal length (its own mean and std, as sim/workload.py
    sample_lengths draws it) clipped to [min, max], in closed form (rounding aside)."""
    def cdf(z: float) -> float:
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))
    lo, hi, mean, std = length.min, length.max, length.mean, length.std
    if length.dist == "normal":
        a, b = (lo - mean) / std, (hi - mean) / std
        pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
        return lo * cdf(a) + hi * (1 - cdf(b)) + mean * (cdf(b) - cdf(a)) - std * (pdf(b) - pdf(a))
    m, s = length.lognormal()
    if s == 0:  # every length is the mean
        return min(max(mean, lo), hi)
    a, b = (math.log(lo) - m) / s, (math.log(hi) - m) / s
    return lo * cdf(a) + hi * (1 - cdf(b)) + mean * (cdf(b - s) - cdf(a - s))


def unused_by_arrival(s: Scenario) -> list[tuple[str, str]]:
    """Workload keys the scenario gives that its arrival does not read (rate_schedule is an error:
    checks.py)."""
    w = s.workload
    return [(f"workload.{key}", f"arrival {w.arrival} does not read it: it is ignored")
            for key, readers in READ_BY.items() if key in w.model_fields_set and w.arrival not in readers]


def concurrency_unread(s: Scenario) -> list[tuple[str, str]]:
    """A concurrency given to a Poisson or trace load, whose arrivals `run` takes from the rate or
    the file (READ_BY leaves concurrency out: cost and verify take it as their batch): a sweep
    over it ran the same points, told apart by nothing in the table."""
    w = s.workload
    if w.arrival not in ("poisson", "trace") or "concurrency" not in w.model_fields_set:
        return []
    how = "draws its requests at rate_per_s" if w.arrival == "poisson" else "replays the trace's arrival times"
    return [("workload.concurrency", f"arrival {w.arrival} {how}: `run` does not read concurrency (cost and verify "
             "take it as their batch)")]


def idle_replicas(s: Scenario) -> list[tuple[str, str]]:
    """Replicas a load cannot all reach: with fewer users at once (a closed loop) or fewer
    requests in all (any other arrival, a trace's rows) than a pool's replicas, some never serve
    one, and the per-GPU figures count their GPUs. Of `parallel.dp`, or of each disaggregated pool.
    Under a sweep of the load or the layout (advice.DEPENDS) it is said only where every point
    leaves the same replicas idle: a ladder's low rungs are not a mistake."""
    w, d = s.workload, s.disaggregation
    if w.arrival == "closed":
        busy, how = min(w.concurrency, w.num_requests), "at once"
    elif w.arrival == "trace":
        from mtpsim.tracefiles import scan
        busy, how = scan(w.trace).num_requests, "in all"
    else:
        busy, how = w.num_requests, "in all"
    pools = [("parallel.dp", s.parallel.dp)] if d is None else \
        [("disaggregation.prefill.replicas", d.prefill.replicas), ("disaggregation.decode.replicas", d.decode.replicas)]
    return [(key, f"{n} replicas for at most {busy} request{'s' * (busy != 1)} {how}: {n - busy} replicas never "
             "serve one, and the per-GPU figures count their GPUs") for key, n in pools if busy < n]


def trace_settings_unread(s: Scenario) -> list[tuple[str, str]]:
    """A trace's settings its file makes moot: block_size sizes hash_ids blocks a file without
    them never has; a shared prefix is not laid over prompts whose hash_ids say what they share
    (sim/prefix_cache.py prompt_blocks takes the ids as given), and their blocks are the trace's
    block_size, not the engine's prefix_cache.block_tokens."""
    w = s.workload
    if w.arrival != "trace":
        return []
    from mtpsim.tracefiles import scan
    blocks, found = scan(w.trace).has_blocks, []
    if "block_size" in w.trace.model_fields_set and not blocks:
        found.append(("workload.trace.block_size", "sizes a trace's hash_ids blocks, and this trace has none: it is "
                      "not read"))
    if w.shared_prefix is not None and blocks:
        found.append(("workload.shared_prefix", "the trace's hash_ids say which prompts share blocks: a shared "
                      "prefix is not laid over them"))
    cache = s.engine.prefix_cache
    if blocks and cache is not None and "block_tokens" in cache.model_fields_set:  # cache_settings.block_tokens_of
        found.append(("engine.prefix_cache.block_tokens", f"the trace's hash_ids name blocks of "
                      f"workload.trace.block_size ({w.trace.block_size}) tokens, which the cache keeps: this block "
                      "size is not read"))
    return found
