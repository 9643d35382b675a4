"""`mtpsim recommend`, the command: check the options, claim the folder, run the grid
(recommend.py: the picks, the break-even batch, the policy), then print and write it, with
aiconfigurator's picks beside it under `--peer` (peer_tables.py)."""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from mtpsim import scenario as sc
from mtpsim.budget_advice import budget_at_points
from mtpsim.cli_types import parse_sizes
from mtpsim.errors import holding, printable
from mtpsim.overrides import REPLACED, flags_over_sets
from mtpsim.recommend import DEFAULT_BATCHES, base_point, break_even, candidate_steps, check_topks, grid, policy_line, recommend
from mtpsim.run import default_jobs
from mtpsim.runfolder import claimed, free_out, mark_complete, write_csv
from mtpsim.schema import MAX_USERS, check_replicates
from mtpsim.search.space import default_topks

SHOWN = {"batch": "batch", "tps_steps": "S (TPS)", "tps_topk": "K (TPS)", "tps": "TPS", "speedup": "speedup",
         "user_steps": "S (user)", "user_topk": "K (user)", "per_user_tps": "user TPS",
         "per_user_speedup": "user speedup", "none_tps": "none TPS", "none_per_user_tps": "none user TPS",
         "speculate": "speculate", "margin_pct": "margin %", "tie": "tie", "bound_by": "bound"}


def format_recommendation(table: pd.DataFrame) -> str:
    df = table.drop(columns=["max_running"], errors="ignore")  # recommend.csv keeps it; `bound` names a cap that bound
    if (df.tps_topk == 1).all() and (df.user_topk == 1).all():
        df = df.drop(columns=["tps_topk", "user_topk"])
    df["speculate"] = df.speculate.map({True: "yes", False: "no"})
    if "tie" in df:
        df["tie"] = df.tie.map({True: "within noise", False: ""})
    with pd.option_context("display.width", 200):
        return df.rename(columns=SHOWN).to_string(index=False, float_format=lambda x: f"{x:.3g}" if abs(x) < 100
                                                  else f"{x:.0f}")


DEFAULT_SEEDS = 3  # recommend's replicates per setting when neither --seeds nor the scenario says


def run_recommend(path: str, sets: list[str], batch: str | None, topk: str | None, max_steps: int | None,
                  jobs: int | None, out: str | None, seeds: int | None = 1, peer: bool = False) -> tuple[Path, pd.DataFrame]:
    """`mtpsim recommend`: check the options, claim the folder, run the grid, print and write.
    seeds None (no --seeds): the scenario's `seeds` where it sets them, else DEFAULT_SEEDS; `peer`:
    aiconfigurator's picks on the same grid beside them (peer.csv)."""
    if peer:  # peer_compare: on first use, not on recommend's path without --peer
        from mtpsim.peer_compare import require
        require()
    batches = parse_sizes(batch, "--batch", MAX_USERS) if batch is not None else list(DEFAULT_BATCHES)
    asked = parse_sizes(topk, "--topk", 64) if topk is not None else None
    # the batches replace the workload's users, --batch given or not (its default ladder)
    flags_over_sets(sets, {"seeds": (f"--seeds {seeds}", seeds),
                           "workload.concurrency": (f"--batch {batch}" if batch is not None else
                                                    "--batch's default ladder", REPLACED)})
    with holding():  # warnings wait for recommend's own checks and its grid's: bad input stays one line
        s = base_point(path, sets)
        if seeds is None:
            seeds = s.seeds if "seeds" in s.model_fields_set else DEFAULT_SEEDS
        check_replicates(s.seed, seeds, "--seeds", "")
        topks = asked or default_topks(s, s.speculative.design)  # the scenario's own tree is compared unless --topk
        check_topks(s, topks)
        steps = candidate_steps(s, max_steps)
        points = grid(s, batches, steps, topks, seeds)  # every point validated before the folder is claimed
        budget_at_points(points, ("--batch", ""))
        free_out(out)  # a busy --out is the one line, not after the scenario's warnings
    with claimed(f"{s.name}-recommend", out) as folder:  # a failed run gives the folder back
        started, n = time.perf_counter(), len(batches) * len(steps) * len(topks)
        table, summary = recommend(s, batches, steps, topks, jobs or default_jobs(n + len(batches)), seeds=seeds)
        write_csv(table, folder / "recommend.csv")
        write_csv(summary, folder / "grid.csv")
        took, beside = time.perf_counter() - started, None
        if peer:  # peer_tables: on first use, not on recommend's path without --peer
            from mtpsim.peer_tables import recommend_picks, recommend_report
            beside = recommend_picks(points, summary, table)
        if beside is not None:
            write_csv(pd.DataFrame(beside[1]), folder / "peer.csv")
        mark_complete(folder)
        print_report(s, steps, topks, batches, table, n, took)
        if beside is not None:
            print(f"\n{recommend_report(*beside)}")
        print(f"\nwrote {printable(str(folder))}/")  # within claimed: a report that cannot be printed unmarks the folder
    return folder, table


def print_report(s: sc.Scenario, steps: list[int], topks: list[int], batches: list[int], table: pd.DataFrame,
                 n: int, wall_s: float) -> None:
    """What `mtpsim recommend` prints: the question, a header line, the picks, the break-even batch and the policy."""
    if s.question:
        print(f"Q: {s.question}")
    print(f"{s.name}: {s.describe_model()} on {s.describe_layout()}, engine {s.specs.engine.label}, "
          f"{s.speculative.design} steps {steps[0]}..{steps[-1]}" + (f", topk {topks}" if topks != [1] else "") +
          f", priced by {s.specs.priced_by}: {n} runs + {len(batches)} baselines in {wall_s:.1f} s\n")
    print(format_recommendation(table) + "\n")
    if table.bound_by.astype(bool).any():
        print(f"bound: a limit bound the TPS pick's batch (cap N: the running-request cap, engine.max_running_requests "
              f"or {s.specs.engine.name} {s.specs.engine.version}'s rule for the design as `mtpsim run` resolves it; "
              "KV: the KV budget; eager>N: batches past the largest CUDA graph; budget N: a mixing engine's N-token "
              "budget a step, filled by the running batch's decode)")
    even = break_even(table)
    print(f"break-even batch: {even if even is not None else f'none within the range (speculation wins up to {batches[-1]})'}")
    d = s.disaggregation  # the policy runs where decoding does: the decode pool's replicas
    print(policy_line(table, d.decode.replicas if d is not None else s.parallel.dp))
