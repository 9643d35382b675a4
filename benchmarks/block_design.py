"""The block design's two pricing checks as numbers (issue 24 targets; tests/test_blocks.py and
tests/test_adaptive_width.py assert the bounds, this prints how far inside them it lands):

  .venv/bin/python benchmarks/block_design.py        # ~10 s

1. k = 1 against nextn S = 1: DeepSeek-V3's own MTP layer written as a one-layer block drafter
   tapping the last target layer (tests/test_blocks.py MTP_AS_BLOCK), one iteration's GPU time
   at batch 1..256 and context 2048 on 8xH200, roofline and the committed calibrated profile.
   The two differ by what a block drafter does differently (its fc, its context K/V projection,
   one logits row fewer, bidirectional block attention): the ratio shows how much that is.
2. A ragged verify (each request's width drawn uniformly in 1..N) against the same batch at the
   narrowest and widest width: where between them it is priced, as a fraction of the gap (batch
   1 has one width: no gap, nan).
The scenarios are the tests' own (one home for the equivalence drafter), imported from tests/.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: tests/ and mtpsim/

from mtpsim.costs import build_pricer  # noqa: E402
from mtpsim.costs.ops import BatchLens  # noqa: E402
from mtpsim.designs import DesignShape, iteration_passes  # noqa: E402
from tests.test_adaptive_width import scenario as width_scenario  # noqa: E402
from tests.test_blocks import scenario as block_scenario  # noqa: E402

BATCHES = (1, 4, 16, 64, 256)


def iteration_s(s, batch: int, kv: int = 2048) -> float:
    pricer, d = build_pricer(s), DesignShape.of(s.speculative)
    kvs = np.full(batch, kv)
    return sum(pricer.price_lens(p, BatchLens.uniform(p.tokens_per_request, kvs, int(kvs.sum()), kv)).time_s
               for p in iteration_passes(d))


def equivalence() -> None:
    print("block k=1 / nextn S=1, one iteration's GPU time (DeepSeek-V3, 8xH200, context 2048)")
    print(f"{'cost':>11} " + " ".join(f"{'b=' + str(b):>8}" for b in BATCHES))
    for cost in ("roofline", "calibrated"):
        ratios = [iteration_s(block_scenario("block", b, cost=cost), b) / iteration_s(block_scenario("nextn", b, cost=cost), b)
                  for b in BATCHES]
        print(f"{cost:>11} " + " ".join(f"{r:8.4f}" for r in ratios))


def uniform_verify_s(pricer, verify, width: int, kv: np.ndarray) -> float:
    """The verify pass with every request at `width` tokens."""
    shape = replace(verify, tokens_per_request=width, logits_per_request=width)
    return pricer.price_lens(shape, BatchLens.uniform(width, kv, int(kv.sum()), int(kv.max()))).time_s


def ragged() -> None:
    print("\nragged verify (widths uniform in 1..4, DeepSeek-V3 nextn S=3): (ragged - min) / (max - min)")
    for cost in ("roofline", "calibrated"):
        s = width_scenario(cost)
        pricer = build_pricer(s)
        verify = next(p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify")
        cells = []
        for batch in BATCHES:
            rng = np.random.default_rng(batch)
            kv = rng.integers(200, 4000, batch)
            widths = rng.integers(1, verify.tokens_per_request + 1, batch)
            t = pricer.price_lens(replace(verify, ragged=True), BatchLens.of(widths, kv)).time_s
            lo = uniform_verify_s(pricer, verify, int(widths.min()), kv)
            hi = uniform_verify_s(pricer, verify, int(widths.max()), kv)
            cells.append((t - lo) / (hi - lo) if hi > lo else float("nan"))
        print(f"{cost:>11} " + " ".join(f"{c:8.3f}" for c in cells) + f"   (batches {', '.join(map(str, BATCHES))})")


if __name__ == "__main__":
    equivalence()
    ragged()
