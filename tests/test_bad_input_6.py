"""A fifth adversarial campaign (this stop's: about 540 probes of the data files beside a
scenario, kept out of the repo), by class. As in test_bad_input.py: bad input is one stderr line,
exit status 2, naming the file and key; semantic nonsense that runs is one warning line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from mtpsim import cli, errors
from mtpsim.costs.profile import PROFILES_DIR
from mtpsim.errors import ScenarioError
from tests.test_bad_input import BASE as BASE_DS
from tests.test_bad_input import LLAMA, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_deepseek_v4 import FLASH
from tests.test_deepseek_v4 import _scenario as v4_scenario
from tests.test_hfconfig import QWEN3_NEXT

SMALL = LLAMA.replace("tp: 8", "tp: 1")
NEXTN = SMALL.replace("speculative: {design: none, steps: 2}",
                      "speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\n"
                      "acceptance: {per_depth: [0.8, 0.7]}")
GEMMA = SMALL.replace("llama-3.1-8b", "gemma-4-e2b")


def test_a_scenario_error_survives_being_rebuilt_from_its_args():
    """simpy re-raises a process's exception as type(e)(*e.args): with the message as the only
    arg that was a TypeError traceback for an error raised mid-run."""
    err = ScenarioError("h.yaml", "peak_flops", "no entry usable for bf16")
    again = type(err)(*err.args)
    assert str(again) == str(err) == "h.yaml: peak_flops: no entry usable for bf16"


def test_hardware_without_a_peak_the_model_computes_in_is_refused_at_load(tmp_path, capsys):
    """Before: found when the first bf16 op was priced, inside a worker: a TypeError traceback."""
    hw = yaml.safe_load((PROFILES_DIR.parent / "hardware" / "h200.yaml").read_text())
    hw.update(name="myhw", peak_flops={"fp4": 1e15}, profiles={})
    line = one_line_error(capsys, run(tmp_path, NEXTN.replace("hardware: h200", "hardware: ./h.yaml"),
                                      {"h.yaml": yaml.safe_dump(hw)}), "hardware", "no peak_flops entry usable for bf16")
    assert "myhw" in line


HEADS = [  # the lm_head mapping, the key, a word of the reason
    ("{kind: centroid}", "model.lm_head", "needs num_centroids and top_clusters"),
    ("{kind: centroid, num_centroids: 100}", "model.lm_head", "needs num_centroids and top_clusters"),
    ("{kind: centroid, num_centroids: 100, top_clusters: 200}", "model.lm_head", "exceeds num_centroids"),
    ("{kind: centroid, num_centroids: 1000000, top_clusters: 2}", "model", "exceeds vocab_size"),
    ("{kind: full, num_centroids: 100}", "model.lm_head", "does not take num_centroids"),
]


@pytest.mark.parametrize("head,key,word", HEADS, ids=[h for h, _, _ in HEADS])
def test_a_centroid_head_is_whole_and_within_the_vocabulary(tmp_path, capsys, head, key, word):
    """Before: a centroid head without its sizes was a TypeError traceback while pricing."""
    text = SMALL.replace("model: llama-3.1-8b", f"model: {{from: llama-3.1-8b, lm_head: {head}}}")
    one_line_error(capsys, run(tmp_path, text), key, word)


STRAY = [  # an override of the model, the key path the error names, a word of the reason
    ("{attention_kinds: {gqa: {kv_lora_rank: 512}}}", "model.attention_kinds.gqa", "does not take kv_lora_rank"),
    ("{ffn_kinds: {dense: {num_experts: 8}}}", "model.ffn_kinds.dense", "does not take num_experts"),
    ("{mtp: {num_layers: 1, layer: {attention: gqa, ffn: dense}, vocab_size: 999999}}", "model", "exceeds vocab_size"),
]


@pytest.mark.parametrize("over,key,word", STRAY, ids=[w for _, _, w in STRAY])
def test_a_field_its_kind_does_not_read_is_refused(tmp_path, capsys, over, key, word):
    """Before: read by no op and ignored without a word (an MTP head wider than the vocabulary
    was priced as such)."""
    text = SMALL.replace("model: llama-3.1-8b", f"model: {{from: llama-3.1-8b, {over[1:-1]}}}")
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_shared_expert_width_without_shared_experts_and_linear_heads_out_of_groups_are_refused(tmp_path, capsys):
    text = SMALL.replace("model: llama-3.1-8b", "model: {from: qwen3-next-80b-a3b, ffn_kinds: {moe: "
                         "{num_shared_experts: 0}}}").replace("tp: 1", "tp: 4")
    one_line_error(capsys, run(tmp_path, text), "model.ffn_kinds.moe", "num_shared_experts is 0")
    text = SMALL.replace("model: llama-3.1-8b", "model: {from: qwen3-next-80b-a3b, attention_kinds: {linear: "
                         "{num_heads: 31}}}").replace("tp: 1", "tp: 4")
    one_line_error(capsys, run(tmp_path, text), "model.attention_kinds.linear", "not a multiple of num_kv_heads")


V4 = [  # config.json changes, the key, a word of the reason
    ({"qk_rope_head_dim": None, "partial_rotary_factor": "abc"}, "partial_rotary_factor", "(0, 1]"),
    ({"qk_rope_head_dim": None, "partial_rotary_factor": 2.0}, "partial_rotary_factor", "(0, 1]"),
    ({"qk_rope_head_dim": None, "partial_rotary_factor": 1e-9}, "partial_rotary_factor", "rotary dims"),
    ({"qk_rope_head_dim": 1024}, "qk_rope_head_dim", "rotary dims"),
    ({"num_hash_layers": 100}, "num_hash_layers", "the model has 43"),
]


@pytest.mark.parametrize("change,key,word", V4, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(V4)])
def test_v4_rotary_and_hash_layers_are_checked(tmp_path, capsys, change, key, word):
    """Before: partial_rotary_factor went straight into int(), a ValueError, TypeError or
    OverflowError traceback; 10 hash layers on 4 ran."""
    files = {"ckpt/config.json": json.dumps({**FLASH, **change})}
    text = v4_scenario("{hf_config: ckpt/config.json, name: deepseek-v4-flash}", "nextn", 1)
    line = one_line_error(capsys, run(tmp_path, text, files), key, word)
    assert "config.json" in line


@pytest.mark.parametrize("layers", [[1.5], [True], [1.9, 2]])
def test_layer_indices_in_a_config_are_integers(tmp_path, capsys, layers):
    """Before: int() read 1.5 and true as layer 1."""
    files = {"next/config.json": json.dumps({**QWEN3_NEXT, "mlp_only_layers": layers})}
    text = SMALL.replace("model: llama-3.1-8b", "model: {hf_config: next/config.json}").replace("tp: 1", "tp: 4")
    one_line_error(capsys, run(tmp_path, text, files), "mlp_only_layers", "list of integers")


def test_a_config_with_a_byte_order_mark_reads_as_without(tmp_path, capsys):
    files = {"next/config.json": "\ufeff" + json.dumps(QWEN3_NEXT)}
    text = SMALL.replace("model: llama-3.1-8b", "model: {hf_config: next/config.json}").replace("tp: 1", "tp: 4")
    assert cli.main(["cost", run(tmp_path, text, files)[1]]) == 0


def _profile(tmp_path, **meta_changes):
    """A copy of the committed CPU profile with meta.yaml changed."""
    folder = tmp_path / "prof"
    shutil.copytree(PROFILES_DIR / "cpu", folder)
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    for dotted, value in meta_changes.items():
        *parents, last = dotted.split("__")
        node = meta
        for p in parents:
            node = node[p]
        node[last] = value
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta))
    return folder


CPU = SMALL.replace("hardware: h200", "hardware: cpu").replace(
    "workload:", "cost: {profile: prof}\nworkload:")

META = [  # a meta.yaml change, the key, a word of the reason
    ({"dtype": "int3"}, "dtype", "'fp32'"),
    ({"ceilings__copy_bytes_per_s": 1e-300}, "ceilings.copy_bytes_per_s", "greater than or equal"),
    ({"launch__call_s": 1e6}, "launch.call_s", "less than or equal"),
    ({"attention_kv": "bogus"}, "attention_kv", "per_request"),
]


@pytest.mark.parametrize("change,key,word", META, ids=[k for _, k, _ in META])
def test_profile_figures_out_of_any_device_range_are_refused(tmp_path, capsys, change, key, word, monkeypatch):
    """Before: an unknown dtype was a KeyError traceback, a tiny ceiling a NaN traceback (run) or
    NaN times (cost), a second-long launch and an unknown attention_kv were taken as given."""
    _profile(tmp_path, **change)
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, run(tmp_path, CPU), key, word)
    assert "meta.yaml" in line


def test_a_profile_row_no_lookup_names_is_refused(tmp_path, capsys, monkeypatch):
    """Before: an attention row of kind `gqq` matched nothing, and the run was still labelled
    calibrated by the profile."""
    folder = _profile(tmp_path)
    path = folder / "attention.csv"
    lines = path.read_text().splitlines()
    kind = lines[0].split(",").index("kind")
    cells = lines[1].split(",")
    cells[kind] = "gqq"
    path.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, run(tmp_path, CPU), "kind", "row 2: 'gqq' is not one of gqa")
    assert "attention.csv" in line


def test_rates_changed_under_a_measured_profile_warn(tmp_path, capsys):
    """Before: priced by the h200 profile as if nothing had changed, without a word."""
    text = SMALL.replace("hardware: h200", "hardware: {from: h200, memory_bandwidth_bytes_per_s: 1.0e11}")
    found = warnings_of(capsys, ["cost", run(tmp_path, text)[1]])
    assert len(found) == 1 and "hardware.memory_bandwidth_bytes_per_s" in found[0] and "h200-sglang" in found[0]


def test_profiles_the_scenario_names_must_be_of_its_hardware(tmp_path, capsys):
    """Before: a profile of another GPU named in the scenario's own hardware fell back to the
    roofline silently (cost.profile with the same pairing was refused)."""
    text = SMALL.replace("hardware: h200", "hardware: {from: h200, profiles: {sglang: b200-sglang}}")
    one_line_error(capsys, run(tmp_path, text), "hardware.profiles.sglang", "measured on 'b200'")
    text = SMALL.replace("hardware: h200", "hardware: {from: h200, profiles: {tensorrt: h200-sglang}}")
    one_line_error(capsys, run(tmp_path, text), "hardware.profiles.tensorrt", "'sglang', 'vllm', 'trtllm' or 'default'")


def test_a_renamed_copy_of_a_measured_gpu_still_runs_on_the_roofline(tmp_path, capsys):
    """The fallback the profiles check keeps: a copy under a new name inherits the entry's
    profiles without naming them, and runs on its own rates."""
    text = SMALL.replace("hardware: h200", "hardware: {from: h200, name: my-h200}")
    assert warnings_of(capsys, ["cost", run(tmp_path, text)[1]]) == []


FROZEN = [  # an override of the assistant's full-attention kind, the key, a word of the reason
    ("{head_dim: 128}", "speculative.draft.attention_kinds.full.head_dim", "has 512"),
    ("{num_kv_heads: 4}", "speculative.draft.attention_kinds.full.num_kv_heads", "has 1"),
    ("{kv_source: null}", "speculative.draft.attention_kinds.full.kv_source", "no kv_source"),
]


@pytest.mark.parametrize("over,key,word", FROZEN, ids=[k.rsplit(".", 1)[1] for _, k, _ in FROZEN])
def test_an_assistant_reads_the_target_layer_as_it_is(tmp_path, capsys, over, key, word):
    """Before: an assistant whose query-only layers disagreed with the target layer whose cache
    they read (or read none) was priced with its own figures."""
    text = GEMMA.replace("speculative: {design: none, steps: 2}",
                         "speculative: {design: frozen_kv, steps: 2, draft: {from: gemma-4-e2b-assistant, "
                         f"attention_kinds: {{full: {over}}}}}}}\nacceptance: {{per_depth: [0.8, 0.7]}}")
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_requests_must_fit_the_drafts_context_too(tmp_path, capsys):
    text = NEXTN.replace("draft: eagle3-llama-3.1-8b", "draft: {from: eagle3-llama-3.1-8b, max_context: 64}")
    # the prompts (64) fit the 64-token context alone: the output overflows it
    one_line_error(capsys, run(tmp_path, text), "workload.output_len", "max_context 64 of the draft")


MOONCAKE = [  # hash_ids rows, a word of the reason
    ([[7, 7], [7, 7]], "block 2 here and block 1 earlier in this row"),
    ([[5, 1], [1, 6]], "block 1 here and block 2 in row 1"),
]


@pytest.mark.parametrize("ids,word", MOONCAKE, ids=["repeat", "moved"])
def test_a_block_id_keeps_its_position(tmp_path, capsys, ids, word):
    """Before: ids matched by value alone, so rows [5, 1] then [1, 6] "saved" a block of prefill."""
    rows = "".join(json.dumps({"timestamp": i * 1000, "input_length": 1024, "output_length": 8, "hash_ids": b}) + "\n"
                   for i, b in enumerate(ids))
    text = SMALL.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                         "workload: {arrival: trace, trace: {path: t.jsonl}}")
    line = one_line_error(capsys, run(tmp_path, text, {"t.jsonl": rows}), "hash_ids", word)
    assert "t.jsonl" in line


def test_a_histogram_counts_each_depth_once(tmp_path, capsys):
    """Before: two rows for one depth were added up."""
    text = NEXTN.replace("acceptance: {per_depth: [0.8, 0.7]}", "acceptance: {histogram: h.csv}")
    line = one_line_error(capsys, run(tmp_path, text, {"h.csv": "accepted,count\n0,5\n1,3\n1,4\n2,2\n"}),
                          "accepted", "rows 3 and 4")
    assert "h.csv" in line


WARNED = [  # the acceptance / policy section, the warned key, a word of the warning
    ("acceptance: {histogram: h.csv}", "acceptance.histogram", "never accepted"),
    ("acceptance: {histogram: h.csv}\nspeculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b, "
     "policy: {steps_by_batch: {1: 0}}}", "speculative.policy.steps_by_batch", "no iteration speculates"),
]


@pytest.mark.parametrize("section,key,word", WARNED, ids=[k for _, k, _ in WARNED])
def test_acceptance_that_never_drafts_is_a_warning(tmp_path, capsys, section, key, word):
    """A histogram that counts fewer accepted drafts than the steps (drafts past it only cost),
    and a policy whose every entry drafts nothing, run with one warning each."""
    text = NEXTN.replace("acceptance: {per_depth: [0.8, 0.7]}", section)
    if "policy" in section:
        text = text.replace("speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\n", "")
        files = {"h.csv": "accepted,count\n0,5\n1,3\n2,2\n"}
    else:
        files = {"h.csv": "accepted,count\n0,5\n1,3\n2,0\n"}
    found = warnings_of(capsys, ["cost", run(tmp_path, text, files)[1]])
    assert any(f": {key}: " in w and word in w for w in found), found


# ----------------------------------------------------------------------------- the command line
# (the same stop's second campaign: about 590 probes of the commands and flags besides `run`)

def test_a_control_character_in_yaml_is_one_line(tmp_path, capsys):
    """Before: PyYAML's reader refused it while the loader was built, outside the handler: a
    ReaderError traceback, in a file, a --set value or a catalog entry alike."""
    path = run(tmp_path, SMALL.replace("name: p", "name: a\x01b"))[1]
    one_line_error(capsys, ["cost", path], "line 1", "U+0001")
    one_line_error(capsys, ["cost", run(tmp_path, SMALL)[1], "--set", "question=a\x7fb"], "question", "U+007F")


def test_set_keys_and_values_that_read_as_something_else_are_refused(tmp_path, capsys):
    path = run(tmp_path, SMALL)[1]
    # a 5,000-digit key part: int() raised past 4,300 digits (a traceback)
    one_line_error(capsys, ["cost", path, "--set", f"speculative.policy.steps_by_batch.{'9' * 5000}=1"],
                   "", "as a key")
    # `=#2` is a YAML comment: read as null, it dropped the key and ran the default without a word
    one_line_error(capsys, ["cost", path, "--set", "workload.output_len=#2"], "workload.output_len", "reads as nothing")
    assert cli.main(["cost", path, "--set", "question=null"]) == 0  # null itself still drops a key


def test_an_unknown_version_of_the_peer_database_is_refused(tmp_path, capsys):
    """Before: tables were filled back from older versions and the profile stamped 99.9."""
    pytest.importorskip("aiconfigurator_core")
    out = tmp_path / "prof"
    one_line_error(capsys, ["calibrate", "--from", "aiconfigurator", "--system", "h200_sxm", "--backend", "sglang",
                            "--version", "99.9", "--out", str(out)], "", "--version: 99.9: the database has no sglang tables")
    assert not out.exists() and not (tmp_path / "prof.partial").exists()


# the command run with SIGTERM blocked, as a parent that blocked it would start it: the mask survives
# exec, and exec keeps the pid a signal is sent to (preexec_fn would do it in the forked child, which
# Python warns can deadlock where the parent has threads, as a test worker does)
BLOCKED_SIGTERM = ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}); "
                         "os.execv(sys.executable, [sys.executable, '-m', 'mtpsim.cli', *sys.argv[1:]])"]


def _subprocess(args: list[str], env: dict | None = None, blocked: bool = False):
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    command = BLOCKED_SIGTERM if blocked else ["-m", "mtpsim.cli"]
    return subprocess.Popen([sys.executable, *command, *args], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root), **(env or {})})


def test_an_unusable_mplbackend_does_not_stop_the_plots(tmp_path):
    """Before: `import matplotlib` refused MPLBACKEND=nonexistent: a ValueError traceback from
    plot, run --plot and search (which draws its frontier)."""
    path = run(tmp_path, SMALL)[1]
    done = _subprocess(["run", path, "--out", str(tmp_path / "r"), "--plot"], {"MPLBACKEND": "nonexistent"})
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert list((tmp_path / "r").glob("*.png"))


@pytest.mark.parametrize("blocked", [False, True])
def test_a_terminated_run_leaves_no_folder(tmp_path, blocked):
    """Before: SIGTERM (timeout, kill, a CI cancel) left the claimed folder holding only its
    claim, which the next run into it refused as not empty; Ctrl-C cleaned up. And a parent that
    had blocked SIGTERM (the mask survives exec) left it pending: the run went on to the end and
    exited 0, as CI once saw."""
    import signal
    import time
    text = SMALL.replace("num_requests: 4", "num_requests: 100000").replace("concurrency: 2", "concurrency: 64").replace(
        "output_len: 16", "output_len: 1000")  # seconds to minutes of simulation: the signal comes long before the end
    path, out = run(tmp_path, text)[1], tmp_path / "r"
    proc = _subprocess(["run", path, "--out", str(out)], blocked=blocked)
    deadline = time.monotonic() + 60
    while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # until the run has claimed its folder
    assert out.exists(), "the run never claimed its folder"
    assert proc.poll() is None, "the run ended before it could be signalled: give it more to simulate"
    masks = _signal_masks(proc.pid)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "interrupted" in err, \
        f"status {proc.returncode} {time.monotonic() - sent:.1f} s after the signal, {masks}: {err} | {stdout[-300:]}"
    assert not out.exists()


def test_a_terminated_sweep_does_not_wait_for_its_running_points(tmp_path):
    """Before: SIGTERM to a sweep running its points in worker processes (`--jobs 2`) waited for
    the running points to finish (17 s for two 12 s points; minutes for long ones) before it
    cleaned up: the pool's shutdown waited on them. The workers are now ended at once
    (interrupts.stop_workers), and none is left behind."""
    import signal
    import time
    text = SMALL.replace("num_requests: 4", "num_requests: 100000").replace("concurrency: 2", "concurrency: 64").replace(
        "output_len: 16", "output_len: 4000") + "sweep:\n  workload.concurrency: [64, 32]\n"  # each point ~a minute
    path, out = run(tmp_path, text)[1], tmp_path / "r"
    proc = _subprocess(["run", path, "--out", str(out), "--jobs", "2"])
    deadline = time.monotonic() + 60
    while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.exists() and proc.poll() is None, "the sweep never claimed its folder, or ended first"
    time.sleep(1.0)  # the workers are simulating
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 143 and "interrupted" in err, err
    assert took < 30, f"{took:.0f} s: it waited for the running points"  # a hang guard: ~0.2 s, a point ~60 s
    assert not out.exists()


def test_a_sigterm_whose_interrupt_was_swallowed_still_stops_the_run(tmp_path, monkeypatch, capsys):
    """Before: CI twice saw a run signalled right after claiming its folder exit 0 with the folder
    written, its SIGTERM handler installed and unblocked: the KeyboardInterrupt the handler raised
    was lost where it landed (a stack written from the handler in a reproduction: inside numpy's
    lazy first import of numpy.random, in a Cython module's init). The stop is now kept
    (mtpsim/interrupts.py) and raised again at the next finished request, so the run stops, gives
    its folder back and exits 143 (a SIGTERM's 128 + 15)."""
    import contextlib
    import signal

    from mtpsim import cli, interrupts
    monkeypatch.setattr(interrupts, "_requested", False)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # what a swallowing library does with it
            interrupts.terminated(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGTERM, before)
    path, out = run(tmp_path, SMALL)[1], tmp_path / "r"
    assert cli.main(["run", path, "--out", str(out)]) == 143
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists()
    # a command with no simulation loop (or one whose last request had finished) is stopped as it
    # leaves its folder: the folder is not marked done
    from mtpsim.runfolder import COMPLETE, claimed
    with pytest.raises(KeyboardInterrupt), claimed("x", str(out)) as folder:
        (folder / "summary.csv").write_text("a\n")
    assert not (out / COMPLETE).exists() and list(out.iterdir()) == [out / "summary.csv"]


def _signal_masks(pid: int) -> str:
    """The child's blocked, ignored and caught signal masks (Linux), for a failure's message."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "no /proc"
    return ", ".join(x.replace("\t", " ") for x in lines if x.startswith(("SigBlk", "SigIgn", "SigCgt")))


def test_search_flags_that_contradict_or_misprint_are_fixed(tmp_path, capsys):
    from mtpsim.search.targets import parse_target
    path = run(tmp_path, SMALL)[1]
    one_line_error(capsys, ["search", path, "--gpus", "1", "--no-cache", "--cache", str(tmp_path / "c")],
                   "", "--cache: give --cache (a folder of finished points) or --no-cache, not both")
    assert parse_target("p50:0.001ms", "tpot").text == "tpot p50 <= 0.001 ms"  # was "<= 0.0 ms"
    with pytest.raises(ScenarioError, match="tokens per second"):  # was a hint of ms and s units it refuses
        parse_target("-3", "user_tps")


def test_replotting_a_folder_without_requests_removes_the_old_latency_plot(tmp_path, capsys):
    """Before: a latency.png drawn from an earlier requests.csv stayed, looking current."""
    path, out = run(tmp_path, SMALL)[1:4:2]
    assert cli.main(["run", path, "--out", out, "--plot"]) == 0
    latency = tmp_path / "out" / "latency.png"
    assert latency.is_file()
    (tmp_path / "out" / "requests.csv").unlink()
    capsys.readouterr()
    assert cli.main(["plot", out]) == 0
    assert not latency.exists() and "latency.png: removed" in capsys.readouterr().err


def test_a_spec_file_is_whole_and_a_config_says_its_head_width(tmp_path, capsys):
    """Before: `from:` in a model file gave "hidden_size: required key is missing", and a
    hidden size the heads do not divide was truncated into the head width."""
    line = one_line_error(capsys, run(tmp_path, SMALL.replace("model: llama-3.1-8b", "model: ./m.yaml"),
                                      {"m.yaml": "from: llama-3.1-8b\nname: x\n"}), "from", "only inline")
    assert "m.yaml" in line
    config = {"model_type": "llama", "hidden_size": 4000, "num_attention_heads": 3, "num_key_value_heads": 3,
              "num_hidden_layers": 2, "intermediate_size": 100, "vocab_size": 1000}
    text = SMALL.replace("model: llama-3.1-8b", "model: {hf_config: c/config.json}")
    one_line_error(capsys, run(tmp_path, text, {"c/config.json": json.dumps(config)}), "hidden_size", "no head_dim")


# ----------------------------------------------------------------------------- scenario sections
# (the same stop's third campaign: about 420 probes of the less obvious sections and their mixes)

def test_plots_label_a_second_series_key(tmp_path, capsys):
    """Before: a series told apart by topk (any tree run beside its baseline), a policy or a swept
    hardware read row[k] off a namedtuple: a TypeError traceback from plot and run --plot."""
    text = BASE_DS.replace("acceptance: {per_depth: [0.8, 0.7]}",
                           "acceptance: {per_depth_topk: [[0.7, 0.1], [0.6, 0.1]]}\nsweep: {speculative.topk: [1, 2]}")
    argv = run(tmp_path, text) + ["--plot"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "latency.png").is_file()


def test_a_sweep_point_error_names_its_point(tmp_path, capsys):
    text = NEXTN + "sweep: {model: [llama-3.1-8b, qwen3-8b]}\n"
    one_line_error(capsys, run(tmp_path, text), "speculative.draft", "(sweep point 2 of 2: model='qwen3-8b')")


def test_an_empty_draft_mapping_is_not_the_default_draft(tmp_path, capsys):
    one_line_error(capsys, run(tmp_path, NEXTN.replace("draft: eagle3-llama-3.1-8b", "draft: {}")),
                   "speculative.draft", "names no draft")


def test_a_swept_hardware_has_its_column_and_a_swept_search_key_warns(tmp_path, capsys):
    """Before: the table printed rows of three GPUs under one GPU's header, and a sweep of
    search.gpus printed a gpus column over identical runs."""
    assert cli.main(run(tmp_path, SMALL + "sweep: {hardware: [h100-sxm, h200]}\n")) == 0
    out = capsys.readouterr().out
    assert "hardware swept" in out and out.count("h200") >= 2
    text = SMALL + "sweep: {search.gpus: [1, 2]}\n"
    (tmp_path / "x").mkdir()
    found = warnings_of(capsys, ["cost", run(tmp_path / "x", text)[1]])
    assert any(": sweep.search.gpus: " in w for w in found), found


def test_a_prefill_chunk_that_leaves_no_memory_is_blamed_on_itself(tmp_path, capsys):
    """Before: named engine.mem_fraction, which the scenario did not set."""
    text = SMALL.replace("workload:", "engine: {chunked_prefill_tokens: 16777216}\nworkload:")
    one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "engine.chunked_prefill_tokens", "outgrows the GPU")


IDLE = [  # an engine section, the warned key, a word of the warning
    ("{ignore_rules: [spec_running_cap, spec_running_cap]}", "engine.ignore_rules", "listed twice"),
    ("{ignore_rules: [spec_running_cap_32]}", "engine.ignore_rules", "does not hold at sglang 0.5.12"),
    ("{speculative_overlap: true}", "engine.speculative_overlap", "changes nothing"),
]


@pytest.mark.parametrize("engine,key,word", IDLE, ids=[w for _, _, w in IDLE])
def test_engine_settings_that_change_nothing_warn(tmp_path, capsys, engine, key, word):
    text = SMALL.replace("workload:", f"engine: {engine}\nworkload:")  # SMALL runs design none
    found = warnings_of(capsys, ["cost", run(tmp_path, text)[1]])
    assert any(f": {key}: " in w and word in w for w in found), found


def test_search_and_recommend_say_which_load_they_do_not_replay(tmp_path, capsys):
    """Before: search dropped a trace (and a policy), and recommend a Poisson load, without a word."""
    trace = "arrival_s,input_len,output_len\n0,100,20\n0.5,200,30\n"
    text = BASE_DS.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                           "workload: {arrival: trace, trace: {path: t.csv}}\nsearch: {ep: [3]}")
    path = run(tmp_path, text, {"t.csv": trace})[1]
    assert cli.main(["search", path, "--gpus", "8", "--no-cache"]) == 2  # stopped by the bounds: that line alone
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": search.ep: " in err[0], err
    path = run(tmp_path, text.replace("search: {ep: [3]}", "search: {tp: [8], ep: [8], attention_dp: [1], "
                                      "concurrency: [1], requests_per_user: 1}"), {"t.csv": trace})[1]
    assert cli.main(["search", path, "--gpus", "8", "--no-cache", "--no-plot", "--out", str(tmp_path / "s")]) == 0
    assert ": workload.trace: search runs its own loads" in capsys.readouterr().err
    text = BASE_DS.replace("workload: {concurrency: 2, num_requests: 4,", "workload: {arrival: poisson, rate_per_s: 2, "
                           "num_requests: 4,")
    (tmp_path / "r").mkdir()
    path = run(tmp_path / "r", text)[1]
    assert cli.main(["recommend", path, "--batch", "1", "--out", str(tmp_path / "rec")]) == 0
    assert ": workload.arrival: recommend runs closed-loop batches" in capsys.readouterr().err


def test_verify_checks_the_shrunken_model_fits_before_its_loop(tmp_path, capsys):
    """Before: the real loop ran (88 s in the campaign) and then the simulation refused the
    memory, naming the simulated.yaml verify wrote and leaving its folder behind."""
    pytest.importorskip("torch")
    from pathlib import Path
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "verify" / "deepseek-v3-nextn-cpu.yaml"
    out = tmp_path / "v"
    one_line_error(capsys, ["verify", str(scenario), "--set", "verify.hidden_scale=1", "--set", "verify.iterations=1",
                            "--out", str(out)], "verify.hidden_scale", "does not fit this device")
    assert not out.exists()


@pytest.mark.parametrize("question, ok", [('"red \\e[31m text"', False), ('"bell \\a"', False),
                                          ('"two lines\\nand a\\ttab"', True), ("plain words", True)])
def test_a_question_with_control_characters_is_refused(tmp_path, capsys, question, ok):
    """The question is echoed on the terminal as it is: a YAML escape (\\e, \\a) put an ANSI
    sequence or a bell there; lines and tabs stay allowed."""
    argv = run(tmp_path, SMALL + f"question: {question}\n")
    if ok:
        assert cli.main(argv) == 0
    else:
        one_line_error(capsys, argv, "question", "control character")


def test_a_warning_about_a_key_set_on_the_command_line_names_set(tmp_path, capsys):
    """As an error does: the value came from --set, not from the file the warning used to name;
    the same warning about a value the file holds still names the file."""
    scenario = run(tmp_path, SMALL)[1]
    lines = warnings_of(capsys, ["cost", scenario, "--set", "engine.speculative_overlap=true"])
    assert any(line.startswith("mtpsim: warning: --set: engine.speculative_overlap: design none") for line in lines), lines
    errors._warned.clear()
    own = run(tmp_path, SMALL + "engine: {speculative_overlap: true}\n")[1]
    lines = warnings_of(capsys, ["cost", own])
    assert any(line.startswith(f"mtpsim: warning: {own}: engine.speculative_overlap") for line in lines), lines


def test_a_command_warning_about_a_key_set_on_the_command_line_names_set(tmp_path, capsys):
    """recommend warns of a policy it does not use after its own checks, outside the points'
    advice: a policy --set gave is named as the flag's too."""
    scenario = run(tmp_path, NEXTN)[1]
    lines = warnings_of(capsys, ["recommend", scenario, "--batch", "1", "--max-steps", "1", "--jobs", "1",
                                 "--out", str(tmp_path / "rec"), "--set", "speculative.policy={steps_by_batch: {1: 1}}"])
    assert any(line.startswith("mtpsim: warning: --set: speculative.policy") for line in lines), lines


def test_a_run_interrupted_while_claiming_its_folder_gives_it_back(tmp_path, monkeypatch):
    """A signal can land after the folder is made and before the claim is handed on (the
    terminated-run test above raced it under load): the folder this run made goes, claim and all,
    and a folder another run claims meanwhile is never touched."""
    from mtpsim import runfolder
    real_open = runfolder.os.open

    def interrupted(path, *args):
        runfolder.os.close(real_open(path, *args))
        raise KeyboardInterrupt  # just after the claim file is made
    monkeypatch.setattr(runfolder.os, "open", lambda path, *args: interrupted(path, *args))
    with pytest.raises(KeyboardInterrupt):
        runfolder.output_dir("x", str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()
    monkeypatch.undo()
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / runfolder.CLAIM).write_text("")
    with pytest.raises(ScenarioError):
        runfolder.output_dir("x", str(tmp_path / "theirs"))
    assert (tmp_path / "theirs" / runfolder.CLAIM).exists()


def test_stop_workers_ends_a_pool_mid_task():
    """interrupts.stop_workers, which run's and search's maps call when stopped or failed: the
    pool's busy workers end at once, so its shutdown does not wait out their tasks."""
    import time
    from concurrent.futures import ProcessPoolExecutor

    from mtpsim.interrupts import stop_workers
    pool = ProcessPoolExecutor(max_workers=2)
    futures = [pool.submit(time.sleep, 120) for _ in range(2)]
    while not all(f.running() for f in futures):
        time.sleep(0.05)
    started = time.monotonic()
    stop_workers(pool)
    pool.shutdown(wait=True, cancel_futures=True)
    assert time.monotonic() - started < 60  # a hang guard: ~0.1 s, the tasks 120 s
    assert all(f.done() for f in futures)
