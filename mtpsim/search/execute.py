"""Points -> one summary row each: from the on-disk cache, else simulated on the process pool or Ray.

The cache holds one JSON file per finished point, named by the SHA-256 of the point's resolved
scenario (every key with its defaults, the catalog specs it resolved to, the profile files'
versions, mtpsim's version and ROW_FORMAT): an interrupted search, or a wider one over the same scenario,
runs only the points it has not seen. A row is written as soon as its point finishes.

Each worker process keeps one Pricer per layout (worker.py), so a layout's points reuse the
passes its earlier points priced.
"""
from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import pandas as pd
from tqdm import tqdm

import mtpsim
from mtpsim.files import version
from mtpsim.search.worker import simulate_point

ROW_FORMAT = 2  # what a cached row holds (2: steady-state TTFT, worker.steady_ttft); a change misses old rows


def point_key(s) -> str:
    """The cache key of a point: a hash of everything that decides its result."""
    specs = s.specs
    text = json.dumps([mtpsim.__version__, ROW_FORMAT, s.model_dump(mode="json", exclude={"search"}),
                       specs.model_dump(mode="json"), version(specs.profile) if specs.profile else None],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """Finished points' rows on disk (None: no cache)."""

    def __init__(self, folder: str | Path | None):
        self.folder = Path(folder) if folder else None
        if self.folder:
            self.folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> dict | None:
        path = self.folder / f"{key}.json" if self.folder else None
        if path is None or not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):  # a half-written file from a killed run: run the point again
            return None

    def put(self, key: str, row: dict) -> None:
        if self.folder:
            tmp = self.folder / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(row, default=str))
            tmp.replace(self.folder / f"{key}.json")


def run_search_points(points: list, cache: Cache, jobs: int, backend: str = "pool", address: str | None = None,
                      progress: bool = True) -> tuple[pd.DataFrame, int]:
    """Rows for every point, in order (with `point` = its index); returns (rows, points run now)."""
    keys = [point_key(s) for s in points]
    rows: list[dict | None] = [cache.get(k) for k in keys]
    todo = [i for i, r in enumerate(rows) if r is None]
    # the bar shows on a terminal only, and is cleared when done (what stays is the report, or one error line)
    bar = tqdm(total=len(points), initial=len(points) - len(todo), desc="searching", unit="point",
               disable=None if progress else True, leave=False)
    try:
        for i, row in _map([points[i] for i in todo], todo, jobs, backend, address):
            rows[i] = row
            cache.put(keys[i], row)
            bar.update()
    finally:
        bar.close()
    return pd.DataFrame([{**r, "point": i} for i, r in enumerate(rows)]), len(todo)


def _map(tasks: list, index: list[int], jobs: int, backend: str, address: str | None):
    """(index, row) as each task finishes."""
    if backend == "ray":
        from mtpsim.search.ray_tasks import map_rows
        yield from map_rows(tasks, index, jobs, address)
        return
    if jobs <= 1 or len(tasks) <= 1:
        for i, s in zip(index, tasks):
            yield i, simulate_point(s)
        return
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        # a layout's points go one after another, so each worker meets one layout at a time
        futures = {pool.submit(simulate_point, s): i for i, s in zip(index, tasks)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                yield futures[f], f.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
