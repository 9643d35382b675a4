"""Where `mtpsim calibrate` may write a profile: a new folder, or a profile folder it replaces
whole under MTPSIM_CALIBRATE_REPLACE=1 (never one holding a user's other files). One rule for
both paths, the device grid (command.py, which needs torch) and `--from aiconfigurator`
(aiconfigurator.py, which must not)."""
from __future__ import annotations

import os
from pathlib import Path

from mtpsim.costs.profile import profile_files
from mtpsim.errors import short
from mtpsim.outputs import NAMELESS, is_fresh, is_nameless, placed
from mtpsim.textfiles import not_a_folder


def check_out(out: Path) -> str | None:
    """Why a profile must not be written to `out`, or None: a new folder, or under
    MTPSIM_CALIBRATE_REPLACE=1 a profile folder holding nothing else (both calibrate paths)."""
    out = Path(placed(str(out)))  # `nothere/../prof` is the user's `prof`, not a new folder
    if out.is_symlink():  # staged() writes <name>.partial beside it and renames it into place
        return "is a symbolic link: give the folder itself"
    if is_nameless(out):  # the profile is written beside it as <name>.partial, then renamed
        return NAMELESS
    if is_fresh(out):
        return None
    if not out.is_dir():
        return not_a_folder(out)
    if not (out / "meta.yaml").is_file():
        return "folder is not empty and is not a profile (no meta.yaml); choose another --out"
    if os.environ.get("MTPSIM_CALIBRATE_REPLACE") != "1":
        return "a profile is already there; set MTPSIM_CALIBRATE_REPLACE=1 to replace it"
    others = _not_a_profiles(out)
    if others:  # the folder is replaced whole: a meta.yaml of the user's beside their own files is no profile
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        return (f"holds {short(others[0], 60)}{more}, which is not a profile's: MTPSIM_CALIBRATE_REPLACE replaces "
                "a profile folder whole, so move them out or choose another --out")
    return None


def _not_a_profiles(out: Path) -> list[str]:
    """What in `out` a profile does not hold: files other than meta.yaml and the tables
    (profile_files' names), and holdout/'s; a link or a folder is the user's either way."""
    ours = {p.name for p in profile_files(out)}
    found = []
    for entry in sorted(out.iterdir()):
        if entry.name == "holdout" and entry.is_dir() and not entry.is_symlink():
            found += [f"holdout/{e.name}" for e in sorted(entry.iterdir())
                      if e.name not in ours or e.is_symlink() or not e.is_file()]
        elif entry.name not in ours or entry.is_symlink() or not entry.is_file():
            found.append(entry.name)
    return found
