"""The checks a validated scenario's acceptance must pass against the speculation it serves (checks.py
runs them for a design that drafts): one value per depth, a tree's rank form or reach, a kept-length
rule's widths, an accept-length curve that reaches speculative.steps and no step past what the design
runs, a forced setting in its engine's range. Each a ScenarioError naming the key to change.
"""
from __future__ import annotations

from mtpsim import designs
from mtpsim.acceptance import AcceptanceProfile, named_curve
from mtpsim.errors import ScenarioError
from mtpsim.schema import ACCEPTANCE_FORMS, Scenario


def check_acceptance(s: Scenario, where: str, built) -> None:
    """The acceptance of a design that drafts, against its steps, tree shape, kept-length rule and
    forced setting; `built`: the model as the draft was built for (checks.py as_built_for)."""
    a = s.acceptance
    _check_tree_acceptance(s, where)
    if a.kept_by != "confidence" and a.kept_length is None:
        raise ScenarioError(where, "acceptance.kept_by", f"{a.kept_by} sets the widths acceptance.kept_length gives, "
                            "and there is none: give kept_length (entry j: P(exactly j drafts kept))")
    if a.kept_length is not None and s.speculative.topk > 1:
        raise ScenarioError(where, "acceptance.kept_length", "a kept length cuts a chain or block per request: "
                            f"topk must be 1 (got {s.speculative.topk})")
    for key in ("per_depth", "cumulative"):
        values = getattr(a, key)
        if values is not None and len(values) < s.speculative.steps:
            raise ScenarioError(where, f"acceptance.{key}",
                                f"{len(values)} values for {s.speculative.steps} steps (need one per depth)")
    if a.accept_length is not None and a.accept_length > s.speculative.steps + 1:
        raise ScenarioError(where, "acceptance.accept_length",
                            f"{a.accept_length} exceeds steps + 1 = {s.speculative.steps + 1}")
    most = AcceptanceProfile.most_with_kept(s.speculative.steps, a.kept_length)
    if a.accept_length is not None and a.kept_length is not None and a.accept_length > most + 1e-9:
        raise ScenarioError(where, "acceptance.accept_length",
                            f"{a.accept_length:g} exceeds {most:.4g}, 1 + the mean drafts acceptance.kept_length keeps "
                            f"of speculative.steps {s.speculative.steps}: beside a kept-length rule the accept length is "
                            "the one measured with it on, every kept draft accepted at most")
    if all(getattr(a, k) is None for k in ACCEPTANCE_FORMS):
        raise ScenarioError(where, "acceptance", f"design {s.speculative.design} needs an acceptance profile")
    _check_curve(s, where, built)
    if a.forced is not None:  # the engine's own range for its knob
        AcceptanceProfile.forced(a.forced.engine, a.forced.setting, s.speculative.steps, where)


def _check_curve(s: Scenario, where: str, built) -> None:
    """An accept-length curve (given, or named) reaches speculative.steps and no further than the
    design runs with this model (a step past that was measured on another draft)."""
    a, spec = s.acceptance, s.speculative
    if a.accept_length_by_steps is None and a.profile is None:
        return
    key = "acceptance.accept_length_by_steps" if a.profile is None else "acceptance.profile"
    curve = a.accept_length_by_steps or named_curve(a.profile, where)
    if max(curve) < spec.steps:
        raise ScenarioError(where, key, f"the curve ends at {max(curve)} steps and speculative.steps is {spec.steps}")
    record, draft = designs.record(spec.design), s.specs.draft or s.specs.assistant
    for steps in sorted(curve):
        trial = spec.model_copy(update={"steps": steps, "topk": 1, "draft_tokens": None, "policy": None})
        problems = record.problems(trial, built, draft)
        if problems:
            raise ScenarioError(where, f"{key}.{steps}" if a.profile is None else key,
                                f"steps {steps} is beyond what {spec.design} runs with model "
                                f"{s.specs.model.name!r}: {problems[0][1]}")


def _check_tree_acceptance(s: Scenario, where: str) -> None:
    """A tree (topk > 1) needs acceptance per depth and per rank, or an accept length it reads
    through a one-parameter rank family (tree.py tree_rank_rows; speculation_advice says
    so), within the tree's reach; per_depth_topk needs one row per step and a column for each of
    the topk ranks the draft proposes (more are ignored, as depths past steps are, so one matrix
    serves a sweep over topk); a design that only drafts chains takes one column."""
    a, spec = s.acceptance, s.speculative
    if spec.topk > 1 and a.accept_length is not None:
        from mtpsim.tree import tree_most  # trees only: a chain never reads tree.py
        most = tree_most(spec.steps, spec.num_draft_tokens)
        if a.accept_length > most:  # as written (repr): 5.00000001 is past 5, which `:g` printed as 5
            raise ScenarioError(where, "acceptance.accept_length", f"{a.accept_length!r} exceeds {most}, the "
                                f"deepest path a tree of {spec.num_draft_tokens} tokens (speculative.draft_tokens, the "
                                f"root included) over {spec.steps} steps can accept, plus the bonus token")
        return
    if spec.topk > 1 and a.per_depth_topk is None:
        raise ScenarioError(where, "acceptance", f"tree drafts (topk {spec.topk}) need acceptance.per_depth_topk "
                            "(per depth, the probability of each rank of the draft's candidates) or "
                            "acceptance.accept_length (read through a one-parameter rank family)")
    rows = a.per_depth_topk
    if rows is None:
        return
    if len(rows) < spec.steps:
        raise ScenarioError(where, "acceptance.per_depth_topk",
                            f"{len(rows)} rows for {spec.steps} steps (need one per depth)")
    chain_only = not designs.record(spec.design).trees
    for depth, row in enumerate(rows[: spec.steps], start=1):
        if chain_only and len(row) > 1:
            raise ScenarioError(where, "acceptance.per_depth_topk", f"row {depth} has {len(row)} columns and design "
                                f"{spec.design} proposes a chain (one candidate per depth): give one column")
        if len(row) < spec.topk:
            raise ScenarioError(where, "acceptance.per_depth_topk", f"row {depth} has {len(row)} columns and "
                                f"speculative.topk is {spec.topk} (one column per rank)")
