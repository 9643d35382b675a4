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
Campaign 43 (its report's holes 1-9 and notes N1-N3), mostly of the drop warnings above:
- a plain path over a mapping (`--set workload.trace=t2.csv` over `{path: t.csv, max_requests: 1}`,
  a spec file over `{from: ..., max_context: ...}`) dropped its keys without a word (1);
- errors the scenario's own overrides over a config.json caused were blamed on the config.json (2);
- keys the value replaced by an alternative (per_depth by accept_length, rate_per_s by a rate
  schedule, mean and std by a uniform range, one catalog source by another, the lengths a trace
  brings) were named as dropped, with hints the schema refuses, and a table of the user's own keys
  (steps_by_batch) was said to go back to defaults it has none of (3-5);
- MTPSIM_CACHE_DIR='~/x' made a folder named `~` here (6); a bare $AICONFIGURATOR_PYTHON that is a
  file here but no command on $PATH was checked here and run from $PATH (7); an open load of hours
  was never weighed as heavy (8); a CSV cell over 128 KiB threw the record walk's lines off (9);
- a stopped run's `--out a/../b/c` left `a` behind (N1); DeepSeek-V4's compress_rates were passed
  over where compress_ratios is given (N2).
Campaign 44, of the fixes above:
- a stopped run with `--out nothere/../b/run1` removed the user's own empty folder `b`, which it
  had taken for one it made (1);
- the drop warning of `--set SECTION=VALUE` came before the error of a value the scenario then
  refused (`hardware=nosuchgpu`): two lines for bad input (2);
- concurrency was taken as unread under a trace load, which cost reads as its batch (6); the
  "changes one key" hints could name a --set the scenario then refused (7): they are gone;
- an error a `role: draft` override caused over a config.json was blamed on the file's `mtp` (10).
Campaign 45, of the fixes above and what lay beside them: every --out check read `nothere/../b`
as absent while `nothere` was (outputs.placed now takes such a `..` off), so a run wrote over the
user's own `b`, a stopped one removed it, and calibrate replaced a folder of the user's (1-3); an
--out through a file came after the held warnings (4), as did cost's own chunk check (5); an
unrelated override beside hf_config moved the blame for the file's own bad value (6); a --set of a
whole section over a key swept inside it was said to set that key, which its value left out (9).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mtpsim import catalog, cli, errors
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_38 import BASE

PRICED = BASE.replace("hardware: h100-sxm", "hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}")


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if "whole section" in line]


@pytest.mark.parametrize("value, fate, hint", [
    ("h200", "usd_per_gpu_hour goes back to what 'h200' gives", " (--set hardware.from=h200 keeps it)"),
    ("{from: h200, memory_capacity_bytes: 1.5e11}", "usd_per_gpu_hour goes back to what 'h200' gives", "gives")])
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
     "num_requests, input_len and output_len go back to their defaults"),
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


TRACED = BASE.replace("{arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                      "{arrival: trace, trace: {path: t.csv, max_requests: 1}}")
TRACE_ROWS = "arrival_s,input_len,output_len\n0,64,8\n0.1,64,8\n"


def _dropped(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [w for w in capsys.readouterr().err.splitlines() if "replaces the whole section" in w]


def test_a_plain_path_over_a_mapping_says_which_keys_it_drops(tmp_path, capsys):
    files = {"t.csv": TRACE_ROWS, "t2.csv": TRACE_ROWS}
    said = _dropped(capsys, ["cost", run(tmp_path, TRACED, files)[1], "--set", "workload.trace=t2.csv"])
    assert len(said) == 1 and "workload.trace: " in said[0] and "max_requests goes back to its default" in said[0]
    said = _dropped(capsys, ["cost", run(tmp_path, TRACED + "sweep: {workload.trace: [t.csv, t2.csv]}\n", files)[1]])
    assert len(said) == 1 and "sweep.workload.trace: each value" in said[0] and "max_requests" in said[0], said
    (tmp_path / "mine.yaml").write_text((Path(catalog.CATALOG_DIR) / "models" / "llama-3.1-8b.yaml").read_text())
    text = BASE.replace("model: llama-3.1-8b", "model: {from: llama-3.1-8b, max_context: 32768}")
    said = _dropped(capsys, ["cost", run(tmp_path, text)[1], "--set", f"model={tmp_path / 'mine.yaml'}"])
    assert len(said) == 1 and "max_context goes back to what" in said[0] and "--set model.from=" in said[0], said


QWEN = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128, "hidden_size": 4096,
        "intermediate_size": 12288, "max_position_embeddings": 40960, "num_attention_heads": 32,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vocab_size": 151936}
PLAIN = "hardware: h100-sxm\nspeculative: {design: none}\nworkload: {concurrency: 1, num_requests: 2, input_len: 64, " \
        "output_len: 8}\n"


@pytest.mark.parametrize("over, key, word", [
    ("block: {block_size: 16, target_layer_ids: [1, 2]}", "model.block.kind", "required key is missing"),
    ("role: draft", "model", "backbone_hidden_size")])
def test_an_error_the_scenarios_overrides_cause_over_a_config_json_is_the_scenarios(tmp_path, capsys, over, key, word):
    text = f"name: q\nmodel: {{hf_config: q/config.json, {over}}}\n" + PLAIN
    said = one_line_error(capsys, ["cost", run(tmp_path, text, {"q/config.json": json.dumps(QWEN)})[1]], key, word)
    assert said.startswith(f"mtpsim: error: {tmp_path / 's.yaml'}: {key}: "), said


@pytest.mark.parametrize("text, value", [
    (BASE, "acceptance={accept_length: 2.5}"),  # another of acceptance's forms
    (BASE.replace("{arrival: closed, concurrency: 4,", "{arrival: poisson, rate_per_s: 5,"),
     "workload={arrival: poisson, rate_schedule: [{until_s: 1, rate_per_s: 5}], num_requests: 8, input_len: 64, "
     "output_len: 16}"),  # a schedule for the rate
    (BASE.replace("input_len: 64", "input_len: {dist: normal, mean: 64, std: 8, max: 128}"),
     "workload.input_len={dist: uniform, min: 10, max: 128}"),  # a range for mean and std
    (BASE.replace("output_len: 16}", "output_len: 16}\nsweep: {acceptance: [{per_depth: [0.9, 0.8, 0.7]}, "
                  "{accept_length: 2.5}]}"), None),
    (BASE.replace("{design: nextn, steps: 3,", "{design: nextn, steps: 3, policy: {steps_by_batch: {1: 3, 8: 2, 32: 1}},"),
     "speculative.policy.steps_by_batch={1: 3, 16: 1}"),  # a table of the user's own keys, replaced whole
    (BASE, "workload={arrival: trace, trace: t.csv, concurrency: 4}")])  # a trace brings its own requests and lengths
def test_a_key_the_value_replaces_by_an_alternative_is_not_said_to_be_dropped(tmp_path, capsys, text, value):
    argv = ["cost", run(tmp_path, text, {"t.csv": TRACE_ROWS})[1]] + (["--set", value] if value else [])
    assert _dropped(capsys, argv) == []


def test_one_model_source_for_another_drops_only_the_fields_it_leaves_out(tmp_path, capsys):
    files = {"q/config.json": json.dumps(QWEN)}
    path = run(tmp_path, "name: q\nmodel: {from: qwen3-8b, max_context: 32768}\n" + PLAIN, files)[1]
    assert _dropped(capsys, ["cost", path, "--set", f"model={{hf_config: {tmp_path / 'q' / 'config.json'}, "
                                                    "max_context: 32768}"]) == []
    said = _dropped(capsys, ["cost", path, "--set", f"model={{hf_config: {tmp_path / 'q' / 'config.json'}}}"])
    assert len(said) == 1 and "max_context goes back to what" in said[0] and "config.json' gives" in said[0], said
    assert "from" not in said[0].split("scenario's")[1].split("goes")[0]


def test_a_cache_folder_given_under_home_is_not_made_here(tmp_path, monkeypatch):
    from mtpsim.costs.profile_cache import cache_dir
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MTPSIM_CACHE_DIR", "~/mtpcache")
    assert cache_dir() == tmp_path / "mtpcache"


def test_a_bare_interpreter_name_here_but_not_on_path_is_said_so(monkeypatch, tmp_path):
    from mtpsim import peer
    (tmp_path / "mypython").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "mypython").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setattr(peer, "_importable_here", lambda: False)
    monkeypatch.setenv(peer.PYTHON_ENV, "mypython")
    peer.unavailable.cache_clear()
    assert "is no command on $PATH (mypython in the current folder is not looked up: write ./mypython)" \
        in peer.unavailable() and peer._external_python() is None
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(peer.PYTHON_ENV, "~/mypython")
    peer.unavailable.cache_clear()
    assert f"({tmp_path / 'mypython'}) cannot import aiconfigurator" in peer.unavailable()
    peer.unavailable.cache_clear()


def test_an_open_load_of_hours_is_weighed_at_its_fewest_iterations(tmp_path):
    from mtpsim import scenario
    from mtpsim.heaviness import point_size
    text = BASE.replace("{arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                        "{arrival: poisson, rate_per_s: 100, num_requests: 60000, input_len: 64, output_len: 100000}")
    share, what, _ = point_size(scenario.load(run(tmp_path, text)[1])[0])
    assert share > 1 and "at least" in what, what  # 6e9 output tokens, at most 48 a decode iteration


def test_a_csv_cell_longer_than_the_csv_modules_limit_keeps_its_rows_lines(tmp_path):
    from mtpsim.csvfiles import CsvRecords
    big = "\n".join(["x" * 60_000] * 3)  # one quoted cell of 180 kB over three lines
    data = f'accepted,count,note\n0,5,"{big}"\n1,3,a\n2,NA,b\n'.encode()
    records = CsvRecords(lambda: io.BytesIO(data))
    assert [records.line(i) for i in range(3)] == [2, 5, 6] and records.cell(2, "count") == "NA"


def test_a_stopped_run_gives_back_a_folder_made_on_a_path_through_dot_dot(tmp_path, monkeypatch):
    from mtpsim.outputs import staged
    with pytest.raises(KeyboardInterrupt), staged(tmp_path / "a" / ".." / "b" / "profile"):
        raise KeyboardInterrupt
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_deepseek_v4_compress_rates_beside_compress_ratios_are_checked(tmp_path, capsys):
    from tests.test_deepseek_v4 import FLASH
    config = {**FLASH, "compress_rates": {"compressed_sparse_attention": 8, "heavily_compressed_attention": 64}}
    text = ("name: v4\nmodel: {hf_config: c/config.json}\nhardware: b200\nparallel: {tp: 8}\n"
            "workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n")
    one_line_error(capsys, ["cost", run(tmp_path, text, {"c/config.json": json.dumps(config)})[1]], "compress_rates",
                   "expected compressed_sparse_attention 4")


def test_a_stopped_run_never_removes_a_folder_the_user_had(tmp_path, monkeypatch):
    from mtpsim import run as run_module
    monkeypatch.setattr(run_module, "simulate", _stop)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b").mkdir()  # the user's own, empty
    assert cli.main([*run(tmp_path, BASE)[:2], "--out", "nothere/../b/run1"]) == 130
    assert (tmp_path / "b").is_dir() and not (tmp_path / "b" / "run1").exists() and not (tmp_path / "nothere").exists()


@pytest.mark.parametrize("value, key", [("hardware=nosuchgpu", "hardware"), ("hardware={from: h200, bogus_key: 1}",
                                                                            "hardware.bogus_key")])
def test_a_drop_warning_never_comes_before_the_error_of_the_value(tmp_path, capsys, value, key):
    one_line_error(capsys, ["cost", run(tmp_path, PRICED)[1], "--set", value], key, "")


def test_an_error_a_role_override_causes_over_a_config_json_is_the_scenarios(tmp_path, capsys):
    from tests.test_hfconfig import DEEPSEEK_V3  # a target with MTP layers, which a draft does not take
    text = "name: q\nmodel: {hf_config: q/config.json, role: draft, backbone_hidden_size: 7168}\n" + \
        PLAIN.replace("h100-sxm", "h200\nparallel: {tp: 8}")
    said = one_line_error(capsys, ["cost", run(tmp_path, text, {"q/config.json": json.dumps(DEEPSEEK_V3)})[1]], "", "")
    assert said.startswith(f"mtpsim: error: {tmp_path / 's.yaml'}: model"), said


def test_an_out_path_through_a_folder_not_yet_made_is_the_folder_it_reaches(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "summary.csv").write_text("the user's\n")
    one_line_error(capsys, [*run(tmp_path, BASE)[:2], "--out", "nothere/../mine"], "", "not empty")
    assert (tmp_path / "mine" / "summary.csv").read_text() == "the user's\n" and not (tmp_path / "nothere").exists()
    from mtpsim.calibration.replace import check_out
    assert "not a profile" in check_out(Path("nothere/../mine"))


def test_a_stopped_run_keeps_the_users_folder_reached_through_a_folder_not_yet_made(tmp_path, monkeypatch):
    from mtpsim import run as run_module
    monkeypatch.setattr(run_module, "simulate", _stop)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    assert cli.main([*run(tmp_path, BASE)[:2], "--out", "nothere/../mine"]) == 130
    assert (tmp_path / "mine").is_dir() and not (tmp_path / "nothere").exists()


@pytest.mark.parametrize("argv", [["run", "--out", "{tmp}/afile/sub", "--set", "workload={concurrency: 2}"],
                                  ["cost", "--set", "engine={chunked_prefill_tokens: 2}", "--prompt", "100000"]])
def test_a_command_refusing_its_flags_says_no_held_warning_first(tmp_path, capsys, argv):
    (tmp_path / "afile").write_text("")
    path = run(tmp_path, BASE.replace("speculative:", "engine: {mixed_batches: false}\nspeculative:"))[1]
    one_line_error(capsys, [argv[0], path, *[a.replace("{tmp}", str(tmp_path)) for a in argv[1:]]], "", "")


def test_an_unrelated_override_beside_a_config_json_moves_no_blame(tmp_path, capsys):
    text = ("name: df\nmodel: qwen3-8b\nhardware: h100-sxm\nspeculative: {design: block, steps: 3, draft: "
            "{hf_config: d/config.json, max_context: 4096}}\nacceptance: {accept_length: 1.5}\n"
            "workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n")
    said = one_line_error(capsys, ["cost", run(tmp_path, text, {"d/config.json": json.dumps(DRAFT)})[1]],
                          "block.target_layer_ids.1", "tapped twice")
    assert said.startswith(f"mtpsim: error: {tmp_path / 'd' / 'config.json'}: "), said


@pytest.mark.parametrize("value, says", [
    ("workload={num_requests: 8, input_len: 64, output_len: 16}",
     "--set workload replaces workload on every point, leaving workload.concurrency at its default over the sweep"),
    ("workload={concurrency: 3, num_requests: 8, input_len: 64, output_len: 16}",
     "--set workload sets workload.concurrency on every point, over the sweep")])
def test_a_section_set_over_a_key_swept_inside_it_says_what_it_does_to_the_key(tmp_path, capsys, value, says):
    errors._warned.clear()
    capsys.readouterr()
    path = run(tmp_path, BASE + "sweep: {workload.concurrency: [1, 2]}\n")[1]
    assert cli.main(["cost", path, "--set", value]) == 0
    said = [w for w in capsys.readouterr().err.splitlines() if "sweep.workload.concurrency: " in w]
    assert len(said) == 1 and says in said[0], said
