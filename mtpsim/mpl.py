"""matplotlib as mtpsim draws with it: into files only (the Agg backend, never a window), with a
config folder it can write. One home for every figure's import (plots.py, search/frontier.py,
verify/compare.py), and none of it imported until a command draws."""
from __future__ import annotations

import os
import sys
import tempfile


def pyplot():
    """matplotlib.pyplot on the Agg backend, its config folder writable first."""
    _writable_config()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _writable_config() -> None:
    """Where matplotlib's own config folder (MPLCONFIGDIR, else $XDG_CONFIG_HOME or ~/.config
    /matplotlib) cannot be made or written (a read-only HOME, HOME a file, MPLCONFIGDIR under
    /proc), it printed two lines of its own on stderr beside mtpsim's one-line messages, and used a
    temporary folder: a temporary folder of mtpsim's instead, without the lines, removed at exit.
    Probed by writing (access() says yes to root everywhere)."""
    if "matplotlib" in sys.modules:  # its folder is chosen at its first import, once a process
        return
    try:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        folder = os.environ.get("MPLCONFIGDIR") or os.path.join(base, "matplotlib")
        os.makedirs(folder, exist_ok=True)  # as matplotlib would on import
        with tempfile.TemporaryFile(dir=folder):
            return
    except (OSError, RuntimeError, ValueError):
        pass
    import atexit
    import shutil
    os.environ["MPLCONFIGDIR"] = folder = tempfile.mkdtemp(prefix="mtpsim-matplotlib-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
