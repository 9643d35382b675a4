"""trace.json: Chrome/Perfetto format, one slice per simulated pass, one track per replica."""
from __future__ import annotations

import json

import pandas as pd

from mtpsim.cli import main
from tests.conftest import BASE


def _slices(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_trace_has_one_slice_per_pass(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    scenario = {**BASE, "parallel": {"tp": 8, "dp": 2}, "workload": {**BASE["workload"], "num_requests": 6}}
    assert main(["run", str(write_scenario(scenario)), "--out", str(out), "--trace"]) == 0
    doc = json.loads((out / "trace.json").read_text())
    passes = pd.read_csv(out / "passes.csv")
    slices = _slices(doc)
    assert len(slices) == len(passes) > 0
    assert {(e["pid"], e["tid"]) for e in slices} == {(0, 0), (0, 1)}  # one track per replica
    tracks = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len(tracks) == 2
    first = min(slices, key=lambda e: (e["tid"], e["ts"]))
    assert {"kind", "part", "tokens"} <= first["args"].keys() and first["dur"] > 0
    assert {e["args"]["kind"] for e in slices} >= {"prefill", "draft", "verify", "extend"}
    # slices tile simulated time: total duration equals the passes' total time
    assert abs(sum(e["dur"] for e in slices) / 1e6 - passes.duration_s.sum()) < 1e-6


def test_trace_slices_on_one_track_do_not_overlap(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(write_scenario(BASE)), "--out", str(out), "--trace"]) == 0
    slices = sorted(_slices(json.loads((out / "trace.json").read_text())), key=lambda e: e["ts"])
    ends = [e["ts"] + e["dur"] for e in slices]
    assert all(nxt["ts"] >= end - 1e-6 for end, nxt in zip(ends, slices[1:]))
