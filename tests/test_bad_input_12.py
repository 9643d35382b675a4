"""A twelfth adversarial campaign (about 840 inputs over cost.moe_stream_overlap, YAML and file
oddities, numbers at the edges of every section, inline catalog entries, config.json files,
acceptance histograms, traces, profile folders, flags, output paths, large sweeps and the Python
API; the inputs and what each did are kept out of the repo), one test per class found failing.
Each test's docstring says what happened before the fix."""
from __future__ import annotations

import collections
import copy
import enum
import warnings

import pytest

import mtpsim
from mtpsim import errors
from mtpsim.errors import ScenarioError
from tests.test_bad_input import BASE, PROFILED, cpu_profile, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

OVERLAP = "cost: {moe_stream_overlap: 0.5}\n"
SMALL_API = {"name": "p", "model": "llama-3.1-8b", "hardware": "h200", "speculative": {"design": "none"},
             "workload": {"concurrency": 2, "num_requests": 4, "input_len": 64, "output_len": 16}}
DISAGG = "disaggregation: {prefill: {tp: 8}, decode: {tp: 8, attention_dp: 8}, link: free}"


def _overlap_warnings(tmp_path, capsys, text: str) -> list[str]:
    tmp_path.mkdir()
    return [w for w in warnings_of(capsys, run(tmp_path, text + OVERLAP)) if ": cost.moe_stream_overlap: " in w]


def test_a_stream_overlap_no_pass_can_use_warns(tmp_path, capsys):
    """Before: the warning looked at whether the deployment runs the shared experts on a second
    stream at all, not whether any pass reaches it: TensorRT-LLM takes the stream only in CUDA
    graphs, so with engine.cuda_graphs off the overlap changed no figure, without a word; and a
    disaggregated scenario was never checked (here the decode pool's DP attention has no stream
    and the prefill pool runs no graph)."""
    trtllm = BASE + "engine: {kind: trtllm, cuda_graphs: false}\n"
    assert len(_overlap_warnings(tmp_path / "a", capsys, trtllm)) == 1
    disagg = BASE.replace("parallel: {tp: 8}", DISAGG) + "engine: {kind: trtllm}\n"
    found = _overlap_warnings(tmp_path / "b", capsys, disagg)
    assert len(found) == 1 and "either pool" in found[0], found
    # where a pass does take the stream the overlap prices it, and nothing is said
    assert _overlap_warnings(tmp_path / "c", capsys, BASE + "engine: {kind: trtllm}\n") == []
    assert _overlap_warnings(tmp_path / "d", capsys, disagg.replace("attention_dp: 8", "attention_dp: 1")) == []
    small = BASE + "engine: {version: '0.5.5', cuda_graphs: false, ignore_rules: [shared_expert_fusion]}\n"
    assert _overlap_warnings(tmp_path / "e", capsys, small) == []  # SGLang 0.5.5: any pass of <= 1024 tokens


def test_a_bad_profile_table_is_one_line_before_any_warning(tmp_path, capsys, monkeypatch):
    """Before: a profile's tables were first read inside the first run, so the scenario's
    warnings were said and then the table's error (two lines, for run, cost and recommend), and
    search took the table's error for a layout that does not fit (`--gpus: no shard of model
    ... fits`, the profile file named nowhere)."""
    monkeypatch.chdir(tmp_path)
    text = PROFILED.replace("profile: ./prof}", "profile: ./prof, moe_skew: 0.3}").replace(  # a dense model: warns
        "speculative: {design: none, steps: 2}", "speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\n"
        "acceptance: {per_depth: [0.8, 0.7]}")
    scenario = run(tmp_path, text, cpu_profile(tmp_path))[1]
    assert any(": cost.moe_skew: " in w for w in warnings_of(capsys, ["cost", scenario]))
    (tmp_path / "prof" / "gemm.csv").write_text("dtype,m,k,n,flops,bytes,time_s\nfp32,1,16,8,256,608,nan\n")
    out = str(tmp_path / "out")
    for argv in (["run", scenario, "--out", out], ["cost", scenario],
                 ["recommend", scenario, "--batch", "1", "--seeds", "1", "--out", out],
                 ["search", scenario, "--gpus", "1", "--no-cache", "--no-plot", "--out", out]):
        errors._warned.clear()  # each command would say the warning afresh
        line = one_line_error(capsys, argv, "time_s", "row 2")
        assert "gemm.csv" in line, line


def test_a_later_sweep_points_error_is_not_preceded_by_an_earlier_points_warning(tmp_path, capsys):
    """Before: `cost` (and mtpsim.load) said what validating sweep point 1 warned of, then
    refused point 2: two lines for one bad input (run, recommend and search held it back)."""
    text = BASE.replace("hardware: h200", "hardware: {from: h200, launch_overhead_s: 5.0e-6}")  # warns
    swept = text + "sweep: {workload.num_requests: [4, 1]}\n"
    one_line_error(capsys, ["cost", run(tmp_path, swept)[1]], "workload.concurrency", "sweep point 2 of 2")
    assert any(": hardware.launch_overhead_s: " in w for w in warnings_of(capsys, ["cost", run(tmp_path, text)[1]]))


class _Design(str, enum.Enum):
    NEXTN = "nextn"


class _Steps(enum.IntEnum):
    TWO = 2


def test_a_mapping_of_subclasses_loads_as_its_plain_values():
    """Before: `mtpsim.load(mapping)` checked the values' types with isinstance, then wrote the
    mapping out as YAML, which took no subclass: an OrderedDict, a defaultdict, a str or int Enum,
    a list subclass each raised yaml's RepresenterError (a traceback), though the docstring read
    int and str subclasses as int and str."""
    data = copy.deepcopy(SMALL_API)
    data["speculative"] = collections.OrderedDict(design=_Design.NEXTN, steps=_Steps.TWO, draft="eagle3-llama-3.1-8b")
    data["acceptance"] = collections.defaultdict(list, per_depth=type("Depths", (list,), {})([0.8, 0.7]))
    point = mtpsim.load(collections.OrderedDict(data))[0]
    assert (point.speculative.design, point.speculative.steps) == ("nextn", 2)
    assert type(point.speculative.steps) is int and point.acceptance.per_depth == [0.8, 0.7]


@pytest.mark.parametrize("where,value,word", [
    ("seed", 10 ** 5000, "more digits"),                        # was: ValueError (int to str past 4,300 digits)
    ("question", "caf\udce9", "lone surrogate"),                # was: UnicodeEncodeError (a byte os.fsdecode kept)
], ids=["5000-digit-int", "surrogate"])
def test_a_mapping_value_no_yaml_file_could_hold_is_named(where, value, word):
    with pytest.raises(ScenarioError) as info:
        mtpsim.load({**SMALL_API, where: value})
    assert info.value.where == "<dict>" and info.value.key == where and word in info.value.reason, str(info.value)


@pytest.mark.parametrize("mean,std", [(1e-300, 5), (5e-324, 1), (1e-200, 1), (50, 1e-300)],
                         ids=["tiny-mean", "denormal-mean", "1e-200-mean", "tiny-std"])
def test_a_lognormal_length_at_the_edge_of_float_range_draws_lengths(mean, std):
    """Before: sigma^2 = log1p((std/mean)^2) in Python floats raised OverflowError past a ratio
    of 1e154 (a traceback from the first run), a denormal mean gave a NaN sigma that drew prompts
    of -2^63 tokens (then a ZeroDivisionError in the pricing), and a std of 1e-300 a sigma of 0
    that the advice divided by (ZeroDivisionError before anything ran)."""
    data = copy.deepcopy(SMALL_API)
    data["workload"]["input_len"] = {"dist": "lognormal", "mean": mean, "std": std, "max": 100}
    lengths = mtpsim.simulate(mtpsim.load(data)[0]).requests["input_len"]
    assert lengths.between(1, 100).all(), lengths.tolist()


def test_a_denormal_trace_speed_is_one_line_without_numpys_warning(tmp_path, capsys):
    """Before: a speed of 5e-324 overflowed the division of the rows' times into inf, right
    before the check that refuses it: the one error line came after NumPy's RuntimeWarning (two
    more lines on stderr: the warning and the source line it quotes)."""
    text = BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                        "workload: {arrival: trace, trace: {path: t.csv, speed: 5.0e-324}}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one_line_error(capsys, run(tmp_path, text, {"t.csv": "arrival_s,input_len,output_len\n0,64,16\n1,64,16\n"}),
                       "", "workload.trace.speed")
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


@pytest.mark.parametrize("verify,key,said", [
    ("{num_experts: 1024}", "verify.num_experts", "verify builds those 256"),
    ("{hidden_scale: 1.0e-300}", "verify.hidden_scale", "to the floor of 16"),
], ids=["experts-past-the-model", "scale-below-every-width"])
def test_a_verify_setting_past_the_model_warns_as_num_layers_does(tmp_path, capsys, verify, key, said):
    """Before: verify.num_layers past the model's layers warned (verify builds those), but a
    num_experts cap past its routed experts, or on a model with none, and a hidden_scale so small
    that every width stops at shrink.py's floor of 16, built the same model as a smaller setting
    without a word."""
    found = warnings_of(capsys, ["cost", run(tmp_path, BASE + f"verify: {verify}\n")[1]])
    assert any(f": {key}: " in w and said in w for w in found), found


def test_an_expert_cap_on_a_dense_model_warns(tmp_path, capsys):
    text = BASE.replace("deepseek-v3", "llama-3.1-8b").replace("design: nextn", "design: none").replace(
        "acceptance: {per_depth: [0.8, 0.7]}\n", "").replace("tp: 8", "tp: 1") + "verify: {num_experts: 8}\n"
    found = warnings_of(capsys, ["cost", run(tmp_path, text)[1]])
    assert any(": verify.num_experts: " in w and "no routed experts" in w for w in found), found


def test_a_catalog_folder_name_too_long_is_blamed_on_the_variable(tmp_path, capsys, monkeypatch):
    """Before: MTPSIM_CATALOG naming a folder past the file system's name limit raised OSError
    from Path.is_dir, and the command's catch-all printed the 5,000-character path and `File name
    too long`, naming no variable; a missing folder already said `MTPSIM_CATALOG: no such folder`."""
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / ("a" * 5000)))
    line = one_line_error(capsys, ["models"], "", "too long")
    assert line.startswith("mtpsim: error: MTPSIM_CATALOG: "), line
