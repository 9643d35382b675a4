"""Loading scenarios: a strict YAML reader, `--set key.path=value` overrides, `sweep:` expansion,
and the checks that need the catalog.

`load(path, sets)` returns one validated `Scenario` per sweep point. Anything wrong raises
`ScenarioError(file, key.path, reason)` before anything runs.
"""
from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from mtpsim import catalog, designs
from mtpsim.catalog import EngineSpec, HardwareSpec, ModelSpec
from mtpsim.costs.profile import committed_profiles, find_profile, profile_device
from mtpsim.errors import ScenarioError, from_validation
from mtpsim.schema import (Acceptance, Cost, Engine, LengthDist, Parallel, Scenario, Specs, Speculative,
                           Verify, Workload)

__all__ = ["Acceptance", "Cost", "Engine", "LengthDist", "Parallel", "Scenario", "Specs", "Speculative",
           "Verify", "Workload", "ScenarioError", "load", "validate", "read_yaml", "parse_set", "set_key"]

def read_yaml(path: str | Path) -> dict[str, Any]:
    """A scenario file as a mapping, or ScenarioError naming the file (and line for syntax)."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(str(path), "", "no such file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark else ""
        raise ScenarioError(str(path), line, f"YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        raise ScenarioError(str(path), "", "the file is empty")
    if not isinstance(data, dict):
        raise ScenarioError(str(path), "", "a scenario must be a mapping of sections")
    return data


def set_key(data: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    """Set `a.b.c` in nested mappings, creating intermediate mappings."""
    node = data
    *parents, leaf = dotted.split(".")
    for i, part in enumerate(parents):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif isinstance(child, str) and part in ("model", "hardware") and i == 0:
            child = node[part] = {"from": child}
        elif not isinstance(child, dict):
            raise ScenarioError(where, dotted, f"{'.'.join(parents[: i + 1])} is not a mapping")
        node = child
    node[leaf] = value


def parse_set(item: str) -> tuple[str, Any]:
    """`key.path=value` with the value parsed as YAML."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ScenarioError("--set", item, "expected key.path=value")
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ScenarioError("--set", key, f"value is not valid YAML: {exc}") from None


def load(path: str | Path, sets: list[str] = ()) -> list[Scenario]:
    """Read, override, expand the sweep and validate: one Scenario per point."""
    where = str(path)
    data = read_yaml(path)
    overrides = [parse_set(item) for item in sets]
    for key, value in overrides:
        set_key(data, key, value, "--set")
    sweep = data.get("sweep") or {}
    if not isinstance(sweep, dict):
        raise ScenarioError(where, "sweep", "must map dotted keys to lists")
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ScenarioError(where, f"sweep.{key}", "must be a non-empty list")
        _check_key_exists(key, where)
    # --set wins over the sweep: a swept key it names (or lies under) stops being swept, and a
    # swept section it lies inside is overridden point by point
    sweep = {k: v for k, v in sweep.items() if not any(k == o or k.startswith(o + ".") for o, _ in overrides)}
    points = [dict(zip(sweep, combo)) for combo in itertools.product(*sweep.values())] or [{}]
    return [validate(_anchor_paths(_with_point(data, point, where, overrides), Path(path).parent), where, point)
            for point in points]


def _anchor_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Relative trace / histogram paths and model / hardware / draft files that do not exist
    from the current folder are read beside the scenario file, so scenarios can ship their data
    next to them."""
    def anchored(value: Any) -> Any:
        if isinstance(value, str) and not Path(value).is_absolute() and not Path(value).exists() \
                and (folder / value).exists():
            return str(folder / value)
        return value

    for section, key in (("workload", "trace"), ("acceptance", "histogram")):
        node = data.get(section)
        if isinstance(node, dict) and key in node:
            node[key] = anchored(node[key])
    for node, key in ((data, "model"), (data, "hardware"), (data.get("speculative"), "draft")):
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str) and catalog.is_path(value):
            node[key] = anchored(value)
        elif isinstance(value, dict) and isinstance(value.get("from"), str) and catalog.is_path(value["from"]):
            value["from"] = anchored(value["from"])
    return data


def _with_point(data: dict[str, Any], point: dict[str, Any], where: str, overrides=()) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out.pop("sweep", None)
    for key, value in [*point.items(), *overrides]:
        set_key(out, key, copy.deepcopy(value), where)
    return out


def _check_key_exists(dotted: str, where: str) -> None:
    """A sweep key must name a schema field (paths into model/hardware are checked on merge)."""
    model: type[BaseModel] | None = Scenario
    for part in dotted.split("."):
        if model is None:
            return
        if part not in model.model_fields or part == "sweep":
            raise ScenarioError(where, f"sweep.{dotted}", "unknown key")
        annotation = model.model_fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def validate(data: dict[str, Any], where: str = "<scenario>", point: dict[str, Any] | None = None) -> Scenario:
    """A raw mapping -> Scenario with specs resolved and cross-checked against the catalog."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, where) from None
    scenario._source, scenario._point = where, dict(point or {})
    scenario._specs = _resolve_specs(scenario, where)
    _check_against_specs(scenario, where)
    return scenario


def _spec(kind: str, ref: str | dict[str, Any], cls: type[BaseModel], where: str, key: str):
    raw = catalog.resolve(kind, ref, where, key)
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise from_validation(exc, where, key) from None


def _resolve_specs(s: Scenario, where: str) -> Specs:
    model = _spec("models", s.model, ModelSpec, where, "model")
    hardware = _spec("hardware", s.hardware, HardwareSpec, where, "hardware")
    draft = _external_draft(s, model, where)
    engine = _spec("engines", s.engine.kind, EngineSpec, where, "engine.kind")
    cost_model, profile = _resolve_pricing(s, hardware, engine, where)
    role = draft.role if draft else None
    return Specs(model=model, hardware=hardware, engine=engine, assistant=draft if role == "assistant" else None,
                 draft=draft if role == "draft" else None, cost_model=cost_model, profile=profile)


def _external_draft(s: Scenario, model: ModelSpec, where: str) -> ModelSpec | None:
    """The catalog entry `speculative.draft` names, when the design takes one: an assistant for
    frozen_kv (the model's `assistant` by default), a draft model for nextn (else its own MTP)."""
    role = designs.record(s.speculative.design).external
    name = s.speculative.draft or (model.assistant if role == "assistant" else None)
    if role is None or name is None:
        if role == "assistant":
            raise ScenarioError(where, "speculative.draft",
                                f"frozen_kv needs an assistant and model {model.name!r} names none")
        return None
    draft = _spec("models", name, ModelSpec, where, "speculative.draft")
    if draft.role != role:
        raise ScenarioError(where, "speculative.draft", f"{draft.name!r} is not {'an assistant' if role == 'assistant' else 'a draft model'} "
                            f"(role: {role}), which {s.speculative.design} needs")
    return draft


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
                                f"{hardware.name!r} names none (committed: {', '.join(committed_profiles())})")
        return "roofline", None
    path = find_profile(ref)
    if path is None:
        raise ScenarioError(where, "cost.profile", f"no profile folder {ref!r} (a path holding meta.yaml, or one of: "
                            f"{', '.join(committed_profiles())})")
    device = profile_device(path)
    if device != hardware.name:
        if c.profile is None and c.model == "auto":
            return "roofline", None
        raise ScenarioError(where, "cost.profile", f"profile {path.name!r} was measured on {device!r}, "
                            f"not on the scenario's hardware {hardware.name!r}")
    return "calibrated", str(path)


def _check_against_specs(s: Scenario, where: str) -> None:
    spec, record = s.specs.model, designs.record(s.speculative.design)
    for key, reason in record.problems(s.speculative, spec, s.specs.draft or s.specs.assistant)[:1]:
        raise ScenarioError(where, key, reason)
    if record.draft_part is not None:
        _check_acceptance_length(s, where)
    moe = [f for f in spec.ffn_kinds.values() if f.kind == "moe"]
    if s.parallel.ep > 1 and not moe:
        raise ScenarioError(where, "parallel.ep", f"model {spec.name!r} has no experts to split")
    if s.workload.arrival == "closed" and s.workload.concurrency > s.workload.num_requests:
        raise ScenarioError(where, "workload.concurrency", f"{s.workload.concurrency} closed-loop users need "
                            f"num_requests >= concurrency (got {s.workload.num_requests})")
    if s.workload.arrival == "trace" and not Path(s.workload.trace).is_file():
        raise ScenarioError(where, "workload.trace", f"no such file: {s.workload.trace}")
    if s.acceptance.histogram and not Path(s.acceptance.histogram).is_file():
        raise ScenarioError(where, "acceptance.histogram", f"no such file: {s.acceptance.histogram}")


def _check_acceptance_length(s: Scenario, where: str) -> None:
    a = s.acceptance
    for key in ("per_depth", "cumulative"):
        values = getattr(a, key)
        if values is not None and len(values) < s.speculative.steps:
            raise ScenarioError(where, f"acceptance.{key}",
                                f"{len(values)} values for {s.speculative.steps} steps (need one per depth)")
    if a.accept_length is not None and a.accept_length > s.speculative.steps + 1:
        raise ScenarioError(where, "acceptance.accept_length",
                            f"{a.accept_length} exceeds steps + 1 = {s.speculative.steps + 1}")
    if all(getattr(a, k) is None for k in ("per_depth", "cumulative", "accept_length", "histogram")):
        raise ScenarioError(where, "acceptance", f"design {s.speculative.design} needs an acceptance profile")
