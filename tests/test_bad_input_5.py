"""A fourth adversarial campaign (this stop's, about 555 scenario inputs, kept out of the repo),
by class. As in test_bad_input.py: bad input is one stderr line, exit status 2, naming the file
(or flag) and key; semantic nonsense that runs is one warning line; `cost` prices what `run`
would run, or says why not."""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import BASE, LLAMA, one_line_error, run

SMALL = LLAMA.replace("tp: 8", "tp: 1")
BLOCK = SMALL.replace("model: deepseek-v3", "model: qwen3-8b").replace("model: llama-3.1-8b", "model: qwen3-8b").replace(
    "speculative: {design: none, steps: 2}", "speculative: {design: block, steps: 6, draft: dspark-qwen3-8b-block7}\n"
    "acceptance: {per_depth: [0.9, 0.85, 0.8, 0.75, 0.7, 0.65]}")
TRACE = "arrival_s,input_len,output_len\n0,100,20\n0.5,200,30\n1.0,150,10\n"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    errors._warned.clear()  # warn() says each message once per process


def warnings_of(capsys, argv: list[str]) -> list[str]:
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


def test_a_slow_trace_replay_past_the_simulated_span_is_one_line(tmp_path, capsys):
    """Before: the times were checked before the speed divided them: a ZeroDivisionError
    traceback at speed 1e-300, and wrong latencies at 1e-13 (a clock of 1e13 s cannot resolve a
    decode step)."""
    for speed in ("1e-300", "1e-13"):
        text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                             f"workload: {{arrival: trace, trace: {{path: t.csv, speed: {speed}}}}}")
        line = one_line_error(capsys, run(tmp_path, text, {"t.csv": TRACE}), "", "workload.trace.speed")
        assert "t.csv" in line


@pytest.mark.parametrize("name", ["dspark-qwen3-8b-block7", "eagle3-llama-3.1-8b", "gemma-4-e2b-assistant"])
def test_a_drafter_is_not_a_model_to_serve(tmp_path, capsys, name):
    one_line_error(capsys, run(tmp_path, SMALL.replace("llama-3.1-8b", name)), "model", "not a model to serve")


DRAFTS = [  # the draft section, the key, a word of the reason
    ("{from: eagle3-llama-3.1-8b, fused_target_layers: 100}", "speculative.draft.fused_target_layers", "has 32"),
    ("{from: eagle3-llama-3.1-8b, draft_vocab_size: 1000000}", "speculative.draft.draft_vocab_size", "cannot widen"),
]


@pytest.mark.parametrize("draft,key,word", DRAFTS, ids=[k for _, k, _ in DRAFTS])
def test_an_eagle3_draft_is_checked_against_its_target(tmp_path, capsys, draft, key, word):
    text = SMALL.replace("speculative: {design: none, steps: 2}", f"speculative: {{design: nextn, steps: 2, draft: {draft}}}\n"
                         "acceptance: {per_depth: [0.8, 0.7]}")
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_a_renamed_copy_of_its_target_serves_a_dspark_drafter(tmp_path, capsys):
    """Before: block.built_for was compared with the model's name, so a copy of qwen3-8b under
    another name (or a config.json read from a folder of another name) was refused."""
    text = BLOCK.replace("model: qwen3-8b", "model: {from: qwen3-8b, name: my-qwen}") \
        + 'engine: {version: "0.5.16"}\n'  # the first SGLang release with a DSPARK algorithm
    assert warnings_of(capsys, run(tmp_path, text)) == []
    other = BLOCK.replace("model: qwen3-8b", "model: {from: qwen3-8b, name: my-qwen, vocab_size: 1000}")
    one_line_error(capsys, ["cost", run(tmp_path, other)[1]], "speculative.draft", "built for")


FORCED = [  # the forced section (steps 2), a word of the warning
    ("{engine: sglang, setting: 9}", "clamps"),
    ("{engine: sglang, setting: 0.5}", "clamps"),
    ("{engine: trtllm, setting: 3.5}", "accepts all 2"),
    ("{engine: vllm, setting: 2}", "while engine.kind is sglang"),
]


@pytest.mark.parametrize("forced,word", FORCED, ids=[f for f, _ in FORCED])
def test_a_forced_acceptance_the_engine_bends_is_a_warning(tmp_path, capsys, forced, word):
    text = BASE.replace("acceptance: {per_depth: [0.8, 0.7]}", f"acceptance: {{forced: {forced}}}")
    found = warnings_of(capsys, ["cost", run(tmp_path, text)[1]])
    assert found and all(": acceptance.forced." in w for w in found) and any(word in w for w in found), found


def test_settings_that_cannot_act_are_warnings(tmp_path, capsys):
    assert any("engine.eplb" in w for w in warnings_of(capsys, ["cost", run(
        tmp_path, SMALL.replace("hardware: h200", "hardware: h200\nengine: {eplb: true}"))[1]]))
    mixed = BLOCK.replace("hardware: h200", "hardware: h200\nengine: {mixed_batches: true}")
    assert any("only the none baseline runs mixed batches" in w for w in warnings_of(capsys, ["cost", run(tmp_path, mixed)[1]]))


def test_a_uniform_length_takes_no_mean(tmp_path, capsys):
    text = SMALL.replace("input_len: 64", "input_len: {dist: uniform, min: 10, max: 100, mean: 50}")
    one_line_error(capsys, run(tmp_path, text), "workload.input_len.mean", "mean and std shape normal")


def test_a_command_that_refuses_a_valid_scenario_prints_no_warning_first(tmp_path, capsys):
    """recommend and search refuse `none` or a fixed accept length; their refusal was preceded by
    the warnings that loading printed (here: a draft and an acceptance that `none` ignores)."""
    text = SMALL.replace("speculative: {design: none, steps: 2}", "speculative: {design: none, draft: eagle3-llama-3.1-8b}\n"
                         "acceptance: {per_depth: [0.9]}")
    one_line_error(capsys, ["recommend", run(tmp_path, text)[1]], "speculative.design", "recommend compares")


def test_set_errors_blame_the_flag_even_for_the_sweep_and_long_keys(tmp_path, capsys):
    argv = run(tmp_path, SMALL)
    line = one_line_error(capsys, argv + ["--set", "sweep.speculative.steps=2"], "sweep.speculative.steps", "non-empty")
    assert line.startswith("mtpsim: error: --set: ")
    line = one_line_error(capsys, argv + ["--set", "k" * 5000 + "=1"], "", "unknown key")
    assert line.startswith("mtpsim: error: --set: kkk") and len(line) < 200


def test_a_link_loop_says_so(tmp_path, capsys):
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    one_line_error(capsys, ["run", str(tmp_path / "loop.yaml")], "", "a loop of links")


@pytest.mark.parametrize("version,ok", [("0.5", False), ("1", False), ("0.5.12", True), ("0.5.12.post1", True),
                                        ("v0.5.12.post1", False)])  # a leading 'v': tests/test_bad_input_9e.py
def test_an_engine_version_names_a_release(tmp_path, capsys, version, ok):
    text = SMALL.replace("hardware: h200", f"hardware: h200\nengine: {{kind: sglang, version: '{version}'}}")
    argv = ["cost", run(tmp_path, text)[1]]
    if ok:
        assert cli.main(argv) == 0
    else:
        one_line_error(capsys, argv, "engine.version", "unknown sglang version")


def test_cost_prices_what_run_would_run(tmp_path, capsys):
    """cost used the schema's input_len under a trace, the full steps under a policy, the default
    layout under disaggregation, and said nothing when no request fits."""
    trace = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                          "workload: {arrival: trace, trace: {path: t.csv}}")
    assert cli.main(["cost", run(tmp_path, trace, {"t.csv": TRACE})[1]]) == 0
    assert "context 150," in capsys.readouterr().out  # the trace's mean prompt
    policy = BASE.replace("steps: 2}", "steps: 2, policy: {steps_by_batch: {1: 2, 2: 0}}}")
    assert cli.main(["cost", run(tmp_path, policy)[1], "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "runs 0 steps" in out and "nextn " not in out.split("== Iteration")[1].split("==")[0]
    pools = BASE.replace("parallel: {tp: 8}", "disaggregation: {prefill: {tp: 8}, decode: {replicas: 2, tp: 8}}")
    assert cli.main(["cost", run(tmp_path, pools)[1]]) == 0
    assert "on 16 h200 (2 replicas x tp 8)" in capsys.readouterr().out
    crowded = BASE.replace("tp: 8", "tp: 1")
    found = warnings_of(capsys, ["cost", run(tmp_path, crowded)[1]])
    assert any("not one request" in w and "refuses" in w for w in found), found


def test_a_one_request_trace_has_no_rate(tmp_path, capsys):
    text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                         "workload: {arrival: trace, trace: {path: t.csv}}")
    assert cli.main(run(tmp_path, text, {"t.csv": "arrival_s,input_len,output_len\n0,100,20\n"})) == 0
    out = capsys.readouterr().out
    assert "1 request all at once" in out and "nan" not in out


# ------------------------------------------------- the other commands' campaign (about 330 inputs)
HEADERS = ["arrival_s ,input_len,output_len\n", "arrival_s,input_len,output_len \n", "arrival_s\t,input_len,output_len\n",
           '"arrival_s","input_len","output_len"\n']


@pytest.mark.parametrize("header", HEADERS, ids=["space", "trailing-space", "tab", "quoted"])
def test_a_trace_header_is_read_as_pandas_reads_it(tmp_path, capsys, header):
    """Before: a KeyError traceback (the check stripped the names, the reader did not), or a
    quoted header taken for no known format."""
    text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                         "workload: {arrival: trace, trace: {path: t.csv}}")
    assert cli.main(run(tmp_path, text, {"t.csv": header + "0,10,10\n1,10,10\n"})) == 0


def test_a_trace_with_lone_carriage_returns_and_a_long_first_row(tmp_path, capsys):
    text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                         "workload: {arrival: trace, trace: {path: t.csv}}")
    assert cli.main(run(tmp_path, text, {"t.csv": "arrival_s,input_len,output_len\r0,10,10\r1,10,10\r"})) == 0
    ids = ",".join(map(str, range(12000)))  # a first row past the 64 KiB the format is recognised from
    row = f'{{"timestamp": 0, "input_length": 100, "output_length": 8, "hash_ids": [{ids}]}}\n'
    line = one_line_error(capsys, run(tmp_path / "m", text.replace("t.csv", "m.jsonl"), {"m.jsonl": row}),
                          "hash_ids", "12000 block ids")  # the row's own fault, read as mooncake
    assert "cannot recognise" not in line


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    assert cli.main(run(folder, SMALL.replace("design: none, steps: 2", "design: nextn, steps: 2")
                        .replace("llama-3.1-8b", "deepseek-v3").replace("tp: 1", "tp: 8")
                        + "acceptance: {per_depth: [0.8, 0.7]}\n")) == 0
    return folder / "out"


EDITS = [  # file, the column whose last cell is replaced, the new text (the line names the column)
    ("summary.csv", "design", "zzz"),
    ("summary.csv", "accept_length", "banana"),
    ("summary.csv", "tps", "1e308"),
    ("accept_counts.csv", "accepted", "100000000"),
]


@pytest.mark.parametrize("name,column,value", EDITS, ids=[e[2] for e in EDITS])
def test_plot_refuses_values_no_run_writes(tmp_path, capsys, finished_run, name, column, value):
    """Before: KeyError and ValueError tracebacks, and a hang drawing 1e8 histogram bars."""
    import shutil

    import pandas as pd
    folder = tmp_path / "r"
    shutil.copytree(finished_run, folder)
    frame = pd.read_csv(folder / name)
    frame[column] = frame[column].astype(object)
    frame.loc[frame.index[-1], column] = value
    frame.to_csv(folder / name, index=False)
    one_line_error(capsys, ["plot", str(folder)], column, "")


def test_plot_writes_through_no_link(tmp_path, capsys, finished_run):
    """Before: a PNG link to a file of the user's, or to the run's own summary.csv, was written through."""
    import shutil
    folder = tmp_path / "r"
    shutil.copytree(finished_run, folder)
    (tmp_path / "mine.txt").write_text("mine")
    (folder / "speedup.png").unlink(missing_ok=True)
    (folder / "speedup.png").symlink_to(tmp_path / "mine.txt")
    one_line_error(capsys, ["plot", str(folder)], "", "symbolic link")
    assert (tmp_path / "mine.txt").read_text() == "mine"


def test_a_listing_with_a_broken_entry_says_so_on_stderr(tmp_path, capsys, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mine.yaml").write_text("name: mine\nhidden_size: -5\n")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    assert cli.main(["models"]) == 2
    captured = capsys.readouterr()
    assert "mine" in captured.out and "invalid" in captured.out
    assert captured.err.startswith("mtpsim: error: ") and "mine.yaml" in captured.err and len(captured.err.splitlines()) == 1


def test_calibrate_out_names_a_folder_of_its_own():
    from pathlib import Path

    from mtpsim.calibration.replace import check_out
    for out in (".", "..", "/"):
        assert "names no folder" in check_out(Path(out))


def test_a_trace_row_gives_each_key_once(tmp_path, capsys):
    """Before: the last of two `output_length`s won without a word (config.json already refused it)."""
    text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                         "workload: {arrival: trace, trace: {path: t.jsonl}}")
    row = '{"timestamp": 0, "input_length": 1024, "output_length": 64, "output_length": 32}\n'
    one_line_error(capsys, run(tmp_path, text, {"t.jsonl": row}), "", "duplicate key 'output_length'")
