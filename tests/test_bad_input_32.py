"""Bad-input campaign 32 (a): ~170 probes of search, recommend, calibrate's arguments, schema,
MTPSIM_CATALOG, trace files, disaggregation and scenario combinations. It found no traceback, hang
or multi-line error; these are the holes and judgment calls it left:
- `disaggregation.gpus` past the pools' GPUs was accepted without a word (read only as a bound);
- `search` on far more GPUs than its load uses printed "0 tok/s/GPU" for its pick and the
  runner-up with a +8.1% margin between them, and no word that most replicas serve nothing;
- a trace stamped in Unix time is refused at the 1e9 s a trace spans, without saying why.
Trees read from an accept length alone (the same session's check against new published cases)
are tested in test_tree_accept_length.py.

Probed, and already fine (the report lists ~60 more): search's bounds, targets and cache; recommend's
warnings; calibrate's and schema's argument errors; MTPSIM_CATALOG oddities; every trace format's
odd rows; numeric traces starting late (their metrics count from the first arrival, so an idle
lead-in changes nothing).

Left alone: `cost` past the model's max_context says so and then skips the does-not-fit warning
(nothing that long runs at all); `recommend --batch 4,1,4` drops the repeat silently; `search
--gpus 1 --disagg` builds no split without a word (campaign 18 judged it fine); a sweep over
`seeds` is silent (its points differ in replicates).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim.search.summary import rate
from tests.test_bad_input import one_line_error

ROOT = Path(__file__).resolve().parents[1]
MIMO = """\
name: mimo
model: mimo-7b
hardware: h100-sxm
parallel: {tp: 1}
speculative: {design: nextn, steps: 1}
acceptance: {per_depth: [0.8]}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 512, output_len: 64}
"""


def test_gpus_past_the_pools_are_said_to_serve_nothing(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()  # said of this same file and --set by another test in this process, it would not repeat
    code = cli.main(["cost", str(ROOT / "scenarios" / "disagg-gb200-1p3d.yaml"), "--set", "disaggregation.gpus=1000",
                     "--set", "sweep=null", "--batch", "8"])
    err = capsys.readouterr().err
    assert code == 0, err
    said = [line for line in err.splitlines() if ": disaggregation.gpus: " in line]
    assert len(said) == 1 and "use 32 of the deployment's 1000" in said[0] and "968" in said[0], err


def test_gpus_the_pools_fill_say_nothing(capsys):
    assert cli.main(["cost", str(ROOT / "scenarios" / "disagg-gb200-1p3d.yaml"), "--set", "disaggregation.gpus=32",
                     "--set", "sweep=null", "--batch", "8"]) == 0
    assert "disaggregation.gpus" not in capsys.readouterr().err


@pytest.mark.parametrize("value, text", [(0.1612, "0.161"), (0.0999, "0.0999"), (12.345, "12.3"), (99.94, "99.9"),
                                          (100.4, "100"), (2412.6, "2413")])
def test_search_prints_small_rates_to_three_figures(value, text):
    assert rate(value) == text


def test_search_says_when_its_pick_has_replicas_no_user_reaches(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(MIMO)
    code = cli.main(["search", str(path), "--gpus", "4", "--concurrency", "1", "--max-steps", "1",
                     "--set", "search.tp=[1]", "--jobs", "1", "--no-cache", "--no-plot", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    best = out.split("best:")[1].splitlines()
    assert best[0].strip().startswith("4x tp1") and " 0 tok/s/GPU" not in best[1]
    assert "note: 4 replicas for 1 user: 3 never serve a request" in out


def test_a_trace_in_unix_time_is_refused_saying_what_the_times_count_from(tmp_path, capsys):
    rows = "\n".join(f"{1733500000 + i * 0.5},300,200" for i in range(4))
    (tmp_path / "t.csv").write_text(f"arrival_s,input_len,output_len\n{rows}\n")
    path = tmp_path / "s.yaml"
    path.write_text(MIMO.replace("workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 512, "
                                 "output_len: 64}", "workload: {arrival: trace, trace: {path: t.csv}}"))
    line = one_line_error(capsys, ["run", str(path)], "arrival_s", "not unix time")
    assert "t.csv" in line and "subtract the first row's" in line
