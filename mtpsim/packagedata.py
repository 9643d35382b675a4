"""Where the data shipped inside the package lives: the model, hardware and engine catalogs
(`mtpsim/data/{models,hardware,engines}/`), the committed profiles (`mtpsim/data/profiles/`) and
the fitted latency floors (`mtpsim/data/latency_floors.yaml`).

Found with importlib.resources, so they resolve the same from a source checkout, an editable
install, `pip install .` or a wheel, whatever the current folder.
"""
from __future__ import annotations

import atexit
import contextlib
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
