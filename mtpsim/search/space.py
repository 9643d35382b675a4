"""The search space: the kept deployments of N GPUs (layouts.py) x designs x steps x loads, as
validated points.

Each kept layout runs `none` and the scenario's design at steps 1 up to the most the design, the
model and the acceptance allow (candidate_steps), at each load of the ladder: closed-loop users
over all replicas (each replica's running-request cap set to its share, unless the scenario sets
one: the launch flags then pass that cap), or Poisson rates. `mtpsim recommend` builds its
one-layout grid from the same pieces (layouts.py's layout_of and at_layout, with_load with
`keep_cap`), leaving the cap to the engine as `mtpsim run` resolves it.
"""
from __future__ import annotations

import math

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.checks import as_built_for
from mtpsim.designs import BASELINE, record
from mtpsim.engine_advice import lacked_method
from mtpsim.engine_forms import Drafter, cannot_launch, scenario_cannot_launch
from mtpsim.errors import ScenarioError, silenced, warn
from mtpsim.heaviness import heavy_load
from mtpsim.schema import MAX_STEPS
from mtpsim.search.bounds import DEFAULT_LADDER, MAX_SEARCH_POINTS, SearchBounds, bound_origin
from mtpsim.search.layouts import Layout, at_layout, kv_problem


def candidate_steps(s: sc.Scenario, max_steps: int | None, origin: tuple[str, str] = ("--max-steps", "")) -> list[int]:
    """1..the most steps that the max_steps limit, the design with this model (one MTP layer
    or head per step, say), and the acceptance profile's depths all allow; `origin` (file or
    flag, key): where max_steps came from, which a limit past what runs is warned on."""
    acc = s.acceptance  # a tree's matrix gives a row a depth, whatever steps the scenario drafts (its profile keeps those)
    depths = len(acc.per_depth_topk) if acc.per_depth_topk is not None else \
        len(AcceptanceProfile.from_section(acc, s.speculative.steps, s.source).alphas)
    limit = min(max_steps or MAX_STEPS, depths)
    design, draft = record(s.speculative.design), s.specs.draft or s.specs.assistant
    model = as_built_for(s.specs.model, draft)  # a config.json's DSpark target is its drafter's, as checks.py has it
    found = list(range(1, limit + 1))
    for steps in found:
        spec = s.speculative.model_copy(update={"steps": steps, "topk": 1, "draft_tokens": None, "policy": None})
        if design.problems(spec, model, draft):
            found = list(range(1, steps))
            break
    if max_steps is not None and found and max_steps > found[-1]:
        why = f"the acceptance gives {depths} depths" if found[-1] == depths else f"{s.speculative.design} with this " \
            f"model runs at most {found[-1]}"
        warn(*origin, f"{max_steps} asked, {found[-1]} compared: {why}")
    return found


def searched_designs(base: sc.Scenario, bounds: SearchBounds) -> list[str]:
    """search.designs, else none and the scenario's own design."""
    return bounds.designs or list(dict.fromkeys([BASELINE, base.speculative.design]))


def steps_by_design(base: sc.Scenario, bounds: SearchBounds, flags: set[str] = frozenset()) -> dict[str, list[int]]:
    """Each searched design that drafts -> the steps it can run with this model and acceptance
    (candidate_steps of the scenario as that design: nextn's are not multi_layer's); a
    ScenarioError for a design that runs none or a topk it cannot draft (check_topk), and a
    warning for max_steps / topk when no searched design drafts. Each bound is blamed where it
    came from: its flag where one of `flags` gave it (bound_origin), else the search section."""
    key = "search.designs" if bounds.designs else "speculative.design"
    out = {}
    if bounds.designs and BASELINE not in bounds.designs:  # the MTP-off arm every comparison reads
        warn(base.source, "search.designs", f"leaves out {BASELINE}: frontier.csv's speedup column has no plain "
             "decoding to compare against (empty), and the report no frontier without MTP")
    for design in searched_designs(base, bounds):
        if record(design).draft_part is None:
            continue
        s = base if design == base.speculative.design else as_design(base, design, key)
        lacking = lacked_method(s) if s is not base else None  # the scenario's own is warned of as it loads
        if lacking is not None:  # as_design's trial is silent: a searched design was picked, flags and all
            warn(base.source, key, f"{design}: {lacking[1]}")
        steps = candidate_steps(s, bounds.max_steps, bound_origin(base.source, flags, "max_steps"))
        if not steps:
            spec = s.speculative.model_copy(update={"steps": 1, "topk": 1, "draft_tokens": None, "policy": None})
            draft = s.specs.draft or s.specs.assistant
            why = "; ".join(f"{k}: {r}" for k, r in record(design).problems(spec, as_built_for(s.specs.model, draft),
                                                                            draft))
            raise ScenarioError(base.source, key, f"{design} cannot run one step here ({why or 'no depth to draft'})")
        if "topk" in bounds.model_fields_set:
            check_topk(s, max(bounds.topk), bound_origin(base.source, flags, "topk"))
        out[design] = steps
    if not out:
        for bound, given in (("max_steps", bounds.max_steps is not None), ("topk", "topk" in bounds.model_fields_set)):
            if given:
                warn(*bound_origin(base.source, flags, bound), f"no searched design drafts (speculative.design "
                     f"{base.speculative.design}; add one with search.designs): it changes nothing")
    return out


def check_topk(s: sc.Scenario, topk: int, origin: tuple[str, str]) -> None:
    """A ScenarioError naming `origin` (--topk, search.topk) where the scenario cannot draft trees
    `topk` wide (the design drafts chains, the acceptance gives no per-rank columns): the width
    was asked there, not in the scenario, whose own topk runs."""
    if topk == 1:
        return
    data = s.model_dump(exclude={"sweep", "search"}, exclude_none=True)
    spec = {k: v for k, v in data["speculative"].items() if k not in ("policy", "draft_tokens")}
    data["speculative"] = {**spec, "steps": 1, "topk": topk}
    try:
        with silenced():  # a trial: the points themselves warn
            sc.validate(data, s.source)
    except ScenarioError as exc:
        raise ScenarioError(*origin, f"topk {topk}: {exc.key + ': ' if exc.key else ''}{exc.reason}") from None


def as_design(base: sc.Scenario, design: str, key: str) -> sc.Scenario:
    """The scenario run as `design` (its own draft and checks) at one step; a
    ScenarioError naming `key` when it cannot be."""
    data = base.model_dump(exclude={"sweep", "search"}, exclude_none=True)
    spec = {k: v for k, v in data["speculative"].items() if k not in ("policy", "draft_tokens")}
    data["speculative"] = {**spec, "design": design, "steps": 1, "topk": 1}  # candidate_steps tries more
    try:
        return sc.validate(data, base.source)
    except ScenarioError as exc:
        raise ScenarioError(base.source, key, f"{design}: {exc.key + ': ' if exc.key else ''}{exc.reason}") from None


def design_settings(base: sc.Scenario, bounds: SearchBounds, steps: dict[str, list[int]]) -> list[dict]:
    """The `speculative:` sections to try: none, then each design x its steps x topk."""
    out = []
    for design in searched_designs(base, bounds):
        if record(design).draft_part is None:
            out.append({"design": design})
            continue
        spec = base.speculative.model_dump(exclude_none=True, exclude={"policy", "draft_tokens"})
        out += [{**spec, "design": design, "steps": S, "topk": k} for k in topks(base, bounds, design)
                for S in steps[design]]
    return out


DEFAULT_MAX_TOPK = 4  # trees tried by default: topk 1..this, within the ranks the acceptance gives


def topks(base: sc.Scenario, bounds: SearchBounds, design: str) -> list[int]:
    """search.topk when set; else default_topks."""
    return list(bounds.topk) if "topk" in bounds.model_fields_set else default_topks(base, design)


def default_topks(base: sc.Scenario, design: str) -> list[int]:
    """The widths search and recommend try unless asked: chains, plus trees up to
    DEFAULT_MAX_TOPK for a design that drafts them when the acceptance gives per-rank columns
    (acceptance.per_depth_topk), the scenario's own topk always among them."""
    if not record(design).trees or base.acceptance.per_depth_topk is None:
        return [1]
    chains_only = cannot_launch(base.engine.kind, design, 2, 1, 1, 1, Drafter.of(base))
    if chains_only is not None and chains_only[0] == "speculative.topk":  # vLLM, TensorRT-LLM: chains only
        return [1]
    ranks = min(len(row) for row in base.acceptance.per_depth_topk)
    own = base.speculative.topk if design == base.speculative.design else 1
    return sorted(set(range(1, min(ranks, DEFAULT_MAX_TOPK) + 1)) | {min(own, ranks)})


def loads(bounds: SearchBounds) -> list[dict]:
    """The workload changes of each load: closed-loop users, or Poisson rates."""
    if bounds.rates is not None:
        return [{"arrival": "poisson", "rate_per_s": r, "num_requests": max(8, math.ceil(r * bounds.requests_per_rate_s))}
                for r in bounds.rates]
    return closed_loads(bounds.concurrency or list(DEFAULT_LADDER), bounds.requests_per_user)


def closed_loads(ladder: list[int], per_user: int) -> list[dict]:
    """Closed-loop loads: each of `ladder` users sends `per_user` requests."""
    return [{"arrival": "closed", "concurrency": c, "num_requests": c * per_user} for c in ladder]


def with_load(s: sc.Scenario, load: dict, layout: Layout, keep_cap: bool,
              origin: tuple[str, str] | None = None) -> sc.Scenario:
    """`s` under one load: its workload's arrival keys replaced, the point labelled, and (closed
    loop, unless `keep_cap`) each replica's running-request cap set to its share of the users.
    With `keep_cap` the cap is the scenario's, else the engine's rule for the design (engines.py
    EngineSpec.max_running), exactly as `mtpsim run` resolves it. `origin` (file or flag, key):
    where the load came from, which a load the workload schema refuses is blamed on."""
    workload = s.workload.model_dump(exclude={"rate_per_s", "rate_schedule", "trace", "concurrency"})
    data = s.model_dump(exclude={"sweep", "search"}, exclude_none=True)
    data["workload"] = {**workload, **load}
    if load["arrival"] == "closed" and not keep_cap:
        # a replica's users, up to a multiple of its attention-DP ranks: SGLang gives each rank
        # cap // ranks (checks.py), so 1 user over 2 ranks would launch a cap that admits none
        users = math.ceil(load["concurrency"] / layout.replicas)
        cap = -(-users // layout.attention_dp) * layout.attention_dp
        data["engine"] = {**data.get("engine", {}), "max_running_requests": cap}
    label = {"layout": layout.label, "concurrency" if "concurrency" in load else "rate_per_s":
             load.get("concurrency", load.get("rate_per_s"))}
    try:
        return sc.validate(data, s.source, label)
    except ScenarioError as exc:
        if origin is None or not exc.key.startswith("workload."):
            raise
        what = f"{label[list(label)[1]]:g} {'users' if 'concurrency' in load else 'requests/s'}"
        raise ScenarioError(*origin, f"{what}: the workload this load makes is refused ({exc.key}: {exc.reason})") from None


def points(base: sc.Scenario, layouts: list[Layout], settings: list[dict], bounds: SearchBounds,
           origin: tuple[str, str] | None = None) -> list[sc.Scenario]:
    """Every layout x setting x load as a validated point (a ScenarioError past MAX_SEARCH_POINTS);
    `origin`: where the loads came from (with_load)."""
    ladder = loads(bounds)
    total = len(layouts) * len(settings) * len(ladder)
    if total > MAX_SEARCH_POINTS:
        where, key = origin if origin is not None and origin[0].startswith("--") else (base.source, "search")
        raise ScenarioError(where, key, f"{len(layouts)} layouts x {len(settings)} settings x {len(ladder)} loads is "
                            f"{total:,} points, over the limit of {MAX_SEARCH_POINTS:,} (narrow tp, ep, attention_dp, "
                            "the loads or the steps)")
    cap_set = base.engine.max_running_requests is not None
    out, unfit = [], {}  # unfit: design -> (its settings x layouts that leave no KV pool, the first why)
    unlaunched: list[str] = []  # settings x layouts the scenario's engine has no launch options for
    for layout in layouts:
        for spec in settings:
            s = at_layout(base, layout, spec)
            launch = scenario_cannot_launch(s)
            if launch is not None:  # the engine could not run it: not a deployment to offer
                unlaunched.append(f"{layout.label}, {setting_label(spec)}: {launch[1]}")
                continue
            # a layout is kept for the scenario's own design (fitting_layouts); a searched design's
            # draft (weights, KV) may not fit beside the target there: its points are not run
            problem = kv_problem(s) if spec["design"] != BASELINE else None
            if problem:
                count, why = unfit.get(spec["design"], (0, f"{layout.label}, {setting_label(spec)}: {problem}"))
                unfit[spec["design"]] = (count + 1, why)
                continue
            out += [with_load(s, load, layout, cap_set, origin) for load in ladder]
    _say_unlaunched(base, unlaunched, len(layouts) * len(settings), bool(out or unfit))
    _say_unfit(base, bounds, unfit, layouts, settings)
    # after the points validate: a refused load is one line. A point's size is its requests per
    # user or per rate where the search section sets them, else the load that multiplies them
    size = "requests_per_rate_s" if bounds.rates is not None else "requests_per_user"
    sized = base.search is not None and size in base.search.model_fields_set
    heavy_load(out, (base.source, f"search.{size}") if sized else origin or (base.source, "search"))
    return out


def setting_label(spec: dict) -> str:
    """A `speculative:` setting as tables name it: `nextn S=2` (`topk 2` for a tree), `none`."""
    if spec["design"] == BASELINE:
        return BASELINE
    return f"{spec['design']} S={spec['steps']}" + (f" topk {spec['topk']}" if spec.get("topk", 1) > 1 else "")


def _say_unlaunched(base: sc.Scenario, unlaunched: list[str], total: int, any_left: bool) -> None:
    """A ScenarioError where the scenario's engine can launch none of the settings x layouts
    searched, else one warning that those it cannot are not run (engine_forms.py)."""
    if not unlaunched:
        return
    engine = f"{base.engine.kind} {base.specs.engine.version}"
    if not any_left:
        raise ScenarioError(base.source, "engine.kind", f"{engine} can launch none of the {total} settings x layouts "
                            f"searched (e.g. {unlaunched[0]}): search another engine, or narrow the search to what it runs")
    warn(base.source, "engine.kind", f"{len(unlaunched)} of the {total} settings x layouts searched are not run: {engine} "
         f"cannot launch them (e.g. {unlaunched[0]})")  # each example: `LAYOUT, SETTING: cannot run ...`


def _say_unfit(base: sc.Scenario, bounds: SearchBounds, unfit: dict, layouts: list[Layout], settings: list[dict]) -> None:
    """A ScenarioError for a searched design whose settings fit on no layout (its draft leaves no
    KV pool for the longest request), else one warning per design some of whose points do not
    fit and are left out; both name the key that asked for the design."""
    key = "search.designs" if bounds.designs else "speculative.design"
    for design, (count, why) in unfit.items():
        total = len(layouts) * sum(1 for spec in settings if spec["design"] == design)
        if count == total:
            raise ScenarioError(base.source, key, f"{design} fits on none of the {len(layouts)} layouts its GPUs "
                                f"allow ({why})")
        warn(base.source, key, f"{design}: {count} of its {total} settings x layouts do not fit and are not run "
             f"(e.g. {why})")
