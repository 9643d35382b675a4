"""Admission and batching, in plain Python (no simpy, no torch): FIFO admission bounded by
max_running_requests and the KV budget, routing over dp replicas (round robin, least loaded or
cache aware, as the engine does), retire and free.

A request is admitted only when its whole KV fits: prompt + output + the design's reservation
(memory.MemoryBudget.request_bytes). Admitting on the full length means no request is ever
preempted; SGLang admits more optimistically and retracts, which matters only near the budget.

With a prefix cache (prefix_cache.py) the pool holds the running requests' own KV and the
cached blocks: a request's cached prefix is shared, not held twice (the draft's KV of those
tokens included: its pool shares the target's indices), so it needs only the rest; cached blocks
no request uses are evicted to make room. A prefilled prompt's full blocks move into the cache.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from functools import lru_cache

from mtpsim.sim.prefix_cache import PrefixCache
from mtpsim.sim.workload import Request


class Scheduler:
    """One replica's queue and running batch."""

    def __init__(self, max_running: int, kv_budget_bytes: float, request_bytes: Callable[[int], float],
                 cache: PrefixCache | None = None, block_bytes: float = 0.0,
                 held_tokens: Callable[[Request], int] = lambda r: r.input_len + r.output_len):
        self.cache, self.block_bytes = cache, block_bytes  # block_bytes: KV of one cached block
        self._blocks: dict[int, list] = {}  # request_id -> the cached blocks it pins
        self.max_running = max_running
        self.held_tokens = held_tokens  # tokens of KV a request holds here (a prefill pool: its prompt)
        self.kv_budget_bytes = kv_budget_bytes
        self.request_bytes = lru_cache(maxsize=4096)(request_bytes)  # a sum over layers, for a few lengths
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.kv_used_bytes = 0.0
        self._held: dict[int, float] = {}
        # admissions that stopped with requests waiting, by what stopped them (limits that bind)
        self.num_capped = 0
        self.num_kv_full = 0

    @property
    def num_load(self) -> int:
        return len(self.waiting) + len(self.running)

    def add(self, request: Request) -> None:
        self.waiting.append(request)

    def admit(self) -> list[Request]:
        """Move waiting requests to running, first come first served, while both limits allow."""
        admitted = []
        while self.waiting:
            if len(self.running) >= self.max_running:
                self.num_capped += 1
                break
            need = self.request_bytes(self.held_tokens(self.waiting[0]))
            if self.cache is not None:
                need = self._use_cache(self.waiting[0], need)
            if self.kv_used_bytes + self.cached_bytes + need > self.kv_budget_bytes + self.evictable_bytes:
                self.num_kv_full += 1
                if self.cache is not None:
                    self._unuse_cache(self.waiting[0])
                break
            short = self.kv_used_bytes + self.cached_bytes + need - self.kv_budget_bytes
            if short > 0:  # unused cached blocks make the room
                self.cache.evict(math.ceil(short / self.block_bytes))
            request = self.waiting.popleft()
            self.kv_used_bytes += need
            self._held[request.request_id] = need
            self.running.append(request)
            admitted.append(request)
        return admitted

    def retire(self, finished: list[Request]) -> None:
        """Drop finished requests from the batch and free their KV."""
        if not finished:
            return
        ids = {r.request_id for r in finished}
        self.running = [r for r in self.running if r.request_id not in ids]
        for request_id in ids:
            self.kv_used_bytes -= self._held.pop(request_id)
            if self.cache is not None:
                self.cache.release(self._blocks.pop(request_id, []))

    # ------------------------------------------------------------------ prefix cache
    @property
    def cached_bytes(self) -> float:
        return self.cache.num_blocks * self.block_bytes if self.cache is not None else 0.0

    @property
    def evictable_bytes(self) -> float:
        return self.cache.num_evictable * self.block_bytes if self.cache is not None else 0.0

    def _use_cache(self, request: Request, need: float) -> float:
        """Pin the request's cached prefix (at most all but its last prompt token: the engine
        computes at least one to emit the first token); returns the bytes it needs beyond
        what it shares. `admit` evicts unused blocks if that lets it fit, as vLLM's
        allocate_slots counts evictable blocks as free (vllm/v1/core/kv_cache_manager.py)."""
        blocks = request.blocks or []
        hit = self.cache.match(blocks, (request.input_len - 1) // self.cache.block_tokens)
        self.cache.acquire(blocks[:hit])
        self._blocks[request.request_id] = list(blocks[:hit])
        request.cached_len = hit * self.cache.block_tokens
        return need - hit * self.block_bytes

    def _unuse_cache(self, request: Request) -> None:
        """Undo `_use_cache` for a request that still does not fit (it waits)."""
        self.cache.release(self._blocks.pop(request.request_id))
        request.cached_len = 0

    def prefilled(self, request: Request) -> None:
        """The request's prompt is in KV: count its lookup, and move its full blocks past the
        cached prefix into the cache (they are shared from now on; it still pins them)."""
        if self.cache is None:
            return
        self.cache.num_query_tokens += request.input_len
        self.cache.num_hit_tokens += request.cached_len
        held = self._blocks[request.request_id]
        fresh = (request.blocks or [])[len(held): request.input_len // self.cache.block_tokens]
        before = self.cache.num_inserted
        held += self.cache.insert(fresh)
        moved = (self.cache.num_inserted - before) * self.block_bytes  # new blocks: no longer the request's own
        self.kv_used_bytes -= moved
        self._held[request.request_id] -= moved


class Router:
    """Sends each arrival to a replica by an engine's routing rule (engines.DpRouting; None: the
    least loaded by waiting + running, ties to the lowest index). `block_tokens`: tokens per
    prompt block key (Request.blocks) that cache-aware routing matches."""

    def __init__(self, schedulers: list[Scheduler], rule=None, block_tokens: int = 0):
        self.schedulers, self.rule, self.block_tokens = schedulers, rule, block_tokens
        self.num_routed = 0
        self.trees = [RouterTree() for _ in schedulers] if rule is not None and rule.policy == "cache_aware" else None

    def route(self, request: Request) -> int:
        index = self.pick(request)
        self.num_routed += 1
        request.replica = index
        self.schedulers[index].add(request)
        return index

    def pick(self, request: Request) -> int:
        rule, n = self.rule, len(self.schedulers)
        if rule is None:
            return min(range(n), key=lambda i: (self.schedulers[i].num_load, i))
        if rule.policy == "round_robin":  # SGLang data_parallel_controller.py round_robin_scheduler
            return self.num_routed % n
        if rule.policy == "least_loaded":  # vLLM DPLBAsyncMPClient: score = 4 x waiting + running
            return min(range(n), key=lambda i: (rule.waiting_weight * len(self.schedulers[i].waiting)
                                                + len(self.schedulers[i].running), i))
        return self.cache_aware(request)

    def cache_aware(self, request: Request) -> int:
        """SGLang's router (sgl-router policies/cache_aware.rs): shortest queue when loads are
        imbalanced, else prefix affinity above the threshold, else the smallest tree; the chosen
        replica's tree takes the prompt either way."""
        rule, loads = self.rule, [s.num_load for s in self.schedulers]
        blocks = request.blocks or []
        if max(loads) - min(loads) > rule.balance_abs and max(loads) > min(loads) * rule.balance_rel:
            index = loads.index(min(loads))
        else:
            matched = [t.match(blocks) for t in self.trees]
            best = matched.index(max(matched))
            if matched[best] * self.block_tokens > rule.cache_threshold * request.input_len:
                index = best
            else:
                sizes = [t.num_tokens for t in self.trees]
                index = sizes.index(min(sizes))
        self.trees[index].insert(blocks, request.input_len, self.block_tokens)
        return index


class RouterTree:
    """The router's record of the prompts it sent one replica (sgl-router's approximate tree, by
    block keys rather than characters): the leading run of a prompt's keys it holds, and the
    prompt tokens it holds. Not evicted: sgl-router caps a tree at 2**26 characters (router_args.py
    max_tree_size), some 16M tokens per replica, beyond the loads simulated here."""

    def __init__(self):
        self.keys: set = set()
        self.num_tokens = 0

    def match(self, blocks: list) -> int:
        run = 0
        while run < len(blocks) and blocks[run] in self.keys:
            run += 1
        return run

    def insert(self, blocks: list, input_len: int, block_tokens: int) -> None:
        self.num_tokens += input_len - self.match(blocks) * block_tokens
        self.keys.update(blocks)
