"""Routing over dp replicas (sim/scheduler.py Router): round robin, least loaded, cache aware."""
from __future__ import annotations

import pytest

from mtpsim.engines import DpRouting
from mtpsim.scenario import validate
from mtpsim.sim import simulate
from mtpsim.sim.prefix_cache import prompt_blocks
from mtpsim.sim.scheduler import Router, Scheduler
from mtpsim.sim.workload import Request


def schedulers(n: int) -> list[Scheduler]:
    return [Scheduler(1, 1e12, lambda tokens: 1.0) for _ in range(n)]


def request(i: int, input_len: int = 1000, group=None, shared: int = 0) -> Request:
    return Request(i, 0.0, input_len, 5, blocks=prompt_blocks(i, input_len, 16, group, shared))


def test_round_robin_cycles_whatever_the_load():
    router = Router(schedulers(3), DpRouting(policy="round_robin"))
    assert [router.route(request(i)) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_least_loaded_weighs_waiting_requests():
    """vLLM's score, 4 x waiting + running: one waiting outweighs three running."""
    s = schedulers(2)
    s[0].running = [request(90), request(91), request(92)]
    s[1].waiting.append(request(93))
    assert Router(s, DpRouting(policy="least_loaded", waiting_weight=4)).route(request(0)) == 0
    # counted as mtpsim's former rule (weight 1), replica 1's one waiting is the lighter load
    s = schedulers(2)
    s[0].running = [request(90), request(91), request(92)]
    s[1].waiting.append(request(93))
    assert Router(s, DpRouting(policy="least_loaded", waiting_weight=1)).route(request(1)) == 1


def test_cache_aware_follows_the_prefix_unless_loads_spread():
    router = Router(schedulers(3), DpRouting(policy="cache_aware"), block_tokens=16)
    # nothing matches: the smallest tree, so new prompts spread over the replicas
    assert [router.route(request(i, group=i, shared=800)) for i in range(3)] == [0, 1, 2]
    # a prompt opening with group 1's 800 tokens of 1000 (> 0.3 matched) follows it
    assert router.route(request(10, group=1, shared=800)) == 1
    # 200 of 1000 shared is under the threshold: the smallest tree (replica 0 holds the fewest tokens)
    assert router.route(request(11, group=2, shared=208)) == 0
    # loads 66 apart and more than 1.5x: the least loaded, whatever the prefix
    router.schedulers[1].waiting.extend(request(100 + i) for i in range(70))
    assert router.route(request(12, group=1, shared=800)) != 1


def scenario(routing: str):
    return validate({
        "name": "route", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "parallel": {"tp": 1, "dp": 4}, "engine": {"dp_routing": routing},
        "workload": {"arrival": "poisson", "rate_per_s": 2.0, "num_requests": 64, "input_len": 2304,
                     "output_len": 8, "shared_prefix": {"tokens": 2048, "groups": 8}}})


def test_cache_aware_routing_hits_where_round_robin_misses():
    """8 system prompts over 4 replicas, requests far apart: routed by prefix, each prompt misses
    once (its first request) and hits after; round robin meets each prompt on every replica."""
    aware, rr = (simulate(scenario(r)).summary.iloc[0] for r in ("cache_aware", "round_robin"))
    assert aware.prefix_saved_tokens == (64 - 8) * 2048
    assert rr.prefix_saved_tokens < aware.prefix_saved_tokens
    assert aware.ttft_p50_s <= rr.ttft_p50_s


@pytest.mark.parametrize("kind,policy", [("sglang", "round_robin"), ("vllm", "least_loaded"), ("trtllm", "least_loaded")])
def test_engine_defaults(kind, policy):
    s = validate({"name": "x", "model": "llama-3.1-8b", "hardware": "h100-sxm", "engine": {"kind": kind},
                  "workload": {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 8, "output_len": 2}})
    assert s.specs.engine.routing(None).policy == policy
    assert s.specs.engine.routing("cache_aware").policy == "cache_aware"
