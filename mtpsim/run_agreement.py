"""Whether a run folder's tables come from one run (run_reader.py reads each, checked on its own,
then asks this): the same points, seeds and scenario names in each, no repeated row, and, where a
run kept every request, requests.csv's mean latencies equal to summary.csv's. A table copied in
from another run is refused, naming it."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim.errors import ScenarioError, short
from mtpsim.files import file_row, first_repeat_rows

if TYPE_CHECKING:
    import pandas as pd


def same_run(folder: Path, summary: pd.DataFrame, intervals: pd.DataFrame | None, tables: dict[str, pd.DataFrame | None],
             names: list[str] | None, drafts: list[dict | None] | None = None) -> None:
    """That the folder's tables are one run's, as `mtpsim run` wrote them together, else a
    ScenarioError naming the table that disagrees (a file copied in from another run, or from a
    run of another scenario): summary.csv's point runs (point, and seed over seeds) are once each,
    are the scenario's points under their names (scenario.resolved.yaml, where it can be read),
    and are summary_ci.csv's; every other table's rows are labelled with those runs, requests.csv
    and iterations.csv hold as many rows for each as summary.csv says it kept, accept_counts.csv
    has rows for each, and where a run kept every request, its requests' mean latencies are
    summary.csv's (_same_latencies). `drafts`: each point's settings the scenario gives (design,
    steps, topk, draft_tokens, closed-loop concurrency), which its summary rows must carry (_same_drafts)."""
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
    _same_drafts("summary.csv", summary, drafts, mixed)
    if intervals is not None:
        _no_repeated_row(intervals, ["point"], mixed, "summary_ci.csv")  # one row of means per point and baseline
        _same_points(folder, "summary_ci.csv", intervals, names, mixed)
        _same_drafts("summary_ci.csv", intervals, drafts, mixed)
        if set(intervals.point[intervals.point >= 0]) != set(runs.point):
            raise mixed("summary_ci.csv", "point", f"holds points {_listed(intervals.point[intervals.point >= 0])}, "
                        f"and summary.csv points {_listed(runs.point)}")
    by_run = {tuple(int(row[c]) for c in labels): row for _, row in runs.iterrows()}
    for name, frame in tables.items():
        if frame is not None:
            _table_of_the_runs(name, frame, runs, by_run, labels, replicated, mixed)
    requests = tables.get("requests.csv")
    if requests is not None and {"requests_kept", "requests_total"} <= set(runs):
        _same_latencies(requests, by_run, labels, mixed)


def _table_of_the_runs(name: str, frame: pd.DataFrame, runs: pd.DataFrame, by_run: dict, labels: list[str],
                       replicated: bool, mixed) -> None:
    """One table's rows are labelled with summary.csv's runs (seed column too over seeds), as many
    as summary.csv says each kept (requests.csv, iterations.csv), and accept_counts.csv has rows
    for each, within its point's steps."""
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
    if name == "accept_counts.csv" and "steps" in runs:
        _accepted_within_steps(frame, by_run, labels, mixed)


def _accepted_within_steps(counts: pd.DataFrame, by_run: dict, labels: list[str], mixed) -> None:
    """No run accepts more drafts in a step than its point drafts (summary.csv's steps; design none
    drafts none): a row past them was written by no run of this scenario."""
    most = counts[counts["count"] > 0].groupby(labels).accepted.max()
    for key, top in most.items():
        row = by_run[tuple(int(v) for v in (key if isinstance(key, tuple) else (key,)))]
        steps = 0 if row.get("design") == "none" else row.get("steps")
        if steps is not None and not math.isnan(float(steps)) and top > steps:
            drafts = "drafts nothing (design none)" if row.get("design") == "none" else \
                f"drafts {int(steps)} token{'s' * (int(steps) != 1)} a step"
            raise mixed("accept_counts.csv", "accepted", f"{int(top)} draft{'s' * (int(top) != 1)} accepted in a step "
                        f"of {_run_name(row, labels)}, which {drafts}")


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
    again = first_repeat_rows(summary, key)
    if again is not None:
        raise mixed(name, "point", f"rows {file_row(summary, again[0])} and {file_row(summary, again[1])} are the same "
                    f"run ({_run_name(summary.iloc[again[0]], labels)})")


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


def _same_drafts(name: str, frame: pd.DataFrame, drafts: list[dict | None] | None, mixed) -> None:
    """Each point's rows run the settings its scenario gives (design; steps, topk and draft_tokens
    where it drafts; the closed loop's users), and every baseline row (point -1) plain decoding:
    an edited or copied-in row would be drawn as another setting's."""
    if drafts is None or "design" not in frame:
        return
    for i, row in enumerate(frame.to_dict("records")):
        point = row["point"]
        if point < 0:
            if row["design"] != "none":
                raise mixed(name, "design", f"{short(str(row['design']), 40)} at a baseline row ({file_row(frame, i)}), which "
                            "runs plain decoding (none)")
            continue
        want = drafts[point] if point < len(drafts) else None
        if want is None:
            continue
        drafting = want.get("design") != "none"
        for key, value in want.items():
            if key not in row or value is None or (key in ("steps", "topk", "draft_tokens") and not drafting):
                continue
            if row[key] != value:
                raise mixed(name, key, f"{short(row[key], 40)} at point {point}, and scenario.resolved.yaml runs "
                            f"{short(value, 40)}")


def _run_name(row, labels: list[str]) -> str:
    """`point 0`, or `point 1, seed 3`."""
    return ", ".join(f"{c} {int(row[c])}" for c in labels)


def _listed(points) -> str:
    """Point numbers, sorted: `0, 1`, or `0, 1, 2, ... (12 in all)`."""
    values = sorted({int(p) for p in points})
    return ", ".join(map(str, values)) if len(values) <= 4 else f"{', '.join(map(str, values[:3]))}, ... ({len(values)} in all)"
