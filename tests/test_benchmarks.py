"""The benchmarks that have a quick mode still run: a benchmark is only read when someone asks
for its numbers, so an API change that breaks one would otherwise go unseen (search_cost.py
raised a TypeError for a while after the search learned per-design steps)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_search_cost_enumerates_its_layouts_and_points():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "search_cost.py"), "--enumerate-only"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "layouts" in done.stdout and "points built" in done.stdout


def test_sweep_cost_times_a_small_sweep():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep_cost.py"), "--points", "8", "--repeats", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mtpsim cost, 8 sweep points" in done.stdout
