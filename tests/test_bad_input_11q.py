"""Bad and odd input to `mtpsim search`, `recommend` and `run`'s sweeps (campaign 11q), one test
per class: each says what happened before the fix."""
from __future__ import annotations

from tests.test_bad_input import LLAMA, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

SMALL = LLAMA.replace("tp: 8", "tp: 1")
NEXTN = SMALL.replace("speculative: {design: none, steps: 2}",
                      "speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\n"
                      "acceptance: {per_depth: [0.8, 0.7]}")
SEARCH = NEXTN + "search: {concurrency: [1, 2], requests_per_user: 2}\n"


def _search(tmp_path, text: str, *flags: str) -> list[str]:
    argv = run(tmp_path, text)
    return ["search", argv[1], "--gpus", "1", "--no-cache", "--no-plot", "--out", str(tmp_path / "out"), *flags]


def _recommend(tmp_path, text: str, *flags: str) -> list[str]:
    argv = run(tmp_path, text)
    return ["recommend", argv[1], "--batch", "1", "--seeds", "1", "--out", str(tmp_path / "out"), *flags]


def test_a_one_point_command_given_a_sweep_warns_and_names_the_point_it_refuses(tmp_path, capsys):
    """Before: search, recommend and cost ran the first point with only a note on stdout, search
    warned that a swept search key is read by `mtpsim search` only (while being that command),
    and recommend refused a sweep of [none, nextn] as `this scenario's is none`."""
    swept = SEARCH.replace("search: {", "sweep: {search.requests_per_user: [2, 3]}\nsearch: {")
    found = warnings_of(capsys, _search(tmp_path, swept))
    assert len(found) == 1 and ": sweep: search uses one point" in found[0], found
    assert "search.requests_per_user=2" in found[0] and "only `mtpsim search`" not in found[0]
    (tmp_path / "r").mkdir()
    found = warnings_of(capsys, _recommend(tmp_path / "r", NEXTN + "sweep: {speculative.steps: [2, 1]}\n"))
    assert any(": sweep: recommend uses one point" in w and "speculative.steps=2" in w for w in found), found
    (tmp_path / "c").mkdir()
    found = warnings_of(capsys, ["cost", run(tmp_path / "c", NEXTN + "sweep: {speculative.steps: [2, 1]}\n")[1]])
    assert any(": sweep: cost uses one point" in w for w in found), found
    (tmp_path / "n").mkdir()
    line = one_line_error(capsys, _recommend(tmp_path / "n", NEXTN + "sweep: {speculative.design: [none, nextn]}\n"),
                          "speculative.design", "is none")
    assert "sweep point 1 of 2: speculative.design='none', the one recommend uses" in line
    (tmp_path / "o").mkdir()
    line = one_line_error(capsys, _search(tmp_path / "o", SEARCH + "sweep: {workload.output_len: [1, 16]}\n"),
                          "workload.output_len", "one output token")
    assert "sweep point 1 of 2" in line


def test_a_search_bound_is_blamed_where_it_was_given(tmp_path, capsys):
    """Before: a tree width the acceptance cannot serve (no per-rank columns) was blamed on
    `acceptance` whether --topk, search.topk or recommend's --topk asked for it, and a
    search.max_steps past the acceptance was warned on --max-steps, a flag not given."""
    line = one_line_error(capsys, _search(tmp_path, SEARCH, "--topk", "1,2"), "", "topk 2")
    assert line.startswith("mtpsim: error: --topk: ")
    line = one_line_error(capsys, _search(tmp_path, SEARCH.replace("search: {", "search: {topk: [1, 3], ")),
                          "search.topk", "per_depth_topk")
    assert "s.yaml" in line
    line = one_line_error(capsys, _recommend(tmp_path, NEXTN, "--topk", "2"), "", "per_depth_topk")
    assert line.startswith("mtpsim: error: --topk: ")
    found = warnings_of(capsys, _search(tmp_path, SEARCH.replace("search: {", "search: {max_steps: 9, ")))
    assert any(": search.max_steps: 9 asked, 2 compared" in w for w in found), found
    assert not any("--max-steps" in w for w in found), found


def test_the_run_header_says_when_a_sweep_varies_what_it_names(tmp_path, capsys):
    """Before: a sweep of engine.kind printed `engine sglang` over vLLM's and TensorRT-LLM's rows,
    and one of parallel.tp `(1 replica x tp 1)` over tp 2's: only a swept model or hardware said
    the header is the first point's."""
    from mtpsim import cli
    for sweep, word in (("{engine.kind: [sglang, vllm]}", "engine swept"), ("{parallel.tp: [1, 2]}", "layout swept")):
        (tmp_path / word).mkdir()
        assert cli.main(run(tmp_path / word, NEXTN + f"sweep: {sweep}\n")) == 0
        header = capsys.readouterr().out.splitlines()[0]
        assert f"(the first point; {word}: see the columns)" in header, header
    (tmp_path / "one").mkdir()
    assert cli.main(run(tmp_path / "one", NEXTN + "sweep: {speculative.steps: [1, 2]}\n")) == 0
    assert "the first point" not in capsys.readouterr().out.splitlines()[0]


def test_a_swept_seed_under_replicates_keeps_its_column_and_warns_of_shared_seeds(tmp_path, capsys):
    """Before: with --seeds 2 a sweep of seed [0, 5] printed two rows told apart by nothing (the
    seeds' mean dropped the swept column), and seed [0, 1] shared seed 1 between its points (and
    ran that baseline once) without a word."""
    from mtpsim import cli
    assert cli.main(run(tmp_path, NEXTN + "sweep: {seed: [0, 5]}\n") + ["--seeds", "2"]) == 0
    captured = capsys.readouterr()
    assert "mtpsim: warning:" not in captured.err, captured.err
    table = captured.out.splitlines()
    head = next(i for i, line in enumerate(table) if line.lstrip().startswith("design"))
    assert table[head].split()[-1] == "seed", table[head]
    assert [line.split()[-1] for line in table[head + 1: head + 3]] == ["0", "5"]
    (tmp_path / "near").mkdir()
    found = warnings_of(capsys, run(tmp_path / "near", NEXTN + "sweep: {seed: [0, 1]}\n") + ["--seeds", "2"])
    assert any(": sweep.seed: seeds 0 and 1 are under 2 apart" in w and "share seed 1 " in w for w in found), found


def test_a_search_of_a_poisson_scenario_says_it_runs_closed_loop_users(tmp_path, capsys):
    """Before: the scenario's Poisson arrivals were replaced by the closed-loop ladder without a
    word (recommend warned of the same)."""
    poisson = SEARCH.replace("workload: {concurrency: 2,", "workload: {arrival: poisson, rate_per_s: 5,")
    found = warnings_of(capsys, _search(tmp_path, poisson))
    assert any(": workload.arrival: search runs closed-loop users" in w for w in found), found
    (tmp_path / "r").mkdir()
    found = warnings_of(capsys, _search(tmp_path / "r", poisson, "--rates", "1"))
    assert not any("workload.arrival" in w for w in found), found


def test_targets_no_point_meets_are_blamed_on_the_flag_that_binds(tmp_path, capsys):
    """Before: `mtpsim: error: targets: ...`, a name that is neither a file nor a flag."""
    line = one_line_error(capsys, _search(tmp_path, SEARCH, "--ttft", "p99:1s", "--tpot", "p50:0.001ms"), "", "--tpot")
    assert line.startswith("mtpsim: error: --tpot: no point meets --tpot"), line


def test_a_cache_that_is_a_run_folder_is_refused(tmp_path, capsys):
    """Before: a search given a finished run's folder as --cache wrote its entries among that
    run's results."""
    from mtpsim import cli
    assert cli.main(run(tmp_path, NEXTN)) == 0
    capsys.readouterr()
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    (tmp_path / "s").mkdir()
    argv = _search(tmp_path / "s", SEARCH)
    argv[argv.index("--no-cache")] = "--cache=" + str(tmp_path / "out")
    one_line_error(capsys, argv, "", "is a run folder")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before


def test_recommends_policy_keys_are_a_replicas_running_batch(tmp_path, capsys):
    """Before: with dp replicas the policy line keyed each pick by the users over all replicas,
    while a policy's key is one replica's running batch (sim/engine.py iteration_at): a pick
    measured at 8 users over 4 replicas (2 each) took effect only at 32 users."""
    from mtpsim import cli
    from mtpsim.recommend import policy_line
    from tests.test_recommend import table
    picks = table([3, 3, 2, 0, 0], batches=(2, 4, 8, 16, 32))
    assert policy_line(picks).startswith("policy: {steps_by_batch: {1: 3, 8: 2, 16: 0}}")
    assert policy_line(picks, 4).startswith("policy: {steps_by_batch: {1: 3, 2: 2, 4: 0}}")
    assert policy_line(table([3, 2, 0], batches=(1, 2, 4)), 2).startswith("policy: {steps_by_batch: {1: 2, 2: 0}}")
    assert cli.main(_recommend(tmp_path, NEXTN.replace("tp: 1", "tp: 1, dp: 2"))) == 0
    assert "keys per replica: batch / 2 replicas" in capsys.readouterr().out


UNFIT = SMALL.replace("hardware: h200", "hardware: {from: h200, memory_capacity_bytes: 24e9}").replace(
    "speculative: {design: none, steps: 2}", "speculative: {design: none, draft: eagle3-llama-3.1-8b}\n"
    "acceptance: {per_depth: [0.8, 0.7]}") + \
    "search: {concurrency: [1, 2], requests_per_user: 2, designs: [none, nextn]}\n"


def test_a_searched_design_whose_draft_does_not_fit_is_left_out_before_anything_runs(tmp_path, capsys):
    """Before: layouts were kept for the scenario's own design (none) only; nextn's draft left no
    KV pool on one GPU, and its points failed in a worker after the folder was claimed and the
    warnings said: a warning and an error blaming engine.mem_fraction, which the file never set."""
    line = one_line_error(capsys, _search(tmp_path, UNFIT), "search.designs", "fits on none of the 1 layouts")
    assert "nextn S=1" in line and "KV pool" in line
    assert not (tmp_path / "out").exists()
    (tmp_path / "two").mkdir()
    argv = _search(tmp_path / "two", UNFIT)
    argv[argv.index("--gpus") + 1] = "2"
    found = warnings_of(capsys, argv)
    assert any(": search.designs: nextn: 2 of its 6 settings x layouts do not fit" in w for w in found), found
    import pandas as pd
    rows = pd.read_csv(tmp_path / "two" / "out" / "frontier.csv")
    assert set(rows[rows.design == "nextn"].layout) == {"1x tp2 ep1 adp1", "1x tp2 ep1 adp2"}
    assert set(rows[rows.design == "none"].layout) == {"1x tp2 ep1 adp1", "1x tp2 ep1 adp2", "2x tp1 ep1 adp1"}


def test_a_draft_a_searched_design_takes_is_not_called_ignored(tmp_path, capsys):
    """Before: a none scenario searching [none, nextn] with an external draft was warned that
    `design none takes no external draft: it is ignored`, while nextn's points ran it (its
    acceptance was already spared the same warning)."""
    text = UNFIT.replace("hardware: {from: h200, memory_capacity_bytes: 24e9}", "hardware: h200")
    found = warnings_of(capsys, _search(tmp_path, text))
    assert not any("speculative.draft" in w for w in found), found
    (tmp_path / "none").mkdir()
    found = warnings_of(capsys, _search(tmp_path / "none", text.replace("designs: [none, nextn]", "designs: [none]")))
    assert any(": speculative.draft: design none takes no external draft" in w for w in found), found


def test_a_disaggregated_split_is_not_built_of_shards_a_searched_draft_does_not_fit(tmp_path, capsys):
    """Before: --disagg split the shards kept for the scenario's own design (none), so nextn's
    prefill pool of one GPU failed in a worker: a warning, then an error naming
    disaggregation.prefill, a section the file never had."""
    argv = _search(tmp_path, UNFIT, "--disagg")
    argv[argv.index("--gpus") + 1] = "2"
    warnings_of(capsys, argv)
    import pandas as pd
    rows = pd.read_csv(tmp_path / "out" / "frontier.csv")
    split = rows[rows["mode"] == "disagg"]
    assert len(split) and set(split.design) == {"none"}, rows[["mode", "layout", "design"]]
