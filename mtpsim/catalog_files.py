"""Catalog files read once per version of each file: the key (path, mtime, size, inode) and the
parsed mapping it caches. The lookup (catalog_lookup.py: model aliases are read from the files)
and the specs (catalog.py) share it."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from mtpsim.errors import ScenarioError
from mtpsim.files import load_yaml


def stamped(path: Path) -> tuple[str, tuple[int, int, int]]:
    """(path, its version: mtime, size and inode), the key of the caches below; an unreadable
    file gets a stamp no file has, so load_yaml meets it and says why in its own words."""
    try:
        st = path.stat()
    except OSError:
        return str(path), (-1, -1, -1)
    return str(path), (st.st_mtime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=64)
def parsed(path: str, stamp: tuple[int, int, int]) -> dict[str, Any]:
    """A catalog file parsed once per version of it. The strict YAML reader is pure Python (~40-70
    ms for an engine file), and `mtpsim search` and `recommend` resolve the same three files for
    every candidate layout and point (a 256-GPU search's layouts: 60 s of its 71 s)."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ScenarioError(path, "", "a catalog file must be a mapping")
    return data
