"""A tree read from its accept length alone (tree.py tree_rank_rows / tree_rank_rate): the
published tree results give an accept length and no split over the draft's ranks, so mtpsim reads
them through one-parameter rank family, says so in a warning, and refuses a length the tree
cannot reach. Added after campaign 32's check against new published cases, where each tree had
to be hand-fitted (and missed its length: 2.68 for 2.75)."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import cli
from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.tree import tree_accept_length, tree_most, tree_rank_rate, tree_rank_rows
from tests.test_bad_input import one_line_error

TREE = """\
name: tree-al
model: qwen3-30b-a3b
hardware: h100-sxm
engine: {kind: sglang, version: "0.5.5"}
parallel: {tp: 2}
speculative: {design: nextn, steps: 3, topk: 3, draft_tokens: 8, draft: eagle3-qwen3-30b-a3b-specforge}
acceptance: {accept_length: 2.2}
workload: {arrival: closed, concurrency: 2, num_requests: 6, input_len: 256, output_len: 128}
"""


def test_the_family_is_geometric_over_ranks_and_the_same_at_every_depth():
    rows = tree_rank_rows(0.4, 3, 4)
    assert len(rows) == 3 and rows[0] == rows[2]
    assert rows[0] == pytest.approx([0.4, 0.24, 0.144, 0.0864])
    assert sum(rows[0]) == pytest.approx(1 - 0.6 ** 4)  # the topk together catch 1 - (1 - r)^K


@pytest.mark.parametrize("steps", range(1, 9))
@pytest.mark.parametrize("topk", range(2, 9))
def test_the_accept_length_rises_with_the_rate_for_every_tree_size(steps, topk):
    """What the bisection relies on, over every draft_tokens the schema allows (up to 64 here)."""
    rates = np.linspace(0.0, 1.0, 41)
    for tokens in range(2, min(1 + steps * topk, 64) + 1):
        lengths = [tree_accept_length(r, steps, topk, tokens) for r in rates]
        assert np.all(np.diff(lengths) >= -1e-12), (steps, topk, tokens)
        assert lengths[0] == pytest.approx(1.0) and lengths[-1] == pytest.approx(tree_most(steps, tokens))


@pytest.mark.parametrize("length, steps, topk, tokens", [
    (2.20, 3, 3, 8), (2.27, 3, 3, 8), (2.542, 4, 4, 16), (2.92, 3, 4, 21), (1.01, 2, 2, 3), (5.9, 6, 8, 49)])
def test_the_solved_rate_gives_the_length_back(length, steps, topk, tokens):
    rate = tree_rank_rate(length, steps, topk, tokens)
    assert 0 < rate < 1
    assert tree_accept_length(rate, steps, topk, tokens) == pytest.approx(length, abs=1e-9)
    profile = AcceptanceProfile.from_tree_accept_length(length, steps, topk, tokens)
    assert profile.expected_accept_length(steps) == pytest.approx(length, abs=1e-9)


def test_the_e_cases_hand_solved_rates_are_the_family():
    """E2 and E3 were fitted by hand to four places before this form existed (2.20: 0.4000 and
    2.542: 0.3822): the built-in family is the same one."""
    assert tree_rank_rate(2.20, 3, 3, 8) == pytest.approx(0.4000, abs=5e-5)
    assert tree_rank_rate(2.542, 4, 4, 16) == pytest.approx(0.3822, abs=5e-5)


def test_a_tree_runs_from_its_accept_length_and_says_what_it_assumed(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(TREE)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if ": acceptance.accept_length: " in line]
    assert len(said) == 1 and "r = 0.4000" in said[0] and "per_depth_topk" in said[0]
    point = sc.load(path)[0]
    spec = point.speculative
    profile = AcceptanceProfile.from_section(point.acceptance, spec.steps, "", spec.topk, spec.num_draft_tokens)
    assert profile.expected_accept_length(spec.steps) == pytest.approx(2.2, abs=1e-9)


def test_a_chain_still_reads_its_accept_length_as_a_geometric_chain(tmp_path, capsys):
    chain = TREE.replace("topk: 3, draft_tokens: 8", "topk: 1")
    point = sc.load(_write(tmp_path, chain))[0]
    profile = AcceptanceProfile.from_section(point.acceptance, 3, "", 1, 4)
    assert len(set(profile.alphas)) == 1  # one alpha at every depth
    assert cli.main(["cost", _write(tmp_path, chain), "--batch", "1"]) == 0
    assert "acceptance.accept_length" not in capsys.readouterr().err


@pytest.mark.parametrize("change, key, word", [
    (("accept_length: 2.2", "accept_length: 4.5"), "acceptance.accept_length", "exceeds 4"),
    (("8, draft: eagle3-qwen3-30b-a3b-specforge}\nacceptance: {accept_length: 2.2}",
      "3, draft: eagle3-qwen3-30b-a3b-specforge}\nacceptance: {accept_length: 3.5}"),
     "acceptance.accept_length", "exceeds 3"),  # two drafted tokens hold no path deeper than 2
    (("{accept_length: 2.2}", "{per_depth: [0.8, 0.7, 0.6]}"), "acceptance", "per_depth_topk"),
])
def test_a_tree_refuses_lengths_past_its_reach_and_chain_forms(tmp_path, capsys, change, key, word):
    one_line_error(capsys, ["run", _write(tmp_path, TREE.replace(*change))], key, word)


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)
