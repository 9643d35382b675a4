"""One search point in a worker process: its summary row, priced by the process's Pricer for its layout.

The passes a Pricer prices are memoised by shape and batch (costs/passes.py), so keeping one Pricer
per layout in each worker lets the points of that layout (designs, steps and loads) reuse the
passes the points before them priced, rather than pricing them again.
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
    return json.dumps([s.specs.model_dump(mode="json"), p.model_dump(mode="json"), c.moe_skew, e.cuda_graphs,
                       e.max_graph_batch, heads, e.two_batch_overlap, e.eplb, c.ep_imbalance], sort_keys=True, default=str)


def simulate_point(s) -> dict:
    """One point's summary row, priced by this process's Pricer for its layout."""
    key = pricer_key(s)
    pricer = _PRICERS.get(key)
    if pricer is None:
        if len(_PRICERS) >= MAX_PRICERS:
            _PRICERS.pop(next(iter(_PRICERS)))
        pricer = _PRICERS[key] = build_pricer(s)
    row = {**simulate(s, pricer=pricer).summary.iloc[0].to_dict(), **memory_row(s, pricer)}
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def memory_row(s, pricer) -> dict:
    """Per GPU: weights and KV pool (GB), and the headroom: the share of the pool left at the
    run's largest decode batch with every request at its full length (the peak's upper bound)."""
    design = DesignShape.of(s.speculative)
    budget = memory_budget(pricer, design, pool_rule(s))
    return {"weights_gb_per_gpu": (budget.target_weight_bytes + budget.draft_weight_bytes) / 1e9,
            "kv_pool_gb_per_gpu": budget.kv_budget_bytes / 1e9, "request_kv_bytes":
            budget.request_bytes(mean_length(s.workload.input_len) + mean_length(s.workload.output_len))}
