"""The shape of a search point's row (worker.simulate_point), as the cache checks a stored one
before using it (execute.Cache.get): the keys a fresh row has, each value of its type, numbers
finite and within the range the column's meaning fixes. A stored row of any other shape is a
miss (the point runs again), never a wrong frontier row or a traceback.

The keys: every row has REQUIRED's; a disaggregated point's adds DISAGGREGATED's; a run with
prefix caching adds PREFIX's (all three or none). A column added to the simulator's summary row
must be added here, or every cached row of it misses (tests/test_search_bad_input.py runs a
search twice and checks the second run is all cached).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Col:
    """A column's type ("str", "int": an int, not a bool, or "num": an int or a float), the
    closed range of a number, and whether it may be null (a NaN the worker wrote as None)."""
    kind: str
    low: float | None = None
    high: float | None = None
    null: bool = False

    def problem(self, value) -> str | None:
        if value is None:
            return None if self.null else "is null"
        if self.kind == "str":
            return None if isinstance(value, str) else f"is not text (got {type(value).__name__})"
        if isinstance(value, bool) or not isinstance(value, int if self.kind == "int" else (int, float)):
            return f"is not {'a whole number' if self.kind == 'int' else 'a number'} (got {type(value).__name__})"
        if not math.isfinite(value):
            return f"is not finite ({value})"
        if self.low is not None and value < self.low:
            return f"is under {self.low} ({value})"
        if self.high is not None and value > self.high:
            return f"is over {self.high} ({value})"
        return None


TEXT = Col("str")
COUNT, POSITIVE = Col("int", 0), Col("int", 1)
AMOUNT, MAYBE = Col("num", 0), Col("num", 0, null=True)  # throughputs, times, sizes: never negative
SHARE = Col("num", 0, 1)

REQUIRED: dict[str, Col] = {
    # identity (sim.identity): what the point is; the load is a concurrency or a rate, never both
    "name": TEXT, "design": TEXT, "steps": COUNT, "topk": POSITIVE, "draft_tokens": POSITIVE,
    "concurrency": Col("int", 1, null=True), "rate_per_s": Col("num", 0, null=True), "num_requests": POSITIVE,
    "dp": POSITIVE, "layout": TEXT,
    # throughput and latency (summary_columns)
    "tps": AMOUNT, "per_user_tps": MAYBE, "ttft_p50_s": MAYBE, "ttft_p99_s": MAYBE, "tpot_p50_s": MAYBE,
    "tpot_p99_s": MAYBE, "e2e_mean_s": MAYBE, "accept_length": MAYBE, "total_tps": AMOUNT,
    "request_rate_per_s": AMOUNT, "ttft_mean_s": MAYBE, "tpot_mean_s": MAYBE, "e2e_p50_s": MAYBE, "e2e_p99_s": MAYBE,
    "itl_mean_s": MAYBE, "itl_p50_s": MAYBE, "itl_p99_s": MAYBE, "interactivity": MAYBE, "mean_in_flight": AMOUNT,
    "itl_token_mean_s": MAYBE, "itl_token_p50_s": MAYBE, "itl_token_p99_s": MAYBE,
    # shares of busy time (results.time_shares)
    "draft_share": SHARE, "verify_share": SHARE, "extend_share": SHARE, "prefill_share": SHARE, "host_share": SHARE,
    # counts (results.to_results) and what bounded the batch (results.limits_row)
    "max_kv_tokens": COUNT, "requests_kept": COUNT, "requests_total": COUNT, "iterations_kept": COUNT,
    "iterations_total": COUNT, "decode_iterations": COUNT, "verify_width": MAYBE, "max_running": POSITIVE,
    "capped_iterations": COUNT, "kv_full_iterations": COUNT, "mean_running": MAYBE, "max_batch": COUNT,
    "eager_share": SHARE, "bound_by": TEXT, "batch_wait_iterations": COUNT, "sim_wall_s": AMOUNT,
    # memory (worker.memory_row) and steady-state TTFT (worker.steady_ttft)
    "weights_gb_per_gpu": AMOUNT, "kv_pool_gb_per_gpu": AMOUNT, "request_kv_bytes": AMOUNT,
    "ttft_all_p50_s": MAYBE, "ttft_all_p99_s": MAYBE, "ttft_steady_requests": COUNT,
}

DISAGGREGATED: dict[str, Col] = {  # sim/disagg.py: the pools and the link, pool_columns
    "pools": TEXT, "link": TEXT, "prefill_utilisation": MAYBE, "prefill_queue_mean_s": MAYBE,
    "prefill_queue_p99_s": MAYBE, "decode_utilisation": MAYBE, "decode_queue_mean_s": MAYBE,
    "decode_queue_p99_s": MAYBE, "transfer_mean_s": MAYBE, "transfer_share_of_ttft": AMOUNT,
    "transfer_bytes_per_gpu_mean": AMOUNT,
}

PREFIX: dict[str, Col] = {  # sim/prefix_cache.py PrefixCache.counters
    "prefix_hit_rate": Col("num", 0, 1, null=True), "prefix_saved_tokens": COUNT, "prefix_evicted_blocks": COUNT,
}


def problem(row, disaggregated: bool) -> str | None:
    """Why `row` is not the shape a fresh row of a point has (disaggregated or not), or None."""
    if not isinstance(row, dict):
        return f"is not a mapping (got {type(row).__name__})"
    expected = {**REQUIRED, **(DISAGGREGATED if disaggregated else {})}
    if PREFIX.keys() & row.keys():
        expected.update(PREFIX)
    missing, extra = expected.keys() - row.keys(), row.keys() - expected.keys()
    if missing:
        return f"lacks {sorted(missing)[0]!r}"
    if extra:
        return f"has an unknown key {str(sorted(map(str, extra))[0])[:60]!r}"
    for key, col in expected.items():
        why = col.problem(row[key])
        if why:
            return f"{key} {why}"
    if (row["concurrency"] is None) == (row["rate_per_s"] is None):
        return "gives both a concurrency and a rate, or neither"
    return None
