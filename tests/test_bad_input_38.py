"""Bad-input campaign 38 (~1,000 probes of the commands, catalog entries, files and the Python
API). The holes it found, each tested below:
- the idle-replica warning was dropped for any sweep of the load or the layout, even one that left
  the same replicas idle at every point (H1);
- `mtpsim plot` drew an accept_counts.csv a run of the scenario could not have written (H2);
- an open load of many short prompts was called prefill-bound and blamed on workload.input_len (H3);
- warnings about values a sweep gave named the file's plain key, which the file does not hold (H4);
- `--set model.layers.0.count=16` over a catalog entry gave pydantic's words about a dict (H5);
- an empty YAML merge (`<<: {}`) was refused as a tag the user never wrote (H6);
- the scenario file named as a model or hardware entry was read as one (H7).
"""
from __future__ import annotations

import pandas as pd
import pytest

from mtpsim import cli, errors
from tests.test_bad_input import one_line_error, run

BASE = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
        "speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}\n"
        "acceptance: {per_depth: [0.8, 0.7, 0.6]}\n"
        "workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}\n")


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


@pytest.mark.parametrize("sweep, key", [
    ("workload.input_len: [64, 128]", ": parallel.dp: 8 replicas"),          # the same replicas idle at both
    ("parallel.tp: [1, 2]", ": parallel.dp: 8 replicas"),
    ("parallel.dp: [8, 16]", ": sweep.parallel.dp: parallel.dp at every point"),
])
def test_idle_replicas_at_every_point_of_a_sweep_are_said(tmp_path, capsys, sweep, key):
    """Before: silent for any sweep of workload, parallel or disaggregation keys."""
    text = BASE.replace("hardware: h100-sxm\n", "hardware: h100-sxm\nparallel: {dp: 8}\n") + f"sweep: {{{sweep}}}\n"
    said = _warned(capsys, run(tmp_path, text))
    assert any(key in line and "never serve one" in line for line in said), said


def test_a_ladder_of_loads_says_nothing_of_its_low_rungs(tmp_path, capsys):
    text = BASE.replace("hardware: h100-sxm\n", "hardware: h100-sxm\nparallel: {dp: 8}\n").replace(
        "num_requests: 8", "num_requests: 16") + "sweep: {workload.concurrency: [1, 2, 4, 8]}\n"
    assert not any("never serve" in line for line in _warned(capsys, run(tmp_path, text)))


def test_plot_refuses_more_drafts_accepted_than_the_point_drafts(tmp_path, capsys):
    """Before: a row of 9 accepted drafts in a run of 3 steps was drawn."""
    argv = run(tmp_path, BASE)
    assert cli.main(argv) == 0
    table = tmp_path / "out" / "accept_counts.csv"
    counts = pd.read_csv(table)
    counts.loc[0, "accepted"] = 9
    counts.to_csv(table, index=False)
    capsys.readouterr()
    one_line_error(capsys, ["plot", str(tmp_path / "out")], "accepted", "9 drafts accepted")


def test_an_open_load_of_short_prompts_is_not_prefill_bound():
    """Before: an open load counted no decode iterations, so any prompts made it 'prefill-bound'."""
    from mtpsim.heaviness import heavy
    assert not heavy(100_000, 64, None, chunks_per_prompt=256 / 8192).prefill_bound
    assert heavy(100_000, 2, None, chunks_per_prompt=4.0).prefill_bound  # more passes a prompt than output tokens


def test_a_heavy_open_load_blames_its_request_count(tmp_path, capsys):
    """Before: `s.yaml: workload.input_len: ... a larger engine.chunked_prefill_tokens` for 256-token prompts."""
    from mtpsim import scenario as sc
    from mtpsim.run import heavy_runs
    sets = ["workload.arrival=poisson", "workload.rate_per_s=100", "workload.num_requests=100000"]
    points = sc.load(run(tmp_path, BASE)[1], sets)
    errors._warned.clear()
    capsys.readouterr()
    heavy_runs(points)  # what `run` says up front, without the minutes of simulation
    said = capsys.readouterr().err
    assert "--set: workload.num_requests: a run of this load simulates 100,000 requests" in said, said
    assert "chunked_prefill_tokens" not in said, said


@pytest.mark.parametrize("argv_tail, key", [
    (["--set", "sweep={acceptance.per_depth: [[0, 0, 0]]}"], "--set: sweep.acceptance.per_depth: no draft past"),
    (["--set", "sweep={model.dtypes.kv_cache: [fp4]}"], "--set: sweep.model.dtypes.kv_cache: "),
])
def test_a_swept_value_is_blamed_on_the_sweep(tmp_path, capsys, argv_tail, key):
    """Before: `s.yaml: acceptance.per_depth: ...`, a key the file does not hold."""
    said = _warned(capsys, run(tmp_path, BASE) + argv_tail)
    assert any(line.startswith(f"mtpsim: warning: {key}") for line in said), said


def test_cost_blames_a_swept_seed_on_the_sweep(tmp_path, capsys):
    scenario = run(tmp_path, BASE)[1]
    said = _warned(capsys, ["cost", scenario, "--set", "sweep={seed: [1, 2]}"])
    assert any(line.startswith("mtpsim: warning: --set: sweep.seed: cost prices one iteration") for line in said), said


@pytest.mark.parametrize("setting, key", [("model.layers.0.count=16", "model.layers"),
                                          ("model.aliases.0=x", "model.aliases"),
                                          ("sweep={speculative.draft.layers.0.count: [1, 2]}", "sweep")])
def test_a_catalog_entrys_list_item_by_index_is_set_whole(tmp_path, capsys, setting, key):
    """Before: `Input should be a valid list (got {0: {'count': 16}})`."""
    one_line_error(capsys, run(tmp_path, BASE) + ["--set", setting], key, "is a list, set whole")


@pytest.mark.parametrize("merge", ["<<: {}", "<<: []", "<<: [{}]"])
def test_an_empty_merge_merges_nothing(tmp_path, capsys, merge):
    """Before: 'YAML tag not allowed: ... tag:yaml.org,2002:merge' with a line number only."""
    text = BASE.replace("output_len: 16}", f"output_len: 16, {merge}}}")
    assert cli.main(["cost", run(tmp_path, text)[1]]) == 0


@pytest.mark.parametrize("key", ["model", "hardware"])
def test_the_scenario_named_as_an_entry_is_refused_as_a_scenario(tmp_path, capsys, key):
    """Before: `--set: model: unknown key (and the required key hidden_size is missing)`."""
    scenario = run(tmp_path, BASE)[1]
    one_line_error(capsys, ["cost", scenario, "--set", f"{key}={scenario}"], key, "is a scenario file, not a")


def test_design_none_crossed_with_steps_is_one_run_said_once(tmp_path, capsys):
    """Before: two identical `none` rows and no word (campaign 38's smaller notes)."""
    text = BASE + "sweep: {speculative.design: [none, nextn], speculative.steps: [1, 2]}\n"
    said = _warned(capsys, run(tmp_path, text))
    assert any(": sweep: points 0 and 1 run design none" in line for line in said), said
    (tmp_path / "b").mkdir()
    said = _warned(capsys, run(tmp_path / "b", BASE + "sweep: {speculative.design: [none, nextn]}\n"))
    assert not any("run design none" in line for line in said), said
