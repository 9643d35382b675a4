"""Bad-input campaign 35, the holes the last stop left open (H8-H14, H17, H18), each tested below:
- recommend compared chains only unless --topk, dropping the scenario's own tree (H8), and keyed
  its policy at users past the running cap, a batch that never runs (H9);
- a user engine file could key a cap or a lacked class on an architecture no model has (H10); the
  note on a cap named a hard-coded rule (H11); an engine cap below the attention-DP ranks ran
  (H12); a capitalised mapping key vanished from the error's key path (H13);
- a profile's repeated row was reported at two rows that were not copies (H14);
- a date past the calendar had no key path (H17); `mtpsim plot` drew a summary whose steps were
  edited (H18);
- and campaign 34's H9: two config.json keys giving one setting (rope_scaling and rope_parameters,
  MiMo's two window keys, a text-level and a top-level quantization_config) were read in a fixed
  order without a word where they disagree.
"""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

from mtpsim import catalog, cli
from mtpsim.catalog import data_dir
from tests.test_bad_input import one_line_error, run

CHAIN = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
         "speculative: {design: nextn, steps: 2, topk: TOPK, draft: eagle3-llama-3.1-8b}\n"
         "acceptance: {per_depth_topk: [[0.8, 0.1], [0.7, 0.1]]}\n"
         "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n")


def _recommend(tmp_path, text: str, *flags: str) -> list[str]:
    return ["recommend", run(tmp_path, text)[1], "--seeds", "1", "--out", str(tmp_path / "out"), *flags]


def test_recommend_compares_the_scenarios_own_tree_unless_told(tmp_path, capsys):
    """Before: `--topk` defaulted to 1, so a scenario drafting a tree of 2 was compared as chains."""
    assert cli.main(_recommend(tmp_path, CHAIN.replace("TOPK", "2"), "--batch", "1")) == 0
    grid = pd.read_csv(tmp_path / "out" / "grid.csv")
    assert sorted(grid[grid.design == "nextn"].topk.unique()) == [1, 2]


def test_recommend_given_topk_compares_only_those(tmp_path):
    assert cli.main(_recommend(tmp_path, CHAIN.replace("TOPK", "2"), "--batch", "1", "--topk", "1")) == 0
    grid = pd.read_csv(tmp_path / "out" / "grid.csv")
    assert grid[grid.design == "nextn"].topk.unique().tolist() == [1]


def test_recommends_policy_keys_a_capped_batch_at_the_cap(tmp_path, capsys):
    """Before: 64 users under SGLang's speculative cap of 48 gave the key 64, which `run` warns
    no iteration reaches."""
    text = CHAIN.replace("TOPK", "1").replace("input_len: 64", "input_len: 16").replace("output_len: 16", "output_len: 4")
    assert cli.main(_recommend(tmp_path, text, "--batch", "1,64", "--topk", "1")) == 0
    policy = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("policy:"))
    keys = yaml.safe_load(policy.split("#")[0].removeprefix("policy:"))["steps_by_batch"]
    assert max(keys) <= 48 and "batch 64 keyed at the running cap" in policy


def test_the_policy_line_holds_each_key_at_the_cap_the_table_gives():
    from mtpsim.recommend import policy_line
    from tests.test_recommend import table
    picks = table([3, 2, 1], batches=(1, 32, 300))
    assert policy_line(picks).startswith("policy: {steps_by_batch: {1: 3, 32: 2, 300: 1}}")
    picks["max_running"] = [256, 256, 256]
    assert policy_line(picks).startswith("policy: {steps_by_batch: {1: 3, 32: 2, 256: 1}}")


def _engine_catalog(tmp_path, monkeypatch, edit) -> None:
    data = yaml.safe_load((data_dir() / "engines" / "sglang.yaml").read_text())
    edit(data)
    path = tmp_path / "cat" / "engines" / "sglang.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))


def _rule(data: dict, name: str) -> dict:
    return next(r for r in data["rules"] if r["name"] == name)


@pytest.mark.parametrize("rule, value, key", [
    ("deepseek_v4_running_cap", {"DeepseekV5ForCausalLM": 10}, "value: rule deepseek_v4_running_cap sets "
     "architecture_running_cap.DeepseekV5ForCausalLM"),
    ("no_deepseek_v4_code", ["deepseekv4forcausallm"], "value"),
    ("no_deepseek_v4_code", ["DeepseekV4ForCausalLM", "DeepseekV4ForCausalLM"], "value"),
])
def test_an_engine_rule_keyed_on_a_class_no_model_has_is_refused(tmp_path, capsys, monkeypatch, rule, value, key):
    """Before: accepted, and the entry never applied (ModelSpec.architecture names one class)."""
    def edit(data):
        _rule(data, rule)["value"] = value
    _engine_catalog(tmp_path, monkeypatch, edit)
    line = one_line_error(capsys, ["engines"], "", "")
    index = [r["name"] for r in yaml.safe_load((tmp_path / "cat" / "engines" / "sglang.yaml").read_text())["rules"]].index(rule)
    assert f"rules.{index}.{key}" in line, line


def test_a_capitalised_mapping_key_stays_in_the_key_path(tmp_path, capsys, monkeypatch):
    """Before: `architecture_running_cap: Input should be greater than 0`, the class dropped as if
    it were a pydantic union branch."""
    def edit(data):
        data["architecture_running_cap"] = {"DeepseekV4ForCausalLM": 0}
    _engine_catalog(tmp_path, monkeypatch, edit)
    one_line_error(capsys, ["engines"], "architecture_running_cap.DeepseekV4ForCausalLM", "greater than 0")


V4 = ("name: s\nmodel: deepseek-v4-flash\nhardware: b200\nengine: {kind: sglang, version: \"0.5.15\"}\n"
      "parallel: {tp: 4, attention_dp: 4}\nspeculative: {design: nextn, steps: 1}\nacceptance: {accept_length: 1.8}\n"
      "workload: {arrival: closed, concurrency: 8, num_requests: 8, input_len: 16, output_len: 4}\n")


def test_a_cap_note_names_the_rule_in_force(tmp_path, capsys, monkeypatch):
    """Before: the note named `deepseek_v4_running_cap` whatever rule (or field) set the cap."""
    def edit(data):
        _rule(data, "deepseek_v4_running_cap")["name"] = "my_cap"
    _engine_catalog(tmp_path, monkeypatch, edit)
    engine = catalog.load_engine("sglang", "0.5.15")
    assert engine.set_by["architecture_running_cap"] == "my_cap"
    assert engine.cap_origin("nextn", False, "DeepseekV4ForCausalLM").endswith("(rule my_cap)")
    assert engine.cap_origin("nextn", True, "DeepseekV4ForCausalLM") == "engine.max_running_requests"


def test_a_cap_the_engine_file_sets_itself_is_named_as_its_field(tmp_path, monkeypatch):
    def edit(data):
        data["architecture_running_cap"] = {"DeepseekV4ForCausalLM": 100}
    _engine_catalog(tmp_path, monkeypatch, edit)
    engine = catalog.load_engine("sglang", "0.5.11")  # before the rule holds
    assert engine.cap_origin("none", False, "DeepseekV4ForCausalLM").endswith(
        "(the engine file's architecture_running_cap)")


def test_an_engine_cap_below_the_attention_dp_ranks_is_refused(tmp_path, capsys, monkeypatch):
    """Before: the engine's cap of 3 over 4 ranks ran 3 requests; the same cap set by the scenario
    was refused (3 // 4 = 0 per rank)."""
    def edit(data):
        _rule(data, "deepseek_v4_running_cap")["value"] = {"DeepseekV4ForCausalLM": 3}
    _engine_catalog(tmp_path, monkeypatch, edit)
    one_line_error(capsys, run(tmp_path, V4), "parallel.attention_dp", "3 // 4 = 0 requests")


def test_a_repeated_row_is_named_with_its_copy():
    """Before: `rows 2 and 3 time the same shape` where row 2 repeated row 2145 and row 3 row 2146."""
    from mtpsim.csvfiles import file_row, first_repeat_rows
    df = pd.DataFrame({"tokens": [1, 2, 3, 1, 2], "us": [5.0, 6.0, 7.0, 5.0, 6.0]})
    assert first_repeat_rows(df, ["tokens"]) == (0, 3) and (file_row(df, 0), file_row(df, 3)) == (2, 5)
    assert first_repeat_rows(df.iloc[:3]) is None


def test_a_repeated_row_after_a_blank_line_is_named_on_its_own_line(tmp_path):
    """Campaign 37's H6: the rows were counted from the header, so a blank line moved them."""
    from mtpsim.acceptance_histogram import read_histogram
    from mtpsim.errors import ScenarioError
    path = tmp_path / "h.csv"
    path.write_text("accepted,count\n0,10\n1,20\n2,30\n\n1,25\n")
    with pytest.raises(ScenarioError) as err:
        read_histogram(path)
    assert "rows 3 and 6 both count accepted 1" in err.value.reason


def test_a_profile_family_names_the_pair(tmp_path):
    import gzip

    from mtpsim.costs.profile import PROFILES_DIR, read_family
    from mtpsim.errors import ScenarioError
    lines = gzip.decompress((PROFILES_DIR / "b200-sglang" / "linear_state.csv.gz").read_bytes()).decode().splitlines()
    path = tmp_path / "linear_state.csv"
    path.write_text("\n".join([*lines[:4], lines[2], lines[3]]) + "\n")  # data rows 2 and 3 again, as rows 5 and 6
    with pytest.raises(ScenarioError) as err:
        read_family(path, "linear_state")
    assert "rows 3 and 5 time the same shape" in err.value.reason


def test_a_date_past_the_calendar_names_its_key(tmp_path, capsys):
    text = CHAIN.replace("TOPK", "1").replace("name: s\n", "name: s\nquestion: 2001-02-30\n")
    one_line_error(capsys, run(tmp_path, text), "question", "day is out of range")


def test_plot_refuses_a_summary_whose_steps_were_edited(tmp_path, capsys):
    """Before: drawn with no word; names and points were cross-checked, steps were not."""
    out = tmp_path / "out"
    assert cli.main(run(tmp_path, CHAIN.replace("TOPK", "1"))) == 0
    capsys.readouterr()
    summary = out / "summary.csv"
    lines = summary.read_text().splitlines()
    header = lines[0].split(",")
    row = next(i for i, line in enumerate(lines) if line.split(",")[header.index("design")] == "nextn")
    cells = lines[row].split(",")
    cells[header.index("steps")] = "64"
    lines[row] = ",".join(cells)
    summary.write_text("\n".join(lines) + "\n")
    one_line_error(capsys, ["plot", str(out)], "steps", "64 at point 0")


# ------------------------------------------------------------------ campaign 35's smaller notes

def test_a_table_cell_in_an_error_is_said_as_its_number():
    """Before: `iters: row 2: np.int64(0) is not ...`."""
    import numpy as np

    from mtpsim.errors import short
    assert short(np.int64(0)) == "0" and short(np.float64(4096.0)) == "4096.0"


def test_a_families_count_that_is_no_number_is_refused():
    """Before: `families.linear_state: "lots"` turned the row-count check off without a word."""
    from mtpsim.costs.profile import check_rows
    from mtpsim.errors import ScenarioError
    with pytest.raises(ScenarioError) as err:
        check_rows("linear_state", pd.DataFrame({"a": [1]}), {"families": {"linear_state": "lots"}}, "meta.yaml")
    assert err.value.key == "families.linear_state" and "not a count of rows" in err.value.reason


def test_a_lacked_method_names_the_user_catalogs_file(tmp_path, capsys, monkeypatch):
    """Before: `(engines/sglang.yaml lacks_methods)` where a user catalog's file set it."""
    def edit(data):
        data["rules"] = [r for r in data["rules"] if r["field"] != "lacks_methods"]
        data["lacks_methods"] = ["eagle3"]
    _engine_catalog(tmp_path, monkeypatch, edit)
    assert cli.main(run(tmp_path, CHAIN.replace("TOPK", "1"))) == 0
    err = capsys.readouterr().err
    assert f"({tmp_path / 'cat' / 'engines' / 'sglang.yaml'} lacks_methods)" in err, err


def test_a_lacked_method_a_rule_set_names_the_rule(tmp_path, capsys):
    text = CHAIN.replace("TOPK", "1").replace("hardware: h100-sxm\n", "hardware: h100-sxm\nengine: {kind: sglang, "
                                               "version: \"0.4.4\"}\n")
    assert cli.main(run(tmp_path, text)) == 0
    assert "(rule sglang_methods_v04 lacks_methods)" not in (err := capsys.readouterr().err)
    assert "(rule sglang_methods_v04)" in err, err


# ------------------------------------------------------------------ campaign 34's H9: two config.json keys, one setting

def test_rope_scaling_and_rope_parameters_that_disagree_are_refused(tmp_path):
    """Before: rope_scaling was read and rope_parameters passed over without a word."""
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import LLAMA_31_8B, read
    config = {**LLAMA_31_8B, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
              "rope_parameters": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32768,
                                  "rope_theta": 1e6}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config)
    assert err.value.key == "rope_parameters" and "factor as 8.0, and rope_scaling as 4.0" in err.value.reason
    agreeing = {**config, "rope_parameters": {**config["rope_scaling"], "rope_theta": 1e6}}
    assert read(tmp_path, agreeing).max_context == 4 * 32768


def test_mimos_two_window_keys_that_disagree_are_refused(tmp_path):
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import MIMO_V2_FLASH, read
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, {**MIMO_V2_FLASH, "sliding_window_size": 256})
    assert err.value.key == "sliding_window_size" and "sliding_window 128" in err.value.reason


def test_a_text_level_quantization_that_differs_from_the_top_level_is_refused(tmp_path):
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import GEMMA_4_E2B, read
    fp8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    config = {**GEMMA_4_E2B, "quantization_config": fp8,
              "text_config": {**GEMMA_4_E2B["text_config"], "quantization_config": {**fp8, "weight_block_size": [64, 64]}}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config)
    assert err.value.key == "quantization_config" and "text_config.quantization_config" in err.value.reason


def test_a_rope_factor_that_leaves_no_context_names_its_own_key(tmp_path):
    """Before: `model.max_context: Input should be greater than 0`, a key config.json does not have."""
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import LLAMA_31_8B, read
    config = {**LLAMA_31_8B, "rope_scaling": {"rope_type": "yarn", "factor": 0.0001, "original_max_position_embeddings": 8192}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config)
    assert err.value.key == "rope_scaling.factor" and "leaves no context" in err.value.reason
