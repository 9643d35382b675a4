"""The external-speedup cases E (benchmarks/published_cases.py e_cases, scenario files
scenarios/published/e*-) load the point each reports: its batch, its draft shape and its accept
length, as given: a tree reads it through mtpsim's one-parameter rank family
(tests/test_tree_accept_length.py), and its tree model must give the reported length back."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from published_cases import CASES, E_REPORTED, e_cases  # noqa: E402

E = [c for c in CASES if c.id.startswith("E")]


def test_every_reported_point_is_a_case():
    assert len(E) == len(e_cases()) == sum(len(points) for points in E_REPORTED.values())
    assert {c.file for c in E} == {p.name for p in (ROOT / "scenarios" / "published").glob("e*-*.yaml")}


@pytest.mark.parametrize("case", E, ids=lambda c: f"{c.id} {c.point(next(iter(c.reported)))}")
def test_each_point_loads_at_its_batch_shape_and_accept_length(case):
    (batch, speedup), = case.reported.items()
    al = case.reported_al[batch]
    point = sc.load(ROOT / "scenarios" / "published" / case.file, list(case.sets))[0]
    assert point.workload.concurrency == batch and point.workload.arrival == "closed"
    assert point.specs.hardware.name == "h100-sxm" and point.engine.kind == "sglang"
    spec = point.speculative
    shape = next(shape for (eid, file, shape), points in E_REPORTED.items()
                 if file == case.file and batch in points and points[batch][2] == al)
    assert (spec.steps, spec.topk, spec.num_draft_tokens) == shape
    acc = point.acceptance
    assert acc.accept_length == al and acc.per_depth_topk is None
    profile = AcceptanceProfile.from_section(acc, spec.steps, case.file, spec.topk, spec.num_draft_tokens)
    assert profile.expected_accept_length(spec.steps) == pytest.approx(al, abs=1e-6)
    assert 0.5 < speedup < 2.0
