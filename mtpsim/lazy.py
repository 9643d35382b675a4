"""Modules imported on first use: `from mtpsim.lazy import pandas as pd` reads like the import it
stands for, and pandas (with pyarrow, ~0.2-0.3 s) loads the first time an attribute of `pd` is
read. The modules on `mtpsim run`'s path that read tables with pandas (profile CSVs, which a warm
profile cache never parses, acceptance histograms, trace files) use it, so that a run that reads
none of those never imports pandas.
"""
from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module `name`; each attribute read imports it (once: then sys.modules has it)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


pandas = LazyModule("pandas")
