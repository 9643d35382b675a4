"""Where calibration profiles are: the committed ones (package data), a user catalog's
(MTPSIM_CATALOG's profiles/ folders) and a path, found by `cost.profile`'s reference and refused
by name when a folder of that name is there but unreadable. What a profile folder holds, and how
it is read and checked, is profile.py's.
"""
from __future__ import annotations

from pathlib import Path

from mtpsim.errors import ScenarioError, short
from mtpsim.packagedata import data_dir, user_catalog_dirs
from mtpsim.textfiles import not_a_file, not_a_folder

PROFILES_DIR = data_dir() / "profiles"   # the committed profiles (package data)
LEGACY_PREFIX = "calibrate/profiles/"    # where the committed profiles lived in the source tree


def committed_profiles() -> list[str]:
    return sorted(p.name for p in PROFILES_DIR.iterdir() if (p / "meta.yaml").is_file()) if PROFILES_DIR.is_dir() else []


def find_profile(ref: str) -> Path | None:
    """A profile folder from `cost.profile`: a path from the current folder, or a profile's name
    (`h200-sglang`), looked up in MTPSIM_CATALOG's folders' profiles/ and then the committed
    ones; the old source-tree spelling `calibrate/profiles/NAME` still names it when no such
    folder exists here. A name never reaches outside those folders."""
    given = Path(ref)
    candidates = [given]
    name = ref.removeprefix(LEGACY_PREFIX).rstrip("/")
    if name and "/" not in name and "\\" not in name and ".." not in name and name != ".":
        candidates += [folder / "profiles" / name for folder in user_catalog_dirs()] + [PROFILES_DIR / name]
    for path in candidates:
        if (path / "meta.yaml").is_file():
            return path
        if path is not given or "/" in ref or "\\" in ref:  # a bare name may match any folder here: passed over
            _passed_over(path)
    return None


def known_profiles() -> list[str]:
    """The profile names a scenario may give: MTPSIM_CATALOG's profiles/ folders' and the committed ones."""
    folders = [d / "profiles" for d in user_catalog_dirs()] + [PROFILES_DIR]
    return sorted({p.name for f in folders if f.is_dir() for p in f.iterdir() if (p / "meta.yaml").is_file()})


def require_profile(ref: str, where: str, key: str) -> Path:
    """`find_profile(ref)`, or a ScenarioError naming `where`'s `key` (the file that wrote the
    reference: a scenario, or a hardware entry's `profiles`) with the names it could give."""
    try:
        path = find_profile(ref)
    except ScenarioError as exc:  # a path that is there but no profile: named beside the key that gave it
        if exc.key:
            raise
        raise ScenarioError(where, key, f"{short(exc.where, 120)[1:-1]}: {exc.reason}") from None
    if path is None:
        raise ScenarioError(where, key, f"no profile folder {short(ref, 120)} (a path holding meta.yaml, or one of: "
                            f"{', '.join(known_profiles())})")
    return path


def _passed_over(path: Path) -> None:
    """A ScenarioError naming `path` when it is there but is no profile the lookup can read (not
    a folder; no meta.yaml, or one spelt meta.yml): otherwise the next folder of that name, a
    committed profile, would price the run in its place without a word."""
    if not (path.exists() or path.is_symlink()):
        return
    if not path.is_dir():
        raise ScenarioError(str(path), "", f"a profile is a folder holding meta.yaml; this {not_a_folder(path)}")
    meta = path / "meta.yaml"
    if meta.exists() or meta.is_symlink():
        raise ScenarioError(str(meta), "", not_a_file(meta))
    near = sorted(p.name for p in path.iterdir() if p.name.lower() in ("meta.yml", "meta.yaml"))
    hint = f"found {short(near[0], 60)[1:-1]}: rename it" if near else "a profile folder holds meta.yaml and its tables"
    raise ScenarioError(str(path), "", f"no meta.yaml ({hint})")
