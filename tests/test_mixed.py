"""Mixed batches (sim/mixed.py, costs/mixed.py): prompt chunks riding inside decode iterations."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim.costs import build_pricer
from mtpsim.costs.iteration import iteration_cost
from mtpsim.costs.mixed import price_mixed
from mtpsim.costs.ops import BatchLens
from mtpsim.designs import DesignShape, iteration_passes, overlap_window, prefill_passes
from mtpsim.scenario import validate
from mtpsim.sim import simulate
from mtpsim.sim.mixed import PrefillQueue, carries
from mtpsim.sim.workload import Request

NEXTN = {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"}


def scenario(workload, speculative=None, cost="roofline", **engine):
    return validate({
        "name": "mixed", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": cost},
        "speculative": speculative or {"design": "none"}, "acceptance": {"per_depth": [1.0, 1.0]},
        "engine": {"kind": "vllm", **engine}, "workload": workload})


def test_engine_defaults_and_the_switch():
    load = {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 10, "output_len": 3}
    engine = {k: scenario(load, kind=k).specs.engine for k in ("sglang", "vllm", "trtllm")}
    assert [engine[k].mixes("none", None) for k in engine] == [False, True, True]
    assert [engine[k].mixes("nextn", None) for k in engine] == [False, True, True]
    assert not engine["vllm"].mixes("none", False)
    # SGLang mixes on request, but turns it off under speculative decoding (server_args.py)
    assert engine["sglang"].mixes("none", True) and not engine["sglang"].mixes("nextn", True)
    assert engine["trtllm"].mixed_batches.split_prompts is False


@pytest.mark.parametrize("speculative", [None, NEXTN])
def test_no_waiting_prompt_runs_as_before(speculative):
    """One user at a time: a prompt never waits beside a decode batch, so mixing changes nothing."""
    load = {"arrival": "closed", "concurrency": 1, "num_requests": 6, "input_len": 700, "output_len": 40}
    on, off = (simulate(scenario(load, speculative, mixed_batches=m)) for m in (True, False))
    assert on.requests.equals(off.requests)
    assert on.iterations.equals(off.iterations)


def requests(rows):
    return [Request(i, 0.0, n, 5, cached_len=c) for i, (n, c) in enumerate(rows)]


def test_prefill_queue_fills_the_budget_in_order():
    q = PrefillQueue()
    a, b, c = requests([(300, 0), (500, 64), (100, 0)])
    q.add([a, b, c])
    assert q.take(400, True, False) == [(a, 300, 0), (b, 100, 64)]
    assert q.take(1000, True, False) == [(b, 336, 164), (c, 100, 0)]
    assert len(q) == 0 and q.take(10, True, True) == []


def test_prefill_queue_whole_prompts_wait_unless_alone_or_under_way():
    """TensorRT-LLM without chunked context: a prompt rides whole or waits, and blocks those behind."""
    q = PrefillQueue()
    a, b = requests([(300, 0), (50, 0)])
    q.add([a, b])
    assert q.take(200, False, False) == []               # does not fit: it and b wait
    assert q.take(200, False, True) == [(a, 200, 0)]     # alone, longer than the budget: cut
    assert q.take(60, False, False) == [(a, 60, 200)]    # under way: cut to fit
    assert q.take(120, False, False) == [(a, 40, 260), (b, 50, 0)]


def bounds_cases():
    for cost in ("roofline", "auto"):
        for speculative in (None, NEXTN):
            yield cost, speculative


@pytest.mark.parametrize("cost,speculative", list(bounds_cases()))
def test_a_mixed_pass_costs_between_decode_alone_and_decode_plus_prefill(cost, speculative):
    s = scenario({"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 10, "output_len": 3},
                 speculative, cost=cost)
    pricer, design = build_pricer(s), DesignShape.of(s.speculative)
    prefills = prefill_passes(design)
    rng = np.random.default_rng(0)
    for batch in (1, 7, 64):
        kv = rng.integers(100, 6000, batch)
        for chunk in ([3000], [40, 900], [8000 - batch * design.draft_tokens]):
            chunk_lens = BatchLens.of(np.array(chunk), rng.integers(0, 2000, len(chunk)))
            for shape in iteration_passes(design):
                ride = next((p for p in prefills if carries(shape, p)), None)
                if ride is None:
                    continue
                lens = BatchLens.of(np.full(batch, shape.tokens_per_request), kv)
                mixed = price_mixed(pricer, shape, lens, ride, chunk_lens).time_s
                alone = pricer.price_lens(shape, lens).time_s
                prefill = pricer.price_lens(ride, chunk_lens).time_s
                assert alone <= mixed <= alone + prefill, (shape, batch, chunk)


def exposed(pricer, kinds, times, window, design, batch):
    return iteration_cost(kinds, times, window, pricer.host_s(design, batch)).iteration_s


@pytest.mark.parametrize("speculative", [None, NEXTN])
def test_ttft_and_tpot_move_as_the_rule_predicts(tmp_path, speculative):
    """Request A decodes alone; B (one output token) arrives mid-way. Unmixed, B's prefill P runs
    between two of A's decode iterations; mixed, it rides in the next one, which costs M instead of
    D. So B's TTFT moves by M - P and A's decode time by M - D - P (at most 0: M <= D + P)."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_len,output_len\n0,512,60\n0.05,2000,1\n")
    load = {"arrival": "trace", "trace": str(path)}
    on, off = (simulate(scenario(load, speculative, mixed_batches=m)) for m in (True, False))
    s = scenario(load, speculative)
    pricer, design = build_pricer(s), DesignShape.of(s.speculative)
    its = off.iterations
    k = int((its.kind.iloc[: its.index[its.kind.eq("prefill")][1]] == "decode").sum())  # A's iterations before B
    a_kv = np.array([512 + k * (design.steps + 1)])  # every draft accepted
    b = BatchLens.of(np.array([2000]), np.array([0]))
    window = overlap_window(design, pricer.costs.engine)
    decode = [pricer.price_lens(p, BatchLens.of(np.array([p.tokens_per_request]), a_kv)).time_s
              for p in iteration_passes(design)]
    mixed = [price_mixed(pricer, p, BatchLens.of(np.array([p.tokens_per_request]), a_kv), ride, b).time_s
             if (ride := next((q for q in prefill_passes(design) if carries(p, q)), None)) else t
             for p, t in zip(iteration_passes(design), decode)]
    prefill = [pricer.price_lens(p, b).time_s for p in prefill_passes(design)]
    kinds = [p.kind for p in iteration_passes(design)]
    D = exposed(pricer, kinds, decode, window, design.design, 1)
    M = exposed(pricer, kinds, mixed, window, design.design, 2)
    P = exposed(pricer, ["prefill"] * len(prefill), prefill, ("prefill",), design.design, 1)
    a_on, a_off = on.requests.set_index("request_id"), off.requests.set_index("request_id")
    ttft = (a_on.first_token_s - a_on.arrival_s) - (a_off.first_token_s - a_off.arrival_s)
    assert ttft[1] == pytest.approx(M - P, rel=1e-6, abs=1e-12)
    assert (a_on.finish_s - a_off.finish_s)[0] == pytest.approx(M - D - P, rel=1e-6, abs=1e-12)
    assert M - D - P < 0 < M - D
    tpot = on.summary.iloc[0].tpot_mean_s - off.summary.iloc[0].tpot_mean_s
    assert tpot == pytest.approx((M - D - P) / 59, rel=1e-6)
    # B's one token came out of a decode iteration it rode in: the iteration rows count it, mixed or not
    for run in (on, off):
        assert run.iterations.emitted.sum() == run.requests.output_len.sum() == 61
    rode = on.iterations[on.iterations.kind == "decode"]
    assert (rode.emitted > rode.batch * (design.steps + 1)).any()  # more than A alone could emit: B's first


def test_the_budget_counts_every_verify_token(tmp_path):
    """vLLM under speculative decoding: 4 decoding requests take 4 x (1 + 2 steps) of a 1000-token
    budget, and a long prompt's chunks fill the rest: each carrying verify is exactly 1000 tokens."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_len,output_len\n" + "0,100,400\n" * 4 + "0.05,5000,2\n")
    s = scenario({"arrival": "trace", "trace": str(path)}, NEXTN, chunked_prefill_tokens=1000)
    passes = simulate(s, keep_passes=True).passes
    verify = passes[passes.kind.eq("verify")].tokens
    assert verify.max() == 1000 and int((verify == 1000).sum()) == 5000 // (1000 - 12)
