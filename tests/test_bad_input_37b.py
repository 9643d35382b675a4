"""Campaign 37's holes left open at its stop, each tested below:
- a user's mapping key spelt like a pydantic class (`attention_kinds: {Pool: ...}`) was cut from
  the error's key path as if it were a union branch's tag (H8);
- verify's "another deployment" warning blamed the file's `hardware` for a --set parallel.tp (H12);
- a sweep over a speculative key under design none hid the acceptance warning, which held at every
  point, and said nothing of points that are the same run (H13).
"""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import one_line_error, run

BASE = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
        "speculative: {design: none}\n"
        "acceptance: {per_depth: [0.8, 0.7]}\n"
        "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n")


@pytest.mark.parametrize("name", ["Pool", "Verify", "LengthDist", "GQA"])
def test_a_mapping_key_spelt_like_a_class_stays_in_the_path(tmp_path, capsys, name):
    """Before: `model.attention_kinds.head_dim` for every key a pydantic model class is named."""
    text = BASE.replace("model: llama-3.1-8b\n", "model: {from: llama-3.1-8b, layers: [{count: 32, attention: "
                        f"{name}, ffn: dense}}], attention_kinds: {{{name}: {{kind: gqa, num_heads: 32, "
                        "num_kv_heads: 8, head_dim: -5}}}\n")
    one_line_error(capsys, run(tmp_path, text), f"model.attention_kinds.{name}.head_dim", "greater than 0")


def test_a_union_branch_tag_is_still_cut(tmp_path, capsys):
    """The branch's name is no key the user wrote: `workload.input_len.min`, not `...LengthDist.min`."""
    text = BASE.replace("input_len: 64", "input_len: {dist: uniform, min: 0.5, max: 10}")
    one_line_error(capsys, run(tmp_path, text), "workload.input_len.min", "integer")


def _warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


def test_the_acceptance_warning_holds_under_a_steps_sweep_of_design_none(tmp_path, capsys):
    """Before: the sweep over speculative.steps held the warning back at every point, where no
    point drafts; and the two points, the same run, were run without a word."""
    errors._warned.clear()
    argv = run(tmp_path, BASE + "sweep:\n  speculative.steps: [1, 2]\n")
    assert cli.main(argv) == 0
    said = _warnings(capsys)
    assert any(": acceptance: design none drafts nothing" in line for line in said), said
    assert any(": sweep.speculative.steps: design none drafts nothing at every point" in line
               and "same run" in line for line in said), said


def test_a_design_sweep_still_holds_the_acceptance_warning_back(tmp_path, capsys):
    """Where the sweep makes the acceptance matter at some point, neither warning is said."""
    errors._warned.clear()
    text = BASE.replace("speculative: {design: none}", "speculative: {design: nextn, steps: 2, "
                        "draft: eagle3-llama-3.1-8b}") + "sweep:\n  speculative.design: [none, nextn]\n"
    assert cli.main(run(tmp_path, text)) == 0
    said = _warnings(capsys)
    assert not any("drafts nothing" in line for line in said), said


def test_verify_blames_the_set_that_made_another_deployment(tmp_path, capsys):
    """Before: `s.yaml: hardware:` for a --set parallel.tp=2."""
    errors._warned.clear()
    scenario = "scenarios/verify/qwen3-8b-block-cpu.yaml"
    argv = ["verify", scenario, "--set", "parallel.tp=2", "--out", str(tmp_path / "v")]
    assert cli.main(argv) == 0
    said = _warnings(capsys)
    assert any(line.startswith("mtpsim: warning: --set: parallel.tp: verify runs a shrunken copy") for line in said), said
