"""A scenario point resolved: a raw mapping validated against the schema, the catalog entries and
the profile it names resolved into its `Specs`, and the point checked against them (checks.py).
`validate` is what every point of `scenario.load` goes through, and what builds a point from a
mapping elsewhere (the search's points, a run folder's resolved scenario); `disaggregated` is an
aggregated point on prefill and decode pools.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mtpsim import catalog, designs
from mtpsim.checks import check_against_specs
from mtpsim.costs.profile import held, known_profiles, require_profile
from mtpsim.engine_releases import engine_rules
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, from_validation, short, warn
from mtpsim.files import load_yaml
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.packagedata import data_dir
from mtpsim.schema import Scenario, Specs
from mtpsim.specs import ModelSpec


def validate(data: dict[str, Any], where: str = "<scenario>", point: dict[str, Any] | None = None) -> Scenario:
    """A raw mapping -> Scenario with specs resolved and cross-checked against the catalog."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, where) from None
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
    try:
        return cls.model_validate(catalog.resolve(kind, ref, where, key, mtp_runs))
    except ValidationError as exc:
        err = from_validation(exc, where, key)
        if "hf_config" in ref:  # the spec was read from config.json: say so, as its keys are the spec's
            err = ScenarioError(err.where, err.key, f"{err.reason} (in the spec read from {short(ref['hf_config'], 200)}"
                                " with this scenario's overrides)")
        raise err from None


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
    cost_model, profile = _resolve_pricing(s, hardware, engine, where)
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
            rule = next((r.name for r in engine_rules(catalog.engine_file(engine.name))
                         if r.field == "mixed_head_attention" and r.name in engine.rules), "")
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
            catalog.path_of("models", name, where, field)
        except ScenarioError as exc:
            warn(*written_at(s.model, "models", field, where), f"{exc.reason}: no design this scenario runs reads it, "
                 f"and design {design} would refuse it")


def _resolve_pricing(s: Scenario, hardware: HardwareSpec, engine: EngineSpec, where: str) -> tuple[str, str | None]:
    """(cost model, profile folder). auto: the profile the hardware names for the engine, else
    the roofline; a profile measured on other hardware than the scenario's is an error (or, for
    an auto default on hardware renamed from a measured GPU, the roofline)."""
    c = s.cost
    if c.model == "roofline":
        return "roofline", None
    ref = c.profile or hardware.profile_for(engine.name)
    if ref is None:
        if c.model == "calibrated":
            raise ScenarioError(where, "cost.profile", f"cost model calibrated needs a profile and hardware "
                                f"{hardware.name!r} names none (known: {', '.join(known_profiles())})")
        return "roofline", None
    # where the reference is written: the scenario's cost.profile, or the hardware entry's `profiles`
    named = f"profiles.{engine.name if engine.name in hardware.profiles else 'default'}"
    at = (where, "cost.profile") if c.profile else written_at(s.hardware, "hardware", named, where)
    path = require_profile(ref, *at)
    folder = held(path)
    device = folder.device
    if device != hardware.name:
        if c.profile is None and c.model == "auto" and not _names_profiles(s):
            return "roofline", None  # a renamed copy of a measured GPU: its own rates, not the profile
        hint = "" if c.profile else " (a copy of another GPU's entry? leave `profiles` out to price it by its own rates)"
        raise ScenarioError(*at, f"profile {path.name!r} was measured on {device!r}, "
                            f"not on the scenario's hardware {hardware.name!r}{hint}")
    for table in folder.unlisted:
        warn(str(path / "meta.yaml"), "families", f"{table} is in the profile folder but not listed here: it is "
             f"not read, and its ops are priced by the roofline (list its family, or move the file out)")
    timed = folder.engine
    # a profile named for this engine (cost.profile, or the hardware's `profiles` under the engine's
    # own key) that times another's kernels is a slip; the `default` entry is the fallback meant
    # for engines the GPU has no profile of (the header's `priced by` names it)
    if (c.profile is not None or engine.name in hardware.profiles) and timed is not None and timed != engine.name:
        warn(*at, f"profile {path.name!r} times {timed}'s kernels, and the scenario serves with "
             f"{engine.name} (engine.kind): the ops are priced as {timed} runs them")
    overridden = _rate_overrides(s, hardware)
    if overridden:
        warn(*written_at(s.hardware, "hardware", overridden[0], where), f"profile {path.name!r} prices the ops it "
             f"measured on {device}, so a rate changed here moves only the rest; give the hardware a name of its "
             "own (it then runs on the roofline) or set cost.model: roofline to price everything with the rates")
    return "calibrated", str(path)


# the hardware fields a profile's measured op times stand in for
RATE_FIELDS = ("peak_flops", "memory_bandwidth_bytes_per_s", "efficiency_flops", "efficiency_bandwidth",
               "launch_overhead_s", "graph_launch_overhead_s",
               "link_bandwidth_bytes_per_s", "link_latency_s")  # the measured collectives stand in for the link


def written_at(ref: object, kind: str, key: str, where: str) -> tuple[str, str]:
    """(file, dotted key) where a model's or hardware's `key` is written (`ref`: the scenario's
    model or hardware): the scenario's inline mapping when it gives the key, else the user's own
    file (a path, or an MTPSIM_CATALOG entry, named directly or as the mapping's `from`); else
    the scenario's key."""
    section = {"models": "model", "hardware": "hardware"}[kind]
    if isinstance(ref, dict):
        if key.split(".")[0] in ref:
            return where, f"{section}.{key}"
        ref = ref.get("from")
    if isinstance(ref, str) and users_file(ref, kind):
        return str(Path(ref).expanduser() if catalog.is_path(ref) else catalog.find(kind, ref)), key
    return where, f"{section}.{key}"


def _names_profiles(s: Scenario) -> bool:
    """Whether the scenario itself says which profiles price its hardware: an inline mapping with
    `profiles`, or a hardware file of its own (a path, not a catalog name: every profile it names
    is the user's), directly or as an inline mapping's `from` (whose file's `profiles` were dropped
    without a word where the path alone was refused)."""
    ref = s.hardware
    if isinstance(ref, dict):
        if "profiles" in ref:
            return True
        ref = ref.get("from")
        if not isinstance(ref, str):
            return False
        if catalog.is_path(ref):  # a file of the user's own under `from`: its profiles, if it writes any
            return "profiles" in load_yaml(Path(ref).expanduser())
    if catalog.is_path(ref):
        return True
    # a user catalog's entry that writes `profiles` itself (a renamed copy inherits them: roofline)
    return users_file(ref) and "profiles" in load_yaml(catalog.find("hardware", ref))


def users_file(ref: str, kind: str = "hardware") -> bool:
    """A file the user wrote: a path, or a name MTPSIM_CATALOG's folders hold (not the built-in
    catalog's): every profile a hardware file names is the user's choice."""
    if catalog.is_path(ref):
        return True
    path = catalog.find(kind, ref)
    return path is not None and not path.is_relative_to(data_dir())


def _rate_overrides(s: Scenario, hardware: HardwareSpec) -> list[str]:
    """The rate fields the scenario's hardware changes from the built-in entry whose profile
    prices it: an inline mapping's keys over its `from`, or a file of the user's own that keeps a
    built-in GPU's name with other rates."""
    if isinstance(s.hardware, dict):
        return [f for f in RATE_FIELDS if f in s.hardware] if "from" in s.hardware else []
    if not users_file(s.hardware):
        return []
    built_in = data_dir() / "hardware" / f"{hardware.name}.yaml"
    if not built_in.is_file():
        return []
    shipped = catalog.spec_file("hardware", str(built_in), HardwareSpec, str(built_in))
    return [f for f in RATE_FIELDS if getattr(shipped, f) != getattr(hardware, f)]


def disaggregated(s: Scenario, prefill: dict, decode: dict, link: str = "auto", gpus: int | None = None) -> Scenario:
    """An aggregated scenario `s` as the same model, GPU, workload and design on prefill and decode
    pools (each a mapping of layout_schema.Pool's keys: replicas, tp, ep, attention_dp,
    gpus_per_node), validated as a scenario file would be: what a deployment search compares with
    `s` itself. `simulate(result)` runs it (sim/disagg.py)."""
    check_point_type(s, "mtpsim.disaggregated")  # its values are validated again below, as a file's
    data = s.model_dump(exclude={"parallel", "disaggregation", "sweep"}, exclude_defaults=True)
    data["disaggregation"] = {"prefill": prefill, "decode": decode, "link": link,
                              **({"gpus": gpus} if gpus is not None else {})}
    return validate(data, s.source, s.point)
