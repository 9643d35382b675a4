"""The summary's latency and throughput columns of one run (results.to_results puts them in its
summary row): from every request's row (`summarize`, on arrays, as pandas' Series methods
computed them before: the same float64 bits) or, for runs whose request rows were not all kept,
from the streamed sums and histograms (`summarize_stats`). docs/metrics.md says where each
column is defined. `records` is a results.Records, `st` its RequestStats, `h` a LogHistogram.
"""
from __future__ import annotations

import numpy as np


def columns(rows: list[tuple], width: int) -> list[np.ndarray]:
    """Rows of `width` numbers -> one array per column, typed as a DataFrame of the rows types them
    (int64 where every value is an int, else float64)."""
    return [np.array(col) for col in zip(*rows)] if rows else [np.zeros(0) for _ in range(width)]


def _quantile(values: np.ndarray, q: float) -> float:
    """pandas' Series.quantile(q) (linear): np.quantile of the values as one row; NaN for none."""
    return np.quantile(values[None, :], np.array([q]), axis=1)[0, 0] if len(values) else float("nan")


def _mean(values: np.ndarray) -> float:
    """pandas' Series.mean(): the float64 sum over the count; NaN for none."""
    return values.sum(dtype=np.float64) / np.float64(len(values)) if len(values) else float("nan")


def summarize(req, records) -> dict:
    """Throughput, latency and accept length of one run, from every request's row (`req`: a
    mapping of REQUEST_COLUMNS to arrays, or a DataFrame of them), as sglang.bench_serving and
    vllm bench serve define them (docs/metrics.md says where each is defined and where they differ).

    tps: output tokens / makespan (first arrival to last finish); total_tps counts input
    tokens too. Per request: TTFT = first token - arrival, E2E = finish - arrival, TPOT =
    (E2E - TTFT) / (output - 1) over requests of more than one token; their mean, p50 and p99
    over requests. per_user_tps: mean of 1 / TPOT. interactivity: 1 / TPOT p50 (InferenceX's
    median interactivity). ITL: gaps between one request's streamed chunks (a decode iteration
    streams its accepted tokens as one), over every chunk of every request. accept_length:
    tokens emitted per request per decode iteration. mean_in_flight: sum of E2E / makespan."""
    arrival, first, finish = (np.asarray(req[c]) for c in ("arrival_s", "first_token_s", "finish_s"))
    input_len, output_len, iterations = (np.asarray(req[c]) for c in ("input_len", "output_len", "iterations"))
    decode_tokens = output_len - 1
    has_decode = decode_tokens > 0
    ttft, e2e = first - arrival, finish - arrival
    decode_time = finish - first
    tpot = decode_time[has_decode] / decode_tokens[has_decode]
    makespan = finish.max() - arrival.min()
    per = (lambda x: x / makespan) if makespan > 0 else (lambda x: float("nan"))
    return _columns(
        tps=per(output_len.sum()), per_user_tps=_mean(decode_tokens[has_decode] / decode_time[has_decode]),
        ttft=(_quantile(ttft, 0.5), _quantile(ttft, 0.99), _mean(ttft)),
        tpot=(_quantile(tpot, 0.5), _quantile(tpot, 0.99), _mean(tpot)),
        e2e=(_quantile(e2e, 0.5), _quantile(e2e, 0.99), _mean(e2e)),
        accept_length=decode_tokens.sum() / iterations.sum() if iterations.sum() else float("nan"),
        total_tps=per((input_len + output_len).sum()), request_rate=per(len(arrival)),
        itls=records.itl_histograms(), in_flight=per(e2e.sum()))


def summarize_stats(st, records) -> dict:
    """`summarize` from the streamed sums, for runs whose request rows were not all kept: the same
    columns, means and ratios exact, p50/p99 the histograms' (LogHistogram.RELATIVE_ERROR of the
    lower order statistic; p99 is marked `_s` like the exact ones)."""
    nan = float("nan")
    makespan = st.last_finish_s - st.first_arrival_s
    per = (lambda x: x / makespan) if makespan > 0 else (lambda x: nan)
    mean = (lambda h: h.total / h.n if h.n else nan)
    return _columns(
        tps=per(st.output_tokens), per_user_tps=st.per_user_tps_sum / st.num_decoding if st.num_decoding else nan,
        ttft=(st.ttft.quantile(0.5), st.ttft.quantile(0.99), mean(st.ttft)),
        tpot=(st.tpot.quantile(0.5), st.tpot.quantile(0.99), mean(st.tpot)),
        e2e=(st.e2e.quantile(0.5), st.e2e.quantile(0.99), st.e2e_sum_s / st.n if st.n else nan),
        accept_length=st.decode_tokens / st.iterations if st.iterations else nan,
        total_tps=per(st.input_tokens + st.output_tokens), request_rate=per(st.n),
        itls=records.itl_histograms(), in_flight=per(st.e2e_sum_s))


def _columns(*, tps, per_user_tps, ttft, tpot, e2e, accept_length, total_tps, request_rate, itls: tuple,
             in_flight) -> dict:
    """The summary's latency and throughput columns, in their order (the first eight as they
    were before docs/metrics.md; what the engines' benchmarks print besides them after)."""
    nan = float("nan")
    itl, itl_token = itls  # per streamed chunk, per token
    return {
        "tps": tps, "per_user_tps": per_user_tps, "ttft_p50_s": ttft[0], "ttft_p99_s": ttft[1],
        "tpot_p50_s": tpot[0], "tpot_p99_s": tpot[1], "e2e_mean_s": e2e[2], "accept_length": accept_length,
        "total_tps": total_tps, "request_rate_per_s": request_rate, "ttft_mean_s": ttft[2], "tpot_mean_s": tpot[2],
        "e2e_p50_s": e2e[0], "e2e_p99_s": e2e[1],
        "itl_mean_s": itl.total / itl.n if itl.n else nan, "itl_p50_s": itl.quantile(0.5), "itl_p99_s": itl.quantile(0.99),
        "interactivity": 1 / tpot[0] if tpot[0] > 0 else nan, "mean_in_flight": in_flight,
        **_token_itl(itl_token),
    }


def _token_itl(h) -> dict:
    """ITL per token as SGLang's native bench_serving backend records it: each chunk's gap
    divided by its tokens, one entry per token."""
    nan = float("nan")
    return {"itl_token_mean_s": h.total / h.n if h.n else nan, "itl_token_p50_s": h.quantile(0.5),
            "itl_token_p99_s": h.quantile(0.99)}
