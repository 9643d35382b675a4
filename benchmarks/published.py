"""Predicted vs reported speedups for the published cases (shared/reference/published.md).

Run: .venv/bin/python benchmarks/published.py [--jobs N]     (about 20 s on 2 cores)

Each case is a scenario in scenarios/published/ that states, in its comments, what the source
reports and what had to be assumed. This script simulates them with the default (roofline)
cost model, nothing tuned per case, and prints for every reported point: the accept length
(reported, simulated), the speedup (reported, predicted), the error, and the iteration-cost
ratio r = AL / speedup (the cost of one draft+verify iteration over one plain decode step).
Why the misses miss is explained in notebooks/04-published.ipynb.
"""
from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mtpsim import scenario as sc
from mtpsim.run import run_points

FOLDER = Path(__file__).resolve().parent.parent / "scenarios" / "published"
BAR = 0.15  # DESIGN §12: within 15% of the reported speedup


@dataclass(frozen=True)
class Case:
    """A published case: its scenario, the column telling its points apart, and what was reported.

    reported: key value -> speedup; reported_al: key value -> accept length (absent = not stated);
    metric: the summary column that matches what the source measured."""

    id: str
    file: str
    key: str
    reported: dict
    reported_al: dict = field(default_factory=dict)
    metric: str = "speedup"
    unit: str = "batch"


CASES = [
    Case("P1", "p1-deepseek-v3-report.yaml", "concurrency", {1: 1.8}, {1: 1.875}),
    Case("P2", "p2-deepseek-v3-sglang.yaml", "concurrency", {1: 1.8, 32: 1.5}),
    Case("P3", "p3-eagle3-llama-8b-h100.yaml", "concurrency",
         dict(zip((1, 2, 4, 8, 16, 24, 32, 48, 56, 64), (2.36, 1.81, 1.82, 1.62, 1.48, 1.39, 1.32, 1.38, 1.34, 1.38))),
         dict.fromkeys((1, 2, 4, 8, 16, 24, 32, 48, 56, 64), 2.9)),
    Case("P4", "p4-meta-mtp-7b.yaml", "steps", {1: 1.85, 2: 2.54, 3: 3.05}, {1: 1.94, 2: 2.78, 3: 3.50},
         metric="per_user_speedup", unit="steps"),
    Case("P5", "p5-deepseek-r1-vllm.yaml", "rate_per_s", {1: 1.63, 2: 1.18, 4: 1.26, 6: 1.14, 8: 1.00},
         dict.fromkeys((1, 2, 4, 6, 8), 1.81), metric="per_user_speedup", unit="req/s"),
    Case("P6", "p6-kimi-k2.5-b200.yaml", "concurrency", {16: 0.92}, {16: 1.39}),
    Case("P7", "p7-qwen3-next-h100.yaml", "concurrency", {8: 0.92, 64: 0.68}, {8: 1.37, 64: 1.37}),
]


def run_case(case: Case, jobs: int = 1) -> pd.DataFrame:
    """Simulate a case; one row per reported point."""
    points = sc.load(FOLDER / case.file)
    summary, _ = run_points(points, jobs, progress=False)
    rows = []
    for _, row in summary[summary.point >= 0].iterrows():
        value = row[case.key]
        if value not in case.reported:
            continue
        reported, predicted = case.reported[value], row[case.metric]
        al = case.reported_al.get(value, math.nan)
        rows.append({"case": case.id, "point": f"{case.unit} {value:g}", "metric": case.metric,
                     "AL reported": al, "AL sim": row.accept_length,
                     "reported": reported, "predicted": predicted,
                     "error %": 100 * (predicted - reported) / reported,
                     "r reported": al / reported, "r predicted": row.accept_length / predicted})
    return pd.DataFrame(rows)


def run_all(jobs: int = 1) -> pd.DataFrame:
    return pd.concat([run_case(c, jobs) for c in CASES], ignore_index=True)


def report(table: pd.DataFrame) -> str:
    text = table.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.2f}")
    err = table["error %"].abs()
    within = (err <= 100 * BAR).sum()
    return (f"{text}\n\n{within} of {len(table)} points within {BAR:.0%} of the reported speedup; "
            f"median |error| {err.median():.1f}%, worst {table.loc[err.idxmax(), 'case']} "
            f"{table.loc[err.idxmax(), 'point']} ({table.loc[err.idxmax(), 'error %']:+.1f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    args = parser.parse_args()
    print(report(run_all(args.jobs)))


if __name__ == "__main__":
    main()
