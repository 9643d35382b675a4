"""Seed replicates (`seeds: N`, `--seeds N`): Student t intervals, paired speedups, the
overlap marker, and N = 1 as before seeds existed."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from mtpsim import scenario as sc
from mtpsim.cli import main
from mtpsim.intervals import half_width, seed_intervals, t_critical
from mtpsim.run import format_table, run_points
from mtpsim.run_seeds import interval_summary
from mtpsim.run_table import legend
from tests.conftest import BASE

TINY = {**BASE, "cost": {"model": "roofline"}}  # roofline: a few ms a run

# summary.csv's columns before seeds existed, for a scenario without a sweep
SUMMARY_COLUMNS = ["name", "design", "steps", "topk", "draft_tokens", "concurrency", "rate_per_s", "num_requests",
                   "dp", "tps", "per_user_tps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s",
                   "accept_length", "total_tps", "request_rate_per_s", "ttft_mean_s", "tpot_mean_s", "e2e_p50_s",
                   "e2e_p99_s", "itl_mean_s", "itl_p50_s", "itl_p99_s", "interactivity", "mean_in_flight",
                   "itl_token_mean_s", "itl_token_p50_s", "itl_token_p99_s", "draft_share",
                   "verify_share", "extend_share", "prefill_share", "host_share",
                   "max_kv_tokens", "requests_kept", "requests_total", "iterations_kept", "iterations_total",
                   "decode_iterations", "verify_width", "max_running", "capped_iterations", "kv_full_iterations", "mean_running",
                   "max_batch", "eager_share", "bound_by", "batch_wait_iterations", "sim_wall_s", "point",
                   "pricing", "engine", "speedup", "per_user_speedup"]


@pytest.mark.parametrize("df, table", [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (7, 2.365), (9, 2.262),
                                       (19, 2.093), (30, 2.042), (100, 1.984), (999, 1.962)])
def test_t_critical_matches_the_printed_tables(df, table):
    assert t_critical(df) == pytest.approx(table, abs=6e-4)


def test_t_critical_at_other_levels_and_limits():
    assert t_critical(10, 0.99) == pytest.approx(3.169, abs=6e-4)
    assert t_critical(1, 0.90) == pytest.approx(6.314, abs=6e-4)
    with pytest.raises(ValueError):
        t_critical(0)


def test_half_width_is_t_times_the_standard_error():
    assert half_width([1.0, 2.0, 3.0]) == pytest.approx(4.3027 * 1.0 / math.sqrt(3), rel=1e-4)
    assert half_width([5.0]) == 0.0


def _points(tmp_path, data, seeds):
    path = tmp_path / f"s{seeds}.yaml"
    path.write_text(yaml.safe_dump({**data, "seeds": seeds}))
    return sc.load(path)


def test_intervals_shrink_as_seeds_grow(tmp_path):
    """16 disjoint 2-seed intervals against 4 disjoint 8-seed ones, each a point of a `seed`
    sweep. Expected half-width ratio: (t(1)/√2·E s₂) / (t(7)/√8·E s₈) ≈ 7.2σ / 0.81σ ≈ 9; the
    test asks for 3, which the means of 16 and 4 intervals miss by chance with p < 1e-6 (and the
    seeds are fixed, so the outcome does not change from run to run)."""
    two = _points(tmp_path, {**TINY, "sweep": {"seed": list(range(0, 32, 2))}}, 2)
    eight = _points(tmp_path, {**TINY, "sweep": {"seed": list(range(0, 32, 8))}}, 8)
    ci2, ci8 = (interval_summary(run_points(p, progress=False)[0]) for p in (two, eight))
    ci2, ci8 = ci2[ci2.point >= 0], ci8[ci8.point >= 0]
    assert len(ci2) == 16 and set(ci2.seeds) == {2} and len(ci8) == 4 and set(ci8.seeds) == {8}
    assert ci8.tps_ci_half.min() > 0
    assert ci8.tps_ci_half.mean() < ci2.tps_ci_half.mean() / 3
    assert ci8.speedup_ci_half.mean() < ci2.speedup_ci_half.mean() / 3


def test_speedup_is_taken_seed_by_seed(tmp_path):
    """Random output lengths make the baseline vary by seed too; each replicate's speedup is over
    the `none` run of its own seed (the same requests), and the interval is over those ratios."""
    data = {**TINY, "workload": {**TINY["workload"], "output_len": {"dist": "uniform", "min": 8, "max": 64}}}
    summary, results = run_points(_points(tmp_path, data, 4), progress=False)
    assert len(results) == 4 and list(summary.seed) == [0, 1, 2, 3] * 2
    runs, base = summary[summary.point == 0], summary[summary.design == "none"].set_index("seed")
    assert base.tps.nunique() == 4  # the baseline does vary by seed
    assert np.allclose(runs.speedup, runs.tps / base.tps.loc[runs.seed].to_numpy())
    # and per user over its own seed's per-user speed (over its TPS instead passed every test)
    assert base.per_user_tps.nunique() == 4
    assert np.allclose(runs.per_user_speedup, runs.per_user_tps / base.per_user_tps.loc[runs.seed].to_numpy())
    ci = interval_summary(summary)
    assert list(ci.design) == ["nextn", "none"] and list(ci.seeds) == [4, 4]
    assert ci.speedup.iloc[0] == pytest.approx(runs.speedup.mean())
    assert ci.speedup_ci_half.iloc[0] == pytest.approx(half_width(runs.speedup))
    assert ci.tps_ci_low.iloc[0] == pytest.approx(runs.tps.mean() - half_width(runs.tps))


def _run(args, capsys):
    code = main(["run", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _table(out: str) -> list[str]:
    """The printed lines less the header's timing and the folder line (they differ by run)."""
    return [line for line in out.splitlines() if " point(s) " not in line and not line.startswith("wrote ")]


def test_one_seed_is_the_run_as_before(write_scenario, tmp_path, capsys):
    """No `seeds`, `seeds: 1` and `--seeds 1` write the same files and print the same table as
    before seeds existed: no seed column, no summary_ci.csv, no ±."""
    path = write_scenario({**TINY, "question": "does it pay?"})
    outs = []
    for extra, folder in (([], "plain"), (["--seeds", "1"], "flag"), (["--set", "seeds=1"], "key")):
        code, out, _ = _run([path, "--out", tmp_path / folder, *extra], capsys)
        assert code == 0 and "±" not in out and "~" not in out
        outs.append(_table(out))
    assert outs[0] == outs[1] and outs[0][1:] == outs[2][1:]  # the last says `(with --set seeds=1)` after Q
    files = {p.name for p in (tmp_path / "plain").iterdir()}
    assert files == {".mtpsim-run", ".mtpsim-complete", "summary.csv", "requests.csv", "iterations.csv", "accept_counts.csv",
                     "scenario.resolved.yaml"}
    plain = pd.read_csv(tmp_path / "plain" / "summary.csv")
    assert list(plain.columns) == SUMMARY_COLUMNS
    for folder in ("flag", "key"):
        assert {p.name for p in (tmp_path / folder).iterdir()} == files
        for name in ("requests.csv", "iterations.csv", "accept_counts.csv"):
            pd.testing.assert_frame_equal(pd.read_csv(tmp_path / folder / name), pd.read_csv(tmp_path / "plain" / name))
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / folder / "summary.csv").drop(columns="sim_wall_s"),
                                      plain.drop(columns="sim_wall_s"))
    assert "seed" not in pd.read_csv(tmp_path / "plain" / "requests.csv")


def test_seeds_write_rows_per_seed_and_intervals(write_scenario, tmp_path, capsys):
    """`seeds: 3` in the file, `--seeds 4` on the command line: the flag wins. summary.csv has a
    row per seed, summary_ci.csv one per point and baseline, the table mean ± half-width."""
    out = tmp_path / "run"
    code, text, _ = _run([write_scenario({**TINY, "seeds": 3}), "--out", out, "--seeds", "4", "--plot", "--trace"],
                         capsys)
    assert code == 0
    summary, ci = pd.read_csv(out / "summary.csv"), pd.read_csv(out / "summary_ci.csv")
    assert list(summary.seed) == [0, 1, 2, 3] * 2 and set(summary.baseline) == {0}
    assert list(ci.design) == ["nextn", "none"] and list(ci.seeds) == [4, 4] and "seed" not in ci
    for name in ("requests.csv", "iterations.csv", "accept_counts.csv"):
        assert sorted(pd.read_csv(out / name).seed.unique()) == [0, 1, 2, 3]
    assert yaml.safe_load((out / "scenario.resolved.yaml").read_text())["seeds"] == 4
    assert {"speedup.png", "timeline.png", "trace.json"} <= {p.name for p in out.iterdir()}
    row = next(line for line in text.splitlines() if line.lstrip().startswith("nextn"))
    assert row.count("±") == 3 and f"{ci.tps.iloc[0]:.0f} ± " in row
    assert "1 point(s) x 4 seeds" in text and "95% interval over 4 seeds (Student t" in text


def test_overlapping_designs_are_marked(write_scenario, tmp_path, capsys):
    """Two identical points (a sweep listing steps 2 twice) share their interval: both get `~`
    and the legend says what it means; the baseline, well below them, gets none."""
    data = {**TINY, "seeds": 4, "speculative": {"design": "nextn", "steps": 2},
            "acceptance": {"per_depth": [0.9, 0.9]}, "sweep": {"speculative.steps": [2, 2]}}
    code, text, _ = _run([write_scenario(data), "--out", tmp_path / "run", "--jobs", "1"], capsys)
    assert code == 0
    rows = [line for line in text.splitlines() if line.lstrip().startswith(("nextn", "none"))]
    assert [line.split()[0] for line in rows] == ["nextn", "nextn", "none"]
    assert [" ~ " in line for line in rows] == [True, True, False]
    assert "~ its TPS interval overlaps another design's at the same load" in text


def test_overlap_is_within_a_load_only():
    """Units overlap only with units of their own group (the same baseline, the same load)."""
    rows = [(0, 0, "nextn", [100.0, 102.0, 104.0]), (1, 0, "multi_layer", [103.0, 105.0, 107.0]),
            (2, 0, "none", [50.0, 50.0, 50.0]), (3, 1, "nextn", [200.0, 201.0, 202.0]),
            (4, 2, "nextn", [104.5, 104.6, 104.7])]
    runs = pd.DataFrame([{"point": p, "baseline": g, "design": d, "seed": k, "tps": v, "per_user_tps": v,
                          "speedup": v / 50, "per_user_speedup": v / 50}
                         for p, g, d, values in rows for k, v in enumerate(values)])
    ci = seed_intervals(runs, "point", "baseline")
    assert list(ci.overlaps) == [True, True, False, False, False]
    assert ci.tps.tolist() == pytest.approx([102.0, 105.0, 50.0, 201.0, 104.6]) and list(ci.seeds) == [3] * 5
    table = format_table(ci.assign(concurrency=1, steps=1, rate_per_s=np.nan))
    assert table.splitlines()[1].split()[1:5] == ["1", "1", "102", "±"]
    assert "~ its TPS" in legend(ci) and "~" not in legend(ci[ci.baseline == 1])


def test_a_point_of_one_seed_in_a_seeds_sweep_shows_no_interval():
    """A sweep over `seeds: [1, 3]`: the one-seed row has no interval (its mean alone, not `± 0`),
    each row says how many seeds it averages, and the legend says a one-seed row has none."""
    runs = pd.DataFrame([{"point": p, "baseline": 0, "design": "nextn", "seed": k, "tps": v, "per_user_tps": v,
                          "speedup": v / 50, "per_user_speedup": v / 50}
                         for p, values in ((0, [100.0]), (1, [100.0, 104.0, 108.0])) for k, v in enumerate(values)])
    ci = seed_intervals(runs, "point", "baseline")
    lines = format_table(ci.assign(concurrency=1, steps=1, rate_per_s=np.nan)).splitlines()
    assert "±" not in lines[1] and lines[1].split()[-1] == "1"
    assert "±" in lines[2] and lines[2].split()[-1] == "3"
    assert "over 3 seeds" in legend(ci) and "a row of one seed has none" in legend(ci)


@pytest.mark.parametrize("extra, says", [
    (["--seeds", "0"], "--seeds: Input should be greater than or equal to 1"),
    (["--seeds", "1001"], "--seeds: Input should be less than or equal to 1000"),
    (["--seeds", "many"], "--seeds: 'many' is not a whole number"),
    (["--set", "seeds=0"], "seeds: Input should be greater than or equal to 1"),
    (["--set", "seeds=2000"], "seeds: Input should be less than or equal to 1000"),
    (["--set", "seeds=true"], "seeds: Input should be a valid integer"),
])
def test_a_bad_seeds_value_is_one_line(write_scenario, tmp_path, capsys, extra, says):
    code, _, err = _run([write_scenario(TINY), "--out", tmp_path / "run", *extra], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("mtpsim: error: ") and says in lines[0]
    assert not (tmp_path / "run").exists()
