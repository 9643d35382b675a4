"""Every plot function draws a non-empty PNG from small DataFrames; `mtpsim plot` redraws a run."""
from __future__ import annotations

import pandas as pd
import pytest

from mtpsim import plots
from mtpsim.cli import main

SUMMARY = pd.DataFrame({
    "name": "t", "design": ["nextn", "nextn", "none", "none"], "steps": [2, 2, 0, 0], "topk": 1,
    "draft_tokens": [3, 3, 1, 1], "concurrency": [1, 8, 1, 8], "rate_per_s": float("nan"), "num_requests": 8,
    "dp": 1, "tps": [200.0, 900.0, 120.0, 700.0], "per_user_tps": [200.0, 110.0, 120.0, 85.0],
    "accept_length": [2.4, 2.4, 1.0, 1.0], "draft_share": [0.05, 0.04, 0, 0], "verify_share": [0.7, 0.75, 0.9, 0.85],
    "extend_share": [0.05, 0.04, 0, 0], "prefill_share": [0.1, 0.12, 0.1, 0.15], "host_share": [0.1, 0.05, 0, 0],
    "point": [0, 1, -1, -1], "speedup": [1.67, 1.29, 1.0, 1.0], "per_user_speedup": [1.67, 1.29, 1.0, 1.0],
})
COUNTS = pd.DataFrame({"point": [0, 0, 0, 1, 1, 1], "accepted": [0, 1, 2] * 2, "count": [3, 4, 9, 2, 5, 8]})
ITERATIONS = pd.DataFrame({
    "replica": 0, "index": range(4), "kind": ["prefill", "decode", "decode", "decode"],
    "start_s": [0.0, 0.010, 0.016, 0.022], "duration_s": [0.010, 0.006, 0.006, 0.006], "batch": 1, "emitted": 3,
    "draft_s": [0, 0.001, 0.001, 0.001], "verify_s": [0, 0.004, 0.004, 0.004], "extend_s": [0, 0.0005, 0.0005, 0.0005],
    "prefill_s": [0.010, 0, 0, 0], "host_s": [0, 0.0005, 0.0005, 0.0005], "point": 0})
PASSES = pd.DataFrame({"replica": 0, "start_s": [0.010, 0.011, 0.015], "duration_s": [0.001, 0.004, 0.0005],
                       "kind": ["draft", "verify", "extend"], "part": ["mtp", "target", "mtp"],
                       "tokens": [1, 3, 3], "point": 0})
MEMORY = pd.DataFrame({"label": ["none", "nextn S=2"], "design": ["none", "nextn"], "steps": [0, 2],
                       "context": 2048, "target_weights_GB": [80.0, 80.0], "draft_weights_GB": [0.0, 1.5],
                       "kv_budget_GB": [40.0, 38.5], "max_requests": [300, 280]})

REQUESTS = pd.DataFrame({"point": [0, 0, 0, 1, 1], "arrival_s": [0.0, 0.1, 0.2, 0.0, 0.3],
                         "first_token_s": [0.05, 0.2, 0.3, 0.04, 0.35], "finish_s": [0.5, 0.9, 0.3, 0.6, 1.0],
                         "output_len": [10, 20, 1, 12, 30]})

FIGURES = {
    "latency": lambda: plots.latency_distributions(REQUESTS, SUMMARY),
    "speedup": lambda: plots.speedup_vs_load(SUMMARY),
    "frontier": lambda: plots.throughput_frontier(SUMMARY),
    "breakdown": lambda: plots.time_breakdown(SUMMARY),
    "acceptance": lambda: plots.accept_histogram(COUNTS, SUMMARY),
    "memory": lambda: plots.memory_budget(MEMORY, "t"),
    "timeline": lambda: plots.timeline(PASSES, ITERATIONS, "t"),
    "timeline-from-iterations": lambda: plots.timeline(plots.passes_from_iterations(ITERATIONS, "nextn"), ITERATIONS, "t"),
}


def test_line_plots_draw_the_summary_they_are_given():
    """The PNG test shows a figure was drawn; this that it draws the table's numbers, each design's
    points at its own x: speedup against concurrency, and the frontier's TPS against per-user TPS."""
    def lines(fig):
        return {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ax in fig.axes for ln in ax.lines}
    spec = SUMMARY[SUMMARY.design == "nextn"]
    speedup = lines(plots.speedup_vs_load(SUMMARY))
    assert speedup["nextn S=2"] == (spec.concurrency.tolist(), spec.speedup.tolist())
    frontier = lines(plots.throughput_frontier(SUMMARY))
    for label, rows in (("nextn S=2", spec), ("none", SUMMARY[SUMMARY.design == "none"])):
        assert frontier[label] == (rows.per_user_tps.tolist(), rows.tps.tolist()), label
    assert plots.speedup_vs_load(SUMMARY)._suptitle.get_text().startswith("t: ")  # named for the scenario, "t"


@pytest.mark.parametrize("name", FIGURES)
def test_each_plot_writes_a_png(name, tmp_path):
    fig = FIGURES[name]()
    assert fig.texts or fig._suptitle is not None  # a title naming the scenario
    path = tmp_path / f"{name}.png"
    fig.savefig(path)
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_titles_name_the_scenario():
    assert plots.speedup_vs_load(SUMMARY)._suptitle.get_text().startswith("t:")


def test_poisson_sweeps_plot_against_rate():
    poisson = SUMMARY.assign(concurrency=1, rate_per_s=[1.0, 4.0, 1.0, 4.0])
    assert plots.load_axis(poisson)[0] == "rate_per_s"


def test_passes_from_iterations_follow_the_design_order():
    lane = plots.passes_from_iterations(ITERATIONS, "nextn")
    first = lane[lane.start_s >= 0.010].kind.tolist()[:4]
    assert first == ["draft", "verify", "extend", "host"]


def test_write_plots_saves_every_png(tmp_path):
    paths = plots.write_plots(tmp_path, SUMMARY, COUNTS, ITERATIONS, PASSES, MEMORY)
    assert {p.name for p in paths} == {"speedup.png", "frontier.png", "breakdown.png", "timeline.png",
                                       "acceptance.png", "memory.png"}
    assert all(p.stat().st_size > 1000 for p in paths)


def test_run_plot_and_plot_command(write_scenario, tmp_path, capsys):
    from tests.conftest import BASE
    out = tmp_path / "run"
    assert main(["run", str(write_scenario(BASE)), "--out", str(out), "--plot"]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "memory.png" in pngs and "timeline.png" in pngs and "latency.png" in pngs and len(pngs) == 7
    for p in out.glob("*.png"):
        p.unlink()
    assert main(["plot", str(out)]) == 0
    assert len(list(out.glob("*.png"))) == 7


def test_plot_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_sweep_legends_read_as_settings_and_the_baseline_as_none(write_scenario, tmp_path):
    """A sweep over whole sections: a policy reads `1:3 128:2`, a draft layer `attention=swa
    ffn=dense`, and the shared baseline `none`, never a design's settings or a raw dict."""
    from mtpsim.plots import _series
    from mtpsim.run import run_points
    from mtpsim.scenario import load
    from tests.conftest import BASE
    data = {**BASE, "workload": {**BASE["workload"], "output_len": 8},
            "model": {"from": "deepseek-v3", "mtp": {"layer": {"attention": "mla", "ffn": "moe"}}},
            "sweep": {"speculative": [{"design": "nextn", "steps": 3},
                                      {"design": "nextn", "steps": 3, "policy": {"steps_by_batch": {1: 3, 128: 2}}}],
                      "model.mtp.layer": [{"attention": "mla", "ffn": "moe"}, {"attention": "mla", "ffn": "dense"}]}}
    summary, _ = run_points(load(write_scenario(data)), progress=False)
    names = [name for name, _ in _series(summary)]
    assert names == ["nextn S=3, layer=attention=mla ffn=moe", "nextn S=3, layer=attention=mla ffn=dense",
                     "nextn S=3, policy 1:3 128:2, layer=attention=mla ffn=moe",
                     "nextn S=3, policy 1:3 128:2, layer=attention=mla ffn=dense", "none"]
