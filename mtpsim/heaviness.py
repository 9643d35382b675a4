"""How long a point is to simulate, by the one rule `mtpsim run`, `recommend` and `search` warn
by before a point that takes minutes (their progress lines come only as points finish, or after
a run's first minute): its requests, and its iterations (decode iterations and prefill passes).

`heavy` weighs a load, `point_size` one point's; `heavy_load` is recommend's and search's warning
over a ladder of loads; run.py words its own (heavy_runs), blamed on the scenario's keys.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from mtpsim.errors import warn
from mtpsim.memory import prefill_chunk_tokens
from mtpsim.schema import Scenario, mean_length

HEAVY_POINT_REQUESTS = 100_000  # a point this long simulates for minutes on one core
HEAVY_POINT_ITERATIONS = 1_000_000  # decode iterations and prefill passes: 50-250 us each on one core,
                                    # a minute or more a point


class Heaviness(NamedTuple):
    """How long a point is to simulate (`heavy`): its share of the limit (1 or more where it takes
    minutes), what it simulates in words, and whether prefill passes are most of its iterations."""

    share: float
    what: str
    prefill_bound: bool


def heavy(requests: int, output_len: float, running: int | None, chunks_per_prompt: float = 0.0) -> Heaviness:
    """How long a point of `requests` requests, `output_len` output tokens each on average and
    `running` of them at a time on each replica (point_size; None: an open load, whose batch the
    simulation finds), is to simulate, e.g. `40,000 requests (about 320,000 decode iterations)`.
    The one rule `run`, `recommend` and `search` warn by: HEAVY_POINT_REQUESTS requests or HEAVY_POINT_ITERATIONS
    iterations: every request's output tokens `running` at a time (the `none` baseline's count;
    speculation makes fewer, dearer ones), plus the prefill passes of prompts `chunks_per_prompt`
    chunks long on average (prefill_chunks): a tiny chunk makes one pass per few prompt tokens."""
    decode = math.ceil(requests * output_len / min(running, requests)) if running else 0
    prefill = math.ceil(requests * chunks_per_prompt)
    share = max(requests / HEAVY_POINT_REQUESTS, (decode + prefill) / HEAVY_POINT_ITERATIONS)
    counted = ([f"about {decode:,} decode iterations"] if decode else []) + \
        ([f"{prefill:,} prefill passes"] if chunks_per_prompt > 1 else [])  # several a prompt: worth saying
    # prefill-bound only where prompts take several passes each (prompts sharing a pass are not what
    # a larger chunk helps); an open load's batch is unknown, so its decode iterations are not
    # counted: there, only where a prompt's passes outnumber its output tokens, each an iteration at most
    return Heaviness(share, f"{requests:,} requests" + (f" ({' and '.join(counted)})" if counted else ""),
                     chunks_per_prompt > 1 and (prefill > decode if running else chunks_per_prompt > output_len))


def point_size(s: Scenario) -> Heaviness:
    """How long one run of point `s` is to simulate (`heavy`): a closed load's users (a batch
    load's requests, all sent at once) decoding together, shared over the replicas; an open load
    (Poisson, or a trace by its selection, read once already: checks.py) at the fewest iterations
    it can take, every replica full; each replica at most the engine's running cap (batch_bound)."""
    w = s.workload
    cap, replicas = batch_bound(s)
    if w.arrival in ("trace", "poisson"):
        if w.arrival == "trace":
            from mtpsim.tracefiles import scan  # on first use: not on `mtpsim run`'s path without a trace
            stats = scan(w.trace)
            requests, output_len, input_len = stats.num_requests, stats.mean_output_len, stats.mean_input_len
        else:
            requests, output_len, input_len = w.num_requests, mean_length(w.output_len), mean_length(w.input_len)
        load = heavy(requests, output_len, None, prefill_chunks(s, input_len))
        # an open load's batch is what the simulation finds; every replica full (the running cap)
        # is the fewest iterations it can take, so a run past the limit even then is said
        fewest = heavy(requests, output_len, cap, prefill_chunks(s, input_len))
        return load if load.share >= fewest.share else \
            Heaviness(fewest.share, fewest.what.replace("about ", "at least "), load.prefill_bound)
    users = {"closed": w.concurrency, "batch": w.num_requests}[w.arrival]  # a batch load sends every request at once
    running = min(math.ceil(users / replicas), cap)
    return heavy(w.num_requests, mean_length(w.output_len), running, prefill_chunks(s, mean_length(w.input_len)))


def batch_bound(s: Scenario) -> tuple[int, int]:
    """(the most requests one replica runs at once in every run of point `s`, its replicas): the
    engine's running cap for its design and for its `none` baseline, the lower (SGLang holds a
    speculative batch to 48), and parallel.dp (the decode pool's replicas where prefill runs
    apart). The cap is the engine's floor where it grows with the
    KV pool (not sized here), so a point's count of iterations is, if anything, high."""
    engine, configured = s.specs.engine, s.engine.max_running_requests
    cap = min(engine.max_running(design, configured, s.specs.hardware) for design in {s.speculative.design, "none"})
    return cap, s.disaggregation.decode.replicas if s.disaggregation is not None else s.parallel.dp


def prefill_chunks(s: Scenario, input_len: float) -> float:
    """Prefill passes a prompt of `input_len` tokens takes on average at the scenario's chunk
    (engine.chunked_prefill_tokens, else the engine's default); under 1, prompts share a pass."""
    return input_len / prefill_chunk_tokens(s)


def heavy_load(points: list[Scenario], origin: tuple[str, str]) -> None:
    """One line up front when one of a load ladder's points takes minutes to simulate
    (point_size): the progress line comes as points finish, so a few such points would otherwise
    run in silence."""
    share, what, _ = max((point_size(s) for s in points), default=Heaviness(0.0, "", False), key=lambda found: found.share)
    if share >= 1:
        warn(*origin, f"a point of this load simulates {what}, which takes minutes per point "
             "(progress is reported as points finish): fewer requests per user or rate would do for a ranking")
