"""Engines at a release (mtpsim/engines.py): version rules by range, the scenario's overrides, the
batch-expansion scorer's pricing, the limits that bound a run, and one engine rule for every
command that builds scenarios."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from mtpsim import catalog, catalog_lookup, cli
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.passes import PassShape
from mtpsim.engine_releases import release, resolve_engine
from mtpsim.errors import ScenarioError
from mtpsim.recommend import grid
from mtpsim.sim import simulate
from tests.test_bad_input import BASE, one_line_error, run

RAW = {"name": "toy", "host": {"decode": {"base_s": 1e-4}, "speculative": {"base_s": 2e-4}},
       "speculative_overlap": False,
       "versions": {"default": "1.1", "known": ["1.0", "1.1", "1.2", "2.0"]},
       "rules": [{"name": "cap", "field": "speculative_max_running_requests", "value": 32, "until": "1.2",
                  "source": "a test"},
                 {"name": "overlap", "field": "speculative_overlap", "value": True, "since": "1.2", "source": "a test"}],
       "kv_pool": catalog.engine_file("vllm")["kv_pool"], "prefill_chunk": catalog.engine_file("vllm")["prefill_chunk"],
       "cuda_graph": catalog.engine_file("vllm")["cuda_graph"]}


def test_rules_hold_over_their_ranges():
    assert resolve_engine(RAW, "1.0").speculative_max_running_requests == 32  # until is exclusive
    assert resolve_engine(RAW, "1.2").speculative_max_running_requests is None
    assert not resolve_engine(RAW, "1.1").speculative_overlap                  # since is inclusive
    assert resolve_engine(RAW, "1.2").speculative_overlap and resolve_engine(RAW, "2.0").speculative_overlap
    e = resolve_engine(RAW, None)
    assert (e.version, e.rules) == ("1.1", ("cap",))


def test_post_and_candidate_builds_run_their_release():
    """A post release sorts between its release and the next, so a rule naming releases holds at it
    as at its release, and one naming a post release (SGLang's EAGLE3 in 0.4.4.post2) holds exactly."""
    assert release("0.5.12") == release("0.5.12rc3") < release("0.5.12.post1") < release("0.5.13")
    assert resolve_engine(RAW, "1.2.post2").rules == ("overlap",)


def test_hotfix_releases_run_their_release_rules():
    """vLLM publishes hotfixes as a fourth part (0.9.0.1, 0.10.1.1 on PyPI), which were refused as
    unknown: each is known, and runs the rules of the release it fixes."""
    raw = catalog.engine_file("vllm")
    for hotfix, fixed in (("0.9.0.1", "0.9.0"), ("0.10.1.1", "0.10.1")):
        at, base = resolve_engine(raw, hotfix), resolve_engine(raw, fixed)
        assert at.version == hotfix and at.rules == base.rules and at.rules
    assert resolve_engine(catalog.engine_file("trtllm"), "1.2.1").rules == resolve_engine(
        catalog.engine_file("trtllm"), "1.2.0").rules


def test_ignored_rules_fall_back_to_the_file():
    assert resolve_engine(RAW, "1.0", ["cap"]).speculative_max_running_requests is None
    with pytest.raises(ScenarioError, match="no rule 'nope'"):
        resolve_engine(RAW, "1.0", ["nope"])


def test_unknown_version_names_the_key_and_the_known_ones():
    with pytest.raises(ScenarioError) as err:
        resolve_engine(RAW, "9.9")
    assert err.value.key == "engine.version" and "1.0, 1.1, 1.2, 2.0" in err.value.message


def test_a_series_is_refused_with_its_releases_named():
    """"1" names the 1.x series, not 1.0 (the two compare equal): refused, its releases offered."""
    with pytest.raises(ScenarioError) as err:
        resolve_engine(RAW, "1")
    assert "it names a series: write one release of it (1.0, 1.1, 1.2)" in err.value.message
    with pytest.raises(ScenarioError) as err:
        resolve_engine(RAW, "3")
    assert "series" not in err.value.message


@pytest.mark.parametrize("written", ["0.10", "0.5", "1"])
def test_a_release_written_as_a_number_is_refused_not_matched(tmp_path, capsys, written):
    """YAML reads `version: 0.10` as the float 0.1, which could match another release: one line
    naming engine.version that says to quote it."""
    path = tmp_path / "s.yaml"
    path.write_text(BASE + f"engine: {{kind: vllm, version: {written}}}\n")
    one_line_error(capsys, ["run", str(path), "--out", str(tmp_path / "o")], "engine.version", "in quotes")


@pytest.mark.parametrize("name", catalog_lookup.names("engines"))
def test_every_catalog_engine_resolves_at_every_known_release(name):
    from mtpsim.engine_releases import known_versions
    for v in known_versions(catalog.engine_file(name)).known:
        assert catalog.load_engine(name, v).version == v


def test_sglang_overlaps_speculation_from_spec_v2_only():
    assert catalog.load_engine("sglang", "0.5.10").hidden_by("nextn") == ()
    assert "verify" in catalog.load_engine("sglang", "0.5.11").hidden_by("nextn")
    assert catalog.load_engine("sglang", "0.5.12").hidden_by("nextn", topk=4) == ()  # spec v2: chains only
    # v0.5.13 drops the tree fallback to spec v1 (rule spec_v2_trees): trees overlap too
    assert catalog.load_engine("sglang", "0.5.13").hidden_by("nextn", topk=4) == ("draft", "verify", "extend")
    assert catalog.load_engine("sglang", "0.5.19").hidden_by("nextn", topk=4) == ("draft", "verify", "extend")
    assert catalog.load_engine("sglang", "0.5.13", ignore_rules=["spec_v2_trees"]).hidden_by("nextn", topk=4) == ()
    assert catalog.load_engine("sglang", "0.4.4").hidden_by("none") == ("decode",)


def test_vllm_overlaps_any_step_only_from_async_scheduling():
    """Async scheduling is vLLM's default from v0.14 for plain and EAGLE/MTP steps alike; before
    it, plain decoding exposes its host time as speculative steps do."""
    for version, hides in (("0.7.3", False), ("0.13.0", False), ("0.14.0", True), ("0.22.0", True)):
        e = catalog.load_engine("vllm", version)
        assert (e.hidden_by("none") == ("decode",)) is hides, version
        assert bool(e.hidden_by("nextn")) is hides, version
    assert catalog.load_engine("vllm", "0.13.0", ignore_rules=["v1_async_scheduling"]).hidden_by("none") == ("decode",)


def test_vllm_async_speculative_steps_hide_host_work_behind_the_drafter_only_before_zero_bubble():
    """From v0.14 to v0.18 a speculative step's host work waits on the accepted counts (a sync
    after the rejection sampler), so only the drafter's passes hide it; v0.19's zero-bubble async
    spec decoding (PR #32951) hides it behind every pass. Plain decoding is not touched."""
    for version in ("0.14.0", "0.16.0", "0.18.1"):
        e = catalog.load_engine("vllm", version)
        assert e.hidden_by("nextn") == ("draft", "extend"), version
        assert e.hidden_by("multi_layer") == ("extend",) and e.hidden_by("block") == ("draft",), version
        assert e.hidden_by("none") == ("decode",), version
    for version in ("0.19.0", "0.22.0"):
        assert catalog.load_engine("vllm", version).hidden_by("nextn") == ("draft", "verify", "extend"), version
    # the exposed host time is the host work past the drafter's passes, where the verify used to hide it
    from mtpsim.costs.iteration import iteration_cost
    kinds, times = ("draft", "verify", "extend"), (2e-4, 5e-3, 3e-4)
    assert iteration_cost(kinds, times, catalog.load_engine("vllm", "0.16.0").hidden_by("nextn"), 1e-3) \
        .exposed_host_s == pytest.approx(5e-4)
    assert iteration_cost(kinds, times, catalog.load_engine("vllm", "0.19.0").hidden_by("nextn"), 1e-3) \
        .exposed_host_s == 0


def test_vllm_v0_speculative_steps_pay_their_python_scoring():
    """V0's SpecDecodeWorker (before v0.9) adds ~2 ms of host work to a plain step's (issue #6915);
    V1's speculative step adds 0.385 ms (PR #25872's 0.97 ms at batch 1 against the plain 0.585)."""
    v0, v1 = catalog.load_engine("vllm", "0.7.3"), catalog.load_engine("vllm", "0.9.0")
    for batch in (1, 64):
        assert v0.host_s("nextn", batch) - v0.host_s("none", batch) == pytest.approx(2.0e-3)
        assert v1.host_s("nextn", batch) - v1.host_s("none", batch) == pytest.approx(0.385e-3)
        assert v0.host_s("none", batch) == v1.host_s("none", batch)


def scenario(**engine):
    text = BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                        "workload: {concurrency: 64, num_requests: 64, input_len: 64, output_len: 8}")
    data = yaml.safe_load(text)
    data["engine"] = engine
    return sc.validate(data)


def test_scenario_overrides_win_over_the_rules():
    assert scenario().specs.engine.speculative_max_running_requests == 48
    assert catalog.load_engine("sglang", "0.4.4").speculative_max_running_requests == 32
    assert catalog.load_engine("sglang", "0.4.3").speculative_max_running_requests is None
    assert simulate(scenario()).summary.max_running.iloc[0] == 48
    assert simulate(scenario(max_running_requests=64)).summary.max_running.iloc[0] == 64
    own = scenario(ignore_rules=["spec_running_cap"])  # SGLang's own: _resolve_max_num_reqs from its KV pool
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule
    kv = memory_budget(build_pricer(own), DesignShape.of(own.speculative), pool_rule(own)).max_kv_tokens
    expected = min(max(int(kv / own.specs.model.max_context * 512), 2048), 4096, kv // 2)
    assert simulate(own).summary.max_running.iloc[0] == expected >= 2048
    assert scenario(speculative_overlap=True).specs.engine.speculative_overlap


def test_a_binding_cap_is_reported():
    row = simulate(scenario()).summary.iloc[0]
    assert row.bound_by == "cap 48" and row.capped_iterations > 0 and row.max_batch == 48
    free = simulate(scenario(max_running_requests=64)).summary.iloc[0]
    assert free.bound_by == "" and free.capped_iterations == 0 and free.max_batch == 64


def test_recommend_resolves_the_cap_as_run_does():
    s = scenario()
    point = next(p for p in grid(s, [64], [2], [1]) if p.speculative.design != "none")  # the grid runs none too
    assert point.specs.engine.max_running(point.speculative.design, point.engine.max_running_requests) == \
        s.specs.engine.max_running(s.speculative.design, s.engine.max_running_requests) == 48


def test_batch_expansion_reads_each_requests_kv_once_per_window_token():
    """vLLM V0's scorer: a 3-token window over 1,000 cached tokens reads ~3x the KV of the MQA
    scorer's verify, whose queries share one read."""
    text = BASE.replace("hardware: h200", "hardware: h200\nengine: {kind: vllm, version: \"0.7.3\"}")
    data = yaml.safe_load(text)
    old = build_pricer(sc.validate(data))
    data["engine"]["version"] = "0.22.0"
    new = build_pricer(sc.validate(data))
    shape = PassShape("verify", "target", 3, 3)
    q, kv = np.full(4, 3), np.full(4, 1000)
    expanded, mqa = old.price(shape, q, kv), new.price(shape, q, kv)
    assert expanded.kv_bytes == pytest.approx(3 * mqa.kv_bytes, rel=0.01)
    assert expanded.tokens == mqa.tokens and expanded.time_s > mqa.time_s


def test_bad_engine_inputs_are_one_line(tmp_path, capsys):
    one_line_error(capsys, run(tmp_path, BASE + 'engine: {version: "9.9.9"}\n'), "engine.version", "known")
    one_line_error(capsys, run(tmp_path, BASE + "engine: {version: 0.5}\n"), "engine.version", "in quotes")
    one_line_error(capsys, run(tmp_path, BASE + "engine: {ignore_rules: [nope]}\n"), "engine.ignore_rules", "no rule")


def test_engines_command_lists_rules(capsys):
    assert cli.main(["engines"]) == 0
    out = capsys.readouterr().out
    assert "spec_running_cap" in out and "v0_batch_expansion" in out and "default 0.5.12" in out


@pytest.mark.parametrize("kind,hardware,tokens", [
    ("sglang", "h200", 8192), ("sglang", "b200", 16384), ("sglang", "a100-80g", 8192), ("sglang", "cpu", 2048),
    ("vllm", "h100-sxm", 8192), ("vllm", "b200", 8192), ("vllm", "a100-80g", 2048), ("vllm", "cpu", 2048),
    ("trtllm", "h200", 8192), ("trtllm", "b200", 8192)])
def test_prefill_chunk_is_the_engines_default_on_each_gpu(kind, hardware, tokens):
    """SGLang's chunked_prefill_size by GPU memory class, vLLM's max_num_batched_tokens (8192 from
    70 GiB, A100 excepted), TensorRT-LLM's max_num_tokens: each engine file's rule, with its source."""
    from mtpsim.memory import prefill_chunk_tokens
    s = sc.validate({"name": "c", "model": "llama-3.1-8b", "hardware": hardware, "engine": {"kind": kind},
                     "cost": {"model": "roofline"}})
    assert prefill_chunk_tokens(s) == tokens
    over = sc.validate({"name": "c", "model": "llama-3.1-8b", "hardware": hardware, "cost": {"model": "roofline"},
                        "engine": {"kind": kind, "chunked_prefill_tokens": 1000}})
    assert prefill_chunk_tokens(over) == 1000
    if hardware == "cpu":
        return  # the cpu catalog entry cannot hold the model's weights: the rule alone is checked
    long = {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 20000, "output_len": 2}
    for scenario, chunk in ((s, tokens), (over, 1000)):
        data = scenario.model_dump(exclude={"specs"}, exclude_none=True) | {"workload": long}
        prefills = simulate(sc.validate(data)).iterations.query("kind == 'prefill'")
        assert len(prefills) == -(-20000 // chunk)  # the prompt in chunks of the size in force


def _dsv3(hardware: str, version: str, ep: int = 1, ignore=()):
    data = {"name": "fusion", "model": "deepseek-v3", "hardware": hardware, "parallel": {"tp": 8, "ep": ep},
            "speculative": {"design": "none"},
            "engine": {"kind": "sglang", "version": version, "ignore_rules": list(ignore)}}
    return sc.validate(data)


def _ffn_ops(s, batch=4):
    from mtpsim.designs import DesignShape
    from mtpsim.report import op_table
    return op_table(build_pricer(s), DesignShape.of(s.speculative), batch, 512).set_index("op")


@pytest.mark.parametrize("hardware, version, ep, fused", [
    ("h200", "0.5.12", 1, True),    # the rule: DeepSeek-V3's one shared expert inside the routed kernel
    ("h200", "0.4.6", 1, False),    # before the rule's release
    ("h200", "0.5.12", 8, False),   # expert parallelism turns it off
    ("b200", "0.5.12", 1, False),   # sm100, fp8: the flashinfer_trtllm runner turns it off
    ("b200", "0.5.4", 1, True),     # ... from v0.5.5 on
    ("a100-80g", "0.5.12", 1, True),
])
def test_sglang_fuses_deepseeks_shared_expert_where_its_source_does(hardware, version, ep, fused):
    ops = _ffn_ops(_dsv3(hardware, version, ep))
    assert ("moe.shared_gate_up" not in ops.index) == fused


def test_a_fused_shared_expert_is_one_more_expert_every_token_picks():
    from mtpsim.costs import ops as O
    ffn = catalog.load_model("deepseek-v3").ffn_kinds["moe"]
    par = O.Parallel(8, 1)
    plain, fused = (O.moe_experts(ffn, 7168, 4, "fp8", par, fused_shared=n) for n in (0, 1))
    assert fused.flops == pytest.approx(plain.flops * (ffn.top_k + 1) / ffn.top_k)
    assert fused.shape["touched"] == pytest.approx(plain.shape["touched"] + 1)
    assert fused.weight_bytes - plain.weight_bytes == pytest.approx(3 * 7168 * ffn.expert_intermediate_size / 8)
    # the table is read at the routed experts' config: the same dims and top_k
    assert {k: fused.shape[k] for k in ("num_experts", "top_k", "inter")} == \
        {k: plain.shape[k] for k in ("num_experts", "top_k", "inter")}
    glm = catalog.load_model("glm-4.5").ffn_kinds
    assert not any(O.fusable_shared_experts(f, par) for f in glm.values())  # 160 experts: not the V3 layout


def test_ignoring_the_fusion_rule_prices_the_shared_gemms_again():
    s = _dsv3("h200", "0.5.12", ignore=["shared_expert_fusion"])
    assert "moe.shared_gate_up" in _ffn_ops(s).index


@pytest.mark.parametrize("model", ["deepseek-v3.2", "deepseek-v4-flash", "kimi-k2.5"])
def test_only_deepseek_v3s_architecture_fuses(model):
    from mtpsim.costs import ops as O
    m = catalog.load_model(model)
    fusable = O.deepseek_v3_architecture(m) and any(
        O.fusable_shared_experts(f, O.Parallel(8, 1)) for f in m.ffn_kinds.values())
    assert not fusable
    assert O.deepseek_v3_architecture(catalog.load_model("deepseek-v3"))


@pytest.mark.parametrize("version, block_hides", [("0.5.12", False), ("0.5.13", False), ("0.5.14", True)])
def test_sglang_runs_dflash_and_frozen_kv_without_overlap_before_their_v2_workers(version, block_hides):
    """v0.5.12/v0.5.13 turn the overlap scheduler off for DFLASH and FROZEN_KV_MTP (their v1
    workers sync every iteration); v0.5.14's v2 workers overlap. EAGLE-family designs overlap
    under spec v2 throughout."""
    e = resolve_engine(catalog.engine_file("sglang"), version)
    assert bool(e.hidden_by("block")) == block_hides and bool(e.hidden_by("frozen_kv")) == block_hides
    assert e.hidden_by("nextn") == ("draft", "verify", "extend")
    assert not resolve_engine(catalog.engine_file("sglang"), "0.5.13",
                              ignore=["block_and_frozen_kv_workers_sync"]).unoverlapped_designs


@pytest.mark.parametrize("version, eager", [("0.4.4", True), ("0.4.6", True), ("0.4.7", False), ("0.5.12", False)])
def test_sglang_runs_the_eagle_draft_extend_eagerly_before_its_cuda_graph(version, eager):
    """Before v0.4.7 the draft extend ran outside CUDA graphs (rule draft_extend_eager): each of its
    kernels pays its own launch, so the same extend costs more; the draft and verify passes and
    the plain decode step replay graphs at every release."""
    text = BASE.replace("hardware: h200", f"hardware: h200\nengine: {{kind: sglang, version: \"{version}\"}}")
    data = yaml.safe_load(text)
    pricer = build_pricer(sc.validate(data))
    ignored = build_pricer(sc.validate({**data, "engine": {**data["engine"], "ignore_rules": ["draft_extend_eager"]}}))
    extend, verify = PassShape("extend", "mtp", 2, 2), PassShape("verify", "target", 3, 3)
    assert pricer.uses_graphs(extend, 4) is not eager and ignored.uses_graphs(extend, 4)
    assert pricer.uses_graphs(verify, 4) and pricer.uses_graphs(PassShape("draft", "mtp", 1, 1), 4)
    q, kv = np.full(4, 2), np.full(4, 1000)
    cost, graphed = pricer.price(extend, q, kv).time_s, ignored.price(extend, q, kv).time_s
    assert cost > graphed if eager else cost == graphed


def _experts(tokens: int):
    """DeepSeek-V3's routed experts on one of 8 TP GPUs at `tokens` tokens, routed as the profiles'
    balanced rows are (min(E, T * k) experts touched), so the op sits on a measured row."""
    from mtpsim.costs import ops as O
    ffn = catalog.load_model("deepseek-v3").ffn_kinds["moe"]
    return O.moe_experts(ffn, 7168, tokens, "fp8", O.Parallel(8, 1), touched=min(256, 8 * tokens))


def _row(hardware: str, family: str, tokens: int) -> float:
    """time_s of the committed <hardware>-sglang profile's `family` row at DeepSeek-V3's TP8 shape."""
    import pandas as pd

    from mtpsim.costs.profile import PROFILES_DIR
    df = pd.read_csv(PROFILES_DIR / f"{hardware}-sglang" / f"{family}.csv.gz")
    (t,) = df[(df.dtype == "fp8") & (df.inter == 256) & (df.num_experts == 256) & (df.top_k == 8) & (df.d == 7168)
              & (df.tokens == tokens) & (df.touched == min(256, 8 * tokens))].time_s
    return float(t)


@pytest.mark.parametrize("tokens", [1, 2, 4])  # from 16 tokens the moe rows are under the stream floor
def test_sglang_before_0_5_5_prices_block_fp8_experts_on_b200_from_the_triton_table(tokens):
    """Rule sm100_triton_fp8_moe: SGLang before v0.5.5 runs block-FP8 experts on sm100 through its
    Triton fused-MoE runner, so the B200 op is the profile's moe_triton row (and labelled so);
    from v0.5.5 the flashinfer_trtllm row of `moe`, which is faster."""
    op = _experts(tokens)
    old = build_pricer(_dsv3("b200", "0.5.2")).costs.time(op, True)
    new = build_pricer(_dsv3("b200", "0.5.12")).costs.time(op, True)
    assert old.source == "calibrated:moe_triton" and new.source == "calibrated"
    assert old.total_s == pytest.approx(_row("b200", "moe_triton", tokens), rel=1e-9)
    assert new.total_s == pytest.approx(_row("b200", "moe", tokens), rel=1e-9)
    assert old.total_s > new.total_s
    ignored = build_pricer(_dsv3("b200", "0.5.2", ignore=["sm100_triton_fp8_moe"])).costs.time(op, True)
    assert ignored == new  # the rule is the only difference


def test_the_triton_rule_changes_nothing_off_sm100_or_without_its_table():
    """On H200 (sm90) the rule does not apply; a profile without a moe_triton table (every one but
    the sm100 SGLang ones) prices the experts from `moe` at any release; `cost --ops` names the table."""
    from mtpsim.costs.calibrated import CalibratedCosts
    op = _experts(4)
    h200 = [build_pricer(_dsv3("h200", v)).costs.time(op, True) for v in ("0.5.2", "0.5.12")]
    assert h200[0] == h200[1] and "moe_triton" not in h200[0].source
    costs = build_pricer(_dsv3("b200", "0.5.2")).costs
    bare = CalibratedCosts({f: t for f, t in costs.tables.items() if f != "moe_triton"}, costs.meta, costs.hw,
                           engine=costs.engine)
    assert bare.time(op, True) == build_pricer(_dsv3("b200", "0.5.12")).costs.time(op, True)
    assert _ffn_ops(_dsv3("b200", "0.5.2")).loc["moe.experts", "priced_by"].endswith(":moe_triton")
    assert "triton" not in _ffn_ops(_dsv3("b200", "0.5.12")).loc["moe.experts", "priced_by"]


GEMMA = {"name": "g", "model": "gemma-4-31b", "hardware": "h100-sxm", "parallel": {"tp": 1},
         "speculative": {"design": "frozen_kv", "steps": 2}, "acceptance": {"per_depth": [0.8, 0.7]},
         "workload": {"concurrency": 2, "num_requests": 4, "input_len": 64, "output_len": 16}}


@pytest.mark.parametrize("model, engine, said", [
    ("gemma-4-31b", {"kind": "vllm", "version": "0.21.0"}, True),
    ("gemma-4-31b", {"kind": "vllm"}, True),  # the default release: the key is engine.kind
    ("gemma-4-31b", {"kind": "vllm", "version": "0.18.0"}, False),  # before vLLM served Gemma 4
    ("gemma-4-31b", {"kind": "vllm", "version": "0.21.0", "ignore_rules": ["triton_attention_mixed_heads"]}, False),
    ("gemma-4-31b", {"kind": "sglang"}, False),
    ("llama-3.1-8b", {"kind": "vllm", "version": "0.21.0"}, False),  # one head size
])
def test_vllm_names_the_triton_attention_it_runs_for_mixed_head_sizes(capsys, model, engine, said):
    """From v0.19.0 vLLM runs every attention layer of Gemma 4 (heads of 256 and 512) on its
    Triton unified-attention kernel, which no profile times: loading such a scenario says so in
    one warning naming the rule, at the key that picked the release."""
    from mtpsim import errors
    errors._warned.clear()
    data = {**GEMMA, "model": model, "engine": engine}
    if model != "gemma-4-31b":
        data["speculative"] = {"design": "none"}
        data.pop("acceptance")
    sc.validate(data, "g.yaml")
    lines = [line for line in capsys.readouterr().err.splitlines() if "Triton unified attention" in line]
    assert len(lines) == int(said)
    if said:
        key = "engine.version" if "version" in engine else "engine.kind"
        assert lines[0].startswith(f"mtpsim: warning: g.yaml: {key}: vllm ")
        assert "(head sizes 256, 512)" in lines[0] and "rule triton_attention_mixed_heads" in lines[0]


def test_the_mixed_head_rule_changes_no_price():
    """The rule names a kernel; it prices nothing: the same point costs the same with it ignored."""
    on = sc.validate({**GEMMA, "engine": {"kind": "vllm", "version": "0.21.0"}})
    off = sc.validate({**GEMMA, "engine": {"kind": "vllm", "version": "0.21.0",
                                           "ignore_rules": ["triton_attention_mixed_heads"]}})
    assert on.specs.engine.mixed_head_attention == "Triton unified attention"
    assert off.specs.engine.mixed_head_attention is None
    priced = [simulate(s).summary.drop(columns="sim_wall_s") for s in (on, off)]
    assert priced[0].equals(priced[1])
