"""`mtpsim search --backend ray`: each point a Ray task, through ray_backend.py's connection.

Ray keeps its worker processes, so a worker's Pricers (worker.py) serve every point it gets.
"""
from __future__ import annotations

import ray

from mtpsim.ray_backend import WAIT_S, connect, get_result
from mtpsim.search.worker import simulate_point


@ray.remote
def _point(scenario) -> dict:
    return simulate_point(scenario)


def map_rows(tasks: list, index: list[int], jobs: int, address: str | None):
    """(index, row) as each point's task finishes; the first failure cancels the rest."""
    started = connect(address, jobs)
    try:
        refs = [_point.remote(s) for s in tasks]
        where = dict(zip(refs, index))
        pending = refs
        while pending:
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=WAIT_S)
            for ref in done:
                yield where[ref], get_result(ref, pending)
    finally:
        if started:
            ray.shutdown()
