"""Where a catalog reference is: a file path, or a name looked up in the folders MTPSIM_CATALOG
names (`dir1:dir2`, each holding models/, hardware/, engines/) before the built-in catalog, or a
models entry's alias (`aliases:` in its file). A name is a plain file stem and never resolves
outside its catalog folder; a folder holding it in a form the lookup passes over (a broken link, a
folder, .yml) is an error naming it, not a step on to the next folder. What the files hold and how
they merge is catalog.py's."""
from __future__ import annotations

import functools
import re
from glob import escape as glob_escape
from pathlib import Path
from typing import Literal

from mtpsim.catalog_files import parsed, stamped
from mtpsim.errors import ScenarioError, short
from mtpsim.packagedata import catalog_dirs, data_dir, user_catalog_dirs
from mtpsim.sections import is_catalog_name
from mtpsim.textfiles import not_a_file

Kind = Literal["models", "hardware", "engines"]


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
    return _aliases_in(tuple((name, *stamped(path)) for name, path in sorted(_entries("models").items())))


@functools.lru_cache(maxsize=8)
def _aliases_in(files: tuple[tuple[str, str, tuple[int, int, int]], ...]) -> dict[str, list[str]]:
    real, found = {name for name, _, _ in files}, {}
    for name, path, stamp in files:
        try:  # the strict reader takes ~40 ms a file: only files that mention aliases are parsed
            data = parsed(path, stamp) if "aliases:" in Path(path).read_text(errors="replace") else {}
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
