"""`mtpsim run`: every sweep point plus its `none` baseline, a table, and a run folder.

The run folder holds the resolved scenario (every default filled in, catalog entries expanded),
summary.csv (one row per point and per baseline), requests.csv and iterations.csv (with a
`point` column), and accept_counts.csv.

With `seeds: N` (or `--seeds N`) above 1, each point and each baseline runs once per seed (seed,
seed + 1, ...): summary.csv then has one row per seed, with `seed` and `baseline` columns
(`baseline`: the comparison group, the points that share a `none` run and that run, alike for
all seeds), the other CSVs a `seed` column, and summary_ci.csv one row per point and baseline
with means and 95% Student t intervals over the seeds (mtpsim/intervals.py). The table shows
mean ± half-width. With N = 1 the files and the table are as without seeds.
"""
from __future__ import annotations

import importlib.util
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml
from pydantic import TypeAdapter, ValidationError
from tqdm import tqdm

from mtpsim import scenario as sc
from mtpsim.designs import BASELINE, DesignShape
from mtpsim.errors import ScenarioError, short
from mtpsim.files import TEXT, Column, read_csv, read_text
from mtpsim.intervals import seed_intervals
from mtpsim.results import LogHistogram, Results, add_speedups
from mtpsim.schema import MAX_SEEDS, Seeds, mean_length
from mtpsim.sim import simulate

SEEDS = TypeAdapter(Seeds)
BASELINE_FREE = {"name", "question", "speculative", "acceptance", "sweep", "verify", "model"}


def baseline_key(s: sc.Scenario) -> str:
    """Everything but the speculation: points that share it share one `none` run. The model counts
    as its resolved spec without its draft (an `mtp` override changes nothing for `none`)."""
    target = s.specs.model.model_dump(exclude={"mtp", "assistant"})
    return json.dumps([s.model_dump(exclude=BASELINE_FREE), target], sort_keys=True, default=str)


def baseline_of(s: sc.Scenario) -> sc.Scenario:
    data = s.model_dump(exclude={"sweep"}, exclude_none=True)
    data["speculative"], data["acceptance"] = {"design": BASELINE}, {}
    return sc.validate(data, s.source, s.point)


def replicates(s: sc.Scenario) -> list[sc.Scenario]:
    """The point once per seed: seed, seed + 1, ..., seed + seeds - 1 (itself when seeds is 1)."""
    return [s] if s.seeds == 1 else [s.model_copy(update={"seed": s.seed + k}) for k in range(s.seeds)]


def run_points(points: list[sc.Scenario], jobs: int = 1, progress: bool = True, keep_passes: bool = False,
               backend: str = "pool", address: str | None = None) -> tuple[pd.DataFrame, list[Results]]:
    """Simulate each point (once per seed) and the baselines it needs, each baseline on the same
    seed as the runs it is the baseline of. Returns (summary, results per point run, point-major
    then seed). backend: `pool` (processes on this machine) or `ray` (tasks on a Ray cluster at
    `address`, else a local one): the same summary either way."""
    groups: dict[str, int] = {}  # baseline key of a point's first seed -> its comparison group
    group_of = [groups.setdefault(baseline_key(s), len(groups)) for s in points]
    runs = [(i, r) for i, s in enumerate(points) for r in replicates(s)]
    baselines: dict[str, tuple[sc.Scenario, int]] = {}  # baseline key -> (its `none` run, group)
    for i, r in runs:
        if (key := baseline_key(r)) not in baselines:
            baselines[key] = (r if r.speculative.design == BASELINE else baseline_of(r), group_of[i])
    scenarios = [r for _, r in runs]
    extra = [(b, g) for b, g in baselines.values() if b not in scenarios]
    tasks = scenarios + [b for b, _ in extra]
    results = _map(tasks, jobs, progress, keep_passes, backend, address)
    labels = [(i, group_of[i]) for i, _ in runs] + [(-1, g) for _, g in extra]
    replicated = any(s.seeds > 1 for s in points)
    rows = []
    for s, r, (point, group) in zip(tasks, results, labels):
        row = r.summary.assign(point=point, baseline_key=baseline_key(s),
                               pricing=s.specs.pricing, engine=s.specs.engine.name)
        rows.append(row.assign(seed=s.seed, baseline=group) if replicated else row)
    summary = pd.concat(rows, ignore_index=True)
    base = summary[summary.design == BASELINE].drop_duplicates("baseline_key")
    summary = add_speedups(summary, base).drop(columns="baseline_key")
    point_rows = summary[summary.point >= 0]
    extra_rows = summary[(summary.point < 0)]
    return pd.concat([point_rows, extra_rows], ignore_index=True), results[: len(runs)]


def interval_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """summary_ci.csv: a replicated run's per-seed summary -> one row per point and per baseline
    (points first), with means, 95% intervals and the `overlaps` flag (intervals.seed_intervals)."""
    unit = summary.point.astype(str).where(summary.point >= 0, "baseline " + summary.baseline.astype(str))
    return seed_intervals(summary.assign(unit=unit), "unit", "baseline").drop(columns="unit")


def _map(tasks, jobs: int, progress: bool, keep_passes: bool, backend: str = "pool",
         address: str | None = None) -> list[Results]:
    """Simulate the tasks in order (in worker processes for sweeps, or as Ray tasks). The first
    point to fail stops the rest, and its error reaches the caller as raised, after the progress
    bar's line."""
    bar = tqdm(total=len(tasks), desc="simulating", unit="run", disable=not progress or len(tasks) <= 2)
    out = []
    try:
        if backend == "ray":
            from mtpsim.ray_backend import map_ray
            return map_ray(tasks, keep_passes, bar, address, jobs)
        if jobs <= 1 or len(tasks) <= 2:
            for s in tasks:  # a long run shows its own bar when the runs' bar is off
                out.append(simulate(s, keep_passes=keep_passes, progress=progress and bar.disable))
                bar.update()
            return out
        pool = ProcessPoolExecutor(max_workers=jobs)
        try:
            futures = [pool.submit(simulate, s, keep_passes=keep_passes) for s in tasks]
            for f in futures:
                out.append(f.result())
                bar.update()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return out
    finally:
        bar.close()


CLAIM = ".mtpsim-run"  # created exclusively in a run folder before anything is simulated


def output_dir(name: str, out: str | None) -> Path:
    """The run folder, claimed before simulating: new, or an existing empty one, never one with
    files in it, and never one another run is writing into (the claim file is created
    exclusively, so of two runs started into one folder only one proceeds)."""
    path = Path(out) if out else Path("runs") / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    busy = ScenarioError(str(path), "", "output folder exists and is not empty (nothing overwritten); "
                         "pass another --out")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise busy
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path / CLAIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        raise (busy if path.is_dir() else ScenarioError(str(path), "", "exists and is not a folder (a file, "
               "or a link to nothing): pass another --out")) from None
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot create the run folder: {exc.strerror or exc}") from None
    return path


def run_labels(points: list[sc.Scenario]) -> list[dict]:
    """Per point run, the columns that tell its rows apart in requests.csv and the others:
    `point`, and `seed` when any point runs over several seeds."""
    if all(s.seeds == 1 for s in points):
        return [{"point": i} for i in range(len(points))]
    return [{"point": i, "seed": r.seed} for i, s in enumerate(points) for r in replicates(s)]


def write_run(path: Path, points: list[sc.Scenario], summary: pd.DataFrame, results: list[Results]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    labels = run_labels(points)
    resolved = [{**p.model_dump(exclude={"sweep"}, exclude_none=True), "point": p.point,
                 "resolved_specs": p.specs.model_dump(exclude_none=True)} for p in points]
    (path / "scenario.resolved.yaml").write_text(yaml.safe_dump_all(resolved, sort_keys=False))
    summary.to_csv(path / "summary.csv", index=False)
    if "seed" in labels[0]:
        interval_summary(summary).to_csv(path / "summary_ci.csv", index=False)
    _concat(results, "requests", labels).to_csv(path / "requests.csv", index=False)
    _concat(results, "iterations", labels).to_csv(path / "iterations.csv", index=False)
    counts = pd.concat([pd.DataFrame({**label, "accepted": range(len(r.accept_counts)), "count": r.accept_counts})
                        for label, r in zip(labels, results)], ignore_index=True)
    counts.to_csv(path / "accept_counts.csv", index=False)
    if any(r.passes is not None and len(r.passes) for r in results):
        _concat(results, "passes", labels).to_csv(path / "passes.csv", index=False)


def _concat(results: list[Results], attr: str, labels: list[dict]) -> pd.DataFrame:
    return pd.concat([getattr(r, attr).assign(**label) for label, r in zip(labels, results)], ignore_index=True)


TABLE = {"design": "design", "steps": "S", "policy": "policy", "concurrency": "conc", "rate_per_s": "rate/s", "tps": "TPS",
         "per_user_tps": "user TPS", "ttft_p50_s": "TTFT p50 ms", "ttft_p99_s": "TTFT p99 ms",
         "tpot_p50_s": "TPOT p50 ms", "tpot_p99_s": "TPOT p99 ms", "accept_length": "AL", "speedup": "speedup",
         "draft_share": "draft%", "verify_share": "verify%", "extend_share": "extend%",
         "prefill_share": "prefill%", "overhead_share": "host%"}


def format_table(summary: pd.DataFrame) -> str:
    """The run's table; swept keys the fixed columns do not show get a column of their own. A
    replicated run's interval summary (summary_ci.csv's rows) shows TPS, per-user TPS and speedup
    as mean ± half-width, and `~` after a TPS whose interval overlaps another design's at the
    same load (see legend())."""
    shown = {"workload.concurrency", "speculative.steps", "speculative.design", "workload.rate_per_s",
             "speculative.policy"}
    swept = [c for c in summary.columns if "." in c and c not in shown]
    df = summary[[c for c in TABLE if c in summary.columns] + swept].copy()
    df = df.rename(columns={c: c.split(".")[-1] for c in swept})
    if df.rate_per_s.isna().all():
        df = df.drop(columns="rate_per_s")
    if "policy" in df:  # adaptive runs name their table; fixed-steps rows leave it blank
        df["policy"] = df.policy.fillna("")
    for col in df.columns:
        if col.endswith("_s") and not col.endswith("_per_s"):  # seconds shown as ms; rates as they are
            df[col] = df[col] * 1e3
        if col.endswith("_share"):
            df[col] = df[col] * 100
    if "tps_ci_half" in summary:
        for col in ("tps", "per_user_tps", "speedup"):
            df[col] = [f"{_number(m)} ± {_number(h)}" for m, h in zip(summary[col], summary[f"{col}_ci_half"])]
        df["tps"] = [f"{v} {'~' if o else ' '}" for v, o in zip(df.tps, summary.overlaps)]
    df = df.rename(columns=TABLE)
    return df.to_string(index=False, float_format=_number)


def _number(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def legend(ci: pd.DataFrame) -> str:
    """The lines under a replicated run's table: what ± is, and what ~ marks (when any)."""
    seeds = ", ".join(str(n) for n in dict.fromkeys(ci.seeds))
    lines = [f"± half-width of the 95% interval over {seeds} seeds (Student t; speedup seed by seed over "
             "the baseline of the same seed)"]
    if ci.overlaps.any():
        lines.append("~ its TPS interval overlaps another design's at the same load: these seeds do not "
                     "settle the difference")
    return "\n".join(lines)


def _pricing(points: list[sc.Scenario]) -> str:
    """What priced the run (one cost model, or each one a sweep used)."""
    return ", ".join(dict.fromkeys(p.specs.pricing for p in points))


def default_jobs(n_points: int) -> int:
    return max(1, min(n_points, os.cpu_count() or 1))


def with_seeds(points: list[sc.Scenario], seeds: str | int | None) -> list[sc.Scenario]:
    """`--seeds N` over every point's `seeds` (N as typed; a bad one is a ScenarioError naming --seeds)."""
    if seeds is None:
        return points
    try:
        n = SEEDS.validate_python(int(seeds))
    except ValueError as exc:  # int() of a non-number, or pydantic's ValidationError (a ValueError)
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"{seeds!r} is not a whole number"
        raise ScenarioError("--seeds", "", f"{reason} (replicates per point, 1..{MAX_SEEDS})") from None
    return [p.model_copy(update={"seeds": n}) for p in points]


def run_scenario(path: str, sets: list[str], out: str | None, jobs: int | None, plot: bool = False,
                 trace: bool = False, seeds: str | int | None = None, backend: str = "pool",
                 address: str | None = None) -> tuple[Path, pd.DataFrame]:
    """Load, simulate, print, write (plots and trace.json on request). Returns the run folder and
    the summary (per seed when the points run over several)."""
    if address and backend != "ray":
        raise ScenarioError("--address", "", "names a Ray cluster: use it with --backend ray")
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise ScenarioError("--backend", "", "ray needs Ray installed: pip install 'mtpsim[ray]'")
    points = with_seeds(sc.load(path, sets), seeds)
    folder = output_dir(points[0].name, out)
    started = time.perf_counter()
    summary, results = run_points(points, jobs or default_jobs(len(points)), keep_passes=trace,
                                  backend=backend, address=address)
    write_run(folder, points, summary, results)
    labels = run_labels(points)
    if trace:  # one timeline per point: its first seed's
        from mtpsim.trace import write_trace
        first = [r for j, r in enumerate(results) if j == 0 or labels[j - 1]["point"] != labels[j]["point"]]
        write_trace(folder / "trace.json", _concat(first, "passes", [{"point": i} for i in range(len(points))]),
                    summary)
    if plot:
        plot_run(folder, points)
    s = points[0]
    if s.question:  # the question as written, and what --set changed of the scenario it asks about
        print(f"Q: {s.question}" + (f" (with --set {', '.join(sets)})" if sets else ""))
    replicated = "seed" in labels[0]
    print(f"{s.name}: {s.specs.model.name} on {s.parallel.dp}x{s.parallel.tp} {s.specs.hardware.name}, "
          f"engine {s.specs.engine.name}, priced by {_pricing(points)}, {len(points)} point(s)"
          f"{f' x {len(labels) // len(points)} seeds' if replicated else ''} in "
          f"{time.perf_counter() - started:.1f} s\n")
    if replicated:
        ci = interval_summary(summary)
        print(format_table(ci) + "\n\n" + legend(ci))
    else:
        print(format_table(summary))
    if any(r.iterations_truncated for r in results):
        print("\n(iterations.csv keeps the first rows of very long runs; the summary counts every iteration)")
    if any(r.requests_truncated for r in results):
        print("(requests.csv keeps the first finished requests of very long runs; the summary counts every request,\n"
              f" its percentiles from histograms within {LogHistogram.RELATIVE_ERROR:.1%})")
    print(f"\nwrote {folder}/")
    return folder, summary


# ---------------------------------------------------------------------------- plots of a run folder

def memory_frame(points: list[sc.Scenario]) -> pd.DataFrame:
    """Per-GPU memory budget of each distinct design in the run (and `none`): weights, KV budget,
    and max concurrent requests at the workload's mean input + output length."""
    from mtpsim.costs import build_pricer
    from mtpsim.memory import memory_budget
    rows = {}
    for s in points:
        pricer, context = build_pricer(s), mean_length(s.workload.input_len) + mean_length(s.workload.output_len)
        for d in (DesignShape(BASELINE), DesignShape.of(s.speculative)):
            label = d.label + "".join(f", {k.split('.')[-1]}={v}" for k, v in s.point.items()
                                      if k.startswith("model") and d.design != BASELINE)
            m = memory_budget(pricer, d)
            rows.setdefault((label, context), {
                "label": label, "design": d.design, "steps": d.steps,
                "context": context, "target_weights_GB": m.target_weight_bytes / 1e9,
                "draft_weights_GB": m.draft_weight_bytes / 1e9, "kv_budget_GB": m.kv_budget_bytes / 1e9,
                "max_requests": m.max_requests(context)})
    return pd.DataFrame(list(rows.values()))


def load_run_points(folder: Path) -> list[sc.Scenario]:
    """The points of a finished run, from its scenario.resolved.yaml."""
    where = str(Path(folder) / "scenario.resolved.yaml")
    try:
        docs = list(yaml.safe_load_all(read_text(where)))
    except yaml.YAMLError as exc:
        raise ScenarioError(where, "", f"not readable YAML: {short(str(exc), 120)[1:-1]}") from None
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ScenarioError(where, "", "not a resolved scenario (one mapping per point)")
    points = []
    for doc in docs:
        point = doc.pop("point", {}) or {}
        doc.pop("resolved_specs", None)
        points.append(sc.validate(doc, str(folder / "scenario.resolved.yaml"), point))
    return points


# what `mtpsim plot` reads from a run folder; numbers must be numbers, the rest only present
POINT, TIME = Column(low=-1, integer=True), Column(low=0)  # point -1: a baseline added by the run
RUN_TABLES = {
    "summary.csv": {"point": POINT, "name": TEXT, "design": TEXT, "steps": Column(low=0, integer=True),
                    "concurrency": Column(low=1, integer=True), "tps": TIME, "per_user_tps": TEXT,
                    "speedup": TEXT, "accept_length": TEXT},
    "iterations.csv": {"point": POINT, "replica": Column(low=0, integer=True), "kind": TEXT, "start_s": TIME,
                       "duration_s": TIME},
    "accept_counts.csv": {"point": POINT, "accepted": Column(low=0, integer=True), "count": Column(low=0)},
    "passes.csv": {"point": POINT, "replica": Column(low=0, integer=True), "start_s": TIME},
    "summary_ci.csv": {"point": POINT, "design": TEXT, "steps": Column(low=0, integer=True), "tps": TIME},
}


def read_run_table(folder: Path, name: str, required: bool = True) -> pd.DataFrame | None:
    """One CSV of a run folder, checked: present (unless optional), whole (pandas ends every
    file it writes with a newline, so a file without one was cut short), and holding the
    columns `mtpsim plot` reads (RUN_TABLES)."""
    path = Path(folder) / name
    if not path.is_file():
        if required:
            raise ScenarioError(str(folder), "", f"incomplete run folder: no {name}")
        return None
    text = read_text(path)
    if text and not text.endswith("\n"):
        raise ScenarioError(str(path), "", "truncated: its last row is cut off (was the run interrupted?)")
    return read_csv(path, RUN_TABLES[name])


def plot_run(folder: Path, points: list[sc.Scenario] | None = None) -> list[Path]:
    """Draw the run folder's PNGs from its CSVs (and memory budgets from its scenario)."""
    from mtpsim.plots import write_plots
    folder = Path(folder)
    if not (folder / "summary.csv").is_file():
        raise ScenarioError(str(folder), "", "not a run folder (no summary.csv)")
    summary = read_run_table(folder, "summary.csv")
    if not (summary.point == 0).any():
        raise ScenarioError(str(folder / "summary.csv"), "point", "no row for point 0")
    tables = [read_run_table(folder, name) for name in ("accept_counts.csv", "iterations.csv")]
    try:
        memory = memory_frame(points or load_run_points(folder))
    except (ScenarioError, OSError) as exc:
        print(f"(memory plot skipped: {exc})")
        memory = None
    counts, iterations = tables
    passes = read_run_table(folder, "passes.csv", required=False)
    if (folder / "summary_ci.csv").is_file():  # over seeds: their means, and one seed's timeline
        summary, iterations, passes = read_run_table(folder, "summary_ci.csv"), _first_seed(iterations), _first_seed(passes)
    paths = write_plots(folder, summary, counts, iterations, passes, memory)
    print(f"plots: {', '.join(p.name for p in paths)}")
    return paths


def _first_seed(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of point 0's first seed (the one point whose timeline is drawn)."""
    if frame is None or "seed" not in frame or not len(frame):
        return frame
    return frame[frame.seed == frame.seed[frame.point == 0].min()]
