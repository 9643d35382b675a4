"""Schema v1: defaults, overrides, sweeps, and the table of bad inputs (exit 2, key and reason)."""
from __future__ import annotations

import copy

import pytest
import yaml

from mtpsim import scenario as sc
from mtpsim.cli import main
from mtpsim.errors import ScenarioError
from tests.conftest import BASE


def with_(path: str, value, base=BASE):
    data = copy.deepcopy(base)
    node = data
    *parents, leaf = path.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    if value is DELETE:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return data


DELETE = object()


def test_defaults_follow_design_doc(write_scenario):
    s = sc.load(write_scenario({"name": "d", "model": "llama-3.1-8b", "hardware": "h100-sxm"}))[0]
    assert s.speculative.design == "none" and s.speculative.topk == 1
    assert s.engine.cuda_graphs and s.engine.overlap_schedule and s.engine.chunked_prefill_tokens is None  # engine's
    assert s.cost.model == "auto" and s.verify.acceptance == "forced" and s.seed == 0
    assert s.parallel.tp == s.parallel.ep == s.parallel.dp == 1


def test_draft_tokens_default_is_steps_plus_one(write_scenario):
    s = sc.load(write_scenario(BASE))[0]
    assert s.speculative.num_draft_tokens == 4


def test_set_overrides_parse_yaml(write_scenario):
    path = write_scenario(BASE)
    s = sc.load(path, ["acceptance.per_depth=[0.5, 0.4, 0.3]", "speculative.steps=2", "model.dtypes.experts=fp4"])[0]
    assert s.acceptance.per_depth == [0.5, 0.4, 0.3]
    assert s.speculative.steps == 2
    assert s.specs.model.dtypes.experts == "fp4"          # deep merge into the catalog entry
    assert s.specs.model.dtypes.attention == "fp8"        # untouched fields kept


def test_sweep_expands_to_product(write_scenario):
    data = with_("sweep", {"workload.concurrency": [1, 8, 32], "speculative.steps": [1, 2]})
    points = sc.load(write_scenario(data))
    assert len(points) == 6
    assert {(p.workload.concurrency, p.speculative.steps) for p in points} == {
        (c, s) for c in (1, 8, 32) for s in (1, 2)}
    assert points[0].point == {"workload.concurrency": 1, "speculative.steps": 1}


def test_acceptance_longer_than_steps_is_fine(write_scenario):
    s = sc.load(write_scenario(with_("acceptance.per_depth", [0.9, 0.8, 0.7, 0.6, 0.5])))[0]
    assert len(s.acceptance.per_depth) == 5


def test_model_override_mapping(write_scenario):
    s = sc.load(write_scenario(with_("model", {"from": "deepseek-v3", "vocab_size": 1000})))[0]
    assert s.specs.model.vocab_size == 1000 and s.specs.model.hidden_size == 7168


BAD = [
    # (id, scenario text or dict, expected key path fragment, reason fragment)
    ("yaml-syntax", "name: x\nmodel: [unclosed\n", "line", "YAML syntax"),
    ("empty", "", "", "empty"),
    ("not-mapping", "- a\n- b\n", "", "mapping"),
    ("unknown-top", with_("colour", "red"), "colour", "unknown key"),
    ("unknown-nested", with_("engine.turbo", True), "engine.turbo", "unknown key"),
    ("unknown-sweep", with_("sweep", {"workload.concurency": [1, 2]}), "sweep.workload.concurency", "unknown key"),
    ("sweep-not-list", with_("sweep", {"workload.concurrency": 4}), "sweep.workload.concurrency", "list"),
    ("missing-name", with_("name", DELETE), "name", "missing"),
    ("wrong-type", with_("workload.concurrency", "many"), "workload.concurrency", "integer"),
    ("negative", with_("workload.num_requests", -3), "workload.num_requests", "greater"),
    ("prob-range", with_("acceptance.per_depth", [0.9, 1.2, 0.7]), "acceptance.per_depth.1", "less than or equal to 1"),
    ("accept-short", with_("acceptance.per_depth", [0.9, 0.8]), "acceptance.per_depth", "2 values for 3 steps"),
    ("steps-zero", with_("speculative.steps", 0), "speculative.steps", "greater"),
    ("unknown-design", with_("speculative.design", "medusa"), "speculative.design", "none"),
    ("unknown-model", with_("model", "gpt-17"), "model", "unknown models catalog name"),
    ("unknown-hardware", with_("hardware", "tpu-v9"), "hardware", "unknown hardware catalog name"),
    ("nextn-no-mtp", with_("model", "gemma-4-e2b", with_("parallel.tp", 1)), "speculative.draft", "neither"),
    ("frozen-no-assistant", with_("speculative.design", "frozen_kv"), "speculative.draft", "assistant"),
    ("topk-multi-layer", with_("speculative", {"design": "multi_layer", "steps": 1, "topk": 2}),
     "speculative", "multi_layer"),
    ("multi-layer-too-many-steps", with_("model", "mimo-v2-flash", with_("speculative", {"design": "multi_layer", "steps": 4},
                                                                        with_("acceptance.per_depth", [0.9] * 4))),
     "speculative.steps", "has 3"),
    ("missing-trace", with_("workload", {"arrival": "trace", "trace": "nowhere.csv"}), "workload.trace", "no such file"),
    ("poisson-no-rate", with_("workload", {"arrival": "poisson"}), "workload", "rate_per_s"),
    ("ep-not-divisor", with_("parallel", {"tp": 8, "ep": 3}), "parallel", "divide"),
    ("draft-tokens-chain", with_("speculative.draft_tokens", 7), "speculative", "steps + 1"),
    ("profile-other-device", with_("cost", {"model": "calibrated", "profile": "cpu"}), "cost.profile", "measured on 'cpu'"),
    ("profile-not-found", with_("cost", {"profile": "no-such-profile"}), "cost.profile", "no profile folder"),
    ("bad-override-path", with_("model", {"from": "deepseek-v3", "hidden_size": "wide"}), "model.hidden_size", "integer"),
    ("no-acceptance", with_("acceptance", DELETE), "acceptance", "profile"),
    ("length-dist", with_("workload.input_len", {"dist": "uniform", "min": 5}), "workload.input_len", "max"),
]


@pytest.mark.parametrize("case,content,key,reason", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_with_key_and_reason(write_scenario, case, content, key, reason):
    path = write_scenario(content)
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    err = info.value
    assert err.where == str(path) or str(path) in err.where
    assert key in err.key or key in err.message
    assert reason.lower() in err.message.lower()


@pytest.mark.parametrize("case,content,key,reason", BAD[:6], ids=[b[0] for b in BAD[:6]])
def test_bad_input_exits_2_without_traceback(write_scenario, capsys, tmp_path, case, content, key, reason):
    path = write_scenario(content)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["cost", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # nothing written


def test_bad_set_value(write_scenario):
    with pytest.raises(ScenarioError, match="key.path=value"):
        sc.load(write_scenario(BASE), ["speculative.steps"])


def test_relative_trace_is_read_beside_the_scenario(tmp_path, write_scenario):
    (tmp_path / "trace.csv").write_text("arrival_s,input_len,output_len\n0,10,5\n")
    data = {**BASE, "workload": {"arrival": "trace", "trace": "trace.csv"}}
    s = sc.load(write_scenario(data))[0]
    assert s.workload.trace.path == str(tmp_path / "trace.csv")
    data = {**BASE, "workload": {"arrival": "trace", "trace": {"path": "trace.csv", "format": "mtpsim"}}}
    assert sc.load(write_scenario(data))[0].workload.trace.path == str(tmp_path / "trace.csv")


def test_set_wins_over_a_swept_key(write_scenario):
    data = with_("sweep", {"speculative.steps": [1, 2, 3], "workload.concurrency": [1, 4]})
    points = sc.load(write_scenario(data), ["speculative.steps=2"])
    assert len(points) == 2 and {p.speculative.steps for p in points} == {2}


def test_set_inside_a_swept_section_applies_to_every_point(write_scenario):
    data = with_("sweep", {"workload": [{"arrival": "batch", "num_requests": 4, "concurrency": 4},
                                        {"arrival": "batch", "num_requests": 8, "concurrency": 8}]})
    points = sc.load(write_scenario(data), ["workload.output_len=7"])
    assert [p.workload.output_len for p in points] == [7, 7] and [p.workload.num_requests for p in points] == [4, 8]


def test_closed_loop_needs_enough_requests(write_scenario):
    data = with_("workload", {"arrival": "closed", "concurrency": 16, "num_requests": 8})
    with pytest.raises(ScenarioError, match="num_requests >= concurrency"):
        sc.load(write_scenario(data))


# ----------------------------------------------------------------------------- pricing: which cost model

def test_gpu_scenario_defaults_to_its_measured_profile(write_scenario):
    s = sc.load(write_scenario({**BASE, "hardware": "h200"}))[0]
    assert s.specs.cost_model == "calibrated" and s.specs.pricing == "calibrated:h200-sglang"
    trt = sc.load(write_scenario({**BASE, "hardware": "h200", "engine": {"kind": "trtllm"}}))[0]
    assert trt.specs.pricing == "calibrated:h200-trtllm" and trt.specs.engine.name == "trtllm"


def test_roofline_stays_selectable_and_unmeasured_gpus_use_it(write_scenario):
    s = sc.load(write_scenario({**BASE, "hardware": "h200", "cost": {"model": "roofline"}}))[0]
    assert s.specs.pricing == "roofline" and s.specs.profile is None
    assert sc.load(write_scenario({**BASE, "hardware": "mi300x"}))[0].specs.pricing == "roofline"
    # a what-if GPU renamed from a measured one is not priced by that GPU's profile
    renamed = {**BASE, "hardware": {"from": "h200", "name": "h200-what-if", "memory_bandwidth_bytes_per_s": 9e12}}
    assert sc.load(write_scenario(renamed))[0].specs.pricing == "roofline"


def test_calibrated_without_any_profile_names_cost_profile(write_scenario):
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario({**BASE, "hardware": "mi300x", "cost": {"model": "calibrated"}}))
    assert err.value.key == "cost.profile" and "names none" in err.value.reason


def test_profile_of_another_gpu_is_an_error(write_scenario):
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario({**BASE, "hardware": "h100-sxm", "cost": {"profile": "h200-sglang"}}))
    assert err.value.key == "cost.profile" and "'h200'" in err.value.reason and "'h100-sxm'" in err.value.reason


def test_a_gpu_calibrated_profile_names_its_hardware(write_scenario, tmp_path):
    """`mtpsim calibrate` on a GPU writes device: cuda and hardware: <entry>; the entry decides."""
    import shutil

    from mtpsim.costs.profile import find_profile
    folder = shutil.copytree(find_profile("h200-sglang"), tmp_path / "h200")
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    (folder / "meta.yaml").write_text(yaml.safe_dump({**meta, "device": "cuda", "hardware": "h200"}))
    s = sc.load(write_scenario({**BASE, "cost": {"profile": str(folder)}}))[0]
    assert s.specs.pricing == "calibrated:h200"
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario({**BASE, "hardware": "b200", "cost": {"profile": str(folder)}}))
    assert err.value.key == "cost.profile"


def test_sweep_points_share_one_read_of_their_profile_until_a_file_in_it_changes(write_scenario, tmp_path, monkeypatch,
                                                                                  capsys):
    """A sweep's points read their profile folder once (costs/profile.py `held`) and resolve as
    each point reading it alone would; a table file added, or meta.yaml rewritten, in the same
    process is read at the next load (the folder's files key the read, not meta.yaml's alone)."""
    import shutil

    from mtpsim import pricing_choice
    from mtpsim.costs import profile
    folder = shutil.copytree(profile.find_profile("h200-sglang"), tmp_path / "h200")
    reads = []
    real = profile.load_meta
    monkeypatch.setattr(profile, "load_meta", lambda path: reads.append(path) or real(path))
    path = write_scenario({**BASE, "cost": {"profile": str(folder)}, "sweep": {"workload.concurrency": [1, 2, 4]}})
    shared = sc.load(path)
    assert len(reads) == 1 and {p.specs.profile for p in shared} == {str(folder)}
    monkeypatch.setattr(pricing_choice, "held", profile.held.__wrapped__)  # every point reads the folder itself
    alone = sc.load(path)
    assert len(reads) == 4 and [p.specs for p in alone] == [p.specs for p in shared]
    monkeypatch.undo()
    capsys.readouterr()
    (folder / "argmax.csv").write_text("m,n,time_s\n")  # a table meta.yaml does not list; meta.yaml unchanged
    sc.load(path)
    assert "argmax.csv is in the profile folder but not listed" in capsys.readouterr().err
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    (folder / "meta.yaml").write_text(yaml.safe_dump({**meta, "device": "b200"}))
    with pytest.raises(ScenarioError) as err:
        sc.load(path)
    assert "measured on 'b200'" in err.value.reason
