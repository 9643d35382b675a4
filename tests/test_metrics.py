"""The summary's latency and throughput columns as the engines' benchmarks define them
(docs/metrics.md): each against its formula on request rows, ITL against the requests' own
decode spans, and the streamed summary against the exact one."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mtpsim.results import LogHistogram, Records, summarize
from mtpsim.scenario import validate
from mtpsim.sim import simulate

ROWS = pd.DataFrame({  # arrival, first token, finish, input, output, iterations
    "arrival_s": [0.0, 0.5, 1.0, 2.0], "first_token_s": [0.2, 0.9, 1.1, 2.6], "finish_s": [1.2, 1.9, 1.1, 4.6],
    "input_len": [100, 200, 50, 400], "output_len": [11, 5, 1, 21], "iterations": [4, 2, 0, 9]})


def test_columns_follow_the_bench_serving_formulas():
    records = Records()
    records.itl.add_many(np.array([0.25, 0.25, 0.5, 0.5]))
    got = summarize(ROWS, records)
    e2e = ROWS.finish_s - ROWS.arrival_s
    ttft = ROWS.first_token_s - ROWS.arrival_s
    decoding = ROWS.output_len > 1  # sglang/vllm: tpot only for output_len > 1
    tpot = ((e2e - ttft) / (ROWS.output_len - 1))[decoding].to_numpy()
    duration = 4.6 - 0.0
    assert got["tpot_mean_s"] == pytest.approx(np.mean(tpot))
    assert got["tpot_p50_s"] == pytest.approx(np.median(tpot)) and got["tpot_p99_s"] == pytest.approx(np.percentile(tpot, 99))
    assert got["ttft_p99_s"] == pytest.approx(np.percentile(ttft, 99)) and got["ttft_mean_s"] == pytest.approx(ttft.mean())
    assert got["e2e_p50_s"] == pytest.approx(np.median(e2e)) and got["e2e_mean_s"] == pytest.approx(e2e.mean())
    assert got["tps"] == pytest.approx(38 / duration) and got["total_tps"] == pytest.approx((38 + 750) / duration)
    assert got["request_rate_per_s"] == pytest.approx(4 / duration)
    assert got["interactivity"] == pytest.approx(1 / np.median(tpot))  # InferenceX: 1000 / median TPOT in ms
    assert got["per_user_tps"] == pytest.approx(np.mean(1 / tpot))
    assert got["mean_in_flight"] == pytest.approx(e2e.sum() / duration)  # sglang's "Concurrency"
    assert got["itl_mean_s"] == pytest.approx(0.375)
    assert got["itl_p50_s"] == pytest.approx(0.25, rel=LogHistogram.RELATIVE_ERROR)


def test_itl_chunks_tile_every_requests_decode():
    """Every decode iteration streams one chunk to each running request; its gaps, prefills
    between iterations included, add up to each request's first-token-to-finish time."""
    r = simulate(_scenario())
    req = r.requests
    row = r.summary.iloc[0]
    assert row.itl_mean_s == pytest.approx((req.finish_s - req.first_token_s).sum() / req.iterations.sum(), rel=1e-9)
    # with speculation a chunk holds accept-length tokens: ITL per chunk exceeds TPOT per token
    assert row.itl_mean_s > row.tpot_mean_s


def _scenario():
    return validate({
        "name": "metrics", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth": [0.8, 0.6, 0.4], "spread": 0.3},
        "workload": {"arrival": "poisson", "rate_per_s": 30.0, "num_requests": 200,
                     "input_len": {"dist": "uniform", "min": 64, "max": 3000},
                     "output_len": {"dist": "uniform", "min": 1, "max": 200}}})


def test_streamed_summary_matches_the_exact_one():
    exact = simulate(_scenario()).summary.iloc[0]
    streamed = simulate(_scenario(), max_request_rows=40).summary.iloc[0]
    for col in ("tps", "total_tps", "request_rate_per_s", "ttft_mean_s", "tpot_mean_s", "e2e_mean_s", "itl_mean_s",
                "mean_in_flight", "itl_p50_s", "itl_p99_s"):
        assert streamed[col] == pytest.approx(exact[col], rel=1e-9), col
    # histograms: the lower order statistic x_(floor(q (n - 1))), to LogHistogram.RELATIVE_ERROR
    req = simulate(_scenario()).requests
    e2e = np.sort(req.finish_s - req.arrival_s)
    decoding = req[req.output_len > 1]
    tpot = np.sort((decoding.finish_s - decoding.first_token_s) / (decoding.output_len - 1))
    err = LogHistogram.RELATIVE_ERROR
    assert streamed.e2e_p50_s == pytest.approx(e2e[int(0.5 * (len(e2e) - 1))], rel=err)
    assert streamed.e2e_p99_s == pytest.approx(e2e[int(0.99 * (len(e2e) - 1))], rel=err)
    assert streamed.interactivity == pytest.approx(1 / tpot[int(0.5 * (len(tpot) - 1))], rel=err)


def test_itl_per_token_spreads_each_chunk_over_its_tokens():
    """SGLang's native backend: a chunk of n tokens after a gap g is n entries of g / n."""
    records = Records()
    records.add_chunk_gaps(np.array([0.3, 0.2]), np.array([2, 0]))  # 3 tokens, then 1
    records.add_chunk_gaps(np.array([0.4]), None)                   # plain decoding: 1 token
    got = summarize(ROWS, records)
    assert got["itl_mean_s"] == pytest.approx(0.3)
    assert got["itl_token_mean_s"] == pytest.approx(0.9 / 5)
    assert got["itl_token_p50_s"] == pytest.approx(0.1, rel=LogHistogram.RELATIVE_ERROR)  # 0.1 0.1 0.1 0.2 0.4
    assert got["itl_token_p99_s"] == pytest.approx(0.2, rel=LogHistogram.RELATIVE_ERROR)  # lower order statistic


def test_itl_per_token_is_the_chunk_itl_over_the_tokens_each_chunk_holds():
    """Every draft accepted (steps 2): each chunk holds 3 tokens but a request's last (what it has
    left), so the per-token mean is the token-weighted mean of gap / tokens."""
    s = validate({"name": "itl", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
                  "speculative": {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"},
                  "acceptance": {"per_depth": [1.0, 1.0]},
                  "workload": {"arrival": "closed", "concurrency": 1, "num_requests": 3, "input_len": 200,
                               "output_len": 31}})
    row = simulate(s).summary.iloc[0]
    # 30 tokens after the first: 10 chunks of 3, so a chunk's gap over 3 per token
    assert row.itl_token_mean_s == pytest.approx(row.itl_mean_s / 3)
