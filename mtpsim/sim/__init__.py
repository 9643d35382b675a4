"""The event simulator: `simulate(scenario) -> Results`."""
from __future__ import annotations

import itertools
import sys
import time

import numpy as np
import simpy
from tqdm import tqdm

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.errors import ScenarioError
from mtpsim.memory import memory_budget, pool_rule
from mtpsim.results import Records, Results, limits_row, to_results
from mtpsim.sim.engine import Arrivals, Engine, Replica
from mtpsim.sim.scheduler import Router, Scheduler
from mtpsim.sim.workload import Request, open_arrivals, sample_lengths

PROGRESS_MIN_REQUESTS = 10_000  # runs this long show a progress bar when asked to


def simulate(scenario, *, keep_passes: bool = False, max_iteration_rows: int = 10_000,
             max_request_rows: int = 100_000, pricer=None, progress: bool = False) -> Results:
    """Run one scenario point: build costs and acceptance, start the processes, run, collect.
    Rows past the caps are not kept (the summary still counts them); `progress` shows finished
    requests on stderr for runs of PROGRESS_MIN_REQUESTS or more."""
    wall = time.perf_counter()
    s, design = scenario, DesignShape.of(scenario.speculative)
    pricer = pricer or build_pricer(s)
    budget = memory_budget(pricer, design, pool_rule(s))
    profile = AcceptanceProfile.from_section(s.acceptance, design.steps, s.source, design.topk, design.draft_tokens)
    env, records = simpy.Environment(), Records(max_iteration_rows, keep_passes, max_request_rows)
    bar = tqdm(total=s.workload.num_requests, desc=s.name, unit="req", file=sys.stderr, mininterval=1.0,
               disable=not progress or s.workload.num_requests < PROGRESS_MIN_REQUESTS)
    engine = Engine(env, pricer, design, profile, records, np.random.default_rng([s.seed, 1]),
                    s.engine.overlap_schedule, s.engine.chunked_prefill_tokens, policy=s.speculative.policy,
                    on_finished=bar.update)
    cap = s.specs.engine.max_running(design.design, s.engine.max_running_requests)
    replicas = [Replica(i, Scheduler(cap, budget.replica_kv_budget_bytes, budget.request_bytes))
                for i in range(s.parallel.dp)]
    arrivals = Arrivals(env, Router([r.scheduler for r in replicas]), replicas,
                        _request_factory(env, profile, design, np.random.default_rng([s.seed, 2])))
    num_requests = _start_arrivals(env, arrivals, s, budget)
    for rep in replicas:
        env.process(engine.serve(rep))
    env.run()
    bar.close()
    if records.stats.n != num_requests:
        raise RuntimeError(f"{num_requests - records.stats.n} requests never finished")  # a simulator bug
    limits = limits_row(records, cap, sum(r.scheduler.num_capped for r in replicas),
                        sum(r.scheduler.num_kv_full for r in replicas),
                        s.engine.max_graph_batch if s.engine.cuda_graphs else None)
    return to_results(records, identity(s), budget.max_kv_tokens, time.perf_counter() - wall, limits)


def identity(s) -> dict:
    """Columns that name a run point in the summary."""
    d = DesignShape.of(s.speculative)
    return {"name": s.name, "design": d.design, "steps": d.steps,
            "topk": d.topk, "draft_tokens": d.draft_tokens, "concurrency": s.workload.concurrency,
            "rate_per_s": s.workload.rate_per_s, "num_requests": s.workload.num_requests, "dp": s.parallel.dp,
            **({"policy": policy_text(s.speculative.policy)} if s.speculative.policy else {}),
            **{k: point_text(v) for k, v in s.point.items()}}


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


def _request_factory(env, profile: AcceptanceProfile, design: DesignShape, rng):
    ids = itertools.count()

    def new_request(input_len: int, output_len: int) -> Request:
        levels = profile.request_levels(rng, 1, design.steps)[0]
        return Request(next(ids), env.now, int(input_len), int(output_len), levels=levels)
    return new_request


def _start_arrivals(env, arrivals: Arrivals, s, budget) -> int:
    """Start the arrival process(es); returns how many requests will arrive."""
    rng, w = np.random.default_rng([s.seed, 0]), s.workload
    if w.arrival == "closed":
        inputs, outputs = sample_lengths(rng, w.input_len, w.num_requests), sample_lengths(rng, w.output_len, w.num_requests)
        lengths = list(zip(inputs.tolist(), outputs.tolist()))  # closed loops hold at most MAX_USERS x this
        for user in range(min(w.concurrency, w.num_requests)):
            env.process(arrivals.closed_user(lengths[user::w.concurrency]))
    else:
        times, inputs, outputs = open_arrivals(w, rng)
        env.process(arrivals.open_loop(times, inputs, outputs))
    longest = int((inputs + outputs).max())
    if budget.request_bytes(longest) > budget.kv_budget_bytes:
        raise ScenarioError(s.source, "workload", f"a request of {longest} tokens needs "
                            f"{budget.request_bytes(longest) / 1e9:.2f} GB of KV per GPU, more than the "
                            f"{budget.kv_budget_bytes / 1e9:.2f} GB the engine's KV pool holds "
                            f"({budget.rule.label} of {budget.capacity_bytes / 1e9:.1f} GB)")
    return len(inputs)


__all__ = ["simulate", "Results"]
