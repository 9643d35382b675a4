"""Bad-input campaign 34: ~760 probes over the whole CLI, aimed at trees read from an accept
length, hand-written config.json files (Llama 4, no torch_dtype, quantization variants), user
profiles, engine keys, block drafters, search/recommend flags, YAML tricks and traces. No traceback
and no multi-line error; every refusal exited 2. The holes, each tested below:
- a quantization config's module patterns could run without end: 20,000 wildcards took minutes
  (a regular expression that backtracks exponentially under Python's `re` too); patterns now run
  on `regex` under a time budget, past which one line names the key (H1, H2);
- recommend and search compared a tree's steps only up to the scenario's own, whatever depths
  its per_depth_topk matrix gave (H3);
- a quoted number under an explicit !!int / !!float tag skipped the decimal-spelling check (H4);
- a one-point sweep said nothing of a key no point reads (H5);
- a partial model.dtypes beside a quantization mtpsim does not read priced the other weights at
  torch_dtype in silence (H6);
- an EAGLE-3 head's config.json was read as a plain one-layer Llama (H7);
- a rope_type that is no name was applied as a multiplier; layer indices spelled "1_0" or in
  another script's digits were read as numbers (H8);
- a compressed-tensors group_size of 0 or below read as 16; an hf_quant_config.json folder was
  passed over (H10, H11);
- plot drew another run's tables in a folder whose scenario.resolved.yaml could not be read (H12).

- two MTP layer counts that disagree (mtp_num_hidden_layers, num_nextn_predict_layers) were read by a
  fixed key order (H9, in part).

Left alone: the other pairs of keys that give one setting twice (rope_scaling and rope_parameters,
MiMo's sliding_window and sliding_window_size, a text-level and a top-level quantization_config)
are read by a fixed key order without a word (H9); a few errors name the spec
key a config.json value became (model.max_context for a tiny rope factor, model.fp4_scale_bytes for
group_size 1) rather than the config's own key (H10).
"""
from __future__ import annotations

import json
import time

import pytest

from mtpsim.hfconfig import patterns as quant
from tests.test_bad_input import one_line_error, run
from tests.test_hfconfig import LLAMA_31_8B, read

FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
HEAD = ("name: s\nmodel: {hf_config: ./config.json}\nhardware: h100-sxm\n"
        "workload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")


def test_an_expression_that_backtracks_under_re_reads_in_moments(tmp_path):
    """`re:(.|.)*Z` takes exponential time in Python's `re` on every module name; under `regex`
    it does not, and the model reads."""
    config = {**LLAMA_31_8B, "quantization_config": {**FP8, "modules_to_not_convert": ["re:(.|.)*Z"]}}
    start = time.perf_counter()
    spec = read(tmp_path, config)
    assert time.perf_counter() - start < 10
    assert spec.dtypes.attention == "fp8"


def test_patterns_past_the_time_budget_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(quant, "MATCH_BUDGET_S", 0.05)
    config = {**LLAMA_31_8B, "quantization_config": {**FP8, "modules_to_not_convert": [f"zz{i}*" for i in range(3000)]}}
    line = one_line_error(capsys, run(tmp_path, HEAD, {"config.json": json.dumps(config)}), "model.hf_config",
                          "3000 module patterns took over 0.05 s")
    assert "stopped at 'zz" in line


def test_a_pattern_that_times_out_stops_the_match():
    """The budget bounds one match too: a timeout inside `regex` ends it (SlowPatterns)."""
    patterns = quant.Patterns([("re:a", None)])
    patterns.spent = quant.MATCH_BUDGET_S  # the budget already spent
    with pytest.raises(quant.SlowPatterns):
        patterns.find("model.layers.0.mlp")


TREE_ROWS = ("name: t\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
             "speculative: {design: nextn, steps: 2, topk: 2, draft: eagle3-llama-3.1-8b}\n"
             "acceptance:\n  per_depth_topk: [[0.9, 0.05], [0.9, 0.05], [0.9, 0.05], [0.9, 0.05], [0.9, 0.05], [0.9, 0.05]]\n"
             "workload: {arrival: closed, concurrency: 1, num_requests: 4, input_len: 256, output_len: 64}\n")


def test_recommend_tries_every_depth_a_trees_matrix_gives(tmp_path, capsys):
    """A 6-row per_depth_topk with speculative.steps 2: recommend compared steps 1..2 only (the
    profile it read kept the scenario's 2 rows) and picked S=2; chains' 6 per_depth values gave 1..6."""
    from mtpsim import cli
    path = tmp_path / "t.yaml"
    path.write_text(TREE_ROWS)
    assert cli.main(["recommend", str(path), "--topk", "1,2", "--batch", "1", "--seeds", "1", "--jobs", "1",
                     "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "nextn steps 1..6, topk [1, 2]" in out


def test_a_partial_model_dtypes_beside_an_unread_quantization_names_the_parts_left(tmp_path, capsys):
    """A GPTQ config.json with `dtypes: {kv_cache: fp8}`: any partial model.dtypes silenced the
    "give model.dtypes" error and the 4-bit weights were priced bf16 without a word."""
    config = {**LLAMA_31_8B, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    text = HEAD.replace("model: {hf_config: ./config.json}", "model: {hf_config: ./config.json, dtypes: {kv_cache: fp8}}")
    line = one_line_error(capsys, run(tmp_path, text, {"config.json": json.dumps(config)}), "model.dtypes",
                          "give model.dtypes for attention, dense_ffn (it gives kv_cache only)")
    assert "gptq" in line


def test_an_eagle3_heads_config_is_refused_not_read_as_a_plain_decoder(tmp_path, capsys):
    """SpecForge's EAGLE-3 head (LlamaForCausalLMEagle3 under model_type llama) was read as a
    one-layer Llama: its draft vocabulary dropped (a draft pass at twice its time) and its 2,048-token
    max_position_embeddings refusing longer prompts."""
    head = {**LLAMA_31_8B, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1,
            "draft_vocab_size": 32000, "max_position_embeddings": 2048}
    (tmp_path / "head.json").write_text(json.dumps(head))
    text = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
            "speculative: {design: nextn, steps: 2, draft: {hf_config: ./head.json, role: draft, backbone_hidden_size: 4096}}\n"
            "acceptance: {accept_length: 2.0}\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    line = one_line_error(capsys, run(tmp_path, text), "architectures", "is an EAGLE draft head")
    assert "head.json" in line


@pytest.mark.parametrize("value", ['!!int "010"', '!!int "0x10"', '!!int "1_0"', '!!int "1:30"', '!!float "1_0.5"'])
def test_a_quoted_number_under_an_explicit_tag_is_checked_as_a_bare_one(tmp_path, capsys, value):
    """`!!int "010"` ran with 8 users (16, 10, 90 for the others) where a bare 010 is refused."""
    text = HEAD.replace("model: {hf_config: ./config.json}", "model: llama-3.1-8b").replace(
        "concurrency: 1,", f"concurrency: {value},")
    one_line_error(capsys, run(tmp_path, text), "workload.concurrency", "write it in decimal")


def test_a_decimal_under_an_explicit_tag_reads():
    from mtpsim.yamlfiles import parse_yaml
    assert parse_yaml('a: !!int "12"\nb: !!float "2.5"\n', "s.yaml") == {"a": 12, "b": 2.5}


def test_a_one_point_sweep_warns_what_the_key_set_directly_warns(tmp_path, capsys):
    """`sweep: {cost.moe_skew: [0.5]}` on a dense model said nothing, where setting the key warns
    and a sweep of two values warns once for both."""
    from mtpsim import cli, errors
    errors._warned.clear()
    text = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n"
            "sweep: {cost.moe_skew: [0.5]}\n")
    assert cli.main([*run(tmp_path, text), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "sweep.cost.moe_skew: cost.moe_skew: model 'llama-3.1-8b' has no experts" in err


def test_plot_refuses_a_folder_whose_points_cannot_be_read(tmp_path, capsys):
    """Another run's tables copied in are refused (their names disagree with the run's points); with
    scenario.resolved.yaml broken too, plot drew them with a warning."""
    from mtpsim import cli
    text = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    assert cli.main([*run(tmp_path, text), "--jobs", "1"]) == 0
    resolved = tmp_path / "out" / "scenario.resolved.yaml"
    resolved.write_text(resolved.read_text() + "x: [\n")
    capsys.readouterr()
    line = one_line_error(capsys, ["plot", str(tmp_path / "out")], "", "YAML syntax error")
    assert "scenario.resolved.yaml" in line
    resolved.write_text("- 1\n- 2\n")
    one_line_error(capsys, ["plot", str(tmp_path / "out")], "", "not one scenario with a name per point")


@pytest.mark.parametrize("size", [0, -32, 16.5, "16"])
def test_a_compressed_tensors_group_size_that_is_no_count_is_refused(tmp_path, size):
    """group_size 0 or -32 was read as NVFP4's 16 in silence."""
    from mtpsim.errors import ScenarioError
    quant_cfg = {"quant_method": "compressed-tensors", "config_groups": {
        "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": size}}}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, {**LLAMA_31_8B, "quantization_config": quant_cfg})
    assert err.value.key == "quantization_config.config_groups.g.weights.group_size"


def test_an_hf_quant_config_folder_is_refused_not_passed_over(tmp_path, capsys):
    (tmp_path / "hf_quant_config.json").mkdir()
    line = one_line_error(capsys, run(tmp_path, HEAD, {"config.json": json.dumps(LLAMA_31_8B)}), "", "a folder, not a file")
    assert "hf_quant_config.json" in line


@pytest.mark.parametrize("rope_type", [["yarn"], 5])
def test_a_rope_type_that_names_no_scaling_is_refused(tmp_path, rope_type):
    """It was applied as a plain multiplier (max_context 131072 -> 524288)."""
    from mtpsim.errors import ScenarioError
    config = {**LLAMA_31_8B, "rope_scaling": {"rope_type": rope_type, "factor": 4.0}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config)
    assert err.value.key == "rope_scaling.rope_type"


@pytest.mark.parametrize("layers", ["1_0,3", "\u0663,1"])
def test_layer_indices_are_ascii_decimal(tmp_path, layers):
    """Llama 4's moe_layers "1_0" read as layer 10 and an Arabic-Indic three as layer 3."""
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import LLAMA4_SCOUT_TEXT
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, {**LLAMA4_SCOUT_TEXT, "moe_layers": layers})
    assert err.value.key.endswith("moe_layers")


def test_two_mtp_layer_counts_that_disagree_are_refused(tmp_path):
    """A config with mtp_num_hidden_layers 1 and num_nextn_predict_layers 2 was read as 2 in
    silence (H9), where Qwen3.5's engines read the former."""
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import QWEN35_27B
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, {**QWEN35_27B, "text_config": {**QWEN35_27B["text_config"], "num_nextn_predict_layers": 2}})
    assert err.value.key == "text_config.mtp_num_hidden_layers" and "give one count" in err.value.reason
    same = {**QWEN35_27B, "text_config": {**QWEN35_27B["text_config"], "num_nextn_predict_layers": 1}}
    assert read(tmp_path, same).mtp.num_layers == 1
