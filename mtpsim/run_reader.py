"""A finished run folder read back for `mtpsim plot` (runfolder.py writes it): its points, each
table checked as the run wrote it (columns, ranges, closed values) and against the others (the
same runs, seeds and names: a table copied in from another run is refused), then drawn."""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim import scenario as sc
from mtpsim.designs import RECORDS
from mtpsim.errors import ScenarioError, short, warn
from mtpsim.files import COUNT, TEXT, Column, load_yaml_documents, read_csv, read_text
from mtpsim.limits import MAX_SIM_S, MAX_STEPS, MAX_TPS
from mtpsim.results import (
    PASS_TIME_COLUMNS,
    TIME_COLUMNS,
    share_column,
)

if TYPE_CHECKING:
    import pandas as pd

from mtpsim.runfolder import COMPLETE, memory_frame  # the marker the writer leaves last, the memory table it sizes


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
# point -1: a baseline added by the run; a time or latency within the span one run simulates
POINT, TIME = Column(low=-1, integer=True), Column(low=0, high=MAX_SIM_S)
# TTFT and E2E have a value wherever TPS has one (a request finished); TPOT and ITL are blank in a
# run whose requests all emit one token
FINISHED, LATENCY = Column(low=0, high=MAX_SIM_S), Column(low=0, high=MAX_SIM_S, blank=True)
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
KEPT = {"requests_kept": COUNT, "requests_total": COUNT, "iterations_kept": COUNT,
        "ttft_mean_s": FINISHED, "e2e_mean_s": FINISHED, "tpot_mean_s": LATENCY}
# the summary's other latency columns (the means are KEPT's): plotted, so in a run's range
LATENCIES = {**{f"{m}_{q}_s": FINISHED for m in ("ttft", "e2e") for q in ("p50", "p99")},
             **{f"{m}_{q}_s": LATENCY for m in ("tpot", "itl", "itl_token") for q in ("p50", "p99", "mean")
                if f"{m}_{q}_s" != "tpot_mean_s"}}
SUMMARY |= LATENCIES
# columns a table holds only in some runs (a pass the design has, an open load, seeds): checked where present
OPTIONAL = {"rate_per_s", "seed", *KEPT, *LATENCIES, *(c for c in SUMMARY if c.endswith("_share"))}
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
    has rows for each, and where a run kept every request, its requests' mean latencies are
    summary.csv's (_same_latencies)."""
    folder = Path(folder)
    # over seeds a run writes `seed` and `baseline` into summary.csv and `seed` into the other
    # tables (run.run_rows, run_seeds.run_labels); a swept seed at one seed a point is a column of
    # summary.csv alone, as any swept key is, and labels no replicate
    replicated = "baseline" in summary
    labels = ["point", "seed"] if replicated else ["point"]
    runs = summary[summary.point >= 0]

    def mixed(name: str, key: str, reason: str) -> ScenarioError:
        return ScenarioError(str(folder / name), key, f"{reason}: the folder's tables come from different runs "
                             "(a file copied in from elsewhere?)")

    twice = runs[runs.duplicated(labels)]
    if len(twice):
        raise mixed("summary.csv", "point", f"{_run_name(twice.iloc[0], labels)} has more than one row")
    _no_repeated_row(summary, labels, mixed)
    _same_points(folder, "summary.csv", summary, names, mixed)
    if intervals is not None:
        _no_repeated_row(intervals, ["point"], mixed, "summary_ci.csv")  # one row of means per point and baseline
        _same_points(folder, "summary_ci.csv", intervals, names, mixed)
        if set(intervals.point[intervals.point >= 0]) != set(runs.point):
            raise mixed("summary_ci.csv", "point", f"holds points {_listed(intervals.point[intervals.point >= 0])}, "
                        f"and summary.csv points {_listed(runs.point)}")
    by_run = {tuple(int(row[c]) for c in labels): row for _, row in runs.iterrows()}
    for name, frame in tables.items():
        if frame is None:
            continue
        if ("seed" in frame) != replicated:
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
    if requests is not None and {"requests_kept", "requests_total"} <= set(runs):
        _same_latencies(requests, by_run, labels, mixed)


def _request_latencies(requests: pd.DataFrame) -> dict[str, tuple[str, str, pd.Series]]:
    """summary.csv's mean latency column -> (the requests.csv column that ends it, what it is,
    each request's value), as summary_columns.summarize computes them (TPOT over requests of
    more than one token)."""
    decoding = requests[requests.output_len > 1]
    return {"ttft_mean_s": ("first_token_s", "wait for their first token", requests.first_token_s - requests.arrival_s),
            "e2e_mean_s": ("finish_s", "take end to end", requests.finish_s - requests.arrival_s),
            "tpot_mean_s": ("finish_s", "take per output token after the first",
                            (decoding.finish_s - decoding.first_token_s) / (decoding.output_len - 1))}


def _same_latencies(requests: pd.DataFrame, by_run: dict, labels: list[str], mixed) -> None:
    """Where a run kept every request, its requests' mean TTFT, E2E and TPOT are summary.csv's
    (to float precision: the same numbers, written and read back): a request time edited within
    its range would otherwise draw a latency no run produced."""
    for column, (source, what, values) in _request_latencies(requests).items():
        for key, mean in values.groupby([requests.loc[values.index, c] for c in labels]).mean().items():
            row = by_run[tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))]
            if column not in row or row.requests_kept != row.requests_total or math.isnan(row[column]):
                continue
            if not math.isclose(mean, row[column], rel_tol=1e-9, abs_tol=1e-12):
                raise mixed("requests.csv", source, f"{_run_name(row, labels)}'s requests {what} {mean:.9g} s on "
                            f"average, and summary.csv's {column} says {row[column]:.9g} s")


def _no_repeated_row(summary: pd.DataFrame, labels: list[str], mixed, name: str = "summary.csv") -> None:
    """No row of a summary table (`name`) twice: a run writes each point and each baseline once
    (over seeds a baseline is told apart by its `baseline` group, in summary.csv and in
    summary_ci.csv's means; without seeds, a row equal to another in every column, wall time
    included, is one written twice)."""
    key = [*labels, "baseline"] if "baseline" in summary else list(summary.columns)
    again = summary.duplicated(key, keep=False).to_numpy().nonzero()[0]
    if len(again):
        raise mixed(name, "point", f"rows {again[0] + 2} and {again[1] + 2} are the same run "
                    f"({_run_name(summary.iloc[again[0]], labels)})")


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
