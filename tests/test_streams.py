"""Shared experts on a second CUDA stream (costs/streams.py): which engine releases run them
there, which passes, and what the step pays: by default both branches (they take turns on the
GPU, as the measured B200/B300 steps fit), the longer of the two with cost.moe_stream_overlap 1,
and in between at a share."""
from __future__ import annotations

import pytest

from mtpsim import advice, catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer, streams
from mtpsim.costs.ops import Op
from mtpsim.costs.roofline import OpTime
from mtpsim.designs import DesignShape
from mtpsim.engine_releases import resolve_engine
from mtpsim.report import op_table

STREAM_RULES = ["shared_experts_dual_stream", "dual_stream_under_cuda_graphs"]


@pytest.mark.parametrize("version, mode", [("0.4.7", "none"), ("0.4.8", "small_passes"), ("0.5.5", "small_passes"),
                                           ("0.5.6", "graphs"), ("0.5.12", "graphs")])
def test_sglang_releases_run_the_dual_stream_as_their_source_does(version, mode):
    assert resolve_engine(catalog.engine_file("sglang"), version).shared_expert_stream == mode


def test_tensorrt_llm_runs_the_aux_stream_under_cuda_graphs():
    trtllm = catalog.engine_file("trtllm")
    assert resolve_engine(trtllm, None).shared_expert_stream == "graphs"
    assert resolve_engine(trtllm, None, ignore=["aux_stream_shared_experts"]).shared_expert_stream == "none"
    assert resolve_engine(catalog.engine_file("vllm"), None).shared_expert_stream == "none"


@pytest.mark.parametrize("mode, tokens, graphs, runs", [
    ("none", 1, True, False), ("graphs", 4, True, True), ("graphs", 4, False, False),
    ("small_passes", 1024, False, True), ("small_passes", 1025, True, False), ("small_passes", 0, True, False)])
def test_which_passes_run_two_streams(mode, tokens, graphs, runs):
    assert streams.moe_runs(mode, tokens, graphs) == runs


def _row(name, ms):
    return (Op(name, "gemm"), OpTime(0.0, ms * 1e-3, 0.0, 1e-6, "calibrated"), 58)


def test_a_whole_overlap_leaves_the_longer_branch_to_set_the_moe_time():
    rows = [_row("attn.o_proj", 0.5), _row("moe.router", 0.1), _row("moe.experts", 0.3),
            _row("moe.shared_gate_up", 0.2), _row("moe.shared_down", 0.1)]
    hidden = streams.hide(rows, ((streams.MOE_CHAINS, 1.0),))
    total = {op.name: t.total_s for op, t, _ in hidden}
    assert total["moe.shared_gate_up"] == total["moe.shared_down"] == 0.0  # S = 0.302 ms < R = 0.402 ms
    assert total["attn.o_proj"] == rows[0][1].total_s and total["moe.experts"] == rows[2][1].total_s
    assert {op.name: t.source for op, t, _ in hidden}["moe.shared_down"] == streams.HIDDEN + "calibrated"
    longer = streams.hide([_row("moe.experts", 0.1), _row("moe.shared_gate_up", 0.3)], ((streams.MOE_CHAINS, 1.0),))
    assert sum(t.total_s for _, t, _ in longer) == pytest.approx(0.301e-3)  # max(S, R): S = 0.301 ms, R = 0.101 ms
    # work stays counted: only time is hidden
    assert [op for op, _, _ in hidden] == [op for op, _, _ in rows]
    fused = [_row("moe.router", 0.1), _row("moe.experts", 0.3)]  # no shared experts: one chain, nothing hidden
    assert streams.hide(fused, ((streams.MOE_CHAINS, 1.0),)) == fused


@pytest.mark.parametrize("overlap", [0.0, 0.25, 0.5, 1.0])
def test_an_overlap_hides_that_share_of_the_shorter_branch_only(overlap):
    rows = [_row("moe.router", 0.1), _row("moe.experts", 0.3), _row("moe.shared_gate_up", 0.2),
            _row("moe.shared_down", 0.1)]
    priced = {op.name: t for op, t, _ in streams.hide(rows, ((streams.MOE_CHAINS, overlap),))}
    whole = {op.name: t for op, t, _ in rows}
    for name in ("moe.shared_gate_up", "moe.shared_down"):
        assert priced[name].total_s == pytest.approx((1 - overlap) * whole[name].total_s)
        assert priced[name].source.startswith(streams.HIDDEN) == (overlap == 1.0)
    assert priced["moe.experts"] == whole["moe.experts"] and priced["moe.router"] == whole["moe.router"]


def _step(hardware="b200", version="0.5.12", ignore=(), batch=4, model="deepseek-v3", overlap=1.0):
    s = sc.validate({"name": "streams", "model": model, "hardware": hardware, "parallel": {"tp": 8, "ep": 1},
                     "speculative": {"design": "none"}, "cost": {"moe_stream_overlap": overlap},
                     "engine": {"kind": "sglang", "version": version, "ignore_rules": list(ignore)}})
    ops = op_table(build_pricer(s), DesignShape.of(s.speculative), batch, 512).set_index("op")
    return ops.time_ms


def test_b200_sglang_pays_the_longer_branch_at_a_whole_overlap_and_without_the_rule_the_sum():
    on, off = _step(), _step(ignore=STREAM_RULES)
    shared = off["moe.shared_gate_up"] + off["moe.shared_down"]
    routed = off["moe.router"] + off["moe.experts"]
    assert 0 < shared < routed
    assert on["moe.shared_gate_up"] == on["moe.shared_down"] == 0.0
    assert off.sum() - on.sum() == pytest.approx(shared)


def test_by_default_the_branches_take_turns_as_without_the_rule():
    assert _step(overlap=0.0).equals(_step(ignore=STREAM_RULES, overlap=0.0))
    half, whole = _step(overlap=0.5), _step(overlap=0.0)
    shared = whole["moe.shared_gate_up"] + whole["moe.shared_down"]
    assert whole.sum() - half.sum() == pytest.approx(shared / 2)


def test_an_overlap_where_no_pass_runs_a_second_stream_is_warned_of(capsys):
    for where in ({"hardware": "h200"}, {"engine": {"kind": "vllm"}}, {"model": "llama-3.1-8b", "parallel": {"tp": 1}}):
        s = sc.validate({"name": "streams", "model": "deepseek-v3", "hardware": "b200", "parallel": {"tp": 8},
                         "engine": {"kind": "sglang"}, "cost": {"moe_stream_overlap": 1}, **where})
        assert [k for k, _ in advice.problems(s)] == ["cost.moe_stream_overlap"], where
    b200 = sc.validate({"name": "streams", "model": "deepseek-v3", "hardware": "b200", "parallel": {"tp": 8},
                        "engine": {"kind": "sglang"}, "cost": {"moe_stream_overlap": 1}})
    assert "cost.moe_stream_overlap" not in [k for k, _ in advice.problems(b200)]


def test_cost_ops_names_a_hidden_op_hidden():
    s = sc.validate({"name": "streams", "model": "deepseek-v3", "hardware": "b200", "parallel": {"tp": 8},
                     "speculative": {"design": "none"}, "engine": {"kind": "sglang", "version": "0.5.12"},
                     "cost": {"moe_stream_overlap": 1}})
    ops = op_table(build_pricer(s), DesignShape.of(s.speculative), 4, 512).set_index("op")
    assert ops.loc["moe.shared_gate_up", "bound"] == "hidden"
    assert ops.loc["moe.experts", "bound"] != "hidden"


def test_no_second_stream_where_the_shared_expert_is_fused_or_eager():
    assert "moe.shared_gate_up" not in _step(hardware="h200").index  # fused into the routed kernel (v0.4.7+)
    eager = _step(batch=1024)  # above the CUDA-graph batch limit: eager, one stream from v0.5.6
    assert eager["moe.shared_gate_up"] > 0
    assert _step(version="0.5.5", batch=1024)["moe.shared_gate_up"] == 0  # v0.4.8-v0.5.5: any pass <= 1024 tokens
