"""A scenario's prefix cache as its engine resolves it, read by the simulator (sim/caching.py,
which builds it) and by the advice about it (engine_advice.py) alike: whether it is on, and the
tokens per block (a replayed trace's block_size where its rows give block ids, else the scenario's
engine.prefix_cache.block_tokens, else the engine's). No simulator here: the loader reads it.
"""
from __future__ import annotations


def cache_enabled(s) -> bool:
    """Whether the engine caches prefixes: engine.prefix_cache.enabled, else the engine's default."""
    c = s.engine.prefix_cache
    return c.enabled if c is not None else s.specs.engine.prefix_cache.enabled


def trace_blocks(s) -> bool:
    """Whether a replayed trace's rows give their prompts' block ids (hash_ids)."""
    w = s.workload
    if w.arrival != "trace":
        return False
    from mtpsim.tracefiles import scan  # on first use: not on `mtpsim run`'s path without a trace
    return scan(w.trace).has_blocks


def block_tokens_of(s) -> int:
    """Tokens per block of the scenario's prefix cache, were it built: a trace's block_size where
    its rows give block ids, else engine.prefix_cache.block_tokens, else the engine's."""
    c = s.engine.prefix_cache
    if trace_blocks(s):
        return s.workload.trace.block_size
    return c.block_tokens if c is not None and c.block_tokens is not None else s.specs.engine.prefix_cache.block_tokens
