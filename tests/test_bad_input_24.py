"""Bad-input campaign 24: DOCSTRING."""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

QUICKSTART = "scenarios/quickstart.yaml"


# ------------------------------------------------------------- 1. a layer's kind reference of another type

@pytest.mark.parametrize("override, key", [
    ("model.mtp.layer.attention=[]", "model.mtp.layer.attention"),
    ("model.mtp.layer.ffn={}", "model.mtp.layer.ffn"),
    ("model.mtp.layer.attention={kind: mla}", "model.mtp.layer.attention"),
    ("model.layers=[{count: 61, attention: [], ffn: moe}]", "model.layers.0.attention"),
    ("model.layers=[{count: 61, attention: mla, ffn: {a: 1}}]", "model.layers.0.ffn"),
    ("model.layers=5", "model.layers"),
    ("model.layers=.nan", "model.layers"),
])
def test_a_layer_naming_its_kind_by_a_list_or_mapping_is_one_line(capsys, override, key):
    """Before: over a catalog model (`from`), re-laid layers or an MTP layer whose attention or ffn
    was a list or a mapping, not a kind's name, was a TypeError traceback (`unhashable type`) in
    catalog._orphans_dropped, and layers given as a number (`'int' object is not iterable`), before
    ModelSpec could say what was wrong."""
    one_line_error(capsys, ["cost", QUICKSTART, "--set", override], key, "valid ")


# ------------------------------------------------------------- 2. a hardware entry's profile of another engine

def test_a_hardware_profile_named_for_an_engine_timing_another_is_warned_of(capsys):
    """Before: `hardware: {from: h200, profiles: {trtllm: h200-sglang}}` under engine trtllm priced
    every op as SGLang runs it without a word, where the same profile given as cost.profile is
    warned of (and one measured on another GPU is refused at either key)."""
    argv = ["cost", QUICKSTART, "--set", "engine.kind=trtllm"]
    warned = warnings_of(capsys, [*argv, "--set", "hardware={from: h200, profiles: {trtllm: h200-sglang}}"])
    assert warned == ["mtpsim: warning: --set: hardware.profiles.trtllm: profile 'h200-sglang' times sglang's "
                      "kernels, and the scenario serves with trtllm (engine.kind): the ops are priced as sglang "
                      "runs them"], warned
    assert warnings_of(capsys, argv) == []  # h200's own trtllm profile
    # the `default` entry is the fallback for an engine the GPU has no profile of: not warned
    assert warnings_of(capsys, [*argv, "--set", "hardware=b300"]) == []


# ------------------------------------------------------------- 3. run's table: a swept key named like a time

def test_a_swept_key_ending_in_s_is_shown_as_written(tmp_path, capsys):
    """Before: run's table took every column ending in `_s` for a time in seconds and showed it in
    ms, the swept keys too: a sweep over workload.trace.end_s [2, 3] read `end_s 2000, 3000`, and
    one over search.requests_per_rate_s holding null was a TypeError traceback."""
    assert cli.main(["run", "scenarios/azure-conv-replay.yaml", "--set", "speculative.design=none", "--set",
                     "sweep={workload.trace.end_s: [2, 3]}", "--jobs", "1", "--out", str(tmp_path / "a")]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("design"))
    assert lines[header].split()[-1] == "end_s", lines[header]
    assert [line.split()[-1] for line in lines[header + 1: header + 3]] == ["2", "3"], lines
    assert "TTFT p50 ms" in lines[header]  # the times measured are still in ms
    assert cli.main(["run", QUICKSTART, "--set", "workload.num_requests=16", "--set",
                     "sweep={search.requests_per_rate_s: [null, 5]}", "--jobs", "1", "--out", str(tmp_path / "b")]) == 0


# ------------------------------------------------------------- 4. line breaks and C1 controls echoed in a message

@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x9b"])
def test_a_unicode_line_break_or_c1_control_in_a_path_or_key_is_escaped(tmp_path, capsys, char):
    """Before: errors.printable escaped C0 controls and DEL only: a scenario path or a --set key
    holding U+2028, U+2029 or NEL (line breaks to str.splitlines and some terminals) was printed
    raw, the error two lines, and a C1 control (CSI, 0x9b) reached the terminal; --out already
    refused the same characters as `a control character or line break` (cli_types.output_path)."""
    missing = tmp_path / f"a{char}b.yaml"
    line = one_line_error(capsys, ["cost", str(missing)], "", "no such file")
    assert char not in line and ("\\u" if ord(char) > 255 else "\\x") in line, line
    line = one_line_error(capsys, ["cost", QUICKSTART, "--set", f"engine.x{char}y=1"], "", "unknown key")
    assert char not in line, line


def test_run_echoes_its_set_flags_on_one_line(tmp_path, capsys):
    """Before: run's `Q: ... (with --set ...)` line echoed a --set value's trailing U+2028 (YAML
    reads it as a line break, so the value is fine) raw, the header over two lines; so did the
    `trace PATH` line under the table, of a trace file so named."""
    assert cli.main(["run", QUICKSTART, "--set", "workload.num_requests=16", "--set", "workload.concurrency=16\u2028",
                     "--jobs", "1", "--out", str(tmp_path / "out")]) == 0
    first = capsys.readouterr().out.split("\n")[0]
    assert first.startswith("Q: ") and first.endswith("workload.concurrency=16\\u2028)"), first
    trace = tmp_path / "a\u2028b.csv"  # and the trace's path under the table
    trace.write_text("arrival_s,input_len,output_len\n0,10,5\n")
    assert cli.main(["run", "scenarios/azure-conv-replay.yaml", "--set", f"workload.trace={{path: '{trace}'}}",
                     "--jobs", "1", "--out", str(tmp_path / "out2")]) == 0
    assert any(line.startswith("trace ") and line.endswith("a\\u2028b.csv (mtpsim): 1 request all at once")
               for line in capsys.readouterr().out.split("\n")), "the trace line"


def test_a_config_json_model_whose_mtp_layer_names_its_kind_by_a_list_is_one_line(tmp_path, capsys):
    """Before: `model: {hf_config: ..., mtp: {layer: {attention: []}}}` was the same TypeError
    traceback in hfconfig._kinds, which works out the kinds the config's layers use."""
    import json

    from tests.test_hfconfig import DEEPSEEK_V3
    (tmp_path / "DeepSeek-V3").mkdir()
    (tmp_path / "DeepSeek-V3" / "config.json").write_text(json.dumps(DEEPSEEK_V3))
    config = tmp_path / "DeepSeek-V3" / "config.json"
    one_line_error(capsys, ["cost", QUICKSTART, "--set", f"model={{hf_config: {config}, mtp: {{layer: {{attention: []}}}}}}"],
                   "model.mtp.layer.attention", "valid string")


# ------------------------------------------------------------- 5. a key path no scenario has: null, and optional sections

@pytest.mark.parametrize("override, key", [
    ("acceptence=null", "acceptence"),
    ("engine.bogus=null", "engine.bogus"),
    ("workload.trace.bogus=null", "workload.trace.bogus"),
    ("sweep.workload.bogus=null", "sweep.workload.bogus"),
    ("sweep.sweep=null", "sweep.sweep"),
    ("model.hiden_size=null", "model.hiden_size"),  # into a catalog reference: its spec's keys
    ("hardware.bogus=null", "hardware.bogus"),
    ("speculative.draft.bogus=null", "speculative.draft.bogus"),
])
def test_a_null_dropping_a_key_no_scenario_has_is_refused(capsys, override, key):
    """Before: `--set acceptence=null` (a slip for acceptance, to drop it) ran with the acceptance
    left in place without a word: null drops a key, there was none to drop, and the unknown key
    was never validated (`--set acceptence=1` is refused); `workload.trace.bogus=null` made an
    empty trace and blamed its missing path."""
    one_line_error(capsys, ["cost", QUICKSTART, "--set", override], key, "unknown key")


@pytest.mark.parametrize("argv", [
    [QUICKSTART, "--set", "engine.mem_fraction=null"],  # a known key the file does not give: its default
    [QUICKSTART, "--set", "sweep=null"],
    [QUICKSTART, "--set", "sweep.workload.concurrency=null"],
    [QUICKSTART, "--set", "model.hidden_size=null"],  # the catalog entry's own value stays
    [QUICKSTART, "--set", "model.attention_kinds.mla.q_lora_rank=null"],
    ["scenarios/block-confidence-qwen3-8b.yaml", "--set", "acceptance.kept_length=null"],  # swept entries lack it
])
def test_a_null_dropping_a_known_key_the_file_lacks_runs(capsys, argv):
    assert cli.main(["cost", *argv]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("sweep, key", [
    ("{workload.trace.bogus: [1, 2]}", "sweep.workload.trace.bogus"),
    ("{acceptance.forced.bogus: [1, 2]}", "sweep.acceptance.forced.bogus"),
    ("{model.hiden_size: [1, 2]}", "sweep.model.hiden_size"),
])
def test_a_sweep_key_inside_an_optional_section_is_checked(capsys, sweep, key):
    """Before: a sweep key was checked against the schema only down to a section that may be
    absent (`trace: TraceFile | None`): past it any name passed, and the point then failed on
    something else (`workload.trace.path: required key is missing`, `acceptance.forced.engine`)."""
    one_line_error(capsys, ["cost", QUICKSTART, "--set", f"sweep={sweep}"], key, "unknown key")


# ------------------------------------------------------------- 6. calibrate replacing a folder that holds more than a profile

def test_calibrate_replaces_a_profile_never_a_folder_of_other_files(tmp_path, monkeypatch, capsys):
    """Before: with MTPSIM_CALIBRATE_REPLACE=1, any folder holding a meta.yaml counted as a
    profile and was replaced whole: the user's notes.txt and src/ beside a meta.yaml of theirs
    were deleted. A profile's own files (meta.yaml, the family tables, holdout/) are still
    replaced."""
    pytest.importorskip("torch")
    from mtpsim.calibration import command
    from tests.test_calibration import args
    from tests.test_calibration import tiny as tiny_fixture
    tiny_fixture.__wrapped__(monkeypatch)  # the tiny grid: seconds
    mine = tmp_path / "project"
    (mine / "src").mkdir(parents=True)
    (mine / "meta.yaml").write_text("project: mine\n")
    (mine / "notes.txt").write_text("mine")
    monkeypatch.setenv("MTPSIM_CALIBRATE_REPLACE", "1")
    assert command.main(args(mine)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a profile" in err[0] and "notes.txt" in err[0], err
    assert (mine / "notes.txt").read_text() == "mine" and (mine / "src").is_dir()
    assert (mine / "meta.yaml").read_text() == "project: mine\n"
    prof = tmp_path / "prof"
    monkeypatch.delenv("MTPSIM_CALIBRATE_REPLACE")
    assert command.main(args(prof)) == 0
    monkeypatch.setenv("MTPSIM_CALIBRATE_REPLACE", "1")
    assert command.main(args(prof)) == 0  # a profile calibrate wrote is replaced


# ------------------------------------------------------------- 7. the model's default draft, refused by the design's checks

@pytest.mark.parametrize("model, design, word", [
    ("{from: qwen3-8b, block_draft: dspark-deepseek-v4-flash}", "{design: block, steps: 3}", "was built for"),
    ("{from: qwen3-8b, block_draft: eagle3-llama-3.1-8b}", "{design: block, steps: 3}", "is not a block drafter"),
    ("{from: gemma-4-26b-a4b, assistant: gemma-4-31b-assistant}", "{design: frozen_kv, steps: 2}", "hidden states"),
    ("{from: gemma-4-26b-a4b, assistant: gemma-4-e2b}", "{design: frozen_kv, steps: 2}", "is not an assistant"),
])
def test_a_default_draft_the_design_refuses_is_named_where_the_model_names_it(tmp_path, capsys, model, design, word):
    """Before: a model's default block_draft (or assistant) that the design's checks refuse (built
    for another target, of another role or width) was blamed on speculative.draft, a key the
    scenario does not give; only an unknown default name was said at model.block_draft."""
    (tmp_path / "s.yaml").write_text(f"name: d\nmodel: {model}\nhardware: h100-sxm\nspeculative: {design}\n"
                                     "acceptance: {per_depth: [0.8, 0.7, 0.6]}\n"
                                     "workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}\n")
    field = "block_draft" if "block" in design else "assistant"
    line = one_line_error(capsys, ["cost", str(tmp_path / "s.yaml")], f"model.{field}", word)
    assert f"the default {field} of model" in line and line.split(": ")[3] == f"model.{field}", line
