"""The KV budget as each serving engine sizes its pool (engines/<kind>.yaml `kv_pool:`, memory.py):
SGLang's default mem_fraction_static, vLLM's gpu_memory_utilization, TensorRT-LLM's
free_gpu_memory_fraction, the scenario's `engine.mem_fraction` override, and the deployment the
old 0.9 x datasheet rule refused (DeepSeek-R1 FP8 on 4xB200)."""
from __future__ import annotations

import pytest

import mtpsim.scenario as sc
from mtpsim.catalog import load_engine, load_hardware
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.memory import MIB, activation_bytes, memory_budget, pool_rule, resolve_pool
from mtpsim.report import cost_report
from mtpsim.sim import simulate

GIB = 2**30


def scenario(engine="sglang", model="llama-3.1-8b", hardware="h100-sxm", tp=1, design="none", **eng):
    spec = {"design": design, "steps": 3}
    return sc.validate({"name": "m", "model": model, "hardware": hardware, "parallel": {"tp": tp},
                        "engine": {"kind": engine, **eng}, "speculative": spec,
                        "acceptance": {"per_depth": [0.8, 0.7, 0.6]} if design != "none" else {},
                        "workload": {"arrival": "batch", "concurrency": 2, "num_requests": 2,
                                     "input_len": 64, "output_len": 8}})


def budget(s):
    return memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s))


def test_capacities_are_the_drivers():
    mib = {"h100-sxm": 81559, "h200": 143771, "b200": 183359, "a100-80g": 81920, "mi300x": 196608}
    for name, total in mib.items():
        assert load_hardware(name).memory_capacity_bytes == total * MIB


@pytest.mark.parametrize("hardware,tp,speculative,version,expected", [
    # server_args.py _handle_gpu_memory_settings by hand: reserved MiB, then round((gpu - r) / gpu, 3)
    ("h100-sxm", 1, False, "0.5.12", round((81559 - max(512 + 8192 * 1.5 + 256 * 2 + 128, 10240)) / 81559, 3)),
    ("h200", 8, False, "0.5.12", round((143771 - (512 + 8192 * 1.5 + 512 * 2 + 8 * 128)) / 143771, 3)),
    ("b200", 4, False, "0.5.12", round((183359 - (512 + 16384 * 1.5 + 512 * 2 + 4 * 128)) / 183359, 3)),
    # the speculative reserve after the floor: 2 GiB to v0.5.9, 4 GiB in v0.5.10-v0.5.13, none from v0.5.14
    ("b200", 4, True, "0.5.9", round((183359 - (512 + 16384 * 1.5 + 512 * 2 + 4 * 128) - 2048) / 183359, 3)),
    ("b200", 4, True, "0.5.12", round((183359 - (512 + 16384 * 1.5 + 512 * 2 + 4 * 128) - 4096) / 183359, 3)),
    ("b200", 4, True, "0.5.14", round((183359 - (512 + 16384 * 1.5 + 512 * 2 + 4 * 128)) / 183359, 3)),
    # v0.5.20's 20-35 GiB class (a 32 GB GPU, as nvidia-smi reports an RTX 5090: 32607 MiB): chunk
    # 4096 and 48 graphs where v0.5.19 took 2048 and 24; the 10 GiB floor is for GPUs over 60 GiB
    (32607, 1, False, "0.5.20", round((32607 - (512 + 4096 * 1.5 + 48 * 2 + 128)) / 32607, 3)),
    (32607, 1, False, "0.5.19", round((32607 - (512 + 2048 * 1.5 + 24 * 2 + 128)) / 32607, 3)),
])
def test_sglang_default_fraction_follows_gpu_memory_tp_and_speculation(hardware, tp, speculative, version, expected):
    gpu = load_hardware(hardware) if isinstance(hardware, str) else \
        load_hardware("h100-sxm").model_copy(update={"memory_capacity_bytes": hardware * MIB})
    rule = resolve_pool(load_engine("sglang", version), gpu, tp=tp, speculative=speculative)
    assert rule.fraction == expected and rule.fraction_source == "sglang default"
    assert rule.knob == "mem_fraction_static"


def test_sglang_default_fraction_reads_the_scenarios_chunk_and_graph_batch_when_set():
    hw, engine = load_hardware("h200"), load_engine("sglang")
    default = resolve_pool(engine, hw, tp=8).fraction
    bigger = resolve_pool(engine, hw, tp=8, prefill_tokens=32768, explicit_prefill=True).fraction
    assert bigger == round((143771 - (512 + 32768 * 1.5 + 512 * 2 + 8 * 128)) / 143771, 3) < default
    assert resolve_pool(engine, hw, tp=8, prefill_tokens=32768).fraction == default  # the default chunk: its class's
    dp = resolve_pool(engine, hw, tp=8, attention_dp=8).fraction
    assert dp == round((143771 - (512 + 8192 * 1.5 + 512 * 2 + 1024 + 512 * 8 * 3 + 512 * 8 * 1.5)) / 143771, 3)


@pytest.mark.parametrize("hardware,tp,dp,expected", [
    # v0.4.6.post2 server_args.py __post_init__ by hand: a table by tp on GPUs up to 80 GiB; 0.88
    # raised on larger ones; DP attention does not enter
    ("h100-sxm", 72, 72, 0.79), ("h100-sxm", 8, 1, 0.81), ("h100-sxm", 4, 1, 0.85), ("h100-sxm", 1, 1, 0.88),
    ("h200", 8, 8, min(0.88 + 48 * 1024 * 0.12 / 143771, (143771 - 18 * 1024) / 143771)),
])
def test_sglang_v046_default_fraction_is_its_tp_table(hardware, tp, dp, expected):
    engine = load_engine("sglang", "0.4.6")
    assert "fraction_by_tp_v046" in engine.rules
    rule = resolve_pool(engine, load_hardware(hardware), tp=tp, attention_dp=dp)
    assert rule.fraction == pytest.approx(expected) and rule.fraction_source == "sglang default"
    assert "fraction_by_tp_v046" not in load_engine("sglang", "0.4.8").rules


def test_a_default_fraction_the_engine_could_not_start_with_is_refused(tmp_path, capsys):
    """SGLang v0.5's reserve rule for tp 72 under DP attention 72 on H100 outgrows the GPU (the
    engine's own rule, server_args.py _handle_gpu_memory_settings): one line naming engine.mem_fraction."""
    from tests.test_bad_input import one_line_error
    path = tmp_path / "s.yaml"
    path.write_text("name: w\nmodel: {from: deepseek-v3, ffn_kinds: {moe: {num_experts: 288}}}\nhardware: h100-sxm\n"
                    "parallel: {tp: 72, ep: 72, attention_dp: 72}\n"
                    "engine: {version: '0.5.12'}\nworkload: {concurrency: 72, num_requests: 72, input_len: 64, "
                    "output_len: 4}\n")
    one_line_error(capsys, ["run", str(path), "--out", str(tmp_path / "o")], "engine.mem_fraction", "would not start")


def test_sglang_pool_is_fraction_of_free_memory_minus_weights():
    m = budget(scenario("sglang"))
    free = m.capacity_bytes - 2582 * MIB
    assert m.kv_budget_bytes == pytest.approx(m.rule.fraction * free - m.target_weight_bytes)
    assert m.activation_bytes == 0  # SGLang's reserve lives in (1 - fraction)


def test_vllm_pool_sets_aside_weights_activations_and_graphs():
    m = budget(scenario("vllm"))  # v0.22.0: gpu_memory_utilization 0.92 (0.9 before v0.20.0)
    assert m.rule.fraction == 0.92 and m.rule.knob == "gpu_memory_utilization"
    assert m.activation_bytes == pytest.approx(activation_bytes(build_pricer(scenario("vllm")), 8192))
    assert 0.5e9 < m.activation_bytes < 2e9  # Llama-3.1-8B over 8192 tokens: ~1 GB
    assert m.kv_budget_bytes == pytest.approx(0.92 * m.capacity_bytes - m.target_weight_bytes - m.activation_bytes - GIB)


def test_vllm_0340_sizes_an_extensible_pool_with_a_margin():
    """v0.34.0's extensible KV cache: utilization 1.0, less a margin of max(1 GiB, 0.75 x the
    activation peak) beside the peak itself (v1/worker/extensible_kv_cache.py)."""
    m = budget(scenario("vllm", version="0.34.0"))
    margin = max(GIB, 0.75 * m.activation_bytes)
    assert m.rule.fraction == 1.0
    assert m.kv_budget_bytes == pytest.approx(m.capacity_bytes - m.target_weight_bytes - m.activation_bytes - GIB
                                              - margin)


def test_vllm_0340_margin_binds_only_past_a_users_fraction():
    """With gpu_memory_utilization set, v0.34.0 commits min(requested - non-KV, headroom - margin):
    the margin takes nothing a fraction of 0.9 already leaves free, and binds at 0.995."""
    low, high = budget(scenario("vllm", version="0.34.0", mem_fraction=0.9)), \
        budget(scenario("vllm", version="0.34.0", mem_fraction=0.995))
    rest = low.target_weight_bytes + low.activation_bytes + GIB
    assert low.kv_budget_bytes == pytest.approx(0.9 * low.capacity_bytes - rest)
    margin = max(GIB, 0.75 * high.activation_bytes)
    assert high.kv_budget_bytes == pytest.approx(high.capacity_bytes - margin - rest)


def test_trtllm_pool_is_a_fraction_of_what_is_free_after_load():
    m = budget(scenario("trtllm"))
    assert m.rule.fraction == 0.9 and m.rule.knob == "free_gpu_memory_fraction"
    free = m.capacity_bytes - 2582 * MIB - m.target_weight_bytes - m.activation_bytes - GIB
    assert m.kv_budget_bytes == pytest.approx(0.9 * free)


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm"])
def test_mem_fraction_overrides_each_engines_default(engine):
    low, high = budget(scenario(engine, mem_fraction=0.5)), budget(scenario(engine, mem_fraction=0.95))
    assert low.rule.fraction == 0.5 and high.rule.fraction == 0.95
    assert low.rule.fraction_source == high.rule.fraction_source == "scenario engine.mem_fraction"
    assert 0 < low.kv_budget_bytes < high.kv_budget_bytes


def test_a_fraction_below_the_weights_leaves_no_pool():
    assert budget(scenario("vllm", mem_fraction=0.1)).kv_budget_bytes == 0


def test_deepseek_r1_fp8_on_4xb200_with_sglang():
    """DeepSeek-R1 FP8 (catalog deepseek-v3) at tp 4 on 4xB200: ~169 GB of weights per GPU. The
    default mem_fraction_static (0.832 with MTP under v0.5.12) leaves SGLang no pool, as SGLang's own rule does
    (the deployment passes --mem-fraction-static 0.95); with 0.95 it runs."""
    default = budget(scenario("sglang", "deepseek-v3", "b200", 4, "nextn"))
    assert default.rule.fraction == round((183359 - 26624 - 4096) / 183359, 3)
    free = default.capacity_bytes - 2582 * MIB
    weights = default.target_weight_bytes + default.draft_weight_bytes
    assert default.kv_budget_bytes == max(0.0, default.rule.fraction * free - weights) == 0.0
    s = scenario("sglang", "deepseek-v3", "b200", 4, "nextn", mem_fraction=0.95)
    m = budget(s)
    assert m.kv_budget_bytes == pytest.approx(0.95 * free - weights) and m.kv_budget_bytes > 5e9
    assert m.max_kv_tokens == int(m.kv_budget_bytes // m.kv_bytes_per_token) > 50_000
    r = simulate(s)
    assert r.summary.max_kv_tokens.iloc[0] == m.max_kv_tokens


def test_weights_that_fill_the_pool_are_refused_naming_the_fraction():
    """At the default fraction the run stops as SGLang's own start-up does, with the knob to turn."""
    s = scenario("sglang", "deepseek-v3", "b200", 4, "nextn")
    m = budget(s)
    with pytest.raises(sc.ScenarioError) as err:
        simulate(s)
    weights = f"{(m.target_weight_bytes + m.draft_weight_bytes) / 1e9:.1f} GB"
    assert err.value.key == "engine.mem_fraction" and weights in err.value.reason
    assert f"={m.rule.fraction}" in err.value.reason


def test_the_cost_report_shows_capacity_fraction_and_source():
    table = cost_report(scenario("sglang", "deepseek-v3", "h200", 8, "nextn"), 4, 1024)["memory"]
    assert set(table.design) == {"none", "nextn"}
    assert (table.capacity_GB == 143771 * MIB / 1e9).all()
    by = dict(zip(table.design, table.mem_fraction))
    assert by["nextn"] < by["none"]  # SGLang reserves 2 GiB more for the draft
    assert table.fraction_source.str.contains("mem_fraction_static: sglang default").all()


def test_a_draft_with_its_own_kv_pays_for_it_per_token():
    """DeepSeek-V3's MTP layer (nextn) keeps its own MLA latent cache: a token costs the target's 61
    layers plus the draft's one, (512 + 64) x 2 bytes each (bf16, replicated on every TP rank); the
    pool's token count and a request's bytes (its length plus the engine's reservation) follow."""
    none, nextn = (budget(scenario("sglang", "deepseek-v3", "h200", 8, d, mem_fraction=0.9)) for d in ("none", "nextn"))
    layer = (512 + 64) * 2
    assert none.kv_bytes_per_token == 61 * layer and none.draft_kv_bytes_per_token == 0
    assert nextn.draft_kv_bytes_per_token == layer and nextn.kv_bytes_per_token == 62 * layer
    for m in (none, nextn):
        assert m.max_kv_tokens == int(m.kv_budget_bytes // m.kv_bytes_per_token)
        assert m.request_bytes(1000) == (1000 + m.reserved_tokens) * m.kv_bytes_per_token
        assert m.max_requests(1000) == int(m.kv_budget_bytes // m.request_bytes(1000))
    assert nextn.reserved_tokens > none.reserved_tokens  # room for the drafts a verify writes ahead
