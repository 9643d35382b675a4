"""Bad-input campaign 28: the Python API as the notebooks call it, search's semantics, sweeps,
recommend against run, and determinism.

Probed, and already fine: mtpsim.load and mtpsim.simulate given every wrong type and points
changed after load; frozen points and specs against attribute assignment; copies and pickles of
points; search's Pareto flags, targets (a looser one never picked worse), GPU bounds, cache and
launch options; sweeps with an invalid point (one line naming it); seed intervals; recommend's
grid against run; and identical results across reruns, --jobs 1 and 2 and the Ray backend.

Found and fixed:
- `run_points` (notebooks 01 and 03) ran a point changed after load: its row on the old specs and
  its baseline on the new, so DeepSeek-V3's MTP row against Llama-3.1-8B's plain decode gave a
  0.29x speedup without a word (mtpsim.simulate refused the same point): it checks its points as
  simulate does, and its jobs, flags and backend as the CLI checks its flags;
- a point's spec tables (hardware.peak_flops, model.attention_kinds) were the catalog cache's own
  mappings: a notebook's what-if on one point changed every later load in the process (TPS 210.20
  -> 209.39 on a fresh load), or broke it with a raw ValidationError: each load gets its own copy;
- run_search, parse_target and format_table gave raw AttributeError / TypeError / KeyError on
  wrong types, and run_search ran seeds -1, jobs 0 or backend 'dask' without a word: each is a
  ScenarioError naming the argument;
- (questionable, mended) `search.designs` without `none` left frontier.csv's speedup column
  empty without a word: one warning says so.

Noticed, and left alone: an API change of a key the load's `sets` gave is blamed on `--set`;
`search --seeds N` prints the best and runner-up at seed 0 beside N-seed means; a search below
saturation ties by float noise;
recommend rates a policy's 0-step entry at plain decoding's TPS (running it pays the draft's
prefill and memory: 0.97x); the vLLM launch line for attention DP on a dense model was not checked
against vLLM's code.
"""
from __future__ import annotations

import pytest

import mtpsim
from mtpsim import catalog
from mtpsim.errors import ScenarioError
from mtpsim.run import format_table, run_points

SETS = ["workload.num_requests=4", "workload.output_len=16", "workload.input_len=128", "workload.concurrency=2",
        "cost.model=roofline"]
QUICKSTART = "scenarios/quickstart.yaml"


def test_run_points_refuses_a_point_changed_after_load():
    """Before: nextn on DeepSeek-V3's specs against none on Llama-3.1-8B's: 0.29x, no word."""
    point = mtpsim.load(QUICKSTART, SETS)[0]
    with pytest.raises(ScenarioError) as err:
        run_points([point.model_copy(update={"model": "llama-3.1-8b"})], progress=False)
    assert err.value.key == "model" and "changed after mtpsim.load" in err.value.reason


def test_one_points_spec_tables_do_not_reach_another_load():
    """Before: a fresh load read the edited peak_flops (5.94e14), and simulated at it."""
    a = mtpsim.load(QUICKSTART, SETS)[0]
    before = catalog.load_hardware("h200").peak_flops["bf16"]
    a.specs.hardware.peak_flops["bf16"] *= 0.6
    a.specs.model.attention_kinds.clear()  # made the next load a raw pydantic ValidationError
    b = mtpsim.load(QUICKSTART, SETS)[0]
    assert b.specs.hardware.peak_flops["bf16"] == before == catalog.load_hardware("h200").peak_flops["bf16"]
    assert b.specs.model.attention_kinds


@pytest.mark.parametrize("points, kw, key", [
    (None, {}, "points"), ("self", {}, "points"), ([], {}, "points"),
    ("list", {"jobs": "2"}, "jobs"), ("list", {"jobs": 0}, "jobs"), ("list", {"jobs": True}, "jobs"),
    ("list", {"backend": "dask"}, "backend"), ("list", {"keep_passes": "yes"}, "keep_passes"),
])
def test_run_points_checks_its_arguments(points, kw, key):
    """Before: TypeError / AttributeError from inside, or (jobs 0) a run without a word."""
    point = mtpsim.load(QUICKSTART, SETS)[0]
    given = {"self": point, "list": [point]}.get(points, points) if isinstance(points, str) else points
    with pytest.raises(ScenarioError) as err:
        run_points(given, progress=False, **kw)
    assert (err.value.where, err.value.key) == ("mtpsim.run.run_points", key)


def test_run_points_still_runs_what_load_gave():
    summary, _ = run_points(mtpsim.load(QUICKSTART, SETS), jobs=None, progress=False)
    assert set(summary.design) == {"nextn", "none"}


@pytest.mark.parametrize("change, key", [({"flags": None}, "flags"), ({"targets": ["p50:30ms"]}, "targets"),
                                         ({"targets": None}, "targets"), ({"seeds": -1}, "seeds"),
                                         ({"jobs": 0}, "jobs"), ({"backend": "dask"}, "backend")])
def test_run_search_checks_its_arguments(tmp_path, change, key):
    """Before: AttributeError / TypeError, or seeds -1, jobs 0 and backend 'dask' ran to the end."""
    from mtpsim.search.command import run_search
    args = {"flags": {}, "targets": [], "seeds": None, "jobs": None, "backend": "pool"} | change
    with pytest.raises(ScenarioError) as err:
        run_search(QUICKSTART, [], args["flags"], args["targets"], args["seeds"], str(tmp_path / "o"), args["jobs"],
                   backend=args["backend"])
    assert err.value.key == key and not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, metric, key", [(None, "tpot", ""), ("p50:3ms", "latency", "metric")])
def test_parse_target_checks_its_arguments(text, metric, key):
    """Before: AttributeError ('NoneType' has no strip) and KeyError: 'latency'."""
    from mtpsim.search.targets import parse_target
    with pytest.raises(ScenarioError) as err:
        parse_target(text, metric)
    assert err.value.key == key


@pytest.mark.parametrize("summary", [None, [1], "summary.csv"])
def test_format_table_checks_its_argument(summary):
    with pytest.raises(ScenarioError) as err:
        format_table(summary)
    assert err.value.key == "summary"


def test_a_search_without_plain_decoding_says_what_it_cannot_compare(tmp_path, capsys):
    """Before: frontier.csv's speedup column came out empty (NaN in all 18 rows), said nowhere."""
    from mtpsim import cli
    from tests.test_bad_input_5 import warnings_of
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
                        "speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\n"
                        "acceptance: {per_depth: [0.8, 0.6]}\n"
                        "workload: {concurrency: 1, num_requests: 4, input_len: 256, output_len: 16}\n"
                        "search: {tp: [1], concurrency: [1], requests_per_user: 2, designs: [nextn]}\n")
    argv = ["search", str(scenario), "--gpus", "1", "--no-cache", "--no-plot", "--out", str(tmp_path / "o")]
    said = [w for w in warnings_of(capsys, argv) if ": search.designs: leaves out none" in w]
    assert len(said) == 1, said
    with_none = scenario.read_text().replace("designs: [nextn]", "designs: [none, nextn]")
    scenario.write_text(with_none)
    assert cli.main([*argv[:-1], str(tmp_path / "o2")]) == 0
    assert ": search.designs: " not in capsys.readouterr().err
