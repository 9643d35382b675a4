"""`mtpsim search SCENARIO --gpus N`: enumerate, run (cached), pick under targets, write the frontier.

The output folder holds frontier.csv (every point, frontier.COLUMNS), frontier.png,
finalists.csv (the two best deployments; over `--seeds` seeds when asked) and launch.txt (the
chosen deployment as each engine's launch options, flags.py). It is claimed before any point
runs and marked complete (runfolder.COMPLETE) last, as `mtpsim run`'s is.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from mtpsim import scenario as sc
from mtpsim import sweep
from mtpsim.advice import GRID_CHECKS, advise, swept_search
from mtpsim.api_checks import workers
from mtpsim.budget_advice import budget_at_points
from mtpsim.designs import record
from mtpsim.engine_forms import Drafter
from mtpsim.errors import ScenarioError, from_validation, holding, printable, short, warn
from mtpsim.intervals import half_width
from mtpsim.memory import engram_remedy
from mtpsim.outputs import writing
from mtpsim.overrides import REPLACED, flags_over_sets
from mtpsim.runfolder import claimed, free_out, mark_complete, write_csv
from mtpsim.schema import check_replicates
from mtpsim.search import DEFAULT_CACHE, disagg, execute, frontier, rankable, space, summary
from mtpsim.search.bounds import SearchBounds
from mtpsim.search.flags import launch_flags
from mtpsim.search.layouts import fitting_layouts, has_experts, no_layout_cause
from mtpsim.search.targets import Target, finalists
from mtpsim.textnumbers import decimal_number


def bounds_of(s: sc.Scenario, flags: dict) -> SearchBounds:
    """The scenario's `search:` section with the flags given over it (each checked as the section is)."""
    given = {k: v for k, v in flags.items() if v is not None}
    section = s.search.model_dump(exclude_unset=True) if s.search else {}
    for load, other in (("rates", "concurrency"), ("concurrency", "rates")):  # a load flag replaces the section's load
        if load in given:
            section.pop(other, None)
    merged = {**section, **given}
    try:
        bounds = SearchBounds.model_validate(merged)
    except ValidationError as exc:
        raise from_validation(exc, s.source, "search", data=merged) from None
    repeats = s.search.repeated() if s.search else []  # the section's, as the scenario wrote it
    for key, reason in _idle_bounds(bounds, repeats, set(section) - set(given)):
        warn(s.source, f"search.{key}", reason)
    return bounds


def _idle_bounds(bounds: SearchBounds, repeats: list, written: set[str]) -> list[tuple[str, str]]:
    """(key, why) for each bound the scenario's section sets (`written`: not a flag's) that does
    less than it says: a value listed twice (`repeats`: tried once), a load size for the other
    kind of load, and requests_per_rate_s so small that the floor of requests per point sets the
    rates' sizes."""
    idle = [(key, f"lists {short(value, 40)} more than once: it is tried once") for key, value in repeats
            if key in written]
    closed = bounds.rates is None
    unused = "requests_per_rate_s" if closed else "requests_per_user"
    if unused in written:
        idle.append((unused, f"sizes {'open-loop (rates)' if closed else 'closed-loop (concurrency)'} points, and this "
                     f"search runs {'closed-loop users' if closed else 'Poisson rates'}: it is not used"))
    if not closed and "requests_per_rate_s" in written:
        floored = [load for load in space.loads(bounds)
                   if load["num_requests"] > math.ceil(load["rate_per_s"] * bounds.requests_per_rate_s)]
        if floored:
            rate, runs = floored[0]["rate_per_s"], floored[0]["num_requests"]
            idle.append(("requests_per_rate_s", f"{bounds.requests_per_rate_s:g} s at {rate:g} requests/s is under the "
                         f"{runs} requests a point runs at least: {len(floored)} of the rates run {runs}, not rate x this"))
    return idle


def parse_rates(text: str) -> list[float]:
    parsed = [decimal_number(x) for x in text.split(",")]
    if None in parsed:
        raise ScenarioError("--rates", "", f"{short(text, 60)} is not a comma-separated list of requests per second "
                            "(decimal numbers, e.g. 0.5,2,8)")
    rates = sorted(set(parsed))
    if not all(0 < r <= 1e6 and math.isfinite(r) for r in rates):
        raise ScenarioError("--rates", "", f"{short(text, 60)}: each rate must be in (0, 1e6] requests per second")
    return rates


def base_scenario(path: str, sets: list[str]) -> sc.Scenario:
    """The scenario the search varies (its first point), with acceptance that serves every steps value."""
    points = sc.load(path, sets, advise_points=False, first_only=True)  # this command's own refusals come before any warning
    with sweep.one_point(points, "search") as s:
        if s.disaggregation is not None:
            raise ScenarioError(s.source, "disaggregation", "search lays out its own deployments (aggregated, and "
                                "split ones with --disagg): leave the section out, or run this layout with mtpsim run")
        if record(s.speculative.design).draft_part is not None:
            rankable.refuse_fixed_accept_length(s, "search over steps")
        s = rankable.own_loads(s, "search", "its own loads (closed-loop users or Poisson rates, --concurrency / --rates)")
        rankable.fixed_settings(s, "search", "fixed steps at each load")
        laid = [k for k in ("tp", "ep", "dp", "attention_dp") if k in s.parallel.model_fields_set
                and getattr(s.parallel, k) != 1]  # a layout asked for; the rest of the section (gpus per node) is kept
        if laid:
            warn(s.source, f"parallel.{laid[0]}", f"search lays out its own deployments of --gpus (search.tp, "
                 f"search.ep and search.attention_dp bound them): the scenario's {', '.join(laid)} "
                 f"{'is' if len(laid) == 1 else 'are'} not read")
    # the point searched; its search section is read here, its steps and policy are its own
    advise(points[0], skip=(swept_search, *GRID_CHECKS))
    return s


def seeded(points: list[sc.Scenario], rows: pd.DataFrame, seeds: int, cache, jobs: int, backend: str,
           address: str | None) -> pd.DataFrame:
    """The finalists' points over seeds s..s+seeds-1: mean and 95% half-width of tok/s per GPU."""
    out = []
    for _, row in rows.iterrows():
        p = points[int(row.point)]
        reps = [p.model_copy(update={"seed": p.seed + k}) for k in range(seeds)]  # keeps the resolved specs
        got, _ = execute.run_search_points(reps, cache, jobs, backend, address, progress=False)
        per_gpu = got.tps / row.gpus
        out.append({"point": int(row.point), **{c: row[c] for c in space_columns()}, "seeds": seeds,
                    "tps_per_gpu": per_gpu.mean(), "tps_per_gpu_ci_half": half_width(per_gpu)})
    return pd.DataFrame(out).sort_values("tps_per_gpu", ascending=False, kind="stable", ignore_index=True)


def space_columns() -> list[str]:
    return ["layout", "design", "steps", "topk", "concurrency", "rate_per_s"]


def write_frontier(rows: pd.DataFrame, folder: Path, chosen: pd.Series | None, targets: list[Target], title: str,
                   plot: bool) -> None:
    """frontier.csv, and frontier.png unless `plot` is False (the chosen point marked when there is one)."""
    write_csv(rows[frontier.COLUMNS], folder / "frontier.csv")
    if plot:
        user = [t.value for t in targets if t.metric == "user_tps"] + \
               [1 / t.value for t in targets if t.metric == "tpot" and t.percentile == "p50"]
        with writing(folder / "frontier.png") as png:
            frontier.plot_frontier(rows, png, chosen, max(user) if user else None, title)


def _layouts(base: sc.Scenario, bounds: SearchBounds, flags: dict) -> tuple[list, dict]:
    """(the layouts of bounds.gpus that run the base scenario, {layout: why not} for the rest); a
    ScenarioError where the bounds or the GPUs admit none, naming which (the GPUs by where they
    were given: --gpus, or the scenario's search.gpus, which was said as a --gpus never given)."""
    if bounds.ep and max(bounds.ep) > 1 and not has_experts(base):
        raise ScenarioError(base.source, "search.ep", f"model {base.specs.model.name!r} has no routed experts: expert "
                            "parallelism does not apply to it (give [1] or leave ep out)")
    layouts, refused = fitting_layouts(base, bounds.gpus, bounds)
    if not layouts and not refused:  # the bounds themselves admit no layout: they, not the GPUs, are the cause
        key, why = no_layout_cause(bounds.gpus, bounds, has_experts(base))
        raise ScenarioError(base.source, f"search.{key}", f"{why}, so the search has no layout of {bounds.gpus} GPUs "
                            "to try")
    if not layouts:
        why = "; ".join(f"{k.label}: {v}" for k, v in list(refused.items())[-2:])
        at = ("--gpus", "") if flags.get("gpus") is not None else (base.source, "search.gpus")
        raise ScenarioError(*at, f"no shard of model {base.specs.model.name!r} fits {bounds.gpus} GPUs "
                            f"({len(refused)} layouts tried; e.g. {why}){engram_remedy(base)}")
    return layouts, refused


def _load_origin(base: sc.Scenario, bounds: SearchBounds, flags: dict) -> tuple[str, str]:
    """Where the search's loads came from (a flag, the search section, or its default ladder):
    what a load the workload schema refuses is blamed on."""
    load = "rates" if bounds.rates is not None else "concurrency"
    if flags.get(load) is not None:
        return f"--{load}", ""
    given = base.search is not None and load in base.search.model_fields_set
    return base.source, f"search.{load}" if given else "search"


@dataclass(frozen=True)
class _Plan:
    """A checked search before anything runs: its base scenario, bounds, replicates per finalist,
    the layouts that fit (and why the others do not), every point to run, its workers and cache."""

    base: sc.Scenario
    bounds: SearchBounds
    seeds: int
    layouts: list
    refused: dict
    points: list
    jobs: int
    cache: execute.Cache


FLAG_NAMES = {"gpus": "--gpus", "concurrency": "--concurrency", "rates": "--rates", "max_steps": "--max-steps",
              "disaggregated": "--disagg", "topk": "--topk"}


def _flag_keys(flags: dict, seeds: int | None) -> dict:
    """The keys the flags give, for flags_over_sets: search.<bound> each (a load flag drops the
    other load's bound as well), and seeds."""
    keys = {"seeds": (f"--seeds {seeds}", seeds)}
    for key, value in flags.items():
        if value is None:
            continue
        flag = FLAG_NAMES.get(key, f"--{key}")
        written = flag if isinstance(value, bool) else f"{flag} {','.join(map(str, value)) if isinstance(value, list) else value}"
        keys[f"search.{key}"] = (written, value)
        other = {"rates": "concurrency", "concurrency": "rates"}.get(key)
        if other is not None:
            keys[f"search.{other}"] = (written, REPLACED)
    return keys


def _plan(path: str, sets: list[str], flags: dict, seeds: int | None, out: str | None, jobs: int | None,
          cache_dir: str | None) -> _Plan:
    """Check everything and enumerate the points, under `holding` (warnings wait for the search's
    own checks: bad input stays one line)."""
    with holding():
        flags_over_sets(sets, _flag_keys(flags, seeds))
        base = base_scenario(path, sets)
        seeds = base.seeds if seeds is None else seeds  # no --seeds: the scenario's
        check_replicates(base.seed, seeds, "--seeds", "")  # the finalists' replicates
        bounds = bounds_of(base, flags)
        if base.workload.arrival == "poisson" and bounds.rates is None:  # recommend warns of it too (own_loads)
            warn(base.source, "workload.arrival", "search runs closed-loop users (its concurrency ladder), not the "
                 "scenario's Poisson arrivals: give --rates or search.rates to search Poisson loads")
        if bounds.gpus is None:
            raise ScenarioError("--gpus", "", "how many GPUs to deploy on is required (--gpus N or search.gpus)")
        steps = space.steps_by_design(base, bounds, {k for k, v in flags.items() if v is not None})
        layouts, refused = _layouts(base, bounds, flags)
        settings = space.design_settings(base, bounds, steps)
        origin = _load_origin(base, bounds, flags)
        points = space.points(base, layouts, settings, bounds, origin)
        budget_at_points(points, origin)
        if bounds.disaggregated:
            split_points, split_refused = disagg.points(base, layouts, settings, space.loads(bounds), bounds.gpus,
                                                        base.engine.max_running_requests is not None)
            points += split_points
            refused.update(split_refused)
        jobs = jobs or max(1, min(len(points), os.cpu_count() or 1))
        if cache_dir and out and Path(out).resolve() in (Path(cache_dir).resolve(), *Path(cache_dir).resolve().parents):
            raise ScenarioError("--cache", "", f"{cache_dir} is the --out folder or inside it (a run folder must be new or "
                                "empty): give the cache a folder of its own")
        if cache_dir and out and Path(cache_dir).resolve() in Path(out).resolve().parents:
            raise ScenarioError("--out", "", f"{out} is inside the cache folder {cache_dir}, which holds cache entries only "
                                "(every later search would refuse the cache): give the run a folder outside it")
        cache = execute.Cache(cache_dir)  # a --cache that cannot be a folder is refused here, before anything runs
        free_out(out)  # a busy --out is the one line, not after the scenario's warnings
    return _Plan(base, bounds, seeds, layouts, refused, points, jobs, cache)


def _finalists_or_why(rows: pd.DataFrame, targets: list[Target], folder: Path, title: str, plot: bool,
                      cache_dir: str | None) -> pd.DataFrame:
    """The points meeting the targets, ranked; where none does, what was reached is still written
    (and cached), and the error says where."""
    try:
        return finalists(rows, targets)
    except ScenarioError as exc:
        write_frontier(rows, folder, None, targets, title, plot)
        kept = (f"cached in {cache_dir}, so rerunning with other targets costs nothing" if cache_dir else
                "not cached (--no-cache), so a rerun with other targets runs them again")
        raise ScenarioError(exc.where, exc.key, f"{exc.reason} (what the {len(rows)} points reached: "
                            f"{folder}/frontier.csv; {kept})") from None


def _check_arguments(flags, targets, seeds, jobs, backend) -> None:
    """run_search's arguments as the CLI's parsers would have given them (notebook 01 passes them
    by hand): a mapping of flags, a list of Target, and the workers (api_checks)."""
    where = "mtpsim.search.command.run_search"
    if not isinstance(flags, dict):
        raise ScenarioError(where, "flags", f"is {short(flags, 40)}: a mapping of the search flags ({{}} for none)")
    if not isinstance(targets, (list, tuple)) or not all(isinstance(t, Target) for t in targets):
        raise ScenarioError(where, "targets", f"is {short(targets, 60)}: a list of Target (search.targets.parse_target "
                            "reads 'p99:50ms')")
    workers(where, jobs, backend, seeds)


def run_search(path: str, sets: list[str], flags: dict, targets: list[Target], seeds: int | None, out: str | None,
               jobs: int | None, backend: str = "pool", address: str | None = None,
               cache_dir: str | None = DEFAULT_CACHE, plot: bool = True, peer: bool = False) -> tuple[Path, pd.DataFrame]:
    """The command: check everything, enumerate, run, pick, print, write (`peer`: aiconfigurator's
    answer for the chosen deployment and the best without MTP, peer_compare.py). Returns (folder,
    frontier rows)."""
    _check_arguments(flags, targets, seeds, jobs, backend)
    plan = _plan(path, sets, flags, seeds, out, jobs, cache_dir)
    base, hw = plan.base, plan.base.specs.hardware
    title = f"{base.describe_model()} on {plan.bounds.gpus}x {hw.name}"
    # the output folder is claimed before any point runs (a busy or bad --out costs nothing), and
    # is marked complete last: a search that fails (its report to stdout too) gives the claim back
    # and leaves no complete folder
    with claimed(f"{base.name}-search", out) as folder:
        started = time.perf_counter()
        rows, ran = execute.run_search_points(plan.points, plan.cache, plan.jobs, backend, address)
        rows = frontier.frontier_rows(rows.assign(usd_per_gpu_hour=hw.usd_per_gpu_hour, board_power_w=hw.board_power_w), targets)
        final = _finalists_or_why(rows, targets, folder, title, plot, cache_dir)
        if plan.seeds > 1:
            final = seeded(plan.points, final, plan.seeds, plan.cache, plan.jobs, backend, address)
        wall = time.perf_counter() - started
        write_csv(final, folder / "finalists.csv")
        chosen = rows.loc[int(final.iloc[0].point)]
        write_frontier(rows, folder, chosen, targets, title, plot)
        launch = launch_flags(chosen, int(chosen.max_running), Drafter.of(plan.points[int(chosen.point)]))
        with writing(folder / "launch.txt") as file:
            file.write_text(launch + "\n")
        beside = None
        if peer:  # peer_tables: on first use, not on search's path without --peer
            from mtpsim.peer_tables import search_beside
            beside = search_beside(plan.points, rows, chosen, folder)
        mark_complete(folder)
        print(summary.report(base, plan.bounds, rows, final, chosen, targets, len(plan.layouts), ran, wall, plan.refused))
        print(f"\nlaunch options for the chosen deployment (MODEL, DRAFT: your checkpoints):\n\n{launch}")
        if beside is not None:
            from mtpsim.peer_tables import report as peer_report
            print(f"\nthe chosen deployment and the best without MTP, {peer_report(beside)}")
        print(f"\nwrote {printable(str(folder))}/")  # within claimed: a report that cannot be printed unmarks the folder
    return folder, rows
