"""Predicted vs measured plain-decode time per output token (TPOT): the absolute check.

Run: .venv/bin/python benchmarks/absolute.py [--jobs N] [--no-peer] [--rules]    (about 45 s on 2 cores;
     --rules adds each engine version rule's effect on every case it applies to)

Speedups (benchmarks/published.py) divide two simulated times, so a cost model can be wrong in
absolute terms and still score there. This script checks the absolute figure on its own: each case
is a scenario in scenarios/published/a*-*.yaml citing a public measurement of plain decode (no
speculation), simulated as the source ran it (same model, GPUs, engine, parallelism, concurrency
and lengths; a closed loop where the source ran one, so other requests' prefills stall decode as
they did there). For every measured point it prints the reported TPOT, the default (measured
profile) and roofline predictions, their errors, and aiconfigurator's own TPOT where it can express
the case (pip install 'mtpsim[peer]'). Nothing is tuned per case. Then, apart from A1-A10's
figures, the T cases (scenarios/published/t*-*.yaml): a mid-2025 TensorRT-LLM pre-release's
inter-token latencies over TP-split experts, EP4 and EP8 (CROSS).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mtpsim.peer_compare import ask_row

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published import (  # noqa: E402  (a sibling script, not a package)
    BAR,
    command_line,
    leave_one_rule_out,
    peer_line,
    simulate_case,
)


@dataclass(frozen=True)
class Absolute:
    """A measured plain-decode case: its scenario, the column telling its points apart, and the
    reported TPOT in ms per point (published.simulate_case reads file, key and reported).
    Whether aiconfigurator can be asked a point is peer_compare.question's (a model whose
    precisions the scenario changes beyond the KV cache's, as A3's NVFP4, it cannot)."""

    id: str
    file: str
    key: str
    reported: dict
    metric: str = "tpot"          # what the leave-one-rule-out table names the compared value
    sets: tuple[str, ...] = ()    # overrides beyond the scenario file (`--set`), as published.Case


# Every source reports the mean over requests of each request's TPOT: InferenceX's `mean_tpot_ms`
# (A1, A5-A10: its benchmark_serving.py `calculate_metrics`, docs/metrics.md), and the batch-1
# figures (A2-A4) one stream's rate, where mean and median agree. So the simulated mean is compared,
# not the median: with 10 prompts a user, the last requests decode while the batch drains, and the
# two differ by up to 1.1% (A5 at 64 streams: median 28.02 ms, mean 27.72 ms, 2026-12-06).
TPOT = "tpot_mean_s"


def tpot_ms(row) -> float:
    return 1e3 * row[TPOT]


CASES = [
    Absolute("A1", "a1-deepseek-r1-h200-sglang-inferencex.yaml", "concurrency",
             {8: 12.8, 16: 17.2, 32: 25.6, 64: 34.6}),
    Absolute("A2", "a2-llama-3.1-8b-h100-sglang.yaml", "concurrency", {1: 1e3 / 158.34}),
    Absolute("A3", "a3-deepseek-r1-b200-trtllm.yaml", "concurrency", {1: 1e3 / 111}),
    Absolute("A4", "a4-deepseek-r1-2x8h100-sglang.yaml", "concurrency", {1: 23.2}),
    Absolute("A5", "a5-deepseek-r1-h200-sglang-v0512-1k1k.yaml", "concurrency",
             {4: 9.7, 8: 11.73, 16: 15.28, 32: 21.8, 64: 29.77}),
    Absolute("A6", "a6-deepseek-r1-h200-sglang-v0512-8k1k.yaml", "concurrency",
             {4: 10.94, 8: 13.88, 16: 20.02, 32: 31.37, 64: 49.33}),
    Absolute("A7", "a7-deepseek-r1-b200-sglang-v0512-1k1k.yaml", "concurrency",
             {1: 7.18, 2: 7.93, 4: 8.82, 8: 10.96, 16: 13.09, 32: 16.21, 64: 21.73}),
    Absolute("A8", "a8-deepseek-r1-b300-sglang-v0512-1k1k.yaml", "concurrency",
             {1: 7.04, 2: 7.64, 4: 8.3, 8: 10.12, 16: 12.35, 32: 15.46, 64: 21.17}),
    Absolute("A9", "a9-deepseek-r1-b300-sglang-v0512-8k1k-tp4.yaml", "concurrency",
             {1: 7.76, 2: 8.87, 4: 11.11}),
    Absolute("A10", "a10-deepseek-r1-b300-sglang-v0512-8k1k-tp8.yaml", "concurrency", {1: 7.23, 2: 8.08}),
]

# A cross-check printed apart from A1-A10: TensorRT-LLM issue #5929's ITLs of a v0.21.0rc2 build
# (2025-07), a pre-release before 1.0, the first release mtpsim has rules for, priced with the
# 1.3.0rc20 kernel tables; over the experts TP-split (ep 1), EP4 and EP8 (docs/accuracy.md)
CROSS = [
    Absolute("T1", "t1-deepseek-r1-h200-trtllm-v021-fp8-b1-1600.yaml", "parallel.ep", {1: 13.78, 4: 10.81, 8: 11.0}),
    Absolute("T2", "t2-deepseek-r1-h200-trtllm-v021-fp8-b1-8192.yaml", "parallel.ep", {1: 14.53, 4: 11.59, 8: 11.78}),
    Absolute("T3", "t3-deepseek-r1-h200-trtllm-v021-fp8-b8-1600.yaml", "parallel.ep", {1: 18.18, 4: 15.66, 8: 16.42}),
    Absolute("T4", "t4-deepseek-r1-b200-trtllm-v021-nvfp4-b1-1600.yaml", "parallel.ep", {1: 6.78, 4: 6.61, 8: 6.81}),
    Absolute("T5", "t5-deepseek-r1-b200-trtllm-v021-nvfp4-b1-8192.yaml", "parallel.ep", {1: 7.14, 4: 6.97, 8: 7.17}),
]


def run_case(case: Absolute, jobs: int = 1, peer: bool = False) -> pd.DataFrame:
    """A case under the default cost model and the roofline; one row per measured point."""
    default = simulate_case(case, jobs)
    roof = simulate_case(case, jobs, ("cost.model=roofline",))
    rows = []
    for (_, row), (_, old) in zip(default.iterrows(), roof.iterrows()):
        value = row[case.key]
        reported, predicted, roofline = case.reported[value], tpot_ms(row), tpot_ms(old)
        rows.append({"case": case.id, "point": f"{case.key} {value:g}", "priced by": row.pricing,
                     "reported ms": reported, "default ms": predicted, "roofline ms": roofline,
                     "error %": 100 * (predicted - reported) / reported,
                     "roofline error %": 100 * (roofline - reported) / reported,
                     "aiconfigurator ms": peer_tpot_ms(row) if peer else math.nan})
    return pd.DataFrame(rows)


def peer_tpot_ms(row) -> float:
    """aiconfigurator's TPOT for a case's summary row (a plain decode), asked as `mtpsim run --peer`
    asks it (mtpsim/peer_compare.py ask_row); NaN where it cannot express the point."""
    return float(ask_row(row, row.scenario)["aic_tpot_ms"])


def report(table: pd.DataFrame) -> str:
    shown = table if table["aiconfigurator ms"].notna().any() else table.drop(columns="aiconfigurator ms")
    lines = [shown.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.2f}"), ""]
    for column, label in (("roofline error %", "roofline"), ("error %", "default (measured profiles)")):
        err = table[column].abs()
        lines.append(f"{label}: median |TPOT error| {err.median():.1f}%, {(err <= 100 * BAR).sum()} of "
                     f"{len(table)} points within {BAR:.0%}")
    if table["aiconfigurator ms"].notna().any():
        lines.append(peer_line(table, "aiconfigurator ms", "reported ms", "|TPOT error|"))
    return "\n".join(lines)


def main() -> None:
    args = command_line(__doc__, rules=True)
    jobs, rules = args.jobs, args.rules
    table = pd.concat([run_case(c, jobs, args.peer) for c in CASES], ignore_index=True)
    print(report(table))
    cross = pd.concat([run_case(c, jobs, args.peer) for c in CROSS], ignore_index=True)
    print("\nApart from A1-A10, TensorRT-LLM v0.21.0rc2 (issue #5929, 2025-07; T1-T3 8xH200 FP8, T4-T5 8xB200 NVFP4; "
          "ep 1 = experts TP-split):")
    print(report(cross))
    if rules:
        print("\nLeave one engine version rule out (mtpsim/data/engines/*.yaml `rules`), plain-decode TPOT:")
        rows = leave_one_rule_out(jobs, CASES, predicted=lambda case, r: tpot_ms(r))
        print(rows.to_string(index=False, float_format=lambda x: f"{x:.1f}"))


if __name__ == "__main__":
    main()
