"""`mtpsim search`'s bad input around its cache and output folder: a cache entry that is not
exactly a row the search wrote is a miss (run again, overwritten), never a traceback or a wrong
frontier row; a --cache that cannot be a folder, and a busy or bad --out, are one line (exit 2)
before any point runs; an entry that cannot be stored is one warning; a search that fails
leaves no folder marked complete."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim.runfolder import CLAIM, COMPLETE
from mtpsim.search import execute, rowshape
from tests.test_bad_input import one_line_error
from tests.test_search import DIS, SMALL


def argv(tmp_path: Path, *extra: str, out: str = "out", cache: str = "cache", text: str = SMALL,
         gpus: str = "8") -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return ["search", str(path), "--gpus", gpus, "--out", str(tmp_path / out), "--cache", str(tmp_path / cache),
            "--jobs", "1", "--no-plot", *extra]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """One search of SMALL's six points: its cache folder and its frontier.csv's text."""
    tmp = tmp_path_factory.mktemp("first")
    assert cli.main(argv(tmp)) == 0
    return tmp / "cache", (tmp / "out" / "frontier.csv").read_text()


def cached(first, tmp_path: Path) -> list[Path]:
    """A copy of the first search's cache in tmp_path/cache: its entries."""
    shutil.copytree(first[0], tmp_path / "cache")
    entries = sorted((tmp_path / "cache").glob("*.json"))
    assert len(entries) == 6
    return entries


def points_line(capsys) -> str:
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if " points (" in line)


def checksum(row: dict) -> str:
    return execute._checksum(row)


# ---------------------------------------------------------------------- cache entries

def edit_row(change):
    """An entry whose row was edited by hand (its checksum no longer matches)."""
    def apply(entry: Path) -> None:
        stored = json.loads(entry.read_text())
        change(stored["row"])
        entry.write_text(json.dumps(stored))
    return apply


def forged(change):
    """An entry whose row was edited and its checksum recomputed: only the row's shape can tell."""
    def apply(entry: Path) -> None:
        stored = json.loads(entry.read_text())
        change(stored["row"])
        stored["sha256"] = checksum(stored["row"])
        entry.write_text(json.dumps(stored))
    return apply


def set_key(key, value):
    return lambda row: row.__setitem__(key, value)


def whole(change):
    """The entry as a whole replaced: change(stored) -> what to write."""
    def apply(entry: Path) -> None:
        entry.write_text(json.dumps(change(json.loads(entry.read_text()))))
    return apply


BAD_ENTRIES = {
    "a list": lambda e: e.write_text("[1, 2]"),
    "a number": lambda e: e.write_text("7"),
    "null": lambda e: e.write_text("null"),
    "truncated": lambda e: e.write_text(e.read_text()[:100]),
    "empty": lambda e: e.write_text(""),
    "binary": lambda e: e.write_bytes(b"\xff\xfe\x00\x01" * 64),
    "nested too deep": lambda e: e.write_text("[" * 100_000 + "]" * 100_000),
    "too large": lambda e: e.write_text(json.dumps({"x": "a" * (2 << 20)})),
    "a bare row (the old format)": whole(lambda s: s["row"]),
    "another point's entry": whole(lambda s: {**s, "key": "0" * 64}),
    "another format": whole(lambda s: {**s, "format": 2}),
    "an extra envelope key": whole(lambda s: {**s, "note": 1}),
    "row not a mapping": whole(lambda s: {**s, "row": [1, 2], "sha256": checksum([1, 2])}),
    "tps text": edit_row(set_key("tps", "abc")),
    "tps 1e308": edit_row(set_key("tps", 1e308)),
    "tps NaN": edit_row(set_key("tps", float("nan"))),
    "tps -5": edit_row(set_key("tps", -5.0)),
    "tps deleted": edit_row(lambda row: row.pop("tps")),
    "tps plausible": edit_row(lambda row: row.__setitem__("tps", row["tps"] * 1.5)),
    "forged tps text": forged(set_key("tps", "abc")),
    "forged tps NaN": forged(set_key("tps", float("nan"))),
    "forged tps infinite": forged(set_key("tps", float("inf"))),
    "forged tps -5": forged(set_key("tps", -5.0)),
    "forged tps null": forged(set_key("tps", None)),
    "forged tps deleted": forged(lambda row: row.pop("tps")),
    "forged extra key": forged(set_key("bonus", 1.0)),
    "forged steps a bool": forged(set_key("steps", True)),
    "forged steps a float": forged(set_key("steps", 1.0)),
    "forged layout a number": forged(set_key("layout", 8)),
    "forged share over one": forged(set_key("verify_share", 1.5)),
    "forged a load twice": forged(set_key("rate_per_s", 2.0)),
    "forged tpot negative": forged(set_key("tpot_p50_s", -0.01)),
}


@pytest.mark.parametrize("name", list(BAD_ENTRIES))
def test_a_cache_entry_that_is_not_a_row_the_search_wrote_is_run_again_and_overwritten(first, tmp_path, capsys, name):
    entry = cached(first, tmp_path)[0]
    BAD_ENTRIES[name](entry)
    assert cli.main(argv(tmp_path)) == 0, capsys.readouterr().err
    assert "6 points (1 run, 5 cached)" in points_line(capsys)
    assert (tmp_path / "out" / "frontier.csv").read_text() == first[1]  # the same rows as a fresh search
    assert execute.Cache(tmp_path / "cache").get(entry.stem) is not None  # overwritten with the fresh row
    assert not list((tmp_path / "cache").glob(".*.tmp"))


def test_an_untouched_cache_is_used_whole(first, tmp_path, capsys):
    cached(first, tmp_path)
    assert cli.main(argv(tmp_path)) == 0
    assert "6 points (0 run, 6 cached)" in points_line(capsys)
    assert (tmp_path / "out" / "frontier.csv").read_text() == first[1]


@pytest.mark.parametrize("text, extra, gpus", [
    (SMALL, ["--rates", "1,4"], "8"),  # open loop: a rate, no concurrency
    (DIS.replace("cost:", "engine: {prefix_cache: {block_tokens: 16}}\ncost:")
        .replace("input_len: 1024", "input_len: 1024, shared_prefix: {tokens: 512}"), ["--disagg"], "2"),
])
def test_every_kind_of_fresh_row_has_the_shape_the_cache_accepts(tmp_path, capsys, text, extra, gpus):
    """Open-loop, disaggregated and prefix-cached rows (rowshape's optional columns) are cached
    whole: a second search runs nothing."""
    assert cli.main(argv(tmp_path, *extra, text=text, gpus=gpus)) == 0
    assert " 0 cached)" in points_line(capsys)
    rows = [json.loads(p.read_text())["row"] for p in (tmp_path / "cache").glob("*.json")]
    assert rows and all(rowshape.problem(r, "pools" in r) is None for r in rows)
    if "--disagg" in extra:
        assert any("pools" in r for r in rows) and all("prefix_hit_rate" in r for r in rows)
    assert cli.main(argv(tmp_path, *extra, text=text, gpus=gpus, out="out2")) == 0
    assert "(0 run, " in points_line(capsys)


# ---------------------------------------------------------------------- --cache

def not_run(monkeypatch):
    """Fail the test if any point is simulated."""
    def refuse(*args, **kwargs):
        raise AssertionError("a point ran before the bad input was refused")
    monkeypatch.setattr(execute, "run_search_points", refuse)


@pytest.mark.parametrize("make, word", [
    (lambda p: p.write_text("x"), "exists and is not a folder"),
    (lambda p: p.parent.joinpath("file").write_text("x"), "not a directory"),  # --cache file/cache
])
def test_a_cache_that_cannot_be_a_folder_is_one_line_before_anything_runs(tmp_path, capsys, monkeypatch, make, word):
    not_run(monkeypatch)
    cache = tmp_path / "cache"
    make(cache)
    args = argv(tmp_path, cache="cache" if cache.exists() else "file/cache")
    line = one_line_error(capsys, args, "", word)
    assert line.startswith("mtpsim: error: --cache: ") and ".tmp" not in line
    assert not (tmp_path / "out").exists()  # nothing claimed
    assert (tmp_path / "file" if not cache.exists() else cache).read_text() == "x"  # nothing overwritten


def test_dev_null_as_the_cache_is_one_line(tmp_path, capsys, monkeypatch):
    not_run(monkeypatch)
    args = argv(tmp_path)
    args[args.index("--cache") + 1] = "/dev/null"
    line = one_line_error(capsys, args, "", "exists and is not a folder")
    assert line.startswith("mtpsim: error: --cache: /dev/null")


@pytest.mark.parametrize("name", ["notes.txt", ".bashrc", "a" * 64 + ".yaml", "subfolder"])
def test_a_folder_of_the_users_own_files_is_no_cache(tmp_path, capsys, monkeypatch, name):
    """`--cache ~` or `--cache /etc` used to scatter hash-named entries among the user's files
    (nothing overwritten, but nothing of theirs either): a folder holding anything but entries is
    refused before anything runs, and left as it was."""
    not_run(monkeypatch)
    home = tmp_path / "home"
    home.mkdir()
    (home / name).mkdir() if name == "subfolder" else (home / name).write_text("mine")
    line = one_line_error(capsys, argv(tmp_path, cache="home"), "", "no cache entry")
    assert line.startswith("mtpsim: error: --cache: ") and name in line
    assert [p.name for p in home.iterdir()] == [name]


def test_the_cache_cannot_be_the_output_folder(tmp_path, capsys, monkeypatch):
    not_run(monkeypatch)
    one_line_error(capsys, argv(tmp_path, cache="out"), "", "--out folder")


def test_an_entry_that_is_a_folder_is_a_miss_said_once_and_the_search_goes_on(first, tmp_path, capsys):
    entries = cached(first, tmp_path)
    for entry in entries[:2]:  # two points that cannot be stored: one warning
        entry.unlink()
        entry.mkdir()
    assert cli.main(argv(tmp_path)) == 0
    captured = capsys.readouterr()
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 1, captured.err
    assert any(warnings[0].startswith(f"mtpsim: warning: {e}: ") for e in entries[:2]) and "is a folder" in warnings[0]
    assert ".tmp" not in warnings[0]
    assert "6 points (2 run, 4 cached)" in captured.out
    assert (tmp_path / "out" / "frontier.csv").read_text() == first[1]
    assert all(e.is_dir() for e in entries[:2]) and not list((tmp_path / "cache").glob(".*.tmp"))


# ---------------------------------------------------------------------- --out

@pytest.mark.parametrize("make, where, word", [
    (lambda p: (p / "out").mkdir() or (p / "out" / "keep.txt").write_text("mine"), "out", "not empty"),
    (lambda p: (p / "out").write_text("mine"), "out", "not a folder"),
    (lambda p: (p / "afile").write_text("mine"), "afile/out", "cannot create"),
])
def test_a_busy_or_bad_out_is_refused_before_any_point_runs(tmp_path, capsys, monkeypatch, make, where, word):
    not_run(monkeypatch)
    make(tmp_path)
    one_line_error(capsys, argv(tmp_path, out=where), "", word)
    mine = tmp_path / "out" / "keep.txt" if (tmp_path / "out").is_dir() else tmp_path / where.split("/")[0]
    assert mine.read_text() == "mine"  # nothing overwritten


def test_a_finished_search_marks_its_folder_complete(first, tmp_path, capsys):
    cached(first, tmp_path)
    assert cli.main(argv(tmp_path)) == 0
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"frontier.csv", "finalists.csv", "launch.txt", COMPLETE} <= files


def test_a_search_that_fails_midway_leaves_no_complete_folder_and_the_out_can_be_used_again(tmp_path, capsys,
                                                                                              monkeypatch):
    from mtpsim.search import worker
    calls = []

    def fail_second(s):
        calls.append(s)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return worker.simulate_point(s)
    monkeypatch.setattr(execute, "simulate_point", fail_second)
    assert cli.main(argv(tmp_path)) == 130
    assert len(calls) == 2
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())  # the claim given back, nothing half-written
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1  # the point that finished is cached
    monkeypatch.undo()
    capsys.readouterr()
    assert cli.main(argv(tmp_path)) == 0  # the same --out, now whole
    assert "6 points (5 run, 1 cached)" in points_line(capsys)
    assert (out / COMPLETE).is_file()


def test_unmet_targets_write_the_frontier_but_no_complete_folder(first, tmp_path, capsys):
    cached(first, tmp_path)
    one_line_error(capsys, argv(tmp_path, "--ttft", "p99:1ms"), "", "--ttft")
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert "frontier.csv" in files and COMPLETE not in files and CLAIM not in files


@pytest.mark.parametrize("text", ["١٢", "1_000", "inf", "nan", "2,abc", "", "0x10"])
def test_rates_are_decimal_numbers(text):
    """float() reads Arabic-Indic digits, underscores, inf and nan; --rates took them as rates."""
    from mtpsim.errors import ScenarioError
    from mtpsim.search.command import parse_rates
    with pytest.raises(ScenarioError, match="--rates"):
        parse_rates(text)
    assert parse_rates("0.5,2,1e2") == [0.5, 2.0, 100.0]


@pytest.mark.parametrize("text", ["p99:1e309", "1e-320", "p50:0.0001ms"])
def test_a_latency_target_past_any_pass_is_refused(text):
    """1e309 read as infinity, 1e-320 ms as 0: both were taken as targets."""
    from mtpsim.errors import ScenarioError
    from mtpsim.search.targets import parse_target
    with pytest.raises(ScenarioError, match="outside"):
        parse_target(text, "ttft")
    assert parse_target("p99:2s", "ttft").value == 2.0
