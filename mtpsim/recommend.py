"""`mtpsim recommend`: per batch size, the steps that maximise TPS and per-user TPS, whether to
speculate at all, the break-even batch, and an adaptive policy to paste (issue 12 §4). It is the
one-layout view of `mtpsim search` (mtpsim/search/): the same grid of steps and loads, where the
search also varies the layout. With `--seeds N` (3 by default) each setting runs over N seeds and
the TPS pick at a batch is the fewest steps that may be the best, no other setting's interval lying
wholly above its own (`within_noise`), so the policy follows gains the seeds can tell from noise,
with each pick's margin printed.

The grid is the scenario (its first point, when it sweeps) at each batch size as closed-loop
concurrency, with `none` and every candidate steps value (1 up to what the design, the model and
the acceptance profile allow) and topk (unless asked, search's default: chains, and trees where the design drafts them and the
acceptance gives per-rank columns, the scenario's own width among them).
One home: the grid is the search's points with the layout fixed (search/space.py), run by the
search's executor (search/execute.py: the pool or Ray, one Pricer per layout), so each batch's
`none` runs once per seed, on the same seed and workload as that batch's speculative runs. The
running-request cap is not set per batch as the search sets it: the scenario's, else the engine's
rule (SGLang's cap of 48 under speculative decoding, say), exactly as `mtpsim run` resolves it,
and the table's `bound` column names a limit that bound a pick (results.limits_row). Each batch
counts `none` as steps 0: the best steps at a batch is 0 where plain decoding at least matches
every speculative setting.
"""
from __future__ import annotations

import math

import pandas as pd

from mtpsim import scenario as sc
from mtpsim import sweep
from mtpsim.advice import GRID_CHECKS, advise
from mtpsim.checks import as_built_for
from mtpsim.designs import BASELINE, record
from mtpsim.errors import ScenarioError
from mtpsim.heaviness import heavy_load
from mtpsim.intervals import seed_intervals
from mtpsim.search import execute, layouts, rankable, space
from mtpsim.search.bounds import MAX_SEARCH_POINTS
from mtpsim.search.space import candidate_steps  # noqa: F401  (recommend's steps are the search's)

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64)
OPEN_LOOP_REQUESTS_PER_USER = 4  # an open-loop scenario says nothing of users: each sends this many


def base_point(path: str, sets: list[str]) -> sc.Scenario:
    """The scenario the grid varies: its first point, with a speculative design and acceptance
    given per depth (an accept_length alone would refit the profile to every steps value)."""
    points = sc.load(path, sets, advise_points=False, first_only=True)  # this command's own refusals come before any warning
    with sweep.one_point(points, "recommend") as s:
        if s.speculative.design == BASELINE:
            raise ScenarioError(s.source, "speculative.design", "recommend compares steps settings of a speculative "
                                "design (nextn, multi_layer, frozen_kv, parallel_heads, block), and this scenario's "
                                "is none")
        rankable.refuse_fixed_accept_length(s, "compare steps")
        from mtpsim.sim.preflight import check_kv_pool  # on first use, as the simulator
        check_kv_pool(s)  # the engine's pool, empty at every steps setting, is refused before any warning
        rankable.fixed_settings(s, "recommend", "fixed steps at each batch and prints the policy they make")
        s = rankable.own_loads(s, "recommend", "closed-loop batches (--batch)")
    advise(points[0], skip=GRID_CHECKS)  # the point recommended for; its steps and policy are its own (said above)
    return s


def check_topks(s: sc.Scenario, topks: list[int]) -> None:
    """topk > 1 only for a design that drafts trees (its checks accept the topk)."""
    spec = s.speculative.model_copy(update={"topk": max(topks), "draft_tokens": None, "policy": None})
    draft = s.specs.draft or s.specs.assistant
    for key, reason in record(s.speculative.design).problems(spec, as_built_for(s.specs.model, draft), draft):
        if key == "speculative.topk":
            raise ScenarioError("--topk", "", reason)
    space.check_topk(s, max(topks), ("--topk", ""))  # e.g. no per-rank acceptance: the flag asked for trees


def grid(s: sc.Scenario, batches: list[int], steps: list[int], topks: list[int], seeds: int = 1) -> list[sc.Scenario]:
    """The scenario on its own layout at each batch (closed loop) x (`none`, then steps x topk),
    each over seeds s..s+seeds-1: the search's points (search/space.py) with the layout fixed and
    the running-request cap left to the scenario and the engine, as `mtpsim run` resolves it."""
    w = s.workload
    per_user = math.ceil(w.num_requests / w.concurrency) if w.arrival == "closed" else OPEN_LOOP_REQUESTS_PER_USER
    layout = layouts.layout_of(s)
    spec = s.speculative.model_dump(exclude_none=True, exclude={"policy", "draft_tokens"})
    settings = [{"design": BASELINE}] + [{**spec, "steps": S, "topk": k} for k in topks for S in steps]
    size = len(settings) * len(batches) * seeds
    if size > MAX_SEARCH_POINTS:  # as the search refuses a space past its limit, before building any point
        raise ScenarioError("--batch", "", f"{len(batches)} batches x {len(settings)} settings x {seeds} seeds is "
                            f"{size:,} runs, over the limit of {MAX_SEARCH_POINTS:,}: ask fewer batches, steps or topk")
    loads = space.closed_loads(batches, per_user)
    points = []
    for setting in settings:
        at = layouts.at_layout(s, layout, setting)
        points += [space.with_load(at, load, layout, keep_cap=True, origin=("--batch", "")) for load in loads]
    # after the points validate (one line if refused); a closed loop's requests per user are the file's
    heavy_load(points, (s.source, "workload.num_requests") if w.arrival == "closed" else ("--batch", ""))
    return [p.model_copy(update={"seed": p.seed + k}) for p in points for k in range(seeds)]


def run_grid(points: list[sc.Scenario], jobs: int, progress: bool, backend: str = "pool") -> pd.DataFrame:
    """The grid's rows (search/execute.py: pool or Ray, one Pricer per layout, no cache), with each
    row's speedups over `none` at its batch and seed; over seeds, one row per setting and batch
    with means and 95% intervals (intervals.seed_intervals)."""
    rows, _ = execute.run_search_points(points, execute.Cache(None), jobs, backend, progress=progress)
    rows["seed"] = [p.seed for p in points]
    none = rows[rows.design == BASELINE].set_index(["concurrency", "seed"])
    at = pd.MultiIndex.from_frame(rows[["concurrency", "seed"]])
    rows["speedup"] = rows.tps.to_numpy() / none.tps.reindex(at).to_numpy()
    rows["per_user_speedup"] = rows.per_user_tps.to_numpy() / none.per_user_tps.reindex(at).to_numpy()
    if rows.seed.nunique() == 1:
        return rows.drop(columns="seed")
    unit = rows.design + " " + rows.steps.astype(str) + " " + rows.topk.astype(str) + " @ " + rows.concurrency.astype(str)
    return seed_intervals(rows.assign(unit=unit), "unit", "concurrency").drop(columns="unit")


def best_by_batch(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per batch (concurrency): the steps (and topk) maximising TPS and per-user TPS,
    `none` counting as steps 0 and winning ties, plus `none`'s own figures and whether to
    speculate (the TPS pick is not `none`)."""
    rows = []
    for batch, runs in summary.groupby("concurrency", sort=True):
        runs = runs.sort_values(["steps", "topk"], kind="stable")  # none (steps 0) first: it wins ties
        none = runs[runs.design == BASELINE].iloc[0]
        by_tps, by_user = runs.loc[runs.tps.idxmax()], runs.loc[runs.per_user_tps.idxmax()]
        rows.append({"batch": int(batch), "tps_steps": int(by_tps.steps), "tps_topk": int(by_tps.topk),
                     "tps": by_tps.tps, "speedup": by_tps.tps / none.tps,
                     "user_steps": int(by_user.steps), "user_topk": int(by_user.topk),
                     "per_user_tps": by_user.per_user_tps, "per_user_speedup": by_user.per_user_tps / none.per_user_tps,
                     "none_tps": none.tps, "none_per_user_tps": none.per_user_tps,
                     "speculate": bool(by_tps.steps > 0)})
    return pd.DataFrame(rows)


def break_even(table: pd.DataFrame) -> int | None:
    """The smallest batch at which `none` matches or beats the best speculative setting (None:
    speculation wins at every batch of the table)."""
    lost = table[~table.speculate.astype(bool)]
    return int(lost.batch.min()) if len(lost) else None


def steps_by_batch(table: pd.DataFrame) -> dict[int, int]:
    """The TPS picks as a policy table: an entry where the pick changes, the first at batch 1
    (the smallest batch's pick holds below it too); 0 where not to speculate."""
    policy, last = {}, None
    for i, (batch, steps) in enumerate(zip(table.batch, table.tps_steps)):
        if steps != last:
            policy[1 if i == 0 else int(batch)] = int(steps)
            last = steps
    return policy


def recommend(s: sc.Scenario, batches: list[int], steps: list[int], topks: list[int] = (1,),
              jobs: int = 1, progress: bool = True, seeds: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the grid (each point over `seeds` seeds); returns (the table of best_by_batch, then
    settled by within_noise when seeds > 1, with the limit that bound each TPS pick; the grid's
    rows incl. `none`, one per setting and batch: means and intervals when seeds > 1)."""
    summary = run_grid(grid(s, batches, steps, list(topks), seeds), jobs, progress)
    table = within_noise(best_by_batch(summary), summary)
    key = ["concurrency", "steps", "topk"]
    picks = table.rename(columns={"batch": "concurrency", "tps_steps": "steps", "tps_topk": "topk"})[key]
    table["bound_by"] = picks.merge(summary[[*key, "bound_by"]], on=key, how="left").bound_by.fillna("").to_numpy()
    # the cap a scenario running the policy holds (its design's, whatever steps a batch picks,
    # `none` included): policy_line keys each pick at the batch that runs
    speculative = summary[summary.design != BASELINE].groupby("concurrency").max_running.min()
    table["max_running"] = table.batch.map(speculative).to_numpy()
    return table, summary


def within_noise(table: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per batch, the TPS pick's margin over the runner-up setting (`margin_pct`), and with seed
    intervals (summary_ci's tps_ci_low / tps_ci_high) the fewest steps among `may_be_best`: a gain
    the seeds cannot tell from noise does not earn a step (`tie`: more than one setting may be
    the best)."""
    out = table.copy()
    margins, ties, picks = [], [], []
    for _, runs in summary.groupby("concurrency", sort=True):
        runs = runs.sort_values(["steps", "topk"], kind="stable")
        order = runs.sort_values("tps", ascending=False, kind="stable")
        best, second = order.iloc[0], order.iloc[1] if len(order) > 1 else order.iloc[0]
        margins.append(100.0 * (best.tps / second.tps - 1.0))
        if "tps_ci_low" not in runs:
            ties.append(False)
            picks.append(int(best.steps))
            continue
        candidates = may_be_best(runs)  # steps order: the fewest first
        picks.append(candidates.iloc[0])
        ties.append(len(candidates) > 1)
    out["margin_pct"], out["tie"] = margins, ties
    if "tps_ci_low" in summary:  # the pick moves to the fewest steps within noise of the best
        out["tps_steps"] = [int(p.steps) for p in picks]
        out["tps_topk"] = [int(p.topk) for p in picks]
        out["tps"] = [p.tps for p in picks]
        out["speedup"] = out.tps / out.none_tps
        out["speculate"] = out.tps_steps > 0
    return out


def may_be_best(runs: pd.DataFrame) -> pd.DataFrame:
    """The settings whose TPS interval reaches every other's lower end: none is beaten by another
    beyond noise. Not "those whose interval meets the best mean's": with few seeds the best can
    have an interval so wide it meets `none`'s, while a setting between them beats `none` with a
    tight one, and that test picked `none`. This set never holds a setting another clearly beats."""
    return runs[runs.tps_ci_high >= runs.tps_ci_low.max()]


def _batches(batches: list[int]) -> str:
    return ("batch " if len(batches) == 1 else "batches ") + ", ".join(str(int(b)) for b in batches)


def policy_line(table: pd.DataFrame, replicas: int = 1) -> str:
    """The `policy:` line to paste under `speculative:` (chain picks only: a policy varies steps).
    The table's batches are users over all `replicas` (closed-loop concurrency), and a policy's
    keys are one replica's running batch (sim/engine.py iteration_at): each key is its batch's
    share per replica, held at the running-request cap in force (`max_running`, where the table
    has it: users past the cap wait, and the batch that runs is the cap), a later pick winning
    where two batches share one below the cap. At the cap the batch nearest it keys it: past it
    plain decoding ran more requests at once than a server running the policy can (its cap holds
    whatever steps an iteration picks), so a later `none` pick there is no pick for that server."""
    chain = table[table.tps_topk == 1]
    if chain.empty:
        return "policy: none (every pick is a tree; a policy varies a chain's steps)"
    caps = dict(zip(chain.batch, chain.max_running)) if "max_running" in chain else {}
    per_replica, capped, held = {}, set(), []
    for i, (batch, steps) in enumerate(zip(chain.batch.tolist(), chain.tps_steps.tolist())):
        running = -(-(1 if i == 0 else batch) // replicas)  # the smallest batch's pick holds below it too
        cap = caps.get(batch)
        key = running if cap is None or pd.isna(cap) else min(running, int(cap))
        if key < -(-batch // replicas):
            held.append(batch)
        if key in capped:  # the batch nearest the cap keys it
            continue
        per_replica[key] = steps
        if key < running:
            capped.add(key)
    policy, last = {}, None
    for batch, steps in per_replica.items():  # an entry that repeats the one before it does nothing
        if steps != last:
            policy[batch], last = steps, steps
    table_text = ", ".join(f"{b}: {v}" for b, v in policy.items())
    per = f"; keys per replica: batch / {replicas} replicas" if replicas > 1 else ""
    held_text = f"; {_batches(held)} keyed at the running cap" if held else ""
    trees = table.batch[table.tps_topk > 1].tolist()
    tree_text = f"; {_batches(trees)} picked a tree, which a policy cannot set" if trees else ""
    return (f"policy: {{steps_by_batch: {{{table_text}}}}}   # under speculative:, with steps >= "
            f"{max(max(policy.values()), 1)}{per}{held_text}{tree_text}")
