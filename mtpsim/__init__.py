"""mtpsim: predict LLM decode speed with multi-token-prediction speculative decoding.

    import mtpsim
    point = mtpsim.load("scenarios/quickstart.yaml")[0]   # one Scenario per sweep point
    results = mtpsim.simulate(point)                       # a Results: DataFrames + summary row
    print(results.summary.T)

The names below are imported on first use, so `import mtpsim` stays cheap and never imports
torch (only `mtpsim calibrate` and `mtpsim verify` do).
"""
from __future__ import annotations

__all__ = ["load", "simulate", "disaggregated", "Results", "__version__"]

_LAZY = {"load": ("mtpsim.scenario", "load"), "simulate": ("mtpsim.sim", "checked_simulate"),
         "disaggregated": ("mtpsim.sim", "checked_disaggregated"),  # a scenario on prefill + decode pools
         "Results": ("mtpsim.results", "Results")}


def _version() -> str:
    """The installed distribution's version; from a bare source tree, pyproject.toml's."""
    from importlib import metadata
    try:
        return metadata.version("mtpsim")
    except metadata.PackageNotFoundError:
        import re
        from pathlib import Path
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        text = pyproject.read_text() if pyproject.is_file() else ""
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return found.group(1) if found else "0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        value = _version()
    elif name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
    else:
        raise AttributeError(f"module 'mtpsim' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
