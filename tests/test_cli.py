"""The command line end to end: cost, run, the run folder, nothing overwritten."""
from __future__ import annotations

import pandas as pd
import yaml

from mtpsim.cli import main
from tests.conftest import BASE


def test_cost_prints_passes_iteration_and_memory(write_scenario, capsys):
    assert main(["cost", str(write_scenario(BASE)), "--batch", "8", "--context", "4096"]) == 0
    out = capsys.readouterr().out
    for text in ("verify:target", "draft:mtp", "extend:mtp", "decode:target", "iteration_ms", "max_kv_tokens",
                 "memory", "batch 8, context 4096"):
        assert text in out


def test_run_writes_folder_with_baseline(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(write_scenario(BASE)), "--out", str(out), "--set", "workload.output_len=16"]) == 0
    assert {"summary.csv", "requests.csv", "iterations.csv", "scenario.resolved.yaml", "accept_counts.csv"} <= {
        p.name for p in out.iterdir()}
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary.design) == {"nextn", "none"}
    assert summary.loc[summary.design == "none", "speedup"].iloc[0] == 1.0
    for col in ("name", "design", "steps", "topk", "draft_tokens", "concurrency", "rate_per_s", "num_requests",
                "tps", "per_user_tps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s",
                "accept_length", "speedup", "per_user_speedup", "draft_share", "verify_share", "extend_share",
                "prefill_share", "overhead_share", "max_kv_tokens", "sim_wall_s"):
        assert col in summary.columns
    resolved = list(yaml.safe_load_all((out / "scenario.resolved.yaml").read_text()))
    assert resolved[0]["workload"]["output_len"] == 16 and resolved[0]["engine"]["max_graph_batch"] == 256
    assert "TPS" in capsys.readouterr().out


def test_run_refuses_a_folder_with_files(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert main(["run", str(write_scenario(BASE)), "--out", str(out)]) == 2
    assert (out / "mine.txt").read_text() == "keep me" and len(list(out.iterdir())) == 1
    assert "not empty" in capsys.readouterr().err


def test_sweep_runs_each_point_once_and_baselines_once(write_scenario, tmp_path):
    data = {**BASE, "sweep": {"speculative.steps": [1, 2], "workload.concurrency": [1, 4]}}
    data["workload"] = {**BASE["workload"], "output_len": 8}
    out = tmp_path / "sweep"
    assert main(["run", str(write_scenario(data)), "--out", str(out), "--jobs", "1"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert (summary.design == "nextn").sum() == 4 and (summary.design == "none").sum() == 2
    assert summary.speedup.notna().all()


def test_draft_only_sweeps_share_one_baseline(write_scenario, tmp_path, capsys):
    mtp = [{"num_layers": 1, "layer": {"attention": "mla", "ffn": "moe"}},
           {"num_layers": 1, "layer": {"attention": "mla", "ffn": "dense"}}]
    data = {**BASE, "sweep": {"model.mtp": mtp}, "workload": {**BASE["workload"], "output_len": 8}}
    out = tmp_path / "mtp"
    assert main(["run", str(write_scenario(data)), "--out", str(out), "--jobs", "1"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert (summary.design == "none").sum() == 1
    assert any(line.rstrip().endswith("mtp") for line in capsys.readouterr().out.splitlines())  # its own column
