"""The simulator against theory: closed forms, Little's law, conservation, determinism."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.catalog import load_engine
from mtpsim.costs import build_pricer
from mtpsim.costs.roofline import OpTime
from mtpsim.designs import DesignShape
from mtpsim.memory import memory_budget, pool_rule
from mtpsim.run import run_points
from mtpsim.sim import simulate

OP_S = 1e-5


class ConstCosts:
    """Every op costs OP_S: pass times are constant whatever the batch or KV lengths."""

    name = "const"
    has_glue = False

    def core_pricer(self, kernel, graphs):
        return None

    def frame_pricer(self, batch, q, d, graphs):
        return None

    def time(self, op, graphs):
        return OpTime(0.0, OP_S, 0.0, 0.0, "const")

    def kernel_launch_s(self, graphs):
        return 0.0

    def pass_launch_s(self, graphs):
        return 0.0

    def host_s(self, design, batch):
        return 1e-3

    engine = load_engine("sglang")


def _draft(design: str, model: str) -> dict:
    """Llama-3.1-8B has no MTP layers: nextn runs it with the external EAGLE-3 draft."""
    return {"draft": "eagle3-llama-3.1-8b"} if design == "nextn" and model == "llama-3.1-8b" else {}


def make(design="nextn", steps=3, alphas=(0.9, 0.7, 0.5), model="llama-3.1-8b", hardware="h100-sxm", tp=1,
         **workload):
    data = {"name": "t", "model": model, "hardware": hardware, "parallel": {"tp": tp},
            "speculative": {"design": design, "steps": steps, **_draft(design, model)},
            "acceptance": {"per_depth": list(alphas)} if design != "none" else {},
            "workload": {"arrival": "batch", "concurrency": 8, "num_requests": 8, "input_len": 128,
                         "output_len": 256, **workload}}
    return sc.validate(data)


def test_steady_state_tps_matches_closed_form():
    s = make(output_len=3000)
    pricer = build_pricer(s, costs=ConstCosts())
    r = simulate(s, pricer=pricer)
    it = r.iterations[(r.iterations.kind == "decode") & (r.iterations.batch == 8)]
    # constant pass costs -> every full iteration takes the same time
    assert it.duration_s.max() == pytest.approx(it.duration_s.min())
    t_iter = it.duration_s.iloc[0]
    expected = 8 * AcceptanceProfile((0.9, 0.7, 0.5)).expected_accept_length(3) / t_iter
    measured = it.emitted.sum() / it.duration_s.sum()
    # per request-iteration tokens have sd <= 1.5; n = 8 * len(it) draws; capped final iterations add < S/O
    tol = 5 * 1.5 / math.sqrt(8 * len(it)) + 3 / 3000
    assert measured == pytest.approx(expected, rel=tol)


def test_littles_law_closed_loop():
    """A closed loop of C users without think time holds C requests in the system: lambda * W = C."""
    s = make(arrival="closed", concurrency=6, num_requests=120, output_len=64)
    r = simulate(s)
    req = r.requests
    # over the window where all users are busy: from start to the first user's last finish
    horizon = req.groupby(req.request_id % 6).finish_s.max().min()
    inside = req[req.finish_s <= horizon]
    lam = len(inside) / horizon
    w = (inside.finish_s - inside.arrival_s).mean()
    assert lam * w == pytest.approx(6, rel=0.1)  # the window's edges: requests cut by it are left out
    # exactly, edges included: the time requests spend in the system over the window (each clipped
    # to it) is 6 x the window, since a user's next request arrives the instant its last finishes
    live = req[req.arrival_s < horizon]
    assert (np.minimum(live.finish_s, horizon) - live.arrival_s).sum() == pytest.approx(6 * horizon, rel=1e-12)
    # and the engine's batches hold the requests' decode iterations, each once (was: 0 < mean batch <= 6)
    it = r.iterations
    assert it.batch[it.kind == "decode"].sum() == req.iterations.sum() and (it.batch <= 6).all()


def test_acceptance_zero_gives_al_one_and_slowdown():
    s = make(alphas=(0.0, 0.0, 0.0))
    summary, _ = run_points([s], progress=False)
    row = summary[summary.design == "nextn"].iloc[0]
    assert row.accept_length == pytest.approx(1.0)
    assert row.speedup < 1.0


def test_acceptance_one_gives_steps_plus_one():
    s = make(alphas=(1.0, 1.0, 1.0), output_len=4 * 50 + 1)
    r = simulate(s)
    assert r.summary.accept_length.iloc[0] == pytest.approx(4.0)


@pytest.mark.parametrize("design", ["none", "nextn", "multi_layer", "frozen_kv", "parallel_heads"])
def test_emitted_tokens_equal_requested(design):
    model = {"none": "llama-3.1-8b", "nextn": "llama-3.1-8b", "multi_layer": "mimo-v2-flash",
             "frozen_kv": "gemma-4-e2b", "parallel_heads": "meta-mtp-7b"}[design]
    big = model == "mimo-v2-flash"
    s = make(design, model=model, hardware="h200" if big else "h100-sxm", tp=8 if big else 1)
    r = simulate(s)
    it = r.iterations
    assert it.emitted.sum() == r.requests.output_len.sum()
    assert (r.requests.first_token_s <= r.requests.finish_s).all()
    assert (r.requests.first_token_s >= r.requests.arrival_s).all()
    assert len(r.requests) == s.workload.num_requests


def test_same_seed_same_results_other_seed_differs():
    a, b = simulate(make(output_len=64)), simulate(make(output_len=64))
    assert a.requests.equals(b.requests)
    data = make(output_len=64).model_dump(exclude_none=True)
    data["seed"] = 1
    c = simulate(sc.validate(data))
    assert not a.requests.finish_s.equals(c.requests.finish_s)


def test_a_point_and_its_baseline_side_by_side_give_what_they_give_one_after_the_other():
    """`mtpsim run` simulates a point and its `none` baseline in two worker processes where there are
    cores (run._map): the same summary rows and records, bit for bit, as one process running both."""
    from mtpsim.run import run_rows
    point = make(output_len=64)
    alone, alone_results = run_rows([point], jobs=1, progress=False)
    together, together_results = run_rows([point], jobs=2, progress=False)
    assert len(alone) == 2 and [r["design"] for r in alone] == ["nextn", "none"]
    def same(rows):  # every column as text (NaN equals NaN), but the runs' own wall time
        return [{k: str(v) for k, v in r.items() if k != "sim_wall_s"} for r in rows]
    assert same(alone) == same(together)
    assert alone_results[0].requests.equals(together_results[0].requests)


def test_draft_kv_lowers_max_concurrency():
    mtp = {"num_layers": 3, "layer": {"attention": "full", "ffn": "moe"}}
    data = {"name": "m", "model": {"from": "gemma-4-26b-a4b", "mtp": mtp}, "hardware": "h100-sxm",
            "speculative": {"design": "frozen_kv", "steps": 3}, "acceptance": {"per_depth": [0.8] * 3}}
    s = sc.validate(data)
    pricer = build_pricer(s)
    fits = {d: memory_budget(pricer, DesignShape(d, 3, 1, 4), pool_rule(s, d)).max_requests(8192)
            for d in ("frozen_kv", "nextn", "multi_layer")}
    assert fits["frozen_kv"] > fits["nextn"] > fits["multi_layer"]


def test_dp_replicas_share_the_load():
    data = make(arrival="closed", concurrency=8, num_requests=32).model_dump(exclude_none=True)
    data["parallel"] = {"dp": 2}
    r = simulate(sc.validate(data))
    assert set(r.requests.replica) == {0, 1}


def test_kv_budget_too_small_is_a_clear_error():
    data = make().model_dump(exclude_none=True)
    data["workload"]["input_len"] = 10_000_000
    data["model"] = {"from": data["model"], "max_context": 20_000_000}  # past the context checks, to reach the KV one
    if data["speculative"].get("draft"):
        data["speculative"]["draft"] = {"from": data["speculative"]["draft"], "max_context": 20_000_000}
    with pytest.raises(sc.ScenarioError, match="GB of KV per GPU"):
        simulate(sc.validate(data))


designs = st.sampled_from([("nextn", "llama-3.1-8b", "h100-sxm", 1), ("none", "llama-3.1-8b", "h100-sxm", 1),
                           ("multi_layer", "mimo-v2-flash", "h200", 8), ("frozen_kv", "gemma-4-e2b", "a100-80g", 1)])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs, st.integers(1, 3), st.lists(st.floats(0, 1), min_size=3, max_size=3), st.floats(0, 0.9),
       st.sampled_from(["closed", "batch", "poisson"]), st.integers(1, 12), st.integers(1, 20),
       st.integers(1, 300), st.integers(1, 80), st.integers(1, 2))
def test_random_scenarios_hold_invariants(d, steps, alphas, spread, arrival, conc, n, inp, out, dp):
    design, model, hw, tp = d
    data = {"name": "h", "model": model, "hardware": hw, "parallel": {"tp": tp, "dp": dp},
            "speculative": {"design": design, "steps": steps, **_draft(design, model)},
            "acceptance": {"per_depth": alphas, "spread": spread} if design != "none" else {},
            "workload": {"arrival": arrival, "concurrency": conc, "num_requests": max(n, conc), "rate_per_s": 50.0,
                         "input_len": {"dist": "uniform", "min": 1, "max": inp}, "output_len": out},
            "engine": {"max_running_requests": 8, "chunked_prefill_tokens": 256}}
    r = simulate(sc.validate(data))
    req, row = r.requests, r.summary.iloc[0]
    assert len(req) == max(n, conc) and r.iterations.emitted.sum() == req.output_len.sum()
    assert (req.finish_s >= req.first_token_s).all() and (req.first_token_s >= req.arrival_s).all()
    if out > 1:  # accept length counts decode iterations; a 1-token answer has none
        assert 1.0 <= row.accept_length <= (steps + 1 if design != "none" else 1) + 1e-9
    shares = row[["draft_share", "verify_share", "extend_share", "prefill_share", "host_share"]]
    assert shares.sum() == pytest.approx(1.0)
    assert row.tps > 0


def test_sglang_caps_speculative_batches_at_48_unless_configured():
    """SGLang's server_args resets max_running_requests to 48 for EAGLE/MTP when none is given."""
    s = make(concurrency=64, num_requests=64, output_len=8)
    assert simulate(s).iterations.batch.max() == 48
    data = s.model_dump(exclude={"sweep"}, exclude_none=True)
    data["engine"] = {"max_running_requests": 64}
    assert simulate(sc.validate(data)).iterations.batch.max() == 64
    assert simulate(make(design="none", concurrency=64, num_requests=64, output_len=8)).iterations.batch.max() == 64
    vllm = make(concurrency=64, num_requests=64, output_len=8).model_dump(exclude={"sweep"}, exclude_none=True)
    vllm["engine"] = {"kind": "vllm"}
    assert simulate(sc.validate(vllm)).iterations.batch.max() == 64
