"""An eighth adversarial campaign (output folders, output flags, `plot`'s folders, seed sweeps,
long runs), by class. As in test_bad_input.py: bad input is one stderr line, exit status 2,
naming the file or flag and the key; a command that fails leaves no folder marked complete."""
from __future__ import annotations

import errno
import io
import sys

import pytest

from mtpsim import cli
from mtpsim.runfolder import CLAIM, COMPLETE
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

BASE9 = """\
name: base
model: llama-3.1-8b
hardware: h100-sxm
parallel: {tp: 1}
cost: {model: roofline}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.6, 0.5]}
workload: {arrival: closed, concurrency: 2, num_requests: 4, input_len: 128, output_len: 32}
"""


def _file(tmp_path, text: str = BASE9, name: str = "base.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------ a command that fails after writing

class _Stdout(io.StringIO):
    """A stdout whose writes fail as `error` says (a full device, a reader that left)."""

    def __init__(self, error: OSError):
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


COMMANDS = {"run": ["--jobs", "1"], "run --plot": ["--jobs", "1", "--plot"],
            "recommend": ["--batch", "1,2", "--seeds", "1", "--max-steps", "1", "--jobs", "1"],
            "search": ["--gpus", "1", "--concurrency", "1,2", "--max-steps", "1", "--no-cache", "--no-plot", "--jobs", "1"]}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_report_that_cannot_be_printed_leaves_no_complete_folder(tmp_path, capsys, monkeypatch, command):
    """Before: `run base.yaml --out X > /dev/full` exited 2 with X/ marked complete, every CSV in
    it: `plot` read it as a finished run (recommend and search alike). The report is printed
    within the claim now, and a failure there takes the marker back."""
    out = tmp_path / "X"
    monkeypatch.setattr(sys, "stdout", _Stdout(OSError(errno.ENOSPC, "No space left on device")))
    argv = [command.split()[0], _file(tmp_path), *COMMANDS[command], "--out", str(out)]
    line = one_line_error(capsys, argv, "", "cannot write")
    monkeypatch.undo()
    assert line == "mtpsim: error: <stdout>: cannot write: No space left on device"
    files = {p.name for p in out.iterdir()}
    assert COMPLETE not in files and CLAIM not in files, files
    if command.startswith("run"):
        one_line_error(capsys, ["plot", str(out)], "", f"no {COMPLETE}")


def test_a_reader_that_left_takes_nothing_from_a_finished_folder(tmp_path, monkeypatch):
    """`mtpsim run ... | head`: status 0, as before, and the folder stays complete."""
    out = tmp_path / "X"
    monkeypatch.setattr(sys, "stdout", _Stdout(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert cli.main(["run", _file(tmp_path), "--jobs", "1", "--out", str(out)]) == 0
    monkeypatch.undo()
    assert (out / COMPLETE).is_file()


# ------------------------------------------------------------------ output paths of one line

OUTPUT_FLAGS = [(["run"], "--out"), (["recommend"], "--out"), (["search", "--gpus", "1"], "--out"),
                (["search", "--gpus", "1"], "--cache"), (["verify"], "--out"), (["calibrate"], "--out"),
                (["calibrate", "--from", "aiconfigurator"], "--out")]


@pytest.mark.parametrize("value", ["a\nb", "a\tb", "a\rb", "a\x1b[31mb", "a\x85b", "a\u2028b", "a\x7fb"],
                         ids=["newline", "tab", "return", "escape", "NEL", "line-separator", "DEL"])
@pytest.mark.parametrize("argv,flag", OUTPUT_FLAGS, ids=[" ".join([*a[:1], *a[2:3], f]) for a, f in OUTPUT_FLAGS])
def test_an_output_path_with_a_control_character_is_refused(tmp_path, capsys, monkeypatch, argv, flag, value):
    """Before: `run --out $'a\\nb'` made the folder and printed a two-line `wrote`; `calibrate
    --out $'pr\\nof'` started timing. Every flag that names a path a command writes is one line."""
    from tests.test_bad_input_2 import parse_error
    monkeypatch.chdir(tmp_path)  # whatever would be made, is made here
    scenario = [] if argv[0] == "calibrate" else [_file(tmp_path)]
    line = parse_error(capsys, [argv[0], *scenario, *argv[1:], flag, value])
    assert f"argument {flag}: " in line and "holds a control character" in line, line
    assert {p.name for p in tmp_path.iterdir()} == ({"base.yaml"} if scenario else set())


def test_an_output_path_of_other_characters_is_written(tmp_path, capsys):
    """Spaces, accents and non-breaking spaces are a path's own: written as given."""
    out = tmp_path / "my run é\u00a0x"
    assert cli.main(["run", _file(tmp_path), "--jobs", "1", "--out", str(out)]) == 0
    assert (out / COMPLETE).is_file() and f"wrote {out}/" in capsys.readouterr().out


# ------------------------------------------------------------------ plot: one run's tables

OTHER = BASE9.replace("name: base", "name: other").replace("steps: 3", "steps: 2").replace("num_requests: 4", "num_requests: 6")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run of BASE9, the same scenario on another seed, a run of another scenario, and both
    scenarios over two seeds (their folders: base, seed5, other, seeds, other-seeds)."""
    root = tmp_path_factory.mktemp("runs")
    for name, text, extra in (("base", BASE9, []), ("seed5", BASE9, ["--set", "seed=5"]), ("other", OTHER, []),
                              ("seeds", BASE9, ["--seeds", "2"]), ("other-seeds", OTHER, ["--seeds", "2"])):
        assert cli.main(["run", _file(root, text, f"{name}.yaml"), "--jobs", "1", "--out", str(root / name), *extra]) == 0
    return root


MIXED = [  # (the folder, the file copied into it from another, the word the reason holds)
    ("base", "other", "requests.csv", "point: 6 rows for point 0, and summary.csv says that run kept 4"),
    ("base", "other", "summary.csv", "name: 'other' at point 0, and scenario.resolved.yaml names it 'base'"),
    ("base", "other", "iterations.csv", "point: "),
    ("base", "seed5", "requests.csv", "first_token_s: point 0's requests wait"),
    ("base", "seed5", "iterations.csv", "point: "),
    ("base", "seeds", "requests.csv", "seed: has a seed column, and summary.csv's runs have none"),
    ("seeds", "base", "accept_counts.csv", "seed: has no seed column"),
    ("base", "seeds", "summary.csv", "seed: has no seed column"),
    ("seeds", "other-seeds", "summary_ci.csv", "name: 'other' at point 0"),
]


@pytest.mark.parametrize("folder,source,name,says", MIXED, ids=[f"{n} from {s} into {f}" for f, s, n, _ in MIXED])
def test_plot_refuses_tables_from_different_runs(tmp_path, capsys, runs, folder, source, name, says):
    """Before: `plot` drew a folder whose requests.csv or summary.csv came from a run of another
    scenario (docs/limits.md: CSVs `from elsewhere` are refused). The tables must agree with each
    other and with the scenario: point runs, names, rows kept, and the requests' mean TTFT."""
    import shutil
    mixed = tmp_path / "mixed"
    shutil.copytree(runs / folder, mixed)
    shutil.copy(runs / source / name, mixed / name)
    line = one_line_error(capsys, ["plot", str(mixed)], "", "different runs")
    assert "mixed/" in line and says in line, line
    assert not (mixed / "speedup.png").exists()


@pytest.mark.parametrize("folder", ["base", "seed5", "other", "seeds"])
def test_plot_draws_each_whole_run(tmp_path, capsys, runs, folder):
    import shutil
    shutil.copytree(runs / folder, tmp_path / folder)
    assert cli.main(["plot", str(tmp_path / folder)]) == 0
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ sweeping seeds

def test_a_seeds_sweep_says_what_it_ran_and_shares_its_baselines(tmp_path, capsys):
    """Before: `sweep: {seeds: [1, 3]}` printed `2 point(s) x 2 seeds` (runs / points) and wrote the
    baseline's seed-0 row twice (each seeds value its own comparison group, each running `none`
    again). A baseline run is one replicate on its seed: the points share theirs."""
    import pandas as pd
    out = tmp_path / "o"
    assert cli.main(["run", _file(tmp_path), "--jobs", "1", "--set", "sweep={seeds: [1, 3]}", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 point(s) x 1 or 3 seeds in" in text
    summary = pd.read_csv(out / "summary.csv")
    runs = list(zip(summary.point, summary.seed))
    assert runs == [(0, 0), (1, 0), (1, 1), (1, 2), (-1, 0), (-1, 1), (-1, 2)]
    assert set(summary.baseline) == {0} and list(summary.seeds[summary.point < 0]) == [3, 3, 3]
    ci = pd.read_csv(out / "summary_ci.csv")
    assert list(ci.seeds) == [1, 3, 3]
    assert cli.main(["plot", str(out)]) == 0


def test_the_seeds_flag_over_a_seeds_sweep_wins_as_set_does_and_says_so(tmp_path, capsys):
    """Before: `--seeds 2` over `sweep: {seeds: [1, 3]}` ran two identical points of two seeds
    without a word. As `--set seeds=2` does, the flag stops the key being swept: one point, one
    warning naming the swept key."""
    scenario = _file(tmp_path, BASE9 + "sweep: {seeds: [1, 3], speculative.steps: [1, 2]}\n")
    lines = warnings_of(capsys, ["run", scenario, "--jobs", "1", "--seeds", "2", "--out", str(tmp_path / "o")])
    assert lines == [f"mtpsim: warning: {scenario}: sweep.seeds: --seeds 2 sets seeds on every point, over the sweep: "
                     "the swept values 1, 3 are not run"]
    import pandas as pd
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert list(zip(summary.point, summary.seed)) == [(0, 0), (0, 1), (1, 0), (1, 1), (-1, 0), (-1, 1)]
    assert "seeds" not in summary  # no swept column: every point runs the flag's seeds


def test_a_bad_seeds_flag_is_the_one_line_over_a_seeds_sweep(tmp_path, capsys):
    scenario = _file(tmp_path, BASE9 + "sweep: {seeds: [1, 3]}\n")
    one_line_error(capsys, ["run", scenario, "--seeds", "many", "--out", str(tmp_path / "o")], "", "--seeds: 'many'")
    one_line_error(capsys, ["run", scenario, "--seeds", "3", "--set", f"seed={2**63 - 2}", "--out", str(tmp_path / "o")],
                   "", "--seeds: 3 replicates from seed")
    assert not (tmp_path / "o").exists()


def test_replicates_up_to_the_largest_seed_run(tmp_path, capsys):
    """Before: `--seeds 3` from seed 2**63 - 3 (its last replicate the largest seed) was refused
    at the file's `seeds` key: each replicate's baseline was validated as running 3 seeds itself."""
    out = tmp_path / "o"
    assert cli.main(["run", _file(tmp_path), "--jobs", "1", "--seeds", "3", "--set", f"seed={2**63 - 3}",
                     "--out", str(out)]) == 0
    assert "1 point(s) x 3 seeds" in capsys.readouterr().out


# ------------------------------------------------------------------ a long run says so first

def test_a_run_that_takes_minutes_says_so_before_it_runs(tmp_path, capsys, monkeypatch):
    """Before: `run --set workload.concurrency=64 --set workload.num_requests=1000000` ran for
    minutes without a word (its progress line starts after 60 s); recommend and search warned.
    One rule for all three (heaviness.py `heavy`): requests, or decode iterations (requests x
    output tokens / concurrency). The thresholds are lowered here to keep the test short."""
    from mtpsim import heaviness
    monkeypatch.setattr(heaviness, "HEAVY_POINT_REQUESTS", 8)
    argv = ["run", _file(tmp_path), "--jobs", "1", "--set", "workload.num_requests=8"]
    assert warnings_of(capsys, [*argv, "--out", str(tmp_path / "a")]) == [
        "mtpsim: warning: --set: workload.num_requests: a run of this load simulates 8 requests (about 128 decode "
        "iterations), which takes minutes per run (progress is reported after the first minute): fewer requests would "
        "do for steady-state figures"]
    monkeypatch.setattr(heaviness, "HEAVY_POINT_REQUESTS", 100_000)
    monkeypatch.setattr(heaviness, "HEAVY_POINT_ITERATIONS", 64)  # 4 requests x 32 tokens / 2 at a time
    sweep = ["--set", "sweep={workload.concurrency: [4, 2]}"]
    lines = warnings_of(capsys, ["run", _file(tmp_path), "--jobs", "1", *sweep, "--out", str(tmp_path / "b")])
    assert lines == [f"mtpsim: warning: {tmp_path / 'base.yaml'}: workload.num_requests: point 1: a run of this load "
                     "simulates 4 requests (about 64 decode iterations), which takes minutes per run (progress is "
                     "reported after the first minute): fewer requests would do for steady-state figures"]
    assert warnings_of(capsys, ["run", _file(tmp_path), "--jobs", "1", "--set", "workload.concurrency=4",
                                "--out", str(tmp_path / "c")]) == []


def test_recommend_counts_decode_iterations_too(tmp_path, capsys, monkeypatch):
    """The same rule: a batch of 1 decoding every token of every request one at a time is as long
    as many requests (before: only the request count was weighed)."""
    from mtpsim import heaviness
    monkeypatch.setattr(heaviness, "HEAVY_POINT_ITERATIONS", 64)  # batch 1: 2 requests x 32 tokens
    lines = warnings_of(capsys, ["recommend", _file(tmp_path), "--batch", "1", "--seeds", "1", "--max-steps", "1",
                                 "--jobs", "1", "--out", str(tmp_path / "o")])
    assert len(lines) == 1 and lines[0].endswith(": workload.num_requests: a point of this load simulates 2 requests "
                                                 "(about 64 decode iterations), which takes minutes per point (progress "
                                                 "is reported as points finish): fewer requests per user or rate would "
                                                 "do for a ranking"), lines  # the file's, not --batch (campaign 41, H8)


def test_a_profile_whose_wrote_line_cannot_be_printed_replaces_nothing(tmp_path, capsys, monkeypatch):
    """calibrate (and --from aiconfigurator) print their `wrote` line within outputs.staged, which
    flushes stdout before the rename: before, a full stdout failed the command after the new
    profile had replaced the old one."""
    from mtpsim.outputs import staged
    out = tmp_path / "profile"
    out.mkdir()
    (out / "meta.yaml").write_text("old: true\n")
    monkeypatch.setattr(sys, "stdout", _Stdout(OSError(errno.ENOSPC, "No space left on device")))
    with pytest.raises(OSError), staged(out) as tmp:
        (tmp / "meta.yaml").write_text("new: true\n")
        print(f"wrote {out}")
    monkeypatch.undo()
    assert (out / "meta.yaml").read_text() == "old: true\n" and not (tmp_path / "profile.partial").exists()
