"""The running requests each engine admits when the scenario sets no cap (engines/<kind>.yaml
`running_cap`, engines.RunningCap): SGLang's from its KV pool, vLLM's max_num_seqs by GPU,
TensorRT-LLM's max_batch_size; a speculative rule's cap and engine.max_running_requests first."""
from __future__ import annotations

import pytest

from mtpsim import catalog


@pytest.mark.parametrize("kv_tokens, context, cap", [
    (500_000, 131_072, 2048),    # 500k / 128k x 512 = 1953: the floor
    (2_000_000, 8192, 4096),     # 125,000: the ceiling
    (1_000_000, 163_840, 3125),  # between
    (3000, 8192, 1500),          # a pool of 3,000 tokens admits at most half as many requests
    (500_000, None, 2048),       # a model that states no context: the floor
])
def test_sglang_admits_what_its_kv_pool_estimates(kv_tokens, context, cap):
    engine, h100 = catalog.load_engine("sglang"), catalog.load_hardware("h100-sxm")
    assert engine.max_running("none", None, h100, kv_tokens, context) == cap
    assert engine.max_running("nextn", None, h100, kv_tokens, context) == 48  # the speculative rule first
    assert engine.max_running("none", 100, h100, kv_tokens, context) == 100   # the scenario's first


@pytest.mark.parametrize("version, hardware, cap", [("0.22.0", "h100-sxm", 1024), ("0.22.0", "a100-80g", 256),
                                                    ("0.34.0", "b200", 1024), ("0.7.3", "h100-sxm", 256)])
def test_vllm_admits_its_max_num_seqs(version, hardware, cap):
    engine = catalog.load_engine("vllm", version)
    assert engine.max_running("nextn", None, catalog.load_hardware(hardware)) == cap


def test_tensorrt_llm_admits_its_max_batch_size():
    assert catalog.load_engine("trtllm").max_running("none", None, catalog.load_hardware("b200")) == 2048


@pytest.mark.parametrize("new, key, word", [
    ("running_cap: {fixed: 8, per_context: 512, floor: 2048, ceiling: 4096, kv_share: 0.5}", "running_cap", "one of"),
    ("running_cap: {per_context: 512, ceiling: 4096, kv_share: 0.5}", "running_cap.floor", "needs floor"),
    ("running_cap: {per_context: 512, floor: 4096, ceiling: 2048, kv_share: 0.5}", "running_cap.ceiling", "below floor"),
    ("running_cap: {fixed: 8, floor: 2}", "running_cap.floor", "only a per_context cap"),
    ("running_cap: {by_gpu: [{requests: 8}, {below_mib: 1000, requests: 4}]}", "running_cap.by_gpu.1",
     "no GPU reaches"),
])
def test_an_engine_files_running_cap_is_checked(tmp_path, capsys, monkeypatch, new, key, word):
    from tests.test_bad_input_9e import _engines_refuses
    old = "running_cap: {per_context: 512, floor: 2048, ceiling: 4096, kv_share: 0.5}"
    _engines_refuses(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, word)


def test_a_model_without_max_context_runs_under_sglang(tmp_path):
    """An inline model without max_context: SGLang's estimate has no context to divide by."""
    import yaml

    from mtpsim import scenario as sc
    from mtpsim.packagedata import data_dir
    from mtpsim.sim import simulate
    model = yaml.safe_load((data_dir() / "models" / "llama-3.1-8b.yaml").read_text())
    model.pop("max_context", None)
    model["name"] = "no-context"
    s = sc.validate({"name": "c", "model": model, "hardware": "h100-sxm", "cost": {"model": "roofline"},
                     "workload": {"arrival": "batch", "concurrency": 2, "num_requests": 2, "input_len": 32,
                                  "output_len": 4}})
    assert simulate(s).summary.max_running.iloc[0] == 2048


@pytest.mark.parametrize("version, design, cap", [
    ("0.5.16", "block", 256),   # DSpark: the V4 hook fills 256 before the speculative hook's 48 could
    ("0.5.16", "nextn", 256),   # V4's own MTP layer, the same
    ("0.5.16", "none", 256),    # plain decoding: 256, not the KV pool's estimate
    ("0.5.12", "nextn", 256),   # the first release with DeepSeek-V4 code
    ("0.5.11", "nextn", 48),    # before it: the speculative rule
])
def test_sglang_caps_deepseek_v4_at_256(version, design, cap):
    model, b200 = catalog.load_model("deepseek-v4-flash"), catalog.load_hardware("b200")
    assert model.architecture == "DeepseekV4ForCausalLM"
    engine = catalog.load_engine("sglang", version).for_model(model.architecture)
    assert engine.max_running(design, None, b200, 2_000_000, 8192) == cap
    assert engine.max_running(design, 64, b200, 2_000_000, 8192) == 64  # the scenario's first


def test_other_models_keep_sglangs_speculative_cap():
    model = catalog.load_model("deepseek-v3")
    assert model.architecture is None
    engine = catalog.load_engine("sglang", "0.5.16").for_model(model.architecture)
    assert engine.max_running("nextn", None, catalog.load_hardware("h200")) == 48


def test_a_deepseek_v4_run_holds_256_requests_and_says_which_rule(tmp_path, capsys):
    """SGLang's DeepSeek-V4 default, 256, caps both arms (the speculative one ran 48 before), and
    each cap's note names that rule."""
    from mtpsim import cli
    from tests.test_bad_input import run
    text = ("name: s\nmodel: deepseek-v4-flash\nhardware: b200\nengine: {kind: sglang, version: \"0.5.16\"}\n"
            "parallel: {tp: 8}\nspeculative: {design: nextn, steps: 1}\nacceptance: {accept_length: 1.8}\n"
            "workload: {arrival: closed, concurrency: 300, num_requests: 300, input_len: 16, output_len: 4}\n")
    assert cli.main([*run(tmp_path, text), "--jobs", "1"]) == 0
    capped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("cap ")]
    assert len(capped) == 2  # the baseline and nextn, each at 256
    for line in capped:
        assert line.startswith("cap 256: ")
        assert line.endswith("set by sglang 0.5.16's cap for DeepseekV4ForCausalLM models (rule deepseek_v4_running_cap)")


@pytest.mark.parametrize("version, said", [("0.5.11", True), ("0.5.12", False)])
def test_a_release_without_deepseek_v4_code_says_so(tmp_path, capsys, version, said):
    """SGLang's DeepSeek-V4 code first ships in v0.5.12 (rule no_deepseek_v4_code): a scenario on
    an older release is priced with its rules, and one warning says the release cannot serve it."""
    from mtpsim import cli, errors
    from tests.test_bad_input import run
    errors._warned.clear()
    text = (f"name: s\nmodel: deepseek-v4-flash\nhardware: b200\nengine: {{kind: sglang, version: \"{version}\"}}\n"
            "parallel: {tp: 8}\nworkload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 16, output_len: 4}\n")
    assert cli.main(["cost", run(tmp_path, text)[1]]) == 0
    err = capsys.readouterr().err
    assert (f"model: sglang {version} has no code for DeepseekV4ForCausalLM models" in err) == said


@pytest.mark.parametrize("version, said", [("0.5.11", "DeepseekV4ForCausalLM"), ("0.5.20", "DeepSeek-V4.1"),
                                           ("0.5.21", None)])
def test_deepseek_v41_needs_the_release_that_added_its_layers(tmp_path, capsys, version, said):
    """V4.1 keeps V4's class, but its ratio-1/2 layers and Engram came in SGLang v0.5.21 (rule
    no_deepseek_v41_code): a release from v0.5.12 to v0.5.20 serves V4 and not V4.1."""
    from mtpsim import cli, errors
    from tests.test_bad_input import run
    errors._warned.clear()
    assert catalog.load_model("deepseek-v4.1-flash").served_as == ("DeepseekV4ForCausalLM", "DeepSeek-V4.1")
    assert catalog.load_model("deepseek-v4-flash").served_as == ("DeepseekV4ForCausalLM",)
    text = (f"name: s\nmodel: deepseek-v4.1-flash\nhardware: b200\nengine: {{kind: sglang, version: \"{version}\"}}\n"
            "parallel: {tp: 8}\nworkload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 16, output_len: 4}\n")
    assert cli.main(["cost", run(tmp_path, text)[1]]) == 0
    err = capsys.readouterr().err
    if said is None:
        assert "has no code for" not in err, err
    else:
        assert f"model: sglang {version} has no code for {said} models" in err, err
