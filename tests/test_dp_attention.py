"""DP attention (costs/dp_attention.py, Pricer._groups): the batch splits over attention groups,
the pass waits for the slowest group, memory shards over tp / attention_dp, bad layouts are one
line naming the key, and the two published DP-attention scenarios load and price."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtpsim import cli
from mtpsim.catalog import load_engine, load_hardware, load_model
from mtpsim.costs import ops as O
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.roofline import RooflineCosts
from mtpsim.designs import DesignShape
from mtpsim.memory import memory_budget, resolve_pool
from mtpsim.schema import Speculative
from tests.test_bad_input import BASE, one_line_error

PUBLISHED = Path(__file__).resolve().parent.parent / "scenarios" / "published"
DECODE = PassShape("decode", "target", 1, 1)
SHORT, LONG = 256, 60_000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 200_000)), max_size=80), st.integers(1, 24),
       st.booleans(), st.booleans())
def test_a_batch_splits_into_groups_as_each_group_alone(requests, groups, uniform_q, float_kv):
    """BatchLens.split (one pass over the arrays) gives each group exactly what BatchLens.of of
    that group's requests gives, counts, sums and maxima alike, empty groups included."""
    q = np.array([r[0] for r in requests], np.int64)
    if uniform_q:
        q = np.full(len(requests), 3)
    kv = np.array([r[1] for r in requests], float if float_kv else np.int64)
    split = O.BatchLens.split(q, kv, groups)
    assert len(split) == groups
    for g, got in enumerate(split):
        want = O.BatchLens.of(q[g::groups], kv[g::groups])
        assert got[:7] == want[:7] and [type(x) for x in got[:7]] == [type(x) for x in want[:7]]
        assert np.array_equal(got.q, want.q) and np.array_equal(got.kv, want.kv)


def pricer(model="deepseek-v3", **kw) -> Pricer:
    hw = load_hardware("h200")
    return Pricer.of(load_model(model), hw, RooflineCosts(hw), **kw)


def decode_s(p: Pricer, kv: list[int]) -> float:
    return p.price(DECODE, np.ones(len(kv), np.int64), np.array(kv, np.int64)).time_s


def test_attention_dp_1_is_the_tp_pricer():
    kv = [SHORT, LONG, 3000, 17]
    assert decode_s(pricer(tp=8, ep=8, attention_dp=1), kv) == decode_s(pricer(tp=8, ep=8), kv)


def test_the_pass_waits_for_the_slowest_group():
    """Requests go to group i mod 2: [L, S, L, S] puts both long ones in group 0, which decides
    the pass, exactly as if every request were long; balancing them ([L, L, S, S]) is faster."""
    p = pricer(tp=8, ep=8, attention_dp=2)
    skewed = decode_s(p, [LONG, SHORT, LONG, SHORT])
    assert skewed == pytest.approx(decode_s(p, [LONG, LONG, LONG, LONG]), rel=1e-12)
    assert skewed > decode_s(p, [LONG, LONG, SHORT, SHORT]) * 1.001


def test_a_group_without_requests_runs_the_same_shapes():
    """Batch 1 over 2 groups: one group idles, but its GPUs still run the collectives, so the
    pass costs what one request on a group of 4 GPUs costs, not less."""
    p = pricer(tp=8, ep=8, attention_dp=2)
    one = decode_s(p, [LONG])
    assert one == pytest.approx(decode_s(p, [LONG, LONG]), rel=1e-12)  # 1 per group either way (graph bucket 1)
    ops = p.price(DECODE, np.ones(1, np.int64), np.array([LONG]), keep_ops=True).ops
    names = {op.name for op, _, _ in ops}
    assert {"comm.dispatch_combine", "comm.mlp_sync"} <= names


def test_memory_shards_over_the_attention_gpus():
    """Llama-3.1-8B (32 layers, d 4096, 32 heads, 8 KV heads of 128, bf16) on tp 8: with 2
    attention groups of 4 GPUs each GPU holds twice the attention weights and KV heads of TP8
    (the dense FFN stays split over all 8: no wide EP), and twice the LM head and embedding."""
    design = DesignShape.of(Speculative())
    rule = resolve_pool(load_engine("sglang"), load_hardware("h200"), tp=8, mem_fraction=0.9)
    tp8 = memory_budget(pricer("llama-3.1-8b", tp=8), design, rule)
    dp2 = memory_budget(pricer("llama-3.1-8b", tp=8, attention_dp=2), design, rule)
    layers, d, hd, bf16 = 32, 4096, 128, 2
    attention = d * 32 * hd + d * 8 * 2 * hd + 32 * hd * d  # q, k + v, o: all heads
    head_and_embedding = 2 * 128256 * d
    expected = (layers * attention + head_and_embedding) * bf16 * (1 / 4 - 1 / 8)
    assert dp2.target_weight_bytes - tp8.target_weight_bytes == pytest.approx(expected, rel=1e-9)
    assert tp8.kv_bytes_per_token == layers * 2 * 1 * hd * bf16     # 1 KV head per GPU at TP8
    assert dp2.kv_bytes_per_token == layers * 2 * 2 * hd * bf16     # 2 per GPU of a 4-GPU group
    assert dp2.replica_kv_budget_bytes == pytest.approx(2 * dp2.kv_budget_bytes)


def test_collectives_across_nodes_pay_the_network():
    hw = load_hardware("h200")
    costs = RooflineCosts(hw)
    inside = O.dispatch_combine(64, 8, 7168, 8)
    across = O.dispatch_combine(64, 8, 7168, 16, nodes=2)
    assert costs.time(across, True).comm_s > costs.time(inside, True).comm_s + hw.internode_latency_s
    off_node = across.comm_bytes / 2  # half of 16 ranks are on the other node
    assert costs.time(across, True).comm_s >= off_node / hw.internode_bandwidth_bytes_per_s


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("parallel, key, word", [
    ("{tp: 8, attention_dp: 3}", "parallel.attention_dp", "does not divide tp 8"),
    ("{tp: 6, attention_dp: 2}", "parallel.attention_dp", "tp / attention_dp = 3"),
    ("{tp: 16, ep: 16, attention_dp: 16, gpus_per_node: 6}", "parallel.tp", "multiple"),
])
def test_bad_dp_layouts_are_one_line(tmp_path, capsys, parallel, key, word):
    text = BASE.replace("parallel: {tp: 8}", f"parallel: {parallel}")
    if "tp: 6" in parallel:  # deepseek-v3's 128 heads over 3 GPUs per group
        text = text.replace("deepseek-v3", "llama-3.1-8b").replace("design: nextn", "design: none")
    one_line_error(capsys, ["cost", write(tmp_path, text)], key, word)


def test_a_replica_over_nodes_needs_a_network(tmp_path, capsys):
    text = BASE.replace("hardware: h200", "hardware: mi300x").replace("parallel: {tp: 8}", "parallel: {tp: 16, ep: 16}")
    one_line_error(capsys, ["cost", write(tmp_path, text)], "parallel.tp", "inter-node")


@pytest.mark.parametrize("name", ["p8-deepseek-v3-lmsys-mtp.yaml", "p9-mimo-v2-flash-sglang-dp2.yaml"])
def test_published_dp_scenarios_price(name, capsys):
    assert cli.main(["cost", str(PUBLISHED / name)]) == 0
    assert "calibrated:h200-sglang" in capsys.readouterr().out


def test_p9_runs_tiny(capsys, tmp_path):
    argv = ["run", str(PUBLISHED / "p9-mimo-v2-flash-sglang-dp2.yaml"), "--set", "workload.output_len=8",
            "--set", "workload.concurrency=2", "--set", "workload.num_requests=4", "--out", str(tmp_path)]
    assert cli.main(argv) == 0


def test_each_attention_group_schedules_its_own_share_of_the_batch():
    """Host time per iteration under DP attention: one scheduler per group, working at once on
    its share (SGLang data_parallel_controller.py), so 256 requests over 16 groups cost the host
    what 16 requests cost one scheduler."""
    wide, one = pricer(tp=16, ep=16, attention_dp=16), pricer(tp=16, ep=16)
    engine_s = one.costs.host_s
    assert wide.host_s("nextn", 256) == engine_s("nextn", 16) < engine_s("nextn", 256)
    assert one.host_s("nextn", 256) == engine_s("nextn", 256)


def test_expert_parallel_without_dp_attention_moves_no_tokens():
    """EP under attention TP: every rank holds every token after the attention all-reduce, so a
    layer prices its two all-reduces and no dispatch + combine (costs/layer.py cites the engines);
    the same EP under DP attention (wide EP) moves tokens and prices DeepEP's dispatch + combine."""
    from mtpsim.costs.layer import decoder_layer_ops
    m = load_model("deepseek-v3")
    att, moe = m.attention_kinds["mla"], m.ffn_kinds["moe"]

    def comms(par: O.Parallel) -> list[str]:
        ops = decoder_layer_ops(att, moe, m.hidden_size, 64, "fp8", "fp8", "fp8", par)
        return sorted(op.name for op in ops if op.family in ("allreduce", "alltoall"))

    assert comms(O.Parallel(tp=8, ep=8)) == comms(O.Parallel(tp=8, ep=1)) == ["comm.allreduce", "comm.allreduce"]
    assert "comm.dispatch_combine" in comms(O.Parallel(tp=8, ep=8, attention_dp=8))
