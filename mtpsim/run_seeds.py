"""Seed replicates in `mtpsim run`: `--seeds N` as typed, the runs a point makes over its seeds
(seed, seed + 1, ...), the columns that tell those runs apart in the run folder's CSVs, the
warning where a sweep over `seed` makes points share replicates, and summary_ci.csv's rows (means
and 95% intervals over the seeds, by mtpsim/intervals.py).
"""
from __future__ import annotations

from pydantic import TypeAdapter, ValidationError

from mtpsim import scenario as sc
from mtpsim.errors import ScenarioError, warn
from mtpsim.limits import MAX_POINT_RUNS
from mtpsim.schema import MAX_SEEDS, Seeds, check_replicates
from mtpsim.textnumbers import whole_number

SEEDS = TypeAdapter(Seeds)


def seeds_count(seeds: str | int | None) -> int | None:
    """`--seeds N` as typed -> N (a bad one is a ScenarioError naming --seeds); None: not given."""
    if seeds is None:
        return None
    try:
        return SEEDS.validate_python(seeds if isinstance(seeds, int) else _whole(seeds))
    except ValueError as exc:  # not a whole number, or pydantic's ValidationError (a ValueError)
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"{seeds!r} is not a whole number"
        raise ScenarioError("--seeds", "", f"{reason} (replicates per point, 1..{MAX_SEEDS})") from None


def _whole(text: str) -> int:
    value = whole_number(text)
    if value is None:
        raise ValueError(text)
    return value


def with_seeds(points: list[sc.Scenario], seeds: str | int | None) -> list[sc.Scenario]:
    """`--seeds N` over every point's `seeds` (N as typed; a bad one is a ScenarioError naming
    --seeds). The points are loaded with `seeds` fixed (scenario.load): a sweep over it stops."""
    n = seeds_count(seeds)
    if n is None:
        return points
    for p in points:
        check_replicates(p.seed, n, "--seeds", "")
    return [p.model_copy(update={"seeds": n}) for p in points]


def check_run_count(points: list[sc.Scenario], seeds: str | int | None) -> None:
    """A ScenarioError where the points over their seeds make more than MAX_POINT_RUNS runs: each
    limit alone (10,000 sweep points, 1,000 seeds) lets through a product of ten million runs,
    days of simulation without a word. Blamed on --seeds when the flag gave the count, else on
    the scenario's `seeds` (--set's when it gave them), or its sweep over them."""
    total = sum(p.seeds for p in points)
    if total <= MAX_POINT_RUNS or all(p.seeds == 1 for p in points):
        return  # one seed each: the sweep's own limit (MAX_SWEEP_POINTS) is the rule
    swept = any("seeds" in p.point for p in points)
    where, key = ("--seeds", "") if seeds is not None else (points[0].source, "sweep.seeds" if swept else "seeds")
    most = max(p.seeds for p in points)
    made = f"{len(points):,} points x {most:,} seeds" if all(p.seeds == most for p in points) else \
        f"{len(points):,} points over their seeds (up to {most:,})"
    raise ScenarioError(where, key, f"{made} is {total:,} runs, over the limit of {MAX_POINT_RUNS:,} per run "
                        "(fewer seeds, or a smaller sweep: split the study over several scenario files)")


def shared_seeds(points: list[sc.Scenario]) -> None:
    """One warning where a sweep over `seed` gives points replicate ranges that overlap (seeds
    [0, 1] at 2 seeds each run 0, 1 and 1, 2): those points share runs (and baselines), so their
    intervals are not independent, and a shared baseline is run once, for the first point."""
    if not any("seed" in p.point for p in points):
        return
    firsts, most = sorted({p.seed for p in points}), max(p.seeds for p in points)
    close = next(((a, b) for a, b in zip(firsts, firsts[1:]) if b - a < most), None)
    if close is not None:
        a, b = close
        shared = f"seed {b}" if b == a + most - 1 else f"seeds {b}..{a + most - 1}"
        warn(points[0].source, "sweep.seed", f"seeds {a} and {b} are under {most} apart, and each point runs {most} "
             f"seeds from its own: their replicates share {shared} (sweep seeds at least "
             f"{most} apart, or sweep nothing and let seeds replicate)")


def replicates(s: sc.Scenario) -> list[sc.Scenario]:
    """The point once per seed: seed, seed + 1, ..., seed + seeds - 1 (itself when seeds is 1)."""
    return [s] if s.seeds == 1 else [s.model_copy(update={"seed": s.seed + k}) for k in range(s.seeds)]


def run_labels(points: list[sc.Scenario]) -> list[dict]:
    """Per point run, the columns that tell its rows apart in requests.csv and the others:
    `point`, and `seed` when any point runs over several seeds."""
    if all(s.seeds == 1 for s in points):
        return [{"point": i} for i in range(len(points))]
    return [{"point": i, "seed": r.seed} for i, s in enumerate(points) for r in replicates(s)]


def interval_summary(summary):
    """summary_ci.csv: a replicated run's per-seed summary (a DataFrame, or rows) -> one row per
    point and per baseline (points first), with means, 95% intervals and the `overlaps` flag
    (intervals.seed_intervals)."""
    import pandas as pd

    from mtpsim.intervals import seed_intervals
    summary = pd.DataFrame(summary) if isinstance(summary, list) else summary
    unit = summary.point.astype(str).where(summary.point >= 0, "baseline " + summary.baseline.astype(str))
    out = seed_intervals(summary.assign(unit=unit), "unit", "baseline").drop(columns="unit")
    cols = list(summary.columns)
    if {"dp", "tps"} <= set(cols) and cols.index("dp") < cols.index("seed") < cols.index("tps"):
        # a swept seed (the swept keys sit between dp and tps, results.py) tells the points apart:
        # each keeps its first seed there, where the seeds' mean would otherwise drop it
        out.insert(cols.index("seed"), "seed", summary.groupby(unit, sort=False).seed.min().to_numpy())
    return out
