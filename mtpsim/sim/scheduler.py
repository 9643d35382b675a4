"""Admission and batching, in plain Python (no simpy, no torch): FIFO admission bounded by
max_running_requests and the KV budget, least-loaded routing over dp replicas, retire and free.

A request is admitted only when its whole KV fits: prompt + output + the design's reservation
(memory.MemoryBudget.request_bytes). Admitting on the full length means no request is ever
preempted; SGLang admits more optimistically and retracts, which matters only near the budget.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import lru_cache

from mtpsim.sim.workload import Request


class Scheduler:
    """One replica's queue and running batch."""

    def __init__(self, max_running: int, kv_budget_bytes: float, request_bytes: Callable[[int], float],
                 held_tokens: Callable[[Request], int] = lambda r: r.input_len + r.output_len):
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
            if self.kv_used_bytes + need > self.kv_budget_bytes:
                self.num_kv_full += 1
                break
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


class Router:
    """Sends each arrival to the least-loaded replica (ties: lowest index)."""

    def __init__(self, schedulers: list[Scheduler]):
        self.schedulers = schedulers

    def route(self, request: Request) -> int:
        index = min(range(len(self.schedulers)), key=lambda i: (self.schedulers[i].num_load, i))
        request.replica = index
        self.schedulers[index].add(request)
        return index
