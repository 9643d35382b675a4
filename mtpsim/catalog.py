"""Model, hardware and engine catalog: the specs of mtpsim/specs.py and hardware_spec.py loaded from `mtpsim/data/models/`,
`mtpsim/data/hardware/` and `mtpsim/data/engines/` (package data), validated and merged.

A catalog file is plain YAML describing an architecture in its own fields; its sources are cited
in a leading comment. A scenario names an entry (`model: deepseek-v3`) or overrides fields of one
(`model: {from: deepseek-v3, dtypes: {experts: fp4}}`), deep-merged before validation; a models
entry may list other names of the same architecture (`aliases: [deepseek-r1]`), which a scenario
may give instead where no entry's file has that name; a model can also be read from a Hugging
Face config.json (`model: {hf_config: ./config.json, ...}`, mtpsim/hfconfig). Where a reference
is (a file path, a catalog name, an alias) is catalog_lookup.py's; each file is parsed once per
version of it (catalog_files.py).
"""
from __future__ import annotations

import copy
import functools
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mtpsim import catalog_lookup
from mtpsim.catalog_files import parsed, stamped
from mtpsim.catalog_lookup import Kind
from mtpsim.engine_releases import resolve_engine
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, from_validation, short, warn
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.layer_specs import named_kind
from mtpsim.packagedata import data_dir
from mtpsim.sections import is_catalog_name
from mtpsim.specs import ModelSpec

CATALOG_DIR = data_dir()  # the built-in catalog: models/, hardware/, engines/

SpecT = TypeVar("SpecT", bound=BaseModel)


def _read(kind: Kind, ref: object, where: str, key: str = "", paths: bool = True) -> dict[str, Any]:
    # a copy: callers merge overrides into what they get, and the cached parse must stay as read
    return copy.deepcopy(parsed(*stamped(catalog_lookup.path_of(kind, ref, where, key, paths))))


SPECS: dict[str, type[BaseModel]] = {"models": ModelSpec, "hardware": HardwareSpec}  # what a `from:` names


def spec_file(kind: Kind, ref: str, cls: type[SpecT], where: str, key: str = "", paths: bool = True) -> SpecT:
    """The validated spec of a whole file (a catalog name, or a path when `paths`): validated once
    per version of the file; an invalid one is a ScenarioError naming that file. Each caller gets
    its own copy: a spec is a frozen record, but its tables (peak_flops, attention_kinds) are
    plain mappings, and a notebook's edit of one point's reached every later load in the process
    through the cache."""
    path = catalog_lookup.path_of(kind, ref, where, key, paths)
    stamp = stamped(path)
    if {"model", "hardware"} <= set(parsed(*stamp)):  # a scenario's two required keys (_parsed gives a mapping)
        noun = {"models": "model", "hardware": "hardware", "engines": "engine"}[kind]
        raise ScenarioError(where, key, f"{short(ref, 200)} is a scenario file, not a {noun} entry: give a {noun} "
                            f"catalog name or a {noun} entry's file")
    spec = _spec_at(*stamp, cls).model_copy(deep=True)
    if not (paths and catalog_lookup.is_path(ref)) and ref not in (spec.name, *getattr(spec, "aliases", ())):
        # a catalog name is its file's (or one of the aliases it lists): the entry answers to it
        raise ScenarioError(str(path), "name", f"{short(spec.name)} is not the file's name {ref!r}: a scenario names "
                            "the entry by its file")
    if kind == "models":
        warn_shadowed_aliases(spec, str(path))
    return spec


def warn_shadowed_aliases(spec, where: str) -> None:
    """One warning for each alias a models entry lists that another entry's file is named: that
    entry answers to the name (path_of looks up files first), so the alias never names this one."""
    real = set(catalog_lookup.names("models"))
    for i, alias in enumerate(getattr(spec, "aliases", ())):
        if alias != spec.name and alias in real:
            warn(where, f"aliases.{i}", f"{short(alias, 60)} is the name of another models catalog entry, which "
                 "answers to it: this alias never names this entry (drop it)")


@functools.lru_cache(maxsize=64)
def _spec_at(path: str, stamp: tuple[int, int, int], cls: type[SpecT]) -> SpecT:
    data = parsed(path, stamp)
    inline = [k for k in ("from", "hf_config") if k in data]  # _parsed gives a mapping or raises
    if inline:  # the scenario's shorthands, not a file's: a file is read as a whole spec
        section = {HardwareSpec: "hardware", EngineSpec: "engine"}.get(cls, "model")
        shorthand = "from: NAME" if inline[0] == "from" else "hf_config: config.json"
        raise ScenarioError(path, inline[0], f"works only inline in a scenario ({section}: {{{shorthand}, ...}}); a "
                            "spec file is a whole spec: copy the entry it names and change what differs")
    try:
        return cls.model_validate(copy.deepcopy(data))  # a copy: a before-validator may edit it
    except ValidationError as exc:
        raise from_validation(exc, path, data=data) from None


def deep_merge(base: dict[str, Any], over: dict[str, Any], where: str = "", path: str = "") -> dict[str, Any]:
    """`over` wins; nested mappings merge key by key, lists and scalars replace. An empty mapping
    over a filled one would change nothing (merged) or wipe it (replaced), so it is an error
    naming its key path: `peak_flops: {}` never leaves the table it seems to empty."""
    out = dict(base)
    for key, value in over.items():
        at = f"{path}.{key}" if path else str(key)
        if isinstance(value, dict) and isinstance(out.get(key), list) and value \
                and all(isinstance(k, int) or (isinstance(k, str) and k.isascii() and k.isdigit()) for k in value):
            # `--set model.layers.0.count=16` over a catalog entry: an item named by its index
            raise ScenarioError(where, at, "is a list, set whole: give every item (an item is not set by its index)")
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            if not value and out[key]:
                raise ScenarioError(where, at, "an empty mapping: give the entries to change, or leave the key out")
            out[key] = deep_merge(out[key], value, where, at)
        else:
            out[key] = value
    return out


def resolve(kind: Kind, ref: str | dict[str, Any], where: str, key: str = "", mtp_runs: bool = True) -> dict[str, Any]:
    """A catalog name, a file path, `{from: NAME-or-path, ...overrides}` or, for models,
    `{hf_config: path/to/config.json, ...overrides}` (mtpsim/hfconfig) -> the merged raw mapping;
    `mtp_runs`: whether the scenario runs the model's own MTP layers (hfconfig.read)."""
    if isinstance(ref, str):
        return _read(kind, ref, where, key)
    if kind == "models" and "hf_config" in ref:
        if "from" in ref:
            raise ScenarioError(where, key, "give one source, from or hf_config, not both")
        from mtpsim import hfconfig  # here: only a config.json source needs it (~0.05 s of imports)
        over = {k: v for k, v in ref.items() if k != "hf_config"}
        return _orphans_dropped(deep_merge(hfconfig.read(ref["hf_config"], where, key, over, dspark_drafters, mtp_runs), over,
                                           where, key), over)
    if "from" not in ref:
        return dict(ref)  # a full inline spec
    over = {k: v for k, v in ref.items() if k != "from"}
    name = over.get("name")
    if isinstance(name, str) and name != ref["from"] and len(name) <= 200 and is_catalog_name(name) \
            and catalog_lookup.find(kind, name) is not None:
        warn(where, f"{key}.name" if key else "name", f"{short(name, 60)} is another {kind} catalog entry: this copy of "
             f"{short(ref['from'], 60)} is reported under that name (the entry itself is not read; `from: "
             f"{short(name, 60)}` reads it)")
    at = f"{key}.from" if key else "from"
    if kind in SPECS:  # the source alone first: an error inside it names its own file and key
        spec_file(kind, ref["from"], SPECS[kind], where, at)
    merged = deep_merge(_read(kind, ref["from"], where, at), over, where, key)
    return _orphans_dropped(merged, over) if kind == "models" else merged


def _orphans_dropped(merged: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A model whose overrides re-lay its layers (or its MTP layer) without some kinds of its
    source: those inherited kinds go with the layers that used them (an override cannot delete a
    key, and ModelSpec refuses a kind no layer uses). A kind the overrides themselves give stays,
    for ModelSpec to refuse if no layer names it."""
    if not {"layers", "mtp"} & set(over):
        return merged
    layers = merged.get("layers")  # of another type than a list (5, .nan): ModelSpec refuses it
    refs = [r for r in layers if isinstance(r, dict)] if isinstance(layers, list) else []
    mtp = merged.get("mtp")
    if isinstance(mtp, dict) and isinstance(mtp.get("layer"), dict):
        refs.append(mtp["layer"])
    out = dict(merged)
    for key, field in (("attention_kinds", "attention"), ("ffn_kinds", "ffn")):
        kinds, given = merged.get(key), over.get(key)
        if isinstance(kinds, dict):
            used = {named_kind(r, field) for r in refs} | (set(given) if isinstance(given, dict) else set())
            out[key] = {name: spec for name, spec in kinds.items() if name in used}
    return out


def dspark_drafters() -> dict[str, ModelSpec]:
    """The catalog's DSpark block drafters, name -> spec (a DeepSeek-V4 config.json that bundles
    one names it: hfconfig/deepseek_v4.py)."""
    found = {}
    for name in catalog_lookup.names("models"):
        try:
            spec = load_model(name)
        except ScenarioError:  # a broken entry the scenario does not name is not its concern: its own use says why
            continue
        if spec.block is not None and spec.block.kind == "dspark":
            found[name] = spec
    return found


def load_model(name: str) -> ModelSpec:
    """A catalog entry by name (never a path)."""
    return spec_file("models", name, ModelSpec, "models catalog", paths=False)


def load_hardware(name: str) -> HardwareSpec:
    return spec_file("hardware", name, HardwareSpec, "hardware catalog", paths=False)


def load_engine(name: str, version: str | None = None, ignore_rules=(), where: str = "engines catalog") -> EngineSpec:
    """An engine at a release (None: its file's default), its version rules applied (engine_releases.py);
    resolved once per version of its file, release and rules left out (EngineSpec is frozen)."""
    path, stamp = stamped(catalog_lookup.path_of("engines", name, "engines catalog", paths=False))
    return _engine_at(path, stamp, version, tuple(ignore_rules), where).model_copy(deep=True)  # as spec_file's


@functools.lru_cache(maxsize=64)
def _engine_at(path: str, stamp: tuple[int, int, int], version: str | None, ignore: tuple[str, ...],
               where: str) -> EngineSpec:
    return resolve_engine(copy.deepcopy(parsed(path, stamp)), version, ignore, where, path)


def engine_file_label(name: str) -> str:
    """The engine file a scenario's engine `name` is read from, as a message names it: the shipped
    one as engines/NAME.yaml, a user catalog's (MTPSIM_CATALOG) by its path."""
    path = catalog_lookup.find("engines", name)
    return f"engines/{name}.yaml" if path is None or path.parent == data_dir() / "engines" else str(path)


def engine_file(name: str) -> dict[str, Any]:
    """An engine's catalog file as read: its fields, versions and rules."""
    return _read("engines", name, "engines catalog", paths=False)
