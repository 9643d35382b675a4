"""Predicted vs reported speedups for the published cases (shared/reference/published.md).

Run: .venv/bin/python benchmarks/published.py [--jobs N] [--no-peer] [--rules] [--set KEY.PATH=VALUE ...]
(about 3-4 minutes on 2 cores; --rules about 2 minutes more: each engine version rule left out in
turn, on every case it applies to; --set runs every case with an override, a what-if such as
--set cost.routing_locality=0.5)

Each case is a scenario in scenarios/published/ that states, in its comments, what the source
reports and what had to be assumed. This script simulates each twice, nothing tuned per case:
with the default cost model (the measured kernel profile the scenario's GPU and engine name,
where one exists) and with the datasheet roofline (`cost.model: roofline`). For every reported
point it prints the accept length (reported, simulated), the speedup (reported, default,
roofline), the errors, and the iteration-cost ratio r = AL / speedup (the cost of one
draft+verify iteration over one plain decode step), reported against predicted. When
aiconfigurator is importable (pip install 'mtpsim[peer]'), a last column gives that tool's own
prediction for the points it can express, asked as `mtpsim run --peer` asks it (mtpsim/peer_compare.py).
Why the misses miss is explained in notebooks/04-published.ipynb.
"""
from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from mtpsim import scenario as sc
from mtpsim.peer_compare import ask_row
from mtpsim.run import run_points
from mtpsim.schema import mean_length

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_cases import CASES, Case  # noqa: E402  (the case table, a sibling data module)

FOLDER = Path(__file__).resolve().parent.parent / "scenarios" / "published"
BAR = 0.15  # the fidelity bar: within 15% of the reported speedup


def simulate_case(case: Case, jobs: int = 1, sets: tuple[str, ...] = ()) -> pd.DataFrame:
    """A case's sweep points that the source reported, simulated: one summary row each."""
    summary, points = simulate_file(case.file, sets, jobs)
    rows = summary[(summary.point >= 0) & summary[case.key].isin(list(case.reported))]
    return rows.assign(scenario=[points[int(i)] for i in rows.point]).reset_index(drop=True)


@functools.cache
def simulate_file(file: str, sets: tuple[str, ...], jobs: int) -> tuple[pd.DataFrame, list]:
    """A published scenario's whole sweep with its derived rates, simulated once per process:
    cases that report different metrics of the same runs (P8's speedups and its per-GPU rates,
    L2's two) read the same rows, which no caller changes (pandas' assign returns new frames)."""
    points = sc.load(FOLDER / file, list(sets))
    summary, _ = run_points(points, jobs, progress=False)
    summary = decode_rates(summary, points[0])
    summary = summary.assign(input_len=[mean_length(points[int(i)].workload.input_len) if i >= 0 else math.nan
                                        for i in summary.point],  # a sweep over the prompt: its value per point
                             version=[points[int(i)].engine.version if i >= 0 else None for i in summary.point])
    summary = prefill_rates(summary, points)
    return summary.assign(total_tps_per_gpu=summary.total_tps / deployment_gpus(points[0])), points


def decode_rates(summary: pd.DataFrame, s: sc.Scenario) -> pd.DataFrame:
    """Decode-only rates, for sources whose GPUs never prefill (PD disaggregation): output tokens
    after the first over the busy time outside prefill passes (every run here keeps its replicas
    busy from start to end), per GPU; and their ratio to the plain-decode run at the same
    concurrency (or arrival rate: open loads have no concurrency). Fixed output lengths only (the
    published cases')."""
    out = mean_length(s.workload.output_len)
    gpus = s.parallel.tp * s.parallel.dp
    rate = summary.tps * (out - 1) / out / (1 - summary.prefill_share)
    load = summary.concurrency.where(summary.concurrency.notna(), summary.rate_per_s)
    base = dict(zip(load[summary.design == "none"], rate[summary.design == "none"]))
    return summary.assign(decode_tps_per_gpu=rate / gpus, decode_tps_per_gpu_none=load.map(base) / gpus,
                          decode_speedup=rate / load.map(base))


def deployment_gpus(s: sc.Scenario) -> int:
    """GPUs the scenario serves on: both pools of a disaggregated one, else its replicas'."""
    d = s.disaggregation
    return d.prefill.gpus + d.decode.gpus if d is not None else s.parallel.tp * s.parallel.dp


def prefill_rates(summary: pd.DataFrame, points: list) -> pd.DataFrame:
    """Prefill-only rates, for sources measuring a prefill pool on its own: input tokens over the
    prefill passes' busy time (batch arrivals keep the replica busy from start to end, so busy
    time is output tokens / tps), per GPU. NaN for the baseline rows, which name no point."""
    rates = []
    for row in summary.itertuples():
        if row.point < 0:
            rates.append(math.nan)
            continue
        s = points[int(row.point)]
        n, out = s.workload.num_requests, mean_length(s.workload.output_len)
        busy = n * out / row.tps
        rates.append(n * mean_length(s.workload.input_len) / (row.prefill_share * busy) / (s.parallel.tp * s.parallel.dp))
    return summary.assign(prefill_tps_per_gpu=rates)


def run_case(case: Case, jobs: int = 1, peer: bool = False) -> pd.DataFrame:
    """A case under the default cost model and the roofline; one row per reported point."""
    default, roof = simulate_case(case, jobs, case.sets), simulate_case(case, jobs, (*case.sets, "cost.model=roofline"))
    rows = []
    for (_, row), (_, old) in zip(default.iterrows(), roof.iterrows()):
        value = row[case.key]
        reported, predicted = case.reported[value], row[case.metric]
        al = case.reported_al.get(value, math.nan)
        is_speedup = case.metric.endswith("speedup")
        rows.append({"case": case.id, "point": case.point(value), "priced by": row.pricing,
                     "AL reported": al, "AL sim": row.accept_length, "reported": reported,
                     "default": predicted, "roofline": old[case.metric],
                     "error %": 100 * (predicted - reported) / reported,
                     "roofline error %": 100 * (old[case.metric] - reported) / reported,
                     "r reported": al / reported if is_speedup else math.nan,
                     "r predicted": row.accept_length / predicted if is_speedup else math.nan,
                     "metric": case.metric,
                     "aiconfigurator": peer_speedup(row, case.metric) if peer else math.nan})
    if case.reported_none is not None:  # the source's plain-decode rate, a point of its own
        base, base_roof = default.decode_tps_per_gpu_none.iloc[0], roof.decode_tps_per_gpu_none.iloc[0]
        reported = case.reported_none
        rows.append({"case": case.id, "point": "none", "priced by": default.pricing.iloc[0], "AL reported": 1.0,
                     "AL sim": 1.0, "reported": reported, "default": base, "roofline": base_roof,
                     "error %": 100 * (base - reported) / reported, "roofline error %": 100 * (base_roof - reported) / reported,
                     "r reported": math.nan, "r predicted": math.nan, "metric": case.metric, "aiconfigurator": math.nan})
    return pd.DataFrame(rows)


def peer_speedup(row, metric: str) -> float:
    """aiconfigurator's predicted speedup for a case's summary row (its scenario, accept length and
    running cap), asked as `mtpsim run --peer` asks it (mtpsim/peer_compare.py ask_row: model, GPU,
    engine, parallelism, the batch that ran, mean lengths, KV dtype, steps and the accept length);
    NaN where it cannot express the point, and for metrics other than the two speedups."""
    s = row.scenario
    if metric not in ("speedup", "per_user_speedup"):
        return math.nan
    return ask_row(row, s)["aic_per_user_speedup" if metric == "per_user_speedup" else "aic_speedup"]


def run_all(jobs: int = 1, peer: bool = False, kinds: str | None = None, sets: tuple[str, ...] = ()) -> pd.DataFrame:
    """Every case, or those whose id starts with one of `kinds` (e.g. "P": the public speedups and
    DP-attention cases, what notebook 04 walks through); `sets`: overrides every case runs with
    (a what-if over all of them, e.g. cost.routing_locality=0.5)."""
    cases = [replace(c, sets=(*c.sets, *sets)) for c in CASES if kinds is None or c.id[0] in kinds]
    return pd.concat([run_case(c, jobs, peer) for c in cases], ignore_index=True)


def _errors(table: pd.DataFrame, column: str, label: str) -> str:
    err = table[column].abs()
    worst = err.idxmax()
    return (f"{label}: median |error| {err.median():.1f}%, {(err <= 100 * BAR).sum()} of {len(table)} points "
            f"within {BAR:.0%}, worst {table.loc[worst, 'case']} {table.loc[worst, 'point']} "
            f"({table.loc[worst, column]:+.1f}%)")


def peer_line(table: pd.DataFrame, peer: str, reported: str, what: str, of: str = "") -> str:
    """aiconfigurator's median error on the points (`of` a set) it expresses, beside mtpsim's on the same points."""
    rows = table.dropna(subset=[peer])
    err = (100 * (rows[peer] - rows[reported]) / rows[reported]).abs()
    return (f"aiconfigurator on the {len(rows)} {of}points it expresses: {what} {err.median():.1f}% at the median "
            f"(mtpsim default on the same points: {rows['error %'].abs().median():.1f}%)")


def report(table: pd.DataFrame) -> str:
    shown = table if table["aiconfigurator"].notna().any() else table.drop(columns="aiconfigurator")
    text = shown.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.2f}")
    lines = [text, "", _errors(table, "roofline error %", "roofline (datasheet with fitted floors)")]
    if table["aiconfigurator"].notna().any():
        lines.append(peer_line(table, "aiconfigurator", "reported", "|error|"))
    lines.append(_errors(table, "error %", "default (measured profiles)"))  # the headline, last
    return "\n".join(lines)


def rules_in_force(cases=CASES) -> dict[tuple[str, str], list[Case]]:
    """(engine, rule) -> the cases whose scenario's engine release applies that version rule."""
    found: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        engine = sc.load(FOLDER / case.file)[0].specs.engine
        for rule in engine.rules:
            found.setdefault((engine.name, rule), []).append(case)
    return found


def leave_one_rule_out(jobs: int = 1, cases=CASES, predicted=None) -> pd.DataFrame:
    """Each engine version rule's effect on every case it applies to: the case's median |error|
    with every rule, and with that rule left out (`engine.ignore_rules`), default cost model.
    Both sides are the same case file's rows (two files of one case id, L2's GPUs, are two rows
    each). `predicted(case, rows)`: the compared value of simulated rows (default: the case's
    metric); absolute.py passes its TPOT."""
    predicted = predicted or (lambda case, rows: rows[case.metric])

    def errors(case, sets):
        ran = simulate_case(case, jobs, sets)
        reported = pd.Series([case.reported[v] for v in ran[case.key]], index=ran.index)
        return (100 * (predicted(case, ran) - reported) / reported).abs()

    rows = []
    for (engine, rule), ruled in rules_in_force(cases).items():
        for case in ruled:
            mine, err = errors(case, case.sets), errors(case, (*case.sets, f"engine.ignore_rules=[{rule}]"))
            rows.append({"rule": f"{engine}:{rule}", "case": case.id, "metric": case.metric,
                         "points": len(mine), "median |error| % with": mine.median(), "without": err.median(),
                         "helps": "yes" if mine.median() < err.median() - 0.05 else
                         "no" if mine.median() > err.median() + 0.05 else "no effect"})
    return pd.DataFrame(rows)


def command_line(doc: str, rules: bool = False, what_if: bool = False) -> argparse.Namespace:
    """A published-case benchmark's command line: jobs, peer (whether to ask aiconfigurator), and
    with `rules` its --rules, with `what_if` its --set overrides (`sets`)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--no-peer", action="store_true", help="skip aiconfigurator's predictions")
    if rules:
        parser.add_argument("--rules", action="store_true", help="also the leave-one-rule-out table of engine version rules")
    if what_if:
        parser.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                            help="an override every case runs with, as `mtpsim run --set` takes it (a what-if); repeatable")
    args = parser.parse_args()
    from mtpsim import peer
    args.peer = not args.no_peer and peer.available()
    args.sets = tuple(getattr(args, "set", ()))
    return args


SETS = [  # (short name, the line's label, which rows): each set's median, and aiconfigurator's where it expresses a point
    ("P1-P7", "the public speedups P1-P7",
     lambda t: t.case.isin([f"P{i}" for i in range(1, 8)]) & t.metric.str.endswith("speedup")),
    ("P10-P11", "SGLang 0.5.2 MTP on B200 (P10-P11: DeepSeek-R1 on 8xB200, both arms' tok/s and the speedup; Triton MoE "
     "before 0.5.5)", lambda t: t.case.isin(["P10", "P11"])),
    ("L", "the deployments at scale (L cases: per-GPU pool rates)", lambda t: t.case.str.startswith("L")),
    ("D", "the block drafters (D cases: DSpark on DeepSeek-V4-Flash, DFlash on Qwen3 and Gemma 4, and D6's Gemma 4 "
     "assistants and plain targets)", lambda t: t.case.str.startswith("D")),
    ("D6", "D6 (Gemma 4 MTP vs DFlash, 1xH100 vLLM: tok/s and speedups)", lambda t: t.case == "D6"),
    ("S", "the SpecBundle EAGLE-3 chains (S cases: SpecForge's dashboard, H200, SGLang 0.5.6, S1-S5: speedups at 3 / 5 / "
     "7 steps on MT-Bench and GSM8K)", lambda t: t.case.str.startswith("S")),
    ("E", "the external speedups (E cases: EAGLE-3 on H100 under SGLang, both arms and the accept length measured, E1 "
     "gpt-oss-120b chain at batch 1-64, E2-E3 Qwen3-30B-A3B chain and trees at batch 1-64)",
     lambda t: t.case.str.startswith("E")),
    ("G", "the generalization check (G cases, 2026-12-06: EAGLE-3 on one H100 at batch 1-128, arXiv 2601.11580; "
     "G1-G3 Llama-3.1-8B chains under vLLM 0.10.1, G4 a Qwen3-8B chain and G5 its 21-token tree under SGLang 0.5.9)",
     lambda t: t.case.str.startswith("G")),
]


def main() -> None:
    args = command_line(__doc__, rules=True, what_if=True)
    jobs, rules = args.jobs, args.rules
    table = run_all(jobs, args.peer, sets=args.sets)
    print(report(table))
    for short, label, rows in SETS:
        chosen = table[rows(table)]
        if len(chosen):
            print(_errors(chosen, "error %", f"default on {label}"))
            if chosen["aiconfigurator"].notna().any():
                print("  " + peer_line(chosen, "aiconfigurator", "reported", "|error|", of=f"{short} "))
    if rules:
        print("\nLeave one engine version rule out (mtpsim/data/engines/*.yaml `rules`; `mtpsim engines` lists them):")
        print(leave_one_rule_out(jobs).to_string(index=False, float_format=lambda x: f"{x:.1f}"))


if __name__ == "__main__":
    main()
