"""A seventh adversarial campaign (this stop's: model definitions, and deployment and command
inputs; kept out of the repo), by class. As in test_bad_input.py: bad input is one stderr line,
exit status 2, naming the file and key; semantic nonsense that runs is one warning."""
from __future__ import annotations

from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

VLLM = """\
name: v
model: llama-3.1-8b
hardware: h100-sxm
engine: {kind: vllm, chunked_prefill_tokens: 16, max_running_requests: 64}
speculative: {design: none}
workload: {arrival: closed, concurrency: 64, num_requests: 64, input_len: 100, output_len: 8}
"""


def test_a_vllm_budget_below_its_running_cap_is_refused_as_vllm_refuses_it(tmp_path, capsys):
    """Before: accepted, and every running request decoded each step past the budget."""
    one_line_error(capsys, run(tmp_path, VLLM), "engine.chunked_prefill_tokens", "max_num_seqs")


def test_a_running_batch_past_a_mixing_engines_budget_warns(tmp_path, capsys):
    """Below the cap the engine starts, but decodes only part of a batch wider than its budget a
    step; mtpsim decodes all of it, and says so."""
    lines = warnings_of(capsys, run(tmp_path, VLLM.replace(", max_running_requests: 64", "")))
    assert any("engine.chunked_prefill_tokens" in line and "64 running requests x 1 token each" in line
               for line in lines), lines
    fits = VLLM.replace(", max_running_requests: 64", "").replace("concurrency: 64", "concurrency: 16")
    (tmp_path / "fits").mkdir()
    assert not any("budget" in line for line in warnings_of(capsys, run(tmp_path / "fits", fits)))
