"""A third adversarial campaign over scenario files (this stop's, 1,905 inputs, kept out of the
repo), by class: sweep keys that are not key paths, --set paths deeper than YAML nests, file
names longer than a filesystem allows, YAML 1.1 number spellings, an empty accept-length curve, a
catalog file's own error, and the messages that named the wrong thing. As in test_bad_input.py:
one stderr line, exit status 2, naming the file and key and the reason."""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.conftest import ROOT
from tests.test_bad_input import BASE, one_line_error, run
from tests.test_bad_input_2 import SMALL

SWEEPS = [  # the sweep section, the key the line names, a word of the reason
    ("sweep: {5: [1]}", "sweep.5", "dotted key path"),
    ("sweep: {null: [1]}", "sweep", "'null' as a key reads as null"),  # refused as written (yamlfiles.py)
    ("sweep: {true: [1]}", "sweep", "'true' as a key reads as a boolean"),
    ("sweep: 0", "sweep", "must map"),
    ("sweep: []", "sweep", "must map"),
    ("sweep: ''", "sweep", "must map"),
    ("sweep: false", "sweep", "must map"),
    ("sweep: {speculative.steps: [2, 3], speculative: [{design: nextn, steps: 1}]}", "sweep.speculative.steps",
     "lies inside sweep.speculative"),
    ("sweep: {workload: [{concurrency: 1}], workload.concurrency: [2]}", "sweep.workload.concurrency", "lies inside"),
]


@pytest.mark.parametrize("sweep,key,word", SWEEPS, ids=[s for s, _, _ in SWEEPS])
def test_a_sweep_that_is_not_key_paths_to_lists(tmp_path, capsys, sweep, key, word):
    argv = run(tmp_path, BASE + sweep + "\n")
    for command in (argv, ["cost", argv[1]]):
        one_line_error(capsys, command, key, word)


def test_a_set_path_deeper_than_yaml_nests(tmp_path, capsys):
    argv = run(tmp_path, BASE) + ["--set", ".".join(["a"] * 500) + "=1"]
    line = one_line_error(capsys, argv, "", "more than 64 levels")
    assert line.startswith("mtpsim: error: --set: a.a.a")


LONG = "y" * 300
LONG_NAMES = [  # a --set override, the key the line names
    (f"acceptance={{histogram: {LONG}.csv}}", "acceptance.histogram"),
    (f"workload.trace={LONG}.csv", "workload.trace"),
    (f"model={LONG}", "model"),
    (f"model={{from: {LONG}.yaml}}", "model.from"),
    (f"model={{hf_config: dir/{LONG}/config.json}}", "model.hf_config"),
    (f"hardware={LONG}", "hardware"),
    (f"cost.profile={LONG}", "cost.profile"),
]


@pytest.mark.parametrize("override,key", LONG_NAMES, ids=[k for _, k in LONG_NAMES])
def test_a_file_name_longer_than_the_filesystem_allows(tmp_path, capsys, override, key):
    """Before: the OS's "File name too long" from whichever call touched it first, naming neither
    the scenario nor the key, with the whole name echoed."""
    line = one_line_error(capsys, run(tmp_path, BASE) + ["--set", override], key, "file names end at 255")
    assert line.startswith("mtpsim: error: --set: ")  # the flag gave the value
    written = BASE.replace("acceptance: {per_depth: [0.8, 0.7]}", f"acceptance: {{histogram: {LONG}.csv}}")
    line = one_line_error(capsys, run(tmp_path, written), "acceptance.histogram", "file names end at 255")
    assert "s.yaml: acceptance.histogram" in line  # the file did


YAML_11_NUMBERS = ["010", "0x10", "0b11", "1:30", "1_000", "1_0.5", "190:20:30"]


@pytest.mark.parametrize("number", YAML_11_NUMBERS)
def test_a_yaml_11_number_spelling_is_not_silently_another_value(tmp_path, capsys, number):
    """`concurrency: 010` used to run at 8, `input_len: 1:30` at 90."""
    text = BASE.replace("concurrency: 2", f"concurrency: {number}")
    one_line_error(capsys, run(tmp_path, text), "workload.concurrency", "YAML 1.1 number spelling")


def test_decimal_and_quoted_numbers_still_read(tmp_path, capsys):
    from mtpsim.files import parse_yaml
    assert parse_yaml("a: [10, -3, +7, 0, 1.5, 1., .5, 1e9, 2.5E-3, .inf, -.inf, '010']", "x") == \
        {"a": [10, -3, 7, 0, 1.5, 1.0, 0.5, 1e9, 2.5e-3, float("inf"), float("-inf"), "010"]}


def test_an_empty_accept_length_curve_is_named_as_itself(tmp_path, capsys):
    """Before: 'acceptance.profile: no acceptance profile None' for a file with no profile key."""
    text = BASE.replace("acceptance: {per_depth: [0.8, 0.7]}", "acceptance: {accept_length_by_steps: {}}")
    one_line_error(capsys, run(tmp_path, text), "acceptance.accept_length_by_steps", "is empty")


def test_an_error_inside_a_model_file_names_that_file(tmp_path, capsys):
    from mtpsim.packagedata import data_dir
    entry = (data_dir() / "models" / "llama-3.1-8b.yaml").read_text()
    bad = "\n".join("hidden_size: .nan" if line.startswith("hidden_size:") else line for line in entry.splitlines())
    argv = run(tmp_path, SMALL.replace("model: llama-3.1-8b", "model: ./mine.yaml"), {"mine.yaml": bad})
    line = one_line_error(capsys, argv, "hidden_size", "valid integer")
    assert "mine.yaml: hidden_size:" in line and "s.yaml" not in line


def test_a_folder_in_a_user_catalog_is_no_entry(tmp_path, capsys, monkeypatch):
    (tmp_path / "cat" / "models" / "dirmodel.yaml").mkdir(parents=True)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, run(tmp_path, SMALL.replace("model: llama-3.1-8b", "model: dirmodel")),
                          "model", "a folder, not a file")  # named, not "unknown name" (tests/test_bad_input_8.py)
    assert "dirmodel.yaml" in line and "did you mean" not in line


def test_a_huge_unknown_key_is_cut_short(tmp_path, capsys):
    one_line_error(capsys, run(tmp_path, BASE) + ["--set", "k" * 100_000 + "=1"], "", "unknown key")


def test_a_kept_length_deeper_than_the_steps_warns(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()
    text = BASE.replace("acceptance: {per_depth: [0.8, 0.7]}",
                        "acceptance: {per_depth: [0.8, 0.7], kept_length: [0.1, 0.1, 0.2, 0.6]}")
    assert cli.main(run(tmp_path, text)) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and ": acceptance.kept_length: " in err[0] and "at most 2" in err[0], err


# ------------------------------------------------------------------ flags and files (the same campaign)

def test_a_closed_stdout_is_one_line_not_a_traceback(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "mtpsim.cli", "schema"], stdout=subprocess.DEVNULL, text=True,
                          stderr=subprocess.PIPE, timeout=60, close_fds=True, preexec_fn=lambda: __import__("os").close(1))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "<stdout>: closed" in done.stderr


@pytest.mark.parametrize("argv,flag", [(["--system", "h200_sxm"], "--system"), (["--backend", "vllm"], "--backend"),
                                       (["--version", "1.0"], "--version"),
                                       (["--from", "aiconfigurator", "--quick"], "--quick"),
                                       (["--from", "aiconfigurator", "--device", "cuda"], "--device"),
                                       (["--from", "aiconfigurator", "--threads", "2"], "--threads")])
def test_calibrate_flags_of_the_other_job_are_refused(tmp_path, capsys, argv, flag):
    """--system without --from used to start a two-hour CPU calibration; --quick with --from did nothing."""
    line = one_line_error(capsys, ["calibrate", *argv, "--out", str(tmp_path / "p")], "", flag)
    assert line.startswith(f"mtpsim: error: {flag}: ") and not (tmp_path / "p").exists()


def test_control_characters_in_a_value_stay_on_one_line(tmp_path, capsys):
    line = one_line_error(capsys, ["calibrate", "--from", "aiconfigurator", "--system", "h200_sxm\nx",
                                   "--out", str(tmp_path / "p")], "", "unknown system")
    assert "h200_sxm\\nx" in line


SET_PATHS = [("WORKLOAD.num_requests=4", "WORKLOAD", "unknown key"), (".=5", ".", "empty part"),
             ("workload.num_requests=", "workload.num_requests", "no value after '='"),
             ("workload.=1", "workload.", "empty part"), ("workload.num_requests=abc", "workload.num_requests",
                                                         "valid integer"), ("nope.key=1", "nope", "unknown key")]


@pytest.mark.parametrize("override,key,word", SET_PATHS, ids=[o for o, _, _ in SET_PATHS])
def test_a_bad_set_names_the_flag_and_its_key(tmp_path, capsys, override, key, word):
    line = one_line_error(capsys, run(tmp_path, BASE) + ["--set", override], key, word)
    assert line.startswith("mtpsim: error: --set: ")


def test_a_bad_value_in_the_file_still_names_the_file(tmp_path, capsys):
    line = one_line_error(capsys, run(tmp_path, BASE + "bogus: 1\n") + ["--set", "workload.concurrency=1"],
                          "bogus", "unknown key")
    assert "s.yaml: bogus:" in line


def test_out_that_is_a_file_or_device_says_so(tmp_path, capsys):
    (tmp_path / "afile").write_text("mine")
    for out, word in ((str(tmp_path / "afile"), "not a folder (a file)"), ("/dev/null", "device, pipe or socket")):
        one_line_error(capsys, run(tmp_path, BASE)[:2] + ["--out", out], "", word)
    assert (tmp_path / "afile").read_text() == "mine"


def test_plot_says_what_the_path_is(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    one_line_error(capsys, ["plot", str(tmp_path / "nothing")], "", "no such folder")
    one_line_error(capsys, ["plot", str(tmp_path / "afile")], "", "not a folder")


@pytest.mark.parametrize("command", ["run", "cost", "plot"])
def test_an_empty_path_argument_is_refused(capsys, command):
    from tests.test_bad_input_2 import parse_error
    assert "is empty" in parse_error(capsys, [command, ""])


def test_a_model_path_to_a_folder_or_device_says_what_it_is(tmp_path, capsys):
    (tmp_path / "m.yaml").mkdir()
    one_line_error(capsys, run(tmp_path, BASE) + ["--set", f"model={tmp_path / 'm.yaml'}"], "model", "a folder")
    one_line_error(capsys, run(tmp_path, BASE) + ["--set", "model=/dev/null"], "model", "device, pipe or socket")


def test_a_profile_that_times_one_shape_twice_is_refused(tmp_path, capsys):
    import shutil

    from mtpsim.costs.profile import PROFILES_DIR
    prof = tmp_path / "prof"
    shutil.copytree(PROFILES_DIR / "h200-sglang", prof)
    gemm = prof / "gemm.csv.gz" if (prof / "gemm.csv.gz").exists() else prof / "gemm.csv"
    import gzip
    opener = gzip.open if gemm.suffix == ".gz" else open
    with opener(gemm, "rt") as f:
        lines = f.read().splitlines()
    with opener(gemm, "wt") as f:
        f.write("\n".join([*lines, lines[1].rsplit(",", 1)[0] + ",1.0"]) + "\n")
    line = one_line_error(capsys, run(tmp_path, BASE) + ["--set", f"cost.profile={prof}"], "", "the same shape")
    assert "gemm.csv" in line


def test_cost_warns_of_a_batch_that_does_not_fit(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(["cost", run(tmp_path, BASE)[1], "--batch", "100000"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    # two warnings: past the running-request cap (mtpsim run would queue the rest), and past memory
    assert len(err) == 2 and all(line.startswith("mtpsim: warning: --batch: 100000 requests") for line in err), err
    assert "running-request cap" in err[0] and "fit" in err[1]


def test_a_repeated_sweep_value_warns(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(["cost", run(tmp_path, BASE + "sweep: {speculative.steps: [1, 1]}\n")[1]]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 2 and ": sweep.speculative.steps: lists 1 more than once" in err[0], err
    assert ": sweep: cost uses one point" in err[1], err  # cost prices the first point (scenario.left_out)


def test_plot_of_a_run_with_a_corrupt_resolved_scenario_is_refused(tmp_path, capsys):
    """Campaign 4 had plot draw such a folder with a warning; campaign 34 copied another run's
    tables into it and plot drew them as this run's: without its points the tables cannot be
    checked, so the folder is refused, naming the file (tests/test_bad_input_34.py)."""
    from mtpsim import errors
    errors._warned.clear()
    argv = run(tmp_path, SMALL)
    assert cli.main(argv) == 0
    (tmp_path / "out" / "scenario.resolved.yaml").write_text("name: [unclosed\n")
    capsys.readouterr()
    line = one_line_error(capsys, ["plot", str(tmp_path / "out")], "", "YAML syntax error")
    assert "scenario.resolved.yaml" in line


# ------------------------------------------------------------------ traces, search, recommend (the same campaign)
TRACE = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                      "workload: {arrival: trace, trace: t}")
TRACES = [  # (file name, content, the reason's words)
    ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46+00:00,374,44\n2023-11-16 18:15:50,396,10\n",
     "with and without a time zone"),
    ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n1990-01-01 00:00:00,374,44\n2030-01-01 00:00:00,396,10\n",
     "past the 1e+09 s a trace spans"),
    ("t.jsonl", '{"timestamp": 1' + "0" * 400 + ', "input_length": 64, "output_length": 16}\n', "401-digit number"),
    ("t.jsonl", '{"timestamp": 0, "input_length": 64, "output_length": 16}\n{"timestamp": 1, "input_length": 64, '
     '"output_length": 16, "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "nested too deep"),
]


@pytest.mark.parametrize("name,content,word", TRACES, ids=["mixed-zones", "span", "huge-int", "deep-json"])
def test_a_trace_row_past_what_a_reader_takes_is_one_line(tmp_path, capsys, name, content, word):
    """Each was a traceback (pandas' mixed time zones, an int past a float, JSON recursion) or,
    for the span, a run at 7.9e-10 req/s."""
    one_line_error(capsys, run(tmp_path, TRACE.replace("trace: t}", f"trace: {name}}}"), {name: content}), "", word)


def test_a_trace_window_that_selects_nothing_names_the_window(tmp_path, capsys):
    text = TRACE.replace("trace: t}", "trace: {path: t.csv, start_s: 100}}")
    one_line_error(capsys, run(tmp_path, text, {"t.csv": "arrival_s,input_len,output_len\n0,64,16\n1,64,16\n"}),
                   "", "no request arrives in the window workload.trace.start_s 100")


def test_num_requests_under_a_trace_warns(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()
    text = TRACE.replace("trace: t}", "trace: t.csv, num_requests: 2}")
    assert cli.main(run(tmp_path, text, {"t.csv": "arrival_s,input_len,output_len\n0,64,16\n1,64,16\n"})) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and ": workload.num_requests: arrival trace does not read it" in err[0], err


def test_a_disaggregated_deployment_replays_a_trace(tmp_path, capsys):
    """A valid input that was a traceback (the disaggregated arrivals drew a Poisson load from no rate)."""
    text = (ROOT / "scenarios" / "disagg-gb200-1p3d.yaml").read_text()
    import yaml
    data = yaml.safe_load(text)
    data.pop("sweep", None)
    data["workload"] = {"arrival": "trace", "trace": "t.csv"}
    rows = "arrival_s,input_len,output_len\n" + "".join(f"{i * 0.5},256,16\n" for i in range(4))
    assert cli.main(run(tmp_path, yaml.safe_dump(data), {"t.csv": rows})) == 0
    assert "4 requests" in capsys.readouterr().out


def test_search_bounds_list_each_value_once_and_one_load(tmp_path, capsys):
    from mtpsim.search.bounds import SearchBounds
    assert SearchBounds(concurrency=[4, 4, 1, 1]).concurrency == [4, 1]
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match="not both"):
        SearchBounds(concurrency=[1], rates=[1.0])


def test_recommend_refuses_a_grid_past_the_search_limit(tmp_path, capsys):
    argv = run(tmp_path, BASE)
    batches = ",".join(str(b) for b in range(1, 5001))
    line = one_line_error(capsys, ["recommend", argv[1], "--batch", batches, "--out", str(tmp_path / "r")],
                          "", "over the limit of 20,000")
    assert line.startswith("mtpsim: error: --batch: ") and not (tmp_path / "r").exists()


def test_cost_counts_the_batch_per_attention_dp_group(capsys):
    """P8: 32 requests of 64k tokens over 16 DP-attention groups, 2 per group: they fit."""
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(["cost", str(ROOT / "scenarios" / "published" / "p8-deepseek-v3-lmsys-mtp.yaml")]) == 0
    assert "--batch" not in capsys.readouterr().err
