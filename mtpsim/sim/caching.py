"""A scenario's prefix cache: whether one is built, its block size, and the summary counters.

All three engines cache prefixes by default (SGLang's radix cache, vLLM's automatic prefix
caching, TensorRT-LLM's KV block reuse: `prefix_cache` in mtpsim/data/engines/<kind>.yaml, with
the sources); `engine.prefix_cache: {enabled: false}` turns it off. Only prompts that share
blocks can hit: a shared system prompt (`workload.shared_prefix`) or a Mooncake trace's
`hash_ids`. Every other prompt's blocks are its own, so a cache over them never hits, never
holds what an admission needs (unused blocks are evicted first) and changes no result
(tests/test_prefix_cache.py runs one to show it): there the cache is not built at all.
"""
from __future__ import annotations

from mtpsim.cache_settings import block_tokens_of, cache_enabled, trace_blocks
from mtpsim.errors import ScenarioError
from mtpsim.sim.prefix_cache import PrefixCache


def cache_block_tokens(s, budget) -> int:
    """Tokens per prefix-cache block, 0 for no cache: none when the engine's cache is off or no
    two prompts of the load can share a block; a Mooncake trace's block_size, else
    engine.prefix_cache.block_tokens, else the engine's. A cap larger than the KV pool is refused."""
    c = s.engine.prefix_cache
    if not cache_enabled(s):
        return 0
    pool = budget.max_kv_tokens * budget.groups
    if c is not None and c.max_tokens is not None and c.max_tokens > pool:
        raise ScenarioError(s.source, "engine.prefix_cache.max_tokens", f"{c.max_tokens:,} tokens is more than the "
                            f"{pool:,} the KV pool holds ({budget.rule.label} of {budget.capacity_bytes / 1e9:.1f} GB)")
    if not trace_blocks(s) and not can_share(s.workload):
        return 0
    return block_tokens_of(s)


def can_share(workload) -> bool:
    """Whether the prompts of a synthetic load may open with the same block (a shared prefix,
    even one no request draws: the cache is then built and must change nothing)."""
    return workload.shared_prefix is not None


def replica_cache(s, budget, block: int) -> tuple:
    """A replica scheduler's (cache, bytes per cached block), or () with no prefix cache."""
    if not block:
        return ()
    limit = s.engine.prefix_cache.max_tokens if s.engine.prefix_cache is not None else None
    return PrefixCache(block, limit // block if limit is not None else None), block * budget.kv_bytes_per_token


def cache_counters(caches: list[PrefixCache]) -> dict:
    """The replicas' prefix-cache counters as one summary row's columns."""
    total = PrefixCache(1)
    for c in caches:
        total.num_query_tokens += c.num_query_tokens
        total.num_hit_tokens += c.num_hit_tokens
        total.num_evicted += c.num_evicted
    return total.counters()
