"""Two-batch overlap (costs/overlap.py): the MoE layers of a wide-EP pass as two micro-batches,
each one's dispatch + combine hidden up to the other's compute; nothing else changes."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim.catalog import load_hardware, load_model
from mtpsim.costs import overlap
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.ops import BatchLens
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.profile import PROFILES_DIR

H100 = load_hardware("h100-sxm")
DECODE = PassShape("decode", "target", 1, 1)
PREFILL = PassShape("prefill", "target", 0, 1)
RANKS = 72  # the LMSYS decode pool's layout: DP attention and experts over 72 GPUs


@pytest.fixture(scope="module")
def costs() -> CalibratedCosts:
    return CalibratedCosts.from_profile(PROFILES_DIR / "h100-sxm-sglang", H100)


def _pricers(costs, **layout):
    model = load_model("deepseek-v3")
    return [Pricer.of(model, H100, costs, two_batch_overlap=tbo, **layout) for tbo in (False, True)]


def _decode(pricer, batch: int, shape=DECODE):
    return pricer.price(shape, np.ones(batch, np.int64), np.full(batch, 2000))


def test_large_batch_hides_the_all_to_all_small_batch_pays_for_halving(costs):
    """The sign LMSYS measured (blog/2025-05-05-large-scale-ep.md, "Ablation Study"): a gain at
    256 tokens per GPU, a loss at 32, where halving the batch re-reads weights for little comm."""
    plain, tbo = _pricers(costs, tp=RANKS, ep=RANKS, attention_dp=RANKS)
    big, big_tbo = _decode(plain, RANKS * 256), _decode(tbo, RANKS * 256)
    small, small_tbo = _decode(plain, RANKS * 32), _decode(tbo, RANKS * 32)
    assert big_tbo.time_s < big.time_s
    assert small_tbo.time_s > small.time_s
    # what is hidden is all-to-all time, never more of it than the pass has
    assert big.time_s - big_tbo.time_s < big.comm_s
    assert big_tbo.comm_s < big.comm_s


def test_bracketed_by_the_halves(costs):
    """The overlapped pass lies between the halves run one after the other (nothing hidden) and
    the halves' compute alone (every all-to-all hidden), outside the MoE layers the whole batch's."""
    plain, tbo = _pricers(costs, tp=RANKS, ep=RANKS, attention_dp=RANKS)
    lens = BatchLens.of(np.ones(RANKS * 128, np.int64), np.full(RANKS * 128, 2000))
    halves = overlap.halves(lens)
    assert [h.batch for h in halves] == [RANKS * 64] * 2
    assert sum(h.kv_tokens for h in halves) == lens.kv_tokens
    full = plain.plain_pass(DECODE, lens)
    outside = full.work.time_s - overlap._moe_layers(plain, DECODE, full)[1].time_s
    parts = [overlap._moe_layers(plain, DECODE, plain.plain_pass(DECODE, h)) for h in halves]
    t = tbo.price_lens(DECODE, lens).time_s
    assert outside + sum(c for c, _, _ in parts) < t < outside + sum(w.time_s for _, w, _ in parts)


def test_prefill_overlaps_too(costs):
    """Prefill's normal-mode dispatch + combine overlaps as well (SGLang's prefill strategy)."""
    plain, tbo = _pricers(costs, tp=32, ep=32, attention_dp=32)
    q, kv = np.full(256, 2048), np.zeros(256, np.int64)
    assert tbo.price(PREFILL, q, kv).time_s < plain.price(PREFILL, q, kv).time_s


@pytest.mark.parametrize("layout", [dict(tp=8), dict(tp=8, ep=8), dict(tp=16, ep=4, attention_dp=16)])
def test_no_deepep_all_to_all_no_overlap(costs, layout):
    """Layouts whose MoE layers do not run DeepEP's dispatch + combine price as before."""
    plain, tbo = _pricers(costs, **layout)
    assert _decode(tbo, 64) == _decode(plain, 64)


def test_one_request_and_the_mtp_layer_are_not_split(costs):
    """One request cannot be cut in two; the MTP layer runs outside SGLang's TBO forward."""
    plain, tbo = _pricers(costs, tp=RANKS, ep=RANKS, attention_dp=RANKS)
    assert _decode(tbo, 1) == _decode(plain, 1)
    mtp = PassShape("extend", "mtp", 2, 2, from_target=True)
    assert _decode(tbo, RANKS * 64, mtp) == _decode(plain, RANKS * 64, mtp)
