"""A block-hash prefix cache over the KV pool, in plain Python: vLLM's automatic prefix caching
(vllm/v1/core/kv_cache_manager.py, block_pool.py) and SGLang's RadixAttention
(sglang/srt/mem_cache/radix_cache.py) at the granularity of one block of `block_tokens`.

A prompt is a list of block keys, one per full block, each key naming the block *and every
block before it* (vLLM chains each block's hash to its parent's; Mooncake's hash_ids are built
so). A request's hit is the leading run of its keys the cache holds: the KV of block i is only
reusable after blocks 0..i-1. Blocks in use by running requests are pinned (a reference count);
a block no request uses stays cached, evictable, in least-recently-released order, and is
evicted when admission needs room or the cache its cap. A request releases its blocks last to
first, so a chain's tail goes before its head, as vLLM frees them (block_pool.free_blocks) and
as SGLang evicts leaves first.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence


class PrefixCache:
    """Cached blocks, their pins, and counters for the summary."""

    def __init__(self, block_tokens: int, max_blocks: int | None = None):
        self.block_tokens = block_tokens
        self.max_blocks = max_blocks          # the prefix_cache.max_tokens setting in blocks (None: the pool)
        self.refs: dict[Hashable, int] = {}   # every cached block -> requests using it
        self.free: OrderedDict[Hashable, None] = OrderedDict()  # unpinned blocks, least recently released first
        self.num_query_tokens = 0             # prompt tokens looked up
        self.num_hit_tokens = 0               # of which were cached (prefill skipped)
        self.num_evicted = 0                  # blocks evicted
        self.num_inserted = 0                 # blocks added

    @property
    def num_blocks(self) -> int:
        return len(self.refs)

    @property
    def num_evictable(self) -> int:
        return len(self.free)

    def match(self, keys: Sequence[Hashable], max_blocks: int) -> int:
        """How many leading blocks of `keys` (at most `max_blocks`) the cache holds."""
        n = 0
        for key in keys[:max_blocks]:
            if key not in self.refs:
                break
            n += 1
        return n

    def acquire(self, keys: Sequence[Hashable]) -> None:
        """Pin cached blocks for a request that uses them."""
        for key in keys:
            if not self.refs[key]:
                del self.free[key]
            self.refs[key] += 1

    def insert(self, keys: Sequence[Hashable]) -> list[Hashable]:
        """Cache a request's freshly computed blocks, pinned by it; returns the keys it now holds
        pinned. A key cached meanwhile (another request computed it) is pinned instead; at the
        cap with nothing evictable, the rest stay the request's own."""
        held = []
        for key in keys:
            if key in self.refs:
                self.acquire([key])
            elif self.max_blocks is not None and self.num_blocks >= self.max_blocks and not self.evict(1):
                break
            else:
                self.refs[key] = 1
                self.num_inserted += 1
            held.append(key)
        return held

    def release(self, keys: Sequence[Hashable]) -> None:
        """Unpin a finished request's blocks, last first (its tail is evicted before its head)."""
        for key in reversed(keys):
            self.refs[key] -= 1
            if not self.refs[key]:
                self.free[key] = None

    def evict(self, n: int) -> int:
        """Evict up to `n` unpinned blocks, least recently released first; returns how many."""
        done = 0
        while done < n and self.free:
            key, _ = self.free.popitem(last=False)
            del self.refs[key]
            done += 1
        self.num_evicted += done
        return done

    def counters(self) -> dict:
        """The summary's columns: hit rate (hit / looked-up prompt tokens, as vLLM's
        prefix-cache hit rate counts them), saved prefill tokens, evicted blocks."""
        rate = self.num_hit_tokens / self.num_query_tokens if self.num_query_tokens else float("nan")
        return {"prefix_hit_rate": rate, "prefix_saved_tokens": self.num_hit_tokens,
                "prefix_evicted_blocks": self.num_evicted}


def prompt_blocks(request_id: int, input_len: int, block_tokens: int, shared_group: int | None = None,
                  shared_tokens: int = 0, hash_ids: Sequence[int] | None = None) -> list[Hashable]:
    """Keys of a prompt's full blocks: a trace's hash_ids as given; else the blocks of a shared
    system prompt (`shared_tokens` of group `shared_group`) then blocks of the request's own."""
    full = input_len // block_tokens
    if hash_ids is not None:
        return list(hash_ids[:full])
    shared = min(shared_tokens, input_len) // block_tokens if shared_group is not None else 0
    return [("shared", shared_group, i) for i in range(shared)] + [(request_id, i) for i in range(shared, full)]
