"""The generalization-check cases G (benchmarks/published_cases.py g_cases, scenario files
scenarios/published/g*-): each file sweeps the batches its case reports, at the accept length
the case states, on one H100 with a chain of 3."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtpsim import scenario as sc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from published_cases import CASES, G_REPORTED  # noqa: E402

G = [c for c in CASES if c.id.startswith("G")]


def test_every_g_file_is_a_case():
    assert len(G) == len(G_REPORTED)
    assert {c.file for c in G} == {p.name for p in (ROOT / "scenarios" / "published").glob("g*-*.yaml")}


@pytest.mark.parametrize("case", G, ids=lambda c: c.id)
def test_each_file_sweeps_the_reported_batches_at_the_stated_accept_length(case):
    points = sc.load(ROOT / "scenarios" / "published" / case.file, list(case.sets))
    assert sorted(p.workload.concurrency for p in points) == sorted(case.reported)
    for point in points:
        assert point.workload.arrival == "closed" and point.specs.hardware.name == "h100-sxm"
        assert (point.speculative.steps, point.speculative.topk) == (3, 1)
        assert point.acceptance.accept_length == case.reported_al[point.workload.concurrency]
    assert all(0.5 < v < 2.5 for v in case.reported.values())
