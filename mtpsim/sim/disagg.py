"""Disaggregated serving as two pools of the aggregated engine (sim/engine.py), composed:

    arrival -> prefill pool queue -> prefill (target + the design's draft prefill) -> KV over the
    link (a FIFO per prefill replica, and one per receiving decode attention group: Ingress) ->
    decode pool queue -> decode iterations -> finish

The prefill pool's replicas run `Engine.prefill` on what their scheduler admits (holding only
the prompt's KV); a prefilled request's KV then crosses the link (mtpsim/pools.py prices it), its
prefill KV is freed, and it joins a decode replica (streamed layer by layer during the prefill with
`disaggregation.kv_streaming`), whose loop admits it straight into the
running batch and runs `Engine.decode`. The first token reaches the user with the KV, at the
decode pool: TTFT includes the queue, the prefill and the transfer; TPOT is decode alone. A
request of one output token finishes at the prefill pool and moves no KV.

`simulate_disaggregated(scenario)` returns the aggregated run's Results with columns per pool:
utilisation (busy seconds over replicas x makespan), queueing (mean and p99 wait for admission),
and the transfer (mean seconds, its share of TTFT, bytes per GPU).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import simpy

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs import build_pricer
from mtpsim.costs.host import graph_label
from mtpsim.designs import DesignShape
from mtpsim.histogram import LogHistogram
from mtpsim.memory import MemoryBudget, memory_budget, pool_rule, prefill_chunk_tokens
from mtpsim.pools import ROLES, Link, describe, last_layer_bytes, pool_scenario, resolve_link, transfer_bytes
from mtpsim.results import Records, Results, limits_row, to_results
from mtpsim.sim.arrivals import Arrivals
from mtpsim.sim.batch import RunningBatch
from mtpsim.sim.caching import cache_block_tokens, cache_counters, replica_cache
from mtpsim.sim.engine import Engine, Replica
from mtpsim.sim.preflight import check_pools_fit
from mtpsim.sim.scheduler import Router, Scheduler
from mtpsim.sim.workload import Request


@dataclass
class Wait:
    """Seconds requests waited at one place, streamed (flat in the request count)."""

    n: int = 0
    sum_s: float = 0.0
    hist: LogHistogram = field(default_factory=LogHistogram)

    def add(self, seconds: float) -> None:
        self.n, self.sum_s = self.n + 1, self.sum_s + seconds
        self.hist.add(seconds)

    def mean_s(self) -> float:
        return self.sum_s / self.n if self.n else float("nan")


@dataclass
class PoolRecords(Records):
    """Records with the busy seconds of each pool's replicas (prefill replicas are numbered first)."""

    num_prefill_replicas: int = 1
    busy_s: dict = field(default_factory=lambda: dict.fromkeys(ROLES, 0.0))

    def add_iteration(self, replica, index, kind, start_s, duration_s, *rest) -> None:
        self.busy_s["prefill" if replica < self.num_prefill_replicas else "decode"] += duration_s
        super().add_iteration(replica, index, kind, start_s, duration_s, *rest)


@dataclass
class Pool:
    """One pool resolved: its scenario, pricer, per-GPU memory budget and replicas."""

    scenario: object
    pricer: object
    budget: MemoryBudget
    replicas: list[Replica]
    block: int = 0  # tokens per prefix-cache block (0: no cache; only the prefill pool caches prompts)


class Ingress:
    """The decode pool's receiving side: one link per attention group of each decode replica (its
    GPUs take in the KV of the requests that group will hold), each carrying one request's KV at
    a time, so prefill replicas sending to the same decode GPUs share their bandwidth. A request
    is bound for its decode replica when its transfer starts (the least loaded, counting the
    transfers already bound for it, as Router.route ranks them)."""

    def __init__(self, pool: Pool):
        self.pool, self.schedulers = pool, [r.scheduler for r in pool.replicas]
        groups = pool.scenario.parallel.attention_dp
        self.free_s = [[0.0] * groups for _ in pool.replicas]  # when each group's links are free
        self.bound = [0] * len(pool.replicas)  # transfers on their way to each replica

    def bind(self) -> tuple[int, int]:
        """(decode replica, attention group) of the next transfer: its link the earliest free."""
        j = min(range(len(self.schedulers)), key=lambda i: (self.schedulers[i].num_load + self.bound[i], i))
        self.bound[j] += 1
        return j, min(range(len(self.free_s[j])), key=self.free_s[j].__getitem__)

    def deliver(self, r: Request, j: int) -> None:
        """Hand the moved request to decode replica j and wake it."""
        self.bound[j] -= 1
        r.replica = j
        self.schedulers[j].add(r)
        wake(self.pool.replicas[j])


class Handoff:
    """A prefill replica's outgoing KV: `add` (what Engine.prefill calls for the requests whose
    first token came out) moves each over this replica's link and the receiving decode GPUs'
    (Ingress), one request at a time on each, frees its prefill KV once moved, and submits it to
    the decode pool."""

    def __init__(self, env, rep: Replica, link: Link, budget: MemoryBudget, ingress: Ingress, stats: dict,
                 streaming: bool = False):
        self.env, self.rep, self.link, self.budget, self.ingress, self.stats = env, rep, link, budget, ingress, stats
        self.streaming, self.layers = streaming, len(budget.target_kv + budget.draft_kv)
        self.wire_free_s = 0.0  # the link moves one request's KV at a time, in order (FIFO)
        self.pass_start_s = 0.0  # when the prefill pass that ends now began (Engine.prefill adds after each)

    def __len__(self) -> int:  # nothing decodes here
        return 0

    def add(self, requests: list[Request]) -> None:
        start, self.pass_start_s = self.pass_start_s, self.env.now
        for r in requests:
            self.env.process(self.transfer(r, max(start, r.admitted_s)))

    def transfer(self, r: Request, pass_start_s: float):
        prefilled = self.env.now
        self.stats["prefill_queue"].add(r.admitted_s - r.arrival_s)
        j, g = self.ingress.bind()
        free_s = max(self.wire_free_s, self.ingress.free_s[j][g])
        # each sending GPU's shard, or each receiving GPU's where the decode group holds more of it
        nbytes = transfer_bytes(self.budget, r.input_len)
        moved = max(nbytes, transfer_bytes(self.ingress.pool.budget, r.input_len))
        if self.streaming:
            last = last_layer_bytes(self.budget, r.input_len) * moved / nbytes if nbytes else 0.0
            done = self.link.streamed_finish_s(moved, last, self.layers, pass_start_s, prefilled, free_s)
        else:
            done = self.link.finish_s(moved, prefilled, free_s)
        self.wire_free_s = self.ingress.free_s[j][g] = done
        yield self.env.timeout(done - prefilled)
        self.rep.scheduler.retire([r])
        wake(self.rep)
        r.first_token_s = self.env.now  # the first token reaches the user with the KV, at the decode pool
        self.stats["transfer"].add(self.env.now - prefilled)
        self.stats["ttft"].add(self.env.now - r.arrival_s)
        self.stats["transfer_bytes"] += nbytes
        self.ingress.deliver(r, j)


def wake(rep: Replica) -> None:
    if rep.wakeup is not None and not rep.wakeup.triggered:
        rep.wakeup.succeed()


def serve_prefill(engine: Engine, rep: Replica):
    """A prefill replica, forever: prefill what is admitted (rep.batch is its Handoff)."""
    while True:
        admitted = rep.scheduler.admit()
        if admitted:
            yield from engine.prefill(rep, admitted)
        else:
            rep.wakeup = engine.env.event()
            yield rep.wakeup


def serve_decode(engine: Engine, rep: Replica, queue: Wait):
    """A decode replica, forever: admit arrived KV into the running batch, decode."""
    rep.batch = RunningBatch(engine.design.steps, engine.per_request_levels)
    while True:
        admitted = rep.scheduler.admit()
        for r in admitted:
            queue.add(engine.env.now - r.first_token_s)
        rep.batch.add(admitted)
        if rep.scheduler.running:
            yield from engine.decode(rep)
        else:
            rep.wakeup = engine.env.event()
            yield rep.wakeup


def build_pool(s, role: str, design: DesignShape, first_index: int) -> Pool:
    ps = pool_scenario(s, role)
    pricer = build_pricer(ps)
    budget = memory_budget(pricer, design, pool_rule(ps))
    cap = s.specs.engine.max_running(design.design, s.engine.max_running_requests, ps.specs.hardware,
                                     budget.max_kv_tokens, ps.specs.model.max_context)
    held = (lambda r: r.input_len) if role == "prefill" else (lambda r: r.input_len + r.output_len)
    # the prefill pool caches prompt prefixes as an aggregated replica does (sim/caching.py): a hit
    # skips its prefill there; the whole prompt's KV still crosses the link to the decode pool
    block = cache_block_tokens(ps, budget) if role == "prefill" else 0
    replicas = [Replica(first_index + i, Scheduler(cap, budget.replica_kv_budget_bytes, budget.request_bytes,
                                                        *replica_cache(ps, budget, block), held_tokens=held))
                for i in range(ps.parallel.dp)]
    return Pool(ps, pricer, budget, replicas, block)


def simulate_disaggregated(scenario, *, identity, request_factory, keep_passes: bool = False,
                           max_iteration_rows: int = 10_000, max_request_rows: int = 100_000) -> Results:
    """Run one disaggregated scenario point (see the module docstring); `simulate` calls it with
    its own `identity` (the summary's naming columns) and `request_factory` (new requests and
    their acceptance levels), so both paths name and draw requests alike."""
    wall = time.perf_counter()
    s, design = scenario, DesignShape.of(scenario.speculative)
    prefill = build_pool(s, "prefill", design, 0)
    decode = build_pool(s, "decode", design, len(prefill.replicas))
    link = resolve_link(s, s.source)
    profile = AcceptanceProfile.from_section(s.acceptance, design.steps, s.source, design.topk, design.draft_tokens)
    env = simpy.Environment()
    records = PoolRecords(max_iteration_rows, keep_passes, max_request_rows, num_prefill_replicas=len(prefill.replicas))
    stats = {"prefill_queue": Wait(), "decode_queue": Wait(), "transfer": Wait(), "ttft": Wait(), "transfer_bytes": 0.0}
    chunk = prefill_chunk_tokens(s)  # the engine default on this GPU unless the scenario sets it
    # the decode engine draws acceptance from the stream an aggregated run's engine does
    p_engine = Engine(env, prefill.pricer, design, profile, records, np.random.default_rng([s.seed, 3]),
                      s.engine.overlap_schedule, chunk)
    d_engine = Engine(env, decode.pricer, design, profile, records, np.random.default_rng([s.seed, 1]),
                      s.engine.overlap_schedule, chunk, policy=s.speculative.policy)
    to_decode = Ingress(decode)
    for rep in prefill.replicas:
        rep.batch = Handoff(env, rep, link, prefill.budget, to_decode, stats, s.disaggregation.kv_streaming)
        env.process(serve_prefill(p_engine, rep))
    for rep in decode.replicas:
        env.process(serve_decode(d_engine, rep, stats["decode_queue"]))
    # arrivals reach the prefill replicas by the engine's routing (the prefix caches are there);
    # the decode pool takes each from the link to its least loaded replica
    rule = s.specs.engine.routing(s.engine.dp_routing)
    arrivals = Arrivals(env, Router([r.scheduler for r in prefill.replicas], rule, prefill.block), prefill.replicas,
                        request_factory(env, profile, design, np.random.default_rng([s.seed, 2]), s.workload,
                                        prefill.block, np.random.default_rng([s.seed, 3])))
    num_requests = start_arrivals(env, arrivals, s, prefill.budget, decode.budget)
    env.run()
    if records.stats.n != num_requests:
        raise RuntimeError(f"{num_requests - records.stats.n} requests never finished")  # a simulator bug
    cap = decode.replicas[0].scheduler.max_running
    limits = limits_row(records, cap, sum(r.scheduler.num_capped for r in decode.replicas),
                        sum(r.scheduler.num_kv_full for r in decode.replicas),
                        graph_label(pool_scenario(s, "decode")))
    results = to_results(records, {**identity(s), "pools": describe(s), "link": link.kind},
                         decode.budget.max_kv_tokens, time.perf_counter() - wall, limits)
    results.row.update(pool_columns(records, stats, prefill, decode))
    if prefill.block:  # the prefill pool's prefix caches
        results.row.update(cache_counters([r.scheduler.cache for r in prefill.replicas]))
    return results


def pool_columns(records: PoolRecords, stats: dict, prefill: Pool, decode: Pool) -> dict:
    """Per pool: utilisation and queueing; the transfer's mean, share of TTFT and bytes per GPU."""
    st = records.stats
    makespan = st.last_finish_s - st.first_arrival_s
    out = {}
    for role, pool in (("prefill", prefill), ("decode", decode)):
        busy = records.busy_s[role]
        out[f"{role}_utilisation"] = busy / (len(pool.replicas) * makespan) if makespan > 0 else float("nan")
        wait = stats[f"{role}_queue"]
        out[f"{role}_queue_mean_s"], out[f"{role}_queue_p99_s"] = wait.mean_s(), wait.hist.quantile(0.99)
    moved, ttft = stats["transfer"], stats["ttft"]
    out["transfer_mean_s"] = moved.mean_s()
    out["transfer_share_of_ttft"] = moved.sum_s / ttft.sum_s if ttft.sum_s > 0 else 0.0
    out["transfer_bytes_per_gpu_mean"] = stats["transfer_bytes"] / moved.n if moved.n else 0.0
    return out


def start_arrivals(env, arrivals: Arrivals, s, prefill: MemoryBudget, decode: MemoryBudget) -> int:
    """Start the arrivals as an aggregated run does (the same draws); a prompt the prefill pool's
    KV pool cannot hold, or a request the decode pool's cannot, is a ScenarioError naming the pool."""
    count, longest_prompt, longest = arrivals.begin(s.workload, s.seed)
    check_pools_fit(s, {"prefill": prefill, "decode": decode}, longest_prompt, longest)
    return count


__all__ = ["simulate_disaggregated", "Handoff", "PoolRecords"]
