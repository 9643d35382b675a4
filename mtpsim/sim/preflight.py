"""What a command that runs a point checks of its memory before anything runs: that the engine's
KV pool holds what the run will put in it, as the simulation itself checks (sim/__init__.py,
sim/disagg.py), so that the refusal is said with the point's validation (scenario.load's
`refuse`): before the point's warnings, and as --set's where a flag's value is the cause."""
from __future__ import annotations

from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.memory import check_fits, memory_budget, pool_rule
from mtpsim.pools import pool_scenario, transfer_bytes
from mtpsim.sim.caching import cache_block_tokens


def check_kv_pool(s) -> None:
    """The engine's KV pool on each pool of point `s` holds the longest request the run is sure
    to send (check_fits, as the simulation checks its drawn requests) and any prefix cache's
    max_tokens (sim/caching.py cache_block_tokens): for a command that runs
    the point to check with its other refusals, before the point's warnings are said. `run` met
    it inside the first simulation, after the warnings: two lines for one bad value (an
    engine.mem_fraction of 0.01, a 160k-token prompt)."""
    prompt, longest = _sure_lengths(s.workload)
    if s.disaggregation is None:
        budget = _budget(s)
        check_fits(s, budget, longest)
        cache_block_tokens(s, budget)  # a prefix cache's max_tokens past the pool is refused there
        return
    prefill = pool_scenario(s, "prefill")
    budgets = {"prefill": _budget(prefill), "decode": _budget(pool_scenario(s, "decode"))}
    check_pools_fit(s, budgets, prompt, longest)
    cache_block_tokens(prefill, budgets["prefill"])  # the pool that caches prompts (sim/disagg.py)


def check_pools_fit(s, budgets: dict, prompt: int, longest: int) -> None:
    """A disaggregated point's prompt fits its prefill pool's KV pool (with the transfer's staging)
    and its whole request the decode pool's; a ScenarioError naming the pool otherwise. The one
    check of check_kv_pool and of sim/disagg.py's arrivals (over the requests drawn)."""
    for role, tokens in (("prefill", prompt), ("decode", longest)):
        budget = budgets[role]
        check_fits(s, budget, tokens, role, transfer_bytes(budget, tokens) if role == "prefill" else None)


def _budget(point):
    """The point's memory budget, as the simulation builds it (sim/__init__.py, sim/disagg.py)."""
    return memory_budget(build_pricer(point), DesignShape.of(point.speculative), pool_rule(point))


def _sure_lengths(w) -> tuple[int, int]:
    """(prompt, prompt + output) tokens that the run's longest prompt and longest request hold at
    least: a trace's (its scan, read once already), a fixed length, else a distribution's least."""
    if w.arrival == "trace":
        from mtpsim.tracefiles import scan
        stats = scan(w.trace)
        return stats.max_input_len, stats.longest
    least = [n if isinstance(n, int) else n.min for n in (w.input_len, w.output_len)]
    return least[0], sum(least)
