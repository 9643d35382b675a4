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
for them: with the h200-sglang profile's bmm table left out, every old pin held exactly."""
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
                        'draft_share': 0.01150172039100067,
                        'duration_s_sum': 5.303148480534776,
                        'e2e_mean_s': 2.8597525299794206,
                        'extend_share': 0.007551349327520292,
                        'finish_s_sum': 382.6947358160533,
                        'first_token_s_sum': 194.26786822427465,
                        'host_share': 0.023661226997616875,
                        'iterations_total': 80,
                        'per_user_tps': 45.83408384405201,
                        'prefill_share': 0.6174993090257521,
                        'tpot_p50_s': 0.023662255826183066,
                        'tpot_p99_s': 0.04717332241987076,
                        'tps': 1448.1962985176572,
                        'ttft_p50_s': 0.6445996438437676,
                        'ttft_p99_s': 2.062718860300056,
                        'verify_share': 0.3397863942581099},
 'deepseek-none-c64-eager': {'accept_length': 1.0,
                             'accepted_sum': 0,
                             'draft_share': 0.0,
                             'duration_s_sum': 6.884394757087234,
                             'e2e_mean_s': 3.7265777300964156,
                             'extend_share': 0.0,
                             'finish_s_sum': 495.2022919517205,
                             'first_token_s_sum': 230.24707448482133,
                             'host_share': 0.0,
                             'iterations_total': 170,
                             'per_user_tps': 30.98861417991787,
                             'prefill_share': 0.43953965531101974,
                             'tpot_p50_s': 0.03362372569389866,
                             'tpot_p99_s': 0.05117942689859606,
                             'tps': 1115.5664762096508,
                             'ttft_p50_s': 0.8825729787452413,
                             'ttft_p99_s': 2.0173096657034097,
                             'verify_share': 0.5604603446889803},
 'frozen_kv-batch-chunked-roofline': {'accept_length': 2.739130434782609,
                                      'accepted_sum': 480,
                                      'draft_share': 0.054854985314312155,
                                      'duration_s_sum': 0.5381763211880701,
                                      'e2e_mean_s': 0.40489500342115275,
                                      'extend_share': 0.0,
                                      'finish_s_sum': 4.858740041053833,
                                      'first_token_s_sum': 2.3647181158150596,
                                      'host_share': 0.10470174510020618,
                                      'iterations_total': 70,
                                      'per_user_tps': 317.9741120345091,
                                      'prefill_share': 0.42362169138509054,
                                      'tpot_p50_s': 0.0032086947118401448,
                                      'tpot_p99_s': 0.004678053150882631,
                                      'tps': 1427.0416028423074,
                                      'ttft_p50_s': 0.18601192308192155,
                                      'ttft_p99_s': 0.38660641377176624,
                                      'verify_share': 0.4168215782003911},
 'multi_layer-poisson-tp8': {'accept_length': 2.7794117647058822,
                             'accepted_sum': 1210,
                             'draft_share': 0.0,
                             'duration_s_sum': 1.316611613404783,
                             'e2e_mean_s': 0.5761345294903484,
                             'extend_share': 0.023230329374894016,
                             'finish_s_sum': 31.626602166815182,
                             'first_token_s_sum': 15.507728071351254,
                             'host_share': 0.05517192713510368,
                             'iterations_total': 75,
                             'per_user_tps': 119.5914892865913,
                             'prefill_share': 0.3048933172954027,
                             'tpot_p50_s': 0.008326710594365117,
                             'tpot_p99_s': 0.010595189845513994,
                             'tps': 1458.2888229542828,
                             'ttft_p50_s': 0.04049341481799967,
                             'ttft_p99_s': 0.05990430271970118,
                             'verify_share': 0.6167044261945996},
 'nextn-eagle3-closed-spread': {'accept_length': 2.7452830188679247,
                                'accepted_sum': 1480,
                                'draft_share': 0.056382608349548884,
                                'duration_s_sum': 1.6821783226306157,
                                'e2e_mean_s': 0.2857833034968818,
                                'extend_share': 0.03257152476140292,
                                'finish_s_sum': 34.042212538824195,
                                'first_token_s_sum': 23.899845296970994,
                                'host_share': 0.09184757520735631,
                                'iterations_total': 164,
                                'per_user_tps': 237.42113531641627,
                                'prefill_share': 0.2200746333616177,
                                'tpot_p50_s': 0.004171489109386546,
                                'tpot_p99_s': 0.007560572665204896,
                                'tps': 1407.6985585552463,
                                'ttft_p50_s': 0.029518720020430933,
                                'ttft_p99_s': 0.057676052488315685,
                                'verify_share': 0.5991236583200742},
 'none-closed': {'accept_length': 1.0,
                 'accepted_sum': 0,
                 'draft_share': 0.0,
                 'duration_s_sum': 1.5247473618622593,
                 'e2e_mean_s': 0.5082491206207531,
                 'extend_share': 0.0,
                 'finish_s_sum': 48.791915579592285,
                 'first_token_s_sum': 26.38605547252802,
                 'host_share': 0.0,
                 'iterations_total': 192,
                 'per_user_tps': 134.96469162755213,
                 'prefill_share': 0.08157489449191721,
                 'tpot_p50_s': 0.007409345273500086,
                 'tpot_p99_s': 0.007409345273500093,
                 'tps': 2014.7600034198415,
                 'ttft_p50_s': 0.04146036839024763,
                 'ttft_p99_s': 0.04146036839024769,
                 'verify_share': 0.9184251055080828},
 'parallel_heads-dp2': {'accept_length': 2.7794117647058822,
                        'accepted_sum': 1210,
                        'draft_share': 0.082951193083247,
                        'duration_s_sum': 1.296926240701771,
                        'e2e_mean_s': 0.2084948205067224,
                        'extend_share': 0.0,
                        'finish_s_sum': 12.478100719632055,
                        'first_token_s_sum': 6.7222620762486915,
                        'host_share': 0.12463314792099206,
                        'iterations_total': 162,
                        'per_user_tps': 331.63537905363825,
                        'prefill_share': 0.11103654494390483,
                        'tpot_p50_s': 0.0030280303950922976,
                        'tpot_p99_s': 0.0037040929748123506,
                        'tps': 2930.0944863885934,
                        'ttft_p50_s': 0.016164378337925583,
                        'ttft_p99_s': 0.024251298287525775,
                        'verify_share': 0.681379114051856}}


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
