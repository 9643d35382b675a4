"""A finished run folder read back for `mtpsim plot` (runfolder.py writes it): its points, each
table checked as the run wrote it (columns, ranges, closed values) and against the others
(run_agreement.py: the same runs, seeds and names; a table copied in from another run is
refused), then drawn."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim import scenario as sc
from mtpsim.designs import RECORDS
from mtpsim.errors import ScenarioError, short, warn
from mtpsim.files import COUNT, TEXT, Column, load_yaml_documents, read_csv
from mtpsim.limits import MAX_SIM_S, MAX_STEPS, MAX_TPS
from mtpsim.results import (
    PASS_TIME_COLUMNS,
    TIME_COLUMNS,
    share_column,
)
from mtpsim.run_agreement import same_run

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
        if path.exists() or path.is_symlink():  # a folder, a dangling link: not the table a run wrote
            raise ScenarioError(str(path), "", "not a file: a run writes it as a CSV (was the run folder edited?)")
        if required:
            raise ScenarioError(str(folder), "", f"incomplete run folder: no {name}")
        return None
    optional = tuple(c for c in RUN_TABLES[name] if c in OPTIONAL)
    frame = read_csv(path, RUN_TABLES[name], optional=optional, written_whole="was the run interrupted?")
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
    if requests is None:  # `mtpsim run` writes it: a folder without it lost it, or is older than the latency plot
        warn(str(folder / "requests.csv"), "", "absent: latency.png, drawn from each request's latencies, is skipped")
    if passes is not None and not (passes.point == 0).any():  # the timeline is point 0's
        raise ScenarioError(str(folder / "passes.csv"), "point", "no row for point 0")
    intervals = read_run_table(folder, "summary_ci.csv", required=False)
    names, drafts = ([p.name for p in points], [_draft_of(p.model_dump()) for p in points]) if points \
        else _resolved_points(folder)
    same_run(folder, summary, intervals, {"requests.csv": requests, "iterations.csv": iterations, "accept_counts.csv": counts,
                                          "passes.csv": passes}, names, drafts)
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


def _resolved_points(folder: Path) -> tuple[list[str] | None, list[dict | None] | None]:
    """Each point's scenario name and the settings a summary row carries (_draft_of), from the
    folder's scenario.resolved.yaml; (None, None) without the file
    (plot_run says so as it skips the memory plot). A file that is there but is not one mapping
    with a name per point is refused: the tables could not be checked against the run's points,
    and a folder whose tables were copied in from another run would be drawn as this one."""
    path = Path(folder) / "scenario.resolved.yaml"
    if not path.is_file():
        return None, None
    docs = load_yaml_documents(str(path))  # its ScenarioError names the file and what is wrong
    if not docs or not all(isinstance(d, dict) and isinstance(d.get("name"), str) for d in docs):
        raise ScenarioError(str(path), "", "not one scenario with a name per point, as `mtpsim run` writes it: the "
                            "folder's tables cannot be checked against its points")
    return [d["name"] for d in docs], [_draft_of(d) for d in docs]


def _draft_of(doc: dict) -> dict | None:
    """A resolved point's settings a summary row carries, as written where they are (design, steps,
    topk, draft_tokens, and a closed loop's concurrency); None where its speculative section has no design."""
    spec, load = doc.get("speculative"), doc.get("workload")
    if not isinstance(spec, dict) or not isinstance(spec.get("design"), str):
        return None
    out = {"design": spec["design"]}
    out |= {k: spec[k] for k in ("steps", "topk", "draft_tokens") if type(spec.get(k)) is int}
    if isinstance(load, dict) and load.get("arrival") == "closed" and type(load.get("concurrency")) is int:
        out["concurrency"] = load["concurrency"]
    return out


def _first_seed(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of point 0's first seed (the one point whose timeline is drawn)."""
    if frame is None or "seed" not in frame or not len(frame):
        return frame
    return frame[frame.seed == frame.seed[frame.point == 0].min()]
