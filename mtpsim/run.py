"""`mtpsim run`: every sweep point plus its `none` baseline, a table, and a run folder.

The run folder holds the resolved scenario (every default filled in, catalog entries expanded),
summary.csv (one row per point and per baseline), requests.csv and iterations.csv (with a
`point` column), and accept_counts.csv.

With `seeds: N` (or `--seeds N`) above 1, each point and each baseline runs once per seed (seed,
seed + 1, ...): summary.csv then has one row per seed, with `seed` and `baseline` columns
(`baseline`: the comparison group, the points that share a `none` run and that run, alike for
all seeds), the other CSVs a `seed` column, and summary_ci.csv one row per point and baseline
with means and 95% Student t intervals over the seeds (mtpsim/run_seeds.py, mtpsim/intervals.py).
The table shows mean ± half-width. With N = 1 the files and the table are as without seeds.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

from mtpsim import interrupts
from mtpsim import scenario as sc
from mtpsim.api_checks import run_points_arguments
from mtpsim.baselines import baseline_key, baseline_of
from mtpsim.designs import BASELINE
from mtpsim.errors import ScenarioError, holding, printable, warn
from mtpsim.heaviness import point_size
from mtpsim.overrides import flags_over_sets
from mtpsim.results import Results
from mtpsim.run_seeds import (
    check_run_count,
    interval_summary,
    replicates,
    run_labels,
    seeds_count,
    shared_seeds,
    with_seeds,
)
from mtpsim.run_table import format_table, print_report
from mtpsim.runfolder import claimed, concat, free_out, mark_complete, write_run
from mtpsim.sim import PROGRESS_MIN_REQUESTS, simulate
from mtpsim.sim.progress import on_terminal, progress_bar

__all__ = ["format_table", "run_points", "run_rows", "run_scenario"]  # format_table: notebooks print the table as run does

def run_points(points: list[sc.Scenario], jobs: int | None = 1, progress: bool = True, keep_passes: bool = False,
               backend: str = "pool", address: str | None = None):
    """Simulate each point (once per seed) and the baselines it needs, each baseline on the same
    seed as the runs it is the baseline of. Returns (summary, results per point run, point-major
    then seed). backend: `pool` (processes on this machine) or `ray` (tasks on a Ray cluster at
    `address`, else a local one): the same summary either way. The summary is run_rows' rows
    as a DataFrame. The API's entry: its arguments are checked as `mtpsim.simulate` checks a point
    and the CLI its flags (a point changed after load priced its row on the old specs and its
    baseline on the new: DeepSeek's MTP against Llama's plain decode, 0.29x)."""
    import pandas as pd
    run_points_arguments(points, jobs, progress, keep_passes, backend)
    rows, results = run_rows(list(points), jobs, progress, keep_passes, backend, address)
    return pd.DataFrame(rows), results


def plan_runs(points: list[sc.Scenario]):
    """What run_rows runs for `points`: (runs, extra, group_of). runs: (point index, replicate,
    baseline key) for every point's every seed; extra: (baseline key, its `none` run, comparison
    group) for each baseline no point is, in the order run_rows puts their rows (point -1) after
    the points'; group_of: each point's comparison group (its first seed's baseline key)."""
    groups: dict[str, int] = {}  # baseline key of a point's first seed -> its comparison group
    group_of = [groups.setdefault(baseline_key(s), len(groups)) for s in points]
    most = {g: max(s.seeds for s, h in zip(points, group_of) if h == g) for g in groups.values()}  # seeds a group runs
    runs = [(i, r, baseline_key(r)) for i, s in enumerate(points) for r in replicates(s)]
    baselines: dict[str, tuple[sc.Scenario, int]] = {}  # baseline key -> (its `none` run, group)
    for i, r, key in runs:
        if key not in baselines:
            g = group_of[i]
            baselines[key] = (r if r.speculative.design == BASELINE else baseline_of(r, most[g]), g)
    scenarios = [r for _, r, _ in runs]
    extra = [(key, b, g) for key, (b, g) in baselines.items() if b not in scenarios]
    return runs, extra, group_of


def run_rows(points: list[sc.Scenario], jobs: int | None = 1, progress: bool = True, keep_passes: bool = False,
             backend: str = "pool", address: str | None = None) -> tuple[list[dict], list[Results]]:
    """run_points' summary as rows (dicts): each run's summary row with its `point` (-1: a
    baseline no point is), pricing and engine (and seed and comparison group over seeds), then
    its speedups; points first, then the baselines run for them. `jobs` None: one worker per core,
    at most one per run (a point and its baseline are two runs)."""
    runs, extra, group_of = plan_runs(points)
    scenarios = [r for _, r, _ in runs]
    tasks = scenarios + [b for _, b, _ in extra]
    keys = [key for _, _, key in runs] + [key for key, _, _ in extra]
    results = _map(tasks, jobs or default_jobs(len(tasks)), progress, keep_passes, backend, address)
    labels = [(i, group_of[i]) for i, _, _ in runs] + [(-1, g) for _, _, g in extra]
    replicated = any(s.seeds > 1 for s in points)
    rows = []
    for s, r, (point, group) in zip(tasks, results, labels):
        # the engine's name, unless the sweep varies the engine section: its swept value (a column
        # of r.row, sim.identity) tells the points apart, which two settings of one engine's would not
        named = {} if "engine" in s.point else {"engine": s.specs.engine.name}
        row = {**r.row, "point": point, "pricing": s.specs.priced_by, **named}
        rows.append({**row, "seed": s.seed, "baseline": group} if replicated else row)
    rows = with_speedups(rows, keys)
    return [r for r in rows if r["point"] >= 0] + [r for r in rows if r["point"] < 0], results[: len(runs)]


def first_rows(points: list[sc.Scenario], summary: list[dict]) -> list[tuple[dict, sc.Scenario]]:
    """Each point's and each baseline's summary row (run_rows' rows; over several seeds, its first
    seed's), with the scenario that ran it: what a table beside the run's reads."""
    runs, extra, _ = plan_runs(points)
    ran = [(r, i) for i, r, _ in runs] + [(b, -1 - g) for _, b, g in extra]  # run_rows' row order
    seen, out = set(), []
    for row, (s, who) in zip(summary, ran):
        if who not in seen:  # a point's (or a baseline group's) first seed
            seen.add(who)
            out.append((row, s))
    return out


def with_speedups(rows: list[dict], keys: list[str]) -> list[dict]:
    """speedup and per_user_speedup of each row over the first `none` row of its baseline key
    (NaN where there is none), divided as float64 columns divide."""
    base: dict[str, dict] = {}
    for row, key in zip(rows, keys):
        if row["design"] == BASELINE:
            base.setdefault(key, row)
    nan = float("nan")
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for row, key in zip(rows, keys):
            b = base.get(key, {})
            out.append({**row, "speedup": np.float64(row["tps"]) / np.float64(b.get("tps", nan)),
                        "per_user_speedup": np.float64(row["per_user_tps"]) / np.float64(b.get("per_user_tps", nan))})
    return out


def _map(tasks, jobs: int, progress: bool, keep_passes: bool, backend: str = "pool",
         address: str | None = None) -> list[Results]:
    """Simulate the tasks in order (in worker processes for sweeps, or as Ray tasks). The first
    point to fail stops the rest, and its error reaches the caller as raised, after the progress
    bar's line."""
    # None: tqdm's own rule, a bar only on a terminal (a log or a pipe gets no carriage-return noise)
    few = len(tasks) <= 2
    bar = progress_bar(len(tasks), True if not progress or few else None, desc="simulating", unit="run")
    own_bars = progress and few  # a run shows its own bar (sim/__init__.py) where the runs' bar is off
    out = []
    try:
        if backend == "ray":
            from mtpsim.ray_backend import map_ray
            return map_ray(tasks, keep_passes, bar, address, jobs)
        if jobs <= 1 or len(tasks) < 2:
            for s in tasks:
                out.append(simulate(s, keep_passes=keep_passes, progress=own_bars))
                bar.update()
            return out
        # a point and its baseline run side by side too: on two cores the pair's wall time is its
        # longer run's (benchmarks/cli_pair.py), and a forked worker re-imports nothing
        pool = interrupts.worker_pool(min(jobs, len(tasks)), **_bar_lock(own_bars and _draws_bars(tasks)))
        with interrupts.running(pool):  # a failed point, Ctrl-C or SIGTERM: the running points are not waited for
            futures = [pool.submit(simulate, s, keep_passes=keep_passes, progress=own_bars, progress_line=i)
                       for i, s in enumerate(tasks)]
            for f in futures:
                interrupts.first_finished([f])
                out.append(f.result())
                bar.update()
        return out
    finally:
        bar.close()


def _draws_bars(tasks) -> bool:
    """Whether a run's own progress bar may draw: a run of PROGRESS_MIN_REQUESTS requests or more
    (sim/__init__.py) with stderr on a terminal (elsewhere a run shows a Heartbeat, which needs no
    lock). No lock otherwise: tqdm and its multiprocessing lock cost ~0.015 s before the fork."""
    return any(s.workload.num_requests >= PROGRESS_MIN_REQUESTS for s in tasks) and on_terminal(sys.stderr)


def _bar_lock(own_bars: bool) -> dict:
    """Pool arguments that let the workers' own progress bars share the terminal: one lock for
    tqdm's writes across processes (tqdm's multiprocessing recipe); none when no bar shows."""
    if not own_bars:
        return {}
    from multiprocessing import RLock

    from tqdm import tqdm
    return {"initializer": tqdm.set_lock, "initargs": (RLock(),)}


def default_jobs(n_points: int) -> int:
    return max(1, min(n_points, os.cpu_count() or 1))


def heavy_runs(points: list[sc.Scenario]) -> None:
    """One line up front when a point's run takes minutes to simulate, by the rule recommend and
    search warn by (heaviness.py `heavy`): a run's progress line only starts after its first
    minute, so a long one would otherwise say nothing until then. Blamed on the request count,
    or on the prefill chunk where prompts cut into many passes make most of the run."""
    share, what, prefill_bound, i, s = max(((*point_size(s), i, s) for i, s in enumerate(points)),
                                           key=lambda found: found[0])
    if share < 1:
        return
    at = f"point {i}: " if len(points) > 1 else ""
    w = s.workload
    if prefill_bound:
        key = "engine.chunked_prefill_tokens" if s.engine.chunked_prefill_tokens is not None else \
            "workload.trace" if w.arrival == "trace" else "workload.input_len"
        fix = "a larger engine.chunked_prefill_tokens prefills each prompt in fewer passes"
    else:
        key, fix = "workload.trace" if w.arrival == "trace" else "workload.num_requests", \
            "fewer requests would do for steady-state figures"
    warn(s.source, key, f"{at}a run of this load simulates {what}, which takes minutes per run (progress is reported "
         f"after the first minute): {fix}")


def run_scenario(path: str, sets: list[str], out: str | None, jobs: int | None, plot: bool = False,
                 trace: bool = False, seeds: str | int | None = None, backend: str = "pool",
                 address: str | None = None, peer: bool = False) -> tuple[Path, list[dict]]:
    """Load, simulate, print, write (plots and trace.json on request; with `peer`, aiconfigurator's
    answer beside each row, printed and in peer.csv). Returns the run folder and the summary rows
    (per seed when the points run over several; run_rows). Nothing on this path imports pandas
    unless seeds, a trace or plots ask for it."""
    if address and backend != "ray":
        raise ScenarioError("--address", "", "names a Ray cluster: use it with --backend ray")
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise ScenarioError("--backend", "", "ray needs Ray installed: pip install 'mtpsim[ray]'")
    if peer:  # peer_compare: on first use, not on `mtpsim run`'s path without --peer
        from mtpsim.peer_compare import require
        require()
    n = seeds_count(seeds)  # before the scenario: a bad --seeds is the one line
    flags_over_sets(sets, {"seeds": (f"--seeds {n}", n)})
    with holding():  # the loader's warnings wait for the seeds' own check: bad input stays one line
        # an engine left no KV pool (or a request it cannot hold) is refused with the point, not after its warnings
        from mtpsim.sim.preflight import check_kv_pool  # on first use, as the simulator: not on `import mtpsim.run`
        points = with_seeds(sc.load(path, sets, fixed={"seeds": f"--seeds {n}"} if n else None, refuse=check_kv_pool), n)
        check_run_count(points, n)
        shared_seeds(points)
        heavy_runs(points)
        free_out(out)  # a busy --out is the one line, not after the scenario's warnings
    with claimed(points[0].name, out) as folder:  # a failed run gives the folder back
        started = time.perf_counter()
        summary, results = run_rows(points, jobs, keep_passes=trace,
                                    backend=backend, address=address)
        labels = run_labels(points)
        replicated = "seed" in labels[0]
        intervals = interval_summary(summary) if replicated else None
        write_run(folder, points, summary, results, labels, intervals)
        if trace:  # one timeline per point: its first seed's
            import pandas as pd

            from mtpsim.trace import write_trace
            first = [r for j, r in enumerate(results) if j == 0 or labels[j - 1]["point"] != labels[j]["point"]]
            write_trace(folder / "trace.json", concat(first, "passes", [{"point": i} for i in range(len(points))]),
                        pd.DataFrame(summary))
        took = time.perf_counter() - started  # the simulation's, without aiconfigurator's
        beside = None
        if peer:  # peer_compare: on first use, not on `mtpsim run`'s path without --peer
            from mtpsim.peer_tables import compare, write_csv
            beside = compare(first_rows(points, summary))
            write_csv(beside, folder / "peer.csv")
        mark_complete(folder)
        if plot:  # run_reader: on first use, not on `mtpsim run`'s path without --plot
            from mtpsim.run_reader import plot_run
            plot_run(folder, points)
        print_report(points, sets, summary, results, labels, intervals, took)
        if beside is not None:
            from mtpsim.peer_tables import report
            print(f"\n{report(beside, replicated)}")
        print(f"\nwrote {printable(str(folder))}/")  # within claimed: a report that cannot be printed unmarks the folder
    return folder, summary
