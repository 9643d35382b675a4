"""Second mutation audit: one test per mutation of recently added code that passed every test
it plausibly touched (each docstring names the mutation and the behaviour it pins). The expected
values come from the rule each function's docstring or cited source states (SGLang's
server_args.py reserve and v0.4.6 fraction rules as engines/sglang.yaml transcribes them,
DeepSeek-V4's multi-stream token limit, the wide-EP imbalance figure's range), not from today's
output."""
from __future__ import annotations

import numpy as np
import pytest

import mtpsim.scenario as sc
from mtpsim.catalog import load_engine, load_hardware
from mtpsim.costs import build_pricer
from mtpsim.costs import ops as O
from mtpsim.costs.ffn import shared_routing
from mtpsim.costs.streams import ATTENTION_MAX_TOKENS, attention_runs
from mtpsim.costs.wide_ep import MEASURED_RANKS, NO_EPLB_IMBALANCE, ep_imbalance
from mtpsim.memory import MIB, activation_bytes, resolve_pool
from mtpsim.specs import DTYPE_BYTES

# engines/sglang.yaml kv_pool.reserved, from server_args.py _handle_gpu_memory_settings (v0.5.x):
# reserved = 512 + max(chunk, 2048) x 1.5 + graph_bs x 2 + tp / 8 x 1024 (MiB); DP attention
# + graph_bs x dp x 3, and x 1.5 more when graph_bs > 300; above 60 GiB at least 10 GiB;
# fraction = round((gpu - reserved) / gpu, 3)
H100_MIB, H200_MIB = 81559, 143771


def _sglang_fraction(gpu_mib, reserved_mib):
    return round((gpu_mib - reserved_mib) / gpu_mib, 3)


def test_sglang_reserve_takes_the_tp4_graph_batch_from_tp_4():
    """Catches `tp < 4` -> `tp <= 4` in ReservedMemory.fraction: SGLang's cuda_graph_max_bs is the
    memory class's `graph_batch_tp4` from tp 4 on (engines/sglang.yaml: "cuda_graph_max_bs tp < 4 /
    tp >= 4"; H100's class: 256 under tp 4, 512 from it), so tp 4 on an H100 reserves 512 x 2 MiB
    for graphs, tp 2 256 x 2."""
    engine, hw = load_engine("sglang"), load_hardware("h100-sxm")
    tp4 = 512 + 8192 * 1.5 + 512 * 2 + 4 * 128
    tp2 = 512 + 8192 * 1.5 + 256 * 2 + 2 * 128
    assert resolve_pool(engine, hw, tp=4).fraction == _sglang_fraction(H100_MIB, max(tp4, 10240))
    assert resolve_pool(engine, hw, tp=2).fraction == _sglang_fraction(H100_MIB, max(tp2, 10240))


def test_sglang_dp_attention_large_graph_term_starts_past_300():
    """Catches `graphs > dp_attention_large_graph_batch` -> `>=` in ReservedMemory.fraction:
    SGLang adds the further graph_bs x dp x 1.5 MiB only when cuda_graph_max_bs > 300, so a graph
    batch of exactly 300 under DP attention 8 reserves the x 3 term alone, and 301 both."""
    engine, hw = load_engine("sglang"), load_hardware("h200")

    def reserve(bs, large):
        return 512 + 8192 * 1.5 + bs * 2 + 8 * 128 + bs * 8 * 3 + (bs * 8 * 1.5 if large else 0)
    assert resolve_pool(engine, hw, tp=8, attention_dp=8, graph_batch=300).fraction == \
        _sglang_fraction(H200_MIB, reserve(300, False))
    assert resolve_pool(engine, hw, tp=8, attention_dp=8, graph_batch=301).fraction == \
        _sglang_fraction(H200_MIB, reserve(301, True))


def test_sglang_reserve_counts_a_chunk_below_2048_as_2048():
    """Catches `max(prefill, min_prefill_tokens)` -> `prefill` in ReservedMemory.fraction: SGLang
    reserves max(chunked_prefill_size, 2048) x 1.5 MiB, so a scenario's chunk of 1,024 reserves as
    2,048 would. Read on a 40 GiB GPU (A100 40GB's class: graph batch 32), below the 60 GiB under
    which no 10 GiB floor hides the term."""
    reserved = load_engine("sglang").kv_pool.reserved
    gpu = 40960
    small = reserved.fraction(gpu, 1, 1, False, prefill_tokens=1024)
    assert small == reserved.fraction(gpu, 1, 1, False, prefill_tokens=2048)
    assert small == _sglang_fraction(gpu, 512 + 2048 * 1.5 + 32 * 2 + 128)


def test_sglang_v046_table_holds_on_a_gpu_of_exactly_80_gib():
    """Catches `gpu_mib <= small_gpu_mib` -> `<` in TpFractions.fraction: SGLang v0.4.6's table by
    tp holds "on GPUs of at most 81920 MiB" (engines/sglang.yaml fraction_by_tp_v046), and the
    A100 80GB is exactly 81920 MiB: tp 8 there takes 0.81, not the larger GPUs' 0.88."""
    hw = load_hardware("a100-80g")
    assert hw.memory_capacity_bytes == 81920 * MIB
    rule = resolve_pool(load_engine("sglang", "0.4.6"), hw, tp=8)
    assert rule.fraction == pytest.approx(0.81)


def test_sglang_v046_raise_on_large_gpus_adds_48_gib_of_the_unreserved_share():
    """Catches `raise_mib * (1 - f) / gpu` -> `raise_mib / gpu` in TpFractions.fraction: v0.4.6
    raises 0.88 on GPUs above 96 GiB to min(f + 48 GiB x (1 - f) / gpu, (gpu - 18 GiB) / gpu).
    On H200 the cap wins (the existing test); on B300 (275,040 MiB) the raise is below the cap, so
    the (1 - f) factor decides the fraction."""
    gpu = 275040
    hw = load_hardware("b300")
    assert hw.memory_capacity_bytes == gpu * MIB
    raised, cap = 0.88 + 48 * 1024 * (1 - 0.88) / gpu, (gpu - 18 * 1024) / gpu
    assert raised < cap
    assert resolve_pool(load_engine("sglang", "0.4.6"), hw, tp=8).fraction == pytest.approx(raised)


def test_sm100_keeps_fp4_shared_experts_out_of_the_routed_kernel():
    """Catches `expert_dtype in ("fp8", "fp4")` -> `== "fp8"` in EngineSpec.fuses_shared_on: from
    v0.5.5 SGLang's default MoE kernel on sm100 (flashinfer_trtllm) takes neither FP8 nor FP4
    experts with a fused shared expert (engines.py shared_fusion_below_capability), so on B200
    FP4 experts do not fuse; BF16 experts, and FP4 on Hopper, still do."""
    engine = load_engine("sglang", "0.5.12")
    b200, h200 = load_hardware("b200"), load_hardware("h200")
    assert not engine.fuses_shared_on(b200, "fp4") and not engine.fuses_shared_on(b200, "fp8")
    assert engine.fuses_shared_on(b200, "bf16") and engine.fuses_shared_on(h200, "fp4")


def test_activation_estimate_is_four_hidden_wide_tensors_plus_the_ffn():
    """Catches `4 * model.hidden_size` -> `2 *` in memory.activation_bytes: per token the estimate
    is ~4 hidden-wide tensors plus a dense layer's 3 x intermediate / tp. Doubling tp halves only
    the FFN part, so a(tp 1) - 2 (a(tp 1) - a(tp 2)) is the hidden-wide part alone."""
    tokens = 8192

    def act(tp):
        s = sc.validate({"name": "a", "model": "llama-3.1-8b", "hardware": "h100-sxm", "parallel": {"tp": tp},
                         "engine": {"kind": "vllm"}, "workload": {"arrival": "batch", "concurrency": 1,
                                                                  "num_requests": 1, "input_len": 64, "output_len": 8}})
        return activation_bytes(build_pricer(s), tokens), s.specs.model
    a1, model = act(1)
    a2, _ = act(2)
    per = tokens * DTYPE_BYTES[model.dtypes.activations]
    ffn = next(f for f in model.ffn_kinds.values() if f.kind == "dense")
    assert a1 - a2 == pytest.approx(per * 3 * ffn.intermediate_size / 2)
    assert a1 - 2 * (a1 - a2) == pytest.approx(per * 4 * model.hidden_size)


def test_two_tokens_a_request_share_their_experts_by_locality():
    """Catches `per_request <= 1` -> `<= 2` in ffn.shared_routing: a request of q tokens counts
    1 + (q - 1)(1 - locality) independent draws, so two tokens at locality 0.5 are 1.5 draws,
    a share of 0.75; only one token a request (or locality 0) leaves every token independent."""
    assert shared_routing(0.5, 2) == pytest.approx(0.75)
    assert shared_routing(0.5, 4) == pytest.approx((1 + 3 * 0.5) / 4)
    assert shared_routing(0.5, 1) == 1.0 and shared_routing(0.0, 4) == 1.0


@pytest.mark.parametrize("blackwell,capability", [(True, 10.0), (False, 9.0)])
def test_deepseek_v4_side_streams_run_up_to_the_token_limit_inclusive(blackwell, capability):
    """Catches `tokens <= ATTENTION_MAX_TOKENS` -> `<` in streams.attention_runs: SGLang's
    MQALayer runs its prologue on side streams when `x.shape[0] <= _multi_stream_bs_limit`
    (128 tokens on Blackwell, 64 otherwise): at the limit itself it does, one past it not."""
    limit = ATTENTION_MAX_TOKENS[blackwell]
    assert limit == (128 if blackwell else 64)
    assert attention_runs("sglang", "compressed", limit, True, capability)
    assert not attention_runs("sglang", "compressed", limit + 1, True, capability)


def test_the_published_imbalance_applies_from_32_ranks():
    """Catches `par.ep < MEASURED_RANKS` -> `<=` in wide_ep.ep_imbalance: the TensorRT-LLM figure
    was measured at EP32, the narrowest EP it covers, so wide EP over exactly 32 ranks takes it
    (2.564 without EPLB), and 16 ranks (no figure) take uniform routing."""
    assert MEASURED_RANKS == 32
    assert ep_imbalance(None, False, O.Parallel(32, 32, 32)) == NO_EPLB_IMBALANCE
    assert ep_imbalance(None, False, O.Parallel(16, 16, 16)) is None


@pytest.mark.parametrize("users,warned", [(8, False), (9, True)])
def test_cost_warns_of_the_cap_per_replica_not_for_all_of_them(tmp_path, capsys, users, warned):
    """Catches `share = ... -(-batch // dp)` -> `share = batch` in cost_command.py: `mtpsim
    run` spreads workload.concurrency over the dp replicas, each capped at the running-request
    cap, so 8 users over dp 2 at a cap of 4 run 4 a replica, past no cap; 9 put 5 on one."""
    from mtpsim import cli, errors
    errors._warned.clear()
    path = tmp_path / "s.yaml"
    path.write_text("name: c\nmodel: llama-3.1-8b\nhardware: h100-sxm\nparallel: {tp: 1, dp: 2}\n"
                    "engine: {kind: sglang, max_running_requests: 4}\n"
                    f"workload: {{arrival: batch, concurrency: {users}, num_requests: {users}, input_len: 64, "
                    "output_len: 8}\n")
    assert cli.main(["cost", str(path)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "running-request cap" in line]
    assert bool(err) is warned, err
    if warned:
        assert "5 requests a replica" in err[0] and "cap of 4" in err[0]


def test_the_markov_head_runs_once_per_draft_position():
    """Catches `(step, positions)` -> `(step, 1)` in blocks.head_ops: DSpark's Markov head corrects
    each draft position's logits from the token sampled before it, so it is a rank-r x vocab GEMM
    over the batch's rows, once per position, one after another (as its sampling is)."""
    from mtpsim.catalog import load_model
    from mtpsim.costs.blocks import head_ops
    draft, target = load_model("dspark-qwen3-8b-block7"), load_model("qwen3-8b")
    rows, positions = 4, draft.block.block_size
    ops = {op.name: (op, n) for op, n in head_ops(draft, target, rows, positions, 1, "bf16")}
    markov, n = ops["block.markov_head"]
    assert n == positions and markov.shape["m"] == rows
    assert (markov.shape["k"], markov.shape["n"]) == (draft.block.markov_rank, target.vocab_size)


def test_a_block_drafters_context_kv_replicates_a_head_below_one_a_gpu():
    """Catches `max(1, num_kv_heads // tp)` -> `num_kv_heads // tp` in blocks.context_kv_width: a
    GQA draft layer's K/V heads split over tp, and where tp exceeds them each GPU still holds one
    (replicated), so 8 KV heads at tp 16 project to one K and one V head per GPU, not to nothing."""
    from mtpsim.catalog import load_model
    from mtpsim.costs.blocks import context_kv_width
    att = load_model("dspark-qwen3-8b-block7").attention_kinds["gqa"]
    assert att.num_kv_heads == 8 and att.head_dim == 128
    assert context_kv_width(att, 4) == 2 * (128 + 128)
    assert context_kv_width(att, 16) == 128 + 128


def test_wide_ep_runs_router_shared_experts_and_dense_ffn_on_the_gpus_own_tokens():
    """Catches `own = ceil(tokens / attention_tp)` -> `own = tokens` in dp_attention.mlp_ops: under
    wide EP each GPU routes its own tokens, the group's split over its attention GPUs, and runs the
    replicated shared experts and dense FFN layers on them; 16 tokens a group over 4 attention GPUs
    are 4 a GPU (gathered TP instead runs every group's tokens)."""
    from mtpsim.catalog import load_model
    from mtpsim.costs.dp_attention import mlp_ops
    model = load_model("deepseek-v3")
    moe = next(f for f in model.ffn_kinds.values() if f.kind == "moe")
    dense = next(f for f in model.ffn_kinds.values() if f.kind == "dense")
    d, wide = model.hidden_size, O.Parallel(tp=8, ep=8, attention_dp=2)
    assert wide.attention_tp == 4
    ops = {op.name: op for op in mlp_ops(moe, d, 16, "fp8", "fp8", wide) if op is not None}
    assert ops["moe.router"].shape["m"] == ops["moe.shared_gate_up"].shape["m"] == ops["moe.shared_down"].shape["m"] == 4
    assert {op.shape["m"] for op in mlp_ops(dense, d, 16, "fp8", "fp8", wide) if op.family == "gemm"} == {4}
    gathered = {op.name: op for op in mlp_ops(moe, d, 16, "fp8", "fp8", O.Parallel(tp=8, ep=1, attention_dp=2))
                if op is not None}
    assert gathered["moe.router"].shape["m"] == 2 * 16


def test_the_reserve_named_is_the_one_the_rule_subtracts():
    """Catches `fraction_of != "free_at_start"` -> `!= "capacity"` for kv_pool.graph_mib in
    memory._largest_reserve: vLLM's pool is f x capacity - weights - activations - graphs
    (pool_bytes), so its 1 GiB of CUDA graphs is a reserve its rule takes and the one to name,
    while its startup memory is not subtracted (fraction_of capacity)."""
    from mtpsim.costs import build_pricer as pricer_of
    from mtpsim.designs import DesignShape
    from mtpsim.memory import _largest_reserve, memory_budget, pool_rule
    s = sc.validate({"name": "r", "model": "llama-3.1-8b", "hardware": "h100-sxm", "engine": {"kind": "vllm"},
                     "workload": {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 64,
                                  "output_len": 8}})
    m = memory_budget(pricer_of(s), DesignShape.of(s.speculative), pool_rule(s))
    assert m.rule.fraction_of == "capacity" and m.rule.graph_bytes == 1024 * MIB
    assert _largest_reserve(m) == ("kv_pool.graph_mib", 1024 * MIB)


def test_vllm_takes_the_long_chunk_from_70_gib_on():
    """Catches `gpu_mib < below_mib` -> `<=` in EngineSpec.chunk_tokens: vLLM's
    max_num_batched_tokens default is 8192 on GPUs of >= 70 GiB (engines/vllm.yaml, from
    EngineArgs.get_batch_defaults), 2048 below: a GPU of exactly 71,680 MiB takes 8192."""
    engine = load_engine("vllm")
    assert engine.chunk_tokens("h20", 70 * 1024) == 8192
    assert engine.chunk_tokens("h20", 70 * 1024 - 1) == 2048
    assert engine.chunk_tokens("a100-80g", 81920) == 2048  # the A100 is excluded whatever its memory


def test_graph_only_side_streams_need_cuda_graphs():
    """Catches `mode == "graphs" and cuda_graphs` -> `mode == "graphs"` in streams.moe_stream_passes:
    where the engine runs the shared experts on a second stream only in CUDA-graph passes, CUDA
    graphs off leave no pass that does (""); SGLang's small-pass rule needs none."""
    from mtpsim.costs.streams import moe_stream_passes
    assert moe_stream_passes("graphs", True) == "graphs"
    assert moe_stream_passes("graphs", False) == ""
    assert moe_stream_passes("small_passes", False) == "small"
    assert moe_stream_passes("none", True) == ""


def test_a_scenarios_mem_fraction_overrides_an_older_releases_table():
    """Catches `if mem_fraction is not None` losing to `fraction_by_tp` in memory.resolve_pool: the
    fraction is the scenario's engine.mem_fraction where it sets one (the launch command's
    --mem-fraction-static), else the engine's default, the v0.4.6 table by tp included."""
    rule = resolve_pool(load_engine("sglang", "0.4.6"), load_hardware("h100-sxm"), tp=8, mem_fraction=0.7)
    assert rule.fraction == 0.7 and rule.fraction_source == "scenario engine.mem_fraction"
    assert resolve_pool(load_engine("sglang", "0.4.6"), load_hardware("h100-sxm"), tp=8).fraction == pytest.approx(0.81)


def test_sglang_memory_classes_hold_below_their_bound():
    """Catches `gpu_mib < below_mib` -> `<=` in ReservedMemory.memory_class: a class holds GPUs
    *below* its below_mib (SGLang's classes by gpu_mem: under 60 GiB a 4,096-token chunk and a
    graph batch of 32), so a GPU of exactly 61,440 MiB is in the next class (8,192 and 256)."""
    reserved = load_engine("sglang").kv_pool.reserved
    below, at = reserved.memory_class(61440 - 1), reserved.memory_class(61440)
    assert (below.chunked_prefill_tokens, below.graph_batch) == (4096, 32)
    assert (at.chunked_prefill_tokens, at.graph_batch) == (8192, 256)


def test_dp_attentions_all_reduce_spans_only_the_groups_nodes():
    """Catches `nodes=par.nodes(a)` -> `par.nodes(par.tp)` in dp_attention.dp_layer_ops: the
    attention group's all-reduce runs over its `a` attention GPUs, so with tp 16 over two nodes of
    8 and attention_dp 2 each group's 8 GPUs sit in one node (no network leg), while the gathered
    MLP's collective spans all 16 GPUs, two nodes."""
    from mtpsim.catalog import load_model
    from mtpsim.costs.dp_attention import dp_layer_ops
    model = load_model("deepseek-v3")
    att = next(iter(model.attention_kinds.values()))
    dense = next(f for f in model.ffn_kinds.values() if f.kind == "dense")
    par = O.Parallel(tp=16, ep=1, attention_dp=2, gpus_per_node=8)
    ops = {op.name: op for op in dp_layer_ops(att, dense, model.hidden_size, 8, "fp8", "fp8", "fp8", par)}
    assert ops["comm.allreduce"].shape["ranks"] == 8 and "nodes" not in ops["comm.allreduce"].shape
    assert ops["comm.dp_gather_scatter"].shape["nodes"] == 2


def test_a_sliding_window_layer_keeps_kv_only_up_to_its_window():
    """Catches `min(tokens, window)` -> `tokens` in memory.LayerKV.request_bytes: a sliding-window
    layer keeps KV per token up to its window (memory.py: "sliding-window layers per token up to
    the window"), a global layer for every token, a linear layer only its state."""
    from mtpsim.memory import LayerKV
    assert LayerKV(10.0, 128, 0.0).request_bytes(1000) == 10.0 * 128
    assert LayerKV(10.0, 128, 0.0).request_bytes(100) == 10.0 * 100
    assert LayerKV(10.0, 0, 0.0).request_bytes(1000) == 10.0 * 1000
    assert LayerKV(0.0, 0, 512.0).request_bytes(1000) == 512.0


def test_a_dp_attention_replica_admits_every_groups_kv_pool():
    """Catches the scheduler given one GPU's `kv_budget_bytes` instead of the replica's
    `replica_kv_budget_bytes` (sim/__init__.py): each attention group's GPUs hold only its own
    requests' KV, so a replica of 2 groups admits twice what one GPU's pool holds (MemoryBudget
    replica_kv_budget_bytes), all at once with no KV bound."""
    from mtpsim.costs import build_pricer as pricer_of
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule
    from mtpsim.sim import simulate

    def make(users):
        return sc.validate({"name": "k", "model": "llama-3.1-8b", "hardware": "h100-sxm",
                            "parallel": {"tp": 2, "attention_dp": 2}, "engine": {"kind": "sglang", "mem_fraction": 0.3},
                            "workload": {"arrival": "batch", "concurrency": users, "num_requests": users,
                                         "input_len": 16384, "output_len": 4}})
    s = make(1)
    m = memory_budget(pricer_of(s), DesignShape.of(s.speculative), pool_rule(s))
    per_gpu = m.max_requests(16384 + 4)
    assert m.groups == 2 and 2 <= per_gpu < 128
    row = simulate(make(2 * per_gpu)).row
    assert row["max_batch"] == 2 * per_gpu and row["kv_full_iterations"] == 0 and row["bound_by"] == ""


def test_without_cuda_graphs_no_iteration_counts_as_past_them():
    """Catches `and max_graph_batch is not None` dropped in results.limits_row: the eager share is
    the decode iterations past the largest CUDA-graph batch; without graphs (max_graph_batch None)
    there is no such batch, so the share is 0 and bound_by names no `eager>` limit, though every
    iteration ran eagerly."""
    from mtpsim.results import Records, limits_row
    rec = Records(num_decode_iterations=10, decode_batch_sum=40, max_decode_batch=4, eager_iterations=10)
    row = limits_row(rec, 256, 0, 0, None)
    assert row["eager_share"] == 0.0 and row["bound_by"] == ""
    past = limits_row(rec, 256, 0, 0, 2)
    assert past["eager_share"] == 1.0 and past["bound_by"] == "eager>2"


def _deepseek_v3(hardware, version, **parallel):
    return sc.validate({"name": "w", "model": "deepseek-v3", "hardware": hardware,
                        "parallel": {"tp": 8, **parallel}, "speculative": {"design": "none"},
                        "engine": {"kind": "sglang", "version": version}})


def test_wide_ep_experts_never_take_the_triton_runners_table():
    """Catches `not op.shape.get("wide_ep")` dropped in CalibratedCosts._lookup: the rule that
    prices FP8 experts from `moe_triton` (SGLang before v0.5.5 on sm100) is the gathered-TP
    kernel's; wide EP's experts run DeepEP's grouped GEMM (costs/wide_ep.py), so even where the
    profile has no DeepEP rows to answer they are not priced from, or labelled, moe_triton."""
    from mtpsim.costs import build_pricer as pricer_of
    from mtpsim.costs.calibrated import CalibratedCosts
    costs = pricer_of(_deepseek_v3("b200", "0.5.2")).costs
    assert "moe_triton" in costs.tables and costs.engine.moe_table(costs.hw, "fp8") == "moe_triton"
    bare = CalibratedCosts({f: t for f, t in costs.tables.items() if f != "moe_wide_ep"}, costs.meta, costs.hw,
                           engine=costs.engine)
    ffn = _moe_ffn("deepseek-v3")
    gathered = O.moe_experts(ffn, 7168, 4, "fp8", O.Parallel(8, 1), touched=32)
    assert bare.time(gathered, True).source.endswith(":moe_triton")  # the rule applies to gathered TP
    wide = O.moe_experts(ffn, 7168, 64, "fp8", O.Parallel(8, 8))
    wide.shape.update(wide_ep=True, ep=8)
    assert "moe_triton" not in bare.time(wide, True).source


def _moe_ffn(name):
    from mtpsim.catalog import load_model
    return next(f for f in load_model(name).ffn_kinds.values() if f.kind == "moe")


def test_collectives_across_nodes_are_not_read_from_one_nodes_tables():
    """Catches `nodes > 1` -> `> 2` in CalibratedCosts._lookup: a profile's collective tables were
    measured within one node, so an all-reduce of 8 ranks spanning 2 nodes (of 4 GPUs) is not
    looked up in them (the roofline prices its network leg), while the same 8 ranks within a node
    are."""
    costs = _h200_sglang_costs()
    inside = O.allreduce(8, 7168, 8)
    across = O.allreduce(8, 7168, 8, nodes=2)
    assert costs.predict(inside) is not None
    assert across.shape["nodes"] == 2 and costs.predict(across) is None
    assert not costs.time(across, True).source.startswith("calibrated")


def _h200_sglang_costs():
    from mtpsim.costs.calibrated import CalibratedCosts
    from mtpsim.costs.profile import PROFILES_DIR
    return CalibratedCosts.from_profile(PROFILES_DIR / "h200-sglang", load_hardware("h200"))


def test_wide_ep_experts_are_never_priced_below_their_bytes_at_the_best_stream():
    """Catches the stream floor dropped in wide_ep.wide_ep_moe_time: like CalibratedCosts.predict,
    a DeepEP row is never taken faster than the op's bytes at the GPU's best measured stream; an
    op carrying far more bytes than its row's shape is priced at that floor, marked `-floored`."""
    import dataclasses

    from mtpsim.costs.calibrated import CalibratedCosts
    from mtpsim.costs.profile import PROFILES_DIR
    from mtpsim.costs.wide_ep import wide_ep_moe_time
    costs = CalibratedCosts.from_profile(PROFILES_DIR / "h100-sxm-sglang", load_hardware("h100-sxm"))
    assert costs.stream_floor and "moe_wide_ep" in costs.tables
    op = O.moe_experts(_moe_ffn("deepseek-v3"), 7168, 64 * 8, "fp8", O.Parallel(64, 64))
    op.shape.update(wide_ep=True, ep=64)
    t, source = wide_ep_moe_time(costs, op, True)
    heavy = dataclasses.replace(op, weight_bytes=op.weight_bytes * 1e4)
    floor = heavy.bytes / costs.peak_bytes
    assert floor > t
    t_heavy, source_heavy = wide_ep_moe_time(costs, heavy, True)
    assert t_heavy == pytest.approx(floor) and "-floored" in source_heavy and source_heavy.endswith(":deepep-ll")


DISAGG = {"name": "d", "model": "llama-3.1-8b", "hardware": "h200", "speculative": {"design": "none"},
          "workload": {"arrival": "closed", "concurrency": 2, "num_requests": 4, "input_len": 512, "output_len": 16},
          "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}}


def test_a_decode_pool_holds_prompt_and_output_a_prefill_pool_the_prompt():
    """Catches the decode pool's held tokens cut to the prompt in sim/disagg.py build_pool: a
    prefill replica holds only the prompt's KV (module docstring), a decode replica the request's
    whole KV, prompt + output, as an aggregated scheduler admits on the full length."""
    from mtpsim.designs import DesignShape
    from mtpsim.sim.disagg import build_pool
    from mtpsim.sim.workload import Request
    s = sc.validate(DISAGG)
    design = DesignShape.of(s.speculative)
    request = Request.__new__(Request)
    request.input_len, request.output_len = 512, 16
    assert build_pool(s, "prefill", design, 0).replicas[0].scheduler.held_tokens(request) == 512
    assert build_pool(s, "decode", design, 1).replicas[0].scheduler.held_tokens(request) == 512 + 16


def test_a_disaggregated_run_without_cuda_graphs_reports_no_eager_share():
    """Catches `max_graph_batch if cuda_graphs else None` -> `max_graph_batch` in
    simulate_disaggregated: as in an aggregated run, without CUDA graphs no decode iteration is
    past the largest graph (there is none), so eager_share is 0 and bound_by names no `eager>`."""
    from mtpsim.sim import simulate
    row = simulate(sc.validate({**DISAGG, "engine": {"cuda_graphs": False}})).row
    assert row["eager_share"] == 0.0 and "eager" not in row["bound_by"]
    agg = {k: v for k, v in DISAGG.items() if k != "disaggregation"}
    assert simulate(sc.validate({**agg, "engine": {"cuda_graphs": False}})).row["eager_share"] == 0.0


def test_tied_embeddings_are_the_lm_heads_weights_counted_once():
    """Catches `0.0 if model.tie_embeddings` dropped in memory.memory_budget: a model that ties its
    embedding to its LM head holds one matrix, the LM head's (already in the target's weights); an
    untied one adds vocab x hidden bf16 split over the attention GPUs like the LM head."""
    from mtpsim.costs import build_pricer as pricer_of
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule

    def weights(model):
        s = sc.validate({"name": "t", "model": model, "hardware": "h200", "parallel": {"tp": 2},
                         "workload": {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 64,
                                      "output_len": 8}})
        p = pricer_of(s)
        return memory_budget(p, DesignShape.of(s.speculative), pool_rule(s)).target_weight_bytes, p, s.specs.model
    tied, p, model = weights("gemma-4-31b")
    assert model.tie_embeddings and tied == pytest.approx(p.weight_bytes("target"))
    untied, p, model = weights("llama-3.1-8b")
    assert not model.tie_embeddings
    assert untied == pytest.approx(p.weight_bytes("target") + model.vocab_size * model.hidden_size * 2 / 2)


@pytest.mark.parametrize("extra,warned", [(0, False), (1, True)])
def test_cost_memory_warning_counts_each_attention_groups_share(tmp_path, capsys, extra, warned):
    """Catches `per_pool = -(-batch // attention_dp)` -> `batch` in cost_command.py: under DP
    attention each group's GPUs hold only its own requests' KV, so a batch of twice what one
    GPU's pool holds fits over 2 groups (no warning), and one request more puts one past it."""
    import yaml

    from mtpsim import cli, errors
    from mtpsim.costs import build_pricer as pricer_of
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule
    base = {"name": "c", "model": "llama-3.1-8b", "hardware": "h100-sxm", "parallel": {"tp": 2, "attention_dp": 2},
            "engine": {"kind": "sglang", "mem_fraction": 0.3},
            "workload": {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 16384, "output_len": 4}}
    s = sc.validate(base)
    per_gpu = memory_budget(pricer_of(s), DesignShape.of(s.speculative), pool_rule(s)).max_requests(16384)
    errors._warned.clear()
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(base))
    assert cli.main(["cost", str(path), "--batch", str(2 * per_gpu + extra), "--context", "16384"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "do not fit in memory" in line]
    assert bool(err) is warned, err


def test_a_row_without_interactivity_is_never_on_the_frontier():
    """Catches the `tps_per_user.notna()` filter dropped in search.frontier.with_pareto: a row whose
    interactivity is NaN (no request finished) is never on the frontier, though no other row can
    dominate it under NaN comparisons."""
    import pandas as pd

    from mtpsim.search.frontier import with_pareto
    rows = pd.DataFrame({"design": ["nextn"] * 3, "tps_per_user": [10.0, 20.0, float("nan")],
                         "tps_per_gpu": [200.0, 100.0, 50.0]})
    assert with_pareto(rows).pareto.tolist() == [True, True, False]


def test_frontiers_that_share_an_end_point_but_never_cross_have_no_crossover():
    """Catches `< 0` -> `<= 0` in search.frontier.crossovers: a crossover is where the MTP-on
    frontier's tok/s per GPU changes sides against the MTP-off one's; two frontiers that start at
    the same point and then keep one above the other never cross, and one that does cross is
    found once, between the grid points around the analytic crossing."""
    import pandas as pd

    from mtpsim.search.frontier import crossovers
    off = pd.DataFrame({"tps_per_user": [10.0, 100.0], "tps_per_gpu": [1000.0, 100.0]})
    above = pd.DataFrame({"tps_per_user": [10.0, 100.0], "tps_per_gpu": [1000.0, 300.0]})
    assert crossovers(off, above) == []
    crossing = pd.DataFrame({"tps_per_user": [10.0, 100.0], "tps_per_gpu": [800.0, 300.0]})
    (x,) = crossovers(off, crossing)
    # linear in log interactivity: 1000 - 900 t = 800 - 500 t at t = 0.5, i.e. sqrt(10 x 100)
    assert x == pytest.approx(np.sqrt(10.0 * 100.0), rel=0.01)
