"""Points -> one summary row each: from the on-disk cache, else simulated on the process pool or Ray.

The cache holds one JSON file per finished point, named by the SHA-256 of the point's resolved
scenario (every key with its defaults, the catalog specs it resolved to, the profile files'
versions, mtpsim's version and ROW_FORMAT): an interrupted search, or a wider one over the same scenario,
runs only the points it has not seen. A row is written as soon as its point finishes.

An entry holds its row with the format, its own key and the SHA-256 of the row's text: a stored
row is used only when all three match and the row has a fresh row's shape (rowshape.py); any
other entry (cut short, edited, copied from another point's, not a mapping, a folder) is a
miss, run again and overwritten. A row that cannot be stored is said once (a warning) and the
search goes on without caching it.

Each worker process keeps one Pricer per layout (worker.py), so a layout's points reuse the
passes its earlier points priced.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

import pandas as pd

import mtpsim
from mtpsim import interrupts
from mtpsim.errors import ScenarioError, warn
from mtpsim.files import version
from mtpsim.runfolder import CLAIM, COMPLETE
from mtpsim.search import rowshape
from mtpsim.search.worker import simulate_point
from mtpsim.sim.progress import progress_bar
from mtpsim.textfiles import blocked_by, blocked_note, not_a_folder

# what a cached entry holds (2: steady-state TTFT, worker.steady_ttft; 3: the row with its key and
# checksum, Cache.put); a change misses old entries
ROW_FORMAT = 3
MAX_ENTRY_BYTES = 1 << 20  # a row is a few kB; a larger entry is no row of ours


def point_key(s) -> str:
    """The cache key of a point: a hash of everything that decides its result, the files it reads
    as it runs among them (a measured profile, an acceptance histogram: the scenario names their
    paths, and an edited histogram at the same path was served the rows of the old one)."""
    specs, histogram = s.specs, s.acceptance.histogram
    text = json.dumps([mtpsim.__version__, ROW_FORMAT, s.model_dump(mode="json", exclude={"search"}),
                       specs.model_dump(mode="json"), version(specs.profile) if specs.profile else None,
                       version(histogram) if histogram else None],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """Finished points' rows on disk (None: no cache). The folder is created here; one that
    cannot be (a file, a path through a file, no permission) is a ScenarioError naming --cache."""

    def __init__(self, folder: str | Path | None):
        self.folder = Path(folder) if folder else None
        self.unstored = 0  # rows that could not be written (the first is warned of)
        if self.folder:
            if any((self.folder / marker).is_file() for marker in (CLAIM, COMPLETE)):  # entries would mix with results
                raise ScenarioError("--cache", "", f"{self.folder} is a run folder (a command's results are there): "
                                    "give the cache a folder of its own, or --no-cache")
            stranger = _not_an_entry(self.folder)
            if stranger is not None:  # `--cache ~` or `--cache /etc`: entries would scatter among the user's files
                raise ScenarioError("--cache", "", f"{self.folder} holds {stranger!r}, which is no cache entry: give the "
                                    "cache a folder of its own (new, or one only `mtpsim search` wrote), or --no-cache")
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                blocked = blocked_by(self.folder)  # a link to nothing on the way raises FileExistsError too
                if isinstance(exc, FileExistsError) and blocked is not None:
                    raise ScenarioError("--cache", "", f"cannot create the cache folder {self.folder}: {blocked}: "
                                        "pass another folder, or --no-cache") from None
                if isinstance(exc, FileExistsError):
                    raise ScenarioError("--cache", "", f"{self.folder} {not_a_folder(self.folder)}: pass a folder, "
                                        "or --no-cache") from None
                raise ScenarioError("--cache", "", f"cannot create the cache folder {self.folder}: "
                                    f"{exc.strerror or exc}{blocked_note(self.folder)}") from None

    def entry(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str, disaggregated: bool = False) -> dict | None:
        """The stored row of the point with this key, or None (a miss) when there is none or it
        is not exactly what `put` wrote for this key with a fresh row's shape."""
        if not self.folder:
            return None
        path = self.entry(key)
        try:
            if not path.is_file() or path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            stored = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):  # cut short by a killed run, binary, nested too deep
            return None
        if not isinstance(stored, dict) or stored.keys() != {"format", "key", "sha256", "row"}:
            return None
        row = stored["row"]
        if stored["format"] != ROW_FORMAT or stored["key"] != key or not isinstance(row, dict) \
                or stored["sha256"] != _checksum(row) or rowshape.problem(row, disaggregated):
            return None
        return row

    def put(self, key: str, row: dict) -> None:
        """Store the row (written whole, then moved over the entry); one that cannot be is warned
        of once, and the search goes on."""
        if not self.folder:
            return
        row = json.loads(json.dumps(row, default=str))  # as it will read back
        text = json.dumps({"format": ROW_FORMAT, "key": key, "sha256": _checksum(row), "row": row})
        tmp = self.folder / f".{key}.{os.getpid()}.tmp"
        try:
            tmp.write_text(text)
            tmp.replace(self.entry(key))
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self.unstored += 1
            if self.unstored == 1:
                why = "is a folder" if self.entry(key).is_dir() else (exc.strerror or str(exc))
                warn(str(self.entry(key)), "", f"cannot store this point's result ({why}); the search goes on "
                     "without caching it (nor any other point's that cannot be stored)")


ENTRY = re.compile(r"\.?[0-9a-f]{64}(\.\d+\.tmp|\.json)")  # an entry, or one being written (Cache.put)


def _not_an_entry(folder: Path) -> str | None:
    """The name of something in an existing `folder` that no search wrote (None: all entries, or
    no folder yet); the first few hundred names are looked at, enough to tell a cache from a home."""
    with contextlib.suppress(OSError):
        for i, child in enumerate(os.scandir(folder)):
            if not ENTRY.fullmatch(child.name):
                return child.name
            if i >= 256:
                break
    return None


def _checksum(row: dict) -> str:
    """SHA-256 of the row's canonical text: a stored row edited by hand no longer matches it."""
    return hashlib.sha256(json.dumps(row, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def run_search_points(points: list, cache: Cache, jobs: int, backend: str = "pool", address: str | None = None,
                      progress: bool = True) -> tuple[pd.DataFrame, int]:
    """Rows for every point, in order (with `point` = its index); returns (rows, points run now)."""
    keys = [point_key(s) for s in points]
    rows: list[dict | None] = [cache.get(k, s.disaggregation is not None) for k, s in zip(keys, points)]
    todo = [i for i, r in enumerate(rows) if r is None]
    # the bar shows on a terminal only, and is cleared when done (what stays is the report, or one
    # error line); in a log, a long search says how far it is now and then (sim/progress.py)
    bar = progress_bar(len(points), None if progress else True, initial=len(points) - len(todo), desc="searching",
                       unit="point", leave=False)
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
    pool = interrupts.worker_pool(jobs)
    with interrupts.running(pool):  # a failed point, a stop or a caller that stopped reading: none waited for
        # a layout's points go one after another, so each worker meets one layout at a time
        futures = {pool.submit(simulate_point, s): i for i, s in zip(index, tasks)}
        pending = set(futures)
        while pending:
            done, pending = interrupts.first_finished(pending)
            for f in done:
                yield futures[f], f.result()
