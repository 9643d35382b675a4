"""The generalization-check cases G (benchmarks/published_cases.py g_cases, scenario files
scenarios/published/g*-): each file sweeps the batches its case reports, at the accept length
the case states, on one H100 with 3 drafting steps (chains of 3, and one tree)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.tree import accept_distribution

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from published_cases import CASES, G_REPORTED  # noqa: E402

G = [c for c in CASES if c.id.startswith("G")]


def test_every_g_file_is_a_case():
    assert len(G) == len(G_REPORTED)
    assert {c.file for c in G} == {p.name for p in (ROOT / "scenarios" / "published").glob("g*-*.yaml")}


@pytest.mark.parametrize("case", G, ids=lambda c: c.id)
def test_each_file_sweeps_the_reported_batches_at_the_stated_accept_length(case):
    """Each file runs the batches its case reports, 3 drafting steps on one H100, at the stated accept
    length: a chain's as given, a tree's (G5: depth 3, topk 4, 21 tokens) as its acceptance by
    rank yields it through mtpsim's tree model."""
    points = sc.load(ROOT / "scenarios" / "published" / case.file, list(case.sets))
    assert sorted(p.workload.concurrency for p in points) == sorted(case.reported)
    for point in points:
        assert point.workload.arrival == "closed" and point.specs.hardware.name == "h100-sxm"
        spec, wanted = point.speculative, case.reported_al[point.workload.concurrency]
        if spec.topk == 1:
            assert spec.steps == 3 and point.acceptance.accept_length == wanted
        else:
            assert (spec.steps, spec.topk, spec.num_draft_tokens) == (3, 4, 21)
            pmf = accept_distribution(point.acceptance.per_depth_topk, spec.topk, spec.num_draft_tokens)
            assert 1 + (np.arange(len(pmf)) * pmf).sum() == pytest.approx(wanted, abs=0.005)
    assert all(0.5 < v < 2.5 for v in case.reported.values())
