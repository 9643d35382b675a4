"""A tenth adversarial campaign (user catalogs, measured profiles, the profile cache, and the
commands other than `run`), by class. As in test_bad_input.py: bad input is one stderr line,
exit status 2, naming the file and the dotted key path; legal but odd input is one warning line;
nothing the user wrote is overwritten or deleted."""
from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import pytest
import yaml

from mtpsim import cli, errors
from mtpsim.costs import profile_cache
from mtpsim.costs.profile import PROFILES_DIR
from mtpsim.packagedata import data_dir
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

# ------------------------------------------------------------------ 1. the cache deletes only its own entries

def _tiny_profile(tmp_path, text: str = "device: cpu\n"):
    folder = tmp_path / "prof"
    folder.mkdir(exist_ok=True)
    (folder / "meta.yaml").write_text(text)
    return folder


def test_the_cache_never_deletes_a_users_file_in_its_folder(tmp_path, monkeypatch):
    """Before: pruning globbed `profile-*.pickle`, so the user's own `profile-mine3.pickle` in a
    shared MTPSIM_CACHE_DIR was deleted as if it were an old entry."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(profile_cache.CACHE_ENV, str(shared))
    mine = [shared / f"profile-mine{i}.pickle" for i in range(10)] + [shared / "profile-0.pickle"]
    for i, path in enumerate(mine):
        path.write_text(f"my data {i}\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # older than any entry
    folder = _tiny_profile(tmp_path)
    for n in range(profile_cache.MAX_ENTRIES + 3):  # more entries than are kept: pruning runs
        assert profile_cache.cached(folder, (str(n),), lambda n=n: {"n": n}, dict) == {"n": n}
    assert all(path.read_text().startswith("my data") for path in mine)
    entries = [p for p in shared.iterdir() if profile_cache.ENTRY_NAME.fullmatch(p.name)]
    assert len(entries) == profile_cache.MAX_ENTRIES  # its own entries are still pruned


# ------------------------------------------------------------------ 2. the cache key reads only the profile's files

def test_the_cache_key_ignores_files_the_profile_is_not_read_from(tmp_path):
    """Before: the key hashed every file under the folder whole (a 1.5 GB core dump beside the
    tables took 1.5 GB of memory), so a file the profile never reads also changed the key."""
    folder = _tiny_profile(tmp_path)
    (folder / "gemm.csv").write_text("m,k,n,dtype,time_s\n")
    key = profile_cache.entry_key(folder, "x")
    (folder / "core.dump").write_bytes(b"\0" * 4096)
    (folder / "holdout").mkdir()
    (folder / "holdout" / "gemm.csv").write_text("m,k,n\n")
    assert profile_cache.entry_key(folder, "x") == key
    (folder / "gemm.csv").write_text("m,k,n,dtype,time_s\n1,1,1,bf16,1e-6\n")
    assert profile_cache.entry_key(folder, "x") != key  # a table it reads still changes it


def test_a_profile_file_over_the_input_limit_is_not_hashed_or_cached(tmp_path, monkeypatch):
    """The cache key keeps the readers' MAX_FILE_BYTES rule: an oversized table is never read
    whole for a key; the profile is loaded without the cache (and its reader refuses the file)."""
    from mtpsim.textfiles import MAX_FILE_BYTES
    monkeypatch.setenv(profile_cache.CACHE_ENV, str(tmp_path / "cache"))
    folder = _tiny_profile(tmp_path)
    with open(folder / "gemm.csv.gz", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk or memory spent unless it is read
    with pytest.raises(OSError, match="input limit"):
        profile_cache.entry_key(folder, "x")
    assert profile_cache.cached(folder, ("x",), lambda: {"loaded": 1}, dict) == {"loaded": 1}
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------ 3. profile content passed over without a word

SCEN = """\
name: base
model: llama-3.1-8b
hardware: h200
parallel: {tp: 1}
speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.7]}
workload: {arrival: closed, concurrency: 2, num_requests: 4, input_len: 64, output_len: 8}
"""


def _scenario(tmp_path, text: str = SCEN, name: str = "base.yaml") -> list[str]:
    (tmp_path / name).write_text(text)
    return ["run", str(tmp_path / name), "--out", str(tmp_path / "out"), "--jobs", "1"]


@pytest.mark.parametrize("layout,word", [
    ({"profiles/h200-sglang/meta.yml": "device: cuda\n"}, "found meta.yml: rename it"),
    ({"profiles/h200-sglang/notes.txt": "x\n"}, "no meta.yaml"),
    ({"profiles/h200-sglang/meta.yaml/x": "x\n"}, "a folder, not a file"),
    ({"profiles/h200-sglang": "x\n"}, "not a folder"),
    ({"profiles": "x\n"}, "not a folder"),
], ids=["meta-yml", "no-meta", "meta-is-a-folder", "profile-is-a-file", "profiles-is-a-file"])
def test_a_catalog_profile_the_lookup_would_pass_over_is_an_error(tmp_path, capsys, monkeypatch, layout, word):
    """Before: MTPSIM_CATALOG's `profiles/h200-sglang` without a readable meta.yaml (or a
    `profiles` that is a file) was skipped, and the committed profile of that name priced the run."""
    catalog = tmp_path / "cat"
    for name, text in layout.items():
        (catalog / name).parent.mkdir(parents=True, exist_ok=True)
        (catalog / name).write_text(text)
    monkeypatch.setenv("MTPSIM_CATALOG", str(catalog))
    line = one_line_error(capsys, _scenario(tmp_path), "", word)
    assert str(catalog / "profiles") in line


def test_a_profile_path_without_meta_yaml_names_it(tmp_path, capsys):
    """A `cost.profile` path to a folder whose meta.yaml is misspelt says so (was: "no profile folder")."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "META.yaml").write_text("device: cuda\n")
    one_line_error(capsys, _scenario(tmp_path, SCEN + "cost: {profile: ./p}\n".replace("./p", str(tmp_path / "p"))),
                   "", "found META.yaml: rename it")


def test_a_table_the_profile_does_not_list_is_warned_of(tmp_path, capsys):
    """Before: gemm.csv on disk but left out of meta.yaml's `families` was never read, and the
    GEMMs were priced by the roofline without a word."""
    folder = tmp_path / "p"
    shutil.copytree(PROFILES_DIR / "h200", folder)
    meta = folder / "meta.yaml"
    meta.write_text(meta.read_text().replace("  gemm: 68\n", ""))
    found = warnings_of(capsys, _scenario(tmp_path, SCEN + f"cost: {{profile: {folder}}}\n"))
    assert any("meta.yaml: families: gemm.csv is in the profile folder but not listed" in w for w in found), found


# ------------------------------------------------------------------ 4. recommend's pick when the best interval is wide

def test_a_wide_interval_on_the_best_setting_never_hides_a_clear_gain():
    """The report's `recommend --seeds 2` grid: S=2's interval (385.8 +- 253) met `none`'s, so the
    old pick ("the fewest steps whose interval meets the best one's") was none, while S=1 beats
    none by 55% with intervals far apart: "speculate: no", break-even batch 1, policy {1: 0}."""
    import pandas as pd

    from mtpsim.recommend import best_by_batch, break_even, policy_line, within_noise
    rows = [("none", 0, 203.4, 0.0), ("nextn", 1, 315.27, 0.024), ("nextn", 2, 385.8, 253.0)]
    summary = pd.DataFrame(rows, columns=["design", "steps", "tps", "half"]).assign(concurrency=1, topk=1)
    summary = summary.assign(per_user_tps=summary.tps, tps_ci_low=summary.tps - summary.half,
                             tps_ci_high=summary.tps + summary.half)
    table = within_noise(best_by_batch(summary), summary)
    assert table.tps_steps.tolist() == [1] and table.speculate.tolist() == [True] and table.tie.tolist() == [True]
    assert break_even(table) is None and "{1: 1}" in policy_line(table)


# ------------------------------------------------------------------ 5. plot draws only what a run can produce

ROOF = SCEN.replace("parallel: {tp: 1}", "parallel: {tp: 1}\ncost: {model: roofline}")


@pytest.fixture(scope="module")
def run_folders(tmp_path_factory):
    """One run of ROOF, and the same over two seeds (folders `one`, `seeds`)."""
    root = tmp_path_factory.mktemp("runs10c")
    (root / "s.yaml").write_text(ROOF)
    for name, extra in (("one", []), ("seeds", ["--seeds", "2"])):
        assert cli.main(["run", str(root / "s.yaml"), "--jobs", "1", "--out", str(root / name), *extra]) == 0
    return root


def _edit_cell(path, column: str, row: int, value: str) -> None:
    rows = list(csv.reader(path.open()))
    rows[row][rows[0].index(column)] = value
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


@pytest.mark.parametrize("table,column,value,word", [
    ("requests.csv", "finish_s", "1e300", "<= 1e+09"),
    ("requests.csv", "finish_s", "1000", "e2e_mean_s"),  # in range, but no run's requests end there
    ("requests.csv", "first_token_s", "0.0", "wait for their first token"),
    ("iterations.csv", "start_s", "1e300", "<= 1e+09"),
    ("iterations.csv", "duration_s", "1e300", "<= 1e+09"),
    ("summary.csv", "ttft_p50_s", "nan", "'nan' is not a number"),
    ("summary.csv", "ttft_p50_s", "-1", ">= 0"),
    ("summary.csv", "tpot_p99_s", "inf", "not a number"),
    ("summary.csv", "e2e_p99_s", "1e300", "<= 1e+09"),
])
def test_plot_refuses_a_time_no_run_writes(run_folders, tmp_path, capsys, table, column, value, word):
    """Before: request and iteration times were bounded below only, summary.csv's latency
    columns not at all, and only TTFT was checked against summary.csv: a finish_s of 1e300 drew a
    TPOT axis to 3e301 ms, and `nan`, -1 or inf latencies were drawn, all with exit 0."""
    folder = tmp_path / "run"
    shutil.copytree(run_folders / "one", folder)
    _edit_cell(folder / table, column, 1, value)
    line = one_line_error(capsys, ["plot", str(folder)], column, word)
    assert table in line


@pytest.mark.parametrize("name", ["one", "seeds"])
def test_plot_refuses_a_summary_row_written_twice(run_folders, tmp_path, capsys, name):
    """Before: summary.csv's last row (a baseline, point -1) appended again was accepted."""
    folder = tmp_path / "run"
    shutil.copytree(run_folders / name, folder)
    text = (folder / "summary.csv").read_text()
    (folder / "summary.csv").write_text(text + text.splitlines(keepends=True)[-1])
    line = one_line_error(capsys, ["plot", str(folder)], "point", "are the same run")
    assert "summary.csv" in line
    assert cli.main(["plot", str(run_folders / name)]) == 0  # the folder as written still draws


# ------------------------------------------------------------------ 6. every error and warning line under 500 characters

def test_a_line_keeps_its_start_and_end_within_the_limit():
    """The one place the rule is kept: whatever a message echoes, the line is at most MAX_LINE
    characters, its start (file, key) and its end (the reason's last words) kept."""
    text = errors.line("error", "f.yaml: a.b: " + "k" * 3000 + " leaves no KV pool")
    assert len(text) <= errors.MAX_LINE < 500 and text.startswith("mtpsim: error: f.yaml: a.b: ")
    assert text.endswith("leaves no KV pool") and " ... " in text
    assert errors.ScenarioError("/" + "d" * 50 + "/x" * 600 + "/s.yaml", "model", "r").message.endswith("/x/s.yaml: model: r")


@pytest.mark.parametrize("argv,key,word", [
    (["--set", "cost.profile=" + "a/" * 600], "cost.profile", "no profile folder"),
    (["--set", "name=" + "n" * 3000], "name", "at most"),
], ids=["long-profile", "long-name"])
def test_a_long_value_given_by_a_flag_is_cut(tmp_path, capsys, argv, key, word):
    """Before: `cost.profile` of 1,200 characters gave a 1,500-character line (the value echoed whole)."""
    one_line_error(capsys, _scenario(tmp_path) + argv, key, word)


@pytest.mark.parametrize("flag,value,word", [
    ("--tpot", "p50:" + "0" * 2000, "must be above 0"),
    ("--min-user-tps", "p50:" + "0" * 2000 + "1s", "take no unit"),
    ("--rates", "0," * 1000 + "1", "each rate must be"),
])
def test_a_long_search_flag_is_cut(tmp_path, capsys, flag, value, word):
    """Before: `--tpot p50:<2,000 zeros>` gave a 2,046-character line."""
    (tmp_path / "s.yaml").write_text(SCEN + "search: {concurrency: [1, 2], requests_per_user: 1, tp: [1]}\n")
    line = one_line_error(capsys, ["search", str(tmp_path / "s.yaml"), "--gpus", "1", "--no-cache", flag, value], "", word)
    assert line.startswith(f"mtpsim: error: {flag}: ")


def test_a_long_scenario_path_is_cut(tmp_path, capsys):
    """Before: a scenario 10 folders of 50 characters deep gave a 566-character line; a 1,500-character
    file name, 1,540."""
    deep = tmp_path.joinpath(*["d" * 50] * 10)
    deep.mkdir(parents=True)
    (deep / "s.yaml").write_text(SCEN.replace("model: llama-3.1-8b", "model: nosuch"))
    line = one_line_error(capsys, ["run", str(deep / "s.yaml"), "--out", str(tmp_path / "o")], "model", "unknown models")
    assert "/s.yaml: model: " in line
    for command in ("run", "plot"):
        one_line_error(capsys, [command, "x" * 1500], "", "too long")


# ------------------------------------------------------------------ 7. errors that named the wrong file, key or reason

def _catalog_hardware(tmp_path, monkeypatch, **changes) -> Path:
    """MTPSIM_CATALOG holding hardware `myh`: the shipped h200 entry renamed, `changes` applied."""
    data = yaml.safe_load((data_dir() / "hardware" / "h200.yaml").read_text())
    data.update(name="myh", **changes)
    path = tmp_path / "cat" / "hardware" / "myh.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    return path


def test_a_missing_profile_a_catalog_entry_names_is_blamed_on_that_entry(tmp_path, capsys, monkeypatch):
    """Before: blamed on the scenario's `hardware.profiles.sglang`, a key it does not hold; the
    hint listed only the committed profiles; and `mtpsim hardware` listed the entry, exit 0."""
    entry = _catalog_hardware(tmp_path, monkeypatch, profiles={"sglang": "nosuch-profile"})
    shutil.copytree(PROFILES_DIR / "h200", tmp_path / "cat" / "profiles" / "mine")
    line = one_line_error(capsys, _scenario(tmp_path, SCEN.replace("hardware: h200", "hardware: myh")),
                          "profiles.sglang", "no profile folder 'nosuch-profile'")
    assert line.startswith(f"mtpsim: error: {entry}: profiles.sglang: ") and "mine" in line
    line = one_line_error(capsys, ["hardware"], "profiles.sglang", "no profile folder")
    assert str(entry) in line


@pytest.mark.parametrize("make,word", [
    (lambda p: p.mkdir(), "a folder, not a file"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
    (lambda p: p.symlink_to(p.parent / "nowhere"), "a link that leads nowhere"),
], ids=["folder", "fifo", "dev-zero", "dangling"])
def test_a_family_table_that_is_no_file_says_what_it_is(tmp_path, capsys, make, word):
    """Before: a folder, a fifo or a link to /dev/zero in gemm.csv's place was "missing profile file"."""
    folder = tmp_path / "p"
    shutil.copytree(PROFILES_DIR / "h200", folder)
    (folder / "gemm.csv").unlink()
    make(folder / "gemm.csv")
    line = one_line_error(capsys, _scenario(tmp_path, SCEN + f"cost: {{profile: {folder}}}\n"), "", word)
    assert "gemm.csv" in line and "missing" not in line


def test_an_engine_reserve_that_fills_the_gpu_is_blamed_on_the_engine_file(tmp_path, capsys, monkeypatch):
    """Before: `kv_pool.startup_mib: 1 TiB` in the user's engine file was blamed on the scenario's
    engine.mem_fraction, with a false reason (the weights leave no KV pool)."""
    engine = tmp_path / "cat" / "engines" / "sglang.yaml"
    engine.parent.mkdir(parents=True)
    engine.write_text((data_dir() / "engines" / "sglang.yaml").read_text().replace(
        "startup_mib: 2582", "startup_mib: 1099511627776"))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, _scenario(tmp_path, ROOF), "kv_pool.startup_mib", "sets aside")
    assert line.startswith(f"mtpsim: error: {engine}: ") and "mem_fraction" not in line


@pytest.mark.parametrize("inline", [False, True], ids=["hardware-file", "inline"])
def test_a_gpu_too_small_for_the_engine_is_blamed_on_its_capacity(tmp_path, capsys, inline):
    """Before: a hardware file's `memory_capacity_bytes: 1048576` was blamed on the scenario's
    engine.mem_fraction ("default mem_fraction_static is -5775")."""
    data = yaml.safe_load((data_dir() / "hardware" / "h200.yaml").read_text())
    data.update(name="mygpu", memory_capacity_bytes=1048576)
    data.pop("profiles", None)
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(data))
    hardware = "{from: h200, memory_capacity_bytes: 1048576}" if inline else str(tmp_path / "gpu.yaml")
    line = one_line_error(capsys, _scenario(tmp_path, ROOF.replace("hardware: h200", f"hardware: {hardware}")),
                          "hardware.memory_capacity_bytes" if inline else "memory_capacity_bytes", "reserves")
    assert ("base.yaml" if inline else "gpu.yaml: memory_capacity_bytes: ") in line and "engine.mem_fraction" not in line


# ------------------------------------------------------------------ 8. profile meta.yaml and tables checked

def _kv_dtype_mixed(text: str) -> str:
    """attention.csv with a kv_dtype column: `*` on the first row, bf16 on the rest of its config."""
    lines = text.splitlines()
    rows = [lines[0].replace("v_head_dim,", "v_head_dim,kv_dtype,")]
    for i, row in enumerate(lines[1:]):
        cells = row.split(",")
        rows.append(",".join(cells[:4] + ["*" if i == 0 else "bf16"] + cells[4:]))
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("file,edit,key,word", [
    ("meta.yaml", lambda t: t + "engine: 5\n", "engine", "'sglang', 'vllm' or 'trtllm'"),
    ("meta.yaml", lambda t: t + "engine: bogus\n", "engine", "'sglang', 'vllm' or 'trtllm'"),
    ("meta.yaml", lambda t: t.replace("  gemm: 68", "  gemm: -5"), "families.gemm", "greater than or equal to 1"),
    ("meta.yaml", lambda t: t.replace("  gemm: 68", "  gemm: 70"), "families.gemm", "holds 68"),
    ("meta.yaml", lambda t: t.replace("launch:", "overhead: {included_in_op_times: true, call_s: 1.0e-5}\nlaunch:"),
     "overhead", "keep launch"),
    ("meta.yaml", lambda t: t.replace("    64: 0.0001354", "    99999999999999999999: 0.0001354"),
     "host_s.none.99999999999999999999", "as a key: Input should be less than or equal to 100000"),
    ("meta.yaml", lambda t: t.replace("copy_bytes_per_s: 4259000000000.0", "copy_bytes_per_s: 1.0e6"),
     "ceilings.copy_bytes_per_s", "floored"),
    ("meta.yaml", lambda t: t.replace("matmul_flops_per_s: 792300000000000.0", "matmul_flops_per_s: 1.0e6"),
     "ceilings.matmul_flops_per_s", "floored"),
    ("gemm.csv", lambda t: t.replace("bf16,1,256,256,", "bf16,1.5,256,256,", 1), "m", "row 2"),
    ("attention.csv", _kv_dtype_mixed, "kv_dtype", "row 2"),
], ids=["engine-number", "engine-bogus", "count-negative", "count-wrong", "overhead-and-launch", "host-batch-huge",
        "copy-ceiling", "matmul-ceiling", "fractional-m", "kv-dtype-any-and-named"])
def test_profile_content_that_no_run_could_mean_is_refused(tmp_path, capsys, file, edit, key, word):
    """Before: each ran with exit 0 (engine: 5 even printed "priced as 5 runs them"; ceilings of
    1e6 priced TTFT at 4.9 hours; a `*` kv_dtype row beside bf16 ones moved TPS from 213 to 91)."""
    folder = tmp_path / "p"
    shutil.copytree(PROFILES_DIR / "h200", folder)
    (folder / file).write_text(edit((folder / file).read_text()))
    line = one_line_error(capsys, _scenario(tmp_path, SCEN + f"cost: {{profile: {folder}}}\n"), key, word)
    assert file in line


# ------------------------------------------------------------------ 9. catalog entries that contradict themselves

def _gpu(tmp_path, **changes) -> str:
    """A hardware file: the shipped h200 entry renamed (priced by the roofline), `changes` applied."""
    data = yaml.safe_load((data_dir() / "hardware" / "h200.yaml").read_text())
    data.pop("profiles", None)
    data.update(name="mygpu", **changes)
    for key in [k for k, v in changes.items() if v is None]:
        data.pop(key)
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(data))
    return str(tmp_path / "gpu.yaml")


@pytest.mark.parametrize("changes,key,word", [
    ({"graph_launch_overhead_s": 0.5}, "graph_launch_overhead_s", "costs more than an eager launch"),
    ({"peak_flops": {"fp32": 1e18, "bf16": 1e6, "fp8": 1e6}}, "peak_flops.fp8", "narrower dtype"),
    ({"internode_bandwidth_bytes_per_s": 1e15}, "internode_bandwidth_bytes_per_s", "faster than the links"),
], ids=["graph-launch", "narrow-dtype-slower", "network-faster-than-nvlink"])
def test_hardware_figures_that_contradict_each_other_warn(tmp_path, capsys, changes, key, word):
    """Before: graph_launch_overhead_s 0.5 (10^5 x an eager launch) ran silently to a TPOT of 65 s."""
    found = warnings_of(capsys, _scenario(tmp_path, ROOF.replace("hardware: h200", f"hardware: {_gpu(tmp_path, **changes)}")))
    assert any(f"gpu.yaml: {key}: " in w and word in w for w in found), found


def test_half_an_internode_network_is_refused(tmp_path, capsys):
    """Before: a bandwidth without a latency was read as no network at all, without a word."""
    gpu = _gpu(tmp_path, internode_latency_s=None)
    one_line_error(capsys, _scenario(tmp_path, ROOF.replace("hardware: h200", f"hardware: {gpu}")),
                   "internode_latency_s", "give both")


def _engine(tmp_path, monkeypatch, old: str, new: str) -> Path:
    """MTPSIM_CATALOG's engines/sglang.yaml: the shipped file with `old` replaced by `new`."""
    text = (data_dir() / "engines" / "sglang.yaml").read_text()
    assert old in text
    path = tmp_path / "cat" / "engines" / "sglang.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text.replace(old, new, 1))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    return path


@pytest.mark.parametrize("old,new,key,word", [
    # the file's own classes (their first line names its GPUs; memory_classes_v0520 restates them, uncommented)
    ("      - {below_mib: 20480, chunked_prefill_tokens: 2048, graph_batch: 8, graph_batch_tp4: 8}      # T4",
     "      - {chunked_prefill_tokens: 16384, graph_batch: 512, graph_batch_tp4: 512}\n"
     "      - {below_mib: 20480, chunked_prefill_tokens: 2048, graph_batch: 8, graph_batch_tp4: 8}      # T4",
     "kv_pool.reserved.classes.1", "no GPU reaches this class"),
    ("  none: [decode]", "  none: [decode, decode]", "hides.none.1", "listed twice"),
    ('"0.4.0", "0.4.1"', '"0.4.0", "0.4.0", "0.4.1"', "versions.known.", "listed twice"),
    ("knob: mem_fraction_static", 'knob: ""', "kv_pool.knob", "pattern"),
    ("knob: mem_fraction_static", "knob: " + "k" * 3000, "kv_pool.knob", "pattern"),
], ids=["class-after-catch-all", "hides-twice", "known-twice", "knob-empty", "knob-long"])
def test_an_engine_file_that_contradicts_itself_is_refused(tmp_path, capsys, monkeypatch, old, new, key, word):
    """Before: each was accepted (a class after the catch-all is never read; a 3,000-character knob
    was echoed whole into the memory error)."""
    engine = _engine(tmp_path, monkeypatch, old, new)
    line = one_line_error(capsys, _scenario(tmp_path, ROOF), "", word)
    assert line.startswith(f"mtpsim: error: {engine}: {key}")


# ------------------------------------------------------------------ 10. search bounds that do nothing

SEARCH = ROOF.replace("parallel: {tp: 1}\n", "")


@pytest.mark.parametrize("section,key,word", [
    ("{concurrency: [1, 2], requests_per_user: 1, tp: [1], requests_per_rate_s: 5}", "search.requests_per_rate_s",
     "not used"),
    ("{rates: [1, 2], tp: [1], requests_per_user: 2}", "search.requests_per_user", "not used"),
    ("{rates: [1, 2], tp: [1], requests_per_rate_s: 1.0e-9}", "search.requests_per_rate_s", "at least"),
    ("{concurrency: [1], requests_per_user: 1, tp: [1], designs: [nextn, nextn]}", "search.designs", "more than once"),
    ("{concurrency: [1], requests_per_user: 1, tp: [1], topk: [1, 1]}", "search.topk", "more than once"),
], ids=["rate-size-on-closed", "user-size-on-rates", "rate-size-floored", "designs-twice", "topk-twice"])
def test_a_search_bound_that_does_nothing_warns(tmp_path, capsys, section, key, word):
    """Before: each was accepted without a word (requests_per_rate_s: 1e-9 silently became the
    floor of 8 requests per point; a repeated design or topk was dropped silently)."""
    (tmp_path / "s.yaml").write_text(SEARCH + f"search: {section}\n")
    found = warnings_of(capsys, ["search", str(tmp_path / "s.yaml"), "--gpus", "1", "--no-cache", "--no-plot",
                                 "--jobs", "1", "--out", str(tmp_path / "o")])
    assert any(f"s.yaml: {key}: " in w and word in w for w in found), found


def test_a_repeated_search_value_is_still_tried_once():
    """The repeats a warning names are dropped: two identical points would be two frontier rows of one index."""
    from pydantic import ValidationError

    from mtpsim.search.bounds import SearchBounds
    bounds = SearchBounds.model_validate({"designs": ["nextn", "nextn"], "topk": [2, 1, 2]})
    assert bounds.designs == ["nextn"] and bounds.topk == [2, 1]
    assert bounds.repeated() == [("designs", "nextn"), ("topk", 2)]
    with pytest.raises(ValidationError):  # an unhashable repeat is refused as a wrong type, not a TypeError
        SearchBounds.model_validate({"topk": [[1], [1]]})
