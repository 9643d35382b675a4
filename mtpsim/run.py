"""`mtpsim run`: every sweep point plus its `none` baseline, a table, and a run folder.

The run folder holds the resolved scenario (every default filled in, catalog entries expanded),
summary.csv (one row per point and per baseline), requests.csv and iterations.csv (with a
`point` column), and accept_counts.csv.
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml
from tqdm import tqdm

from mtpsim import scenario as sc
from mtpsim.designs import BASELINE, DesignShape
from mtpsim.errors import ScenarioError
from mtpsim.results import Results, add_speedups
from mtpsim.schema import mean_length
from mtpsim.sim import simulate

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


def run_points(points: list[sc.Scenario], jobs: int = 1, progress: bool = True,
               keep_passes: bool = False) -> tuple[pd.DataFrame, list[Results]]:
    """Simulate each point and the baselines it needs. Returns (summary, results per point)."""
    baselines: dict[str, sc.Scenario] = {}
    for s in points:
        baselines.setdefault(baseline_key(s), s if s.speculative.design == BASELINE else baseline_of(s))
    tasks = list(points) + [b for b in baselines.values() if b not in points]
    results = _map(tasks, jobs, progress, keep_passes)
    rows = []
    for i, (s, r) in enumerate(zip(tasks, results)):
        row = r.summary.assign(point=i if i < len(points) else -1, baseline_key=baseline_key(s),
                               pricing=s.specs.pricing, engine=s.specs.engine.name)
        rows.append(row)
    summary = pd.concat(rows, ignore_index=True)
    base = summary[summary.design == BASELINE].drop_duplicates("baseline_key")
    summary = add_speedups(summary, base).drop(columns="baseline_key")
    point_rows = summary[summary.point >= 0]
    extra = summary[(summary.point < 0)]
    return pd.concat([point_rows, extra], ignore_index=True), results[: len(points)]


def _map(tasks, jobs: int, progress: bool, keep_passes: bool) -> list[Results]:
    """Simulate the tasks in order (in worker processes for sweeps). The first point to fail
    stops the rest, and its error reaches the caller as raised, after the progress bar's line."""
    bar = tqdm(total=len(tasks), desc="simulating", unit="run", disable=not progress or len(tasks) <= 2)
    out = []
    try:
        if jobs <= 1 or len(tasks) <= 2:
            for s in tasks:
                out.append(simulate(s, keep_passes=keep_passes))
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


def write_run(path: Path, points: list[sc.Scenario], summary: pd.DataFrame, results: list[Results]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    resolved = [{**p.model_dump(exclude={"sweep"}, exclude_none=True), "point": p.point,
                 "resolved_specs": p.specs.model_dump(exclude_none=True)} for p in points]
    (path / "scenario.resolved.yaml").write_text(yaml.safe_dump_all(resolved, sort_keys=False))
    summary.to_csv(path / "summary.csv", index=False)
    _concat(results, "requests").to_csv(path / "requests.csv", index=False)
    _concat(results, "iterations").to_csv(path / "iterations.csv", index=False)
    counts = pd.concat([pd.DataFrame({"point": i, "accepted": range(len(r.accept_counts)), "count": r.accept_counts})
                        for i, r in enumerate(results)], ignore_index=True)
    counts.to_csv(path / "accept_counts.csv", index=False)
    if any(r.passes is not None and len(r.passes) for r in results):
        _concat(results, "passes").to_csv(path / "passes.csv", index=False)


def _concat(results: list[Results], attr: str) -> pd.DataFrame:
    return pd.concat([getattr(r, attr).assign(point=i) for i, r in enumerate(results)], ignore_index=True)


TABLE = {"design": "design", "steps": "S", "concurrency": "conc", "rate_per_s": "rate/s", "tps": "TPS",
         "per_user_tps": "user TPS", "ttft_p50_s": "TTFT p50 ms", "ttft_p99_s": "TTFT p99 ms",
         "tpot_p50_s": "TPOT p50 ms", "tpot_p99_s": "TPOT p99 ms", "accept_length": "AL", "speedup": "speedup",
         "draft_share": "draft%", "verify_share": "verify%", "extend_share": "extend%",
         "prefill_share": "prefill%", "overhead_share": "host%"}


def format_table(summary: pd.DataFrame) -> str:
    """The run's table; swept keys the fixed columns do not show get a column of their own."""
    shown = {"workload.concurrency", "speculative.steps", "speculative.design", "workload.rate_per_s"}
    swept = [c for c in summary.columns if "." in c and c not in shown]
    df = summary[[c for c in TABLE if c in summary.columns] + swept].copy()
    df = df.rename(columns={c: c.split(".")[-1] for c in swept})
    if df.rate_per_s.isna().all():
        df = df.drop(columns="rate_per_s")
    for col in df.columns:
        if col.endswith("_s") and not col.endswith("_per_s"):  # seconds shown as ms; rates as they are
            df[col] = df[col] * 1e3
        if col.endswith("_share"):
            df[col] = df[col] * 100
    df = df.rename(columns=TABLE)
    return df.to_string(index=False, float_format=lambda x: f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}")


def _pricing(points: list[sc.Scenario]) -> str:
    """What priced the run (one cost model, or each one a sweep used)."""
    return ", ".join(dict.fromkeys(p.specs.pricing for p in points))


def default_jobs(n_points: int) -> int:
    return max(1, min(n_points, os.cpu_count() or 1))


def run_scenario(path: str, sets: list[str], out: str | None, jobs: int | None,
                 plot: bool = False, trace: bool = False) -> tuple[Path, pd.DataFrame]:
    """Load, simulate, print, write (plots and trace.json on request). Returns the run folder and the summary."""
    points = sc.load(path, sets)
    folder = output_dir(points[0].name, out)
    started = time.perf_counter()
    summary, results = run_points(points, jobs or default_jobs(len(points)), keep_passes=trace)
    write_run(folder, points, summary, results)
    if trace:
        from mtpsim.trace import write_trace
        write_trace(folder / "trace.json", _concat(results, "passes"), summary)
    if plot:
        plot_run(folder, points)
    s = points[0]
    if s.question:  # the question as written, and what --set changed of the scenario it asks about
        print(f"Q: {s.question}" + (f" (with --set {', '.join(sets)})" if sets else ""))
    print(f"{s.name}: {s.specs.model.name} on {s.parallel.dp}x{s.parallel.tp} {s.specs.hardware.name}, "
          f"engine {s.specs.engine.name}, priced by {_pricing(points)}, {len(points)} point(s) in "
          f"{time.perf_counter() - started:.1f} s\n")
    print(format_table(summary))
    if any(r.iterations_truncated for r in results):
        print("\n(iterations.csv keeps the first rows of very long runs; the summary counts every iteration)")
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
    docs = list(yaml.safe_load_all((Path(folder) / "scenario.resolved.yaml").read_text()))
    points = []
    for doc in docs:
        point = doc.pop("point", {}) or {}
        doc.pop("resolved_specs", None)
        points.append(sc.validate(doc, str(folder / "scenario.resolved.yaml"), point))
    return points


def plot_run(folder: Path, points: list[sc.Scenario] | None = None) -> list[Path]:
    """Draw the run folder's PNGs from its CSVs (and memory budgets from its scenario)."""
    from mtpsim.plots import write_plots
    folder = Path(folder)
    if not (folder / "summary.csv").is_file():
        raise ScenarioError(str(folder), "", "not a run folder (no summary.csv)")
    read = lambda name: pd.read_csv(folder / name) if (folder / name).is_file() else None  # noqa: E731
    try:
        memory = memory_frame(points or load_run_points(folder))
    except (ScenarioError, OSError) as exc:
        print(f"(memory plot skipped: {exc})")
        memory = None
    paths = write_plots(folder, read("summary.csv"), read("accept_counts.csv"), read("iterations.csv"),
                        read("passes.csv"), memory)
    print(f"plots: {', '.join(p.name for p in paths)}")
    return paths
