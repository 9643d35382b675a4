"""A third adversarial campaign of this series (about 400 inputs: YAML structure and tags, numbers
at the edges, names, every section's keys, config.json files, acceptance histograms, traces in
each format and gzipped, profile folders, run folders for `mtpsim plot`, sweeps, --set
expressions, flags, output paths and stdout; the inputs and what each did are kept out of the
repo), one test per class found failing. Each test's docstring says what happened before the fix."""
from __future__ import annotations

import gzip
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtpsim import cli, textfiles
from mtpsim.errors import ScenarioError
from mtpsim.tracefiles import formats as trace_formats
from tests.test_bad_input import BASE, PROFILED, cpu_profile, one_line_error, run
from tests.test_bad_input_2 import parse_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

HIST = BASE.replace("per_depth: [0.8, 0.7]", "histogram: h.csv")
TRACE = BASE.replace("{concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}", "{arrival: trace, trace: %s}")
WIDE = 100_000  # fields in one row: pandas took ~1.5 s per 100k of them, so a 5 MB row of commas ran for minutes
CSV_HEADER = "arrival_s,input_len,output_len\n"
MOONCAKE_ROW = '{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [0]}\n'

LONG_ROWS = [  # (id, scenario, files, the file named)
    ("histogram-wide-first-row", HIST, {"h.csv": "accepted,count\n0,5" + "," * WIDE + "\n1,5\n"}, "h.csv"),
    ("histogram-wide-later-row", HIST, {"h.csv": "accepted,count\n0,5\n1,5\n2,5" + "," * WIDE + "\n"}, "h.csv"),
    ("histogram-one-endless-line", HIST, {"h.csv": "accepted,count\n0,5\n" + "9" * WIDE}, "h.csv"),
    ("trace-wide-first-row", TRACE % "t.csv", {"t.csv": CSV_HEADER + "0,10,10" + "," * WIDE + "\n"}, "t.csv"),
    ("trace-wide-row-after-good-ones", TRACE % "t.csv",
     {"t.csv": CSV_HEADER + "0,10,10\n" * 3 + "1,10,10" + "," * WIDE + "\n"}, "t.csv"),
    ("trace-crlf-wide-row", TRACE % "t.csv", {"t.csv": (CSV_HEADER + "0,10,10" + "," * WIDE + "\n").replace("\n", "\r\n")},
     "t.csv"),
    # a small .gz that gunzips to one endless line: held whole in memory before the parser saw a row
    ("trace-gz-endless-line", TRACE % "t.csv.gz", {"t.csv.gz": gzip.compress((CSV_HEADER + "0,10,10\n").encode() +
                                                                            b"#" * 2**20)}, "t.csv.gz"),
    ("trace-header-endless", TRACE % "t.csv",
     {"t.csv": "arrival_s,input_len,output_len" + "".join(f",x{i}" for i in range(WIDE)) + "\n0,1,1\n"}, "t.csv"),
]


@pytest.mark.parametrize("text,files,named", [c[1:] for c in LONG_ROWS], ids=[c[0] for c in LONG_ROWS])
def test_a_row_far_longer_than_any_table_holds_is_one_line_at_once(tmp_path, capsys, text, files, named):
    """Before: a row of a hundred thousand fields (a run of commas) was handed to pandas, which
    spends ~15 us a field dropping what the header does not name: a 5 MB row of a trace, an
    acceptance histogram or a profile table ran for minutes (a hang), and a gzipped trace of one
    endless line was read whole into memory; an endless header or cell was a refusal about
    columns. Now every CSV row is at most textfiles.MAX_LINE_BYTES, checked as the bytes come."""
    start = time.monotonic()
    line = one_line_error(capsys, run(tmp_path, text, files), "", "longer than")
    assert named in line and "line " in line
    assert time.monotonic() - start < 60  # a hang guard (it ran for minutes), not a speed target


def test_a_profile_table_row_far_too_long_is_one_line(tmp_path, capsys, monkeypatch):
    """Before: the same row in a profile folder's gemm.csv ran for minutes inside the loader."""
    monkeypatch.chdir(tmp_path)
    gemm = (textfiles.Path(__file__).parents[1] / "mtpsim/data/profiles/cpu/gemm.csv").read_text().splitlines()
    gemm[1] += "," * WIDE
    files = cpu_profile(tmp_path, gemm__csv="\n".join(gemm) + "\n")
    line = one_line_error(capsys, run(tmp_path, PROFILED, files), "", "longer than")
    assert "gemm.csv" in line and "line 2 " in line


def test_a_json_lines_trace_row_past_its_own_limit_is_one_line(tmp_path, capsys, monkeypatch):
    """Before: a JSON-lines trace was read a line at a time, each line whole: one endless line
    (a .gz of a few KB can hold gigabytes) went into memory before json saw it. Its rows may be
    long (hash_ids lists a block id per 512 prompt tokens), so their limit is their own."""
    monkeypatch.setattr(trace_formats, "JSON_LINE_BYTES", 4096)
    monkeypatch.setattr("mtpsim.tracefiles.readers.JSON_LINE_BYTES", 4096)
    text = TRACE % "t.jsonl"
    long_row = MOONCAKE_ROW.replace("[0]", "[" + ", ".join(["0"] * 2000) + "]")
    line = one_line_error(capsys, run(tmp_path, text, {"t.jsonl": MOONCAKE_ROW + long_row}), "", "longer than 4,096")
    assert "t.jsonl" in line and "line 2 " in line


GOOD_TRACES = [  # line endings and marks the readers took before the limit, and still do
    ("lf", CSV_HEADER + "0,10,10\n1,10,10\n"),
    ("crlf", (CSV_HEADER + "0,10,10\n1,10,10\n").replace("\n", "\r\n")),
    ("lone-cr", (CSV_HEADER + "0,10,10\n1,10,10\n").replace("\n", "\r")),
    ("bom", "\ufeff" + CSV_HEADER + "0,10,10\n1,10,10\n"),
    ("blank-lines", CSV_HEADER + "0,10,10\n\n\n1,10,10\n"),
    ("many-rows", CSV_HEADER + "".join(f"{i / 100},10,10\n" for i in range(30_000))),
]


@pytest.mark.parametrize("content", [c[1] for c in GOOD_TRACES], ids=[c[0] for c in GOOD_TRACES])
def test_traces_within_the_limit_still_replay(tmp_path, capsys, content):
    from mtpsim import cli
    text = (TRACE % "t.csv").replace("trace: t.csv", "trace: {path: t.csv, max_requests: 4}")
    assert cli.main(run(tmp_path, text, {"t.csv": content})) == 0, capsys.readouterr().err


LINE = st.text(alphabet="ab,", max_size=40)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINE, min_size=1, max_size=30), ending=st.sampled_from(["\n", "\r\n", "\r"]),
       limit=st.integers(1, 30), step=st.integers(1, 50))
def test_the_line_limit_finds_the_first_long_line_however_the_bytes_are_cut(lines, ending, limit, step):
    """LineLimit fed in pieces of any size (a stream's reads cut lines and \\r\\n anywhere) refuses
    exactly when a line is longer than the limit, and names the first such line."""
    data = ending.join(lines).encode()
    check = textfiles.LineLimit("f.csv", limit)
    long = [i for i, text in enumerate(lines) if len(text) > limit]
    try:
        for start in range(0, len(data), step):
            check.feed(data[start:start + step])
    except ScenarioError as exc:
        assert long, "refused though no line is long"
        assert f"line {long[0] + 1:,} " in exc.reason
    else:
        assert not long


SWEPT = BASE + "sweep: {workload.input_len: [" + ", ".join(str(64 + i) for i in range(25)) + "]}\n"
RUN_COUNTS = [  # (id, scenario, extra argv, the key or flag blamed)
    ("flag", SWEPT, ["--seeds", "1000"], "--seeds"),
    ("file", SWEPT + "seeds: 1000\n", [], "s.yaml: seeds"),
    ("set", SWEPT, ["--set", "seeds=900"], "--set: seeds"),
    ("swept-seeds", BASE + "sweep: {seeds: [" + ", ".join(str(1000 - i) for i in range(21)) + "]}\n", [], "sweep.seeds"),
]


@pytest.mark.parametrize("text,extra,blamed", [c[1:] for c in RUN_COUNTS], ids=[c[0] for c in RUN_COUNTS])
def test_points_times_seeds_past_the_limit_is_one_line_before_anything_runs(tmp_path, capsys, text, extra, blamed):
    """Before: the sweep's points (at most 10,000) and the seeds (at most 1,000) were each
    limited, their product not: 1,024 points at --seeds 1000 started a million runs, days of
    simulation without a word. Now a run makes at most limits.MAX_POINT_RUNS point runs."""
    start = time.monotonic()
    line = one_line_error(capsys, run(tmp_path, text) + extra, "", "over the limit of 20,000")
    assert f"{blamed}: " in line
    assert not (tmp_path / "out").exists()
    assert time.monotonic() - start < 60  # a hang guard (days of runs), not a speed target


def _blocker(tmp_path, kind: str) -> str:
    """A path under `blk`, which is a link to nothing or a file."""
    if kind == "dangling-link":
        (tmp_path / "blk").symlink_to(tmp_path / "nowhere")
    else:
        (tmp_path / "blk").write_text("x")
    return str(tmp_path / "blk" / "sub")


OUTPUTS = [  # (id, command, its flags given the blocked path)
    ("run-out", "run", lambda p: ["--out", p]),
    ("run-out-deeper", "run", lambda p: ["--out", p + "/deeper"]),
    ("recommend-out", "recommend", lambda p: ["--out", p]),
    ("search-cache", "search", lambda p: ["--cache", p]),
]


@pytest.mark.parametrize("kind", ["dangling-link", "file"])
@pytest.mark.parametrize("command,extra", [o[1:] for o in OUTPUTS], ids=[o[0] for o in OUTPUTS])
def test_an_output_folder_under_a_link_to_nothing_names_that_link(tmp_path, capsys, kind, command, extra):
    """Before: a folder on the way to --out (or --cache) that was a link to nothing made mkdir
    raise FileExistsError, read as the output folder itself being there: `blk/sub: exists and is
    not a folder (a device, pipe or socket)`, though blk/sub did not exist and blk was the cause.
    Now the first such folder is named, with what it is (textfiles.blocked_by)."""
    blocked = _blocker(tmp_path, kind)
    argv = run(tmp_path, BASE)
    argv = [command, argv[1]] + (["--gpus", "8", "--out", str(tmp_path / "o")] if command == "search" else []) + \
        extra(blocked)
    line = one_line_error(capsys, argv, "", "not a folder")
    assert f"blk is {'a link to nothing' if kind == 'dangling-link' else 'a file'}, not a folder" in line
    assert "device, pipe or socket" not in line


@pytest.mark.parametrize("kind", ["dangling-link", "file"])
def test_the_default_run_folder_under_a_runs_that_is_no_folder_names_it(tmp_path, capsys, monkeypatch, kind):
    """Before: with `runs` a link to nothing, `mtpsim run` (no --out) tried 10,000 names in turn
    and said `10,000 runs of this name started this second: pass --out`."""
    argv = run(tmp_path, BASE)[:2]
    monkeypatch.chdir(tmp_path)
    if kind == "dangling-link":
        (tmp_path / "runs").symlink_to(tmp_path / "nowhere")
    else:
        (tmp_path / "runs").write_text("x")
    line = one_line_error(capsys, argv, "", "runs is a")
    assert "10,000" not in line


@pytest.mark.parametrize("kind", ["dangling-link", "file"])
def test_a_profile_folder_under_a_link_to_nothing_names_that_link(tmp_path, capsys, kind):
    """Before: `mtpsim calibrate --out blk/sub` with blk a link to nothing said that
    `blk/sub.partial` exists (another command writing there), which it did not."""
    pytest.importorskip("torch")
    blocked = _blocker(tmp_path, kind)
    line = one_line_error(capsys, ["calibrate", "--quick", "--device", "cpu", "--out", blocked], "",
                          "blk is a")
    assert ".partial" not in line


ABBREVIATED = [  # (command, flags after the scenario, the flag meant)
    ("run", ["--seed", "2"], "--seeds"),  # the scenario's `seed`, read as two replicates
    ("run", ["--job", "1"], "--jobs"),
    ("run", ["--tr"], "--trace"),
    ("run", ["--o", "elsewhere"], "--out"),
    ("cost", ["--bat", "4"], "--batch"),
    ("cost", ["--cont=10"], "--context"),
    ("recommend", ["--max", "2"], "--max-steps"),
    ("search", ["--gpu", "8"], "--gpus"),
]


@pytest.mark.parametrize("command,extra,meant", ABBREVIATED, ids=[f"{a[0]} {a[1][0]}" for a in ABBREVIATED])
def test_an_abbreviated_flag_is_refused_and_the_whole_one_named(tmp_path, capsys, monkeypatch, command, extra, meant):
    """Before: argparse took any unique prefix of a flag: `mtpsim run s.yaml --seed 2`, meant as the
    scenario's seed, ran every point over two seeds (`--seeds 2`) without a word, and a prefix
    that a later release makes ambiguous would change meaning. Now a flag is given whole; an
    unknown one that starts (or nearly spells) a flag of the command names it."""
    argv = [command, run(tmp_path, BASE)[1], *extra]
    monkeypatch.chdir(tmp_path)  # where a run that went ahead would write runs/
    line = parse_error(capsys, argv)
    assert f"unrecognized arguments: {extra[0]}" in line and f"did you mean {meant}" in line
    assert not (tmp_path / "runs").exists() and not (tmp_path / "elsewhere").exists()


SHORTHANDS = [  # (section, the spec file's first line, the shorthand the error shows)
    ("hardware", "from: h200", "hardware: {from: NAME, ...}"),
    ("model", "from: deepseek-v3", "model: {from: NAME, ...}"),
    ("model", "hf_config: config.json", "model: {hf_config: config.json, ...}"),
]


@pytest.mark.parametrize("section,first,shown", SHORTHANDS, ids=[f"{s[0]}-{s[1].split(':')[0]}" for s in SHORTHANDS])
def test_a_spec_file_using_a_scenario_shorthand_is_shown_the_shorthand_of_its_own_section(tmp_path, capsys, section,
                                                                                          first, shown):
    """Before: a hardware file holding `from: h200` was told to write `model: {from: NAME, ...}`,
    and a model file holding hf_config was shown `from`'s form."""
    argv = run(tmp_path, BASE, {"spec.yaml": first + "\n"}) + ["--set", f"{section}=./spec.yaml"]
    line = one_line_error(capsys, argv, first.split(":")[0], "works only inline")
    assert f"({shown})" in line


@pytest.mark.parametrize("inner", ["", "models", "hardware/h200"], ids=["empty", "the-models-folder", "deeper"])
def test_a_catalog_folder_holding_no_catalog_is_warned_of(tmp_path, capsys, monkeypatch, inner):
    """Before: MTPSIM_CATALOG naming a folder with none of models/, hardware/, engines/, profiles/
    (most often the models/ folder itself) was searched and never matched: an entry written there
    to replace a built-in one was passed over for the built-in without a word."""
    folder = tmp_path / "cat" / inner
    folder.mkdir(parents=True)
    (folder / "deepseek-v3.yaml").write_text("name: deepseek-v3\n")  # never read
    monkeypatch.setenv("MTPSIM_CATALOG", str(folder))
    said = [w for w in warnings_of(capsys, ["cost", run(tmp_path, BASE)[1]]) if "MTPSIM_CATALOG" in w]
    assert len(said) == 1 and "holds none of models/" in said[0]
    assert ("itself a models/ folder" in said[0]) == (inner == "models")


def test_a_catalog_folder_with_a_kind_in_it_is_not_warned_of(tmp_path, capsys, monkeypatch):
    (tmp_path / "cat" / "engines").mkdir(parents=True)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    assert not [w for w in warnings_of(capsys, ["cost", run(tmp_path, BASE)[1]]) if "MTPSIM_CATALOG" in w]


@pytest.mark.parametrize("row", [1, 2], ids=["a-point's-means", "a-baseline's-means"])
def test_a_row_of_means_written_twice_is_one_line_as_in_summary_csv(tmp_path, capsys, row):
    """Before: a summary.csv row written twice was refused (the folder's tables come from
    different runs), but the same row twice in summary_ci.csv, which `mtpsim plot` draws over
    seeds, was drawn as two points without a word."""
    from mtpsim import cli
    argv = run(tmp_path, BASE) + ["--seeds", "2"]
    assert cli.main(argv) == 0
    ci = tmp_path / "out" / "summary_ci.csv"
    lines = ci.read_text().splitlines()
    ci.write_text("\n".join([*lines, lines[row]]) + "\n")
    capsys.readouterr()
    line = one_line_error(capsys, ["plot", str(tmp_path / "out")], "point", "same run")
    assert "summary_ci.csv" in line and f"rows {row + 1} and {len(lines) + 1}" in line


@pytest.mark.parametrize("remove,word", [((), "a finished run"),
                                         ((".mtpsim-complete",), "being written"),
                                         ((".mtpsim-complete", ".mtpsim-run"), "stopped part-way")],
                         ids=["finished", "claimed-unfinished", "stopped"])
def test_an_output_folder_holding_a_run_says_which(tmp_path, capsys, remove, word):
    """Before: a folder left by a run that a full disk or a signal stopped (no completion marker)
    was refused as 'exists and is not empty', the same words as any folder of other files, so the
    user could not tell it held an unfinished run to remove. Now the refusal says what it holds."""
    argv = run(tmp_path, BASE)
    assert cli.main(argv) == 0
    capsys.readouterr()
    for name in remove:
        (tmp_path / "out" / name).unlink()
    one_line_error(capsys, argv, "", word)
