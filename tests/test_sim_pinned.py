"""Engine results pinned: seeded scenarios whose summaries were computed with the engine before
the speed work (issue 13, commit 046f31c) must come out the same. Integers exactly; floats to
1e-9 relative, the room a changed float summation order may take (sums over the batch computed
from running totals instead of per-request arrays). The three cases priced by a calibrated
profile with MoE layers (multi_layer-poisson-tp8, deepseek-nextn-c64, deepseek-none-c64-eager)
were re-pinned once after: the MoE rows' touched-expert labels were corrected
(aic_rows.balanced_touched), a deliberate change of the measured data. Before re-pinning, the
merged engine gave every old pin exactly on the old profiles. The two DeepSeek-V3 cases were
re-pinned once more when calibrated prices got a physical floor (an op is never faster than its
bytes at the profile's best measured stream rate; the DeepSeek-V3 MoE rows were): the full
suite passed on the old pins just before that change. The cases name SGLang v0.5.10 since engine
releases got rules (engines.py): the pins were taken with speculative iterations that overlap no
host work, which SGLang's default release (v0.5.12, spec v2) no longer is. They leave out the
`shared_expert_fusion` rule (DeepSeek-V3's shared expert priced inside the routed-expert kernel)
and the side-stream rules (`shared_experts_dual_stream`, `dual_stream_under_cuda_graphs`: the
unfused shared experts priced beside the routed ones), changes of pricing, not of the engine,
added after the pins: with them the DeepSeek cases move, and without them every pin holds exactly.
The two DeepSeek-V3 cases were re-pinned once more when MLA's absorbed W_UK / W_UV got their own
measured rows (the bmm family, aiconfigurator's mla_bmm tables) in place of GEMM rows standing in
for them: with the h200-sglang profile's bmm table left out, every old pin held exactly. The six
cases with prompts priced by a converted profile were re-pinned when prefill attention got the
measured context-kernel rows (the prefill_attention family, aiconfigurator's context_attention /
context_mla tables) in place of decode rows extrapolated to prompt-sized queries: with
CalibratedCosts.prefill_table answering None, every old pin held exactly. The five speculative
cases were re-pinned when SGLang's captured CUDA-graph sizes came from its source by release
(engines/sglang.yaml cuda_graph pads_to / speculative_pads_to and the graph_sizes_* rules: a
speculative batch of 3 replays a graph of 3, not 4): with GraphCapture.padded_sizes answering
None (every multiple of 8, as before), every old pin held exactly. The EAGLE-3 case was
re-pinned (by under 1e-4 relative) when a lookup past a table's grid came to read the grid's
nearest edge, interpolated (tables.nearest_cell), in place of its nearest measured cell: with the
old nearest_cell every old pin held exactly. deepseek-nextn-c64 and multi_layer-poisson-tp8 were
re-pinned (by under 2e-5 relative, draft_share 7e-5) when an MoE cell of more experts than its
tokens were timed touching came to read those experts timed at the next larger token count
(table_build._build_table): with the fill along touched alone every old pin held exactly. The
four speculative cases priced by a profile were re-pinned when an extrapolated verify's attention
came to scale only the time above its own launch's floor (tables.slice_floor), not above the
config's fastest call: the full suite passed on the old pins just before that change
(multi_layer-poisson-tp8 moved most, TPS +0.8% and e2e -3.7%, its Poisson arrivals meeting other
iterations; the others by under 2e-4 relative). deepseek-nextn-c64 and multi_layer-poisson-tp8
were re-pinned when an MoE lookup off the table's timed routings came to read the times measured at
its top_k and width by work (tables.along_work) in place of scaling a cell filled from a neighbour
(a 3-token verify priced below a 2-token one): the full suite passed on the old pins just before
that change (deepseek-nextn-c64 by under 4e-4 relative; multi_layer-poisson-tp8's TPS +0.3%, two
fewer iterations, its Poisson arrivals meeting other iterations). Both were re-pinned once more when
that read came to take only the rows of the token counts bracketing the op's (a 64-token decode had
read rows of thousands of tokens), a MoE config of other dims came to be the middling-speed one of
the three nearest, and a spike along a MoE table's timed diagonal came to be replaced: the full suite
passed on the previous pins just before (deepseek-nextn-c64 by under 3e-4 relative;
multi_layer-poisson-tp8 back to 75 iterations, TPS -0.1%). And once more when that read came to
take one more token count on each side (a routing of more experts than its own count's row,
as the busiest EP rank's, had fallen back to the scaled fill): the full suite passed on the
previous pins just before. The five cases with GQA layers were re-pinned when a layer's queries,
keys and values came to be priced as the one GEMM the engines run (costs/attention.py `qkv_proj`,
in place of a q GEMM and a k/v GEMM): the full suite passed on the old pins just before that
change, and the two DeepSeek-V3 (MLA) pins hold exactly."""
from __future__ import annotations

import pytest

from mtpsim.scenario import validate
from mtpsim.sim import simulate


def _base(design, model, hw, tp=1, steps=3, alphas=(0.9, 0.7, 0.5), spread=0.0, **kw):
    d = {"name": "pin", "model": model, "hardware": hw, "parallel": {"tp": tp, "dp": kw.pop("dp", 1)},
         "speculative": {"design": design, "steps": steps} if design != "none" else {"design": "none"},
         "acceptance": {"per_depth": list(alphas), "spread": spread} if design != "none" else {},
         "workload": {"arrival": "closed", "concurrency": 8, "num_requests": 40, "input_len": 128, "output_len": 64},
         # spec v1's SGLang, as the pins were taken, without the shared-expert rules that came after
         # (fusion into the routed kernel; the unfused shared experts' side stream, costs/streams.py)
         "engine": {"version": "0.5.10", "ignore_rules": ["shared_expert_fusion", "shared_experts_dual_stream",
                                                          "dual_stream_under_cuda_graphs"]}, "cost": {}}
    for k, v in kw.items():
        d[k].update(v)
    return d


PINNED = {
    "nextn-eagle3-closed-spread": _base("nextn", "llama-3.1-8b", "h100-sxm", spread=0.3,
        speculative={"draft": "eagle3-llama-3.1-8b"},
        workload={"output_len": {"dist": "uniform", "min": 1, "max": 120},
                  "input_len": {"dist": "lognormal", "mean": 300, "std": 200, "min": 1, "max": 2000}}),
    "none-closed": _base("none", "llama-3.1-8b", "h100-sxm", workload={"concurrency": 16, "num_requests": 48}),
    "multi_layer-poisson-tp8": _base("multi_layer", "mimo-v2-flash", "h200", tp=8,
        workload={"arrival": "poisson", "rate_per_s": 40.0, "num_requests": 30}),
    "frozen_kv-batch-chunked-roofline": _base("frozen_kv", "gemma-4-e2b", "a100-80g", cost={"model": "roofline"},
        workload={"arrival": "batch", "concurrency": 12, "num_requests": 12, "input_len": 700},
        engine={"chunked_prefill_tokens": 512, "max_running_requests": 6}),
    "parallel_heads-dp2": _base("parallel_heads", "meta-mtp-7b", "h100-sxm", dp=2,
        workload={"concurrency": 10, "num_requests": 30},
        engine={"dp_routing": "least_loaded"}),  # the routing the pins were taken with (SGLang round-robins)
    "deepseek-nextn-c64": _base("nextn", "deepseek-v3", "h200", tp=8, alphas=(0.87, 0.72, 0.62),
        workload={"concurrency": 64, "num_requests": 96, "input_len": 1024, "output_len": 80},
        engine={"max_running_requests": 256}),
    "deepseek-none-c64-eager": _base("none", "deepseek-v3", "h200", tp=8,
        workload={"concurrency": 64, "num_requests": 96, "input_len": 1024, "output_len": 80},
        engine={"max_running_requests": 256, "max_graph_batch": 32}),
}


FIELDS = ["tps", "per_user_tps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s",
          "accept_length", "draft_share", "verify_share", "extend_share", "prefill_share", "host_share"]


def fingerprint(r):
    row = r.summary.iloc[0]
    out = {f: float(row[f]) for f in FIELDS}
    out["finish_s_sum"] = float(r.requests.finish_s.sum())
    out["first_token_s_sum"] = float(r.requests.first_token_s.sum())
    out["iterations_total"] = int(row.iterations_total)
    out["accepted_sum"] = int(r.requests.accepted.sum())
    out["duration_s_sum"] = float(r.iterations.duration_s.sum())
    return out


EXPECTED = {'deepseek-nextn-c64': {'accept_length': 2.8372615039281706,
                        'accepted_sum': 4911,
                        'draft_share': 0.01133059202762801,
                        'duration_s_sum': 5.3543122931176015,
                        'e2e_mean_s': 2.902188036770305,
                        'extend_share': 0.00744381576427345,
                        'finish_s_sum': 388.9663487942224,
                        'first_token_s_sum': 198.92037334542732,
                        'host_share': 0.023435129131576835,
                        'iterations_total': 80,
                        'per_user_tps': 45.782582940965575,
                        'prefill_share': 0.6232466604927825,
                        'tpot_p50_s': 0.02393589035263438,
                        'tpot_p99_s': 0.04790137699450378,
                        'tps': 1434.357874469112,
                        'ttft_p50_s': 0.665064499114038,
                        'ttft_p99_s': 2.128206397164922,
                        'verify_share': 0.3345438025837392},
 'deepseek-none-c64-eager': {'accept_length': 1.0,
                             'accepted_sum': 0,
                             'draft_share': 0.0,
                             'duration_s_sum': 6.981041686492641,
                             'e2e_mean_s': 3.780270468654976,
                             'extend_share': 0.0,
                             'finish_s_sum': 502.41859601399074,
                             'first_token_s_sum': 235.27271481390247,
                             'host_share': 0.0,
                             'iterations_total': 170,
                             'per_user_tps': 30.796218121310076,
                             'prefill_share': 0.44729877977986393,
                             'tpot_p50_s': 0.03377664805055279,
                             'tpot_p99_s': 0.051893064562981976,
                             'tps': 1100.12235206384,
                             'ttft_p50_s': 0.9107616664884848,
                             'ttft_p99_s': 2.0817409519736807,
                             'verify_share': 0.552701220220136},
 'frozen_kv-batch-chunked-roofline': {'accept_length': 2.739130434782609,
                                      'accepted_sum': 480,
                                      'draft_share': 0.055397833301946905,
                                      'duration_s_sum': 0.5257396313149632,
                                      'e2e_mean_s': 0.39559709745671395,
                                      'extend_share': 0.0,
                                      'finish_s_sum': 4.747165169480567,
                                      'first_token_s_sum': 2.313454828379937,
                                      'host_share': 0.1071785283887848,
                                      'iterations_total': 70,
                                      'per_user_tps': 325.93875213603263,
                                      'prefill_share': 0.42466229339900957,
                                      'tpot_p50_s': 0.003129799880037549,
                                      'tpot_p99_s': 0.0045704774302607115,
                                      'tps': 1460.7991375485674,
                                      'ttft_p50_s': 0.18200076099034806,
                                      'ttft_p99_s': 0.3778796024970216,
                                      'verify_share': 0.41276134491025884},
 'multi_layer-poisson-tp8': {'accept_length': 2.7794117647058822,
                             'accepted_sum': 1210,
                             'draft_share': 0.0,
                             'duration_s_sum': 1.28703357664222,
                             'e2e_mean_s': 0.5470855803565218,
                             'extend_share': 0.022705110610059087,
                             'finish_s_sum': 30.755133692800385,
                             'first_token_s_sum': 15.466029667899583,
                             'host_share': 0.057216844483670364,
                             'iterations_total': 77,
                             'per_user_tps': 126.67298967418591,
                             'prefill_share': 0.30720431797750164,
                             'tpot_p50_s': 0.007956812546783043,
                             'tpot_p99_s': 0.010332126594850048,
                             'tps': 1491.8025720891794,
                             'ttft_p50_s': 0.035034280495759657,
                             'ttft_p99_s': 0.057679616623529495,
                             'verify_share': 0.6128737269287688},
 'nextn-eagle3-closed-spread': {'accept_length': 2.7452830188679247,
                                'accepted_sum': 1480,
                                'draft_share': 0.05611936386587916,
                                'duration_s_sum': 1.6437819671796439,
                                'e2e_mean_s': 0.2792461450034308,
                                'extend_share': 0.032645981599219664,
                                'finish_s_sum': 33.29252926602457,
                                'first_token_s_sum': 23.386823762047655,
                                'host_share': 0.09399300094835183,
                                'iterations_total': 164,
                                'per_user_tps': 242.9359586070087,
                                'prefill_share': 0.21812157660560408,
                                'tpot_p50_s': 0.00408317970504085,
                                'tpot_p99_s': 0.007349119453300649,
                                'tps': 1440.580349024603,
                                'ttft_p50_s': 0.028568079172814786,
                                'ttft_p99_s': 0.0576999600146228,
                                'verify_share': 0.5991200769809453},
 'none-closed': {'accept_length': 1.0,
                 'accepted_sum': 0,
                 'draft_share': 0.0,
                 'duration_s_sum': 1.4946676434622588,
                 'e2e_mean_s': 0.498222547820753,
                 'extend_share': 0.0,
                 'finish_s_sum': 47.82936459079228,
                 'first_token_s_sum': 25.908205718928023,
                 'host_share': 0.0,
                 'iterations_total': 192,
                 'per_user_tps': 137.94891126314016,
                 'prefill_share': 0.083359812139995,
                 'tpot_p50_s': 0.007249060473500082,
                 'tpot_p99_s': 0.007249060473500089,
                 'tps': 2055.3064177424735,
                 'ttft_p50_s': 0.041531737990247675,
                 'ttft_p99_s': 0.041531737990247675,
                 'verify_share': 0.916640187860005},
 'parallel_heads-dp2': {'accept_length': 2.7794117647058822,
                        'accepted_sum': 1210,
                        'draft_share': 0.08266898261299276,
                        'duration_s_sum': 1.2714731105074564,
                        'e2e_mean_s': 0.2045635088655195,
                        'extend_share': 0.0,
                        'finish_s_sum': 12.249153624191099,
                        'first_token_s_sum': 6.603845841291598,
                        'host_share': 0.12712813087764643,
                        'iterations_total': 162,
                        'per_user_tps': 338.1575377208391,
                        'prefill_share': 0.11184470247383999,
                        'tpot_p50_s': 0.002969414425765755,
                        'tpot_p99_s': 0.0036351552774455276,
                        'tps': 2988.304219231046,
                        'ttft_p50_s': 0.0157750695020073,
                        'ttft_p99_s': 0.023816843981039927,
                        'verify_share': 0.678358184035521}}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_engine_results_equal_the_pinned_ones(name):
    got, want = fingerprint(simulate(validate(PINNED[name]))), EXPECTED[name]
    for key, value in want.items():
        if isinstance(value, int):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-15), key


# ---------------------------------------------------------------------- streamed request stats

def test_streamed_summary_matches_the_exact_one_within_the_stated_error():
    """A run whose request rows are capped at 5 gives the summary the uncapped run computes from
    every row: sums and means to rounding, p50/p99 within LogHistogram.RELATIVE_ERROR of the
    exact quantile's bracketing order statistics."""
    import numpy as np

    from mtpsim.results import LogHistogram
    data = PINNED["nextn-eagle3-closed-spread"]
    exact, streamed = simulate(validate(data)), simulate(validate(data), max_request_rows=5)
    assert streamed.requests_truncated and len(streamed.requests) == 5 and not exact.requests_truncated
    a, b = exact.summary.iloc[0], streamed.summary.iloc[0]
    assert b.requests_total == a.requests_total == 40 and b.requests_kept == 5
    for col in ("tps", "per_user_tps", "e2e_mean_s", "accept_length", "verify_share"):
        assert b[col] == pytest.approx(a[col], rel=1e-12), col
    req, err = exact.requests, LogHistogram.RELATIVE_ERROR
    has_decode = req.output_len > 1
    values = {"ttft": req.first_token_s - req.arrival_s,
              "tpot": ((req.finish_s - req.first_token_s) / (req.output_len - 1))[has_decode]}
    for name, v in values.items():
        for q in (0.5, 0.99):
            lo, hi = np.quantile(v, q, method="lower"), np.quantile(v, q, method="higher")
            got = b[f"{name}_p{round(q * 100)}_s"]
            assert lo * (1 - err) <= got <= hi * (1 + err), (name, q, lo, got, hi)
            assert lo <= a[f"{name}_p{round(q * 100)}_s"] <= hi


def test_log_histogram_quantiles_are_within_the_stated_error():
    import numpy as np

    from mtpsim.results import LogHistogram
    rng = np.random.default_rng(0)
    values = rng.lognormal(-4, 2, 20_000)
    h = LogHistogram()
    for v in values:
        h.add(float(v))
    assert LogHistogram.RELATIVE_ERROR <= 0.01
    for q in (0.01, 0.5, 0.9, 0.99, 0.999):
        exact = np.quantile(values, q, method="lower")
        assert h.quantile(q) == pytest.approx(exact, rel=LogHistogram.RELATIVE_ERROR)
