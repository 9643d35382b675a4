"""Scenario schema v1 (DESIGN §9): one frozen model per YAML section, a strict loader,
`--set key.path=value` overrides and `sweep:` expansion.

`load(path, sets)` returns one validated `Scenario` per sweep point. Anything wrong raises
`ScenarioError(file, key.path, reason)` before anything runs.
"""
from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from mtpsim import catalog
from mtpsim.catalog import HardwareSpec, ModelSpec
from mtpsim.errors import ScenarioError, from_validation

Probability = float


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Parallel(Section):
    tp: int = Field(default=1, ge=1)   # GPUs per replica
    ep: int = Field(default=1, ge=1)   # expert groups within a replica
    dp: int = Field(default=1, ge=1)   # independent replicas

    @model_validator(mode="after")
    def _ep_divides_tp(self) -> "Parallel":
        if self.tp % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide tp ({self.tp})")
        return self


Design = Literal["none", "nextn", "multi_layer", "frozen_kv", "parallel_heads"]


class Speculative(Section):
    design: Design = "none"
    steps: int = Field(default=3, ge=1, le=64)
    topk: int = Field(default=1, ge=1, le=64)
    draft_tokens: int | None = Field(default=None, ge=2)
    draft: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> "Speculative":
        if self.design == "multi_layer" and self.topk > 1:
            raise ValueError("topk > 1 is impossible with multi_layer (one layer per step, chain only)")
        if self.topk == 1 and self.draft_tokens not in (None, self.steps + 1):
            raise ValueError(f"with topk 1, draft_tokens must be steps + 1 = {self.steps + 1}")
        if self.topk > 1 and self.draft_tokens is not None and self.draft_tokens > 1 + self.steps * self.topk:
            raise ValueError("draft_tokens exceeds 1 + steps * topk (more than the tree holds)")
        return self

    @property
    def num_draft_tokens(self) -> int:
        """N: tokens verified per request per iteration, root included (1 without speculation)."""
        if self.design == "none":
            return 1
        return self.draft_tokens or (self.steps + 1 if self.topk == 1 else 1 + self.steps * self.topk)


class Acceptance(Section):
    per_depth: list[Probability] | None = None     # conditional alpha_k
    cumulative: list[Probability] | None = None    # a_k = P(at least k accepted)
    accept_length: float | None = Field(default=None, ge=1)
    histogram: str | None = None                   # CSV accepted,count (measured)
    spread: float = Field(default=0.0, ge=0, lt=1)

    @model_validator(mode="after")
    def _one_form(self) -> "Acceptance":
        given = [k for k in ("per_depth", "cumulative", "accept_length", "histogram")
                 if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of per_depth, cumulative, accept_length, histogram (got {given})")
        for key in ("per_depth", "cumulative"):
            values = getattr(self, key) or []
            if any(not 0.0 <= v <= 1.0 for v in values):
                raise ValueError(f"{key}: probabilities must lie in [0, 1]")
        if self.cumulative and any(b > a for a, b in zip(self.cumulative, self.cumulative[1:])):
            raise ValueError("cumulative: must not increase with depth")
        return self


class LengthDist(Section):
    dist: Literal["uniform", "normal", "lognormal"]
    min: int = Field(default=1, ge=1)
    max: int | None = Field(default=None, ge=1)
    mean: float | None = Field(default=None, gt=0)      # normal, lognormal (the mean of the lengths)
    std: float | None = Field(default=None, ge=0)       # normal, lognormal

    @model_validator(mode="after")
    def _params(self) -> "LengthDist":
        if self.dist == "uniform" and self.max is None:
            raise ValueError("uniform needs min and max")
        if self.dist != "uniform" and (self.mean is None or self.std is None):
            raise ValueError(f"{self.dist} needs mean and std")
        if self.max is not None and self.max < self.min:
            raise ValueError("max is below min")
        return self


Length = int | LengthDist


class Workload(Section):
    arrival: Literal["closed", "poisson", "batch", "trace"] = "closed"
    concurrency: int = Field(default=1, ge=1)
    rate_per_s: float | None = Field(default=None, gt=0)
    num_requests: int = Field(default=64, ge=1)
    input_len: Length = Field(default=1024)
    output_len: Length = Field(default=256)
    trace: str | None = None

    @model_validator(mode="after")
    def _arrival_needs(self) -> "Workload":
        if self.arrival == "poisson" and self.rate_per_s is None:
            raise ValueError("arrival poisson needs rate_per_s")
        if self.arrival == "trace" and self.trace is None:
            raise ValueError("arrival trace needs trace (a CSV with arrival_s,input_len,output_len)")
        for key in ("input_len", "output_len"):
            if isinstance(getattr(self, key), int) and getattr(self, key) < 1:
                raise ValueError(f"{key} must be at least 1")
        return self


class Engine(Section):
    max_running_requests: int = Field(default=256, ge=1)
    cuda_graphs: bool = True
    max_graph_batch: int = Field(default=256, ge=1)
    overlap_schedule: bool = True
    chunked_prefill_tokens: int = Field(default=8192, ge=1)


class Cost(Section):
    model: Literal["roofline", "calibrated"] = "roofline"
    profile: str | None = None
    moe_skew: float = Field(default=0.0, ge=0, lt=1)  # routing skew: 0 = uniform (DESIGN §4)

    @model_validator(mode="after")
    def _profile(self) -> "Cost":
        if self.model == "calibrated" and not self.profile:
            raise ValueError("cost model calibrated needs profile (a calibrate/profiles/<device> folder)")
        return self


class Verify(Section):
    num_layers: int = Field(default=2, ge=1)
    hidden_scale: float = Field(default=0.0625, gt=0, le=1)
    num_experts: int = Field(default=8, ge=1)
    device: Literal["cpu", "cuda", "auto"] = "auto"
    iterations: int = Field(default=50, ge=1)
    warmup_iterations: int = Field(default=5, ge=0)
    acceptance: Literal["forced", "greedy"] = "forced"
    dtype: Literal["fp32", "bf16", "fp16"] | None = None


class Scenario(Section):
    """A validated scenario (one sweep point). Catalog specs are resolved into `specs`."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    question: str | None = None
    model: str | dict[str, Any]
    hardware: str | dict[str, Any]
    parallel: Parallel = Parallel()
    speculative: Speculative = Speculative()
    acceptance: Acceptance = Acceptance()
    workload: Workload = Workload()
    engine: Engine = Engine()
    cost: Cost = Cost()
    verify: Verify = Verify()
    seed: int = 0
    sweep: dict[str, list[Any]] | None = None

    _specs: "Specs" = PrivateAttr()
    _source: str = PrivateAttr(default="<scenario>")
    _point: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def specs(self) -> "Specs":
        return self._specs

    @property
    def source(self) -> str:
        return self._source

    @property
    def point(self) -> dict[str, Any]:
        """The sweep values that made this point ({} when there is no sweep)."""
        return self._point


class Specs(BaseModel):
    """Catalog entries a scenario resolves to."""

    model_config = ConfigDict(frozen=True)
    model: ModelSpec
    hardware: HardwareSpec
    assistant: ModelSpec | None = None


# ----------------------------------------------------------------------------- loading

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
    for item in sets:
        key, value = parse_set(item)
        set_key(data, key, value, "--set")
    sweep = data.get("sweep") or {}
    if not isinstance(sweep, dict):
        raise ScenarioError(where, "sweep", "must map dotted keys to lists")
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ScenarioError(where, f"sweep.{key}", "must be a non-empty list")
        _check_key_exists(key, where)
    _anchor_paths(data, Path(path).parent)
    points = [dict(zip(sweep, combo)) for combo in itertools.product(*sweep.values())] or [{}]
    return [validate(_with_point(data, point, where), where, point) for point in points]


def _anchor_paths(data: dict[str, Any], folder: Path) -> None:
    """Relative trace / histogram paths that do not exist from the current folder are read
    beside the scenario file, so scenarios can ship their data next to them."""
    for section, key in (("workload", "trace"), ("acceptance", "histogram")):
        node = data.get(section)
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str) and not Path(value).is_absolute() and not Path(value).exists() \
                and (folder / value).exists():
            node[key] = str(folder / value)


def _with_point(data: dict[str, Any], point: dict[str, Any], where: str) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for key, value in point.items():
        set_key(out, key, value, where)
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
    raw = catalog.resolve(kind, ref, f"{where}: {key}")
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise from_validation(exc, where, key) from None


def _resolve_specs(s: Scenario, where: str) -> Specs:
    model = _spec("models", s.model, ModelSpec, where, "model")
    hardware = _spec("hardware", s.hardware, HardwareSpec, where, "hardware")
    assistant = None
    if s.speculative.design == "frozen_kv":
        name = s.speculative.draft or model.assistant
        if name is None:
            raise ScenarioError(where, "speculative.draft",
                                f"frozen_kv needs an assistant and model {model.name!r} names none")
        assistant = _spec("models", name, ModelSpec, where, "speculative.draft")
        if assistant.role != "assistant":
            raise ScenarioError(where, "speculative.draft", f"{name!r} is not an assistant (role: assistant)")
    return Specs(model=model, hardware=hardware, assistant=assistant)


def _check_against_specs(s: Scenario, where: str) -> None:
    spec, design, steps = s.specs.model, s.speculative.design, s.speculative.steps
    if design in ("nextn", "multi_layer", "parallel_heads") and spec.mtp is None:
        raise ScenarioError(where, "speculative.design", f"{design} needs MTP layers and model {spec.name!r} has none")
    if design in ("multi_layer", "parallel_heads") and steps > spec.mtp.num_layers:
        raise ScenarioError(where, "speculative.steps",
                            f"{design} runs one MTP layer per step and {spec.name!r} has {spec.mtp.num_layers}")
    if design == "parallel_heads" and s.speculative.topk > 1:
        raise ScenarioError(where, "speculative.topk", "parallel_heads proposes a chain: topk must be 1")
    if design != "none":
        _check_acceptance_length(s, where)
    moe = [f for f in spec.ffn_kinds.values() if f.kind == "moe"]
    if s.parallel.ep > 1 and not moe:
        raise ScenarioError(where, "parallel.ep", f"model {spec.name!r} has no experts to split")
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
