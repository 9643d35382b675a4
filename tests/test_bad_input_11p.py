"""An eleventh adversarial campaign (the Python API, `verify`, `calibrate`), by class. The API
raises the project's own ScenarioError, whose one-line message is what the CLI prints, never an
AttributeError or TypeError from deep inside nor a silently wrong result; the commands keep
test_bad_input.py's contract (one stderr line, exit status 2, naming the file or flag and key)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

import mtpsim
from mtpsim.errors import ScenarioError
from mtpsim.schema import Scenario, Workload
from tests.test_bad_input import one_line_error

SMALL = {"name": "p", "model": "llama-3.1-8b", "hardware": "h200", "speculative": {"design": "none"},
         "workload": {"concurrency": 2, "num_requests": 4, "input_len": 64, "output_len": 16}}


def _error(call) -> ScenarioError:
    """The ScenarioError `call` raises, its message one line under 500 characters (the CLI's)."""
    with pytest.raises(ScenarioError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and len(message) < 500, message
    return info.value


@pytest.fixture(scope="module")
def point(tmp_path_factory) -> Scenario:
    path = tmp_path_factory.mktemp("api") / "s.yaml"
    path.write_text(yaml.safe_dump(SMALL, sort_keys=False))
    return mtpsim.load(path)[0]


# ---------------------------------------------------------------- 1: what mtpsim.load takes
@pytest.mark.parametrize("arg", [None, 3, 2.5, ["s.yaml"], object()], ids=["none", "int", "float", "list", "object"])
def test_load_refuses_what_is_neither_a_path_nor_a_mapping(arg):
    """Before: TypeError `expected str, bytes or os.PathLike object` from pathlib, deep inside."""
    err = _error(lambda: mtpsim.load(arg))
    assert err.where == "mtpsim.load" and "path" in err.reason and type(arg).__name__ in err.reason


def test_load_reads_a_mapping_as_the_file_holding_it(tmp_path):
    """Before: a dict was a TypeError. Now it loads as the same scenario written in a file,
    tuples as lists, and errors name `<dict>` and the key."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(SMALL, sort_keys=False))
    from_file = mtpsim.load(path)[0]
    mapping = copy.deepcopy(SMALL) | {"sweep": {"workload.concurrency": (1, 2)}}
    points = mtpsim.load(mapping)
    assert len(points) == 2 and mapping["sweep"]["workload.concurrency"] == (1, 2)  # the caller's mapping untouched
    assert points[1].model_dump() == from_file.model_dump()
    assert points[0].specs == from_file.specs and points[0].workload.concurrency == 1
    assert str(mtpsim.load(mapping, ["seed=3"])[0].seed) == "3"


@pytest.mark.parametrize("change,key,word", [
    (lambda d: d.update(bogus=1), "bogus", "unknown key"),
    (lambda d: d["workload"].update(concurrency=np.int64(2)), "workload.concurrency", "numpy.int64"),
    (lambda d: d.update({("a",): 1}), "", "a key is tuple"),
    (lambda d: d["workload"].update(input_len=b"64"), "workload.input_len", "bytes"),
    (lambda d: d.update(itself=d), "itself.itself", "nested deeper"),
    (lambda d: d.clear(), "", "empty"),
], ids=["unknown-key", "numpy-number", "tuple-key", "bytes", "holds-itself", "empty"])
def test_load_of_a_mapping_names_its_key(change, key, word):
    data = copy.deepcopy(SMALL)
    change(data)
    err = _error(lambda: mtpsim.load(data))
    assert err.where == "<dict>" and err.key.startswith(key) and word in err.reason, str(err)


@pytest.mark.parametrize("sets,key", [("seed=3", "sets"), (None, "sets"), ([3], "sets.0"), (["seed=3", None], "sets.1")])
def test_load_sets_are_texts(point, sets, key):
    """Before: a str was read letter by letter (`--set: s: expected key.path=value`), None and a
    number were a TypeError / AttributeError."""
    err = _error(lambda: mtpsim.load({**SMALL}, sets))
    assert (err.where, err.key) == ("mtpsim.load", key)


# ---------------------------------------------------------------- 2: what mtpsim.simulate takes
@pytest.mark.parametrize("arg", [None, "s.yaml", {"name": "x"}], ids=["none", "str", "dict"])
def test_simulate_refuses_what_is_not_a_point(arg):
    """Before: AttributeError `'NoneType' object has no attribute 'disaggregation'`."""
    err = _error(lambda: mtpsim.simulate(arg))
    assert err.where == "mtpsim.simulate" and "Scenario" in err.reason


@pytest.mark.parametrize("arg", [None, {"name": "x"}], ids=["none", "dict"])
def test_disaggregated_refuses_what_is_not_a_point(arg):
    """Before: AttributeError `'NoneType' object has no attribute 'model_dump'`."""
    err = _error(lambda: mtpsim.disaggregated(arg, prefill={"tp": 1}, decode={"tp": 1}))
    assert err.where == "mtpsim.disaggregated" and "Scenario" in err.reason


def test_simulate_refuses_a_list_of_points(point):
    assert "not list" in _error(lambda: mtpsim.simulate([point])).reason


def test_simulate_refuses_a_scenario_built_without_validation():
    """Before: AttributeError `'Scenario' object has no attribute '_specs'`."""
    bare = Scenario(name="x", model="llama-3.1-8b", hardware="h200")
    assert "without validation" in _error(lambda: mtpsim.simulate(bare)).reason


@pytest.mark.parametrize("update,key,word", [
    (lambda p: {"workload": {"concurrency": 3}}, "workload", "not the Workload"),  # before: AttributeError deep inside
    (lambda p: {"seed": -1}, "seed", "greater than or equal"),                     # before: ran
    (lambda p: {"model": "qwen3-8b"}, "model", "catalog entries"),                 # before: ran llama-3.1-8b's specs
    (lambda p: {"hardware": "b200"}, "hardware", "catalog entries"),
    (lambda p: {"speculative": p.speculative.model_copy(update={"design": "nextn", "steps": 2})},
     "speculative", "MTP layers"),                                                 # before: ran without its checks
], ids=["dict-section", "bad-value", "other-model", "other-hardware", "design-the-model-cannot-run"])
def test_simulate_refuses_a_point_changed_after_validation(point, update, key, word):
    err = _error(lambda: mtpsim.simulate(point.model_copy(update=update(point))))
    assert err.key.startswith(key) and word in err.reason and "changed after" in err.reason, str(err)


def test_simulate_runs_a_point_copied_or_given_another_seed(point):
    """What the project's own copies change (the seed, a copy) still runs, with the same result."""
    same = mtpsim.simulate(copy.deepcopy(point)).summary.drop(columns="sim_wall_s")
    assert same.equals(mtpsim.simulate(point).summary.drop(columns="sim_wall_s"))
    assert mtpsim.simulate(point.model_copy(update={"seed": 7})).summary.shape == (1, same.shape[1] + 1)


@pytest.mark.parametrize("option,value", [("keep_passes", "no"), ("max_request_rows", None),
                                          ("max_iteration_rows", -1), ("progress_line", True)])
def test_simulate_options_are_checked(point, option, value):
    """Before: `keep_passes="no"` kept passes (truthy), max_request_rows=None a TypeError in simpy."""
    err = _error(lambda: mtpsim.simulate(point, **{option: value}))
    assert (err.where, err.key) == ("mtpsim.simulate", option)


# ---------------------------------------------------------------- 3: a validated point is frozen, in its own words
@pytest.mark.parametrize("target,attr", [(lambda p: p, "seed"), (lambda p: p.workload, "concurrency"),
                                         (lambda p: p.specs, "model"), (lambda p: p.specs.model, "hidden_size")],
                         ids=["scenario", "section", "specs", "model-spec"])
def test_changing_a_validated_point_is_a_scenario_error(point, target, attr):
    """Before: pydantic's ValidationError `Instance is frozen`, three lines and a URL."""
    obj = target(point)
    before = getattr(obj, attr)
    err = _error(lambda: setattr(obj, attr, 0))
    assert err.key == attr and "frozen" in err.reason and "sets=" in err.reason
    assert "frozen" in _error(lambda: delattr(obj, attr)).reason
    assert getattr(obj, attr) == before


def test_a_section_built_by_hand_is_frozen_too():
    assert _error(lambda: setattr(Workload(), "concurrency", 3)).where == "Workload"


# ---------------------------------------------------------------- 4: verify runs every point on one device
VERIFY = """\
name: v
model: llama-3.1-8b
hardware: cpu
speculative: {design: none}
workload: {arrival: batch, concurrency: 1, num_requests: 1, input_len: 16, output_len: 8}
verify: {num_layers: 1, hidden_scale: 0.03, iterations: 2, warmup_iterations: 0}
"""


def test_verify_refuses_a_sweep_over_devices(tmp_path, capsys, monkeypatch):
    """Before: with CUDA present, `sweep: {verify.device: [cpu, cuda]}` ran both points on the
    first point's device, the cuda point's rows timed on the CPU."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    path = tmp_path / "v.yaml"
    path.write_text(VERIFY + "sweep: {verify.device: [cpu, cuda]}\n")
    one_line_error(capsys, ["verify", str(path), "--out", str(tmp_path / "o")], "sweep.verify.device", "one device")
    assert not (tmp_path / "o").exists()


def _stub_verify(monkeypatch, ran=None) -> None:
    """verify's loop, plot and machine check stubbed: a point 'verifies' at once (its seed noted
    in `ran`), so a test sees only what the command says around the loop."""
    pytest.importorskip("torch")
    import pandas as pd

    from mtpsim.verify import command
    table = pd.DataFrame({"kind": ["tps"], "predicted": [1.0], "measured": [1.0], "rel_error": [0.0]})
    monkeypatch.setattr(command, "verify_point", lambda s, *args: (ran.append(s.seed) if ran is not None else None) or table)
    monkeypatch.setattr(command, "plot", lambda table, path: path.write_text(""))
    monkeypatch.setattr(command, "machine_level", lambda device, profile: None)


def _verify_warnings(tmp_path, capsys, text: str) -> list[str]:
    """Run verify on a scenario of `text` (stubbed loop); it must succeed; its warning lines."""
    from mtpsim import cli
    path = tmp_path / "v.yaml"
    path.write_text(text)
    assert cli.main(["verify", str(path), "--out", str(tmp_path / "o")]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


def test_verify_warns_of_any_point_on_other_hardware(tmp_path, capsys, monkeypatch):
    """Before: only the first point's hardware was compared with this device: a sweep of
    `hardware: [cpu, h200]` verified the h200 point on this CPU without a word."""
    _stub_verify(monkeypatch)
    warnings = _verify_warnings(tmp_path, capsys, VERIFY + "sweep: {hardware: [cpu, h200]}\n")
    # the h200 comes from the sweep, so its entry is named (campaign 39, H7)
    assert len(warnings) == 1 and ": sweep.hardware: " in warnings[0] and "h200" in warnings[0], warnings


def test_verify_warns_that_it_runs_one_seed(tmp_path, capsys, monkeypatch):
    """Before: `seeds: 3` ran one loop per point at the scenario's seed without a word."""
    runs = []
    _stub_verify(monkeypatch, runs)
    warnings = _verify_warnings(tmp_path, capsys, VERIFY + "seed: 4\nseeds: 3\n")
    assert runs == [4] and len(warnings) == 1 and ": seeds: " in warnings[0] and "seed 4" in warnings[0], warnings


@pytest.mark.parametrize("cost,key", [("{model: roofline}", "cost.model"), ("{profile: cpu}", "cost.profile")])
def test_verify_warns_that_it_prices_with_its_own_cost_source(tmp_path, capsys, monkeypatch, cost, key):
    """Before: `cost: {model: roofline}` (or another profile) was not read by verify, which
    priced the loop with this device's committed profile, without a word."""
    _stub_verify(monkeypatch)
    warnings = _verify_warnings(tmp_path, capsys, VERIFY + f"cost: {cost}\n")
    assert len(warnings) == 1 and f": {key}: " in warnings[0] and "not with the scenario's cost" in warnings[0], warnings


def test_verify_of_a_trace_decodes_the_traces_prompts(tmp_path, capsys):
    """Before: a trace workload's batch took workload.input_len's default (1024-token prompts),
    whatever the trace held, with a warning that spoke of arrivals only."""
    pytest.importorskip("torch")
    from mtpsim.verify import setup
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,40,5\n0.1,24,5\n0.2,8,5\n")
    path = tmp_path / "v.yaml"
    path.write_text(VERIFY.replace("{arrival: batch, concurrency: 1, num_requests: 1, input_len: 16, output_len: 8}",
                                   "{arrival: trace, trace: t.csv, concurrency: 2}"))
    assert setup.prompt_lengths(mtpsim.load(path)[0]) == [40, 24]
    capsys.readouterr()  # load's warning that `run` does not read a trace's concurrency (verify does)
    one_line_error(capsys, ["verify", str(path), "--set", "workload.concurrency=4", "--out", str(tmp_path / "o")],
                   "workload.concurrency", "selects 3")
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- 5: calibrate names what the user gave
def test_calibrate_out_under_a_file_names_the_out_and_the_file(tmp_path, capsys):
    """Before: `afile/sub.partial: cannot create: Not a directory`: a name the user never gave."""
    pytest.importorskip("torch")
    (tmp_path / "afile").write_text("mine")
    line = one_line_error(capsys, ["calibrate", "--device", "cpu", "--out", str(tmp_path / "afile" / "sub")], "",
                          "is a file")
    assert ".partial" not in line and f"{tmp_path / 'afile' / 'sub'}: cannot create: {tmp_path / 'afile'}" in line
    assert (tmp_path / "afile").read_text() == "mine"


def test_calibrate_device_cuda_without_cuda_names_the_flag(tmp_path, capsys, monkeypatch):
    """Before: `mtpsim: error: --device cuda but torch sees no CUDA device` (no `--flag: reason`)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    line = one_line_error(capsys, ["calibrate", "--device", "cuda", "--out", str(tmp_path / "p")], "", "no CUDA")
    assert line.startswith("mtpsim: error: --device: cuda") and not (tmp_path / "p").exists()
