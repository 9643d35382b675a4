"""Where the data shipped inside the package lives: the model, hardware and engine catalogs
(`mtpsim/data/{models,hardware,engines}/`), the committed profiles (`mtpsim/data/profiles/`) and
the fitted latency floors (`mtpsim/data/latency_floors.yaml`); and the user's catalog folders
named by MTPSIM_CATALOG, searched first.

Found with importlib.resources, so they resolve the same from a source checkout, an editable
install, `pip install .` or a wheel, whatever the current folder.
"""
from __future__ import annotations

import atexit
import contextlib
import os
from functools import cache
from importlib import resources
from pathlib import Path


@cache
def data_dir() -> Path:
    """The package's data folder as a real folder (extracted once when installed zipped)."""
    try:
        root = resources.files("mtpsim") / "data"
    except (NotADirectoryError, TypeError):
        # an editable install made while mtpsim had no __init__.py registers it as a namespace
        # whose path importlib.resources cannot read: the folder beside this file is the data
        return Path(__file__).resolve().parent / "data"
    if isinstance(root, Path):
        return root
    stack = contextlib.ExitStack()
    atexit.register(stack.close)
    return Path(stack.enter_context(resources.as_file(root)))


CATALOG_ENV = "MTPSIM_CATALOG"
CATALOG_KINDS = ("models", "hardware", "engines", "profiles")  # the subfolders a catalog folder may hold


def user_catalog_dirs() -> list[Path]:
    """The folders MTPSIM_CATALOG names (`dir1:dir2`, os.pathsep-separated), in search order.
    Each may hold models/, hardware/, engines/ and profiles/ like the built-in catalog."""
    from mtpsim.errors import ScenarioError
    dirs = []
    for part in os.environ.get(CATALOG_ENV, "").split(os.pathsep):
        if not part.strip():
            continue
        folder = Path(part).expanduser()
        try:
            found = folder.is_dir()
        except OSError as exc:  # a name too long for the file system: the variable is what is wrong
            raise ScenarioError(CATALOG_ENV, "", f"{exc.strerror or exc}: {part[:200]}") from None
        if not found:  # a file, a pipe or a broken link there is no missing folder: say which it is
            from mtpsim.textfiles import not_a_folder
            there = folder.exists() or folder.is_symlink()
            raise ScenarioError(CATALOG_ENV, "", f"{not_a_folder(folder) if there else 'no such folder'}: {part[:200]}")
        for kind in CATALOG_KINDS:  # a kind that is not a folder would be passed over without a word
            sub = folder / kind
            if (sub.exists() or sub.is_symlink()) and not sub.is_dir():
                from mtpsim.textfiles import not_a_folder
                raise ScenarioError(str(sub), "", f"{not_a_folder(sub)}: a catalog's {kind}/ is a folder of entries")
        if not any((folder / kind).is_dir() for kind in CATALOG_KINDS):  # nothing in it is ever looked up
            from mtpsim.errors import warn
            inside = f"; it is itself a {folder.name}/ folder: name the folder above it" \
                if folder.name in CATALOG_KINDS else ""
            warn(CATALOG_ENV, "", f"{part[:200]} holds none of {', '.join(k + '/' for k in CATALOG_KINDS)}, so no "
                 f"entry in it is found (the built-in catalog's are used){inside}")
        dirs.append(folder)
    return dirs


def catalog_dirs() -> list[Path]:
    """Where catalog names are looked up, first match wins: MTPSIM_CATALOG's folders, then the
    built-in catalog."""
    return [*user_catalog_dirs(), data_dir()]
