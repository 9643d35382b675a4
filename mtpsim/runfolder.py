"""The run folder: claimed exclusively before a run simulates anything, written when it ends
(`write_run`), and read back, checked, by `mtpsim plot` (`plot_run`). What the files hold is
described in run.py's docstring; what `plot` needs of them is RUN_TABLES.
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim import scenario as sc
from mtpsim.designs import BASELINE, RECORDS, DesignShape
from mtpsim.errors import ScenarioError, short, warn
from mtpsim.files import COUNT, TEXT, Column, dump_yaml_all, load_yaml_documents, read_csv, read_text
from mtpsim.limits import MAX_STEPS, MAX_TPS
from mtpsim.outputs import writing
from mtpsim.results import (
    ITERATION_COLUMNS,
    PASS_COLUMNS,
    PASS_TIME_COLUMNS,
    REQUEST_COLUMNS,
    TIME_COLUMNS,
    Results,
    share_column,
)
from mtpsim.rows import Table
from mtpsim.rows import write_csv as write_table
from mtpsim.schema import mean_length
from mtpsim.textfiles import not_a_folder

if TYPE_CHECKING:
    import pandas as pd

CLAIM = ".mtpsim-run"  # created exclusively in a run folder before anything is simulated
COMPLETE = ".mtpsim-complete"  # written last, once every table is whole (mark_complete)


def output_dir(name: str, out: str | None) -> Path:
    """The run folder, claimed before simulating: new, or an existing empty one, never one with
    files in it, and never one another run is writing into (the claim file is created
    exclusively, so of two runs started into one folder only one proceeds)."""
    path = Path(out) if out else _new_default(name)
    busy = ScenarioError(str(path), "", "output folder exists and is not empty (nothing overwritten); "
                         "pass another --out")
    if path.exists() and not path.is_dir():
        raise ScenarioError(str(path), "", f"{not_a_folder(path)}: pass another --out")
    if path.is_dir() and any(path.iterdir()):
        raise busy
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path / CLAIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # made meanwhile, or a link to nothing
        raise (busy if path.is_dir() else ScenarioError(str(path), "", f"{not_a_folder(path)}: pass another --out")) \
            from None
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot create the run folder: {exc.strerror or exc}") from None
    return path


def _new_default(name: str) -> Path:
    """runs/<name>-<timestamp>, or -2, -3, ... after it when runs started in the same second
    made those: created here (exclusively), so two runs never share a default folder."""
    stem = Path("runs") / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    for n in range(1, 10_000):
        path = stem if n == 1 else stem.with_name(f"{stem.name}-{n}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise ScenarioError(str(path), "", f"cannot create the run folder: {exc.strerror or exc}") from None
    raise ScenarioError(str(stem), "", "10,000 runs of this name started this second: pass --out")


@contextmanager
def claimed(name: str, out: str | None) -> Iterator[Path]:
    """`output_dir`'s folder for the length of a command, which prints its report within (after
    mark_complete): the report is flushed to stdout before the block ends. A command that fails
    anywhere in the block (a bad point, an unreachable cluster, a full disk, a stdout it cannot
    write, Ctrl-C) gives its claim back and its completion marker too, so that no later command
    reads the folder as done, and the folder itself while nothing else is in it when this
    command made it, so that the same --out can be used again; what it had already written stays.
    A reader that left (`| head`, a BrokenPipeError: status 0) takes nothing from a finished folder."""
    made = out is None or not Path(out).exists()  # a folder this run creates; an empty one given by --out stays
    path = output_dir(name, out)
    try:
        yield path
        sys.stdout.flush()  # a full or closed stdout fails here, while the folder can still be unmarked
    except BaseException as exc:
        if not (isinstance(exc, BrokenPipeError) and (path / COMPLETE).is_file()):
            (path / COMPLETE).unlink(missing_ok=True)
            (path / CLAIM).unlink(missing_ok=True)
            if made and not any(path.iterdir()):
                path.rmdir()
        raise


def write_run(path: Path, points: list[sc.Scenario], summary: list[dict], results: list[Results],
              labels: list[dict], intervals=None) -> None:
    """The run's files: the resolved scenario, summary.csv from the summary rows (and summary_ci.csv
    over seeds, a DataFrame), and requests, iterations, accept counts and passes with the `labels`
    (point, seed) of each result, each as DataFrame.to_csv wrote them (mtpsim/rows.py). A file
    that cannot be written is a ScenarioError naming it; the folder is not `complete`."""
    resolved = [{**p.model_dump(exclude={"sweep"}, exclude_none=True), "point": p.point,
                 "resolved_specs": p.specs.model_dump(exclude_none=True)} for p in points]
    with writing(path / "scenario.resolved.yaml") as file:
        file.write_text(dump_yaml_all(resolved, sort_keys=False))
    write_table(Table.of_rows(summary), path / "summary.csv")
    if intervals is not None:
        write_csv(intervals, path / "summary_ci.csv")
    write_table(labelled(results, "request_rows", REQUEST_COLUMNS, labels), path / "requests.csv")
    write_table(labelled(results, "iteration_rows", ITERATION_COLUMNS, labels), path / "iterations.csv")
    counts = [(*label.values(), j, count) for label, r in zip(labels, results)
              for j, count in enumerate(r.accept_counts.tolist())]
    write_table(Table.of_tuples([*labels[0], "accepted", "count"], counts), path / "accept_counts.csv")
    if any(r.pass_rows for r in results):
        write_table(labelled(results, "pass_rows", PASS_COLUMNS, labels), path / "passes.csv")


def labelled(results: list[Results], attr: str, columns: list[str], labels: list[dict]) -> Table:
    """One of the results' row lists (request_rows, iteration_rows, pass_rows) for all, as columns,
    each row with its result's label columns after its own."""
    table = {name: [] for name in [*columns, *labels[0]]}
    for label, r in zip(labels, results):
        rows = getattr(r, attr)
        for name, column in zip(columns, zip(*rows)):
            table[name].extend(column)
        for name, value in label.items():
            table[name].extend([value] * len(rows))
    return Table.of_columns(table)


def write_csv(frame, path: Path) -> None:
    """One output DataFrame, or a ScenarioError naming it (outputs.writing)."""
    with writing(path):
        frame.to_csv(path, index=False)


def mark_complete(path: Path) -> None:
    """The last file a command writes into its folder: every table in it is whole. `plot` reads
    only folders that have it, so a run that died (a full disk, Ctrl-C) is never read as done."""
    with writing(path / COMPLETE) as file:
        file.write_text("")


def concat(results: list[Results], attr: str, labels: list[dict]):
    """One of the results' frames (requests, iterations, passes) for all, each with its label columns."""
    import pandas as pd
    return pd.concat([getattr(r, attr).assign(**label) for label, r in zip(labels, results)], ignore_index=True)


def memory_frame(points: list[sc.Scenario]) -> pd.DataFrame:
    """Per-GPU memory budget of each distinct design in the run (and `none`): weights, KV budget,
    and max concurrent requests at the workload's mean input + output length."""
    import pandas as pd

    from mtpsim.costs import build_pricer
    from mtpsim.memory import memory_budget, pool_rule
    from mtpsim.report import budget_columns
    from mtpsim.sim import point_text
    rows = {}
    for s in points:
        pricer, context = build_pricer(s), mean_length(s.workload.input_len) + mean_length(s.workload.output_len)
        for d in (DesignShape(BASELINE), DesignShape.of(s.speculative)):
            label = d.label + "".join(f", {k.split('.')[-1]}={point_text(v)}" for k, v in s.point.items()
                                      if k.startswith("model") and d.design != BASELINE)
            m = memory_budget(pricer, d, pool_rule(s, d.design))
            rows.setdefault((label, context), {
                "label": label, "design": d.design, "steps": d.steps,
                "context": context, **budget_columns(m), "target_weights_GB": m.target_weight_bytes / 1e9,
                "draft_weights_GB": m.draft_weight_bytes / 1e9, "kv_budget_GB": m.kv_budget_bytes / 1e9,
                "max_requests": m.max_requests(context)})
    return pd.DataFrame(list(rows.values()))


def load_run_points(folder: Path) -> list[sc.Scenario]:
    """The points of a finished run, from its scenario.resolved.yaml."""
    where = str(Path(folder) / "scenario.resolved.yaml")
    docs = load_yaml_documents(where)
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ScenarioError(where, "", "not a resolved scenario (one mapping per point)")
    points = []
    for doc in docs:
        point = doc.pop("point", {}) or {}
        doc.pop("resolved_specs", None)
        points.append(sc.validate(doc, str(folder / "scenario.resolved.yaml"), point))
    return points


# what `mtpsim plot` reads from a run folder, each value in the range a run writes (a hand-edited
# 1e308 tok/s or 1e8 accepted drafts would make a plot's axis or histogram without end)
POINT, TIME = Column(low=-1, integer=True), Column(low=0)  # point -1: a baseline added by the run
TPS = Column(low=0, high=MAX_TPS)
RATIO = Column(low=0, high=MAX_TPS, blank=True)  # per-user TPS, speedup: blank where they do not apply
SHARE = Column(low=0, high=1, blank=True)  # a share of busy time
SEED = Column(low=0, integer=True)
SUMMARY = {"point": POINT, "name": TEXT, "design": TEXT, "steps": Column(low=0, high=MAX_STEPS, integer=True),
           "concurrency": Column(low=1, integer=True, blank=True), "rate_per_s": Column(low=0, blank=True),
           "tps": TPS, "per_user_tps": RATIO, "speedup": RATIO, "accept_length": Column(low=1, high=MAX_STEPS + 1, blank=True),
           **dict.fromkeys((*(share_column(c) for c in PASS_TIME_COLUMNS), "host_share"), SHARE)}
# what each point run kept and measured, which its other tables must agree with (same_run); absent
# from the run folders of versions before them, so optional
KEPT = {"requests_kept": COUNT, "requests_total": COUNT, "iterations_kept": COUNT, "ttft_mean_s": Column(low=0, blank=True)}
# columns a table holds only in some runs (a pass the design has, an open load, seeds): checked where present
OPTIONAL = {"rate_per_s", "seed", *KEPT, *(c for c in SUMMARY if c.endswith("_share"))}
RUN_TABLES = {
    "summary.csv": {**SUMMARY, "seed": SEED, **KEPT},
    "iterations.csv": {"point": POINT, "seed": SEED, "replica": Column(low=0, integer=True), "kind": TEXT, "start_s": TIME,
                       "duration_s": TIME, **dict.fromkeys(TIME_COLUMNS, TIME)},
    "accept_counts.csv": {"point": POINT, "accepted": Column(low=0, high=MAX_STEPS, integer=True),
                          "count": Column(low=0)},
    "passes.csv": {"point": POINT, "seed": SEED, "replica": Column(low=0, integer=True), "start_s": TIME, "duration_s": TIME,
                   "kind": TEXT, "tokens": Column(low=0)},
    "requests.csv": {"point": POINT, "seed": SEED, "arrival_s": TIME, "first_token_s": TIME, "finish_s": TIME,
                     "output_len": Column(low=1, integer=True)},
    "summary_ci.csv": SUMMARY,
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
    optional = tuple(c for c in RUN_TABLES[name] if c in OPTIONAL)
    frame = read_csv(path, RUN_TABLES[name], optional=optional)
    for column, allowed in (("design", tuple(RECORDS)), *RUN_VALUES.get(name, {}).items()):
        if column in frame:
            unknown = sorted(set(frame[column].astype(str)) - set(allowed))
            if unknown:
                what = "is no design" if column == "design" else "is not one a run writes"
                raise ScenarioError(str(path), column, f"{short(unknown[0], 40)} {what} (one of {', '.join(allowed)})")
    return frame


# the closed sets of text a run writes (a value outside them would be drawn nowhere, silently)
RUN_VALUES = {"iterations.csv": {"kind": ("decode", "prefill")},
              "passes.csv": {"kind": ("decode", "draft", "verify", "extend", "prefill")}}


def plot_run(folder: Path, points: list[sc.Scenario] | None = None) -> list[Path]:
    """Draw the run folder's PNGs from its CSVs (and memory budgets from its scenario)."""
    from mtpsim.plots import write_plots
    folder = Path(folder)
    if not folder.is_dir():
        raise ScenarioError(str(folder), "", "no such folder" if not folder.exists() else
                            "not a folder: name the run folder `mtpsim run` wrote")
    if not (folder / "summary.csv").is_file():
        raise ScenarioError(str(folder), "", "not a run folder (no summary.csv)")
    if not (folder / COMPLETE).is_file():
        raise ScenarioError(str(folder), "", f"incomplete run folder: no {COMPLETE} (the run that wrote it "
                            "failed, was interrupted, or is still running)")
    summary = read_run_table(folder, "summary.csv")
    if not (summary.point == 0).any():
        raise ScenarioError(str(folder / "summary.csv"), "point", "no row for point 0")
    tables = [read_run_table(folder, name) for name in ("accept_counts.csv", "iterations.csv")]
    counts, iterations = tables
    if not (iterations.point == 0).any():  # point 0's timeline is drawn: an empty one would be a blank figure
        raise ScenarioError(str(folder / "iterations.csv"), "point", "no row for point 0")
    passes = read_run_table(folder, "passes.csv", required=False)
    requests = read_run_table(folder, "requests.csv", required=False)
    if passes is not None and not (passes.point == 0).any():  # the timeline is point 0's
        raise ScenarioError(str(folder / "passes.csv"), "point", "no row for point 0")
    intervals = read_run_table(folder, "summary_ci.csv", required=False)
    same_run(folder, summary, intervals, {"requests.csv": requests, "iterations.csv": iterations, "accept_counts.csv": counts,
                                          "passes.csv": passes}, [p.name for p in points] if points else _resolved_names(folder))
    memory = None
    try:
        memory = memory_frame(points or load_run_points(folder))
    except ScenarioError as exc:  # the other figures need only the CSVs: drawn, with one line on stderr
        warn(exc.where, exc.key, f"{exc.reason} (the memory plot is skipped)")
    except OSError as exc:
        warn(str(folder / "scenario.resolved.yaml"), "", f"{exc.strerror or exc} (the memory plot is skipped)")
    if intervals is not None:  # over seeds: their means, and one seed's timeline
        summary, iterations, passes = intervals, _first_seed(iterations), _first_seed(passes)
        requests = _first_seed(requests)
        if not (summary.point == 0).any():
            raise ScenarioError(str(folder / "summary_ci.csv"), "point", "no row for point 0")
    with warnings.catch_warnings(record=True) as caught:  # a library's warning is one mtpsim line, not its own
        warnings.simplefilter("always")
        paths = write_plots(folder, summary, counts, iterations, passes, memory, requests)
    if caught:
        warn(str(folder), "", f"drawing its plots: {caught[0].message} ({caught[0].category.__name__})")
    print(f"plots: {', '.join(p.name for p in paths)}")
    return paths


def _resolved_names(folder: Path) -> list[str] | None:
    """Each point's scenario name, from the folder's scenario.resolved.yaml (None where it cannot
    be read as one mapping per point: plot_run says so as it skips the memory plot)."""
    try:
        docs = load_yaml_documents(str(Path(folder) / "scenario.resolved.yaml"))
    except (ScenarioError, OSError):
        return None
    if not docs or not all(isinstance(d, dict) and isinstance(d.get("name"), str) for d in docs):
        return None
    return [d["name"] for d in docs]


def same_run(folder: Path, summary: pd.DataFrame, intervals: pd.DataFrame | None, tables: dict[str, pd.DataFrame | None],
             names: list[str] | None) -> None:
    """That the folder's tables are one run's, as `mtpsim run` wrote them together, else a
    ScenarioError naming the table that disagrees (a file copied in from another run, or from a
    run of another scenario): summary.csv's point runs (point, and seed over seeds) are once each,
    are the scenario's points under their names (scenario.resolved.yaml, where it can be read),
    and are summary_ci.csv's; every other table's rows are labelled with those runs, requests.csv
    and iterations.csv hold as many rows for each as summary.csv says it kept, accept_counts.csv
    has rows for each, and where a run kept every request, its requests' mean time to first token
    is summary.csv's (to float precision: the same numbers, written and read back)."""
    folder = Path(folder)
    labels = ["point", "seed"] if "seed" in summary else ["point"]
    runs = summary[summary.point >= 0]

    def mixed(name: str, key: str, reason: str) -> ScenarioError:
        return ScenarioError(str(folder / name), key, f"{reason}: the folder's tables come from different runs "
                             "(a file copied in from elsewhere?)")

    twice = runs[runs.duplicated(labels)]
    if len(twice):
        raise mixed("summary.csv", "point", f"{_run_name(twice.iloc[0], labels)} has more than one row")
    _same_points(folder, "summary.csv", summary, names, mixed)
    if intervals is not None:
        _same_points(folder, "summary_ci.csv", intervals, names, mixed)
        if set(intervals.point[intervals.point >= 0]) != set(runs.point):
            raise mixed("summary_ci.csv", "point", f"holds points {_listed(intervals.point[intervals.point >= 0])}, "
                        f"and summary.csv points {_listed(runs.point)}")
    by_run = {tuple(int(row[c]) for c in labels): row for _, row in runs.iterrows()}
    for name, frame in tables.items():
        if frame is None:
            continue
        if ("seed" in frame) != ("seed" in summary):
            raise mixed(name, "seed", "has a seed column, and summary.csv's runs have none" if "seed" in frame else
                        "has no seed column, and summary.csv's runs are over seeds")
        counts = {tuple(int(v) for v in key): n for key, n in frame.value_counts(labels, sort=False).items()}
        stray = next((key for key in counts if key not in by_run), None)
        if stray is not None:
            raise mixed(name, "point", f"has rows for {_run_name(dict(zip(labels, stray)), labels)}, which summary.csv "
                        "does not hold")
        column = {"requests.csv": "requests_kept", "iterations.csv": "iterations_kept"}.get(name)
        for key, row in by_run.items():
            n = counts.get(key, 0)
            if column in row and n != row[column]:
                raise mixed(name, "point", f"{n:,} rows for {_run_name(row, labels)}, and summary.csv says that run "
                            f"kept {int(row[column]):,}")
            if name == "accept_counts.csv" and not n:
                raise mixed(name, "point", f"no rows for {_run_name(row, labels)}, which summary.csv holds")
    requests = tables.get("requests.csv")
    if requests is not None and {"requests_kept", "requests_total", "ttft_mean_s"} <= set(runs):
        waits = requests.first_token_s - requests.arrival_s
        for key, mean in waits.groupby([requests[c] for c in labels]).mean().items():
            row = by_run[tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))]
            whole = row.requests_kept == row.requests_total and not math.isnan(row.ttft_mean_s)
            if whole and not math.isclose(mean, row.ttft_mean_s, rel_tol=1e-9, abs_tol=1e-12):
                raise mixed("requests.csv", "first_token_s", f"{_run_name(row, labels)}'s requests wait {mean:.9g} s for "
                            f"their first token on average, and summary.csv says {row.ttft_mean_s:.9g} s")


def _same_points(folder: Path, name: str, frame: pd.DataFrame, names: list[str] | None, mixed) -> None:
    """A summary table's points are the scenario's (0 .. points - 1), each row under its point's
    name (a baseline's, point -1, under one of them): the names as written, not as pandas reads
    them (`007` would read as 7)."""
    if names is None:
        return
    points = frame.point[frame.point >= 0]
    if set(points) != set(range(len(names))):
        raise mixed(name, "point", f"holds points {_listed(points)}, and scenario.resolved.yaml has {len(names)} "
                    f"({_listed(range(len(names)))})")
    import pandas as pd
    written = pd.read_csv(folder / name, usecols=["name"], dtype=str, keep_default_na=False).name
    for point, text in zip(frame.point, written):
        if point >= 0 and text != names[point]:
            raise mixed(name, "name", f"{short(text, 40)} at point {point}, and scenario.resolved.yaml names it "
                        f"{short(names[point], 40)}")
        if point < 0 and text not in names:
            raise mixed(name, "name", f"{short(text, 40)} at a baseline, and scenario.resolved.yaml's points are "
                        f"{short(names[0], 40)}{' ...' if len(set(names)) > 1 else ''}")


def _run_name(row, labels: list[str]) -> str:
    """`point 0`, or `point 1, seed 3`."""
    return ", ".join(f"{c} {int(row[c])}" for c in labels)


def _listed(points) -> str:
    """Point numbers, sorted: `0, 1`, or `0, 1, 2, ... (12 in all)`."""
    values = sorted({int(p) for p in points})
    return ", ".join(map(str, values)) if len(values) <= 4 else f"{', '.join(map(str, values[:3]))}, ... ({len(values)} in all)"


def _first_seed(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of point 0's first seed (the one point whose timeline is drawn)."""
    if frame is None or "seed" not in frame or not len(frame):
        return frame
    return frame[frame.seed == frame.seed[frame.point == 0].min()]
