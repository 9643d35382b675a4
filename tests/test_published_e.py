"""The external-speedup cases E (benchmarks/published_cases.py e_cases, scenario files
scenarios/published/e*-) load the point each reports: its batch, its draft shape and its accept
length. A chain takes the accept length as given; a tree, which needs acceptance per depth and
rank, takes a one-parameter rank split solved to that length, and mtpsim's tree model must give
the reported length back."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from published_cases import CASES, E_REPORTED, TREE_P, e_cases, tree_ranks  # noqa: E402

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
    if spec.topk == 1:
        assert acc.accept_length == al and acc.per_depth_topk is None
    else:
        assert acc.accept_length is None
        profile = AcceptanceProfile.from_section(acc, spec.steps, case.file, spec.topk, spec.num_draft_tokens)
        assert profile.expected_accept_length(spec.steps) == pytest.approx(al, abs=0.005)
    assert 0.5 < speedup < 2.0


def test_the_tree_split_is_the_stated_family():
    """rank j catches the target's token with p (1 - p)^j, the same at every depth."""
    rows = tree_ranks(TREE_P[2.542], 4, 4)
    assert rows[0] == rows[3] and rows[0][0] == 0.3822
    assert rows[0][1] == pytest.approx(0.3822 * 0.6178, abs=1e-4)
    point = sc.load(ROOT / "scenarios" / "published" / "e3-qwen3-30b-a3b-eagle3-tree-sglang-4xh100.yaml")[0]
    assert point.acceptance.per_depth_topk == rows  # the file's own point is the batch-1 case
