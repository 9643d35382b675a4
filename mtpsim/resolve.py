"""A scenario point resolved: a raw mapping validated against the schema, the catalog entries and
the profile it names resolved into its `Specs` (which profile: pricing_choice.py), and the point
checked against them (checks.py).
`validate` is what every point of `scenario.load` goes through, and what builds a point from a
mapping elsewhere (the search's points, a run folder's resolved scenario); `disaggregated` is an
aggregated point on prefill and decode pools.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, ValidationError

from mtpsim import catalog, catalog_lookup, designs
from mtpsim.checks import check_against_specs
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, from_validation, short, warn
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.pricing_choice import resolve_pricing, written_at
from mtpsim.schema import Scenario, Specs
from mtpsim.specs import ModelSpec
from mtpsim.yamlfiles import plain_values


def validate(data: dict[str, Any], where: str = "<scenario>", point: dict[str, Any] | None = None) -> Scenario:
    """A raw mapping -> Scenario with specs resolved and cross-checked against the catalog."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, where, data=data) from None
    scenario._source, scenario._point = where, dict(point or {})
    scenario._specs = _resolve_specs(scenario, where)
    try:
        check_against_specs(scenario, where)
    except ScenarioError as exc:
        if exc.where != where:
            raise
        raise at_default_draft(scenario, scenario.specs.model, exc.key, exc.reason, where) from None
    scenario._resolved_from = _resolved_from(scenario)
    return scenario


def at_default_draft(s: Scenario, model: ModelSpec, key: str, reason: str, where: str) -> ScenarioError:
    """An error about the draft the design reads (at speculative.draft or a key under it), named
    where that draft is written: the model's default assistant or block_draft where the scenario
    gives no speculative.draft (the user wrote no speculative.draft to change), else as it is."""
    field = {"assistant": "assistant", "block_draft": "block_draft"}.get(designs.record(s.speculative.design).external)
    default = getattr(model, field) if field else None
    if s.speculative.draft is not None or default is None or key.split(".")[:2] != ["speculative", "draft"]:
        return ScenarioError(where, key, reason)
    return ScenarioError(*written_at(s.model, "models", field, where),
                         f"the default {field} of model {model.name!r}: {reason}")


RESOLVED_FROM = ("model", "hardware", "engine", "cost")  # the keys `specs` is resolved from (and speculative.draft)


def _resolved_from(s: Scenario) -> tuple:
    """What a point's `specs` were resolved from, as values: changed, the specs no longer fit it."""
    return (*(s.model_dump(include={key})[key] for key in RESOLVED_FROM), s.speculative.draft)


def check_point_type(scenario: Any, caller: str) -> None:
    """`scenario` is a Scenario (one point of mtpsim.load's list), or a ScenarioError naming the
    API function `caller` it was given to, not an AttributeError from deep inside."""
    if not isinstance(scenario, Scenario):
        raise ScenarioError(caller, "", f"takes one point of mtpsim.load's list (a Scenario), not "
                            f"{type(scenario).__name__} {short(scenario, 60)}")


def check_resolved(scenario: Any, caller: str = "mtpsim.simulate") -> None:
    """A point `caller` (the API's simulate) can run: a Scenario `validate` built, its values still
    valid and its specs still those of its model, hardware, engine and cost. A Scenario is frozen,
    but model_copy(update=...) skips validation: its values could be of any type (met as an
    AttributeError deep in the simulation) or name another model than the one its specs hold (a
    silently wrong result). Internal copies (seeds, a search's steps) change only other values."""
    check_point_type(scenario, caller)
    private = scenario.__pydantic_private__ or {}
    if "_specs" not in private:
        raise ScenarioError(caller, "", f"scenario {scenario.name!r} was built without validation (Scenario(...) or "
                            "model_validate): mtpsim.load (a file's path or a mapping) validates it and resolves "
                            "its catalog entries")
    where = scenario.source
    after = " (changed after mtpsim.load validated it: model_copy(update=...) does not validate; load with sets=[...] instead)"
    try:  # a value of another type dumps as it is (no warning) and reads back as the type would: compared below
        again = Scenario.model_validate(scenario.model_dump(round_trip=True, warnings=False))
    except ValidationError as exc:
        err = from_validation(exc, where)
        raise ScenarioError(where, err.key, f"{err.reason}{after}") from None
    odd = next((k for k in Scenario.model_fields if getattr(again, k) != getattr(scenario, k)), None)
    if odd is not None:
        raise ScenarioError(where, odd, f"is {type(getattr(scenario, odd)).__name__} {short(getattr(scenario, odd), 60)}, "
                            f"not the {type(getattr(again, odd)).__name__} validation makes of it{after}")
    keys, now = (*RESOLVED_FROM, "speculative.draft"), _resolved_from(scenario)
    changed = next((k for k, was, is_ in zip(keys, private.get("_resolved_from") or (), now) if was != is_), None)
    if changed is not None:
        raise ScenarioError(where, changed, "changed after mtpsim.load resolved the point's catalog entries, which "
                            "still describe the old value: load with sets=[...] instead of model_copy(update=...)")
    try:  # the checks against the specs it passed when loaded: a changed value can fail them
        check_against_specs(scenario, where)
    except ScenarioError as exc:
        raise ScenarioError(exc.where, exc.key, f"{exc.reason}{after}") from None


def _spec(kind: str, ref: str | dict[str, Any], cls: type[BaseModel], where: str, key: str, mtp_runs: bool = True):
    if isinstance(ref, str):  # the whole spec is one file's (a path, or a catalog name): its errors name that file
        return catalog.spec_file(kind, ref, cls, where, key)
    resolved = catalog.resolve(kind, ref, where, key, mtp_runs)
    try:
        return cls.model_validate(resolved)
    except ValidationError as exc:
        err = from_validation(exc, where, key, data=resolved)
        if "hf_config" in ref:  # the spec was read from config.json: say so, as its keys are the spec's
            inner = err.key.removeprefix(key).lstrip(".")
            if _overridden(ref, inner):  # values this scenario wrote over the file's
                err = ScenarioError(err.where, err.key, f"{err.reason} (in the spec read from "
                                    f"{short(ref['hf_config'], 200)} with this scenario's overrides)")
            else:  # the config.json's own value: the scenario has no such key to blame
                err = ScenarioError(str(ref["hf_config"]), inner, f"{err.reason} (mtpsim's spec key, as read from "
                                    f"this config.json for {key} in {where})")
        raise err from None


def _overridden(ref: dict[str, Any], inner: str) -> bool:
    """Whether a scenario's `{hf_config: ..., ...}` mapping may have caused the error at spec key
    `inner`: it wrote the section holding it (`block`: a missing `block.kind` too), it set the
    role (`role: draft` changes which fields the spec takes: its error comes at `mtp`), or, for an
    error about the whole spec, it wrote anything over the config.json (a name aside). Else the
    config.json's own value is to blame, at its spec key (an unrelated `max_context` beside it
    moves no blame)."""
    if "role" in ref or not inner:
        return "role" in ref or any(k not in ("hf_config", "name") for k in ref)
    return inner.split(".")[0] in ref


# engine.<key> a scenario may set -> the EngineSpec field it overrides (None there: the release's value)
SCENARIO_OVER_RELEASE = {"speculative_overlap": "speculative_overlap", "bounded_replay": "prefill_tail_replay"}


def _resolve_specs(s: Scenario, where: str) -> Specs:
    # plain decoding reads no MTP layer: a config.json that leaves their kind out is read without them
    mtp_runs = any(d != designs.BASELINE for d in [s.speculative.design, *s.searched_designs])
    model = _spec("models", s.model, ModelSpec, where, "model", mtp_runs)
    hardware = _spec("hardware", s.hardware, HardwareSpec, where, "hardware")
    for key, reason in hardware.oddities():  # legal figures that contradict each other: said where written
        warn(*written_at(s.hardware, "hardware", key, where), reason)
    draft = _external_draft(s, model, where)
    _unread_default_drafts(s, model, where)
    engine = catalog.load_engine(s.engine.kind, s.engine.version, s.engine.ignore_rules, where)
    said = {field: getattr(s.engine, key) for key, field in SCENARIO_OVER_RELEASE.items()
            if getattr(s.engine, key) is not None}
    if said.get("speculative_overlap") and not engine.speculative_overlap_possible:
        said["speculative_overlap"] = False  # a release with no overlap to turn on: engine_advice says so
    engine = engine.model_copy(update=said) if said else engine  # the scenario's word over the release's
    engine = engine.for_model(model.architecture)  # the release's rules for this model class
    cost_model, profile = resolve_pricing(s, hardware, engine, where)
    _unpriced_attention_kernel(s, engine, hardware, [model, draft], cost_model, where)
    role = draft.role if draft else None
    return Specs(model=model, hardware=hardware, engine=engine, assistant=draft if role == "assistant" else None,
                 draft=draft if role in ("draft", "block_draft") else None, cost_model=cost_model, profile=profile)


def _unpriced_attention_kernel(s: Scenario, engine: EngineSpec, hardware: HardwareSpec, served: list, cost_model: str,
                               where: str) -> None:
    """One warning where the release runs a served model's attention on a kernel mtpsim does not
    time: a model whose attention layers mix head sizes, under a release with
    `mixed_head_attention` (vLLM's Triton unified attention for Gemma 4; the rule's source), on a
    GPU outside the capabilities where the release runs FlashAttention 4 for it instead."""
    if engine.mixed_head_attention is None:
        return
    fa4, cc = engine.mixed_head_fa4_capability, hardware.compute_capability
    if fa4 is not None and cc is not None and fa4[0] <= cc < fa4[1]:
        return
    for spec in served:
        sizes = sorted({a.head_dim for a in spec.attention_kinds.values() if a.kind == "gqa"} if spec else ())
        if len(sizes) > 1:
            rule = engine.set_by.get("mixed_head_attention", "")
            priced_as = "from the profile's FlashAttention rows" if cost_model == "calibrated" else \
                "by the roofline, as an efficient kernel would run"
            named = f" (rule {rule})" if rule else ""
            warn(where, "engine.version" if s.engine.version else "engine.kind",
                 f"{engine.name} {engine.version} runs every attention layer of {spec.name!r} (head sizes "
                 f"{', '.join(map(str, sizes))}) on its {engine.mixed_head_attention} kernel{named}, which mtpsim "
                 f"does not time: it prices that attention {priced_as}, so a verify's is likely too fast "
                 "(docs/accuracy.md, D6; engine.ignore_rules drops the rule for a build that runs another backend)")
            return


def _external_draft(s: Scenario, model: ModelSpec, where: str) -> ModelSpec | None:
    """The catalog entry `speculative.draft` names, when the design takes one: an assistant for
    frozen_kv (the model's `assistant` by default), a draft model for nextn (else its own MTP), a
    block drafter for block (the model's `block_draft` by default)."""
    role = designs.record(s.speculative.design).external
    default = {"assistant": model.assistant, "block_draft": model.block_draft}.get(role)
    if s.speculative.draft == {}:  # not "absent": an empty mapping would quietly stand for the default
        raise ScenarioError(where, "speculative.draft", "an empty mapping names no draft: leave the key out for the "
                            "model's own, or give {from: NAME, ...}")
    name = s.speculative.draft if s.speculative.draft is not None else default
    if role is None or name is None:
        if role == "assistant":
            raise ScenarioError(where, "speculative.draft",
                                f"frozen_kv needs an assistant and model {model.name!r} names none")
        return None
    try:
        draft = _spec("models", name, ModelSpec, where, "speculative.draft")
    except ScenarioError as exc:
        if s.speculative.draft is not None:
            raise
        raise at_default_draft(s, model, "speculative.draft", exc.reason, where) from None  # the model's default names it
    if draft.role != role:
        kind = {"assistant": "an assistant", "block_draft": "a block drafter"}.get(role, "a draft model")
        raise at_default_draft(s, model, "speculative.draft", f"{draft.name!r} is not {kind} (role: {role}), "
                               f"which {s.speculative.design} needs", where)
    return draft


def _unread_default_drafts(s: Scenario, model: ModelSpec, where: str) -> None:
    """The model's default assistant or block drafter, where no design the scenario runs (or
    searches) reads it: one naming no catalog entry or file (a slip, that frozen_kv or block would
    refuse: _external_draft) is warned of where it is written, not passed over without a word."""
    read = {designs.record(d).external for d in [s.speculative.design, *s.searched_designs]}
    for field, design in (("assistant", "frozen_kv"), ("block_draft", "block")):
        name = getattr(model, field)
        if name is None or field in read:
            continue
        try:
            catalog_lookup.path_of("models", name, where, field)
        except ScenarioError as exc:
            warn(*written_at(s.model, "models", field, where), f"{exc.reason}: no design this scenario runs reads it, "
                 f"and design {design} would refuse it")


CALL = "mtpsim.disaggregated"  # what an error in its arguments names


def disaggregated(s: Scenario, prefill: dict, decode: dict, link: str = "auto", gpus: int | None = None) -> Scenario:
    """An aggregated scenario `s` as the same model, GPU, workload and design on prefill and decode
    pools (each a mapping of layout_schema.Pool's keys: replicas, tp, ep, attention_dp,
    gpus_per_node), validated as a scenario file would be: what a deployment search compares with
    `s` itself. `simulate(result)` runs it (sim/disagg.py)."""
    check_point_type(s, "mtpsim.disaggregated")  # its values are validated again below, as a file's
    data = s.model_dump(exclude={"parallel", "disaggregation", "sweep"}, exclude_defaults=True)
    given = {"prefill": prefill, "decode": decode, "link": link, **({"gpus": gpus} if gpus is not None else {})}
    data["disaggregation"] = plain_values(given, CALL)  # a NumPy number is named as load() names it
    with pools_blamed_on_call():
        return validate(data, s.source, s.point)


@contextmanager
def pools_blamed_on_call() -> Iterator[None]:
    """An error about a disaggregated() point's `disaggregation` section as the call's: the pools are
    its arguments, not a section of the scenario file (resolve.disaggregated, sim.checked_disaggregated)."""
    try:
        yield
    except ScenarioError as exc:
        if exc.key.split(".")[0] != "disaggregation":
            raise
        # its words name the call's arguments too: `prefill['tp']`, not the file's disaggregation.prefill.tp
        reason = re.sub(r"\bdisaggregation\.(prefill|decode)\.(\w+)", r"\1['\2']", exc.reason)
        raise ScenarioError(CALL, exc.key.removeprefix("disaggregation").lstrip("."), reason) from None
