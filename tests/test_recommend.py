"""`mtpsim recommend`: its picks are the argmax of the same grid run independently, the
break-even and policy logic on constructed tables, the candidate steps, the command's output
folder and its one-line errors."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

from mtpsim import cli
from mtpsim import scenario as sc
from mtpsim.recommend import base_point, best_by_batch, break_even, candidate_steps, policy_line, recommend, steps_by_batch
from mtpsim.run import run_points
from tests.test_bad_input import one_line_error

TINY = {  # Llama-3.1-8B + EAGLE-3 on one H100, roofline: the smallest grid that still chooses
    "name": "r", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
    "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
    "acceptance": {"per_depth": [0.9, 0.6, 0.3]},
    "engine": {"max_running_requests": 256},
    "workload": {"arrival": "closed", "concurrency": 1, "num_requests": 2, "input_len": 64, "output_len": 24},
}
BATCHES = [1, 4, 256]


def write(tmp_path, data, name="s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_picks_are_the_argmax_of_the_grid_run_independently(tmp_path):
    table, _ = recommend(base_point(str(write(tmp_path, TINY)), []), BATCHES, [1, 2, 3], progress=False)
    # the same grid as a plain sweep: steps x workloads (2 requests per user, as in the scenario)
    sweep = {"speculative.steps": [1, 2, 3],
             "workload": [{**TINY["workload"], "concurrency": b, "num_requests": 2 * b} for b in BATCHES]}
    summary, _ = run_points(sc.load(write(tmp_path, {**TINY, "sweep": sweep}, "grid.yaml")), progress=False)
    for b, row in zip(BATCHES, table.itertuples()):
        runs = summary[summary.concurrency == b]
        none = runs[runs.design == "none"].tps.iloc[0]
        spec = runs[runs.design != "none"].set_index("steps")
        best = spec.tps.idxmax() if spec.tps.max() > none else 0
        assert row.batch == b and row.tps_steps == best
        assert row.tps == pytest.approx(max(spec.tps.max(), none), rel=1e-12)
        assert row.user_steps == (spec.per_user_tps.idxmax() if spec.per_user_tps.max() >
                                  runs[runs.design == "none"].per_user_tps.iloc[0] else 0)
        assert row.speculate == (best > 0)
    assert table.tps_steps.iloc[0] > 0 and table.tps_steps.iloc[-1] == 0, "a grid whose pick changes, or it proves little"


def table(picks: list[int], batches=(1, 2, 4, 8, 16)) -> pd.DataFrame:
    return pd.DataFrame({"batch": list(batches), "tps_steps": picks, "tps_topk": 1, "speculate": [p > 0 for p in picks]})


@pytest.mark.parametrize("picks,even", [
    ([3, 3, 2, 1, 1], None),      # speculation wins throughout
    ([3, 2, 0, 0, 0], 4),         # plain decoding from batch 4 on
    ([0, 0, 0, 0, 0], 1),         # never worth it
    ([3, 0, 1, 0, 0], 2),         # the first loss counts, even if speculation wins again later
])
def test_break_even_is_the_smallest_batch_where_none_wins(picks, even):
    assert break_even(table(picks)) == even


def test_policy_has_an_entry_where_the_pick_changes_starting_at_batch_1():
    assert steps_by_batch(table([3, 3, 2, 0, 0], batches=(2, 4, 8, 16, 32))) == {1: 3, 8: 2, 16: 0}
    assert steps_by_batch(table([1, 1, 1, 1, 1])) == {1: 1}
    line = policy_line(table([3, 2, 2, 0, 0]))
    assert line.startswith("policy: {steps_by_batch: {1: 3, 2: 2, 8: 0}}")
    assert yaml.safe_load(line.split("   #")[0])["policy"] == {"steps_by_batch": {1: 3, 2: 2, 8: 0}}


def test_best_by_batch_lets_none_win_ties_and_picks_each_metric_on_its_own():
    rows = [  # design, steps, concurrency, tps, per_user_tps
        ("none", 0, 1, 100.0, 100.0), ("nextn", 1, 1, 150.0, 150.0), ("nextn", 2, 1, 180.0, 170.0),
        ("nextn", 3, 1, 170.0, 190.0),
        ("none", 0, 8, 500.0, 60.0), ("nextn", 1, 8, 500.0, 61.0), ("nextn", 2, 8, 450.0, 55.0)]
    summary = pd.DataFrame(rows, columns=["design", "steps", "concurrency", "tps", "per_user_tps"]).assign(topk=1)
    t = best_by_batch(summary)
    assert t.tps_steps.tolist() == [2, 0] and t.user_steps.tolist() == [3, 1]
    assert t.speculate.tolist() == [True, False] and t.speedup.tolist() == [1.8, 1.0]
    assert break_even(t) == 8


def test_candidate_steps_stop_at_the_profile_the_design_and_the_limit(tmp_path):
    s = base_point(str(write(tmp_path, TINY)), [])
    assert candidate_steps(s, None) == [1, 2, 3]              # three depths of acceptance
    assert candidate_steps(s, 2) == [1, 2]                    # --max-steps
    mimo = {"name": "m", "model": "mimo-v2-flash", "hardware": "h200", "parallel": {"tp": 8},
            "speculative": {"design": "multi_layer", "steps": 1}, "acceptance": {"per_depth": [0.9] * 8}}
    m = base_point(str(write(tmp_path, mimo, "m.yaml")), [])
    layers = m.specs.model.mtp.num_layers
    assert layers < 8 and candidate_steps(m, None) == list(range(1, layers + 1))  # one MTP layer per step


def test_recommend_prints_and_writes_a_claimed_folder(tmp_path, capsys):
    argv = ["recommend", str(write(tmp_path, TINY)), "--batch", "1,4", "--jobs", "1", "--out", str(tmp_path / "rec")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "break-even batch:" in out and "\npolicy: {steps_by_batch: {1: " in out
    written = pd.read_csv(tmp_path / "rec" / "recommend.csv")
    assert written.batch.tolist() == [1, 4] and {"tps_steps", "user_steps", "speculate"} <= set(written.columns)
    grid = pd.read_csv(tmp_path / "rec" / "grid.csv")
    assert len(grid) == 2 * 3 + 2                             # 2 batches x 3 steps, and a baseline each
    one_line_error(capsys, argv, "", "not empty")              # never overwritten


@pytest.mark.parametrize("args,where,word", [
    (["--batch", "0"], "--batch", "'0' is not a positive integer"),
    (["--batch", "1,x,4"], "--batch", "'x' is not a positive integer"),
    (["--batch", "1,,4"], "--batch", "'' is not a positive integer"),
    (["--batch", "-2"], "--batch", "not a positive integer"),
    (["--topk", "0"], "--topk", "not a positive integer"),
])
def test_bad_options_are_one_line_errors(tmp_path, capsys, args, where, word):
    line = one_line_error(capsys, ["recommend", str(write(tmp_path, TINY)), *args, "--out", str(tmp_path / "o")],
                          "", word)
    assert line.startswith(f"mtpsim: error: {where}: ")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("change,key,word", [
    ({"speculative": {"design": "none"}, "acceptance": {}}, "speculative.design", "speculative design"),
    ({"acceptance": {"accept_length": 2.2}}, "acceptance.accept_length", "per depth"),
])
def test_scenarios_recommend_cannot_vary_are_one_line_errors(tmp_path, capsys, change, key, word):
    one_line_error(capsys, ["recommend", str(write(tmp_path, {**TINY, **change})), "--out", str(tmp_path / "o")],
                   key, word)


def test_trees_only_for_designs_that_draft_them(tmp_path, capsys):
    mimo = {"name": "m", "model": "mimo-v2-flash", "hardware": "h200", "parallel": {"tp": 8},
            "speculative": {"design": "multi_layer", "steps": 1}, "acceptance": {"per_depth": [0.9]}}
    line = one_line_error(capsys, ["recommend", str(write(tmp_path, mimo)), "--topk", "1,2", "--out",
                                   str(tmp_path / "o")], "", "topk must be 1")
    assert line.startswith("mtpsim: error: --topk: ")


def test_max_steps_outside_its_range_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["recommend", str(write(tmp_path, TINY)), "--max-steps", "0"])
    assert exit_.value.code == 2 and "outside" in capsys.readouterr().err


def test_with_seed_intervals_a_gain_within_noise_does_not_earn_a_step():
    from mtpsim.recommend import within_noise
    rows = [  # design, steps, concurrency, tps, tps_ci_low, tps_ci_high
        ("none", 0, 1, 100.0, 99.0, 101.0), ("nextn", 1, 1, 150.0, 149.0, 151.0),
        ("nextn", 2, 1, 180.0, 178.0, 182.0), ("nextn", 3, 1, 180.5, 178.5, 182.5),  # S=3 ties S=2
        ("none", 0, 8, 500.0, 495.0, 505.0), ("nextn", 1, 8, 540.0, 538.0, 542.0),
        ("nextn", 2, 8, 560.0, 559.0, 561.0), ("nextn", 3, 8, 600.0, 598.0, 602.0)]  # S=3 clear
    summary = pd.DataFrame(rows, columns=["design", "steps", "concurrency", "tps", "tps_ci_low", "tps_ci_high"])
    summary = summary.assign(topk=1, per_user_tps=summary.tps)
    t = within_noise(best_by_batch(summary), summary)
    assert t.tps_steps.tolist() == [2, 3] and t.tie.tolist() == [True, False]
    assert t.tps.tolist() == [180.0, 600.0] and t.speedup.tolist() == [1.8, 1.2]
    assert t.margin_pct.iloc[0] == pytest.approx(100 * (180.5 / 180.0 - 1))
    # one seed: no intervals, the argmax stands and only the margin is added
    single = within_noise(best_by_batch(summary.drop(columns=["tps_ci_low", "tps_ci_high"])), summary.drop(
        columns=["tps_ci_low", "tps_ci_high"]))
    assert single.tps_steps.tolist() == [3, 3]


def test_the_engine_cap_is_resolved_as_run_resolves_it_and_a_binding_one_is_marked(tmp_path):
    """No engine.max_running_requests: SGLang's cap under speculative decoding (48 at its default
    release) holds for the speculative settings and not for `none`, as in `mtpsim run`."""
    data = {**TINY, "engine": {}, "workload": {**TINY["workload"], "concurrency": 64, "num_requests": 128}}
    table, summary = recommend(base_point(str(write(tmp_path, data)), []), [64], [1, 2], progress=False)
    ran, _ = run_points(sc.load(write(tmp_path, {**data, "sweep": {"speculative.steps": [1, 2]}}, "g.yaml")),
                        progress=False)
    for design, steps in (("none", 0), ("nextn", 1), ("nextn", 2)):
        mine = summary[(summary.design == design) & (summary.steps == steps)].iloc[0]
        theirs = ran[(ran.design == design) & (ran.steps == steps)].iloc[0]
        assert (mine.max_running, mine.bound_by, mine.tps) == (theirs.max_running, theirs.bound_by, theirs.tps)
    spec = summary[summary.design != "none"]
    assert (spec.max_running == 48).all() and (spec.bound_by == "cap 48").all()
    assert summary[summary.design == "none"].max_running.iloc[0] >= 2048  # SGLang's own, from its KV pool
    assert table.bound_by.iloc[0] == ("cap 48" if table.tps_steps.iloc[0] else "")
