"""Model, hardware and engine catalog: the specs of mtpsim/specs.py and hardware_spec.py loaded from `mtpsim/data/models/`,
`mtpsim/data/hardware/` and `mtpsim/data/engines/` (package data).

A catalog file is plain YAML describing an architecture in its own fields; its sources are cited
in a leading comment. A scenario names an entry (`model: deepseek-v3`) or overrides fields of one
(`model: {from: deepseek-v3, dtypes: {experts: fp4}}`), deep-merged before validation; a models
entry may list other names of the same architecture (`aliases: [deepseek-r1]`), which a scenario
may give instead where no entry's file has that name; a model
can also be read from a Hugging Face config.json (`model: {hf_config: ./config.json, ...}`,
mtpsim/hfconfig).

A reference is a file when it is clearly a path (it contains '/' or ends in .yaml / .yml:
`model: ./my-model.yaml`), else a catalog name, looked up in the folders MTPSIM_CATALOG names
(`dir1:dir2`, each holding models/, hardware/, engines/) before the built-in catalog. A name is
a plain file stem: it never resolves outside its catalog folder.
"""
from __future__ import annotations

import copy
import functools
import re
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from mtpsim.engine_releases import resolve_engine
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, from_validation, short, warn
from mtpsim.files import load_yaml
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.layer_specs import named_kind
from mtpsim.packagedata import catalog_dirs, data_dir, user_catalog_dirs
from mtpsim.sections import is_catalog_name
from mtpsim.specs import ModelSpec
from mtpsim.textfiles import not_a_file

CATALOG_DIR = data_dir()  # the built-in catalog: models/, hardware/, engines/

Kind = Literal["models", "hardware", "engines"]
SpecT = TypeVar("SpecT", bound=BaseModel)


def is_path(ref: str) -> bool:
    """A reference that is clearly a file path, not a catalog name."""
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml"))


# torch.cuda.get_device_name() fragments -> hardware catalog entries
DEVICE_HARDWARE = {"H200": "h200", "H100": "h100-sxm", "A100": "a100-80g", "B200": "b200", "MI300X": "mi300x"}


def hardware_for_device(device_name: str) -> str | None:
    """The hardware catalog entry of a CUDA device name ("NVIDIA H200" -> h200), or None."""
    return next((v for k, v in DEVICE_HARDWARE.items() if k in device_name), None)


def names(kind: Kind) -> list[str]:
    """Catalog entries of one kind (user catalogs and built-in), sorted."""
    return sorted(_entries(kind))


def _entries(kind: Kind) -> dict[str, Path]:
    """name -> the file a lookup by it reads (the first folder's), for the entries `names` lists."""
    found: dict[str, Path] = {}
    for folder in catalog_dirs():
        for path in (folder / kind).glob("*.yaml"):
            if path.stem not in found and path.is_file():
                found[path.stem] = path
    return found


def unnamed_entries(kind: Kind) -> list[ScenarioError]:
    """The entries of the user catalogs' `kind` folders that no name finds, as find's errors say
    of them (_near_miss): a .yaml that is no regular file (a folder, a broken or looping link, a
    pipe) or one ending .yml / .YAML. `names` passes over them, so a listing would leave them out
    without a word where a scenario naming one is refused."""
    found = []
    for folder in user_catalog_dirs():
        for path in sorted((folder / kind).iterdir()) if (folder / kind).is_dir() else []:
            if path.suffix.lower() not in (".yaml", ".yml") or path.suffix == ".yaml" and path.is_file():
                continue
            why = not_a_file(path) if path.suffix == ".yaml" else "catalog files end in .yaml (rename it)"
            found.append(ScenarioError(str(path), "", f"{why}: no scenario can name this {kind} entry"))
    return found


def find(kind: Kind, name: str, where: str = "catalog", key: str = "") -> Path | None:
    """The file of a catalog name, the first of MTPSIM_CATALOG's folders then the built-in one. A
    folder holding the name in a form the lookup passes over (a broken link, a folder, sglang.yml)
    is a ScenarioError at `where` / `key` (_near_miss), not a step on to the next folder: a user's
    engines/sglang.yaml linking to a moved file ran the built-in engine without a word."""
    for folder in catalog_dirs():
        path = folder / kind / f"{name}.yaml"
        if path.is_file():
            return path
        _near_miss(folder, kind, name, where, key, top=False)
    for folder in catalog_dirs():  # found nowhere: a file at a folder's top is the misplaced entry
        _near_miss(folder, kind, name, where, key)
    return None


def path_of(kind: Kind, ref: object, where: str, key: str = "", paths: bool = True) -> Path:
    """The file a reference names: a file path (when `paths`) or a catalog name."""
    if not isinstance(ref, str) or not ref:
        raise ScenarioError(where, key, f"expected a {kind} catalog name or a .yaml file path, got {short(ref)}")
    if paths and is_path(ref):
        path = Path(ref).expanduser()
        if not path.is_file():
            raise ScenarioError(where, key, f"{kind} file {short(ref, 200)}: {not_a_file(path)}{_repo_id_hint(kind, ref)}")
        return path
    if not is_catalog_name(ref):
        raise ScenarioError(where, key, f"{short(ref)} is not a {kind} catalog name (letters, digits, '.', '-', "
                            "'_', '+'; no '/' or '..'); give a file as a path ending in .yaml")
    path = find(kind, ref, where, key)
    aliases = model_aliases() if path is None and kind == "models" else {}
    if ref in aliases:
        path = find(kind, _alias_entry(ref, aliases[ref], where, key), where, key)
    if path is None:
        known = names(kind)
        import difflib  # an unknown name's hint only: not every load's start-up
        # catalog names are lower case: `H100` is matched as `h100` is, names it begins first (h100-sxm)
        lowered = ref.lower()
        close = list(dict.fromkeys([n for n in known if n.startswith(lowered)][:3] +
                                   difflib.get_close_matches(lowered, known + sorted(aliases), n=3, cutoff=0.6)))[:3]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise ScenarioError(where, key, f"unknown {kind} catalog name {short(ref, 60)} ({hint}`mtpsim {kind}` lists "
                            f"the {len(known)} known)")
    return path


HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/([A-Za-z0-9][A-Za-z0-9._-]*)")  # org/name, no file extension


def _repo_id_hint(kind: Kind, ref: str) -> str:
    """For a missing models file written as a Hugging Face repo id (deepseek-ai/DeepSeek-R1): the
    catalog name or alias it stands for, else how to read its config, so the user is not left
    looking for a file they never meant."""
    hub = HUB_ID.fullmatch(ref) if kind == "models" else None
    if hub is None or ref.lower().endswith((".yaml", ".yml", ".json")):
        return ""
    stem = hub.group(1).lower()
    known = {n.lower(): n for n in (*names("models"), *model_aliases())}
    entry = known.get(stem) or known.get(stem.removesuffix("-instruct"))
    return (f" (a Hugging Face repo id is not looked up: the catalog names it {entry})" if entry else
            " (a Hugging Face repo id is not looked up: give a catalog name from `mtpsim models`, or the "
            "checkpoint's config with hf_config: path/to/config.json)")


def model_aliases() -> dict[str, list[str]]:
    """alias -> the models catalog entries that list it (`aliases:`), in lookup order. A name some
    entry's file has is no alias: that file answers to it. Read once per version of the catalog's
    files (`_stamped`): every point of a sweep naming an alias looks it up."""
    return _aliases_in(tuple((name, *_stamped(path)) for name, path in sorted(_entries("models").items())))


@functools.lru_cache(maxsize=8)
def _aliases_in(files: tuple[tuple[str, str, tuple[int, int, int]], ...]) -> dict[str, list[str]]:
    real, found = {name for name, _, _ in files}, {}
    for name, path, stamp in files:
        try:  # the strict reader takes ~40 ms a file: only files that mention aliases are parsed
            data = _parsed(path, stamp) if "aliases:" in Path(path).read_text(errors="replace") else {}
        except (OSError, ScenarioError):  # a broken entry says why when a scenario names it
            continue
        aliases = data.get("aliases")
        for alias in aliases if isinstance(aliases, list) else []:
            if isinstance(alias, str) and alias not in real:
                found.setdefault(alias, []).append(name)
    return found


def _alias_entry(ref: str, entries: list[str], where: str, key: str) -> str:
    """The models catalog entry the alias `ref` names, of the `entries` that list it; two entries
    claiming it is an error naming both (neither is a better guess)."""
    if len(entries) > 1:
        raise ScenarioError(where, key, f"{short(ref, 60)} is an alias of {len(entries)} models catalog entries "
                            f"({', '.join(entries)}): name the entry itself")
    return entries[0]


def _near_miss(folder: Path, kind: Kind, ref: str, where: str, key: str, top: bool = True) -> None:
    """A catalog folder that holds `ref` in a form the lookup passes over: not a regular file (a
    folder, a broken or looping link, a pipe), another extension (.yml, .YAML), or at the
    folder's top instead of its `kind` subfolder (`top`: where no folder holds the name, as a
    scenario at a catalog's top may share a name): a ScenarioError naming it, not "unknown name"
    (nor the next folder's entry of that name)."""
    entry = folder / kind / f"{ref}.yaml"
    if entry.exists() or entry.is_symlink():
        raise ScenarioError(where, key, f"{kind} catalog entry {entry}: {not_a_file(entry)}")
    others = [p for p in (folder / kind).glob(f"{glob_escape(ref)}.*") if p.suffix != ".yaml"
              and p.suffix.lower() in (".yml", ".yaml")] if (folder / kind).is_dir() else []
    if others:
        raise ScenarioError(where, key, f"{kind} catalog entry {others[0]}: catalog files end in .yaml (rename it)")
    if top and (folder / f"{ref}.yaml").is_file() and folder != data_dir():
        raise ScenarioError(where, key, f"{folder / f'{ref}.yaml'} is at the catalog folder's top: {kind} entries go "
                            f"in {folder / kind}")


def _read(kind: Kind, ref: object, where: str, key: str = "", paths: bool = True) -> dict[str, Any]:
    # a copy: callers merge overrides into what they get, and the cached parse must stay as read
    return copy.deepcopy(_parsed(*_stamped(path_of(kind, ref, where, key, paths))))


def _stamped(path: Path) -> tuple[str, tuple[int, int, int]]:
    """(path, its version: mtime, size and inode), the key of the caches below; an unreadable
    file gets a stamp no file has, so load_yaml meets it and says why in its own words."""
    try:
        st = path.stat()
    except OSError:
        return str(path), (-1, -1, -1)
    return str(path), (st.st_mtime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=64)
def _parsed(path: str, stamp: tuple[int, int, int]) -> dict[str, Any]:
    """A catalog file parsed once per version of it. The strict YAML reader is pure Python (~40-70
    ms for an engine file), and `mtpsim search` and `recommend` resolve the same three files for
    every candidate layout and point (a 256-GPU search's layouts: 60 s of its 71 s)."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ScenarioError(path, "", "a catalog file must be a mapping")
    return data


SPECS: dict[str, type[BaseModel]] = {"models": ModelSpec, "hardware": HardwareSpec}  # what a `from:` names


def spec_file(kind: Kind, ref: str, cls: type[SpecT], where: str, key: str = "", paths: bool = True) -> SpecT:
    """The validated spec of a whole file (a catalog name, or a path when `paths`): validated once
    per version of the file; an invalid one is a ScenarioError naming that file. Each caller gets
    its own copy: a spec is a frozen record, but its tables (peak_flops, attention_kinds) are
    plain mappings, and a notebook's edit of one point's reached every later load in the process
    through the cache."""
    path = path_of(kind, ref, where, key, paths)
    stamp = _stamped(path)
    if {"model", "hardware"} <= set(_parsed(*stamp)):  # a scenario's two required keys (_parsed gives a mapping)
        noun = {"models": "model", "hardware": "hardware", "engines": "engine"}[kind]
        raise ScenarioError(where, key, f"{short(ref, 200)} is a scenario file, not a {noun} entry: give a {noun} "
                            f"catalog name or a {noun} entry's file")
    spec = _spec_at(*stamp, cls).model_copy(deep=True)
    if not (paths and is_path(ref)) and ref not in (spec.name, *getattr(spec, "aliases", ())):
        # a catalog name is its file's (or one of the aliases it lists): the entry answers to it
        raise ScenarioError(str(path), "name", f"{short(spec.name)} is not the file's name {ref!r}: a scenario names "
                            "the entry by its file")
    if kind == "models":
        warn_shadowed_aliases(spec, str(path))
    return spec


def warn_shadowed_aliases(spec, where: str) -> None:
    """One warning for each alias a models entry lists that another entry's file is named: that
    entry answers to the name (path_of looks up files first), so the alias never names this one."""
    real = set(names("models"))
    for i, alias in enumerate(getattr(spec, "aliases", ())):
        if alias != spec.name and alias in real:
            warn(where, f"aliases.{i}", f"{short(alias, 60)} is the name of another models catalog entry, which "
                 "answers to it: this alias never names this entry (drop it)")


@functools.lru_cache(maxsize=64)
def _spec_at(path: str, stamp: tuple[int, int, int], cls: type[SpecT]) -> SpecT:
    data = _parsed(path, stamp)
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
            and find(kind, name) is not None:
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
    for name in names("models"):
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
    path, stamp = _stamped(path_of("engines", name, "engines catalog", paths=False))
    return _engine_at(path, stamp, version, tuple(ignore_rules), where).model_copy(deep=True)  # as spec_file's


@functools.lru_cache(maxsize=64)
def _engine_at(path: str, stamp: tuple[int, int, int], version: str | None, ignore: tuple[str, ...],
               where: str) -> EngineSpec:
    return resolve_engine(copy.deepcopy(_parsed(path, stamp)), version, ignore, where, path)


def engine_file_label(name: str) -> str:
    """The engine file a scenario's engine `name` is read from, as a message names it: the shipped
    one as engines/NAME.yaml, a user catalog's (MTPSIM_CATALOG) by its path."""
    path = find("engines", name)
    return f"engines/{name}.yaml" if path is None or path.parent == data_dir() / "engines" else str(path)


def engine_file(name: str) -> dict[str, Any]:
    """An engine's catalog file as read: its fields, versions and rules."""
    return _read("engines", name, "engines catalog", paths=False)
