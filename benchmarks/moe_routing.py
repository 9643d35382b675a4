"""What the measured MoE rows actually route: the collector's routings through DeepSeek-V3's
grouped top-k, against the random routing mtpsim assumes (issue 19, the B200 mid-batch gap).

    .venv/bin/python benchmarks/moe_routing.py [--draws 50]

aiconfigurator's collector times each MoE row by feeding the engine's MoE layer router logits
built for a named routing, then lets the layer route them (ai-dynamo/aiconfigurator 095f58a5):
- `balanced`: collector/helper.py `balanced_logits`: token t picks experts
  (t * stride / T + j * stride) % E for j < k, stride = ceil(E / k): one expert in each of
  DeepSeek's 8 routing groups;
- `power_law_1.01`: collector/helper.py `_generate_power_law_distribution`: per-expert loads
  drawn from a power law (over [0.01, 2] when T * k <= E, else [1, 0.8 T]), scaled to T * k,
  rounded, capped at T, then dealt out to tokens;
- the logits are softmax(one-hot picks), so every expert a token did not pick ties with the others.
For DeepSeek-V3/R1 the SGLang collector builds the layer with DeepSeek's routing
(collector/cases/models/DeepseekV3ForCausalLM_cases.yaml: sigmoid scores, zero correction bias,
8 expert groups, top-4 groups; collector/sglang/collect_moe.py TopK(use_grouped_topk=...)): each
token keeps the 4 groups with the highest sum of their top-2 scores, then its top 8 experts
inside them. A balanced token's groups all score alike, so 4 of its 8 picks fall outside the
kept groups and are replaced by tied experts, the same ones for every token.

This script re-implements the two routings and the grouped top-k (ties to the lower index, as a
stable sort gives; the GPU kernel's tie order is not documented) and prints, per token count,
the experts each routing touches and its busiest expert's tokens: as labelled, as the kernel
routes it, for a router with no preference (random scores through the same grouped top-k), and
what mtpsim prices (`costs/ffn.py experts_touched`, random routing without groups).
Nothing here changes a prediction; it says which measured rows stand for which routing.

Measured 2026-12-04 (--draws 30), ties to the lower index: at 8 tokens the balanced row routes
to 35 experts with one of them taking all 8 tokens (labelled: 64, one token each), the power-law
row to 51 experts, busiest 7.5, and random scores to 57.6, busiest 2.3 (mtpsim prices 57.4).
The tie order matters: the collector's own helper run through torch.topk's grouped top-k on
CPU gave 40 / 8 for the balanced row and 58 / 2.9 for the power-law row. Either way the
balanced rows time a concentrated routing, not a balanced one.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from mtpsim.costs.ffn import experts_touched

EXPERTS, TOP_K, GROUPS, TOP_GROUPS = 256, 8, 8, 4   # DeepSeek-V3 config.json (n_group 8, topk_group 4)
TOKENS = (1, 2, 4, 8, 16, 32, 64)


def balanced_picks(tokens: int) -> np.ndarray:
    """The collector's balanced routing: [tokens, k] expert ids."""
    stride = math.ceil(EXPERTS / TOP_K)
    t, j = np.arange(tokens)[:, None], np.arange(TOP_K)[None, :]
    first = t if tokens >= stride else t * stride / tokens
    return (np.floor(first + j * stride) % EXPERTS).astype(int)


def power_law_picks(tokens: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """The collector's power-law routing, re-implemented: loads drawn and scaled, then dealt out
    column-wise from the experts in descending load (collector/helper.py
    `_assign_experts_from_counts` describes the deal)."""
    lo, hi = (1.0, tokens * 0.8) if tokens * TOP_K > EXPERTS else (0.01, 2.0)
    u = rng.random(EXPERTS)
    draw = ((hi ** (1 - alpha) - lo ** (1 - alpha)) * u + lo ** (1 - alpha)) ** (1 / (1 - alpha))
    load = np.minimum(np.round(draw / draw.sum() * tokens * TOP_K).astype(int), tokens)
    while load.sum() < tokens * TOP_K:   # top up the least loaded experts still under the cap
        load[np.argmin(np.where(load < tokens, load, tokens + 1))] += 1
    while load.sum() > tokens * TOP_K:
        load[np.argmax(load)] -= 1
    order = np.argsort(-load)  # numpy's default sort, as the collector's (ties in its order, not by index)
    dealt = np.repeat(order, load[order])   # each expert as often as its load, most loaded first
    return dealt.reshape(TOP_K, tokens).T  # column-wise: token t takes dealt[t], dealt[t + T], ...


def random_scores(tokens: int, rng: np.random.Generator) -> np.ndarray:
    """A router with no preference: independent random scores, [tokens, E]."""
    return rng.standard_normal((tokens, EXPERTS))


def one_hot_scores(picks: np.ndarray) -> np.ndarray:
    """The scores the collector's logits give: sigmoid(softmax(one-hot picks)) is higher where
    picked and tied elsewhere; only the order matters to the routing, so 1 and 0 stand in."""
    score = np.zeros((len(picks), EXPERTS))
    np.put_along_axis(score, picks, 1.0, axis=1)
    return score


def grouped_route(score: np.ndarray) -> np.ndarray:
    """DeepSeek's routing of per-expert scores [tokens, E]: keep the top groups by their two
    best scores, then the top k experts inside them (ties to the lower index)."""
    tokens = len(score)
    per_group = score.reshape(tokens, GROUPS, EXPERTS // GROUPS)
    group_score = -np.sort(-per_group, axis=-1)[..., :2].sum(-1)
    kept = np.argsort(-group_score, axis=1, kind="stable")[:, :TOP_GROUPS]
    allowed = np.zeros((tokens, GROUPS), bool)
    np.put_along_axis(allowed, kept, True, axis=1)
    masked = np.where(np.repeat(allowed, EXPERTS // GROUPS, axis=1), score, -1.0)
    return np.argsort(-masked, axis=1, kind="stable")[:, :TOP_K]


def touched(picks: np.ndarray) -> tuple[int, int]:
    counts = np.bincount(picks.ravel(), minlength=EXPERTS)
    return int((counts > 0).sum()), int(counts.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=50, help="routings drawn per random row (default 50)")
    draws = parser.parse_args().draws
    rng = np.random.default_rng(0)
    print(f"{'tokens':>6}  {'routing':<44}{'experts':>8}{'busiest':>8}")
    for tokens in TOKENS:
        balanced = balanced_picks(tokens)
        power_law = [power_law_picks(tokens, 1.01, rng) for _ in range(draws)]
        rows = [
            ("balanced row, as labelled", [touched(balanced)]),
            ("balanced row, as the kernel routes it", [touched(grouped_route(one_hot_scores(balanced)))]),
            ("power_law_1.01 row, as labelled", [touched(p) for p in power_law]),
            ("power_law_1.01 row, as the kernel routes it", [touched(grouped_route(one_hot_scores(p))) for p in power_law]),
            ("random scores through the grouped top-k", [touched(grouped_route(random_scores(tokens, rng)))
                                                          for _ in range(draws)]),
        ]
        for name, found in rows:
            print(f"{tokens:>6}  {name:<44}{np.mean([f[0] for f in found]):>8.1f}{np.mean([f[1] for f in found]):>8.1f}")
        print(f"{tokens:>6}  {'mtpsim (costs/ffn.py experts_touched)':<44}{experts_touched(EXPERTS, TOP_K, tokens):>8.1f}"
              f"{'-':>8}")


if __name__ == "__main__":
    main()
