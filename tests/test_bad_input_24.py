"""Bad-input campaign 24: what reaches the code before the schema does (raw layer references,
null overrides, sweep keys), what is echoed back (line breaks past C0, swept keys in run's
table), user files a command replaces (calibrate), and keys two ways to say one thing (a hardware
entry's profiles beside cost.profile, a model's default draft beside speculative.draft).

Probed, and already fine (one line naming the key, or a warning, or the right numbers): every
scenario key through --set at 0, -1, 1e30, 0.5, text, null, [], {}, .inf, .nan, "1" and 4097
on the quickstart, block-confidence and GB200 disaggregated scenarios (4,104 cases, cost); every
scalar of 11 catalog models, 4 GPUs and 2 block drafters through `{from: NAME}` overrides at 12
values (6,648); every field of 13 config.json files (Llama, DeepSeek-V3, GLM-4.5, Qwen3-Next,
MiMo, Gemma 4, Step 3.5, DeepSeek-V4 / DSpark / V4.1) at nested odd values ([[1]], [{}], {"a":
[]}, [null], [1.5], [true]: 4,334) and config.json models' overrides; 1,000 random cost / run,
150 recommend and 80 search combinations of valid values; the 79 committed scenarios under 15
engine and workload changes for cost and run (2,370); sweeps over every key of lists of lists,
mappings, nulls and NaN; engine.version 0.5.12.post1 / 0.5.012 / padded / +cu124 / rc4 / 0.5.1e1
and another engine's release, mem_fraction 0, 1.2, "90%", 90, 1 and 1e-4; trees at the lifted
cap (steps 64, topk 64, 258,113 draft tokens: 1 s); trace CSVs header-only, CRLF, lone CR, BOM,
unsorted, at one instant, with zero lengths, a late first row, max_input_len 1, an empty window,
quoted newlines, `;` or tabs, trailing commas, comments, `1,000`, 0x10, 1_000, true, NA, empty
cells, and Mooncake hash_ids under max_input_len; histograms header-only, CRLF, BOM, all zero,
past the steps, repeated, negative, fractional, unsorted, swapped or huge; per_depth, cumulative
and per_depth_topk of 900,000 entries (the value limit); verify's hidden_scale 1e-9 and 1e-300,
num_experts 1 and 1024, num_layers 256; block taps unsorted or all 36 layers, built_for and
target_num_layers of another target; kept_by controller with and without kept_length, beside a
policy, at one step; kept_length [1, 0], [0, 0, 0, 1], 1e-300 entries, beside
accept_length_by_steps or spread 0.9; disaggregation with dp_routing, a prefix cache, closed and
batch loads, policies, kept lengths, two-batch overlap, a running cap, a shared prefix, gpus,
link free, vLLM and TensorRT-LLM; seed 2**63-1 with --seeds 2 or swept; Poisson at 1e-300, 1e-9
and 1e6 req/s; chunked_prefill_tokens 1 under 100,000-token prompts (warned as minutes a run);
search lists with repeats, 20,000 loads (refused past the point limit); steps_by_batch,
peak_flops, accept_length_by_steps, dtypes and attention_kinds keys of another type; user
catalog entries with layers 5 or a list as a kind (listed invalid); model {from: [x]}, {from:
null}, {hf_config: [1]}, a name, block_draft or assistant of another type; U+202E and ESC in a
path or key (escaped); a length distribution's unread mean or std, min past max, std 0.

Found and fixed:
- over a catalog model or a config.json, layers re-laid or an MTP layer naming its kind by a list
  or a mapping, or layers given as a number, was a TypeError traceback (`unhashable type`, `'int'
  object is not iterable`) in catalog._orphans_dropped and hfconfig._kinds: which kind a raw
  reference names has one home, layer_specs.named_kind, and ModelSpec says what is wrong;
- `hardware: {from: h200, profiles: {trtllm: h200-sglang}}` under engine trtllm priced every op as
  SGLang runs it without a word, where cost.profile naming the same is warned of: warned at the
  key that names it (pricing_choice.resolve_pricing);
- run's table took every column ending in `_s` for a time and showed it in ms, swept keys too: a
  sweep over workload.trace.end_s [2, 3] read 2000 and 3000, and one over
  search.requests_per_rate_s holding null was a TypeError traceback (run_table.format_table);
- errors.printable escaped C0 controls and DEL only: a scenario path or --set key holding U+2028,
  U+2029 or NEL printed the error over two lines, and a C1 control (CSI) reached the terminal,
  where --out already refused them; LINE_BREAKING moves to errors.py, its one home, and run's
  `Q: ... (with --set ...)` and `trace PATH` lines escape what they echo;
- `--set acceptence=null` (to drop acceptance) dropped nothing without a word, where
  `acceptence=1` is refused: a null naming a key the scenario lacks and no scenario has is
  refused (overrides.apply_sets, with the loader's schema.known_key), into a catalog reference
  too (model.hiden_size=null), and a null no longer makes empty sections on its way
  (workload.trace.bogus=null blamed the trace's missing path); known_key reads through optional
  sections, so a sweep over workload.trace.bogus or acceptance.forced.bogus is an unknown key,
  not `workload.trace.path: required key is missing`;
- calibrate under MTPSIM_CALIBRATE_REPLACE=1 took any folder holding a meta.yaml for a profile and
  replaced it whole: the user's notes.txt and src/ beside their own meta.yaml were deleted; a
  folder holding anything a profile does not is refused, naming it;
- a model's default block_draft or assistant that the design's checks refuse (built for another
  target, of another width or role) was blamed on speculative.draft, which the scenario does not
  give: named at model.block_draft / model.assistant, as an unknown default already was
  (resolve.at_default_draft).

Noticed, and left alone: a --set of a swept key stops it being swept and its swept values are
neither run nor checked (`--set workload.num_requests=16` beside `sweep: {workload.num_requests:
[x, {a: 1}]}` runs): by design, sweep.py's `--set wins over the sweep` (said since campaign 25); an engine release that
predates a model's architecture (DeepSeek-V4 on SGLang 0.4.0, vLLM 0.7.0) is priced without a
word: the engine files say which releases lack a speculative method, not which lack a model,
and that needs each engine's first supporting release, cited; hardware.profiles.default naming
another engine's profile (b300 under trtllm prices with b300-sglang) is the designed fallback,
named in the header's `priced by`; search's point-limit error names the file's `search` when
--set or --concurrency gave the loads; engine.prefix_cache.max_tokens below the shared prefix
hits nothing without a word (the requests' own blocks evict it: a modelling call); the `wrote
PATH` lines cli.py prints are not escaped (cli.py is being edited elsewhere; --out already
refuses line breaks).
"""
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
    assert cli.main(["cost", *argv]) == 0
    capsys.readouterr()
    # a null through a value that is no mapping is refused as any --set through it is
    one_line_error(capsys, ["cost", QUICKSTART, "--set", "workload.input_len.max=null"], "workload.input_len.max",
                   "workload.input_len is not a mapping")


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
