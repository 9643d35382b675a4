"""Tree drafts (issue 12 §3): the verify tree and its accept-length distribution (tree.py), the
profile built from per_depth_topk (acceptance.py), the tree's pass shapes and prices, and the
bad inputs that name acceptance.per_depth_topk."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs import build_pricer
from mtpsim.designs import RECORDS, DesignShape, iteration_passes
from mtpsim.sim import simulate
from mtpsim.tree import accept_distribution, build_tree
from tests.test_bad_input import one_line_error, run

Q = [[0.6, 0.2, 0.1, 0.05], [0.5, 0.2, 0.1, 0.05], [0.45, 0.2, 0.1, 0.05]]  # S = 3, K = 4


def chain_pmf(alphas) -> np.ndarray:
    """P(exactly a accepted) of a chain: prod_{k<=a} alpha_k * (1 - alpha_{a+1})."""
    a = np.asarray(alphas, dtype=float)
    reach = np.concatenate([[1.0], np.cumprod(a)])
    return reach * (1.0 - np.concatenate([a, [0.0]]))


def sglang_tree(q, topk: int, draft_tokens: int) -> set[tuple[int, ...]]:
    """The verify tree as rank paths, built the way eagle_worker.py `draft_forward` does it with
    tensors: per step scores (b, K) x topk_p (b, K, K), the best K live, every expansion a
    candidate, then the best N-1 candidates (organize_draft_results)."""
    q = np.asarray(q, dtype=float)
    paths, scores = [(j,) for j in range(topk)], list(q[0, :topk])
    live = list(range(topk))  # indices into paths
    for d in range(1, len(q)):
        expand = np.array([scores[i] for i in live])[:, None] * q[d, :topk][None, :]
        flat = expand.flatten()
        new = [paths[live[i]] + (j,) for i in range(len(live)) for j in range(topk)]
        first = len(paths)
        paths += new
        scores += list(flat)
        live = [first + i for i in np.argsort(-flat, kind="stable")[:topk]]
    best = np.argsort(-np.array(scores), kind="stable")[: draft_tokens - 1]
    return {paths[i] for i in best}


def brute_force_pmf(q, topk: int, draft_tokens: int) -> np.ndarray:
    """Enumerate the target's choices at every depth (a rank, or none of the K) and walk the tree."""
    q = np.asarray(q, dtype=float)
    tree, steps = sglang_tree(q, topk, draft_tokens), len(q)
    pmf = np.zeros(steps + 1)
    for choice in itertools.product(range(topk + 1), repeat=steps):  # topk = the target's token is not a candidate
        prob = np.prod([q[d, c] if c < topk else 1.0 - q[d, :topk].sum() for d, c in enumerate(choice)])
        accepted = 0
        while accepted < steps and choice[accepted] < topk and choice[: accepted + 1] in tree:
            accepted += 1
        pmf[accepted] += prob
    return pmf


# ----------------------------------------------------------------------------- the distribution

# the last two go past 1 + S*K toward every candidate (K + (S-1)K^2, the schema's limit), where
# which nodes are live (expanded at the next step) decides the tree
@pytest.mark.parametrize("topk,draft_tokens", [(2, 3), (2, 5), (2, 7), (3, 4), (3, 10), (4, 2), (4, 8), (4, 13),
                                               (2, 11), (3, 22)])
def test_distribution_equals_brute_force_over_the_sglang_tree(topk, draft_tokens):
    q = [row[:topk] for row in Q]
    got = accept_distribution(q, topk, draft_tokens)
    np.testing.assert_allclose(got, brute_force_pmf(q, topk, draft_tokens), rtol=0, atol=1e-12)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)


def test_tree_is_the_best_nodes_with_their_ancestors():
    tree = build_tree(Q, 4, 8)
    assert len(tree.depth) == 7
    # by hand: scores .6 .2 .1 at depth 1, .3 .12 (under .6) and .1 (under .2) at depth 2, .135 at 3
    assert sorted(zip(tree.depth.tolist(), tree.rank.tolist())) == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 0), (2, 1), (3, 0)]
    for i, p in enumerate(tree.parent.tolist()):
        assert (p == -1) == (tree.depth[i] == 1) and (p < 0 or tree.depth[p] == tree.depth[i] - 1)


@pytest.mark.parametrize("topk", [2, 4])
@pytest.mark.parametrize("extra", [0, 3])
def test_all_mass_on_rank_one_is_the_chain(topk, extra):
    alphas = [0.9, 0.7, 0.5, 0.3]
    q = [[a] + [0.0] * (topk - 1) for a in alphas]
    got = accept_distribution(q, topk, len(alphas) + 1 + extra)  # the chain fits in the tree
    np.testing.assert_allclose(got, chain_pmf(alphas), rtol=0, atol=1e-15)


def test_full_tree_accepts_at_least_what_any_smaller_tree_does():
    """Up to N = 1 + every candidate (3 + 2 x 9 at S = 3, K = 3: the largest tree the schema
    allows), each tree holds every smaller one (the best N-1 nodes grow with N), so P(at least k
    accepted) can only grow with N."""
    q = [row[:3] for row in Q]
    tails = [np.cumsum(accept_distribution(q, 3, n)[::-1])[::-1] for n in range(2, 1 + 3 + 2 * 9 + 1)]
    for small, big in zip(tails, tails[1:]):
        assert (big >= small - 1e-12).all()
    assert tails[-1][1] == pytest.approx(sum(q[0]))  # every depth-1 candidate is in the full tree


def test_verify_width_of_a_chain_with_a_dominant_rank_one_is_the_best_single_path():
    q = [[0.9, 0.05], [0.85, 0.05], [0.8, 0.05]]  # rank-1 paths outscore every alternative
    tree = build_tree(q, 2, 4)
    assert tree.rank.tolist() == [0, 0, 0] and tree.depth.tolist() == [1, 2, 3]
    np.testing.assert_allclose(accept_distribution(q, 2, 4), chain_pmf([0.9, 0.85, 0.8]), rtol=0, atol=1e-15)


def test_a_strong_second_rank_widens_the_tree_instead_of_deepening_it():
    # by hand: candidates .5 .4 at depth 1, .25 .05 .2 .04 at depth 2; N - 1 = 2 keeps both depth-1
    q = [[0.5, 0.4], [0.5, 0.1]]
    np.testing.assert_allclose(accept_distribution(q, 2, 3), [0.1, 0.9, 0.0], atol=1e-15)
    assert AcceptanceProfile.from_tree(q, 2, 3).expected_accept_length(2) == pytest.approx(1.9)
    assert AcceptanceProfile((0.5, 0.5)).expected_accept_length(2) == pytest.approx(1.75)  # the chain at N = 3


def test_zero_acceptance_accepts_nothing():
    q = [[0.0, 0.0, 0.0]] * 4
    np.testing.assert_array_equal(accept_distribution(q, 3, 9), [1.0, 0, 0, 0, 0])
    p = AcceptanceProfile.from_tree(q, 3, 9)
    assert p.expected_accept_length(4) == 1.0
    assert AcceptanceProfile.sample(np.random.default_rng(0), p.request_levels(np.random.default_rng(0), 50, 4)).max() == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_column_is_exactly_the_chain(seed):
    alphas = np.random.default_rng(seed).uniform(0, 1, 6)
    q = [[a] for a in alphas]
    np.testing.assert_allclose(accept_distribution(q, 1, 7), chain_pmf(alphas), rtol=1e-15, atol=0)
    assert AcceptanceProfile.from_tree(q, 1, 7).alphas == tuple(alphas)  # the very per_depth profile
    np.testing.assert_allclose(AcceptanceProfile.from_tree(q, 1, 7).accept_pmf(6), chain_pmf(alphas), atol=1e-15)


def test_sampled_accepted_drafts_follow_the_tree_distribution():
    """200,000 draws through AcceptanceProfile.sample (what the engine calls): every count within
    5 binomial standard errors sqrt(n p (1 - p)) of n p (a false alarm about once in 10^6 per bin)."""
    n, steps = 200_000, 3
    pmf = accept_distribution(Q, 4, 8)
    profile = AcceptanceProfile.from_tree(Q, 4, 8)
    rng = np.random.default_rng(12)
    counts = np.bincount(AcceptanceProfile.sample(rng, profile.request_levels(rng, n, steps)), minlength=steps + 1)
    se = np.sqrt(n * pmf * (1 - pmf))
    assert (np.abs(counts - n * pmf) <= 5 * se).all(), (counts, n * pmf, se)


def test_sampling_is_capped_by_the_tokens_left():
    profile = AcceptanceProfile.from_tree([[0.9, 0.1]] * 3, 2, 7)
    rng = np.random.default_rng(0)
    levels = profile.request_levels(rng, 4000, 3)
    assert AcceptanceProfile.sample(rng, levels, np.full(4000, 2)).max() == 1


# ----------------------------------------------------------------------------- the simulator

TREE = {"name": "t", "model": "llama-3.1-8b", "hardware": "h100-sxm",
        "speculative": {"design": "nextn", "steps": 3, "topk": 4, "draft_tokens": 8, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth_topk": Q},
        "workload": {"concurrency": 4, "num_requests": 8, "input_len": 256, "output_len": 3000}}


def test_simulated_histogram_follows_the_tree_distribution():
    """Each request's last iteration may be capped by its tokens left: at most num_requests
    counts move, added to 5 binomial standard errors."""
    res = simulate(sc.validate(TREE))
    counts = res.accept_counts
    n, pmf = counts.sum(), accept_distribution(Q, 4, 8)
    assert (np.abs(counts - n * pmf) <= 5 * np.sqrt(n * pmf * (1 - pmf)) + 8).all(), (counts, n * pmf)


def test_ranks_past_topk_are_ignored_as_depths_past_steps_are():
    wide = sc.validate({**TREE, "acceptance": {"per_depth_topk": [row + [0.01] for row in Q] + [[0.3] * 3]}})
    exact = sc.validate(TREE)
    d = DesignShape.of(exact.speculative)
    assert AcceptanceProfile.from_section(wide.acceptance, 3, "", 4, 8) == \
        AcceptanceProfile.from_section(exact.acceptance, d.steps, "", d.topk, d.draft_tokens)
    chain = AcceptanceProfile.from_section(wide.acceptance, 3, "", 1, 4)
    assert chain.alphas == tuple(row[0] for row in Q)


def test_per_depth_topk_with_one_column_runs_exactly_as_per_depth():
    chain = {**TREE, "speculative": {**TREE["speculative"], "topk": 1, "draft_tokens": None},
             "workload": {**TREE["workload"], "output_len": 200}}
    a = simulate(sc.validate({**chain, "acceptance": {"per_depth": [0.7, 0.5, 0.4]}}))
    b = simulate(sc.validate({**chain, "acceptance": {"per_depth_topk": [[0.7], [0.5], [0.4]]}}))
    assert a.requests.equals(b.requests) and (a.accept_counts == b.accept_counts).all()


# ----------------------------------------------------------------------------- passes and prices

def test_nextn_tree_passes_follow_sglang():
    passes = iteration_passes(DesignShape("nextn", 3, 4, 8))
    assert [(p.kind, p.tokens_per_request, p.logits_per_request, p.kv_offset, p.tree_keys, p.compact_tokens)
            for p in passes] == [("draft", 4, 4, 1, 2, 0), ("draft", 4, 4, 5, 3, 0),
                                 ("verify", 8, 8, 0, 1 + 7 * 4 / 16, 4), ("extend", 4, 4, 0, 0, 0)]


def test_frozen_kv_tree_seeds_from_one_token_then_drafts_k():
    passes = iteration_passes(DesignShape("frozen_kv", 3, 4, 8))
    assert [(p.kind, p.tokens_per_request) for p in passes] == [("draft", 1), ("draft", 4), ("draft", 4), ("verify", 8)]
    assert passes[-1].compact_tokens == 4


def test_only_nextn_and_frozen_kv_draft_trees():
    assert {name for name, r in RECORDS.items() if r.trees} == {"nextn", "frozen_kv"}


def _verify_ops(topk: int, draft_tokens: int, steps: int = 3, batch: int = 8, kv: int = 2000):
    pricer = build_pricer(sc.validate({**TREE, "speculative": {**TREE["speculative"], "steps": steps, "topk": topk,
                                                                "draft_tokens": draft_tokens if topk > 1 else None},
                                       "acceptance": {"per_depth_topk": [[0.5] + [0.1] * (topk - 1)] * steps}}))
    shape = next(p for p in iteration_passes(DesignShape("nextn", steps, topk, draft_tokens)) if p.kind == "verify")
    cost = pricer.price(shape, np.full(batch, draft_tokens), np.full(batch, kv), keep_ops=True)
    return pricer, {op.name: op for op, _, _ in cost.ops}, cost


def test_tree_verify_reads_the_same_kv_with_fewer_flops_than_a_causal_window():
    _, tree, _ = _verify_ops(4, 8)
    _, chain, _ = _verify_ops(1, 8, steps=7)  # a chain verifying the same 8 tokens
    assert tree["attn.core"].kv_bytes == chain["attn.core"].kv_bytes
    assert tree["attn.core"].flops < chain["attn.core"].flops


def test_tree_verify_copies_the_accepted_paths_kv():
    pricer, ops, cost = _verify_ops(4, 8)
    per_token = 32 * 2 * 8 * 128 * 2  # Llama-3.1-8B: 32 layers, K and V, 8 KV heads of 128, bf16
    assert pricer.kv_bytes_per_token("target") == per_token
    assert ops["kv.compact"].kv_bytes == 2 * 8 * 4 * per_token  # read + write, batch 8, S + 1 = 4 tokens
    assert "kv.compact" not in _verify_ops(1, 4)[1]


# ----------------------------------------------------------------------------- bad input

BASE = """\
name: p
model: llama-3.1-8b
hardware: h100-sxm
speculative: {design: nextn, steps: 2, topk: 2, draft_tokens: 4, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth_topk: [[0.6, 0.2], [0.5, 0.2]]}
workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}
"""
ROWS = "[[0.6, 0.2], [0.5, 0.2]]"
MIMO = BASE.replace("llama-3.1-8b", "mimo-v2-flash").replace("design: nextn", "design: multi_layer") \
    .replace(", topk: 2, draft_tokens: 4, draft: eagle3-mimo-v2-flash", "") \
    .replace(f"per_depth_topk: {ROWS}", "per_depth: [0.8, 0.7]")
BAD = [  # (id, scenario, key, word)
    ("row-sum", BASE.replace(ROWS, "[[0.6, 0.5], [0.5, 0.2]]"), "acceptance.per_depth_topk", "row 1 sums to 1.1"),
    ("out-of-range", BASE.replace(ROWS, "[[0.6, 0.2], [1.5, 0.2]]"), "acceptance.per_depth_topk.1.0", "less than or equal to 1"),
    ("increasing", BASE.replace(ROWS, "[[0.2, 0.6], [0.5, 0.2]]"), "acceptance.per_depth_topk", "increases with rank"),
    ("empty-row", BASE.replace(ROWS, "[[0.6, 0.2], []]"), "acceptance.per_depth_topk", "row 2 is empty"),
    ("fewer-rows", BASE.replace(ROWS, "[[0.6, 0.2]]"), "acceptance.per_depth_topk", "1 rows for 2 steps"),
    ("fewer-columns-than-topk", BASE.replace(ROWS, "[[0.6, 0.2], [0.5]]"), "acceptance.per_depth_topk",
     "row 2 has 1 columns and speculative.topk is 2"),
    ("chain-design-many-columns", MIMO.replace("per_depth: [0.8, 0.7]", f"per_depth_topk: {ROWS}"),
     "acceptance.per_depth_topk", "proposes a chain (one candidate per depth)"),
    ("tree-with-per-depth", BASE.replace(f"per_depth_topk: {ROWS}", "per_depth: [0.8, 0.7]"), "acceptance",
     "need acceptance.per_depth_topk"),
    ("two-forms", BASE.replace("acceptance: {", "acceptance: {per_depth: [0.8, 0.7], "), "acceptance", "give one of"),
    ("chain-only-design", MIMO.replace("steps: 2", "steps: 2, topk: 2"), "speculative.topk", "proposes a chain"),
    ("tree-too-wide", BASE.replace("draft_tokens: 4", "draft_tokens: 8"), "speculative.draft_tokens",
     "8 is more than the tree holds: 1 + the 6 candidates"),
]


@pytest.mark.parametrize("text,key,word", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_tree_input_is_one_line_naming_the_key(tmp_path, capsys, text, key, word):
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_a_tree_verifying_more_than_steps_times_topk_runs(tmp_path):
    """SGLang's documented EAGLE example verifies 64 tokens of steps 5 at topk 8
    (--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 64),
    more than 1 + steps x topk = 41, which the schema once refused; the tree ranks all 8 + 4 x 64
    candidates, and a wider tree accepts at least as much and verifies more tokens."""
    ranks = "[0.5, 0.1, 0.05, 0.03, 0.02, 0.01, 0.01, 0.01]"
    text = BASE.replace("steps: 2, topk: 2, draft_tokens: 4", "steps: 5, topk: 8, draft_tokens: 64") \
        .replace(ROWS, "[" + ", ".join([ranks] * 5) + "]")
    points = {}
    for n in (41, 64):
        (tmp_path / str(n)).mkdir()
        points[n] = sc.load(run(tmp_path / str(n), text.replace("draft_tokens: 64", f"draft_tokens: {n}"))[1], [])[0]
    assert points[64].speculative.num_draft_tokens == 64 and points[64].speculative.candidates == 8 + 4 * 64
    narrow, wide = (simulate(points[n]).summary.query("design == 'nextn'").iloc[0] for n in (41, 64))
    assert wide.draft_tokens == 64 and wide.accept_length >= narrow.accept_length - 1e-9
