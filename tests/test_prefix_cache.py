"""Prefix caching (mtpsim/sim/prefix_cache.py and the scheduler's use of it): the cache rule
against an independent replay of it, the KV it shares and evicts under a budget, the TTFT a
shared system prompt saves against the priced prefill, and a Mooncake-format trace's hit rate."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape, prefill_passes
from mtpsim.scenario import validate
from mtpsim.sim import simulate
from mtpsim.sim.prefix_cache import PrefixCache, prompt_blocks
from mtpsim.sim.scheduler import Scheduler
from mtpsim.sim.workload import Request


def replay(prompts: list[list[int]], capacity: int) -> tuple[list[int], int]:
    """The cache rule replayed another way, for requests one after another: per request, the
    leading run of its blocks that are cached is a hit; its other blocks are added, evicting the
    block released longest ago (a request releases last block first) while the cache is full.
    Returns the hit blocks per request and the evictions."""
    cached: dict[int, float] = {}  # block -> when it was last released
    clock, hits, evictions = 0.0, [], 0
    for blocks in prompts:
        hit = 0
        while hit < len(blocks) and blocks[hit] in cached:
            hit += 1
        hits.append(hit)
        pinned = set(blocks[:hit])
        used = list(blocks[:hit])
        for b in blocks[hit:]:
            if b in cached:
                pinned.add(b)
                used.append(b)
                continue
            if len(cached) >= capacity:
                free = [k for k in cached if k not in pinned]
                if not free:
                    break
                del cached[min(free, key=cached.__getitem__)]
                evictions += 1
            cached[b] = clock
            pinned.add(b)
            used.append(b)
        for b in reversed(used):
            clock += 1
            cached[b] = clock
    return hits, evictions


def run_cache(prompts: list[list[int]], capacity: int) -> tuple[list[int], int]:
    cache, hits = PrefixCache(1, capacity), []
    for blocks in prompts:
        hit = cache.match(blocks, len(blocks))
        cache.acquire(blocks[:hit])
        held = blocks[:hit] + cache.insert(blocks[hit:])
        cache.release(held)
        hits.append(hit)
    return hits, cache.num_evicted


def test_cache_rule_by_hand():
    # capacity 3: [1,2] cached; [1,3] hits 1, adds 3; [4] evicts the oldest released: 2 (released before 1)
    hits, evicted = run_cache([[1, 2], [1, 3], [4], [1, 2]], 3)
    assert hits == [0, 1, 0, 1] and evicted == 2  # 4 evicted 2; [1,2] then evicts 3 to add 2 back


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True), min_size=1, max_size=25),
       st.integers(1, 8))
def test_cache_rule_matches_an_independent_replay(prompts, capacity):
    assert run_cache(prompts, capacity) == replay(prompts, capacity)


def test_scheduler_shares_cached_prefixes_and_evicts_unused_blocks():
    # 10 bytes per token, blocks of 4 tokens (40 bytes); room for 160 tokens
    per_token = 10.0
    sched = Scheduler(8, 1600.0, lambda n: n * per_token, PrefixCache(4), 40.0)
    first = Request(0, 0.0, 64, 16, blocks=prompt_blocks(0, 64, 4, 0, 64))
    sched.add(first)
    assert sched.admit() == [first] and first.cached_len == 0
    sched.prefilled(first)  # its 16 blocks move into the cache, still pinned by it
    assert sched.cache.num_blocks == 16 and sched.kv_used_bytes == pytest.approx(160.0)
    # the same prompt again: all but its last block hit (one token must be computed) and it
    # needs only its own 4 + 16 tokens; a third fits beside them as well
    second, third = (Request(i, 0.0, 64, 16, blocks=prompt_blocks(i, 64, 4, 0, 64)) for i in (1, 2))
    sched.add(second)
    sched.add(third)
    assert sched.admit() == [second, third] and second.cached_len == 60
    sched.retire([first, second, third])
    assert sched.kv_used_bytes == pytest.approx(0.0) and sched.cache.num_evictable == 16
    # an unrelated prompt + output of 156 tokens needs 1560 bytes: beside 640 cached bytes that is
    # 600 too many, so 15 unused blocks go and one stays
    other = Request(3, 0.0, 140, 16, blocks=prompt_blocks(3, 140, 4))
    sched.add(other)
    assert sched.admit() == [other] and sched.cache.num_evicted == 15 and sched.cache.num_blocks == 1
    assert sched.kv_used_bytes + sched.cached_bytes == pytest.approx(1600.0)
    # a request that would need more than all evictable room waits, and nothing is evicted for it
    big = Request(4, 0.0, 100, 10, blocks=prompt_blocks(4, 100, 4))
    sched.add(big)
    assert sched.admit() == [] and sched.cache.num_evicted == 15 and sched.num_kv_full == 1


def scenario(cache: bool | None, engine: dict | None = None, **workload):
    """cache: on (16-token blocks), off, or None for the engine's default."""
    return validate({
        "name": "prefix", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "speculative": {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth": [0.8, 0.6]},
        "engine": {**({} if cache is None else {"prefix_cache": {"block_tokens": 16} if cache else {"enabled": False}}),
                   **(engine or {})},
        "workload": workload})


def test_shared_system_prompt_lowers_ttft_by_the_saved_prefill():
    """One user at a time, every prompt a 4096-token system prompt + 256 of its own: with the
    cache, every request after the first prefills 256 tokens over 4096 cached ones. TTFT p50 is
    then the priced prefill of that (plus the host time the prefill does not hide)."""
    load = {"arrival": "closed", "concurrency": 1, "num_requests": 9, "input_len": 4352, "output_len": 4,
            "shared_prefix": {"tokens": 4096}}
    with_cache, without = (scenario(c, **load) for c in (True, False))
    pricer, design = build_pricer(with_cache), DesignShape.of(with_cache.speculative)

    def ttft(q: int, kv: int) -> float:
        gpu = sum(pricer.price(shape, np.array([q]), np.array([kv])).time_s for shape in prefill_passes(design))
        return gpu + max(0.0, pricer.costs.host_s(design.design, 1) - gpu)

    hit, miss = simulate(with_cache).summary.iloc[0], simulate(without).summary.iloc[0]
    assert miss.ttft_p50_s == pytest.approx(ttft(4352, 0), rel=1e-9)
    assert hit.ttft_p50_s == pytest.approx(ttft(256, 4096), rel=1e-9)
    assert miss.ttft_p50_s - hit.ttft_p50_s == pytest.approx(ttft(4352, 0) - ttft(256, 4096), rel=1e-9)
    assert hit.prefix_saved_tokens == 8 * 4096 and hit.prefix_hit_rate == pytest.approx(8 * 4096 / (9 * 4352))
    assert hit.prefix_evicted_blocks == 0


@pytest.mark.parametrize("load", [
    {"arrival": "poisson", "rate_per_s": 20.0, "num_requests": 30, "input_len": 300, "output_len": 16},
    # closed users against a small KV pool: admissions wait on the KV and evict unused blocks
    {"arrival": "closed", "concurrency": 64, "num_requests": 200, "input_len": 3000, "output_len": 64}])
def test_no_shared_prefix_no_hits_and_the_same_run(load):
    """A cache over prompts that share nothing (a shared prefix no request opens with: the cache
    is built) never hits and moves nothing; by default such a load builds no cache at all."""
    engine = {"mem_fraction": 0.3} if load["arrival"] == "closed" else {}
    a = simulate(scenario(True, engine, **load, shared_prefix={"tokens": 64, "fraction": 0.0}))
    b = simulate(scenario(False, engine, **load))
    row = a.summary.iloc[0]
    assert row.prefix_saved_tokens == 0 and "prefix_saved_tokens" not in b.summary
    if engine:  # the pool bound: unused blocks were evicted to admit requests
        assert row.prefix_evicted_blocks > 0 and row.kv_full_iterations > 0
    assert a.requests.equals(b.requests) and a.iterations.equals(b.iterations)
    default = simulate(scenario(None, engine, **load))
    assert "prefix_saved_tokens" not in default.summary and default.requests.equals(b.requests)


def test_the_cache_is_on_by_default_and_can_be_turned_off():
    load = {"arrival": "closed", "concurrency": 1, "num_requests": 4, "input_len": 600, "output_len": 4,
            "shared_prefix": {"tokens": 512}}
    on, off = simulate(scenario(None, **load)).summary.iloc[0], simulate(scenario(False, **load)).summary.iloc[0]
    assert on.prefix_saved_tokens == 3 * 512 and "prefix_saved_tokens" not in off
    for kind, block in (("sglang", 16), ("vllm", 16), ("trtllm", 32)):
        spec = scenario(None, {"kind": kind}, **load).specs.engine.prefix_cache
        assert spec.enabled and spec.block_tokens == block


def test_mooncake_trace_hit_rate_matches_a_replay_of_its_hash_ids(tmp_path):
    """Requests 50 s apart (each done before the next), a cache with room for all: a request's
    hit is the leading run of its full blocks seen before, at most all but its last token."""
    rng = np.random.default_rng(4)
    rows, seen, hit_tokens, query_tokens = [], set(), 0, 0
    for i in range(40):
        n = int(rng.integers(1, 6))
        shared = int(rng.integers(0, n + 1))  # a leading run from a small common pool, the rest new
        ids = [int(x) for x in range(shared)] + [1000 + 10 * i + j for j in range(n - shared)]
        length = 512 * n - int(rng.integers(0, 300))
        rows.append({"timestamp": 50_000 * i, "input_length": length, "output_length": 3, "hash_ids": ids})
        full = ids[: length // 512]
        run = 0
        while run < min(len(full), (length - 1) // 512) and full[run] in seen:
            run += 1
        hit_tokens, query_tokens = hit_tokens + 512 * run, query_tokens + length
        seen.update(full)
    path = tmp_path / "mooncake.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    row = simulate(scenario(True, arrival="trace", trace=str(path))).summary.iloc[0]
    assert row.prefix_saved_tokens == hit_tokens > 0
    assert row.prefix_hit_rate == pytest.approx(hit_tokens / query_tokens)
