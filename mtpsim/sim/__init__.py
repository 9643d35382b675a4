"""The event simulator: `simulate(scenario) -> Results`."""
from __future__ import annotations

import itertools
import sys
import time

import numpy as np
import simpy

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.budget_advice import batch_wait_idle
from mtpsim.costs import build_pricer
from mtpsim.costs.host import graph_label
from mtpsim.designs import DesignShape
from mtpsim.errors import ScenarioError, short
from mtpsim.memory import check_fits, memory_budget, pool_rule, prefill_chunk_tokens
from mtpsim.results import Records, Results, limits_row, to_results
from mtpsim.sim.arrivals import Arrivals
from mtpsim.sim.caching import cache_block_tokens, cache_counters, replica_cache
from mtpsim.sim.engine import Engine, Replica
from mtpsim.sim.mixed import BatchWaitRule, MixedRule
from mtpsim.sim.prefix_cache import prompt_blocks
from mtpsim.sim.progress import progress_bar
from mtpsim.sim.scheduler import Router, Scheduler
from mtpsim.sim.workload import Request

PROGRESS_MIN_REQUESTS = 10_000  # runs this long show a progress bar when asked to


def simulate(scenario, *, keep_passes: bool = False, max_iteration_rows: int = 10_000,
             max_request_rows: int = 100_000, pricer=None, progress: bool = False, progress_line: int = 0) -> Results:
    """Run one scenario point: build costs and acceptance, start the processes, run, collect.
    Rows past the caps are not kept (the summary still counts them); `progress` shows finished
    requests on stderr for runs of PROGRESS_MIN_REQUESTS or more, on the terminal's
    `progress_line`-th bar line (runs side by side each keep a line). A scenario with
    `disaggregation` runs as its prefill and decode pools (sim/disagg.py)."""
    if scenario.disaggregation is not None:
        from mtpsim.sim.disagg import simulate_disaggregated
        return simulate_disaggregated(scenario, identity=identity, request_factory=_request_factory,
                                      keep_passes=keep_passes, max_iteration_rows=max_iteration_rows,
                                      max_request_rows=max_request_rows)
    wall = time.perf_counter()
    s, design = scenario, DesignShape.of(scenario.speculative)
    pricer = pricer or build_pricer(s)
    budget = memory_budget(pricer, design, pool_rule(s))
    profile = AcceptanceProfile.from_section(s.acceptance, design.steps, s.source, design.topk, design.draft_tokens)
    env, records = simpy.Environment(), Records(max_iteration_rows, keep_passes, max_request_rows)
    bar = progress_bar(s.workload.num_requests, True if not progress or s.workload.num_requests < PROGRESS_MIN_REQUESTS
                       else None, desc=f"{s.name} ({design.design})", unit="req", file=sys.stderr, mininterval=1.0,
                       position=progress_line)
    engine = Engine(env, pricer, design, profile, records, np.random.default_rng([s.seed, 1]),
                    s.engine.overlap_schedule, prefill_chunk_tokens(s), policy=s.speculative.policy,
                    on_finished=bar.update, mixed=mixed_rule(s, design))
    cap = s.specs.engine.max_running(design.design, s.engine.max_running_requests, s.specs.hardware,
                                     budget.max_kv_tokens, s.specs.model.max_context)
    block = cache_block_tokens(s, budget)
    replicas = [Replica(i, Scheduler(cap, budget.replica_kv_budget_bytes, budget.request_bytes,
                                     *replica_cache(s, budget, block)))
                for i in range(s.parallel.dp)]
    arrivals = Arrivals(env, Router([r.scheduler for r in replicas], s.specs.engine.routing(s.engine.dp_routing), block),
                        replicas,
                        _request_factory(env, profile, design, np.random.default_rng([s.seed, 2]), s.workload, block,
                                         np.random.default_rng([s.seed, 3])))
    num_requests = _start_arrivals(env, arrivals, s, budget)
    bar.total = num_requests
    for rep in replicas:
        env.process(engine.serve(rep))
    env.run()
    bar.close()
    if records.stats.n != num_requests:
        raise RuntimeError(f"{num_requests - records.stats.n} requests never finished")  # a simulator bug
    limits = limits_row(records, cap, sum(r.scheduler.num_capped for r in replicas),
                        sum(r.scheduler.num_kv_full for r in replicas),
                        graph_label(s),
                        engine.mixed.budget_tokens if engine.mixed is not None else None)
    if block:
        limits.update(cache_counters([r.scheduler.cache for r in replicas]))
    return to_results(records, identity(s), budget.max_kv_tokens, time.perf_counter() - wall, limits)


def mixed_rule(s, design: DesignShape) -> MixedRule | None:
    """How the scenario's engine mixes prompt chunks into decode iterations of `design` (its
    token budget: the prefill chunk, and any batch waiting: `batch_waits`), or None where it does
    not (engines.EngineSpec.mixes)."""
    engine = s.specs.engine
    if not engine.mixes(design.design, s.engine.mixed_batches):
        return None
    budget, wait = prefill_chunk_tokens(s), s.engine.batch_wait
    waits = wait is not None and batch_wait_idle(s) is None
    return MixedRule(budget, engine.mixed_batches.split_prompts,
                     BatchWaitRule(wait.timeout_iters, wait.max_tokens_ratio * budget) if waits else None)


def identity(s) -> dict:
    """Columns that name a run point in the summary. The load is a concurrency (closed, batch)
    or an arrival rate (poisson, trace), never both: the other is NaN."""
    d = DesignShape.of(s.speculative)
    return {"name": s.name, "design": d.design, "steps": d.steps,
            "topk": d.topk, "draft_tokens": d.draft_tokens, **load_columns(s.workload), "dp": s.parallel.dp,
            **({"policy": policy_text(s.speculative.policy)} if s.speculative.policy else {}),
            **{k: point_text(v) for k, v in s.point.items()}}


def checked_simulate(scenario, *, keep_passes: bool = False, max_iteration_rows: int = 10_000,
                     max_request_rows: int = 100_000, progress: bool = False, progress_line: int = 0) -> Results:
    """`mtpsim.simulate`: `simulate` (see there) behind the API's checks. A point that is not one
    mtpsim.load validated (another type, a Scenario built without validation, or changed after
    it: resolve.check_resolved) and options of the wrong type are ScenarioErrors, not an
    AttributeError from deep inside or a silently wrong result."""
    from mtpsim.resolve import check_resolved
    check_resolved(scenario)
    for key, value, kind in (("keep_passes", keep_passes, bool), ("progress", progress, bool),
                             ("max_iteration_rows", max_iteration_rows, int), ("max_request_rows", max_request_rows, int),
                             ("progress_line", progress_line, int)):
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 0)):
            raise ScenarioError("mtpsim.simulate", key, f"is {short(value, 40)}: "
                                f"{'True or False' if kind is bool else 'a whole number, 0 or more'}")
    return simulate(scenario, keep_passes=keep_passes, max_iteration_rows=max_iteration_rows,
                    max_request_rows=max_request_rows, progress=progress, progress_line=progress_line)


def checked_disaggregated(s, prefill: dict, decode: dict, link: str = "auto", gpus: int | None = None):
    """`mtpsim.disaggregated`: resolve.disaggregated (see there), and the pools' KV pools checked as
    `mtpsim run` checks a file's before it runs (preflight.check_kv_pool). A pool whose weights leave
    no room is the call's error, naming its argument; `simulate` met it later, blaming the scenario
    file for a disaggregation section it does not hold."""
    from mtpsim.resolve import disaggregated, pools_blamed_on_call
    from mtpsim.sim.preflight import check_kv_pool
    point = disaggregated(s, prefill, decode, link, gpus)
    with pools_blamed_on_call():
        check_kv_pool(point)
    return point


def load_columns(w) -> dict:
    """concurrency (a batch load's: the requests it sends at once), rate_per_s (a rate schedule's
    mean over its cycle; a trace's requests over its span) and num_requests; a trace adds what
    its selection skipped and capped."""
    nan = float("nan")
    if w.arrival == "closed":
        return {"concurrency": w.concurrency, "rate_per_s": nan, "num_requests": w.num_requests}
    if w.arrival == "batch":  # every request at t=0: the batch is num_requests (concurrency is not read)
        return {"concurrency": w.num_requests, "rate_per_s": nan, "num_requests": w.num_requests}
    if w.arrival == "poisson":
        rate = w.rate_per_s
        if w.rate_schedule:
            ends = [p.until_s for p in w.rate_schedule]
            rate = sum(p.rate_per_s * (end - start) for p, start, end in zip(w.rate_schedule, [0.0, *ends], ends)) / ends[-1]
        return {"concurrency": nan, "rate_per_s": rate, "num_requests": w.num_requests}
    from mtpsim.tracefiles import scan  # on first use: not on `mtpsim run`'s path without a trace
    stats = scan(w.trace)
    return {"concurrency": nan, "rate_per_s": stats.rate_per_s, "num_requests": stats.num_requests,
            "trace_format": stats.format, "trace_skipped": stats.num_skipped,
            "trace_capped_inputs": stats.num_capped_inputs, "trace_capped_outputs": stats.num_capped_outputs}


def policy_text(policy) -> str:
    """`1:3 16:2 64:0`: an adaptive policy's table, batch:steps, in a summary cell."""
    return _table_text(policy.steps_by_batch)


def _table_text(steps_by_batch: dict) -> str:
    return " ".join(f"{b}:{steps_by_batch[b]}" for b in sorted(steps_by_batch))


def point_text(value):
    """A swept value as a summary cell, table column and legend read it: numbers and text as
    they are, a section as `key=value ...` (`attention=swa ffn=dense`), a list comma-joined, a
    policy as its batch:steps table (`1:3 128:2`)."""
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, dict):
        if set(value) == {"steps_by_batch"} and isinstance(value["steps_by_batch"], dict):
            return _table_text(value["steps_by_batch"])
        return " ".join(f"{k}={point_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(str(point_text(v)) for v in value)
    return str(value)


def _request_factory(env, profile: AcceptanceProfile, design: DesignShape, rng, workload=None, block: int = 0,
                     prefix_rng=None):
    """new_request(input_len, output_len, hash_ids): a Request with its acceptance levels and,
    under a prefix cache of `block`-token blocks, its prompt's block keys (a shared system
    prompt drawn for workload.shared_prefix's fraction of requests, from `prefix_rng`)."""
    ids = itertools.count()
    shared = workload.shared_prefix if workload is not None else None

    def new_request(input_len: int, output_len: int, hash_ids=None) -> Request:
        levels = profile.request_levels(rng, 1, design.steps)[0]
        r = Request(next(ids), env.now, int(input_len), int(output_len), levels=levels)
        if block:
            group = None
            if shared is not None and prefix_rng.random() < shared.fraction:
                group = int(prefix_rng.integers(shared.groups))
            r.blocks = prompt_blocks(r.request_id, r.input_len, block, group, shared.tokens if shared else 0, hash_ids)
        return r
    return new_request


def _start_arrivals(env, arrivals: Arrivals, s, budget) -> int:
    """Start the arrival process(es); returns how many requests will arrive."""
    count, _, longest = arrivals.begin(s.workload, s.seed)
    check_fits(s, budget, longest)
    return count


__all__ = ["simulate", "Results"]
