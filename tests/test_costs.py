"""Cost model against hand-computed flops and bytes (numbers from the models' configs)."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim.costs import ops as O
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.roofline import RooflineCosts

DSV3 = catalog.load_model("deepseek-v3")
H200 = catalog.load_hardware("h200")


def by_name(ops):
    return {op.name: op for op in ops}


def test_deepseek_v3_mla_projections_one_token_tp1():
    att = DSV3.attention_kinds["mla"]
    ops = by_name(O.attention_projections(att, 7168, 1, "fp8", O.Parallel()))
    # q_a_proj and kv_a_proj_with_mqa as the one fused GEMM engines run (fp8: 1 byte)
    assert ops["attn.qkv_a_proj"].weight_bytes == 7168 * (1536 + 512 + 64)
    assert "attn.q_a_proj" not in ops and "attn.kv_a_proj" not in ops
    assert ops["attn.q_b_proj"].weight_bytes == 1536 * 128 * (128 + 64)
    assert ops["attn.w_uk"].weight_bytes == 128 * 128 * 512 * 2         # bf16 absorbed per-head matrices
    assert ops["attn.w_uv"].weight_bytes == 128 * 512 * 128 * 2
    assert ops["attn.o_proj"].weight_bytes == 128 * 128 * 7168
    assert ops["attn.qkv_a_proj"].flops == 2 * 7168 * (1536 + 512 + 64)


def test_deepseek_v3_mla_core_reads_latent_cache():
    att = DSV3.attention_kinds["mla"]
    assert O.kv_bytes_per_token(att, "bf16", tp=8) == (512 + 64) * 2    # replicated on every rank
    core = O.attention_core(att, np.array([1]), np.array([1000]), "bf16", tp=1)
    assert core.kv_bytes == 1001 * 576 * 2
    # absorbed: scores over 512 + 64, values over 512, for 128 heads; the new token sees 1001 keys
    assert core.flops == 2 * 1001 * 128 * (512 + 64 + 512)


def test_deepseek_v3_moe_layer_one_token():
    moe = DSV3.ffn_kinds["moe"]
    ops = by_name(O.ffn_ops(moe, 7168, 1, "fp8", "fp8", O.Parallel()))
    experts = ops["moe.experts"]
    assert experts.weight_bytes == pytest.approx(8 * 3 * 7168 * 2048)  # exactly top-8 experts read
    assert experts.flops == 2 * 8 * 3 * 7168 * 2048
    assert ops["moe.shared_gate_up"].weight_bytes + ops["moe.shared_down"].weight_bytes == 3 * 7168 * 2048
    assert ops["moe.router"].weight_bytes == 7168 * 256 * 2


def test_deepseek_v3_moe_sharding_tp8_ep8():
    moe = DSV3.ffn_kinds["moe"]
    many = O.moe_experts(moe, 7168, 1 << 20, "fp8", O.Parallel(tp=8, ep=8))
    assert many.weight_bytes == pytest.approx(32 * 3 * 7168 * 2048)   # 256 / 8 whole experts per GPU
    tp_only = O.moe_experts(moe, 7168, 1 << 20, "fp8", O.Parallel(tp=8, ep=1))
    assert tp_only.weight_bytes == pytest.approx(256 * 3 * 7168 * 2048 / 8)  # every expert, an eighth each


def test_deepseek_v3_mtp_layer_adds_projection_and_shared_head():
    pricer = Pricer.of(DSV3, H200, RooflineCosts(H200), tp=1)
    ops = [op for op, _, n in pricer.static_ops_memo("mtp", 0, 1, 1, True)[0] for _ in range(n)]
    names = [op.name for op in ops]
    eh = by_name(ops)["mtp.eh_proj"]
    assert eh.weight_bytes == 2 * 7168 * 7168                          # fp8 2h x h
    assert by_name(ops)["lm_head"].weight_bytes == 7168 * 129280 * 2    # shared bf16 head
    assert names.count("moe.experts") == 1 and "attn.qkv_a_proj" in names


def test_mimo_v2_flash_swa_dense_mtp_layer():
    m = catalog.load_model("mimo-v2-flash")
    swa = m.attention_kinds["swa"]
    # K 192 and V 128 wide, 8 KV heads, bf16 cache
    assert O.kv_bytes_per_token(swa, "bf16", tp=1) == 8 * (192 + 128) * 2
    core = O.attention_core(swa, np.array([1, 1]), np.array([5000, 50]), "bf16", tp=1)
    assert core.kv_bytes == (128 + 51) * 8 * 320 * 2                   # capped at the window
    ffn = by_name(O.ffn_ops(m.ffn_kinds["dense"], 4096, 1, "fp8", "fp8", O.Parallel()))
    assert ffn["ffn.gate_up"].weight_bytes + ffn["ffn.down"].weight_bytes == 3 * 4096 * 16384
    proj = by_name(O.attention_projections(swa, 4096, 1, "fp8", O.Parallel()))
    layer_bytes = sum(op.weight_bytes for op in proj.values()) + 3 * 4096 * 16384 + 2 * 4096 * 4096
    assert layer_bytes == pytest.approx(0.33e9, rel=0.05)              # "0.33B each" in the paper


def test_gemma4_e2b_assistant_reads_target_kv_and_has_no_kv_projection():
    a = catalog.load_model("gemma-4-e2b-assistant")
    full = a.attention_kinds["full"]
    proj = by_name(O.attention_projections(full, 256, 1, "bf16", O.Parallel(), query_only=True))
    assert set(proj) == {"attn.q_proj", "attn.o_proj"}
    assert proj["attn.q_proj"].weight_bytes == 256 * 4 * 512 * 2
    core = O.attention_core(full, np.array([1]), np.array([9999]), "bf16", tp=1)
    assert core.kv_bytes == 10000 * 1 * (512 + 512) * 2                # the target's last full layer
    sliding = O.attention_core(a.attention_kinds["sliding"], np.array([1]), np.array([9999]), "bf16", tp=1)
    assert sliding.kv_bytes == 512 * 1 * (256 + 256) * 2
    head = by_name(O.lm_head_ops(a, 1, "bf16", tp=1))
    assert head["lm_head.centroids"].weight_bytes == 256 * 2048 * 2
    assert head["lm_head.centroid_expand"].weight_bytes == 32 * (262144 // 2048) * 256 * 2


def test_llama_31_8b_decode_bytes_and_flops():
    m = catalog.load_model("llama-3.1-8b")
    pricer = Pricer.of(m, catalog.load_hardware("h100-sxm"), RooflineCosts(catalog.load_hardware("h100-sxm")))
    cost = pricer.price(PassShape("decode", "target", 1, 1), np.array([1]), np.array([2047]))
    layer = (4096 * 4096 + 4096 * 2 * 8 * 128 + 4096 * 4096 + 3 * 4096 * 14336) * 2
    assert cost.weight_bytes == 32 * layer + 4096 * 128256 * 2
    assert cost.kv_bytes == 32 * 2048 * 8 * 128 * 2 * 2
    assert cost.bound == "memory"
    gemm_flops = 2 * (32 * layer / 2 + 4096 * 128256)
    attn_flops = 32 * 4 * 2048 * 32 * 128
    assert cost.flops == pytest.approx(gemm_flops + attn_flops, rel=1e-9)


def test_experts_touched_limits():
    assert O.experts_touched(256, 8, 1) == pytest.approx(8)
    assert O.experts_touched(256, 8, 100_000) == pytest.approx(256)
    counts = [O.experts_touched(256, 8, t) for t in (1, 2, 4, 16, 64, 256)]
    assert counts == sorted(counts) and counts[1] < 16                 # overlaps below 2 * top-k
    assert O.experts_touched(256, 8, 32, skew=0.5) < O.experts_touched(256, 8, 32)
    # two tokens: the second misses the first's 8 experts with 248/256 each, E[distinct] = 8 + 8 * 248/256
    assert O.experts_touched(256, 8, 2) == pytest.approx(8 + 8 * 248 / 256, rel=1e-12)


def test_skew_routes_over_a_hot_subset():
    """skew s: uniform routing over E * (1 - s) hot experts, never fewer than top_k: the count is the
    uniform one for that smaller E, and saturates there, not at E (a bound a mere `<` would miss)."""
    for tokens in (1, 3, 32, 100_000):
        assert O.experts_touched(256, 8, tokens, skew=0.5) == pytest.approx(O.experts_touched(128, 8, tokens), rel=1e-12)
        assert O.experts_touched(256, 8, tokens, skew=0.75) == pytest.approx(O.experts_touched(64, 8, tokens), rel=1e-12)
    assert O.experts_touched(256, 8, 100_000, skew=0.5) == pytest.approx(128)
    assert O.experts_touched(256, 8, 50, skew=0.999) == pytest.approx(8)  # the hot set cannot shrink below top_k


def test_attention_follows_sum_of_kv_lengths_and_saturates_at_window():
    att = catalog.load_model("llama-3.1-8b").attention_kinds["gqa"]
    one = np.array([1, 1])
    a = O.attention_core(att, one, np.array([1000, 3000]), "bf16", 1)
    b = O.attention_core(att, one, np.array([2000, 2000]), "bf16", 1)
    c = O.attention_core(att, one, np.array([2000, 2500]), "bf16", 1)
    assert a.kv_bytes == b.kv_bytes and c.kv_bytes > a.kv_bytes
    swa = catalog.load_model("mimo-v2-flash").attention_kinds["swa"]
    lens = [O.attention_core(swa, one, np.array([n, n]), "bf16", 1).kv_bytes for n in (10, 100, 1000, 10000)]
    assert lens[0] < lens[1] < lens[2] == lens[3]


def test_tensor_parallel_shards_weights_and_adds_allreduces():
    m = catalog.load_model("llama-3.1-8b")
    hw = catalog.load_hardware("h100-sxm")
    shape = PassShape("decode", "target", 1, 1)
    one = Pricer.of(m, hw, RooflineCosts(hw), tp=1).price(shape, np.array([1]), np.array([100]))
    two = Pricer.of(m, hw, RooflineCosts(hw), tp=2).price(shape, np.array([1]), np.array([100]))
    assert two.weight_bytes == pytest.approx(one.weight_bytes / 2, rel=1e-6)
    # two all-reduces per layer (32 layers), each at least one small-message collective
    assert one.comm_s == 0 and two.comm_s >= 64 * RooflineCosts(hw).comm_s(O.allreduce(1, m.hidden_size, 2))


def test_cuda_graphs_pad_batch_and_cut_launch_cost():
    m = catalog.load_model("llama-3.1-8b")
    hw = catalog.load_hardware("h100-sxm")
    shape = PassShape("decode", "target", 1, 1)
    graphs = Pricer.of(m, hw, RooflineCosts(hw), cuda_graphs=True)
    eager = Pricer.of(m, hw, RooflineCosts(hw), cuda_graphs=False)
    assert graphs.price(shape, np.ones(5, int), np.full(5, 10)).tokens == 8      # padded to bucket 8
    assert eager.price(shape, np.ones(5, int), np.full(5, 10)).tokens == 5
    assert graphs.price(shape, np.ones(5, int), np.full(5, 10)).launch_s < \
        eager.price(shape, np.ones(5, int), np.full(5, 10)).launch_s
    big = Pricer.of(m, hw, RooflineCosts(hw), cuda_graphs=True, max_graph_batch=16)
    assert not big.uses_graphs(shape, 17) and big.price(shape, np.ones(17, int), np.full(17, 10)).tokens == 17


def test_prefill_is_compute_bound_decode_memory_bound():
    m = catalog.load_model("llama-3.1-8b")
    hw = catalog.load_hardware("h100-sxm")
    p = Pricer.of(m, hw, RooflineCosts(hw))
    pre = p.price(PassShape("prefill", "target", 0, 1), np.array([4096]), np.array([0]))
    dec = p.price(PassShape("decode", "target", 1, 1), np.array([1]), np.array([4096]))
    assert pre.bound == "compute" and dec.bound == "memory"


def test_the_overlap_rule_exposes_only_the_host_time_its_window_does_not_hide():
    """costs/iteration.py, the one home of the rule: passes run back to back; host work hides behind
    the passes whose kind is in the window; the iteration waits for what is left, never less than 0.
    Times are binary-exact so every sum is exact."""
    from mtpsim.costs.iteration import iteration_cost
    kinds, times = ["draft", "verify", "extend"], [1.0, 4.0, 2.0]
    cases = {  # (window, host) -> (gpu, hidden, exposed)
        (("verify",), 3.0): (7.0, 4.0, 0.0),             # hidden whole behind the verify
        (("verify",), 6.0): (7.0, 4.0, 2.0),             # the verify hides 4 of 6
        ((), 3.0): (7.0, 0.0, 3.0),                      # no overlap scheduler: all of it shows
        (("draft", "extend"), 3.5): (7.0, 3.0, 0.5),     # a window of two kinds sums both
        (("prefill",), 0.25): (7.0, 0.0, 0.25),          # a kind the iteration has not: hides nothing
    }
    for (window, host), (gpu, hidden, exposed) in cases.items():
        cost = iteration_cost(kinds, times, window, host)
        assert (cost.gpu_s, cost.host_s, cost.hidden_s, cost.exposed_host_s) == (gpu, host, hidden, exposed), window
        assert cost.iteration_s == gpu + exposed
