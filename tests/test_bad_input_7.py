"""A sixth adversarial campaign (this stop's: search, recommend and cost; user data files; run,
plot and outputs; kept out of the repo), by class. As in test_bad_input.py: bad input is one
stderr line, exit status 2, naming the file and key; semantic nonsense that runs is one warning."""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input import BASE, one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

DENSE = """\
name: r
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.9, 0.6, 0.3]}
workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}
"""
MOE = """\
name: s
model: deepseek-v3
hardware: h200
speculative: {design: nextn, steps: 2}
acceptance: {per_depth: [0.8, 0.6]}
workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 24}
search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}
"""


def _file(tmp_path, text: str, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("argv", [["recommend", "--batch", "1", "--seeds", "1"],
                                  ["search", "--gpus", "1", "--concurrency", "1", "--no-cache", "--no-plot"]])
def test_one_output_token_has_no_time_per_token_to_rank_by(tmp_path, capsys, argv):
    """Before: a TypeError traceback (no request had a TPOT), and search's folder marked complete."""
    scenario = _file(tmp_path, DENSE.replace("output_len: 8", "output_len: 1"))
    one_line_error(capsys, [argv[0], scenario, *argv[1:], "--out", str(tmp_path / "o")], "workload.output_len",
                   "time per output token")
    assert not (tmp_path / "o").exists()


def test_a_trace_is_searched_at_its_own_mean_lengths(tmp_path, capsys):
    """Before: recommend and search ran the schema's default 1024 / 256 tokens, which the user
    never wrote, and said nothing about lengths."""
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,24\n1,32,16\n2,64,8\n")
    text = DENSE.replace("workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}",
                         "workload: {arrival: trace, trace: {path: t.csv}}")
    lines = warnings_of(capsys, ["recommend", _file(tmp_path, text), "--batch", "1", "--seeds", "1", "--max-steps", "1",
                                 "--jobs", "1", "--out", str(tmp_path / "o")])
    assert any("workload.trace" in line and "mean lengths (53 in, 16 out)" in line for line in lines), lines
    grid = (tmp_path / "o" / "grid.csv").read_text()
    assert "1024" not in grid


def test_an_expert_parallel_bound_on_a_dense_model_is_refused(tmp_path, capsys):
    """Before: every layout ran at ep 1 without a word."""
    scenario = _file(tmp_path, DENSE + "search: {ep: [2]}\n")
    one_line_error(capsys, ["search", scenario, "--gpus", "2", "--concurrency", "1", "--no-cache", "--no-plot",
                            "--out", str(tmp_path / "o")], "search.ep", "no routed experts")


def test_each_searched_design_gets_its_own_steps(tmp_path, capsys):
    """Before: the steps were the scenario's design's: multi_layer on DeepSeek-V3 (one MTP layer)
    was refused at nextn's 2 steps, and a `none` scenario searching nextn searched none alone."""
    scenario = _file(tmp_path, MOE)
    assert cli.main(["search", scenario, "--gpus", "8", "--no-cache", "--no-plot", "--out", str(tmp_path / "a"),
                     "--set", "search.designs=[none, multi_layer]"]) == 0
    assert "multi_layer S=1" in capsys.readouterr().out
    assert cli.main(["search", scenario, "--gpus", "8", "--no-cache", "--no-plot", "--out", str(tmp_path / "b"),
                     "--set", "speculative.design=none", "--set", "search.designs=[none, nextn]"]) == 0
    assert "nextn S=" in capsys.readouterr().out


def test_a_searched_design_that_cannot_draft_here_is_named(tmp_path, capsys):
    scenario = _file(tmp_path, DENSE.replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none")
                     + "search: {designs: [none, nextn]}\n")
    one_line_error(capsys, ["search", scenario, "--gpus", "1", "--concurrency", "1", "--no-cache", "--no-plot",
                            "--out", str(tmp_path / "o")], "search.designs", "nextn")


def test_max_steps_on_a_search_without_a_drafting_design_warns(tmp_path, capsys):
    scenario = _file(tmp_path, DENSE.replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none")
                     .replace("acceptance: {per_depth: [0.9, 0.6, 0.3]}\n", ""))
    lines = warnings_of(capsys, ["search", scenario, "--gpus", "1", "--concurrency", "1", "--no-cache", "--no-plot",
                                 "--max-steps", "5", "--out", str(tmp_path / "o")])
    assert any(line.startswith("mtpsim: warning: --max-steps: no searched design drafts") for line in lines), lines


@pytest.mark.parametrize("extra, key", [([], "workload.concurrency"), (["--batch", "1000"], "--batch")])
def test_cost_past_the_running_request_cap_warns(tmp_path, capsys, extra, key):
    """Before: cost priced 200 requests at once where `mtpsim run` caps SGLang's speculative
    decoding at 48, without a word."""
    scenario = _file(tmp_path, DENSE.replace("concurrency: 1, num_requests: 2", "concurrency: 200, num_requests: 200"))
    lines = warnings_of(capsys, ["cost", scenario, *extra])
    prefix = "mtpsim: warning: --batch: " if key == "--batch" else f"mtpsim: warning: {scenario}: {key}: "
    assert any(line.startswith(prefix) and "running-request cap of 48" in line for line in lines), lines


def test_an_unreached_policy_entry_says_which_bound_keeps_it_out(tmp_path, capsys):
    """The warning says which bound of the workload keeps the entry out (its concurrency). cost
    --batch prices another batch than the workload's, whose steps its header prints: there the
    workload's bound says nothing about the iteration priced, and no such warning is given
    (test_bad_input_10w.py)."""
    scenario = _file(tmp_path, DENSE)
    policy = ["--set", "speculative.policy={steps_by_batch: {1: 3, 32: 0}}"]
    lines = warnings_of(capsys, ["cost", scenario, *policy])
    assert any("no iteration of this workload runs more than 1 requests (workload.concurrency)" in line
               for line in lines), lines
    assert not any("steps_by_batch" in line for line in warnings_of(capsys, ["cost", scenario, "--batch", "64", *policy]))


@pytest.mark.parametrize("argv, where", [
    (["search", "--gpus", "1", "--no-cache", "--no-plot", "--rates", "1e-9"], "--rates"),
    (["search", "--gpus", "1", "--no-cache", "--no-plot", "--set", "search.rates=[1000000]"], "search.rates"),
    (["recommend", "--batch", "64", "--set", "workload.num_requests=20000"], "--batch"),
])
def test_a_load_the_workload_refuses_is_blamed_on_where_it_came_from(tmp_path, capsys, argv, where):
    """Before: blamed on the scenario's workload.rate_per_s / num_requests, which the user did not
    write: the load was the flag's or the search section's."""
    scenario = _file(tmp_path, DENSE)
    line = one_line_error(capsys, [argv[0], scenario, *argv[1:], "--out", str(tmp_path / "o")], "", "workload")
    assert line.startswith(f"mtpsim: error: {where}: ") or f": {where}: " in line, line


def test_a_load_of_very_many_requests_says_so_before_it_runs(tmp_path, capsys, monkeypatch):
    """Before: 200,000 requests a point ran without a line for minutes (progress prints as points
    finish). The warning comes first; the threshold is lowered here to keep the test short."""
    from mtpsim import heaviness
    monkeypatch.setattr(heaviness, "HEAVY_POINT_REQUESTS", 4)
    lines = warnings_of(capsys, ["recommend", _file(tmp_path, DENSE), "--batch", "2", "--seeds", "1", "--max-steps", "1",
                                 "--jobs", "1", "--out", str(tmp_path / "o")])
    # blamed on the file's requests per user (closed loop), not --batch (campaign 41, H8)
    assert any(line.startswith("mtpsim: warning: ") and ": workload.num_requests: a point of this load simulates 4 "
               "requests" in line for line in lines)


def test_a_cache_inside_the_output_folder_is_refused_before_anything_is_made(tmp_path, capsys, monkeypatch):
    """Before: the cache folder was made first, then the new --out was 'not empty'."""
    monkeypatch.chdir(tmp_path)
    scenario = _file(tmp_path, MOE)
    one_line_error(capsys, ["search", scenario, "--gpus", "8", "--out", "out", "--cache", "out/cache"], "",
                   "--out folder or inside it")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ data files beside a scenario

PROFILE_BASE = BASE + "cost: {profile: PROF}\n"  # test_bad_input's DeepSeek-V3 scenario, priced by a profile copy


def _profile(tmp_path, family: str, edit) -> str:
    """A copy of the h200-sglang profile with `edit(rows)` applied to one family's table (rows as
    lists of cells, header first); returns a scenario pricing with it."""
    import gzip
    import shutil

    from mtpsim.costs.profile import PROFILES_DIR
    prof = tmp_path / "prof"
    shutil.copytree(PROFILES_DIR / "h200-sglang", prof)
    path = prof / f"{family}.csv.gz"
    rows = [line.split(",") for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    edit(rows)
    path.write_bytes(gzip.compress("\n".join(",".join(r) for r in rows).encode() + b"\n"))
    return _file(tmp_path, PROFILE_BASE.replace("PROF", str(prof)))


def _set_cell(column: str, value: str, where=lambda header, row: True):
    def edit(rows):
        header = rows[0]
        row = next(r for r in rows[1:] if where(header, r))
        row[header.index(column)] = value
    return edit


@pytest.mark.parametrize("family, column, value, word", [
    ("allreduce", "bytes", "0", "> 0"),             # an interpolation axis: log(0) was a math domain traceback
    ("allreduce", "ranks", "two", "whole number"),  # one text cell turned the column to text: every row unread
    ("moe", "inter", "0", "whole number"),
    ("moe", "num_experts", "-16", "whole number"),
    ("attention", "kv_heads", "0", "whole number"),
])
def test_a_profile_tables_sizes_are_whole_numbers_above_zero(tmp_path, capsys, family, column, value, word):
    """Before: a traceback (math domain error in the lookups) or silently different prices."""
    scenario = _profile(tmp_path, family, _set_cell(column, value))
    one_line_error(capsys, ["cost", scenario], column, word)


def test_a_family_table_given_twice_is_refused(tmp_path, capsys):
    """Before: a plain gemm.csv beside gemm.csv.gz silently won (a one-row table priced a step at 370 s)."""
    scenario = _profile(tmp_path, "gemm", lambda rows: None)
    (tmp_path / "prof" / "gemm.csv").write_text("dtype,m,k,n,flops,bytes,time_s\nbf16,1,1,1,1,1,1\n")
    line = one_line_error(capsys, ["cost", scenario], "", "keep one table per op family")
    assert "gemm.csv" in line


@pytest.mark.parametrize("acceptance", ["{per_depth: [0.0, 0.0]}", "{per_depth: [0.8, 0.0]}",
                                        "{cumulative: [0.0, 0.0]}", "{accept_length: 1.0}"])
def test_drafts_the_acceptance_never_accepts_warn(tmp_path, capsys, acceptance):
    """As a histogram that never counts them already did: they only cost time."""
    text = PROFILE_BASE.replace("cost: {profile: PROF}\n", "").replace("{per_depth: [0.8, 0.7]}", acceptance)
    lines = warnings_of(capsys, ["cost", _file(tmp_path, text)])
    assert any(": acceptance." in line and "only cost time" in line for line in lines), lines


def test_a_model_without_a_context_limit_warns(tmp_path, capsys):
    """Before: a config.json without max_position_embeddings checked no request's length, silently."""
    import json

    from tests.test_hfconfig import LLAMA_31_8B
    config = {k: v for k, v in LLAMA_31_8B.items() if k != "max_position_embeddings"}
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text(json.dumps(config))
    text = DENSE.replace("model: llama-3.1-8b", "model: {hf_config: c/config.json, name: my-llama}") \
        .replace("speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}", "speculative: {design: none}") \
        .replace("acceptance: {per_depth: [0.9, 0.6, 0.3]}\n", "")
    lines = warnings_of(capsys, ["cost", _file(tmp_path, text)])
    assert any(": model: model 'my-llama' states no context limit" in line for line in lines), lines


@pytest.mark.parametrize("change, key, word", [
    ({"expert_dtype": "int3"}, "expert_dtype", "expected one of"),
])
def test_a_v4_expert_dtype_it_cannot_read_is_refused(tmp_path, capsys, change, key, word):
    """Before: any other string than 'fp4' priced the experts as FP8, silently."""
    import json

    from tests.test_bad_input import run
    from tests.test_deepseek_v4 import FLASH
    from tests.test_deepseek_v4 import _scenario as v4_scenario
    files = {"ckpt/config.json": json.dumps({**FLASH, **change})}
    text = v4_scenario("{hf_config: ckpt/config.json, name: deepseek-v4-flash}", "nextn", 1)
    one_line_error(capsys, run(tmp_path, text, files), key, word)


# ------------------------------------------------------------------ run, plot and outputs

def test_a_bad_point_is_one_line_even_when_the_sweep_repeats_a_value(tmp_path, capsys):
    """Before: the repeated-value warning came first, so a refused point printed two lines; and the
    repeat scan was quadratic (100,000 values hung past a minute)."""
    one_line_error(capsys, ["run", _file(tmp_path, MOE + "sweep: {seed: [1, 1], workload.concurrency: [2, 0]}\n"),
                            "--out", str(tmp_path / "o")], "workload.concurrency", "greater than or equal to 1")
    values = ", ".join(map(str, range(20_000)))
    one_line_error(capsys, ["run", _file(tmp_path, MOE + f"sweep: {{seed: [{values}, 19999]}}\n", "big.yaml"),
                            "--out", str(tmp_path / "o")], "sweep", "over the limit")


def test_one_key_swept_under_two_spellings_is_refused(tmp_path, capsys):
    """Before: steps_by_batch.1 and .01 both ran as batch 1, and summary.csv labelled them apart."""
    text = MOE + "sweep: {speculative.policy.steps_by_batch.1: [2, 1], speculative.policy.steps_by_batch.01: [0]}\n"
    one_line_error(capsys, ["run", _file(tmp_path, text), "--out", str(tmp_path / "o")],
                   "sweep.speculative.policy.steps_by_batch.01", "names the same key")


@pytest.mark.parametrize("extra, key, word", [
    ("sweep: {question: [a, b]}\n", "sweep.question", "the same run"),
    ("sweep: {name: [a, b]}\n", "sweep.name", "the same run"),
    ("cost: {model: roofline}\nsweep: {cost.profile: [h200-sglang, h200-vllm]}\n", "sweep.cost.profile", "the same run"),
    ("sweep: {acceptance.spread: [0, 0.0]}\n", "sweep.acceptance.spread", "more than once"),
    ("sweep: {speculative: [{design: nextn, steps: 1}, {steps: 1, design: nextn}]}\n", "sweep.speculative",
     "more than once"),
])
def test_a_sweep_whose_points_are_the_same_run_warns(tmp_path, capsys, extra, key, word):
    """Before: identical points, each labelled as a different one, without a word."""
    lines = warnings_of(capsys, ["cost", _file(tmp_path, MOE.replace("search: {tp: [8], ep: [8], attention_dp: [1], "
                                                                     "concurrency: [1, 8], requests_per_user: 2}\n", "")
                                             + extra)])
    assert any(f": {key}: " in line and word in line for line in lines), lines


@pytest.fixture
def run_folder(tmp_path):
    folder = tmp_path / "r"
    assert cli.main(["run", _file(tmp_path, DENSE), "--out", str(folder), "--trace", "--jobs", "1"]) == 0
    return folder


def _edit_csv(path, edit):
    rows = [line.split(",") for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")


def _drop(column):
    def edit(rows):
        i = rows[0].index(column)
        for r in rows:
            del r[i]
    return edit


def _put(column, value):
    def edit(rows):
        rows[1][rows[0].index(column)] = value
    return edit


@pytest.mark.parametrize("name, edit, key, word", [
    ("iterations.csv", _drop("draft_s"), "draft_s", "missing column"),
    ("iterations.csv", _put("verify_s", "x"), "verify_s", "not a number"),
    ("iterations.csv", _put("kind", "banana"), "kind", "not one a run writes"),
    ("passes.csv", _drop("kind"), "kind", "missing column"),
    ("passes.csv", _drop("duration_s"), "duration_s", "missing column"),
    ("summary.csv", _put("verify_share", "lots"), "verify_share", "not a number"),
    ("summary.csv", _put("verify_share", "inf"), "verify_share", "not a number"),
    ("iterations.csv", lambda rows: rows.__setitem__(slice(1, None), [r[:-1] + ["5"] for r in rows[1:]]), "point",
     "no row for point 0"),
])
def test_plot_of_a_hand_edited_run_folder_is_one_line(run_folder, capsys, name, edit, key, word):
    """Before: AttributeError / TypeError tracebacks, matplotlib's own warnings, or a row drawn nowhere."""
    _edit_csv(run_folder / name, edit)
    capsys.readouterr()
    one_line_error(capsys, ["plot", str(run_folder)], key, word)


def test_a_symbolic_link_as_a_profile_folder_is_refused_before_the_work(tmp_path, capsys):
    """Before: the conversion ran, then staging failed on the link (an rmtree error on <stdout>)."""
    (tmp_path / "t").mkdir()
    (tmp_path / "p").symlink_to(tmp_path / "t")
    one_line_error(capsys, ["calibrate", "--from", "aiconfigurator", "--out", str(tmp_path / "p")], "",
                   "symbolic link")


def test_seeds_past_the_largest_seed_name_seeds(tmp_path, capsys):
    """Before: blamed on `seed` with a value nobody wrote (the largest seed + 1)."""
    one_line_error(capsys, ["run", _file(tmp_path, DENSE + "seed: 9223372036854775807\nseeds: 2\n"), "--out",
                            str(tmp_path / "o")], "seeds", "past the largest seed")
    one_line_error(capsys, ["run", _file(tmp_path, DENSE, "b.yaml"), "--set", "seed=9223372036854775807", "--seeds", "2",
                            "--out", str(tmp_path / "o")], "", "past the largest seed")


@pytest.mark.parametrize("extra, key", [
    ("workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 1}\n", "workload.output_len"),
    ("workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 8, "
     "shared_prefix: {tokens: 16, fraction: 0}}\n", "workload.shared_prefix.fraction"),
    ("workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 8, shared_prefix: {tokens: 16}}\n"
     "engine: {prefix_cache: {enabled: false}}\n", "workload.shared_prefix"),
    ("workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n"
     "engine: {dp_routing: cache_aware}\n", "engine.dp_routing"),
])
def test_settings_that_change_nothing_warn(tmp_path, capsys, extra, key):
    text = DENSE.replace("workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n",
                         extra)
    lines = warnings_of(capsys, ["cost", _file(tmp_path, text)])
    assert any(f": {key}: " in line for line in lines), lines


def test_a_hardware_file_of_the_users_own_gets_the_inline_forms_profile_checks(tmp_path, capsys, monkeypatch):
    """Before: a user catalog's GPU naming another GPU's profile ran on the roofline without a line,
    and a file keeping a built-in GPU's name with another bandwidth was priced by that GPU's profile,
    the new rate ignored, also without a line (the inline forms said both)."""
    from mtpsim.packagedata import data_dir
    shipped = (data_dir() / "hardware" / "h200.yaml").read_text()
    (tmp_path / "cat" / "hardware").mkdir(parents=True)
    (tmp_path / "cat" / "hardware" / "myhw.yaml").write_text(
        shipped.replace("name: h200", "name: myhw") + "\nprofiles: {sglang: b200-sglang}\n"
        if "profiles:" not in shipped else
        "\n".join("profiles: {sglang: b200-sglang}" if line.startswith("profiles:") else
                  line.replace("name: h200", "name: myhw") for line in shipped.splitlines()) + "\n")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, ["cost", _file(tmp_path, MOE.replace("hardware: h200", "hardware: myhw"))],
                          "profiles.sglang", "measured on 'b200'")
    assert "myhw.yaml: profiles.sglang: " in line, line  # the user's file holds the key, not the scenario
    monkeypatch.delenv("MTPSIM_CATALOG")
    (tmp_path / "h200.yaml").write_text("\n".join(
        "memory_bandwidth_bytes_per_s: 4.8e15" if line.startswith("memory_bandwidth_bytes_per_s:") else line
        for line in shipped.splitlines()) + "\n")
    lines = warnings_of(capsys, ["cost", _file(tmp_path, MOE.replace("hardware: h200", "hardware: ./h200.yaml"), "b.yaml")])
    assert any("h200.yaml: memory_bandwidth_bytes_per_s: profile 'h200-sglang' prices the ops" in line
               for line in lines), lines


def test_recommend_takes_the_scenarios_seeds_when_no_flag_gives_them(tmp_path):
    """Before: --seeds' default 3 won over the scenario's `seeds: 2` without a word."""
    import pandas as pd
    assert cli.main(["recommend", _file(tmp_path, DENSE + "seeds: 2\n"), "--batch", "1", "--max-steps", "1", "--jobs", "1",
                     "--out", str(tmp_path / "o")]) == 0
    assert set(pd.read_csv(tmp_path / "o" / "grid.csv").seeds) == {2}


def test_a_search_target_given_twice_is_refused(tmp_path, capsys):
    """Before: the last --tpot won without a word."""
    with pytest.raises(SystemExit) as stop:  # argparse's own exit, after its one line
        cli.main(["search", _file(tmp_path, MOE), "--gpus", "8", "--tpot", "p99:1ms", "--tpot", "p99:10s"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--tpot: given more than once" in err[0], err


# ------------------------------------------------------------------ the second campaign's variants

@pytest.mark.parametrize("argv", [["search", "S", "--gpus", "1", "--gpus", "2"], ["cost", "S", "--batch", "1", "--batch", "2"],
                                  ["run", "S", "--out=a", "--out", "b"], ["recommend", "S", "--seeds", "1", "--seeds", "2"]])
def test_a_one_value_flag_given_twice_is_refused(tmp_path, capsys, argv):
    """Before: argparse kept the last without a word (--out a --out b wrote only b)."""
    argv = [a if a != "S" else _file(tmp_path, DENSE) for a in argv]
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "given more than once" in err[0], err


def test_a_key_set_twice_is_refused(tmp_path, capsys):
    one_line_error(capsys, ["cost", _file(tmp_path, DENSE), "--set", "workload.concurrency=1", "--set",
                            "workload.concurrency=2"], "workload.concurrency", "given twice")


def test_the_cap_warning_counts_a_replicas_share_and_a_prefill_study_does_not_warn(tmp_path, capsys):
    """Two replicas of 45 users each run under a cap of 48 (run spreads the load); a `none` run of
    one output token is a prefill study, not nonsense."""
    text = DENSE.replace("concurrency: 1, num_requests: 2", "concurrency: 90, num_requests: 90") + "parallel: {dp: 2}\n"
    assert not any("running-request cap" in line for line in warnings_of(capsys, ["cost", _file(tmp_path, text)]))
    prefill = DENSE.replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none") \
        .replace("acceptance: {per_depth: [0.9, 0.6, 0.3]}\n", "").replace("output_len: 8", "output_len: 1")
    assert not any("output_len" in line for line in warnings_of(capsys, ["cost", _file(tmp_path, prefill, "p.yaml")]))


def test_a_size_column_takes_no_wildcard_unless_older_profiles_lack_it(tmp_path, capsys):
    """Before: a wildcard in a size column passed the check and then divided: a TypeError traceback."""
    scenario = _profile(tmp_path, "alltoall", _set_cell("d", "*"))
    one_line_error(capsys, ["cost", scenario], "d", "whole number")


def _engine_catalog(tmp_path, monkeypatch, edit) -> None:
    from mtpsim.packagedata import data_dir
    (tmp_path / "cat" / "engines").mkdir(parents=True)
    text = (data_dir() / "engines" / "sglang.yaml").read_text()
    (tmp_path / "cat" / "engines" / "sglang.yaml").write_text(edit(text))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))


@pytest.mark.parametrize("edit, key, word", [
    (lambda t: t.replace("name: sglang", "name: vllm"), "name", "not the file's name"),
    (lambda t: t.replace("decode: {base_s: 0.5e-3", "decode: {base_s: 2.0"), "host.decode.base_s", "less than or equal"),
    (lambda t: t.replace("    value: 32\n", "    value: thirty-two\n", 1), "rules.0.value", "spec_running_cap_32"),
    (lambda t: t.replace('default: "0.5.12"', 'default: "1!0.5.12"'), "versions.default", "epoch"),
])
def test_an_engine_file_names_itself_and_its_key(tmp_path, capsys, monkeypatch, edit, key, word):
    """Before: engines/<name>.yaml (the name it claimed, not the file read), the key `rules` or
    `versions`, and pydantic's first line; a rule's bad value passed until a scenario picked its release."""
    _engine_catalog(tmp_path, monkeypatch, edit)
    line = one_line_error(capsys, ["cost", _file(tmp_path, MOE)], key, word)
    assert str(tmp_path / "cat" / "engines" / "sglang.yaml") in line


def test_a_version_with_an_epoch_is_unknown(tmp_path, capsys):
    """Before: '1!0.4.0' passed the known-release check and picked another release's rules."""
    one_line_error(capsys, ["cost", _file(tmp_path, MOE + "engine: {version: '1!0.4.0'}\n")], "engine.version", "unknown")


def test_search_of_a_one_token_trace_is_one_line(tmp_path, capsys):
    """Before: the trace's mean-lengths warning came before the refusal: two lines."""
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,1\n1,32,1\n")
    text = DENSE.replace("workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}",
                         "workload: {arrival: trace, trace: {path: t.csv}}")
    one_line_error(capsys, ["search", _file(tmp_path, text), "--gpus", "1", "--concurrency", "1", "--no-cache",
                            "--no-plot", "--out", str(tmp_path / "o")], "workload.trace", "time per output token")


@pytest.mark.parametrize("command", [["recommend", "--batch", "1", "--max-steps", "1", "--seeds", "2"],
                                     ["search", "--gpus", "1", "--concurrency", "1", "--no-cache", "--seeds", "2"]])
def test_seeds_past_the_largest_seed_are_refused_by_every_command(tmp_path, capsys, command):
    scenario = _file(tmp_path, DENSE + "seed: 9223372036854775807\n")
    one_line_error(capsys, [command[0], scenario, *command[1:], "--out", str(tmp_path / "o")], "", "past the largest seed")


@pytest.mark.parametrize("over, key", [("efficiency_bandwidth: 1.0e-308", "hardware.efficiency_bandwidth"),
                                       ("efficiency_flops: 1.0e-310", "hardware.efficiency_flops"),
                                       ("board_power_w: 1.0e-300", "hardware.board_power_w")])
def test_a_gpu_at_a_vanishing_share_of_its_peak_is_refused(tmp_path, capsys, over, key):
    """Before: op times overflowed to infinity (an OverflowError traceback) or printed 1e+305 ms."""
    text = MOE.replace("hardware: h200", f"hardware: {{from: h200, {over}}}")
    one_line_error(capsys, ["cost", _file(tmp_path, text)], key, "greater than or equal")


def test_a_catalog_listing_with_several_broken_entries_is_one_line(tmp_path, capsys, monkeypatch):
    """Before: one error line per broken entry, and a file whose stem is no name was not named."""
    models = tmp_path / "cat" / "models"
    models.mkdir(parents=True)
    (models / "bad1.yaml").write_text("- 1\n")
    (models / "a b.yaml").write_text("name: x\n")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    assert cli.main(["models"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a b.yaml" in err[0] and "1 more invalid models entries" in err[0], err


def test_a_long_model_name_is_refused_before_it_fills_a_line(tmp_path, capsys):
    line = one_line_error(capsys, ["cost", _file(tmp_path, MOE.replace("model: deepseek-v3", "model: {from: deepseek-v3, "
                                                                       f"name: {'x' * 5000}}}"))], "model.name", "")
    assert len(line) < 500


def test_a_changed_link_under_a_measured_profile_warns(tmp_path, capsys):
    """Before: the measured collectives priced the link, and the new figure changed nothing, silently."""
    lines = warnings_of(capsys, ["cost", _file(tmp_path, MOE.replace("hardware: h200",
                                                                     "hardware: {from: h200, link_latency_s: 40.0e-6}"))])
    assert any(": hardware.link_latency_s: profile 'h200-sglang' prices the ops" in line for line in lines), lines


def test_a_profile_conversion_into_the_current_folder_is_refused(tmp_path, capsys, monkeypatch):
    """Before: a ValueError traceback from staging (an empty name)."""
    monkeypatch.chdir(tmp_path)
    one_line_error(capsys, ["calibrate", "--from", "aiconfigurator", "--out", "."], "", "names no folder of its own")


def test_plot_checks_the_interval_summary_too(tmp_path, capsys):
    """Before: a seeds run's summary_ci.csv was read without its columns checked (tracebacks)."""
    folder = tmp_path / "r"
    assert cli.main(["run", _file(tmp_path, DENSE), "--out", str(folder), "--seeds", "2", "--jobs", "1"]) == 0
    _edit_csv(folder / "summary_ci.csv", _put("accept_length", "lots"))
    capsys.readouterr()
    one_line_error(capsys, ["plot", str(folder)], "accept_length", "not a number")


def test_a_catalog_entry_answers_to_its_file_name(tmp_path, capsys, monkeypatch):
    """Before: `model: aaa` ran under the header of its `name: zzz`, and `model: zzz` was unknown."""
    from mtpsim.packagedata import data_dir
    (tmp_path / "cat" / "models").mkdir(parents=True)
    (tmp_path / "cat" / "models" / "aaa.yaml").write_text(
        (data_dir() / "models" / "llama-3.1-8b.yaml").read_text().replace("name: llama-3.1-8b", "name: zzz"))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    one_line_error(capsys, ["cost", _file(tmp_path, DENSE.replace("model: llama-3.1-8b", "model: aaa"))], "name",
                   "not the file's name")


def test_an_ep_imbalance_past_the_ranks_is_refused(tmp_path, capsys):
    """Before: 64 on 32 EP ranks priced the busiest rank at twice all the tokens."""
    text = MOE.replace("search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}\n", "") \
        + "parallel: {tp: 8, ep: 8, attention_dp: 8}\ncost: {ep_imbalance: 16}\n"
    one_line_error(capsys, ["cost", _file(tmp_path, text)], "cost.ep_imbalance", "more than ep 8")


def test_search_of_a_disaggregated_scenario_names_the_section(tmp_path, capsys):
    """Before: blamed on --gpus ('no shard fits'), though the model fits."""
    text = MOE + "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}}\n"
    one_line_error(capsys, ["search", _file(tmp_path, text), "--gpus", "16", "--no-cache"], "disaggregation",
                   "lays out its own deployments")


@pytest.mark.parametrize("engine, key", [("{eplb: true}", "engine.eplb"),
                                         ("{cuda_graphs: false, max_graph_batch: 64}", "engine.max_graph_batch"),
                                         ("{prefix_cache: {enabled: false, block_tokens: 64}}",
                                          "engine.prefix_cache.block_tokens")])
def test_engine_settings_whose_mechanism_does_not_run_warn(tmp_path, capsys, engine, key):
    """Before: EPLB at ep 1 (no published imbalance below wide EP over 32 ranks), a graph batch
    limit without graphs, and a switched-off cache's block size all ran without a word."""
    text = MOE.replace("search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}\n", "") \
        + f"engine: {engine}\n"
    assert any(f": {key}: " in line for line in warnings_of(capsys, ["cost", _file(tmp_path, text)]))


def test_a_layout_beside_disaggregation_warns(tmp_path, capsys):
    """Before: a `parallel` of default values beside `disaggregation` was ignored without a word (other
    values are refused; each pool gives its own layout)."""
    text = MOE.replace("search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}\n", "") \
        + "parallel: {tp: 1, dp: 1}\ndisaggregation: {prefill: {tp: 8}, decode: {tp: 8}}\n"
    assert any(": parallel: with disaggregation" in line for line in warnings_of(capsys, ["cost", _file(tmp_path, text)]))


def test_verify_refusing_a_point_is_one_line_after_the_loaders_advice(tmp_path, capsys):
    """Before: the loader's warnings (here dp routing at dp 1) and verify's hardware note came
    before verify's own refusal of the external draft: three lines."""
    pytest.importorskip("torch")
    text = DENSE.replace("hardware: h100-sxm", "hardware: cpu").replace("arrival: closed", "arrival: batch") \
        + "engine: {dp_routing: cache_aware}\nverify: {num_layers: 1, iterations: 2, warmup_iterations: 0}\n"
    one_line_error(capsys, ["verify", _file(tmp_path, text), "--out", str(tmp_path / "o")], "speculative.draft",
                   "external draft")


def test_a_bad_point_of_a_sweep_the_flag_gave_names_set(tmp_path, capsys):
    """Before: a point of `--set sweep=...` that failed was blamed on the file, which sweeps nothing;
    the same point swept by the file is still the file's."""
    line = one_line_error(capsys, ["cost", _file(tmp_path, DENSE), "--set", "sweep={workload.concurrency: [1, 0]}"],
                          "workload.concurrency", "greater than or equal to 1")
    assert line.startswith("mtpsim: error: --set: "), line
    line = one_line_error(capsys, ["cost", _file(tmp_path, DENSE + "sweep: {workload.concurrency: [1, 0]}\n", "b.yaml"),
                                   "--set", "seed=3"], "workload.concurrency", "greater than or equal to 1")
    assert "b.yaml" in line


def test_kv_streaming_over_a_free_link_warns(tmp_path, capsys):
    text = MOE.replace("search: {tp: [8], ep: [8], attention_dp: [1], concurrency: [1, 8], requests_per_user: 2}\n", "") \
        + "disaggregation: {prefill: {tp: 8}, decode: {tp: 8}, link: free, kv_streaming: true}\n"
    assert any(": disaggregation.kv_streaming: link free" in line
               for line in warnings_of(capsys, ["cost", _file(tmp_path, text)]))


def test_drafts_never_accepted_warn_where_the_sweep_varies_the_acceptance(tmp_path, capsys):
    """A sweep over the acceptance section whose second point never accepts draft 2: advise() left
    the swept key alone and advise_sweep speaks only of warnings every point has, so its wasted
    draft went unsaid. A warning that the point runs otherwise than written is said at each point."""
    text = PROFILE_BASE.replace("cost: {profile: PROF}\n", "") + \
        "sweep:\n  acceptance: [{per_depth: [0.8, 0.7]}, {per_depth: [0.8, 0.0]}]\n"
    lines = warnings_of(capsys, ["run", _file(tmp_path, text), "--out", str(tmp_path / "o")])
    assert any(": acceptance." in line and "only cost time" in line for line in lines), lines
