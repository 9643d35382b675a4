"""A fourteenth adversarial campaign (issue 23: about 4,400 inputs over YAML structure, tags and
encodings; 15 number spellings (.inf, .nan, -0.0, 1e309, 5e-324, 0x10, 1_000, 2**63, true, "3",
[] ...) in 70 numeric fields of every section; config.json files (every key of a Llama and a
DeepSeek-V3 config x 12 values); profile tables and meta.yaml; run folders for `mtpsim plot`
(every column x 4 values); traces in each format, gzipped; --set paths and every command's flags;
output and cache folders; the environment (MTPSIM_CACHE_DIR, XDG_CACHE_HOME, HOME,
MTPSIM_CATALOG, RAY_ADDRESS); sweeps and search bounds; the Python API; and ~1,500 random
combinations of valid values over the shipped scenarios for run, cost and recommend; the inputs
and what each did are kept out of the repo). About 40 failed, in six classes, one test each below
(each docstring says what happened before the fix):
- a negative zero passed every `>= 0` bound with its sign and reached NumPy as a traceback
  (yamlfiles.py, jsonfiles.strict_json, csvfiles: read as 0.0);
- an integer CSV column without an upper bound (a profile's axes, a run folder's replica) cast
  1e20 to int64, wrapped negative (csvfiles.Column.top: at most 2**53);
- a wrong type inside the mapping branch of an `int | mapping` union was said as the int
  branch's error about the whole mapping (errors.from_validation);
- an engine whose memory rule leaves it nothing to start with was refused from inside the
  pricing, after the point's warnings (memory.check_engine_starts, with each point the loader
  validates: sweep.py);
- an empty KV pool, a request longer than it, or a prefix cache larger than it was refused inside
  the first simulation, after the warnings and naming the file where a --set caused it
  (sim/preflight.check_kv_pool, run as part of load's validation: load(refuse=...));
- search said the scenario's search.gpus as a --gpus never given (search/command.py)."""
from __future__ import annotations

import math

import pytest

import mtpsim
from mtpsim import cli
from mtpsim.csvfiles import Column, check_numbers
from mtpsim.jsonfiles import strict_json
from mtpsim.yamlfiles import parse_yaml
from tests.test_bad_input import BASE, PROFILED, cpu_profile, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings  # noqa: F401 (an autouse fixture)

NORMAL = BASE.replace("input_len: 64", "input_len: {dist: normal, mean: 50, std: %s, min: 1, max: 100}")


@pytest.mark.parametrize("how", ["file", "set", "sweep", "api"])
def test_a_negative_zero_reads_as_zero(tmp_path, capsys, how):
    """Before: `-0.0` passed every `>= 0` bound and kept its sign, so a normal length
    distribution's `std: -0.0` (in the file, by --set, in a sweep or in a mapping given to
    mtpsim.load) ran into NumPy's `normal(scale=-0.0)`, which raised `ValueError: scale < 0` as a
    traceback from inside the run."""
    if how == "api":
        data = parse_yaml(NORMAL % "0", "s.yaml")
        data["workload"]["input_len"]["std"] = -0.0
        point = mtpsim.load(data)[0]
        assert math.copysign(1, point.workload.input_len.std) == 1
        mtpsim.simulate(point)
        return
    text = NORMAL % ("-0.0" if how == "file" else "3")
    argv = run(tmp_path, text + ("sweep: {workload.input_len.std: [-0.0, 5]}\n" if how == "sweep" else ""))
    if how == "set":
        argv += ["--set", "workload.input_len.std=-0.0"]
    assert cli.main(argv + ["--jobs", "1"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_each_reader_reads_a_negative_zero_as_zero():
    """The readers numbers enter by (YAML, JSON, CSV columns) agree: a zero's sign is dropped, so
    no later bound or library sees a -0.0 (before, each kept it)."""
    values = [parse_yaml("a: -0.0", "t")["a"], strict_json("-0.0"), strict_json("[-0e3]")[0],
              float(check_numbers(__import__("pandas").Series(["-0.0"]), Column(low=0), "t.csv", "x").iloc[0])]
    assert values == [0.0] * 4 and all(math.copysign(1, v) == 1 for v in values), values
    assert math.isnan(parse_yaml("a: .nan", "t")["a"]) and parse_yaml("a: -1.5", "t")["a"] == -1.5


GEMM = "dtype,m,k,n,flops,bytes,time_s\nfp32,%s,16,8,256,608,1.7e-06\nfp32,2,16,8,512,1216,1.8e-06\n"


@pytest.mark.parametrize("case", ["profile-axis", "profile-axis-2**63", "plot-replica"])
def test_an_integer_column_past_what_a_float_holds_exactly_is_refused(tmp_path, capsys, monkeypatch, case):
    """Before: an integer CSV column without an upper bound (a profile table's axes, a run
    folder's replica, seed and point columns) took 1e20 as a whole number and cast it to int64,
    which wrapped it to -9.2e18: a profile's gemm row of m = 1e20 was a `ValueError: math domain
    error` traceback from inside the first run (math.log of the wrapped axis), and `mtpsim plot`
    drew a run folder whose iterations.csv said replica 1e20 as replica -9.2e18, without a word."""
    monkeypatch.chdir(tmp_path)
    if case.startswith("profile"):
        value = "1e20" if case == "profile-axis" else str(2**63)
        line = one_line_error(capsys, run(tmp_path, PROFILED, cpu_profile(tmp_path, gemm__csv=GEMM % value)) +
                              ["--jobs", "1"], "m", "<= 9.0072e+15")
        assert "gemm.csv" in line
        return
    assert cli.main(run(tmp_path, BASE) + ["--jobs", "1"]) == 0
    iterations = tmp_path / "out" / "iterations.csv"
    rows = iterations.read_text().splitlines()
    rows[1] = "1e20" + rows[1][rows[1].index(","):]  # replica is the first column
    iterations.write_text("\n".join(rows) + "\n")
    capsys.readouterr()
    line = one_line_error(capsys, ["plot", str(tmp_path / "out")], "replica", "row 2")
    assert "iterations.csv" in line


@pytest.mark.parametrize("dist,key,word", [
    ("{dist: normal, mean: 50, std: 5, min: 0.0, max: 100}", "workload.input_len.min", "valid integer (got 0.0)"),
    ("{dist: normal, mean: 50, std: '5', max: 100}", "workload.input_len.std", "valid number (got '5')"),
    ("{dist: normal, mean: true, std: 5, max: 100}", "workload.input_len.mean", "valid number (got true)"),
    ("{dist: uniform, min: 1, max: 1.5}", "workload.input_len.max", "valid integer (got 1.5)"),
], ids=["float-min", "text-std", "bool-mean", "float-max"])
def test_a_wrong_type_inside_a_length_distribution_names_its_key(tmp_path, capsys, dist, key, word):
    """Before: a value of the wrong type inside a mapping that a union also lets be a number
    (workload.input_len / output_len: a length or a distribution) was said as the number
    branch's error about the whole mapping, `workload.input_len: Input should be a valid integer
    (got {'dist': 'normal', ...})`, naming neither the key nor what is wrong with it."""
    one_line_error(capsys, run(tmp_path, BASE.replace("input_len: 64", f"input_len: {dist}")), key, word)


OVERLAP_WARNS = "cost: {moe_stream_overlap: 1}\nengine: {chunked_prefill_tokens: 100000, two_batch_overlap: true}\n"


@pytest.mark.parametrize("command", ["run", "cost", "recommend"])
def test_an_engine_that_would_not_start_is_one_line_before_any_warning(tmp_path, capsys, command):
    """Before: the engine's own memory rule (SGLang's default mem_fraction_static, which a huge
    engine.chunked_prefill_tokens drives below 0) was first applied by the pricing inside the
    command, after the point's warnings had been said: `mtpsim run`, `cost` and `recommend`
    printed the cost.moe_stream_overlap warning and then the error, two lines for one bad value."""
    argv = run(tmp_path, BASE + OVERLAP_WARNS)
    argv = {"run": argv + ["--jobs", "1"], "cost": ["cost", argv[1]],
            "recommend": ["recommend", argv[1], "--batch", "1", "--seeds", "1", "--jobs", "1", "--out", argv[3]]}[command]
    one_line_error(capsys, argv, "engine.chunked_prefill_tokens", "would not start")
    assert not (tmp_path / "out").exists()


EMPTY_POOL = "engine: {mem_fraction: 0.01, eplb: true}\n"  # eplb: a warning, said before the error


@pytest.mark.parametrize("command,layout", [("run", ""), ("recommend", ""), ("run", "disagg")])
def test_an_engine_left_no_kv_pool_is_one_line_before_any_warning(tmp_path, capsys, command, layout):
    """Before: `run` and `recommend` met an engine whose weights leave no KV pool (an
    engine.mem_fraction of 0.01) inside the first simulation, after the point's warnings had been
    said (here that engine.eplb changes nothing): two lines, for a disaggregated scenario too."""
    text = BASE + EMPTY_POOL
    if layout:
        text = text.replace("parallel: {tp: 8}", "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}")
    argv = run(tmp_path, text)
    argv += ["--jobs", "1"] if command == "run" else []
    if command == "recommend":
        argv = ["recommend", argv[1], "--batch", "1", "--seeds", "1", "--jobs", "1", "--out", argv[3]]
    one_line_error(capsys, argv, "disaggregation.prefill" if layout else "engine.mem_fraction", "leave no KV pool")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("layout,key", [("", "workload"), ("disagg", "disaggregation.prefill")])
def test_a_request_longer_than_the_kv_pool_is_one_line_before_any_warning(tmp_path, capsys, layout, key):
    """Before: a prompt the KV pool cannot hold (160k tokens in a pool of 5 GB a GPU) was found
    when the first simulation drew its requests, after the point's warnings (engine.eplb changes
    nothing; one output token decodes nothing) had been said: three lines."""
    text = BASE.replace("input_len: 64", "input_len: 160000").replace("output_len: 16", "output_len: 1") + \
        "engine: {mem_fraction: 0.62, eplb: true}\n"
    if layout:
        text = text.replace("parallel: {tp: 8}", "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}")
    one_line_error(capsys, run(tmp_path, text) + ["--jobs", "1"], key, "a request of 160")


@pytest.mark.parametrize("layout", ["", "disagg"])
def test_a_prefix_cache_larger_than_the_kv_pool_is_one_line_before_any_warning(tmp_path, capsys, layout):
    """Before: engine.prefix_cache.max_tokens past what the KV pool holds was refused when the
    first simulation sized its cache, after the point's warnings had been said: two lines."""
    text = BASE + "engine: {eplb: true, prefix_cache: {enabled: true, max_tokens: 100000000}}\n"
    if layout:
        text = text.replace("parallel: {tp: 8}", "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}")
    one_line_error(capsys, run(tmp_path, text) + ["--jobs", "1"], "engine.prefix_cache.max_tokens", "the KV pool holds")


@pytest.mark.parametrize("flag,key,word", [("parallel.tp=1", "parallel.tp", "leave no KV pool"),
                                           ("workload.input_len=160000", "workload.input_len", "a request of 160016")])
def test_runs_memory_refusal_blames_the_set_that_causes_it(tmp_path, capsys, flag, key, word):
    """Before: `mtpsim run --set parallel.tp=1` on a file that runs as written named the file's
    engine.mem_fraction (`s.yaml: engine.mem_fraction: the weights ... leave no KV pool`), and
    `--set workload.input_len=160000` the file's `workload`: the memory check ran inside the
    simulation, past the loader that tells a flag's fault from the file's."""
    argv = run(tmp_path, BASE + "engine: {mem_fraction: 0.62}\n") + ["--jobs", "1", "--set", flag]
    line = one_line_error(capsys, argv, key, word)
    assert line.startswith("mtpsim: error: --set: "), line


@pytest.mark.parametrize("given", ["file", "flag"])
def test_search_names_where_the_gpus_that_fit_no_shard_were_given(tmp_path, capsys, given):
    """Before: `search.gpus: 1` in the scenario, on which no shard of DeepSeek-V3 fits, was said
    as `--gpus: no shard of model 'deepseek-v3' fits 1 GPUs`, naming a flag never given."""
    argv = run(tmp_path, BASE + ("search: {gpus: 1}\n" if given == "file" else ""))
    argv = ["search", argv[1], "--concurrency", "1", "--jobs", "1", "--no-cache", "--no-plot", "--out", argv[3]]
    line = one_line_error(capsys, argv + (["--gpus", "1"] if given == "flag" else []),
                          "search.gpus" if given == "file" else "", "no shard of model 'deepseek-v3' fits 1 GPUs")
    assert ("s.yaml: search.gpus: " in line) == (given == "file") and ("--gpus: " in line) == (given == "flag"), line
