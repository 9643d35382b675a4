"""Warnings about what a scenario asks of its speculation that cannot matter (advice.py runs them
with the rest): a draft or an acceptance for a design that drafts nothing, steps_by_batch entries
no batch reaches, drafts the acceptance never accepts, a histogram or kept-length curve that does
not fit the steps it serves, a forced acceptance its engine bends. Each check takes the scenario and
returns (dotted key, reason) pairs."""
from __future__ import annotations

from mtpsim import designs, workload_advice
from mtpsim.acceptance_schema import ACCEPTANCE_FORMS
from mtpsim.schema import Scenario


def ignored_by_design(s: Scenario) -> list[tuple[str, str]]:
    """An acceptance for a design that drafts nothing (unless a searched design drafts), and a
    draft for a design that takes no external one (unless a searched design takes one)."""
    spec, record = s.speculative, designs.record(s.speculative.design)
    found = []
    if record.draft_part is None and any(getattr(s.acceptance, k) is not None for k in ACCEPTANCE_FORMS) \
            and not any(designs.record(d).draft_part is not None for d in s.searched_designs):
        found.append(("acceptance", f"design {spec.design} drafts nothing: its acceptance is ignored"))
    if spec.draft is not None and record.external is None \
            and not any(designs.record(d).external is not None for d in s.searched_designs):
        found.append(("speculative.draft", f"design {spec.design} takes no external draft: it is ignored"))
    # a tree's verify width: said, not dropped in silence (topk past 1 is refused under none; steps
    # stays quiet, as a scenario switched to none by --set keeps the steps of the design it had)
    if record.draft_part is None and spec.draft_tokens is not None \
            and not any(designs.record(d).draft_part is not None for d in s.searched_designs):
        found.append(("speculative.draft_tokens", f"design {spec.design} drafts nothing: it is ignored"))
    return found


def draft_of_another_target(s: Scenario) -> list[tuple[str, str]]:
    """An external draft trained on another target's hidden states (its `trained_for`): the engine
    loads it where the widths match, but what it accepts is the acceptance of the pair it was
    trained in, not of this one (design_checks.external_fits checks the widths)."""
    draft = s.specs.draft
    trained = draft.trained_for if draft is not None and draft.role == "draft" else None
    model = s.specs.model
    if not trained or model.name in trained or any(a in trained for a in model.aliases):
        return []
    return [("speculative.draft", f"{draft.name!r} was trained on the hidden states of {' and '.join(trained)} "
             f"(trained_for), not model {model.name!r}: it runs where the widths match, but what it accepts on this target "
             "is not measured: the acceptance given is an assumption")]


def profile_of_another(s: Scenario) -> list[tuple[str, str]]:
    """A named acceptance curve measured on another target or with another drafter than the
    scenario's (its entry's `model` and `method`): it may stand in, but as an assumption."""
    name = s.acceptance.profile
    if name is None or designs.record(s.speculative.design).draft_part is None:
        return []
    from mtpsim.acceptance import named_curves
    entry, model = named_curves().get(name, {}), s.specs.model
    measured, method, mine = entry.get("model"), entry.get("method"), _method(s)
    other_model = measured is None or (model.name != measured and measured not in model.aliases)
    if not other_model and method in (None, mine):
        return []
    on = f"on {measured}" if measured else "on a model not in the catalog"
    differs = " and ".join(x for x in (f"targets {model.name!r}" if other_model else "",
                                        f"drafts with {mine}" if method not in (None, mine) else "") if x)
    return [("acceptance.profile", f"{name!r} was measured {on}, drafting with {method or 'its own drafter'}, "
             f"where this scenario {differs}: the curve stands in as an assumption, not a measurement of it")]


def _method(s: Scenario) -> str:
    """How the scenario drafts, in the words named curves use: mtp (the model's own MTP layers),
    eagle3 (an external EAGLE-3 head), a block drafter's kind, else the design."""
    design, draft = s.speculative.design, s.specs.draft
    if design == "block":
        return s.specs.block_kind or "block"
    if design == "nextn" and draft is not None:
        return "eagle3" if draft.fused_target_layers is not None else "an external draft"
    return "mtp" if design in ("nextn", "multi_layer") else design


def unreached_policy(s: Scenario) -> list[tuple[str, str]]:
    """steps_by_batch entries whose batch no iteration can run: past the running-request cap,
    the number of requests, a closed loop's users, or a batch load's share of one replica (all
    its requests arrive at once and are dealt evenly, unless a cache-aware router piles them up).
    The policy keys on one replica's batch, so entries past a closed loop's share of a replica
    (its users over dp) are said apart: a router may pile requests on one replica, so they are
    rarely reached, not never."""
    policy = s.speculative.policy
    if policy is None:
        return []
    if not any(policy.steps_by_batch.values()):
        return [("speculative.policy.steps_by_batch", "every entry drafts 0 steps: no iteration speculates, and the "
                 "run is plain decode paying for the draft's weights and KV")]
    w, load = s.workload, workload_advice.load_bounds(s)
    replicas, spread = (s.parallel.dp, "parallel.dp") if s.disaggregation is None else \
        (s.disaggregation.decode.replicas, "disaggregation.decode.replicas")
    bounds = [(s.specs.engine.max_running(s.speculative.design, s.engine.max_running_requests, s.specs.hardware),
               "the running-request cap"),
              (load.requests, load.requests_by)]
    if w.arrival == "closed":
        bounds.append((w.concurrency, "workload.concurrency"))
    elif w.arrival == "batch" and replicas > 1 and s.specs.engine.routing(s.engine.dp_routing).policy != "cache_aware":
        bounds.append((-(-w.num_requests // replicas), f"workload.num_requests {w.num_requests} sent at once, dealt "
                       f"over {spread} {replicas}"))
    most, by = min(bounds)
    share = -(-w.concurrency // replicas) if w.arrival == "closed" and replicas > 1 else most
    never = most < max(policy.steps_by_batch)  # said first: entries no iteration reaches at all
    past = [k for k in sorted(policy.steps_by_batch) if k > (most if never else share)]
    if not past:
        return []
    key = f"speculative.policy.steps_by_batch.{past[0]}"
    which = "this entry is" if len(past) == 1 else f"{len(past)} entries from this one are"
    if never:
        return [(key, f"no iteration of this workload runs more than {most} requests ({by}), so {which} never used")]
    return [(key, f"the policy keys on one replica's batch, and workload.concurrency {w.concurrency} over {spread} "
             f"{replicas} is {share} users a replica: {which} reached only where the router piles more than its "
             "share on one replica (entries count a replica's requests, not all of them)")]


def dead_drafts(s: Scenario) -> list[tuple[str, str]]:
    """Drafts the acceptance never accepts (0 from some depth on): they only cost time. A
    histogram says so in its own words (deep_histogram)."""
    from mtpsim.acceptance import AcceptanceProfile
    from mtpsim.errors import ScenarioError
    steps, acc = s.speculative.steps, s.acceptance
    if designs.record(s.speculative.design).draft_part is None or acc.histogram is not None or not steps:
        return []
    spec = s.speculative
    if spec.topk > 1 and spec.draft_tokens is not None and spec.draft_tokens - 1 < steps:
        # a tree of N - 1 drafted tokens holds no path deeper than N - 1: the acceptance is not at fault
        deepest = spec.draft_tokens - 1
        drafts = f"draft {steps} is" if deepest + 1 == steps else f"drafts {deepest + 1}..{steps} are"
        return [("speculative.draft_tokens", f"{spec.draft_tokens} verified tokens (the root and {deepest} of the "
                 f"tree's) hold no path deeper than {deepest}: {drafts} never verified of speculative.steps {steps}, "
                 "and only cost time")]
    form = next((k for k in ACCEPTANCE_FORMS if getattr(acc, k) is not None), None)
    if form in (None, "forced"):  # a forced setting has its engine's own warnings (forced_past_its_range)
        return []
    try:
        alphas = AcceptanceProfile.from_section(acc, steps, s.source, s.speculative.topk, s.speculative.draft_tokens).alphas
    except (ScenarioError, ValueError):  # refused by the scenario's own checks, in their words
        return []
    dead = next((i for i, a in enumerate(alphas[:steps]) if a <= 0), None)
    if dead is None:
        return []
    drafts = f"draft {steps}" if dead + 1 == steps else f"drafts {dead + 1}..{steps}"
    return [(f"acceptance.{form}", f"no draft past depth {dead} is ever accepted: {drafts} of speculative.steps "
             f"{steps} only cost time")]


def tree_read_from_length(s: Scenario) -> list[tuple[str, str]]:
    """A tree's accept length alone: how it splits over the draft's ranks is the rank family's
    assumption (tree.py tree_rank_rows), said with the rate it solved."""
    spec, length = s.speculative, s.acceptance.accept_length
    if spec.topk == 1 or length is None or designs.record(spec.design).draft_part is None:
        return []
    from mtpsim.tree import tree_rank_rate
    try:
        rate = tree_rank_rate(length, spec.steps, spec.topk, spec.num_draft_tokens)
    except ValueError:  # past the tree's reach: checks.py refuses it in its own words
        return []
    return [("acceptance.accept_length", f"a tree's accept length alone does not say how acceptance splits over the "
             f"draft's {spec.topk} ranks: mtpsim assumes rank j (0 = best) catches the target's token with "
             f"r (1 - r)^j at every depth, r = {rate:.4f} solved so this tree of {spec.num_draft_tokens} tokens "
             f"accepts {length:g}; give acceptance.per_depth_topk for a measured split")]


def deep_histogram(s: Scenario) -> list[tuple[str, str]]:
    from mtpsim.acceptance_histogram import read_histogram
    if s.acceptance.histogram is None or designs.record(s.speculative.design).draft_part is None:
        return []
    counts = read_histogram(s.acceptance.histogram)
    depth, steps = int(counts.nonzero()[0].max()), s.speculative.steps  # the deepest row that counts anything
    if depth > steps:
        return [("acceptance.histogram", f"counts up to {depth} accepted drafts, more than speculative.steps "
                 f"{steps}: it was measured with more steps, and its depths past {steps} are not used")]
    if depth < steps:
        return [("acceptance.histogram", f"counts at most {depth} accepted drafts of speculative.steps {steps}: "
                 f"drafts {depth + 1}..{steps} are never accepted, so they only cost time (measured with fewer "
                 "steps?)")]
    return []


def kept_past_the_steps(s: Scenario) -> list[tuple[str, str]]:
    """A kept-length curve deeper than the drafts an iteration makes (a request keeps at most
    speculative.steps)."""
    kept = s.acceptance.kept_length
    if kept is not None and len(kept) - 1 > s.speculative.steps > 0:
        return [("acceptance.kept_length", f"gives P(j kept) up to j = {len(kept) - 1}, more than "
                 f"speculative.steps {s.speculative.steps}: a request keeps at most {s.speculative.steps}, so "
                 "the entries past it count as keeping them all")]
    return []


def forced_past_its_range(s: Scenario) -> list[tuple[str, str]]:
    """A forced-acceptance setting the engine's rule bends (acceptance.py AcceptanceProfile.forced):
    SGLang clamps the accept length to [1, steps + 1], TensorRT-LLM accepts every draft past
    steps; and a forcing rule of another engine than the one simulated."""
    forced, steps, policy = s.acceptance.forced, s.speculative.steps, s.speculative.policy
    if forced is None or designs.record(s.speculative.design).draft_part is None:
        return []
    # each iteration's rule reads the steps it runs: a steps_by_batch policy's fewest (above 0) bind first
    fewest = min((n for n in policy.steps_by_batch.values() if n), default=steps) if policy else steps
    named = "steps" if fewest == steps else "the fewest steps speculative.policy runs"
    found = []
    if forced.engine == "sglang" and not 1 <= forced.setting <= fewest + 1:
        found.append(("acceptance.forced.setting", f"{forced.setting:g} lies outside [1, {named} + 1 = {fewest + 1}]: "
                      f"SGLang clamps SGLANG_SIMULATE_ACC_LEN to {min(max(forced.setting, 1), fewest + 1):g}"))
    if forced.engine == "trtllm" and forced.setting > fewest:
        found.append(("acceptance.forced.setting", f"{forced.setting:g} accepted drafts is more than {named} "
                      f"{fewest}: TensorRT-LLM accepts all {fewest}"))
    if forced.engine != s.engine.kind:
        found.append(("acceptance.forced.engine", f"reproduces {forced.engine}'s forcing rule while engine.kind is "
                      f"{s.engine.kind}"))
    return found
