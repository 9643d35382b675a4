"""A third pass over the second campaign's classes (issue 23), with inputs the first fixes did not
cover: blank flag values that a command would take as the flag left out, blank names in a
scenario or catalog entry, a Ray address nothing listens on, an HF config whose heads do not
group, and workload keys the arrival never reads. As in test_bad_input.py: one stderr line, exit
status 2, naming the flag, file or key and the reason; a warning is one line and the run goes on."""
from __future__ import annotations

import json
import socket
import time

import pytest

from mtpsim import cli
from tests.test_bad_input import BASE, one_line_error, run
from tests.test_bad_input_2 import SMALL, parse_error

# ------------------------------------------------------------------ blank flags are not "left out"
BLANK_FLAGS = [  # argv after the scenario, the flag the line names
    (["search", "--gpus", "1", "--out", ""], "--out"),
    (["search", "--gpus", "1", "--cache", " "], "--cache"),
    (["search", "--gpus", "1", "--address", ""], "--address"),
    (["run", "--backend", "ray", "--address", " "], "--address"),
]


@pytest.mark.parametrize("argv,flag", BLANK_FLAGS, ids=[" ".join(a) for a, _ in BLANK_FLAGS])
def test_a_blank_name_flag_is_refused_by_argparse(tmp_path, capsys, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)  # were the flag taken as left out, the default folders land here
    scenario = run(tmp_path, SMALL)[1]
    line = parse_error(capsys, [argv[0], scenario, *argv[1:]])
    assert f"argument {flag}: is empty" in line


@pytest.mark.parametrize("flag,word", [("--concurrency", "not a positive integer"), ("--rates", "requests per second"),
                                       ("--topk", "not a positive integer"), ("--ttft", "is not [p50:|p99:]")])
def test_a_blank_search_list_is_read_not_defaulted(tmp_path, capsys, monkeypatch, flag, word):
    """`--concurrency ''` used to run the default sweep (the flag read as absent)."""
    monkeypatch.chdir(tmp_path)
    argv = ["search", run(tmp_path, SMALL)[1], "--gpus", "1", flag, "", "--out", str(tmp_path / "o")]
    one_line_error(capsys, argv, "", word)
    assert not (tmp_path / "o").exists()


def test_calibrate_blank_names_are_refused(capsys):
    for flag in ("--system", "--version"):
        assert f"argument {flag}: is empty" in parse_error(capsys, ["calibrate", "--from", "aiconfigurator", flag, ""])


# ------------------------------------------------------------------ blank names in a scenario
BLANK_NAMES = [
    ("engine-version", BASE + "engine: {version: ''}\n", "engine.version"),
    ("acceptance-profile", BASE.replace("per_depth: [0.8, 0.7]", "profile: ' '"), "acceptance.profile"),
    ("hardware-profile", SMALL.replace("hardware: h200", "hardware: {from: h200, profiles: {sglang: ''}}"),
     "hardware.profiles.sglang"),
]


@pytest.mark.parametrize("text,key", [c[1:] for c in BLANK_NAMES], ids=[c[0] for c in BLANK_NAMES])
def test_a_blank_name_is_not_the_default(tmp_path, capsys, text, key):
    one_line_error(capsys, run(tmp_path, text), key, "empty or blank")


# ------------------------------------------------------------------ a Ray address nothing listens on
def test_an_address_that_refuses_is_one_line_at_once(tmp_path, capsys):
    """Nothing listens on the port: refused at once, not after the probe's 20 s deadline."""
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    started = time.perf_counter()
    line = one_line_error(capsys, run(tmp_path, SMALL) + ["--backend", "ray", "--address", f"127.0.0.1:{port}"],
                          "", "refused")
    assert line.startswith(f"mtpsim: error: --address: no Ray cluster reached at '127.0.0.1:{port}'")
    assert time.perf_counter() - started < 15  # well before the probe's 20 s deadline


def test_unreachable_reads_only_host_port():
    from mtpsim.ray_backend import unreachable
    assert unreachable("auto") is None and unreachable("host:port") is None  # left to Ray
    assert "cannot connect" in unreachable("ray://127.0.0.1:1")


# ------------------------------------------------------------------ HF configs whose heads do not group
def test_kv_heads_that_do_not_divide_the_heads(tmp_path, capsys):
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 4,
              "num_attention_heads": 32, "num_key_value_heads": 7, "vocab_size": 128256,
              "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    text = SMALL.replace("model: llama-3.1-8b", "model: {hf_config: c.json}")
    one_line_error(capsys, run(tmp_path, text, {"c.json": json.dumps(config)}), "attention_kinds.gqa",
                   "not a multiple of num_kv_heads 7")


def test_inline_kv_heads_that_do_not_divide(tmp_path, capsys):
    text = SMALL.replace("model: llama-3.1-8b", "model: {from: llama-3.1-8b, attention_kinds: {gqa: {kind: gqa, "
                         "num_heads: 32, num_kv_heads: 12, head_dim: 128}}}")
    one_line_error(capsys, run(tmp_path, text), "model.attention_kinds.gqa", "not a multiple")


# ------------------------------------------------------------------ keys the arrival never reads
ARRIVAL_WARNINGS = [
    ("rate-on-closed", SMALL.replace("workload: {", "workload: {rate_per_s: 3, "), {}, "workload.rate_per_s"),
    ("trace-on-batch", SMALL.replace("workload: {concurrency: 2,", "workload: {arrival: batch, trace: t.csv, "),
     {"t.csv": "arrival_s,input_len,output_len\n0,64,16\n"}, "workload.trace"),
]


@pytest.mark.parametrize("text,files,key", [c[1:] for c in ARRIVAL_WARNINGS], ids=[c[0] for c in ARRIVAL_WARNINGS])
def test_a_key_the_arrival_does_not_read_warns(tmp_path, capsys, text, files, key):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(run(tmp_path, text, files)) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and err[0].startswith("mtpsim: warning: ") and f": {key}: " in err[0], err
    assert "does not read it" in err[0]


SETTINGS_THAT_CHANGE_NOTHING = [
    ("concurrency-on-batch", SMALL.replace("workload: {", "workload: {arrival: batch, "), {}, "workload.concurrency"),
    ("prefix-past-the-prompt", SMALL.replace("workload: {", "workload: {shared_prefix: {tokens: 500}, "), {},
     "workload.shared_prefix.tokens"),
    ("profile-under-roofline", SMALL + "cost: {model: roofline, profile: h200-sglang}\n", {}, "cost.profile"),
]


@pytest.mark.parametrize("text,files,key", [c[1:] for c in SETTINGS_THAT_CHANGE_NOTHING],
                         ids=[c[0] for c in SETTINGS_THAT_CHANGE_NOTHING])
def test_a_setting_that_changes_nothing_warns(tmp_path, capsys, text, files, key):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(run(tmp_path, text, files)) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and err[0].startswith("mtpsim: warning: ") and f": {key}: " in err[0], err


def test_a_rate_swept_with_the_arrival_does_not_warn(tmp_path, capsys):
    """A sweep over arrivals gives the closed point a rate it ignores; that is the sweep."""
    from mtpsim import errors
    errors._warned.clear()
    text = SMALL.replace("workload: {", "workload: {rate_per_s: 50, ") + \
        "sweep: {workload.arrival: [closed, poisson]}\n"
    assert cli.main(run(tmp_path, text)) == 0
    assert "warning" not in capsys.readouterr().err


# ------------------------------------------------------------------ a profile written before the rename
def test_a_profile_with_the_old_overhead_section_is_read_as_launch(tmp_path, capsys, monkeypatch):
    """meta.yaml's `overhead:` section is `launch:` now (the GPU launch cost; host time is host_s):
    an older profile still prices the same, with one warning naming the file and key."""
    from mtpsim import errors
    from mtpsim.costs.profile import PROFILES_DIR
    from tests.test_bad_input import cpu_profile
    meta = (PROFILES_DIR / "cpu" / "meta.yaml").read_text()
    assert "\nlaunch:\n" in meta
    text = SMALL.replace("hardware: h200", "hardware: cpu") + "cost: {model: calibrated, profile: prof}\n"
    outputs = []
    for section in ("launch", "overhead"):
        errors._warned.clear()
        folder = tmp_path / section
        argv = run(folder, text, cpu_profile(folder, meta__yaml=meta.replace("\nlaunch:\n", f"\n{section}:\n")))
        monkeypatch.chdir(folder)  # the scenario names its profile folder relative to here
        assert cli.main(["cost", argv[1], "--ops"]) == 0
        captured = capsys.readouterr()
        outputs.append(captured.out.replace(str(folder), "<folder>"))
        # llama-3.1-8b's weights fill the cpu entry's 16 GB: cost warns that `run` would refuse it
        err = [line for line in captured.err.strip().splitlines() if ": parallel: not one request" not in line]
        if section == "launch":
            assert err == []
        else:
            assert len(err) == 1 and err[0].startswith("mtpsim: warning: ") and "meta.yaml: overhead: renamed `launch`" \
                in err[0], err
    assert outputs[0] == outputs[1]


# ------------------------------------------------------------------ an acceptance profile on plain decoding
@pytest.mark.parametrize("acceptance", ["{accept_length: 2.5}", "{per_depth: [0.8, 0.7]}",
                                        "{forced: {engine: vllm, setting: 2.0}}"])
def test_plain_decoding_with_an_acceptance_warns_and_runs(tmp_path, capsys, acceptance):
    """`none` drafts nothing: an acceptance section cannot matter. It used to reach the profile
    builder with no steps and end in a traceback for the forms that need them (accept_length)."""
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(run(tmp_path, SMALL + f"acceptance: {acceptance}\n")) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and err[0].startswith("mtpsim: warning: ") and ": acceptance: " in err[0], err
    assert "drafts nothing" in err[0]


def test_setting_a_design_to_none_keeps_the_acceptance_harmless(tmp_path, capsys):
    """`--set speculative.design=none` on a scenario whose acceptance is an accept length: the
    baseline alone runs, one row, no traceback."""
    text = BASE.replace("per_depth: [0.8, 0.7]", "accept_length: 2.2").replace("deepseek-v3", "llama-3.1-8b") \
        .replace("tp: 8", "tp: 1")
    argv = run(tmp_path, text)
    assert cli.main([*argv, "--set", "speculative.design=none"]) == 0
    header, *rows = (tmp_path / "out" / "summary.csv").read_text().splitlines()
    designs = [row.split(",")[header.split(",").index("design")] for row in rows]
    assert designs == ["none"]


# ------------------------------------------------------------------ a path that is not a regular file
def not_files(tmp_path):
    """A folder, a named pipe (reading it would block until a writer comes) and a device (reading
    /dev/zero never ends), each with the words the one line must say."""
    import os
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    return [(tmp_path, "a folder, not a file"), (pipe, "not a regular file"), ("/dev/zero", "not a regular file")]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["folder", "pipe", "device"])
@pytest.mark.parametrize("where", ["scenario", "workload.trace.path", "acceptance.histogram", "model.hf_config"])
def test_a_path_that_is_not_a_regular_file_is_named_without_reading_it(tmp_path, capsys, which, where):
    path, words = not_files(tmp_path)[which]
    if where == "scenario":
        one_line_error(capsys, ["run", str(path), "--out", str(tmp_path / "out")], "", words)
        return
    text = {"workload.trace.path": BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                                                f"workload: {{arrival: trace, trace: {{path: '{path}'}}}}"),
            "acceptance.histogram": BASE.replace("acceptance: {per_depth: [0.8, 0.7]}", f"acceptance: {{histogram: '{path}'}}"),
            "model.hf_config": BASE.replace("model: deepseek-v3", f"model: {{hf_config: '{path}'}}")}[where]
    one_line_error(capsys, run(tmp_path, text), where, words)
