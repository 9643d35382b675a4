"""One search point in a worker process: its summary row, priced by the process's Pricer for its layout.

The passes a Pricer prices are memoised by shape and batch (costs/passes.py), so keeping one Pricer
per layout in each worker lets the points of that layout (designs, steps and loads) reuse the
passes the points before them priced, rather than pricing them again.

TTFT at steady state (`steady_ttft`): a closed loop of C users sends its first C requests at once,
so they queue behind one another's prefills (the cold-start wave), and with a few requests per
user that wave is a large share of the run (a third at the search's 3 per user). sglang
bench_serving counts it too, but InferenceX-style runs send 10 requests per user, so their p50
hardly sees it. The search's ttft_p50_s / ttft_p99_s are over the requests after the first C
(its targets read them); ttft_all_p50_s / ttft_all_p99_s keep every request's, what a
bench_serving run of exactly these requests would print.
"""
from __future__ import annotations

import json

from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.memory import memory_budget, pool_rule
from mtpsim.schema import mean_length
from mtpsim.sim import simulate

MAX_PRICERS = 32  # per worker process; a search over more layouts rebuilds the oldest
_PRICERS: dict[str, object] = {}


def pricer_key(s) -> str:
    """What a Pricer is built from (costs/__init__.py build_pricer): points alike in these share one."""
    p, e, c = s.parallel, s.engine, s.cost
    heads = s.speculative.steps if s.speculative.design == "parallel_heads" else 0
    # the whole cost section: a cost knob added later cannot be left out of the key
    return json.dumps([s.specs.model_dump(mode="json"), p.model_dump(mode="json"), c.model_dump(mode="json"),
                       e.cuda_graphs, e.max_graph_batch, e.graph_padding, heads, e.two_batch_overlap, e.eplb,
                       e.engram_tables], sort_keys=True, default=str)


def pricer_for(s):
    """This process's Pricer for the scenario's layout, built on first use (the oldest dropped past MAX_PRICERS)."""
    key = pricer_key(s)
    pricer = _PRICERS.get(key)
    if pricer is None:
        if len(_PRICERS) >= MAX_PRICERS:
            _PRICERS.pop(next(iter(_PRICERS)))
        pricer = _PRICERS[key] = build_pricer(s)
    return pricer


def simulate_point(s) -> dict:
    """One point's summary row, priced by this process's Pricer for its layout. A disaggregated
    point's pools build their own (sim/disagg.py); its memory columns are the decode pool's."""
    if s.disaggregation is not None:
        from mtpsim.pools import pool_scenario
        result, pool = simulate(s), pool_scenario(s, "decode")
        row = {**result.summary.iloc[0].to_dict(), **memory_row(pool, pricer_for(pool))}
    else:
        pricer = pricer_for(s)
        result = simulate(s, pricer=pricer)
        row = {**result.summary.iloc[0].to_dict(), **memory_row(s, pricer)}
    row.update(steady_ttft(s, result.requests, row))
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def memory_row(s, pricer) -> dict:
    """Per GPU: weights and KV pool (GB), and the headroom: the share of the pool left at the
    run's largest decode batch with every request at its full length (the peak's upper bound)."""
    design = DesignShape.of(s.speculative)
    budget = memory_budget(pricer, design, pool_rule(s))
    return {"weights_gb_per_gpu": (budget.target_weight_bytes + budget.draft_weight_bytes) / 1e9,
            "kv_pool_gb_per_gpu": budget.kv_budget_bytes / 1e9, "request_kv_bytes":
            budget.request_bytes(mean_length(s.workload.input_len) + mean_length(s.workload.output_len))}


def steady_ttft(s, requests, row: dict) -> dict:
    """ttft_p50_s / ttft_p99_s without a closed loop's first wave of `concurrency` requests (module
    docstring), the all-request figures as ttft_all_*, and how many requests the steady ones cover
    (all of them for open loops, or when every request is in the first wave)."""
    out = {"ttft_all_p50_s": row["ttft_p50_s"], "ttft_all_p99_s": row["ttft_p99_s"], "ttft_steady_requests": len(requests)}
    w = s.workload
    if w.arrival != "closed" or len(requests) <= w.concurrency or len(requests) < row.get("requests_total", 0):
        return out  # nothing after the wave, or the rows were not all kept: every request's figures
    after = requests.sort_values(["arrival_s", "request_id"], kind="stable").iloc[w.concurrency:]
    ttft = after.first_token_s - after.arrival_s
    return {**out, "ttft_p50_s": float(ttft.quantile(0.5)), "ttft_p99_s": float(ttft.quantile(0.99)),
            "ttft_steady_requests": len(after)}
