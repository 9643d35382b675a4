"""Expert parallelism waits for its busiest rank (costs/ffn.py `busiest_rank`, `routed_imbalance`).

Under EP each group holds E / ep experts and the layer's combine waits for the group with the
most work. With a few tokens a pass the busiest group's load is well above the mean even under
uniform routing: one token of DeepSeek-V3 (top 8 of 256) over 8 groups touches 1 expert a group
on average, 2.54 in the busiest. These tests check the statistic against a Monte Carlo of that
routing and that the MoE op prices the busiest group, not the mean.
"""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim.costs import ops as O
from mtpsim.costs.ffn import busiest_rank, experts_touched, routed_imbalance
from mtpsim.specs import FFNSpec

DEEPSEEK = FFNSpec(kind="moe", num_experts=256, top_k=8, expert_intermediate_size=2048)


def _monte_carlo(tokens: int, ep: int, draws: int = 3000) -> tuple[float, float]:
    """(busiest group's distinct experts, busiest group's routed copies), averaged over draws of
    DeepSeek-V3's routing: each token picks 8 distinct experts of 256 uniformly."""
    rng = np.random.default_rng(7)
    per_group = 256 // ep
    experts, copies = [], []
    for _ in range(draws):
        picks = np.argsort(rng.random((tokens, 256)), axis=1)[:, :8].ravel()
        experts.append(np.bincount(np.unique(picks) // per_group, minlength=ep).max())
        copies.append(np.bincount(picks // per_group, minlength=ep).max())
    return float(np.mean(experts)), float(np.mean(copies))


@pytest.mark.parametrize("tokens,ep", [(1, 8), (4, 8), (16, 8), (2, 4), (32, 16)])
def test_the_busiest_group_matches_a_monte_carlo_of_the_routing(tokens, ep):
    mc_experts, mc_copies = _monte_carlo(tokens, ep)
    share = experts_touched(256, 8, tokens) / 256
    assert busiest_rank(256 // ep, share, ep) == pytest.approx(mc_experts, rel=0.03)
    assert routed_imbalance(tokens, 8, 256, ep) * tokens * 8 / ep == pytest.approx(mc_copies, rel=0.03)


def test_the_imbalance_is_one_rank_or_none_and_fades_with_tokens():
    assert routed_imbalance(64, 8, 256, 1) == 1.0 and routed_imbalance(0, 8, 256, 8) == 1.0
    ratios = [routed_imbalance(tokens, 8, 256, 8) for tokens in (1, 8, 64, 512, 4096)]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] > 2 and 1 < ratios[-1] < 1.03
    assert busiest_rank(32, 1.0, 8) == 32 and busiest_rank(32, 0.0, 8) == 0
    assert busiest_rank(32, 0.25, 1) == 8  # one rank: the mean


@pytest.mark.parametrize("tokens", [1, 8, 64])
def test_an_ep_moe_op_reads_the_busiest_groups_experts(tokens):
    per_expert = 3 * 7168 * 2048  # FP8 bytes of one expert's gate, up and down
    mean = experts_touched(256, 8, tokens) / 8
    busy = O.moe_experts(DEEPSEEK, 7168, tokens, "fp8", O.Parallel(tp=8, ep=8))
    even = O.moe_experts(DEEPSEEK, 7168, tokens, "fp8", O.Parallel(tp=8, ep=8), busiest=False)
    assert even.weight_bytes == pytest.approx(mean * per_expert)
    assert busy.weight_bytes == pytest.approx(busiest_rank(32, 8 * mean / 256, 8) * per_expert)
    assert busy.weight_bytes > even.weight_bytes
    # TP-split experts (ep 1): every GPU holds a slice of every expert, nothing to wait for
    split = O.moe_experts(DEEPSEEK, 7168, tokens, "fp8", O.Parallel(tp=8, ep=1))
    assert split.weight_bytes == pytest.approx(experts_touched(256, 8, tokens) * per_expert / 8)


def test_wide_ep_below_the_published_ranks_prices_the_busiest_ranks_tokens():
    """Wide EP over 16 ranks (no published imbalance): the experts and the dispatch at the busiest
    rank's routed copies under uniform routing, 1.46x the mean at 2 tokens a rank."""
    from mtpsim.costs.dp_attention import mlp_ops
    par = O.Parallel(tp=16, ep=16, attention_dp=16)
    experts = next(op for op in mlp_ops(DEEPSEEK, 7168, 2, "fp8", "fp8", par) if op.name == "moe.experts")
    hot = routed_imbalance(2 * 16, 8, 256, 16)
    assert experts.shape["tokens"] == int(np.ceil(2 * 16 * hot)) and hot == pytest.approx(1.46, abs=0.01)
    given = O.Parallel(tp=16, ep=16, attention_dp=16, ep_imbalance=1.0)  # a figure given: taken as is
    experts = next(op for op in mlp_ops(DEEPSEEK, 7168, 2, "fp8", "fp8", given) if op.name == "moe.experts")
    assert experts.shape["tokens"] == 32
