"""Bad-input campaign 27 (b): commands, files and stops. Every subcommand's flags given odd values,
output paths of every kind (read-only, full, links, devices), run folders and profiles broken by
hand, the environment (HOME, locales, COLUMNS, closed stdout) and stops (SIGINT, SIGTERM).

Probed, and already fine: integer and list flags (0, -1, 1e30, NaN, full-width digits, 0x10, 5,000
characters), repeated and conflicting flags, every --out that cannot be written (a file, /dev/full,
a read-only or full filesystem: named, nothing left), scenarios and their files as FIFOs or
devices (no hang), `plot` on every kind of broken run folder, profiles' meta.yaml and tables broken
in 40 ways, the search cache's bad entries, MTPSIM_CATALOG and MTPSIM_CACHE_DIR set oddly, closed
and broken stdout, and stops of calibrate, single-process run and verify.

Found and fixed:
- Ctrl-C (SIGINT to the process group, as a terminal sends it) during `run --jobs 2`, `recommend`
  or `search` printed every worker's KeyboardInterrupt traceback, 37-131 lines, before `mtpsim:
  interrupted`: pool workers ignore SIGINT and leave the stop to the parent (interrupts.worker_pool);
- the same Ctrl-C, handed by the kernel to a thread other than the main one, went unheard until
  the running points finished (minutes; seen as a flaky CI failure): the main thread waits for a
  worker's point in slices of interrupts.POLL_S (first_finished);
- a profile table cut off inside its last row (`0.0157084` read as `0.015`) priced the run with
  the short number: mtpsim's own tables end each row with a line end, so one without is refused;
- an interrupted `verify` kept the points it had finished in a folder that looks whole and that the
  same --out then refused, without a word: the interrupt line says what the folder keeps;
- `calibrate --visits` took up to 2^20 (an estimate of 8,000 hours): bounded at 100, past which a
  shape gets more than its repeat budget;
- `--set workload.concurrency=3` beside `cost --batch` or recommend's batches was dropped without
  a word, where the same for --seeds is refused: refused alike;
- a read-only HOME (or HOME a file, MPLCONFIGDIR unwritable) let matplotlib print two lines of its
  own on stderr under --plot: mtpsim gives it a temporary config folder first (mpl.py).

Questionable, mended: SIGTERM exits 143 (128 + 15), not Ctrl-C's 130; a loop of links is called
one; `cost.profile` at something that is no profile names the key that gave it; verify's batch too
big to prefill blames `workload`, not the concurrency a --set input_len did not touch; README warns
that MTPSIM_CACHE_DIR holds pickles.

Noticed, and left alone: `plot` reads a summary.csv whose tps and per_user_tps were swapped by hand
(each value is in range); moe.csv's top_k or touched past its experts (an EP row's local experts
may be fewer than top_k); `run --out` writes through a link to an empty folder while `calibrate
--out` refuses links; a run that fails on a full disk keeps the tables it had written, unmarked;
calibrate's progress bar redraws into a CI log; MTPSIM_CALIBRATE_REPLACE checks file names, not
that meta.yaml is a profile's; AICONFIGURATOR_PYTHON is not read while aiconfigurator imports in
process; `--version extra` exits 0.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mtpsim import cli, interrupts
from mtpsim.costs.profile import PROFILES_DIR
from tests.test_bad_input import LLAMA, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
SMALL = LLAMA.replace("tp: 8", "tp: 1")


def _mtpsim(args: list[str], env: dict | None = None, drop: tuple[str, ...] = (), **kw) -> subprocess.Popen:
    """The command in a process of its own, with `env` over this one's and the `drop` variables unset."""
    environ = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.Popen([sys.executable, "-m", "mtpsim.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            **kw)


# ------------------------------------------------------------- 1. stops

def _worker_state() -> tuple:
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), os.environ.get("MTPSIM_TEST_INIT")


def test_pool_workers_leave_a_stop_to_the_parent():
    with interrupts.worker_pool(1, initializer=os.environ.__setitem__, initargs=("MTPSIM_TEST_INIT", "ran")) as pool:
        assert pool.submit(_worker_state).result(timeout=60) == (signal.SIG_IGN, signal.SIG_DFL, "ran")


def test_a_stop_handed_to_another_thread_ends_the_wait_for_a_worker():
    """Before: a pool map's main thread waited on its future with no deadline, and a Ctrl-C that the
    kernel handed to another thread (the pool's manager, a progress bar's monitor) raised nothing
    until the point finished: in CI, a sweep simulated on for minutes after its stop."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    pool = interrupts.worker_pool(1)
    try:
        task = pool.submit(time.sleep, 120)
        threading.Thread(target=lambda: (time.sleep(0.3), signal.pthread_kill(threading.get_ident(), signal.SIGINT))).start()
        with pytest.raises(KeyboardInterrupt):
            interrupts.first_finished([task])
        assert not task.done()  # raised while the point still ran, not once it was over
    finally:
        signal.signal(signal.SIGINT, before)
        interrupts.stop_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def test_ctrl_c_to_a_sweep_in_workers_is_one_line(tmp_path):
    """Before: every worker's KeyboardInterrupt traceback (37-131 lines) before `mtpsim: interrupted`."""
    text = SMALL.replace("num_requests: 4", "num_requests: 100000").replace("concurrency: 2", "concurrency: 64").replace(
        "output_len: 16", "output_len: 2000") + "sweep:\n  workload.concurrency: [64, 32]\n"
    path, out = run(tmp_path, text)[1], tmp_path / "r"
    proc = _mtpsim(["run", path, "--out", str(out), "--jobs", "2"], start_new_session=True)
    deadline = time.monotonic() + 60
    while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.exists() and proc.poll() is None, "the sweep never claimed its folder, or ended first"
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")  # Linux with CONFIG_PROC_CHILDREN
    if not children.exists():
        pytest.skip("this kernel does not list a process's children")
    while len(children.read_text().split()) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # until both workers run (a stop before the fork reaches the parent alone)
    assert proc.poll() is None, "the sweep ended before it could be stopped: give it more to simulate"
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()  # the long load's own up-front lines, then the stop's one
    assert proc.returncode == 130 and lines[-1] == "mtpsim: interrupted", err
    assert not [x for x in lines if "Traceback" in x or "KeyboardInterrupt" in x or x.startswith(" ")], err
    assert not out.exists()


def test_an_interrupted_command_says_what_its_folder_keeps(tmp_path):
    """Before: verify's finished points stayed in a folder that looks whole, without a word."""
    from mtpsim.runfolder import claimed
    out = tmp_path / "v"
    with pytest.raises(KeyboardInterrupt) as stop, claimed("v", str(out)) as folder:
        (folder / "00-point").mkdir()
        raise KeyboardInterrupt
    assert stop.value.args == (f"{out} keeps what was written before the stop, not marked complete",)
    # nothing written: the folder is given back, and the stop said as before
    with pytest.raises(KeyboardInterrupt) as stop, claimed("w", str(tmp_path / "w")):
        raise KeyboardInterrupt
    assert stop.value.args == () and not (tmp_path / "w").exists()


# ------------------------------------------------------------- 2. files and flags

def test_a_profile_table_cut_off_in_its_last_row_is_refused(tmp_path, capsys, monkeypatch):
    """Before: `...,0.0157084` cut to `...,0.015` priced the run with the short time."""
    monkeypatch.setenv("MTPSIM_CACHE_DIR", "off")
    profile = tmp_path / "prof"
    shutil.copytree(PROFILES_DIR / "cpu", profile)
    gemm = profile / "gemm.csv"
    gemm.write_bytes(gemm.read_bytes().rstrip(b"\n")[:-3])
    text = SMALL.replace("hardware: h200", "hardware: cpu") + f"cost: {{model: calibrated, profile: {profile}}}\n"
    one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "", "truncated: its last row is cut off")


def test_visits_past_the_repeat_budget_are_refused(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["calibrate", "--visits", "101"])
    assert done.value.code == 2 and "101 is outside 1..100" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["cost", "--batch", "2"], ["recommend", "--batch", "1", "--seeds", "1"],
                                  ["recommend", "--seeds", "1"]])
def test_a_set_the_batch_flag_replaces_is_refused(tmp_path, capsys, argv):
    """Before: the flag's batches ran and --set workload.concurrency=3 was dropped without a word."""
    path = run(tmp_path, SMALL)[1]
    one_line_error(capsys, [argv[0], path, *argv[1:], "--set", "workload.concurrency=3", "--out", str(tmp_path / "o")]
                   if argv[0] == "recommend" else [argv[0], path, *argv[1:], "--set", "workload.concurrency=3"],
                   "workload.concurrency", "drops it")
    assert cli.main(["cost", path, "--set", "workload.concurrency=3"]) == 0  # the batch cost prices, no flag beside it


def test_an_unwritable_matplotlib_config_prints_nothing_of_its_own(tmp_path):
    """Before: matplotlib's two lines on stderr (`mkdir -p failed ...`, `Matplotlib created a
    temporary cache directory ...`) beside the plots."""
    home = tmp_path / "home"
    home.write_text("a file, not a folder")
    proc = _mtpsim(["run", run(tmp_path, SMALL)[1], "--out", str(tmp_path / "o"), "--plot"],
                   {"HOME": str(home), "MTPSIM_CACHE_DIR": "off"}, drop=("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"))
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0 and "atplotlib" not in err, err
    assert list((tmp_path / "o").glob("*.png"))


def test_a_loop_of_links_is_called_one(tmp_path, capsys):
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    one_line_error(capsys, ["cost", str(tmp_path / "a.yaml")], "", "a loop of links")


def test_a_profile_that_is_no_folder_names_the_key_that_gave_it(tmp_path, capsys):
    text = SMALL.replace("hardware: h200", "hardware: cpu") + "cost: {model: calibrated, profile: /dev/null}\n"
    one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "cost.profile", "/dev/null: a profile is a folder")
