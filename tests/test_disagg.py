"""Disaggregated deployments (mtpsim/sim/disagg.py, mtpsim/pools.py): the pools invent no time, one
request's KV transfer is bytes / bandwidth + latency from the hardware entry, the per-pool columns
mean what they say, and every bad pool layout is one line naming its key."""
from __future__ import annotations

import pytest

from mtpsim import catalog, cli
from mtpsim import scenario as sc
from mtpsim.errors import ScenarioError
from mtpsim.sim import simulate
from tests.test_bad_input import one_line_error, run

DSV3 = {"name": "d", "model": "deepseek-v3", "hardware": "h200",
        "speculative": {"design": "nextn", "steps": 3}, "acceptance": {"per_depth": [0.85, 0.75, 0.65]},
        "workload": {"arrival": "closed", "concurrency": 1, "num_requests": 3, "input_len": 1024, "output_len": 48}}


def disagg(base=DSV3, prefill=None, decode=None, **extra) -> dict:
    pools = {"prefill": prefill or {"tp": 8}, "decode": decode or {"tp": 8}, **extra}
    return {**base, "disaggregation": pools}


@pytest.mark.parametrize("design", ["nextn", "none"])
def test_free_link_and_one_request_at_a_time_reproduce_the_aggregated_tpot(design):
    """1P1D, the aggregated layout in both pools, a link that costs nothing, one user: the decode
    pool runs the aggregated run's decode iterations, so its TPOT is the aggregated one."""
    spec = {**DSV3, "speculative": {"design": design, "steps": 3} if design != "none" else {"design": "none"}}
    if design == "none":
        spec.pop("acceptance")
    agg = simulate(sc.validate({**spec, "parallel": {"tp": 8}})).summary.iloc[0]
    dis = simulate(sc.validate(disagg(spec, link="free"))).summary.iloc[0]
    assert dis.tpot_p50_s == pytest.approx(agg.tpot_p50_s, rel=0.02)
    assert dis.tpot_p99_s == pytest.approx(agg.tpot_p99_s, rel=0.02)
    assert dis.ttft_p50_s == pytest.approx(agg.ttft_p50_s, rel=0.02)  # the same prefill, nothing to move
    assert dis.transfer_mean_s == 0.0 and dis.accept_length == pytest.approx(agg.accept_length)


def _kv_bytes_per_gpu(prompt: int, layers: int) -> float:
    """DeepSeek-V3's MLA cache by hand: the latent (kv_lora_rank 512) and the rope key (64) per
    token per layer, bf16, whole on every GPU (MLA does not split its cache over tp)."""
    model = catalog.load_model("deepseek-v3")
    att = model.attention_kinds["mla"]
    assert model.dtypes.kv_cache == "bf16"
    return prompt * layers * (att.kv_lora_rank + att.qk_rope_head_dim) * 2


@pytest.mark.parametrize("gpu,link,layers", [("h200", "network", 61 + 1), ("gb200", "nvlink", 61 + 1)])
def test_one_requests_transfer_is_bytes_over_bandwidth_plus_latency(gpu, link, layers):
    """8 + 8 H200s span two 8-GPU NVLink boards: the network; 8 + 8 GB200s sit in one NVL72
    domain: NVLink. nextn moves its MTP layer's KV too (62 layers)."""
    one = {**DSV3, "hardware": gpu, "workload": {**DSV3["workload"], "num_requests": 1}}
    got = simulate(sc.validate(disagg(one))).summary.iloc[0]
    hw = catalog.load_hardware(gpu)
    bw, lat = ((hw.internode_bandwidth_bytes_per_s, hw.internode_latency_s) if link == "network"
               else (hw.link_bandwidth_bytes_per_s, hw.link_latency_s))
    nbytes = _kv_bytes_per_gpu(1024, layers)
    assert got.link == link and got.transfer_bytes_per_gpu_mean == pytest.approx(nbytes)
    assert got.transfer_mean_s == pytest.approx(nbytes / bw + lat, rel=1e-9)
    free = simulate(sc.validate(disagg(one, link="free"))).summary.iloc[0]
    assert got.ttft_p50_s - free.ttft_p50_s == pytest.approx(got.transfer_mean_s, rel=1e-6)  # TTFT holds it


SLOW = {"from": "h200", "internode_bandwidth_bytes_per_s": 1e9}  # slower than the layers: the stream lags


@pytest.mark.parametrize("gpu,link", [("h200", "network"), ("gb200", "nvlink"), (SLOW, "network")])
def test_streamed_kv_leaves_layer_by_layer(gpu, link):
    """With kv_streaming each of the 62 layers' KV leaves once its layer has run during the
    prefill pass: what follows the prefill is the last layer's bytes, or the whole KV from the
    first layer's end on where the link is slower than the layers; the latency once."""
    one = {**DSV3, "hardware": gpu, "workload": {**DSV3["workload"], "num_requests": 1}}
    plain = sc.validate(disagg(one))
    res = simulate(sc.validate(disagg(one, kv_streaming=True)))
    got, whole, hw = res.summary.iloc[0], simulate(plain).summary.iloc[0], plain.specs.hardware
    bw, lat = ((hw.internode_bandwidth_bytes_per_s, hw.internode_latency_s) if link == "network"
               else (hw.link_bandwidth_bytes_per_s, hw.link_latency_s))
    span = res.iterations[res.iterations.kind == "prefill"].duration_s.iloc[0]
    nbytes, last = _kv_bytes_per_gpu(1024, 62), _kv_bytes_per_gpu(1024, 1)
    expected = lat + max(last / bw, span / 62 + nbytes / bw - span)
    assert got.transfer_mean_s == pytest.approx(expected, rel=1e-6)
    assert got.transfer_mean_s < whole.transfer_mean_s
    assert (gpu is SLOW) == (got.transfer_mean_s > lat + 2 * last / bw)  # the lagging stream shows past the last layer
    assert got.transfer_bytes_per_gpu_mean == whole.transfer_bytes_per_gpu_mean  # the same bytes, earlier


@pytest.mark.parametrize("decode,waits", [({"tp": 8}, True), ({"tp": 8, "replicas": 2}, False),
                                          ({"tp": 8, "ep": 8, "attention_dp": 2}, False)])
def test_prefill_replicas_share_the_decode_gpus_links(decode, waits):
    """Two prefill replicas finish a prompt each at once: into one decode replica the second KV
    waits for the first on the receiving GPUs' links (mean 1.5 transfers); two decode replicas,
    or two attention groups with links of their own, take both at once."""
    both = {**DSV3, "workload": {**DSV3["workload"], "arrival": "batch", "concurrency": 2, "num_requests": 2}}
    got = simulate(sc.validate(disagg(both, {"tp": 8, "replicas": 2}, decode))).summary.iloc[0]
    one = simulate(sc.validate(disagg({**both, "workload": {**both["workload"], "concurrency": 1, "num_requests": 1}})))
    alone = one.summary.iloc[0].transfer_mean_s
    assert got.transfer_mean_s == pytest.approx(1.5 * alone if waits else alone, rel=1e-6)


def test_an_aggregated_scenario_becomes_pools():
    """mtpsim.disaggregated: the scenario a deployment search compares with the aggregated one."""
    import mtpsim
    agg = sc.validate({**DSV3, "parallel": {"tp": 8}})
    pools = mtpsim.disaggregated(agg, {"tp": 8}, {"tp": 8}, link="free")
    assert pools == sc.validate(disagg(link="free")) and pools.parallel.tp == 1
    with pytest.raises(ScenarioError, match="exceed"):
        mtpsim.disaggregated(agg, {"tp": 8}, {"tp": 8, "replicas": 2}, gpus=16)


def test_frozen_kv_moves_only_the_targets_kv():
    gemma = {"name": "g", "model": "gemma-4-e2b", "hardware": "h100-sxm",
             "speculative": {"design": "frozen_kv", "steps": 2}, "acceptance": {"per_depth": [0.8, 0.7]},
             "workload": {"arrival": "closed", "concurrency": 1, "num_requests": 1, "input_len": 512, "output_len": 8}}
    frozen = simulate(sc.validate(disagg(gemma, {"tp": 1}, {"tp": 1}))).summary.iloc[0]
    plain = simulate(sc.validate(disagg({**gemma, "speculative": {"design": "none"}}, {"tp": 1}, {"tp": 1}))).summary.iloc[0]
    assert frozen.transfer_bytes_per_gpu_mean == plain.transfer_bytes_per_gpu_mean > 0


def test_pool_columns_under_load():
    """Poisson load on 1P2D: utilisations are fractions, queues non-negative, the transfer a part
    of TTFT; the prefill pool's busy time is what its iterations add up to."""
    spec = disagg({**DSV3, "workload": {"arrival": "poisson", "rate_per_s": 6.0, "num_requests": 60,
                                        "input_len": 2048, "output_len": 64}}, decode={"tp": 8, "replicas": 2})
    res = simulate(sc.validate(spec))
    row = res.summary.iloc[0]
    assert row.pools == "1P(tp8) 2D(tp8)" and row.link == "network"
    for role in ("prefill", "decode"):
        assert 0 < row[f"{role}_utilisation"] <= 1 and row[f"{role}_queue_mean_s"] >= 0
    assert 0 < row.transfer_share_of_ttft < 1
    makespan = (res.requests.finish_s.max() - res.requests.arrival_s.min())
    busy = res.iterations[res.iterations.replica == 0].duration_s.sum()
    assert row.prefill_utilisation == pytest.approx(busy / makespan)
    assert set(res.iterations[res.iterations.replica > 0].kind) == {"decode"}


@pytest.mark.parametrize("change,key,word", [
    ({"gpus": 12}, "disaggregation.gpus", "exceed"),
    ({"decode": {"tp": 3}}, "disaggregation.decode.tp", "decode pool"),
    ({"link": "nvlink"}, "disaggregation.link", "nvlink"),
])
def test_bad_pools_name_their_key(change, key, word):
    spec = disagg()
    spec["disaggregation"].update(change)
    with pytest.raises(ScenarioError) as err:
        sc.validate(spec)
    assert err.value.key == key and word in err.value.reason


def test_bad_pools_are_one_line_exit_2(tmp_path, capsys):
    text = ("name: p\nmodel: deepseek-v3\nhardware: mi300x\nspeculative: {design: none}\n"
            "workload: {num_requests: 2, input_len: 64, output_len: 8}\n"
            "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}\n")
    one_line_error(capsys, run(tmp_path, text), "disaggregation.link", "scale-out network")
    one_line_error(capsys, run(tmp_path, text.replace("hardware: mi300x", "hardware: h200\nparallel: {tp: 8}")),
                   "parallel", "per pool")


def test_decode_pool_too_small_for_one_request(tmp_path, capsys):
    """62% of an H200 less DeepSeek-V3's 85 GB of FP8 weights leaves ~6.5 GB of KV per GPU: an 80k
    prompt fits the prefill pool, its 160k-token request does not fit the decode pool."""
    text = ("name: p\nmodel: deepseek-v3\nhardware: h200\nspeculative: {design: none}\n"
            "engine: {mem_fraction: 0.62}\n"
            "workload: {arrival: batch, concurrency: 1, num_requests: 1, input_len: 80000, output_len: 80000}\n"
            "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}\n")
    line = one_line_error(capsys, run(tmp_path, text), "disaggregation.decode", "decode pool")
    assert "160000 tokens" in line
    line = one_line_error(capsys, run(tmp_path, text.replace("decode: {tp: 8}", "decode: {tp: 4}")),
                          "disaggregation.decode", "no KV pool")
    one_line_error(capsys, run(tmp_path, text.replace("input_len: 80000, output_len: 80000", "input_len: 120000, output_len: 8")),
                   "disaggregation.prefill", "prefill pool")
    assert cli.main(run(tmp_path, text.replace("output_len: 80000", "output_len: 8"))) == 0


def test_the_prefill_pool_caches_shared_prefixes():
    """One user at a time, a 3072-token system prompt in every prompt: after the first, the prefill
    pool prefills 1024 tokens over the cached 3072; aggregated and disaggregated (free link) runs
    hit alike and lower TTFT alike, and the cache can be turned off."""
    shared = {**DSV3, "workload": {**DSV3["workload"], "input_len": 4096, "num_requests": 4,
                                   "shared_prefix": {"tokens": 3072}}}
    off = {**shared, "engine": {"prefix_cache": {"enabled": False}}}
    agg = simulate(sc.validate({**shared, "parallel": {"tp": 8}})).summary.iloc[0]
    dis = simulate(sc.validate(disagg(shared, link="free"))).summary.iloc[0]
    cold = simulate(sc.validate(disagg(off, link="free"))).summary.iloc[0]
    assert dis.prefix_saved_tokens == agg.prefix_saved_tokens == 3 * 3072
    assert "prefix_saved_tokens" not in cold
    assert dis.ttft_p50_s == pytest.approx(agg.ttft_p50_s, rel=0.02) and dis.ttft_p50_s < 0.5 * cold.ttft_p50_s
