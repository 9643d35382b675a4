"""Bad-input campaign 39 (~330 probes, most of them of the previous commits' changes). The holes
it found, each tested below:
- verify priced an attention kind's input_size-wide projections at full width while its loop
  built them from the hidden width (H1);
- a sweep's "at every point" warnings compared a key alone (a draft ignored under none at one
  point, trained for another target at the next) or words alone (an idle prefill pool at one
  point, an idle decode pool at the next) (H2, H3); the idle-replica warning was lost where only
  its numbers differed (H5);
- recommend and search warned of the scenario's idle replicas, though they run loads of their own (H4);
- an open load of prompts a little over one chunk was blamed on the chunk (H6);
- verify's other-deployment warning named a swept key as the file's (H7);
- a scenario was told from a spec file by keys a scenario need not have (H8).
"""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_38 import BASE


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


def test_verify_refuses_projections_wider_than_the_hidden_states(tmp_path, capsys):
    text = ("name: v\nmodel: {from: qwen3-8b, attention_kinds: {gqa: {kind: gqa, num_heads: 32, num_kv_heads: 8, "
            "head_dim: 128, input_size: 8192}}}\nhardware: cpu\nspeculative: {design: none}\n"
            "workload: {arrival: batch, concurrency: 2, num_requests: 2, input_len: 64, output_len: 16}\n"
            "verify: {num_layers: 2, hidden_scale: 0.0625, device: cpu, iterations: 3, warmup_iterations: 1}\n")
    path = tmp_path / "v.yaml"
    path.write_text(text)
    one_line_error(capsys, ["verify", str(path), "--out", str(tmp_path / "o")], "model", "input_size-wide")


def test_a_draft_trained_for_another_target_is_said_where_it_runs(tmp_path, capsys):
    """Before: 'speculative.draft at every point, as at the first: design none ... ignored', and
    point 1's own warning lost."""
    argv = run(tmp_path, BASE.replace("model: llama-3.1-8b", "model: deepseek-r1-distill-llama-8b")) + [
        "--set", "sweep={speculative: [{design: none, draft: eagle3-llama-3.1-8b}, "
                 "{design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}]}"]
    said = _warned(capsys, argv)
    assert not any("as at the first" in line for line in said), said
    assert any("was trained on the hidden states of llama-3.1-8b" in line for line in said), said


def test_an_idle_pool_that_moves_is_not_said_at_every_point(tmp_path, capsys):
    text = BASE.replace("concurrency: 4, num_requests: 8", "concurrency: 2, num_requests: 8") + (
        "disaggregation: {prefill: {replicas: 1, tp: 1}, decode: {replicas: 4, tp: 1}}\n")
    argv = run(tmp_path, text) + ["--set", "sweep={disaggregation: [{prefill: {replicas: 4, tp: 1}, decode: "
                                  "{replicas: 1, tp: 1}}, {prefill: {replicas: 1, tp: 1}, decode: {replicas: 4, tp: 1}}]}"]
    said = _warned(capsys, argv)
    assert not any("(at every point)" in line or "as at the first" in line for line in said), said


def test_idle_replicas_in_other_numbers_at_every_point_are_said(tmp_path, capsys):
    text = BASE.replace("hardware: h100-sxm\n", "hardware: h100-sxm\nparallel: {dp: 8}\n") + (
        "sweep: {workload.concurrency: [1, 2]}\n")
    said = _warned(capsys, run(tmp_path, text))
    assert any(": parallel.dp: at every point, as at the first: 8 replicas for at most 1 request" in line
               for line in said), said


def test_recommend_says_nothing_of_the_scenarios_idle_replicas(tmp_path, capsys):
    scenario = run(tmp_path, BASE)[1]
    said = _warned(capsys, ["recommend", scenario, "--set", "parallel.dp=8", "--batch", "16", "--max-steps", "1",
                            "--seeds", "1", "--out", str(tmp_path / "r")])
    assert not any("never serve" in line for line in said), said


def test_an_open_load_a_little_over_one_chunk_a_prompt_is_not_prefill_bound():
    from mtpsim.heaviness import heavy
    assert not heavy(100_000, 64, None, chunks_per_prompt=1.17).prefill_bound
    assert heavy(100_000, 4, None, chunks_per_prompt=16.0).prefill_bound


def test_verify_names_a_swept_layout_as_the_sweeps(tmp_path, capsys, monkeypatch):
    import pandas as pd

    from mtpsim.verify import command
    table = pd.DataFrame({"kind": ["tps"], "predicted": [1.0], "measured": [1.0], "rel_error": [0.0]})
    monkeypatch.setattr(command, "verify_point", lambda s, *args: table)
    monkeypatch.setattr(command, "plot", lambda table, path: path.write_text(""))
    monkeypatch.setattr(command, "machine_level", lambda device, profile: None)
    path = tmp_path / "v.yaml"
    path.write_text("name: v\nmodel: qwen3-8b\nhardware: cpu\nspeculative: {design: none}\n"
                    "workload: {arrival: batch, concurrency: 2, num_requests: 2, input_len: 64, output_len: 16}\n"
                    "verify: {num_layers: 2, hidden_scale: 0.0625, device: cpu, iterations: 3, warmup_iterations: 1}\n"
                    "sweep: {parallel.dp: [1, 2]}\n")
    said = _warned(capsys, ["verify", str(path), "--out", str(tmp_path / "o")])
    assert any(": sweep.parallel.dp: verify runs a shrunken copy" in line for line in said), said


@pytest.mark.parametrize("text, key, word", [
    ("name: mini\nmodel: llama-3.1-8b\nhardware: h100-sxm\n", "model", "is a scenario file"),
    ("name: x\nhidden_size: 64\nvocab_size: 128\nlayers: [{count: 1, attention: a, ffn: f}]\n"
     "attention_kinds: {a: {kind: gqa, num_heads: 1, num_kv_heads: 1, head_dim: 64}}\n"
     "ffn_kinds: {f: {kind: dense, intermediate_size: 64}}\nspeculative: {}\n", "speculative", "unknown key"),
])
def test_a_scenario_is_told_from_a_spec_by_its_required_keys(tmp_path, capsys, text, key, word):
    entry = tmp_path / "entry.yaml"
    entry.write_text(text)
    scenario = run(tmp_path, BASE)[1]
    one_line_error(capsys, ["cost", scenario, "--set", f"model={entry}"], key, word)
