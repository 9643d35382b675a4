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


def test_specbundle_cases_run_the_point_they_report():
    """Each S case (SpecForge's SpecBundle dashboard) loads its scenario at the chain it reports:
    its steps, one verify token more than the drafts (num_draft_tokens = steps + 1), and the
    reported accept length; its speedup is the two throughputs' ratio."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from published_cases import CASES, S_REPORTED

    from mtpsim import scenario as sc
    cases = [c for c in CASES if c.id.startswith("S")]
    assert len(cases) == sum(len(points) for benches in S_REPORTED.values() for points in benches.values())
    for case in cases:
        (steps, speedup), = case.reported.items()
        point = sc.load(ROOT / "scenarios" / "published" / case.file, list(case.sets))[0]
        assert point.speculative.steps == steps and point.speculative.topk == 1
        assert point.acceptance.accept_length == case.reported_al[steps]
        assert point.specs.hardware.name == "h200" and point.engine.version == "0.5.6"
        assert 0.9 < speedup < 3.0
