"""TensorRT-LLM's batch waiting (engine.batch_wait; sim/mixed.py BatchWaitRule, budget_advice
batch_wait_idle): while requests decode, admitted prompts are held back until a step's tokens
reach max_tokens_ratio x the token budget or timeout_iters steps have held them."""
from __future__ import annotations

import pytest

from mtpsim.advice import problems
from mtpsim.designs import DesignShape
from mtpsim.scenario import validate
from mtpsim.sim import mixed_rule, simulate
from mtpsim.sim.mixed import BatchWaitRule, PrefillQueue
from mtpsim.sim.workload import Request
from tests.test_bad_input import one_line_error, run

WAIT = {"timeout_iters": 40, "max_tokens_ratio": 0.8}


def scenario(engine=None, parallel=None, concurrency=16, num_requests=48, **extra):
    return validate({
        "name": "wait", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "speculative": {"design": "none"},
        "engine": {"kind": "trtllm", "chunked_prefill_tokens": 8192, **(engine or {})},
        **({"parallel": parallel} if parallel else {}),
        "workload": {"arrival": "closed", "concurrency": concurrency, "num_requests": num_requests,
                     "input_len": {"dist": "uniform", "min": 800, "max": 1024},
                     "output_len": {"dist": "uniform", "min": 100, "max": 200}}, **extra})


def test_release_follows_the_engine_rule():
    """PyExecutor._waiting_requests: stop waiting once the held-step count reaches the timeout or
    the scheduled tokens reach ratio x max_num_tokens; a timeout of 0 never waits."""
    rule = BatchWaitRule(timeout_iters=3, min_tokens=0.5 * 1000)
    assert not rule.releases(held=0, tokens=499) and not rule.releases(held=2, tokens=100)
    assert rule.releases(held=3, tokens=0) and rule.releases(held=0, tokens=500)
    assert BatchWaitRule(timeout_iters=0, min_tokens=1e9).releases(held=0, tokens=0)


def test_plan_leaves_the_queue_and_commit_takes_it():
    reqs = [Request(0, 0.0, 300, 5), Request(1, 0.0, 200, 5)]
    q = PrefillQueue()
    q.add(reqs)
    planned = q.plan(400, True, False)
    assert planned == [(reqs[0], 300, 0), (reqs[1], 100, 0)] and len(q) == 2
    assert q.plan(400, True, False) == planned  # planning twice plans the same
    q.commit(planned)
    assert len(q) == 1 and q.take(400, True, False) == [(reqs[1], 100, 100)] and len(q) == 0


def test_rule_built_only_where_the_engine_waits():
    on = scenario({"batch_wait": WAIT})
    rule = mixed_rule(on, DesignShape.of(on.speculative))
    assert rule.batch_wait == BatchWaitRule(40, 0.8 * 8192)
    for idle in (scenario({"batch_wait": {"timeout_iters": 0, "max_tokens_ratio": 0.8}}),
                 scenario({"batch_wait": WAIT, "kind": "vllm"}),
                 scenario({"batch_wait": WAIT, "mixed_batches": False}),
                 scenario()):
        rule = mixed_rule(idle, DesignShape.of(idle.speculative))
        assert rule is None or rule.batch_wait is None


def test_waiting_holds_prompts_and_delays_first_tokens():
    """Held steps are counted, prompts prefill in fewer, larger steps, and the first token comes
    later; every request still finishes."""
    off, on = simulate(scenario()), simulate(scenario({"batch_wait": WAIT}))
    assert off.row["batch_wait_iterations"] == 0 and on.row["batch_wait_iterations"] > 0
    assert on.row["ttft_p50_s"] > off.row["ttft_p50_s"]
    assert len(on.requests) == len(off.requests) == 48
    steps = lambda r: r.requests.first_token_s.nunique()  # noqa: E731  (the steps that finished a prompt)
    assert steps(on) < steps(off)


def test_a_large_ratio_waits_out_the_timeout_and_a_small_one_never_waits():
    never = simulate(scenario({"batch_wait": {"timeout_iters": 40, "max_tokens_ratio": 0.0}}))
    assert never.row["batch_wait_iterations"] == 0  # any step's tokens reach 0 x the budget
    long = simulate(scenario({"batch_wait": {"timeout_iters": 40, "max_tokens_ratio": 1.0}}))
    short = simulate(scenario({"batch_wait": {"timeout_iters": 2, "max_tokens_ratio": 1.0}}))
    assert long.row["batch_wait_iterations"] > short.row["batch_wait_iterations"] > 0
    assert long.row["ttft_p50_s"] > short.row["ttft_p50_s"]


@pytest.mark.parametrize("engine, parallel, said", [
    ({"kind": "sglang"}, None, "sglang holds no prompts back"),
    ({}, {"tp": 2, "attention_dp": 2}, "only without attention DP"),
    ({"mixed_batches": False}, None, "no step here mixes prompts"),
    ({"batch_wait": {"timeout_iters": 0, "max_tokens_ratio": 0.9}}, None, "timeout_iters is 0"),
])
def test_idle_settings_are_warned(engine, parallel, said):
    s = scenario({"batch_wait": WAIT, **engine}, parallel)
    found = [why for key, why in problems(s) if key == "engine.batch_wait"]
    assert len(found) == 1 and said in found[0] and found[0].endswith("it changes nothing")
    assert not [k for k, _ in problems(scenario({"batch_wait": WAIT})) if k == "engine.batch_wait"]


@pytest.mark.parametrize("value, key, said", [
    ("max_tokens_ratio: 1.5", "engine.batch_wait.max_tokens_ratio", "less than or equal to 1"),
    ("timeout_iters: -1", "engine.batch_wait.timeout_iters", "greater than or equal to 0"),
    ("timeout_iters: 2.5", "engine.batch_wait.timeout_iters", "valid integer"),
    ("ratio: 0.5", "engine.batch_wait.ratio", "unknown key"),
])
def test_bad_values_are_one_line(tmp_path, capsys, value, key, said):
    one_line_error(capsys, run(tmp_path, "name: w\nmodel: llama-3.1-8b\nhardware: h100-sxm\ncost: {model: roofline}\n"
                                         f"engine: {{kind: trtllm, batch_wait: {{{value}}}}}\n"
                                         "workload: {arrival: closed, concurrency: 2, num_requests: 2, input_len: 64, "
                                         "output_len: 4}\n"), key, said)
