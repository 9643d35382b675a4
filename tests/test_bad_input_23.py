"""Bad-input campaign 23: the leads campaign 22 left (steps_by_batch under dp, a named curve of
another model, model.block_draft unchecked, `cost --set seeds=5`, YAML 1.2 octal), a command's own
flags beside --set, data beside a scenario read from elsewhere, tree budgets, and seeds' intervals.

Probed, and already fine (one line naming the key, or a warning, or the right numbers): a
steps_by_batch key past a replica's share of the users under dp (not warned, rightly: round-robin
routing piled 11 of 16 closed-loop users on one of 2 replicas); a named acceptance curve of another
model (the curves ship for models the catalog lacks: a proxy is meant); workload rate_schedule out
of order, beside rate_per_s or under a closed loop, shared_prefix past every prompt or at fraction
0, a lognormal / normal mean past max, num_requests under concurrency, output_len 1, input_len past
the context, a trace / rate / num_requests / input_len the arrival does not read, a batch load's
concurrency; FP4 KV before Blackwell, moe_skew / routing_locality / ep_imbalance on a dense model
or past ep, eplb and two_batch_overlap without wide EP, engram_tables and bounded_replay on
DeepSeek-V3, dp_routing at dp 1; parallel.gpus_per_node 3 / 4 / 16 against tp and the hardware's
NVLink domain, no inter-node network; tp not dividing heads, ep on a dense model; topk 4 without
per_depth_topk, steps / policy under design none, a longer per_depth than the steps, an
accept_length_by_steps with a gap or short of the steps, accept_length past steps + 1, a forced
rule of another engine; EAGLE-3 drafts of another vocabulary or width; sweeps over name and
question (warned the same run); `--address` without Ray, `--jobs 0`, RAY_ADDRESS unused;
MTPSIM_CATALOG with empty parts, a relative or missing folder, a folder twice; `--set` keys with
spaces, a comment, an empty part, a capital; `-`, /dev/stdin (a file and a pipe), a folder and a
blank as the scenario; calibrate --visits 0 / -3 / 10**9, --device cuda without one, --system /
--version / --archive without --from, an unknown --system; recommend under dp (keys per replica)
and past the running cap (bound `cap 64`); search under dp; verify greedy and trees on CPU;
`run --trace` of 4,000 requests (4 s, bounded files); a user catalog model naming an unknown
block drafter in `mtpsim models` (listed as written).

Found and fixed:
- a key a command's flag gives, given another value by --set too (`run --seeds 2 --set seeds=5`,
  `recommend` the same, `search --gpus 8 --set search.gpus=16`, `--concurrency 4 --set
  search.rates=[1]`, `--disagg --set search.disaggregated=false`, `--topk 1,2 --set search.topk=[1]`):
  the flag won without a word (2 seeds run, 8 GPUs searched): refused naming --set
  (overrides.flags_over_sets);
- `cost --set seeds=5` printed its tables without a word, where verify says seeds is run's: warned
  (cost_command);
- model.block_draft (or model.assistant) naming no catalog entry or file, under a design that does
  not read it, ran without a word until a switch to block (or frozen_kv) refused it: warned where
  written, the scenario or the user's catalog file (resolve._unread_default_drafts);
- `cost: {profile: ./myprof}` was read from the current folder only, where every other path is
  also read beside the scenario (`no profile folder './myprof'` of a folder beside the file), and a
  link to a scenario found none of the data shipped beside the file it names (sweep._anchor_paths);
- a path read beside the scenario went into scenario.resolved.yaml relative to the folder the run
  started in: `plot` from another folder warned `no such file` and skipped the memory plot (now
  absolute);
- a tree whose draft_tokens cannot reach speculative.steps (steps 3, topk 4, draft_tokens 2) was
  blamed on acceptance.per_depth_topk (`no draft past depth 1 is ever accepted`): warned at
  speculative.draft_tokens (speculation_advice.dead_drafts);
- over seeds, run's table printed a value no seed has as `nan ± 0` and agreeing seeds' speedup as
  `0.978 ± 3.38e-16` (run_table);
- YAML 1.2's octal `0o20` (16 to a 1.2 reader) went on as the text '0o20': `Input should be a valid
  integer` where a number goes, a name without a word; refused as YAML 1.1's number spellings are
  (yamlfiles._OCTAL_12).

Noticed, and left alone: `mtpsim models` lists a user entry's unknown block drafter as written
(a run warns of it); parallel.gpus_per_node 6 under tp 4 x dp 3 lays replicas across node
boundaries as if each sat inside one; cost.profile's name lookup (mtpsim/costs/profile_paths.py)
is untouched: a bare name is still a profile's name, and only a path is read beside the scenario.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

QUICKSTART = "scenarios/quickstart.yaml"
SEARCH = "scenarios/search/deepseek-v3-8xh200.yaml"


# ------------------------------------------------------------- 1. a command's flag and --set giving one key

@pytest.mark.parametrize("argv, key, word", [
    (["run", QUICKSTART, "--seeds", "2", "--set", "seeds=3"], "seeds", "--seeds 2 sets it over that"),
    (["recommend", QUICKSTART, "--seeds", "2", "--set", "seeds=3"], "seeds", "--seeds 2 sets it over that"),
    (["search", SEARCH, "--gpus", "8", "--set", "search.gpus=16"], "search.gpus", "--gpus 8 sets it over that"),
    (["search", SEARCH, "--gpus", "8", "--set", "search={gpus: 16}"], "search", "gives search.gpus 16"),
    (["search", SEARCH, "--gpus", "8", "--concurrency", "4", "--set", "search.rates=[1, 2]"], "search.rates",
     "--concurrency 4 drops it"),
    (["search", SEARCH, "--gpus", "8", "--disagg", "--set", "search.disaggregated=false"], "search.disaggregated",
     "--disagg sets it over that"),
    (["search", SEARCH, "--gpus", "8", "--topk", "1,2", "--set", "search.topk=[1]"], "search.topk",
     "--topk 1,2 sets it over that"),
    (["search", SEARCH, "--gpus", "8", "--seeds", "2", "--set", "seeds=4"], "seeds", "--seeds 2 sets it over that"),
])
def test_a_flag_and_set_giving_one_key_two_values_is_refused(tmp_path, capsys, argv, key, word):
    """Before: the flag won over --set without a word: `run --seeds 2 --set seeds=3` ran 2 seeds,
    `search --gpus 8 --set search.gpus=16` searched 8 GPUs."""
    line = one_line_error(capsys, [*argv, "--out", str(tmp_path / "out")], key, word)
    assert line.startswith("mtpsim: error: --set: "), line
    assert not (tmp_path / "out").exists()


def test_a_flag_and_set_giving_one_key_the_same_value_runs(tmp_path, capsys):
    """Both saying the same is no conflict."""
    warnings_of(capsys, ["run", QUICKSTART, "--seeds", "2", "--set", "seeds=2", "--set", "workload.num_requests=16",
                         "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "summary.csv").is_file()


# ------------------------------------------------------------- 2. cost and the replicates it does not run

def test_cost_says_it_runs_no_replicates(capsys):
    """Before: `cost --set seeds=5` printed its tables without a word, where verify says seeds is
    `mtpsim run`'s."""
    warned = warnings_of(capsys, ["cost", QUICKSTART, "--set", "seeds=5"])
    assert warned == ["mtpsim: warning: --set: seeds: cost prices one iteration, drawing nothing: the 5 replicates "
                      "seeds asks for are `mtpsim run`'s"], warned
    assert warnings_of(capsys, ["cost", QUICKSTART]) == []


# ------------------------------------------------------------- 3. a model's default drafts, where nothing reads them

def test_a_default_block_drafter_naming_nothing_is_warned_of(capsys):
    """Before: model.block_draft naming no catalog entry ran nextn without a word, and only a switch
    to design block said the name was unknown."""
    warned = warnings_of(capsys, ["cost", QUICKSTART, "--set", "model.block_draft=dflash-qwen3-8b-b61"])
    assert len(warned) == 1, warned
    assert warned[0].startswith("mtpsim: warning: --set: model.block_draft: unknown models catalog name "
                                "'dflash-qwen3-8b-b61' (did you mean dflash-qwen3-8b-b16"), warned
    assert warned[0].endswith("no design this scenario runs reads it, and design block would refuse it"), warned
    assert warnings_of(capsys, ["cost", QUICKSTART, "--set", "model.block_draft=dflash-qwen3-8b-b16"]) == []


def test_a_default_assistant_naming_no_file_is_warned_of_where_written(tmp_path, capsys):
    """Before: an inline model's assistant naming a file that is not there ran without a word."""
    text = Path(QUICKSTART).read_text().replace("model: deepseek-v3", "model: {from: deepseek-v3, assistant: ./gone.yaml}")
    (tmp_path / "s.yaml").write_text(text)
    warned = warnings_of(capsys, ["run", str(tmp_path / "s.yaml"), "--set", "workload.num_requests=16",
                                  "--out", str(tmp_path / "out")])
    assert warned == [f"mtpsim: warning: {tmp_path / 's.yaml'}: model.assistant: models file './gone.yaml': no such "
                      "file: no design this scenario runs reads it, and design frozen_kv would refuse it"], warned


# ------------------------------------------------------------- 4. data beside a scenario, read from elsewhere

def test_a_profile_folder_beside_the_scenario_is_read_from_any_folder(tmp_path, capsys):
    """Before: `cost: {profile: ./myprof}` was read from the current folder alone, where traces,
    histograms, model files and config.json files are also read beside the scenario: run from
    elsewhere it was `no profile folder './myprof'` of a folder right beside the file."""
    (tmp_path / "myprof").symlink_to(Path("mtpsim/data/profiles/h200-sglang").resolve())
    text = Path(QUICKSTART).read_text() + "cost: {model: calibrated, profile: ./myprof}\n"
    (tmp_path / "s.yaml").write_text(text)
    assert cli.main(["cost", str(tmp_path / "s.yaml")]) == 0
    assert "priced by calibrated:myprof" in capsys.readouterr().out
    (tmp_path / "t.yaml").write_text(text.replace("./myprof", "./gone"))
    one_line_error(capsys, ["cost", str(tmp_path / "t.yaml")], "cost.profile", "no profile folder './gone'")


def test_a_linked_scenario_reads_the_data_beside_the_file_it_links_to(tmp_path, capsys):
    """Before: a link to scenarios/azure-conv-replay.yaml was `workload.trace.path: no such file:
    traces/...` of the trace shipped beside the file the link names."""
    (tmp_path / "s.yaml").symlink_to(Path("scenarios/azure-conv-replay.yaml").resolve())
    assert cli.main(["cost", str(tmp_path / "s.yaml")]) == 0
    assert "context 928" in capsys.readouterr().out


# ------------------------------------------------------------- 5. a tree too small for its steps

@pytest.mark.parametrize("tokens, drafts", [(2, "drafts 2..3 are"), (3, "draft 3 is")])
def test_a_tree_budget_under_the_steps_is_blamed_on_draft_tokens(capsys, tokens, drafts):
    """Before: steps 3 under topk 4 with draft_tokens 2 was warned of as `acceptance.per_depth_topk:
    no draft past depth 1 is ever accepted`, blaming measured acceptance for the tree's budget."""
    spec = f"speculative={{design: nextn, steps: 3, topk: 4, draft_tokens: {tokens}, draft: eagle3-llama-3.1-8b}}"
    warned = warnings_of(capsys, ["cost", "scenarios/tree-vs-chain.yaml", "--set", spec, "--set",
                                  "workload={concurrency: 1, num_requests: 12, input_len: 256, output_len: 128}"])
    # (the file sweeps `speculative` and `workload`, which the --sets take over: said apart, test_bad_input_25.py)
    assert [w for w in warned if ": sweep." not in w] == [
        f"mtpsim: warning: --set: speculative.draft_tokens: {tokens} verified tokens (the root and "
        f"{tokens - 1} of the tree's) hold no path deeper than {tokens - 1}: {drafts} never verified "
        "of speculative.steps 3, and only cost time"], warned


# ------------------------------------------------------------- 6. intervals of values no seed has

def test_seeds_print_no_interval_of_a_missing_value(tmp_path, capsys):
    """Before: over 3 seeds of one-token outputs the per-user speed read `nan ± 0` (an interval of
    a value no run has) and the speedup `0.978 ± 3.38e-16` (rounding as a spread)."""
    assert cli.main(["run", QUICKSTART, "--seeds", "3", "--set", "workload.output_len=1",
                     "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "nan ±" not in out and "e-16" not in out, out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("nextn"))
    assert " NaN " in row and "0.978 ± 0 " in row, row


def test_a_run_folder_plots_from_another_folder_with_the_trace_beside_its_scenario(tmp_path, capsys, monkeypatch):
    """Before: a trace read beside the scenario went into scenario.resolved.yaml as a path from
    the folder the run started in (scenarios/traces/...): `plot` from any other folder warned
    `no such file` and skipped the memory plot."""
    out = tmp_path / "out"
    assert cli.main(["run", "scenarios/azure-conv-replay.yaml", "--set", "sweep=null", "--set",
                     "workload.trace.end_s=10", "--out", str(out)]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["plot", str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err, captured.err
    assert (out / "memory.png").is_file()


# ------------------------------------------------------------- 7. YAML 1.2's octal

@pytest.mark.parametrize("old, new, key", [
    ("concurrency: 16", "concurrency: 0o20", "workload.concurrency"),
    ("name: quickstart", "name: 0o20", "name"),
])
def test_a_yaml_12_octal_is_refused_as_the_other_spellings_are(tmp_path, capsys, old, new, key):
    """Before: `0o20` (16 to a YAML 1.2 reader) was the text '0o20' to YAML 1.1: `Input should be a
    valid integer (got '0o20')` where a number goes, and a name of '0o20' without a word, where
    `010`, `0x10` and `1_0` are refused as number spellings that read as another value."""
    (tmp_path / "s.yaml").write_text(Path(QUICKSTART).read_text().replace(old, new))
    one_line_error(capsys, ["cost", str(tmp_path / "s.yaml")], key, "'0o20' is a YAML 1.2 octal number")
    (tmp_path / "t.yaml").write_text(Path(QUICKSTART).read_text().replace("name: quickstart", "name: '0o20'"))
    assert cli.main(["cost", str(tmp_path / "t.yaml")]) == 0
