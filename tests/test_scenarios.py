"""Every scenario file loads, opens with its question and command, and runs (DESIGN §12)."""
from __future__ import annotations

from pathlib import Path

import pytest

from mtpsim import scenario as sc
from mtpsim.run import run_points

ROOT = Path(__file__).resolve().parent.parent
SIMULATED = sorted(ROOT.glob("scenarios/*.yaml")) + sorted(ROOT.glob("scenarios/published/*.yaml"))
VERIFY = sorted(ROOT.glob("scenarios/verify/*.yaml"))


@pytest.mark.parametrize("path", SIMULATED + VERIFY, ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario_loads_and_opens_with_its_question(path):
    points = sc.load(path)
    head = path.read_text().split("\n\n")[0].lower()
    assert head.startswith("#") and "mtpsim" in head        # the command that runs it
    assert points[0].question


@pytest.mark.slow
@pytest.mark.parametrize("path", SIMULATED, ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario_runs(path):
    points = sc.load(path)
    summary, _ = run_points(points, jobs=1, progress=False)
    assert len(summary[summary.point >= 0]) == len(points)
    assert (summary.tps > 0).all() and summary.speedup.notna().all()
