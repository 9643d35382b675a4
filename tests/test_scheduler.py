"""The scheduler is pure Python: admission limits, FIFO order, freeing, routing."""
from __future__ import annotations

from mtpsim.sim.scheduler import Router, Scheduler
from mtpsim.sim.workload import Request


def req(i, n_in=10, n_out=10):
    return Request(i, 0.0, n_in, n_out)


def test_admits_fifo_up_to_max_running():
    s = Scheduler(max_running=2, kv_budget_bytes=1e9, request_bytes=lambda n: n)
    for i in range(3):
        s.add(req(i))
    assert [r.request_id for r in s.admit()] == [0, 1]
    assert s.admit() == [] and len(s.waiting) == 1


def test_kv_budget_blocks_head_of_line_and_retire_frees():
    s = Scheduler(max_running=10, kv_budget_bytes=50, request_bytes=lambda n: n)  # each needs 20
    for i in range(4):
        s.add(req(i))
    assert len(s.admit()) == 2 and s.kv_used_bytes == 40
    s.retire([s.running[0]])
    assert s.kv_used_bytes == 20
    assert [r.request_id for r in s.admit()] == [2]


def test_router_balances_load():
    scheds = [Scheduler(4, 1e9, lambda n: n) for _ in range(3)]
    router = Router(scheds)
    assert [router.route(req(i)) for i in range(6)] == [0, 1, 2, 0, 1, 2]
