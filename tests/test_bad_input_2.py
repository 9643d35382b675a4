"""The second adversarial campaign's classes (issue 23): output errors, corrupt gzip, Unicode
digits, extreme values deep in inputs, inputs that would hang, keys Python equates, blank file
names, argparse errors, and the warnings for settings that cannot matter. As in
test_bad_input.py: one stderr line, exit status 2, naming the file or key and the reason."""
from __future__ import annotations

import gzip
import json
import os
import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim.overrides import set_key
from tests.test_bad_input import BASE, LLAMA, cpu_profile, one_line_error, run

SMALL = LLAMA.replace("tp: 8", "tp: 1")  # llama-3.1-8b on one H200, plain decoding: the quickest run


@contextmanager
def file_size_limit(nbytes: int):
    """Writes past `nbytes` fail with EFBIG, as on a full disk (the soft limit only, so it can be
    lifted again; Python ignores SIGXFSZ, so the write returns the error instead of killing us)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


# ------------------------------------------------------------------------------ output errors
@pytest.mark.parametrize("extra,limit", [([], 2000), (["--trace"], 5000), (["--plot"], 30_000)],
                         ids=["run", "trace", "plot"])
def test_a_full_disk_names_the_file_and_leaves_no_complete_folder(tmp_path, capsys, extra, limit):
    argv = run(tmp_path, SMALL) + extra
    with file_size_limit(limit):
        line = one_line_error(capsys, argv, "", "cannot write")
    out = tmp_path / "out"
    assert str(out) in line and "File too large" in line
    if extra != ["--plot"]:  # the tables (and trace) were cut: `plot` must not read the folder as a run
        assert not (out / ".mtpsim-complete").exists()
        one_line_error(capsys, ["plot", str(out)], "", "")
    assert not Path(line.split(": ")[2]).exists()  # no file half written is left to be read as whole


def test_recommend_and_plot_on_a_full_disk(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(BASE.replace("num_requests: 4", "num_requests: 2"))
    with file_size_limit(200):
        line = one_line_error(capsys, ["recommend", str(scenario), "--batch", "1", "--max-steps", "1",
                                       "--out", str(tmp_path / "rec")], "", "cannot write")
    assert "rec/recommend.csv" in line and not (tmp_path / "rec" / ".mtpsim-complete").exists()
    assert cli.main(run(tmp_path, SMALL)) == 0
    with file_size_limit(3000):
        line = one_line_error(capsys, ["plot", str(tmp_path / "out")], "", "cannot write")
    assert ".png" in line


def test_stdout_to_a_full_device(tmp_path, capsys, monkeypatch):
    full = open("/dev/full", "w")  # noqa: SIM115 (closed below; main points its fd at /dev/null)
    monkeypatch.setattr(sys, "stdout", full)
    try:
        assert cli.main(["cost", str(run(tmp_path, SMALL)[1])]) == 2
    finally:
        monkeypatch.undo()
        full.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mtpsim: error: <stdout>: cannot write: No space left on device"]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["run", "--help"]])
def test_help_to_a_full_device(capsys, monkeypatch, argv):
    """argparse would drop what it cannot print and exit 0: here it is the same one line as any output."""
    full = open("/dev/full", "w")  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", full)
    try:
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
    finally:
        monkeypatch.undo()
        full.close()
    assert done.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == ["mtpsim: error: <stdout>: cannot write: No space left on device"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        one_line_error(capsys, run(tmp_path, SMALL)[:2] + ["--out", str(folder / "x")], "", "cannot create")
    finally:
        folder.chmod(0o755)


def test_an_out_folder_that_cannot_be_made_even_by_root(tmp_path, capsys):
    """The read-only case above skips where the tests run as root (CI, these machines): a folder
    under a regular file cannot be made by anyone, so the same refusal is checked everywhere."""
    (tmp_path / "a-file").write_text("not a folder")
    one_line_error(capsys, run(tmp_path, SMALL)[:2] + ["--out", str(tmp_path / "a-file" / "x")], "", "cannot create")
    assert (tmp_path / "a-file").read_text() == "not a folder"


def test_an_empty_out_is_refused(tmp_path, capsys):
    assert parse_error(capsys, run(tmp_path, SMALL)[:2] + ["--out", ""]).startswith("mtpsim run: error: argument --out")


# ------------------------------------------------------------------------ files and flags
def _gz(tmp_path: Path, how: str) -> bytes:
    data = gzip.compress(b"arrival_s,input_len,output_len\n" + b"0,64,16\n" * 200)
    return data[: len(data) // 2] if how == "cut" else data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:]


@pytest.mark.parametrize("how", ["cut", "flipped"])
def test_corrupt_gzip_is_one_line(tmp_path, capsys, how):
    text = BASE.replace("workload: {", "workload: {arrival: trace, trace: t.csv.gz, ")
    line = one_line_error(capsys, run(tmp_path, text, {"t.csv.gz": _gz(tmp_path, how)}), "", "corrupt")
    assert "t.csv.gz" in line


FLAGS = [  # argv after the scenario (None: no scenario), the word the line must hold
    (["--jobs", "١٢"], "not a whole number"),
    (["--seeds", "١"], "--seeds"),
    (["--jobs", "1_0"], "not a whole number"),
    (["--bogus"], "unrecognized arguments"),
    (["--backend", "mars"], "invalid choice"),
]


def parse_error(capsys, argv: list[str]) -> str:
    """Run argv; its one stderr line, after exit status 2 (argparse's errors exit via SystemExit)."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "usage" not in err[0], err
    return err[0]


@pytest.mark.parametrize("extra,word", FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_flags_are_one_line(tmp_path, capsys, extra, word):
    assert word in parse_error(capsys, run(tmp_path, SMALL) + extra)


@pytest.mark.parametrize("argv", [["cost", "S", "--batch", "٣"], ["cost", "S", "--batch", "0"],
                                  ["recommend", "S", "--batch", "١,2"], ["calibrate", "--threads", "-3"], ["run"]])
def test_other_commands_flags_are_one_line(tmp_path, capsys, argv):
    parse_error(capsys, [str(run(tmp_path, BASE)[1]) if a == "S" else a for a in argv])


# -------------------------------------------------------------------- extreme and hanging values
TRACE = "arrival_s,input_len,output_len\n"
EXTREME = [  # (id, scenario, files, key, word)
    ("arrival-1e300", BASE.replace("workload: {", "workload: {arrival: trace, trace: t.csv, "),
     {"t.csv": TRACE + "1e300,64,16\n0,64,16\n"}, "arrival_s", "<= 1e+09"),
    ("layers-1e9", BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, layers: [{attention: mla, "
                                "ffn: moe, count: 1000000000}]}"), {}, "model.layers.0.count", "4096"),
    ("mtp-layers-1e9", BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, mtp: {num_layers: 1000000000}}"),
     {}, "model.mtp.num_layers", "4096"),
    ("hf-layers-1e9", SMALL.replace("model: llama-3.1-8b", "model: {hf_config: c.json}"),
     {"c.json": json.dumps({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                            "num_hidden_layers": 10**9, "num_attention_heads": 32, "num_key_value_heads": 8,
                            "vocab_size": 128256, "max_position_embeddings": 131072})},
     "num_hidden_layers", "1..4,096"),
    ("hidden-1e12", BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, hidden_size: 1000000000000}"),
     {}, "model.hidden_size", "less than or equal"),
    ("capacity-1e300", BASE.replace("hardware: h200", "hardware: {from: h200, memory_capacity_bytes: 1.0e300}"),
     {}, "hardware.memory_capacity_bytes", "less than or equal"),
    ("flops-1e-300", BASE.replace("hardware: h200", "hardware: {from: h200, peak_flops: {bf16: 1.0e-300}}"),
     {}, "hardware.peak_flops.bf16", "greater than or equal"),
    ("histogram-1e308", BASE.replace("per_depth: [0.8, 0.7]", "histogram: h.csv"),
     {"h.csv": "accepted,count\n0,1.7e308\n1,1.7e308\n"}, "count", "<= 1e+15"),
    ("empty-peak-flops", BASE.replace("hardware: h200", "hardware: {from: h200, peak_flops: {}}"),
     {}, "hardware.peak_flops", "empty mapping"),
    ("poisson-1e-300", BASE.replace("workload: {", "workload: {arrival: poisson, rate_per_s: 1.0e-300, "),
     {}, "workload.rate_per_s", "simulated seconds"),
    ("poisson-1e-9", BASE.replace("workload: {", "workload: {arrival: poisson, rate_per_s: 1.0e-9, "),
     {}, "workload.rate_per_s", "simulated seconds"),
    ("schedule-1e-9", BASE.replace("workload: {", "workload: {arrival: poisson, rate_schedule: "
                                   "[{until_s: 10, rate_per_s: 1.0e-9}], "), {}, "workload.rate_schedule", "cycles"),
    ("schedule-1e-300-window", BASE.replace("workload: {", "workload: {arrival: poisson, rate_schedule: "
                                            "[{until_s: 1.0e-300, rate_per_s: 5}], "), {}, "workload.rate_schedule",
     "cycles"),
]


@pytest.mark.parametrize("text,files,key,word", [c[1:] for c in EXTREME], ids=[c[0] for c in EXTREME])
def test_extreme_values_are_refused_before_anything_runs(tmp_path, capsys, text, files, key, word):
    started = time.perf_counter()
    one_line_error(capsys, run(tmp_path, text, files), key, word)
    assert time.perf_counter() - started < 60, "refused up front, not after minutes of simulation"


# --------------------------------------------------------------- silently wrong, now refused
WRONG = [
    ("equal-keys-int-float", BASE.replace("steps: 2}", "steps: 2, policy: {steps_by_batch: {1: 2, 1.0: 1}}}"),
     "speculative.policy.steps_by_batch.1.0", "the same key as '1'"),
    ("equal-keys-bool", BASE.replace("steps: 2}", "steps: 2, policy: {steps_by_batch: {1: 2, true: 1}}}"),
     "speculative.policy.steps_by_batch.true", "the same key as '1'"),
    ("blank-profile", BASE + "cost: {profile: ''}\n", "cost.profile", "empty or blank"),
    ("space-profile", BASE + "cost: {profile: ' '}\n", "cost.profile", "empty or blank"),
    ("blank-trace", BASE.replace("workload: {", "workload: {arrival: trace, trace: '', "), "workload.trace.path", "blank"),
    ("blank-model", BASE.replace("model: deepseek-v3", "model: ''"), "model", "blank"),
]


@pytest.mark.parametrize("text,key,word", [c[1:] for c in WRONG], ids=[c[0] for c in WRONG])
def test_values_python_or_a_default_would_take_silently(tmp_path, capsys, text, key, word):
    one_line_error(capsys, run(tmp_path, text), key, word)


RAGGED = [("long-rows", TRACE + "0,64,16,9\n1,64,16,9\n", "line 2", "4 fields where the header has 3"),
          ("repeated-column", "arrival_s,arrival_s,input_len,output_len\n0,5,64,16\n", "arrival_s", "named twice"),
          ("short-row", TRACE + "0,64,16\n1,64\n", "output_len", "row 3: empty")]


@pytest.mark.parametrize("content,key,word", [c[1:] for c in RAGGED], ids=[c[0] for c in RAGGED])
def test_ragged_rows(tmp_path, capsys, content, key, word):
    text = BASE.replace("workload: {", "workload: {arrival: trace, trace: t.csv, ")
    one_line_error(capsys, run(tmp_path, text, {"t.csv": content}), key, word)


META = [  # (sed-like replacement in the CPU profile's meta.yaml, key, word)
    (("    1: 8.653e-05", "    -4: 8.653e-05"), "host_s.none.-4", "greater than or equal to 1"),
    (("    1: 8.653e-05", "    1: -3.0"), "host_s.none.1", "greater than 0"),
    (("    1: 8.653e-05", "    1: .nan"), "host_s.none.1", "finite"),
    (("  none:\n", "  bogus:\n"), "host_s.bogus", "'none'"),
    (("threads: 1", "threads: -1"), "threads", "greater than or equal to 1"),
]


@pytest.mark.parametrize("replace,key,word", META, ids=[m[1] for m in META])
def test_profile_host_figures(tmp_path, capsys, monkeypatch, replace, key, word):
    from mtpsim.costs.profile import PROFILES_DIR
    meta = (PROFILES_DIR / "cpu" / "meta.yaml").read_text()
    assert replace[0] in meta
    monkeypatch.chdir(tmp_path)
    text = SMALL.replace("hardware: h200", "hardware: cpu") + "cost: {model: calibrated, profile: prof}\n"
    line = one_line_error(capsys, run(tmp_path, text, cpu_profile(tmp_path, meta__yaml=meta.replace(*replace))),
                          key, word)
    assert "meta.yaml" in line


def test_cost_context_zero_is_priced_at_zero(tmp_path, capsys):
    assert cli.main(["cost", str(run(tmp_path, SMALL)[1]), "--context", "0"]) == 0
    assert ", context 0," in capsys.readouterr().out


def test_verify_on_cuda_without_a_gpu(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    argv = ["verify", str(run(tmp_path, SMALL)[1]), "--set", "verify.device=cuda", "--out", str(tmp_path / "v")]
    one_line_error(capsys, argv, "verify.device", "no CUDA device")


# ------------------------------------------------------------------------------------- --set
def test_set_addresses_integer_keys_and_null_removes():
    data = {"speculative": {"policy": {"steps_by_batch": {1: 2, 8: 1}}}, "acceptance": {"per_depth": [0.5]}}
    set_key(data, "speculative.policy.steps_by_batch.8", 0, "--set")
    set_key(data, "speculative.policy.steps_by_batch.32", 3, "--set")
    assert data["speculative"]["policy"]["steps_by_batch"] == {1: 2, 8: 0, 32: 3}
    set_key(data, "acceptance", None, "--set")
    assert "acceptance" not in data
    text = {"a": {"8": 1}}
    set_key(text, "a.8", 2, "--set")  # a key written as text stays text
    assert text == {"a": {"8": 2}}


def test_set_reaches_a_policy_entry(tmp_path, capsys):
    text = BASE.replace("steps: 2}", "steps: 2, policy: {steps_by_batch: {1: 2, 8: 1}}}")
    one_line_error(capsys, run(tmp_path, text) + ["--set", "speculative.policy.steps_by_batch.8=5"],
                   "speculative.policy.steps_by_batch.8", "exceed")


# ---------------------------------------------------------------------------------- warnings
WARNINGS = [  # (id, scenario, files, key of the one warning line)
    ("draft-on-none", SMALL.replace("design: none", "design: none, draft: gemma-4-e2b-assistant"), {},
     "speculative.draft"),
    ("unreached-policy", BASE.replace("steps: 2}", "steps: 2, policy: {steps_by_batch: {1: 2, 64: 1}}}"), {},
     "speculative.policy.steps_by_batch.64"),
    ("skew-on-dense", SMALL + "cost: {moe_skew: 0.3}\n", {}, "cost.moe_skew"),
    ("tbo-without-wide-ep", BASE + "engine: {two_batch_overlap: true}\n", {}, "engine.two_batch_overlap"),
    ("mean-outside-bounds", SMALL.replace("input_len: 64", "input_len: {dist: normal, mean: 500, std: 5, min: 10, "
                                          "max: 100}"), {}, "workload.input_len.mean"),
    ("deep-histogram", BASE.replace("per_depth: [0.8, 0.7]", "histogram: h.csv"),
     {"h.csv": "accepted,count\n0,5\n1,5\n2,5\n3,5\n4,5\n"}, "acceptance.histogram"),
]


@pytest.mark.parametrize("text,files,key", [c[1:] for c in WARNINGS], ids=[c[0] for c in WARNINGS])
def test_settings_that_cannot_matter_warn_and_run(tmp_path, capsys, text, files, key):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(run(tmp_path, text, files)) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim:")]
    assert len(err) == 1 and err[0].startswith("mtpsim: warning: ") and f": {key}: " in err[0], err


def test_a_swept_setting_does_not_warn(tmp_path, capsys):
    """A sweep over designs gives `none` the draft it ignores; that is the sweep, not a mistake.
    (A sweep of `none` alone reads the draft at no point: campaign 35 has that one warn,
    tests/test_bad_input_35.py.)"""
    from mtpsim import errors
    errors._warned.clear()
    text = SMALL.replace("design: none", "design: none, draft: eagle3-llama-3.1-8b") + \
        "acceptance: {accept_length: 2.0}\nsweep: {speculative.design: [none, nextn]}\n"
    assert cli.main(["run", *run(tmp_path, text)[1:], "--jobs", "1"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_cost_context_past_max_context_warns(tmp_path, capsys):
    from mtpsim import errors
    errors._warned.clear()
    assert cli.main(["cost", str(run(tmp_path, SMALL)[1]), "--context", "1000000"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mtpsim: warning: --context: ") and "max_context" in err[0]


def test_quick_runs_without_out_get_folders_of_their_own(tmp_path, monkeypatch):
    """Three claims within one second: three folders (runs/<name>-<time>, -2, -3)."""
    from mtpsim.runfolder import output_dir
    monkeypatch.chdir(tmp_path)
    folders = [output_dir("quick", None) for _ in range(3)]
    assert len(set(folders)) == 3 and all((f / ".mtpsim-run").is_file() for f in folders)


def test_a_profile_time_past_an_hour_is_refused(tmp_path, capsys, monkeypatch):
    from mtpsim.costs.profile import PROFILES_DIR
    gemm = (PROFILES_DIR / "cpu" / "gemm.csv").read_text().splitlines()
    col = gemm[0].split(",").index("time_s")
    row = gemm[1].split(",")
    row[col] = "1e300"
    monkeypatch.chdir(tmp_path)
    text = SMALL.replace("hardware: h200", "hardware: cpu") + "cost: {model: calibrated, profile: prof}\n"
    files = cpu_profile(tmp_path, gemm__csv="\n".join([gemm[0], ",".join(row), *gemm[2:]]) + "\n")
    line = one_line_error(capsys, run(tmp_path, text, files), "time_s", "<= 3600")
    assert "gemm.csv" in line
