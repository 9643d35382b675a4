"""Adaptive steps (speculative.policy) and the swinging Poisson load (workload.rate_schedule):
a policy that never changes its steps is the fixed-steps run, one of 0 steps prices plain
decoding, a switching one runs each batch's steps; bad tables are one-line errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from mtpsim import scenario as sc
from mtpsim.catalog import load_engine
from mtpsim.schema import Workload
from mtpsim.sim import simulate
from mtpsim.sim.workload import open_arrivals
from tests.test_bad_input import one_line_error

LLAMA = {  # Llama-3.1-8B + its EAGLE-3 draft (nextn), priced by the roofline: fast and deterministic
    "name": "p", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
    "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
    "acceptance": {"per_depth": [0.9, 0.7, 0.5]},
    "engine": {"max_running_requests": 64},
    "workload": {"arrival": "batch", "num_requests": 6, "input_len": 256,
                 "output_len": {"dist": "uniform", "min": 16, "max": 96}},
}
SAME = ["tps", "per_user_tps", "ttft_p50_s", "tpot_p50_s", "tpot_p99_s", "accept_length", "e2e_mean_s"]


def scenario(base=LLAMA, **sections) -> sc.Scenario:
    data = {**base, **{k: {**base.get(k, {}), **v} for k, v in sections.items()}}
    return sc.validate(data)


def with_policy(table: dict[int, int], base=LLAMA, **sections) -> sc.Scenario:
    spec = {**base["speculative"], **sections.pop("speculative", {}), "policy": {"steps_by_batch": table}}
    return scenario(base, speculative=spec, **sections)


@pytest.mark.parametrize("spread", [0.0, 0.3])
def test_a_policy_of_the_most_steps_everywhere_is_the_fixed_run(spread):
    fixed = simulate(scenario(acceptance={"spread": spread}))
    policy = simulate(with_policy({1: 3}, acceptance={"spread": spread}))
    assert policy.summary[SAME].equals(fixed.summary[SAME])
    pd.testing.assert_frame_equal(policy.requests, fixed.requests)


def test_a_policy_of_fewer_steps_everywhere_is_the_run_at_those_steps():
    """Levels are drawn for 3 steps and the policy uses their 2-step prefix: with identical
    requests (no spread) that draws what a 2-step run draws; KV is reserved for 3 (unbinding here)."""
    fixed = simulate(scenario(speculative={"steps": 2}))
    policy = simulate(with_policy({1: 2}))
    assert policy.summary[SAME].equals(fixed.summary[SAME])
    assert policy.accept_counts[3] == 0 and (policy.accept_counts[:3] == fixed.accept_counts).all()


GEMMA = {"name": "g", "model": "gemma-4-e2b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
         "speculative": {"design": "frozen_kv", "steps": 3}, "acceptance": {"per_depth": [0.8, 0.6, 0.4]},
         "engine": {"max_running_requests": 64},
         "workload": {"arrival": "batch", "num_requests": 6, "input_len": 2048, "output_len": 64}}


def test_a_policy_of_zero_steps_decodes_as_none():
    """frozen_kv prefills only the target, so with its host time hidden behind the long prefill
    a policy that never speculates is plain decoding, TPS and all."""
    none = simulate(scenario(GEMMA, speculative={"design": "none"}, acceptance={"per_depth": None}))
    zero = simulate(with_policy({1: 0}, GEMMA))
    assert zero.summary.tps.iloc[0] == pytest.approx(none.summary.tps.iloc[0], rel=1e-12)
    assert zero.summary.accept_length.iloc[0] == 1.0


def test_zero_steps_on_nextn_decodes_as_none_after_the_drafts_prefill():
    """nextn still prefills its draft layer (a later batch may speculate): every decode
    iteration is none's, the run only slower by that prefill."""
    none = simulate(scenario(speculative={"design": "none", "draft": None}, acceptance={"per_depth": None}))
    zero = simulate(with_policy({1: 0}))
    decode = [r.iterations[r.iterations.kind == "decode"].reset_index(drop=True) for r in (none, zero)]
    cols = ["batch", "emitted", "duration_s", "verify_s", "draft_s", "extend_s", "host_s"]
    pd.testing.assert_frame_equal(decode[0][cols], decode[1][cols])
    assert zero.summary.tps.iloc[0] < none.summary.tps.iloc[0]


def test_steps_follow_the_running_batch():
    """{1: 3, 4: 1}: batches of 4 and more run one step (nextn: no draft pass, the first draft
    came out of the extend), smaller ones three (two draft passes); host time is the
    speculative one at every speculating batch (SGLang before spec v2, v0.5.10: its speculative
    iterations hide none)."""
    r = simulate(with_policy({1: 3, 4: 1}, engine={"version": "0.5.10"}))
    it = r.iterations[r.iterations.kind == "decode"]
    big, small = it[it.batch >= 4], it[it.batch < 4]
    assert len(big) and len(small)
    assert (big.draft_s == 0).all() and (big.emitted <= 2 * big.batch).all()
    assert (small.draft_s > 0).all() and (small.emitted > 2 * small.batch).any()
    engine = load_engine("sglang", "0.5.10")
    assert np.allclose(it.host_s, [engine.host_s("nextn", b) for b in it.batch])


def test_zero_steps_iterations_take_plain_decodings_host_time():
    """Without overlap scheduling every iteration's host time is exposed: plain decoding's at
    the batches the policy does not speculate, the speculative one elsewhere."""
    r = simulate(with_policy({1: 3, 4: 0}, engine={"overlap_schedule": False}))
    it = r.iterations[r.iterations.kind == "decode"]
    plain, spec = it[it.batch >= 4], it[it.batch < 4]
    engine = load_engine("sglang")
    assert np.allclose(plain.host_s, [engine.host_s("none", b) for b in plain.batch])
    assert np.allclose(spec.host_s, [engine.host_s("nextn", b) for b in spec.batch])
    assert (plain.emitted == plain.batch).all() and (plain.draft_s == 0).all() and (plain.extend_s == 0).all()
    assert (spec.extend_s > 0).all()


def test_multi_layer_uses_its_first_layers():
    s = dict(name="m", model="mimo-v2-flash", hardware="h200", parallel={"tp": 8}, cost={"model": "roofline"},
             speculative={"design": "multi_layer", "steps": 3}, acceptance={"per_depth": [0.9, 0.8, 0.7]},
             workload={"arrival": "batch", "num_requests": 4, "input_len": 128, "output_len": 32})
    fixed = simulate(sc.validate({**s, "speculative": {"design": "multi_layer", "steps": 1}}))
    policy = simulate(sc.validate({**s, "speculative": {"design": "multi_layer", "steps": 3,
                                                        "policy": {"steps_by_batch": {1: 1}}}}))
    decode = [r.iterations[r.iterations.kind == "decode"].reset_index(drop=True) for r in (fixed, policy)]
    pd.testing.assert_frame_equal(decode[0][["batch", "verify_s", "extend_s"]], decode[1][["batch", "verify_s", "extend_s"]])


# ---------------------------------------------------------------------- bad input

def _file(tmp_path, data) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return ["run", str(path), "--out", str(tmp_path / "out")]


def _policy(table, **spec):
    return {**LLAMA, "speculative": {**LLAMA["speculative"], **spec, "policy": {"steps_by_batch": table}}}


BAD = [  # (id, scenario, key, word)
    ("key-zero", _policy({1: 3, 0: 2}), "speculative.policy.steps_by_batch.0", "key"),
    ("key-text", _policy({1: 3, "big": 2}), "speculative.policy.steps_by_batch.big", "integer"),
    ("value-over-steps", _policy({1: 3, 16: 5}), "speculative.policy.steps_by_batch.16", "exceed"),
    ("value-negative", _policy({1: -1}), "speculative.policy.steps_by_batch.1", "greater than"),
    ("value-bool", _policy({1: True}), "speculative.policy.steps_by_batch.1", "integer"),
    ("no-batch-1", _policy({2: 3}), "speculative.policy.steps_by_batch", "batch 1"),
    ("empty", _policy({}), "speculative.policy.steps_by_batch", "batch 1"),
    ("design-none", {**_policy({1: 0}, design="none", draft=None), "acceptance": {}}, "speculative.policy", "no steps"),
    ("tree", {**_policy({1: 2}, topk=2), "acceptance": {"per_depth_topk": [[0.7, 0.1]] * 3}}, "speculative.policy", "topk"),
    ("unknown-key", {**LLAMA, "speculative": {**LLAMA["speculative"], "policy": {"steps_by_batch": {1: 2}, "steps": 2}}},
     "speculative.policy.steps", "unknown key"),
]


@pytest.mark.parametrize("data,key,word", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_policies_are_one_line_errors(tmp_path, capsys, data, key, word):
    one_line_error(capsys, _file(tmp_path, data), key, word)
    assert not (tmp_path / "out").exists()


SWING = {"arrival": "poisson", "num_requests": 6, "input_len": 64, "output_len": 16,
         "rate_schedule": [{"until_s": 1.0, "rate_per_s": 2.0}, {"until_s": 2.0, "rate_per_s": 40.0}]}
BAD_LOADS = [
    ("not-in-order", {**SWING, "rate_schedule": [{"until_s": 2.0, "rate_per_s": 1.0}, {"until_s": 2.0, "rate_per_s": 3.0}]},
     "workload.rate_schedule.1.until_s", "time order"),
    ("zero-rate", {**SWING, "rate_schedule": [{"until_s": 1.0, "rate_per_s": 0.0}]},
     "workload.rate_schedule.0.rate_per_s", "greater than"),
    ("with-a-rate", {**SWING, "rate_per_s": 3.0}, "workload.rate_per_s", "not both"),
    ("closed-loop", {**SWING, "arrival": "closed", "concurrency": 2}, "workload.rate_schedule", "poisson"),
    ("empty", {**SWING, "rate_schedule": []}, "workload.rate_schedule", "at least 1"),
]


@pytest.mark.parametrize("workload,key,word", [c[1:] for c in BAD_LOADS], ids=[c[0] for c in BAD_LOADS])
def test_bad_rate_schedules_are_one_line_errors(tmp_path, capsys, workload, key, word):
    one_line_error(capsys, _file(tmp_path, {**LLAMA, "workload": workload}), key, word)


# ---------------------------------------------------------------------- the swinging load

def test_rate_schedule_is_a_poisson_process_at_each_phases_rate():
    """Arrivals per phase ~ Poisson(rate x length): within 4 standard deviations over 25 cycles."""
    w = Workload.model_validate({**SWING, "num_requests": 100_000, "rate_schedule": [
        {"until_s": 10.0, "rate_per_s": 2.0}, {"until_s": 15.0, "rate_per_s": 40.0}]})
    t = open_arrivals(w, np.random.default_rng(3))[0]  # arrival times
    assert (np.diff(t) >= 0).all()
    cycles = int(t.max() // 15)
    t = t[t < cycles * 15]
    light, heavy = ((t % 15) < 10).sum(), ((t % 15) >= 10).sum()
    for count, expected in ((light, 2.0 * 10 * cycles), (heavy, 40.0 * 5 * cycles)):
        assert abs(count - expected) < 4 * np.sqrt(expected), (count, expected)


def test_a_phase_too_long_to_draw_whole_gives_its_first_arrivals_at_its_rate():
    """A phase holding ~1.2e10 expected arrivals (12 req/s for 1e9 s) used to draw them all (an
    89 GiB array); only the first num_requests matter, drawn as gaps of the same process."""
    w = Workload.model_validate({**SWING, "num_requests": 4000, "rate_schedule": [
        {"until_s": 30.0, "rate_per_s": 1.0}, {"until_s": 1.0e9, "rate_per_s": 12.0}]})
    t = open_arrivals(w, np.random.default_rng(5))[0]
    assert len(t) == 4000 and (np.diff(t) >= 0).all()
    first, later = (t < 30).sum(), t[t >= 30]
    assert abs(first - 30) < 4 * np.sqrt(30), first  # Poisson(1 x 30) in the first phase
    rate = (len(later) - 1) / (later[-1] - later[0])  # 12 req/s: within 4 sigma of ~3,970 arrivals
    assert abs(rate - 12.0) < 4 * 12.0 / np.sqrt(len(later)), rate


def test_a_swinging_load_runs_and_keeps_its_order():
    r = simulate(scenario(workload={**SWING, "output_len": 16}))
    assert len(r.requests) == 6 and (r.requests.sort_values("request_id").arrival_s.diff().dropna() >= 0).all()
