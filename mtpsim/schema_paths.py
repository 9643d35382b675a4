"""What a dotted key path (`workload.trace.end_s`, `model.hidden_size`) names in the scenario
schema: whether it is a key at all (the loader's check of --set and sweep keys), and the class
of the section it names (section_drops.py: what replacing that section whole drops).
"""
from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from mtpsim.hardware_spec import HardwareSpec
from mtpsim.schema import Scenario
from mtpsim.specs import ModelSpec

# a catalog reference's keys: its source (a catalog name or file, a config.json), then its spec's
REFERENCE_SPECS: dict[str, tuple[type[BaseModel], tuple[str, ...]]] = {
    "model": (ModelSpec, ("from", "hf_config")), "hardware": (HardwareSpec, ("from",)),
    "speculative.draft": (ModelSpec, ("from", "hf_config"))}


def known_key(dotted: str) -> bool:
    """Whether a dotted key path names a field of the scenario schema, part by part through its
    sections (an optional section's too: workload.trace.end_s) and into a catalog reference's spec
    (model.hidden_size, speculative.draft.block.markov_rank). A path into a mapping of the user's
    own keys (steps_by_batch, attention_kinds) is known as far as the schema knows it: the spec
    checks the rest."""
    model: type[BaseModel] | None = Scenario
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if model is None:
            return True
        at = ".".join(parts[:i])
        if at in REFERENCE_SPECS and part in REFERENCE_SPECS[at][1]:
            return i == len(parts) - 1  # the source is a name or a path: nothing lies under it
        if part not in model.model_fields or part == "sweep":
            return False
        reference = REFERENCE_SPECS.get(".".join(parts[:i + 1]))
        model = reference[0] if reference else _section(model.model_fields[part].annotation)
    return True


def section_class(dotted: str) -> type[BaseModel] | None:
    """The class of the section at a dotted key path (`workload`, `engine.batch_wait`) where the
    schema gives it one, else None (a mapping of the user's own keys, a union of sections)."""
    model: type[BaseModel] | None = Scenario
    for part in dotted.split("."):
        if model is None or part not in model.model_fields:
            return None
        model = _section(model.model_fields[part].annotation)
    return model


def _section(annotation: Any) -> type[BaseModel] | None:
    """The one section class a field's annotation holds (`Forced | None`, `int | LengthDist`), else
    None: a list's or a mapping's items (attention_kinds' specs) sit under keys of the user's."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    found = [a for a in options if isinstance(a, type) and issubclass(a, BaseModel)]
    return found[0] if len(found) == 1 else None
