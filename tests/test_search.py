"""`mtpsim search`: the space it enumerates, the Pareto flags and crossings, targets and the pick,
the cache, and its bad input (one line, exit 2). End-to-end runs keep to one layout and two loads."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mtpsim import cli
from mtpsim import scenario as sc
from mtpsim.search import frontier, layouts, space
from mtpsim.search.bounds import SearchBounds
from mtpsim.search.targets import Target, finalists, parse_target
from tests.test_bad_input import one_line_error

SMALL = """\
name: small-search
model: deepseek-v3
hardware: h200
speculative: {design: nextn, steps: 2}
acceptance: {per_depth: [0.8, 0.6]}
workload: {arrival: closed, concurrency: 1, num_requests: 4, input_len: 256, output_len: 48}
search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}
"""


def write(tmp_path: Path, text: str = SMALL) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def search(tmp_path: Path, *extra: str, text: str = SMALL, out: str = "out") -> list[str]:
    return ["search", write(tmp_path, text), "--gpus", "8", "--out", str(tmp_path / out),
            "--cache", str(tmp_path / "cache"), "--jobs", "1", "--no-plot", *extra]


def test_layouts_multiply_out_to_the_gpus_and_keep_only_shards_that_fit(tmp_path):
    base = sc.load(write(tmp_path))[0]
    everything = layouts.candidate_layouts(8, SearchBounds(), has_experts=True)
    assert all(lay.replicas * lay.tp == 8 and lay.tp % lay.ep == 0 and lay.tp % lay.attention_dp == 0
               for lay in everything)
    # tp 1, 2, 4, 8 with every divisor as ep and as attention_dp: 1 + 4 + 9 + 16
    assert len(everything) == 30
    kept, refused = layouts.fitting_layouts(base, 8, SearchBounds())
    # 671B parameters in FP8 need all eight 141 GB GPUs in one replica
    assert {lay.tp for lay in kept} == {8} and len(kept) == 16
    assert all("weights" in why for lay, why in refused.items() if lay.tp < 8)


def test_a_dense_model_splits_no_experts():
    assert {lay.ep for lay in layouts.candidate_layouts(8, SearchBounds(), has_experts=False)} == {1}


def test_pareto_keeps_only_undominated_points():
    x = np.array([1.0, 2.0, 3.0, 2.0, 1.0])
    y = np.array([5.0, 4.0, 1.0, 3.0, 5.0])
    # (2, 3) is dominated by (2, 4); the two (1, 5) are equal, neither dominates the other
    assert frontier.pareto(x, y).tolist() == [True, True, True, False, True]


def test_crossover_is_where_the_frontiers_meet():
    off = pd.DataFrame({"tps_per_user": [10.0, 100.0], "tps_per_gpu": [100.0, 10.0]})
    on = pd.DataFrame({"tps_per_user": [10.0, 100.0], "tps_per_gpu": [80.0, 30.0]})
    (x,) = frontier.crossovers(off, on)
    # both linear in log x: 100 - 90 u = 80 - 50 u at u = 0.5, x = 10^1.5
    assert x == pytest.approx(10 ** 1.5, rel=0.02)
    assert frontier.crossovers(off, off.assign(tps_per_gpu=off.tps_per_gpu * 2)) == []


@pytest.mark.parametrize("text, metric, percentile, value", [
    ("p99:50ms", "tpot", "p99", 0.05), ("2s", "ttft", "p50", 2.0), ("20", "tpot", "p50", 0.02),
    ("p99:40", "user_tps", "p99", 40.0)])
def test_targets_parse(text, metric, percentile, value):
    t = parse_target(text, metric)
    assert (t.metric, t.percentile) == (metric, percentile) and t.value == pytest.approx(value)


def test_finalists_are_distinct_deployments_meeting_every_target():
    rows = pd.DataFrame({"layout": ["a", "a", "b", "b"], "design": ["nextn"] * 4, "steps": [1, 1, 2, 2],
                         "topk": [1] * 4, "tp": [8] * 4, "tps_per_gpu": [100.0, 90.0, 95.0, 200.0],
                         "tpot_p99_s": [0.01, 0.01, 0.01, 0.5]})
    final = finalists(rows, [Target("tpot", "p99", 0.05)])
    assert final.tps_per_gpu.tolist() == [100.0, 95.0]  # b's 200 misses the target; a's second load is a


def test_search_writes_the_frontier_and_resumes_from_its_cache(tmp_path, capsys):
    assert cli.main(search(tmp_path, "--tpot", "p99:100ms")) == 0
    first = capsys.readouterr().out
    assert "6 points (6 run, 0 cached)" in first and "best: 1x tp8 ep8 adp1" in first
    assert "at 8 users" in first and "ladder's heaviest load" in first  # the best sits at the top of 1, 8
    rows = pd.read_csv(tmp_path / "out" / "frontier.csv")
    assert list(rows.columns) == frontier.COLUMNS and len(rows) == 6
    assert set(rows.design) == {"none", "nextn"} and set(rows.steps) == {0, 1, 2}
    none = rows[rows.design == "none"].set_index("concurrency").tps
    spec = rows[rows.design == "nextn"]
    assert np.allclose(spec.speedup, spec.tps / spec.concurrency.map(none))
    assert rows.groupby("design").pareto.any().all()
    # a wider ladder reruns only the new load's points
    assert cli.main(search(tmp_path, "--concurrency", "1,8,4", out="out2")) == 0
    assert "9 points (3 run, 6 cached)" in capsys.readouterr().out


def test_seeds_on_the_finalists_report_a_margin_or_a_tie(tmp_path, capsys):
    assert cli.main(search(tmp_path, "--seeds", "3")) == 0
    out = capsys.readouterr().out
    final = pd.read_csv(tmp_path / "out" / "finalists.csv")
    assert len(final) == 2 and (final.seeds == 3).all()
    a, b = final.iloc[0], final.iloc[1]
    overlap = a.tps_per_gpu - a.tps_per_gpu_ci_half <= b.tps_per_gpu + b.tps_per_gpu_ci_half
    assert ("tie within noise" in out) == overlap


@pytest.mark.parametrize("args, text, key, word", [
    (["--gpus", "1"], SMALL.replace("tp: [8], ep: [8], ", ""), "", "no shard of model 'deepseek-v3' fits 1 gpus"),
    # ep 8 on 1 GPU: the bounds leave nothing to try (was blamed on --gpus as "0 layouts tried")
    (["--gpus", "1"], SMALL.replace("tp: [8], ", ""), "search.ep", "8: divides no tp tried (1)"),
    ([], SMALL.replace("requests_per_user", "requests_per_usr"), "search.requests_per_usr", "unknown key"),
    (["--tpot", "p50:0.1ms"], SMALL, "", "no point meets --tpot"),
    (["--tpot", "p99:fast"], SMALL, "", "p50:|p99:"),
    (["--rates", "1,x"], SMALL, "", "requests per second"),
    ([], SMALL.replace("per_depth: [0.8, 0.6]", "accept_length: 2.0"), "acceptance.accept_length", "steps"),
])
def test_bad_search_input_is_one_line(tmp_path, capsys, args, text, key, word):
    argv = search(tmp_path, text=text)
    if args[:1] == ["--gpus"]:
        argv[argv.index("--gpus") + 1] = args[1]
        args = []
    one_line_error(capsys, argv + args, key, word)


def test_unmeetable_targets_say_the_best_value_reached(tmp_path, capsys):
    line = one_line_error(capsys, search(tmp_path, "--ttft", "p99:1ms"), "", "--ttft")
    assert "best ttft p99 reached is" in line and "frontier.csv" in line
    reached = pd.read_csv(tmp_path / "out" / "frontier.csv")  # what was reached is still written
    assert len(reached) == 6 and not reached.meets_targets.any()
    # the line shows the best value reached to three significant digits (targets.show), exactly that
    # (was: within 0.06 ms, a bound unrelated to the format, loose for small values)
    assert f"reached is {reached.ttft_p99_s.min() * 1e3:.3g} ms" in line
    assert not (tmp_path / "out" / "finalists.csv").exists()


def test_cost_and_power_columns_follow_the_hardware_entry_and_its_override(tmp_path, capsys):
    text = SMALL.replace("hardware: h200", "hardware: {from: h200, usd_per_gpu_hour: 3.0}")
    assert cli.main(search(tmp_path, text=text)) == 0
    rows = pd.read_csv(tmp_path / "out" / "frontier.csv")
    assert np.allclose(rows.usd_per_m_tokens, 3.0 * rows.gpus / (rows.tps * 3600) * 1e6)
    board_w = sc.load(write(tmp_path))[0].specs.hardware.board_power_w
    assert np.allclose(rows.tps_per_kw, rows.tps / (rows.gpus * board_w / 1e3))
    assert "/M output tokens" in capsys.readouterr().out


def test_frontier_png_is_drawn(tmp_path, capsys):
    argv = [a for a in search(tmp_path, "--tpot", "p50:50ms") if a != "--no-plot"]
    assert cli.main(argv) == 0
    assert (tmp_path / "out" / "frontier.png").stat().st_size > 10_000


# ---------------------------------------------------------------------- acceptance by steps

def test_a_curve_gives_per_depth_acceptance_that_reproduces_it_at_every_steps_value():
    from mtpsim.acceptance import AcceptanceProfile, named_curves
    for name, entry in named_curves().items():
        curve = entry["accept_length_by_steps"]
        profile = AcceptanceProfile.from_accept_lengths(curve)
        assert all(0 < a <= 1 for a in profile.alphas), name
        for steps, length in curve.items():
            assert profile.expected_accept_length(steps) == pytest.approx(length, abs=1e-12), (name, steps)
    # the example: gains 0.79, 0.48, 0.22 -> alphas 0.79, 0.48 / 0.79, 0.22 / 0.48
    alphas = AcceptanceProfile.from_accept_lengths({1: 1.79, 2: 2.27, 3: 2.49}).alphas
    assert alphas == pytest.approx((0.79, 0.48 / 0.79, 0.22 / 0.48))


def test_a_search_over_a_named_curve_tries_every_step_it_holds(tmp_path, capsys):
    text = SMALL.replace("acceptance: {per_depth: [0.8, 0.6]}", "acceptance: {profile: deepseek-v4-pro-mtp-thinking-on}")
    assert cli.main(search(tmp_path, "--concurrency", "1", text=text)) == 0
    rows = pd.read_csv(tmp_path / "out" / "frontier.csv")
    assert sorted(rows.steps) == [0, 1, 2, 3, 4, 5]  # the curve holds steps 1..5


@pytest.mark.parametrize("curve, key, word", [
    ("{1: 1.8, 2: 1.7}", "acceptance.accept_length_by_steps", "must increase with steps"),
    ("{1: 1.5, 2: 2.2}", "acceptance.accept_length_by_steps", "exceeds step 1's gain"),
    ("{1: 1.8, 3: 2.5}", "acceptance.accept_length_by_steps", "every steps value from 1"),
    ("{1: 1.8, 2: 2.4, 3: 2.8, 4: 3.0}", "acceptance.accept_length_by_steps.4", "has 3"),
])
def test_bad_curves_are_one_line(tmp_path, capsys, curve, key, word):
    text = (SMALL.replace("deepseek-v3", "mimo-v2-flash").replace("design: nextn", "design: multi_layer")
            .replace("acceptance: {per_depth: [0.8, 0.6]}", f"acceptance: {{accept_length_by_steps: {curve}}}"))
    one_line_error(capsys, search(tmp_path, text=text), key, word)


@pytest.mark.parametrize("engine, setting, steps, length", [
    ("vllm", 2.5, 3, 2.5), ("sglang", 2.5, 3, 2.5), ("sglang", 9.0, 3, 4.0), ("trtllm", 2, 3, 3.0),
    ("trtllm", 5, 3, 4.0), ("trtllm", 1.6, 3, 2.6), ("trtllm", 0.3, 2, 1.3), ("trtllm", 2.5, 2, 3.0)])
def test_forced_acceptance_gives_the_engines_mean(engine, setting, steps, length):
    from mtpsim.acceptance import AcceptanceProfile
    profile = AcceptanceProfile.forced(engine, setting, steps)
    assert profile.expected_accept_length(steps) == pytest.approx(length)
    assert profile.shared == (engine == "sglang")


def test_sglangs_forced_draw_is_one_per_iteration_for_the_whole_batch():
    from mtpsim.acceptance import AcceptanceProfile
    profile = AcceptanceProfile.forced("sglang", 2.3, 3)
    levels = np.broadcast_to(np.array(profile.alphas), (64, 3))
    rng = np.random.default_rng(0)
    draws = [AcceptanceProfile.sample(rng, levels, shared=True) for _ in range(2000)]
    assert all(len(set(d.tolist())) == 1 for d in draws)  # every request alike within an iteration
    counts = np.array([d[0] for d in draws])
    assert set(counts.tolist()) == {1, 2}  # floor(2.3) or floor(2.3) + 1 tokens: 1 or 2 drafts
    # P(2 drafts) = 0.3: within 4 standard errors of 2,000 draws
    assert abs((counts == 2).mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 2000)


def test_trtllms_fractional_force_is_one_more_draft_per_request_with_the_fractions_chance():
    """TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.6 at S=3: every request accepts 1 draft, and a
    second with chance 0.6, drawn per request (not one draw for the batch as SGLang's)."""
    from mtpsim.acceptance import AcceptanceProfile
    profile = AcceptanceProfile.forced("trtllm", 1.6, 3)
    levels = np.broadcast_to(np.array(profile.alphas), (64, 3))
    draws = np.concatenate([AcceptanceProfile.sample(np.random.default_rng(k), levels) for k in range(40)])
    assert set(draws.tolist()) == {1, 2}
    assert abs((draws == 2).mean() - 0.6) < 4 * np.sqrt(0.6 * 0.4 / draws.size)
    mixed = [AcceptanceProfile.sample(np.random.default_rng(k), levels) for k in range(40)]
    assert sum(len(set(d.tolist())) > 1 for d in mixed) > 35  # requests of one iteration differ


def test_forced_trtllm_zero_is_off_and_refused(tmp_path, capsys):
    text = SMALL.replace("acceptance: {per_depth: [0.8, 0.6]}", "acceptance: {forced: {engine: trtllm, setting: 0}}")
    one_line_error(capsys, search(tmp_path, text=text), "acceptance.forced.setting", "turns forcing off")


# ---------------------------------------------------------------------- launch options

def deployment(**kw) -> pd.Series:
    base = {"layout": "1x tp8 ep8 adp1", "replicas": 1, "tp": 8, "ep": 8, "attention_dp": 1, "design": "nextn",
            "steps": 3, "topk": 1}
    return pd.Series({**base, **kw})


def test_launch_options_express_the_deployment_in_each_engine():
    from mtpsim.search.flags import launch_flags
    text = launch_flags(deployment(attention_dp=8), cap=64)
    sglang, vllm, trtllm = text.split("\n\n")
    assert "--tp-size 8" in sglang and "--ep-size 8" in sglang and "--enable-dp-attention --dp-size 8" in sglang
    assert "--speculative-algorithm NEXTN" in sglang and "--speculative-num-draft-tokens 4" in sglang
    assert "--max-running-requests 64" in sglang  # SGLang splits the replica's cap over its ranks itself
    assert "--data-parallel-size 8" in vllm and "--tensor-parallel-size 1" in vllm and "--max-num-seqs 8" in vllm
    assert '"num_speculative_tokens": 3' in vllm
    assert '"enable_attention_dp": true' in trtllm and '"num_nextn_predict_layers": 3' in trtllm


def sections(row: pd.Series, drafter=None, cap: int = 32) -> dict[str, str]:
    from mtpsim.search.flags import Drafter, launch_flags
    text = launch_flags(row, cap, drafter or Drafter())
    return {s.split("]")[0].lstrip("[").split()[0]: s.split("\n", 1)[1] for s in text.split("\n\n")}


@pytest.mark.parametrize("design, drafter, engine, words", [
    ("multi_layer", {"mtp_layers": 3}, "sglang", ["--speculative-algorithm EAGLE --enable-multi-layer-eagle",
                                                  "--speculative-num-steps 3"]),
    ("multi_layer", {"mtp_layers": 3}, "vllm", ['"method": "mtp"', '"num_speculative_tokens": 3']),
    ("multi_layer", {"mtp_layers": 3}, "trtllm", ['"use_mtp_vanilla": true', '"num_nextn_predict_layers": 3']),
    ("nextn", {"external": True}, "sglang", ["--speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFT"]),
    ("nextn", {"external": True}, "vllm", ['"method": "eagle3", "model": "DRAFT"']),
    ("nextn", {"external": True}, "trtllm", ['"decoding_type": "Eagle3", "max_draft_len": 3', '"speculative_model"']),
    ("frozen_kv", {}, "sglang", ["--speculative-algorithm NEXTN --speculative-draft-model-path ASSISTANT"]),
    ("frozen_kv", {}, "vllm", ['"method": "mtp", "model": "ASSISTANT"']),
    ("block", {"block_kind": "dflash"}, "sglang", ["--speculative-algorithm DFLASH", "--speculative-dflash-block-size 4"]),
    ("block", {"block_kind": "dflash"}, "vllm", ['"method": "dflash", "model": "DRAFT"', '"num_speculative_tokens": 3']),
])
def test_launch_options_for_each_design_an_engine_runs(design, drafter, engine, words):
    from mtpsim.search.flags import Drafter
    section = sections(deployment(design=design), Drafter(**drafter))[engine]
    assert all(w in section for w in words), section


@pytest.mark.parametrize("row, drafter, engine, word", [
    (deployment(ep=2), {}, "vllm", "cannot run ep 2"),
    (deployment(attention_dp=2), {}, "trtllm", "cannot run attention_dp 2"),
    (deployment(topk=4), {}, "vllm", "tree"),
    (deployment(design="frozen_kv"), {}, "trtllm", "cannot run design frozen_kv"),
    (deployment(design="parallel_heads"), {}, "sglang", "cannot run design parallel_heads"),
    (deployment(design="parallel_heads"), {}, "vllm", "Medusa checkpoint"),
    (deployment(design="block"), {"block_kind": "dspark"}, "sglang", "cannot run a dspark block drafter"),
    (deployment(design="block"), {"block_kind": "dspark"}, "sglang", "0.5.23 has speculative algorithm DSPARK"),
    (deployment(design="block"), {"block_kind": "dspark"}, "vllm", "cannot run a dspark block drafter"),
    (deployment(design="block"), {"block_kind": "dspark"}, "vllm", "0.25.0 has speculative method dspark"),
    (deployment(design="block", attention_dp=8), {"block_kind": "dflash"}, "sglang", "DFLASH with DP attention"),
    (deployment(design="block"), {"block_kind": "dflash"}, "trtllm", "cannot run design block"),
    (deployment(), {"mtp_layers": 3}, "vllm", "cannot reuse one MTP layer of 3"),
    (deployment(), {"mtp_layers": 3}, "trtllm", "cannot reuse one MTP layer of 3"),
])
def test_engines_that_cannot_run_a_deployment_say_so(row, drafter, engine, word):
    from mtpsim.search.flags import Drafter
    section = sections(row, Drafter(**drafter))[engine]
    assert word in section and "--" not in section


def test_the_drafter_is_read_from_the_chosen_point(tmp_path):
    from mtpsim.search.flags import Drafter
    mimo = sc.load(write(tmp_path, SMALL.replace("deepseek-v3", "mimo-v2-flash").replace("nextn", "multi_layer")))[0]
    assert Drafter.of(mimo) == Drafter(mtp_layers=mimo.specs.model.mtp.num_layers) and mimo.specs.model.mtp.num_layers > 1
    assert Drafter.of(sc.load(write(tmp_path))[0]) == Drafter(mtp_layers=1)


def test_search_scenarios_load_and_open_with_their_question_and_command():
    paths = sorted(Path(__file__).resolve().parent.parent.glob("scenarios/search/*.yaml"))
    assert paths, "the glob matched nothing: the loop would check nothing"
    for path in paths:
        head = path.read_text().splitlines()[0]
        assert head.startswith("# Question:"), path
        assert "mtpsim search" in path.read_text().split("\nname:")[0], path
        (s,) = sc.load(path)
        assert s.search is not None and s.speculative.design != "none"


def test_trees_join_the_default_space_when_the_acceptance_gives_ranks(tmp_path):
    text = (Path(__file__).resolve().parent.parent / "scenarios" / "tree-vs-chain.yaml").read_text()
    base = sc.load(write(tmp_path, text), ["sweep=null"])[0]
    settings = space.design_settings(base, SearchBounds(), {"nextn": [1, 2]})
    assert sorted({(s["design"], s.get("topk", 1)) for s in settings}) == [("nextn", k) for k in (1, 2, 3, 4)] + [("none", 1)]
    assert {s.get("topk") for s in space.design_settings(base, SearchBounds(topk=[1]), {"nextn": [1]})} == {None, 1}


def test_ttft_percentiles_leave_out_the_closed_loops_cold_start_wave(tmp_path):
    """The first `concurrency` requests arrive together and queue behind each other's prefills;
    the search's TTFT percentiles are over the requests after them, every request's kept as ttft_all."""
    from mtpsim.search.worker import simulate_point
    from mtpsim.sim import simulate
    text = ("name: w\nmodel: llama-3.1-8b\nhardware: h100-sxm\ncost: {model: roofline}\n"
            "workload: {arrival: closed, concurrency: 16, num_requests: 48, input_len: 512,\n"
            "  output_len: {dist: uniform, min: 8, max: 64}}\n")  # bench_serving-like spread lengths
    s = sc.load(write(tmp_path, text))[0]
    row, req = simulate_point(s), simulate(s).requests
    after = req.sort_values(["arrival_s", "request_id"]).iloc[16:]
    assert row["ttft_steady_requests"] == 32 and (after.arrival_s > 0).all() and (req.arrival_s == 0).sum() == 16
    steady = after.first_token_s - after.arrival_s
    assert row["ttft_p50_s"] == pytest.approx(steady.quantile(0.5)) and row["ttft_p99_s"] == pytest.approx(steady.quantile(0.99))
    every = req.first_token_s - req.arrival_s
    assert row["ttft_all_p99_s"] == pytest.approx(every.quantile(0.99))
    wave = req.sort_values(["arrival_s", "request_id"]).iloc[:16]
    assert (wave.first_token_s - wave.arrival_s).median() > steady.median(), "the wave is what this leaves out"


# ---------------------------------------------------------------------- aggregated vs disaggregated

DIS = """\
name: dis
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.6]}
workload: {arrival: closed, concurrency: 1, num_requests: 4, input_len: 1024, output_len: 64}
search: {tp: [1, 2], ep: [1], attention_dp: [1], concurrency: [16], requests_per_user: 2}
"""


def test_splits_fill_the_gpus_and_serve_the_most_their_pools_rates_allow(tmp_path):
    from mtpsim.search import disagg
    base = sc.load(write(tmp_path, DIS))[0]
    spec = {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"}
    shards = [layouts.Layout(1, 1, 1, 1), layouts.Layout(1, 2, 1, 1)]
    for split in disagg.splits(base, spec, shards, 4, 16):
        assert split.gpus == 4 and split.prefill.replicas >= 1 and split.decode.replicas >= 1
        rp = disagg.prefill_rate(layouts.at_layout(base, layouts.Layout(1, split.prefill.tp, 1, 1), spec))
        d = layouts.at_layout(base, layouts.Layout(1, split.decode.tp, 1, 1), spec)
        served = {y: min((4 - y * split.decode.tp) // split.prefill.tp * rp, y * disagg.decode_rate(d, -(-16 // y)))
                  for y in range(1, 4 // split.decode.tp + 1) if 4 - y * split.decode.tp >= split.prefill.tp}
        assert served[split.decode.replicas] == max(served.values())
    # more users per decode replica decode more requests per second, short of the GPU's limit
    d = layouts.at_layout(base, layouts.Layout(1, 1, 1, 1), spec)
    assert disagg.decode_rate(d, 1) < disagg.decode_rate(d, 8) < 8 * disagg.decode_rate(d, 1)


def test_disaggregated_rows_are_the_disaggregated_scenarios_simulated(tmp_path, capsys):
    import mtpsim
    from mtpsim.sim import simulate
    argv = search(tmp_path, "--disagg", text=DIS)
    argv[argv.index("--gpus") + 1] = "2"
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "out" / "frontier.csv")
    split = rows[rows["mode"] == "disagg"]
    assert set(split.layout) == {"1P(tp1 ep1 adp1) 1D(tp1 ep1 adp1)"} and (split.gpus == 2).all()
    assert set(rows["mode"]) == {"agg", "disagg"} and "agg vs disagg under the targets" in out
    row = split[(split.design == "nextn") & (split.steps == 2)].iloc[0]
    base = sc.load(write(tmp_path, DIS))[0]
    agg = space.with_load(layouts.at_layout(base, layouts.Layout(1, 1, 1, 1), {"design": "nextn", "steps": 2,
                          "draft": "eagle3-llama-3.1-8b"}), space.loads(SearchBounds(concurrency=[16],
                          requests_per_user=2))[0], layouts.Layout(1, 1, 1, 1), False)
    pool = {"replicas": 1, "tp": 1, "ep": 1, "attention_dp": 1}
    alone = simulate(mtpsim.disaggregated(agg, pool, pool, gpus=2)).summary.iloc[0]
    assert row.tps == pytest.approx(alone.tps, rel=1e-9) and row.tps_per_gpu == pytest.approx(alone.tps / 2, rel=1e-9)


def test_no_split_of_gpus_one_replica_fills_is_said(tmp_path, capsys):
    assert cli.main(search(tmp_path, "--disagg")) == 0
    assert "disaggregated: no xPyD split of 8 GPUs (each pool needs a replica of at least tp 8)" in capsys.readouterr().out
