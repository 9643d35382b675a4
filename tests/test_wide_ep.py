"""Wide EP under DeepEP (costs/wide_ep.py, calibration/aic_rows.wide_ep_moe_rows, aic_deepep.py):
one GPU's experts are priced by its own shape from the DeepEP expert rows, dispatch + combine
across nodes from DeepEP's multi-node rows, each in the pass's mode, labelled; layouts and
profiles without them price as before."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mtpsim.calibration.aic_deepep import _ll, _normal
from mtpsim.calibration.aic_rows import wide_ep_moe_rows
from mtpsim.catalog import load_hardware, load_model
from mtpsim.costs import ops as O
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.profile import PROFILES_DIR

H100 = load_hardware("h100-sxm")
DECODE = PassShape("decode", "target", 1, 1)


@pytest.fixture(scope="module")
def costs() -> CalibratedCosts:
    return CalibratedCosts.from_profile(PROFILES_DIR / "h100-sxm-sglang", H100)


def _row(family: str, **match) -> pd.Series:
    df = pd.read_csv(PROFILES_DIR / "h100-sxm-sglang" / f"{family}.csv.gz")
    for k, v in match.items():
        df = df[df[k] == v]
    assert len(df) == 1, match
    return df.iloc[0]


def _decode_ops(costs, ranks: int, per_gpu: int, **kw) -> dict:
    p = Pricer.of(load_model("deepseek-v3"), H100, costs, tp=ranks, ep=ranks, attention_dp=ranks, **kw)
    batch = ranks * per_gpu
    cost = p.price(DECODE, np.ones(batch, np.int64), np.full(batch, 2000), keep_ops=True)
    return {op.name: (op, t) for op, t, _ in cost.ops}


def test_converted_rows_are_one_gpus_shape():
    """num_tokens are all ranks' tokens: 8192 over 256 experts, top-8, EP64 is 4 experts of 256
    tokens each on one GPU; milliseconds become seconds."""
    raw = pd.DataFrame([dict(moe_dtype="fp8_block", num_tokens=8192, hidden_size=7168, inter_size=2048, topk=8,
                             num_experts=256, moe_tp_size=1, moe_ep_size=64, distribution=d, latency=ms,
                             kernel_source="deepepmoe") for d, ms in (("uniform", 0.11), ("power_law_1.2", 0.5))])
    rows = wide_ep_moe_rows(raw, mode="ll")
    assert len(rows) == 1
    r = rows.iloc[0]
    assert (r["mode"], r["dtype"], r.experts, r.tokens_per_expert) == ("ll", "fp8", 4, 256)
    assert r.time_s == pytest.approx(0.11e-3)
    assert r.flops == pytest.approx(2 * 8192 * 8 * 3 * 7168 * 2048 / 64)


def test_deepep_rows_by_mode():
    """Low latency: dispatch + combine, multi-node rows only; normal: each phase's fastest SM count."""
    ll = pd.DataFrame([dict(node_num=n, hidden_size=7168, num_token=128, num_topk=8, num_experts=288,
                            dispatch_avg_t_us=100.0, combine_avg_t_us=200.0) for n in (1, 8)])
    got = _ll(ll)
    assert list(got.ranks) == [64] and got.time_s.iloc[0] == pytest.approx(300e-6)
    normal = pd.DataFrame([dict(node_num=4, hidden_size=7168, num_token=8192, num_topk=8, dispatch_sms=sms,
                                dispatch_transmit_us=dt, dispatch_notify_us=1.0, combine_sms=sms,
                                combine_transmit_us=ct, combine_notify_us=2.0)
                           for sms, dt, ct in ((8, 5000.0, 9000.0), (24, 3500.0, 9500.0))])
    got = _normal(normal)
    assert list(got.ranks) == [32] and got.time_s.iloc[0] == pytest.approx((3501 + 9002) * 1e-6)


def test_experts_at_a_measured_per_gpu_shape_read_the_deepep_row(costs):
    """EP64, 128 tokens per GPU: 4 experts of 256 tokens on each GPU, a measured DeepEP row."""
    op, t = _decode_ops(costs, 64, 128)["moe.experts"]
    assert t.source == "calibrated:deepep-ll"
    row = _row("moe_wide_ep", mode="ll", dtype="fp8", experts=4, tokens_per_expert=256)
    assert t.total_s == pytest.approx(row.time_s, rel=1e-6)


def test_dispatch_across_nodes_reads_the_nearest_measured_ranks(costs):
    """EP72 over 9 nodes: DeepEP was timed on 8 nodes (64 ranks), and the source says so."""
    _, t = _decode_ops(costs, 72, 256)["comm.dispatch_combine"]
    assert t.source == "calibrated:deepep-ll-ranks64"
    row = _row("alltoall_wide_ep", mode="ll", ranks=64, tokens=256)
    assert t.comm_s == pytest.approx(row.time_s, rel=1e-6)


def test_wide_ep_is_far_cheaper_than_the_gathered_kernel_rows(costs):
    """The gathered-TP kernel walks every token of the batch; DeepEP's GEMM only its own: at
    EP64 and 128 tokens per GPU the generic table's time is several times the DeepEP row's."""
    op, t = _decode_ops(costs, 64, 128)["moe.experts"]
    generic, _ = costs.predict(O.moe_experts(load_model("deepseek-v3").ffn_kinds["moe"], 7168, 8192, "fp8",
                                             O.Parallel(64, 64)))
    assert generic > 5 * t.total_s


def test_one_node_low_latency_and_other_profiles_keep_their_pricing(costs):
    """Inside one node the low-latency dispatch stays with the current release's `alltoall`
    rows; a profile without DeepEP rows (TensorRT-LLM's) prices wide EP as before."""
    _, t = _decode_ops(costs, 8, 64)["comm.dispatch_combine"]
    assert "deepep" not in t.source
    trt = CalibratedCosts.from_profile(PROFILES_DIR / "h100-sxm-trtllm", H100)
    ops = _decode_ops(trt, 64, 128)
    assert not any("deepep" in t.source for _, t in ops.values())


# ----------------------------------------------------------------------------- EP imbalance

def test_imbalance_defaults_by_eplb_and_ranks():
    """The published figure at EP32 (TensorRT-LLM blog 4, Table 1) for wide EP over 32 ranks or
    more, with and without EPLB; uniform below (no figure) and outside wide EP; a given value wins."""
    from mtpsim.costs.wide_ep import EPLB_IMBALANCE, NO_EPLB_IMBALANCE, ep_imbalance
    wide = O.Parallel(72, 72, 72)
    assert ep_imbalance(None, True, wide) == EPLB_IMBALANCE == pytest.approx(1.109)
    assert ep_imbalance(None, False, wide) == NO_EPLB_IMBALANCE == pytest.approx(2.564)
    assert ep_imbalance(None, False, O.Parallel(8, 8, 8)) is None  # uniform routing's own, by tokens
    assert ep_imbalance(None, False, O.Parallel(32, 8, 32)) is None  # gathered TP, not wide EP
    assert ep_imbalance(1.5, True, O.Parallel(8)) == 1.5


def test_busiest_rank_sets_experts_and_all_to_all(costs):
    """Every rank waits for the busiest: its experts' work and its dispatch + combine grow with
    the imbalance; the rest of the layer does not."""
    even, hot = _decode_ops(costs, 64, 128), _decode_ops(costs, 64, 128, ep_imbalance=2.0)
    assert hot["moe.experts"][0].flops == pytest.approx(2 * even["moe.experts"][0].flops)
    assert hot["comm.dispatch_combine"][0].comm_bytes == pytest.approx(2 * even["comm.dispatch_combine"][0].comm_bytes)
    assert hot["moe.experts"][1].total_s > even["moe.experts"][1].total_s
    assert hot["comm.dispatch_combine"][1].total_s > even["comm.dispatch_combine"][1].total_s
    assert hot["attn.q_b_proj"] == even["attn.q_b_proj"]


def test_scenario_reads_eplb():
    """engine.eplb picks the default; cost.ep_imbalance overrides it (build_pricer)."""
    from mtpsim import scenario as sc
    from mtpsim.costs import build_pricer
    path = Path(__file__).resolve().parent.parent / "scenarios/published/l1-deepseek-v3-lmsys-96xh100-decode.yaml"
    assert build_pricer(sc.load(path)[0]).par.ep_imbalance == pytest.approx(1.109)
    assert build_pricer(sc.load(path, ["engine.eplb=false"])[0]).par.ep_imbalance == pytest.approx(2.564)
    assert build_pricer(sc.load(path, ["cost.ep_imbalance=1.3"])[0]).par.ep_imbalance == 1.3
