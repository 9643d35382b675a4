"""An engine that prefills a prompt whole (TensorRT-LLM without chunked context) stalls a prompt
that does not fit its token budget beside the running batch's decode tokens, and every prompt
behind it: the scenario is warned before the run (budget_advice.whole_prompts_past_budget) and the
run's note says why its batch stayed small (run_table._budget_line). InferenceX sizes TensorRT-LLM's
max_num_tokens as concurrency + ISL + 64 for this reason (benchmarks/single_node/fixed_seq_len/
dsr1_fp8_b200_trt.sh)."""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from mtpsim.budget_advice import whole_prompts_past_budget
from mtpsim.scenario import validate

BASE = """name: whole
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: %s%s}
speculative: {design: none}
workload: {arrival: closed, concurrency: %d, num_requests: %d, input_len: %d, output_len: %d}
"""


@pytest.fixture(autouse=True)
def _fresh_warnings():
    errors._warned.clear()  # warn() says each message once per process


def scenario(kind="trtllm", engine="", users=4, requests=8, prompt=8192, output=16):
    import yaml
    return validate(yaml.safe_load(BASE % (kind, engine, users, requests, prompt, output)))


def test_a_prompt_as_long_as_the_budget_beside_a_batch_is_warned_with_the_budget_that_admits_it():
    (key, reason), = whole_prompts_past_budget(scenario())
    assert key == "workload.input_len"
    assert "8192-token budget" in reason and "3 other running requests" in reason
    assert "a budget of 8195 tokens" in reason  # the prompt and one decode token for each other user


def test_no_warning_where_the_budget_admits_every_prompt_or_the_engine_cuts_prompts():
    assert whole_prompts_past_budget(scenario(engine=", chunked_prefill_tokens: 8195")) == []
    assert whole_prompts_past_budget(scenario(prompt=8000)) == []          # 8000 + 3 fits 8192
    assert whole_prompts_past_budget(scenario(users=1, requests=2)) == []  # no other request decodes
    assert whole_prompts_past_budget(scenario(kind="vllm")) == []          # vLLM cuts a prompt to fit
    over = whole_prompts_past_budget(scenario(engine=", chunked_prefill_tokens: 8194"))
    assert over and over[0][0] == "engine.chunked_prefill_tokens"


def test_the_run_says_the_whole_prompt_waited_and_points_at_the_warning(tmp_path, capsys):
    """Four users with prompts as long as the budget: each new prompt waits for the batch to empty,
    so the batch never holds all four; the note names the cause, not a decode that filled the budget."""
    path = tmp_path / "s.yaml"
    path.write_text(BASE % ("trtllm", "", 4, 12, 8192, 16))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    err = capsys.readouterr()
    text = err.out + err.err
    assert "mtpsim: warning:" in text and "workload.input_len" in text
    note = next(line for line in text.splitlines() if line.startswith("budget 8192:"))
    assert "prefills a prompt whole" in note and "filled the" not in note


def test_a_sweep_whose_points_warn_differently_is_not_called_the_same_run(tmp_path, capsys):
    """advise_sweep took any warning under a swept key at every point for one the key is unread by;
    this warning names each point's own users, so the points differ."""
    path = tmp_path / "s.yaml"
    load = "{arrival: closed, num_requests: 8, input_len: 8192, output_len: 16, concurrency: %d}"
    path.write_text(BASE % ("trtllm", "", 4, 8, 8192, 16)
                    + f"sweep:\n  workload: [{load % 4}, {load % 6}]\n")
    assert cli.main(["cost", str(path)]) == 0
    assert "same run" not in capsys.readouterr().err


def test_the_warning_is_said_where_the_sweep_varies_the_whole_workload(tmp_path, capsys):
    """A sweep over the workload section (each point its own users) put workload.input_len inside a
    swept key, and advise() left such keys alone as it does unread settings: no warning, while the
    run's note pointed at one. A budget warning is about how the point runs, so each point says it."""
    path = tmp_path / "s.yaml"
    path.write_text(BASE % ("trtllm", "", 4, 12, 8192, 16) +
                    "sweep:\n  workload:\n"
                    "    - {arrival: closed, concurrency: 4, num_requests: 12, input_len: 8192, output_len: 16}\n"
                    "    - {arrival: closed, concurrency: 8, num_requests: 16, input_len: 8192, output_len: 16}\n")
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "workload.input_len" in line]
    assert len(warned) == 2 and "beside 3 other running requests" in warned[0] and "beside 7 other" in warned[1]
