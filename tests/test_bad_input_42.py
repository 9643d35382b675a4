"""Campaign 41's smaller notes, and bad-input campaign 42. Each test below failed on the code
before its fix:
- `--set hardware=h200` over `hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}` dropped the
  scenario's own fields for the catalog's without a word, and a mapping with another `from` said
  they went back to "their defaults" where the catalog entry gives them;
- $AICONFIGURATOR_PYTHON naming a bare command (`python3`) was "which does not exist": it was not
  looked up on $PATH as a shell runs it;
- a run or profile stopped part-way gave back its own folder but left the empty folders it had
  made above it (`--out p/q/r`: p/ and p/q/ stayed).
Campaign 42 (its report's H1-H2 and notes N1-N6):
- a sweep whose values replace a whole section (`sweep: {workload: [{concurrency: 1}, ...]}`) ran
  the scenario's other keys there at their defaults without a word, as --set of the section warns
  (H1: 4 requests of 64/8 tokens became 64 of 1024/256);
- the heavy-run warning took a batch load's concurrency (1 by default), which run does not read,
  as its running batch, and warned a 1.4 s run of 1.6M iterations (H2);
- a ragged first row, or every row ragged, named no line (and a trace showed pandas' words), and a
  ragged row after a quoted cell spanning lines was named one line early (N1, N2);
- disaggregated()'s KV-room hint named the file's disaggregation.prefill.tp (N3);
- a config.json's own bad value was blamed on a scenario key no one wrote (N4);
- DeepSeek-V4's layer_types was passed over without a word where compress_ratios disagrees (N5);
- a name was quoted twice before its 's (N6).
"""
from __future__ import annotations

import json

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_38 import BASE

PRICED = BASE.replace("hardware: h100-sxm", "hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}")


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if "whole section" in line]


@pytest.mark.parametrize("value, fate, hint", [
    ("h200", "usd_per_gpu_hour takes the catalog value of 'h200'", "--set hardware.from=h200 keeps it"),
    ("{from: h200, memory_capacity_bytes: 1.5e11}", "usd_per_gpu_hour takes the catalog value of 'h200'",
     "--set hardware.from=... changes one key")])
def test_a_catalog_name_over_a_mapping_says_which_fields_it_drops(tmp_path, capsys, value, fate, hint):
    said = _warned(capsys, ["cost", run(tmp_path, PRICED)[1], "--set", f"hardware={value}"])
    assert len(said) == 1 and ": hardware: " in said[0] and fate in said[0] and hint in said[0], said


def test_a_catalog_name_over_a_catalog_name_or_a_kept_field_says_nothing(tmp_path, capsys):
    assert not _warned(capsys, ["cost", run(tmp_path, BASE)[1], "--set", "hardware=h200"])
    path = run(tmp_path, PRICED)[1]
    assert not _warned(capsys, ["cost", path, "--set", "hardware.from=h200"])
    assert not _warned(capsys, ["cost", path, "--set", "hardware=h200", "--set", "hardware.usd_per_gpu_hour=3"])


def test_a_bare_command_named_for_aiconfigurator_is_looked_up_on_path(monkeypatch, tmp_path):
    from mtpsim import peer
    python = tmp_path / "mypython"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(peer, "_importable_here", lambda: False)
    for named, said in (("mypython", f"({python}) cannot import aiconfigurator"),
                        ("nosuchpython", "names nosuchpython, which is no command on $PATH")):
        monkeypatch.setenv(peer.PYTHON_ENV, named)
        peer.unavailable.cache_clear()
        assert said in peer.unavailable()
    peer.unavailable.cache_clear()


def test_a_stopped_run_gives_back_the_folders_it_made_above_its_own(tmp_path, monkeypatch, capsys):
    from mtpsim import run as run_module
    monkeypatch.setattr(run_module, "simulate", _stop)
    monkeypatch.chdir(tmp_path)
    argv = run(tmp_path, BASE)
    (tmp_path / "kept").mkdir()
    for out, gone, stays in (("p/q/r", "p", None), ("kept/q/r", "kept/q", "kept")):
        assert cli.main([*argv[:2], "--out", out]) == 130
        assert not (tmp_path / gone).exists() and (stays is None or (tmp_path / stays).is_dir())
    assert cli.main(argv[:2]) == 130 and not (tmp_path / "runs").exists()


def _stop(*args, **kwargs):
    raise KeyboardInterrupt


def test_a_stopped_profile_gives_back_the_folders_it_made_above_its_own(tmp_path):
    from mtpsim.outputs import staged
    with pytest.raises(KeyboardInterrupt), staged(tmp_path / "a" / "b" / "profile"):
        raise KeyboardInterrupt
    assert not (tmp_path / "a").exists() and tmp_path.is_dir()


SWEPT = BASE.replace("speculative:", "engine: {kind: sglang, version: \"0.5.14\", max_running_requests: 2}\nspeculative:") \
    .replace("[0.8, 0.7, 0.6]}", "[0.8, 0.7, 0.6], spread: 0.5}")


@pytest.mark.parametrize("sweep, key, lost", [
    ("{workload: [{concurrency: 1}, {concurrency: 2}]}", "sweep.workload",
     "num_requests, input_len and output_len go back to their defaults (sweep workload.concurrency to change one key)"),
    ("{engine: [{mixed_batches: false}, {mixed_batches: true}]}", "sweep.engine",
     "version and max_running_requests go back to their defaults"),
    ("{acceptance: [{per_depth: [0.9, 0.7, 0.5]}, {per_depth: [0.5, 0.4, 0.3]}]}", "sweep.acceptance",
     "spread goes back to its default")])
def test_a_sweep_of_whole_sections_says_which_keys_each_value_drops(tmp_path, capsys, sweep, key, lost):
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(["cost", run(tmp_path, SWEPT + f"sweep: {sweep}\n")[1]]) == 0
    said = [w for w in capsys.readouterr().err.splitlines() if "replaces the whole section" in w]
    assert len(said) == 1 and f": {key}: each value" in said[0] and lost in said[0], said


def test_a_sweep_of_whole_sections_that_keeps_every_key_says_nothing(tmp_path, capsys):
    sweep = "{workload: [{concurrency: 1, num_requests: 8, input_len: 64, output_len: 16}, " \
            "{concurrency: 2, num_requests: 8, input_len: 64, output_len: 16}]}"
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(["cost", run(tmp_path, SWEPT + f"sweep: {sweep}\n")[1], "--set", "workload.concurrency=2"]) == 0
    assert "replaces the whole section" not in capsys.readouterr().err


def test_a_batch_load_is_weighed_by_its_requests_not_an_unread_concurrency(tmp_path):
    from mtpsim import scenario
    from mtpsim.heaviness import point_size
    text = BASE.replace("{arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                        "{arrival: batch, num_requests: 200, input_len: 64, output_len: 8000}")
    share, what, _ = point_size(scenario.load(run(tmp_path, text)[1])[0])
    # 200 requests at once under SGLang's running cap of 48: 200 * 8000 / 48 iterations, not 200 * 8000
    assert share < 1 and "about 33,334 decode iterations" in what, what


@pytest.mark.parametrize("rows, line", [
    ("0,64,8,9\n0.5,64,8\n", "line 2"),  # the first data row long: pandas names no line
    ("0,64,8,9\n0.5,64,8,9\n", "line 2"),  # every row long: pandas warns, naming none
    ('0,64,"8\n"\n0.5,64,8,9\n', "line 4")])  # after a cell spanning two lines: pandas counts records
def test_a_trace_row_longer_than_its_header_is_named_by_its_file_line(tmp_path, capsys, rows, line):
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n" + rows)
    text = BASE.replace("{arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                        f"{{arrival: trace, trace: {tmp_path / 't.csv'}}}")
    said = one_line_error(capsys, ["cost", run(tmp_path, text)[1]], line, "4 fields where the header has 3")
    assert "Length of header" not in said


def test_a_table_row_longer_than_its_header_is_named_by_its_file_line(tmp_path):
    from mtpsim.csvfiles import NON_NEGATIVE, read_csv
    from mtpsim.errors import ScenarioError
    (tmp_path / "h.csv").write_text("accepted,count\n0,5,1\n1,3\n")
    with pytest.raises(ScenarioError) as refused:
        read_csv(tmp_path / "h.csv", {"accepted": NON_NEGATIVE, "count": NON_NEGATIVE})
    assert refused.value.key == "line 2" and "3 fields where the header has 2" in refused.value.reason


def test_disaggregated_words_its_kv_room_hint_in_the_calls_arguments():
    import mtpsim
    from mtpsim.errors import ScenarioError
    point = mtpsim.load("scenarios/quickstart.yaml")[0]
    with pytest.raises(ScenarioError) as refused:
        mtpsim.disaggregated(point, {"tp": 1}, {"tp": 8})
    assert "prefill['tp'], prefill['ep']" in refused.value.reason and "disaggregation." not in refused.value.reason


DRAFT = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 5,
         "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288,
         "vocab_size": 151936, "max_position_embeddings": 40960, "torch_dtype": "bfloat16", "block_size": 16,
         "num_target_layers": 36, "dflash_config": {"target_layer_ids": [1, 1]}}


@pytest.mark.parametrize("draft, where, key", [
    ("{hf_config: d/config.json}", "config.json", "block.target_layer_ids.1"),
    ("{hf_config: d/config.json, block: {target_layer_ids: [1, 1]}}", "s.yaml", "speculative.draft.block.target_layer_ids.1")])
def test_a_config_jsons_own_bad_value_is_blamed_on_it_not_the_scenario(tmp_path, capsys, draft, where, key):
    text = (f"name: df\nmodel: qwen3-8b\nhardware: h100-sxm\nspeculative: {{design: block, steps: 3, draft: {draft}}}\n"
            "acceptance: {accept_length: 1.5}\nworkload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n")
    said = one_line_error(capsys, ["cost", run(tmp_path, text, {"d/config.json": json.dumps(DRAFT)})[1]], key, "tapped twice")
    blamed = tmp_path / "d" / "config.json" if where == "config.json" else tmp_path / where
    assert said.startswith(f"mtpsim: error: {blamed}: {key}:"), said


def test_deepseek_v4_layer_types_that_disagree_with_compress_ratios_are_refused(tmp_path, capsys):
    from tests.test_deepseek_v4 import FLASH
    config = {**FLASH, "layer_types": ["sliding_attention"] * 43}
    text = ("name: v4\nmodel: {hf_config: c/config.json}\nhardware: b200\nparallel: {tp: 8}\n"
            "workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n")
    one_line_error(capsys, ["cost", run(tmp_path, text, {"c/config.json": json.dumps(config)})[1]], "layer_types.2",
                   "disagrees with compress_ratios.2")
    agreeing = {**FLASH, "layer_types": [{0: "sliding_attention", 4: "compressed_sparse_attention",
                                          128: "heavily_compressed_attention"}[r] for r in FLASH["compress_ratios"][:43]]}
    errors._warned.clear()
    assert cli.main(["cost", run(tmp_path, text, {"c/config.json": json.dumps(agreeing)})[1]]) == 0


def test_a_named_models_possessive_is_quoted_once(tmp_path, capsys):
    draft = "{from: dflash-qwen3-8b-b16, block: {built_for: llama-3.1-8b}}"  # trained against 36 layers, not 32
    text = BASE.replace("steps: 3, draft: eagle3-llama-3.1-8b}", f"steps: 3, draft: {draft}}}") \
        .replace("speculative: {design: nextn", "speculative: {design: block")
    said = one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "speculative.draft", "llama-3.1-8b's")
    assert "''s" not in said
