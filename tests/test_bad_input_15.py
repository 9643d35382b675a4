"""A fifteenth adversarial campaign, aimed at the newer keys and commands (about 1,950 inputs:
engine.version spellings, engine.mem_fraction, speculative_overlap, overlap_schedule,
prefix_cache, chunked_prefill_tokens, cost.routing_locality and moe_stream_overlap, design block
with its DSpark drafters, taps, block sizes and kept-length curves, steps_by_batch with adaptive
widths, user engine files in MTPSIM_CATALOG, sweeps and --set over all of them, ~260 random
combinations; and the less probed commands: recommend, search, engines, calibrate --from
aiconfigurator with every system and backend, verify, plot on odd and on real run folders).
The inputs and what each did are kept out of the repo. 35 failed, in eight classes, one
test each below (each docstring says what happened before the fix):
- verify refused a shrunken model too big for the device after a warning, or after earlier
  sweep points' loops had run (verify/command.py: every point checked in the loader's hold);
- a sweep over the verify section ran identical points without a word (advice.swept_verify);
- a --set inside the verify or search section, on a command that ignores it, was silent;
- settings another setting makes moot ran silent (engine_advice.py: a prefix-cache size with
  the cache off, a speculative overlap without the overlap scheduler, a routing locality under
  design none);
- recommend and search judged the scenario's policy, kept-length and histogram depth and a
  mixing engine's token budget against its own steps and users, which they replace
  (advice.GRID_CHECKS; the budget at their own points: budget_advice.budget_at_points);
- an empty release in a user's engine file was an IndexError traceback (engine_releases.py);
- a swept seed made plot refuse the run's own folder, and a swept engine section's column was
  overwritten with the engine's name (run_reader.py, run.py);
- `mtpsim engines` listed a user's engine file that no engine.kind can name (listing.py)."""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input import BASE, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_11p import _stub_verify

VERIFY_H200 = BASE.replace("workload: {concurrency: 2, num_requests: 4,", "workload: {arrival: batch, num_requests: 2,") + \
    "verify: {num_layers: 1, hidden_scale: 0.01, iterations: 2, warmup_iterations: 0, device: cpu}\n"


@pytest.mark.parametrize("how", ["file", "sweep"])
def test_verify_checks_every_points_memory_before_any_warning_or_loop(tmp_path, capsys, monkeypatch, how):
    """Before: verify checked that a point's shrunken model fits this device inside that point's
    verification, after the warning that the loop runs on this CPU and not on the scenario's
    8 h200 (two lines for one bad verify.hidden_scale); in a sweep of hidden_scale [0.01, 1] the
    first point's real loop ran (and printed its table) before the second was refused. The loop
    itself is stubbed here: the check must come before it."""
    _stub_verify(monkeypatch)
    text = VERIFY_H200 + ("sweep: {verify.hidden_scale: [0.01, 1]}\n" if how == "sweep" else "")
    if how == "file":
        text = text.replace("hidden_scale: 0.01", "hidden_scale: 1")
    argv = ["verify", run(tmp_path, text)[1], "--out", str(tmp_path / "v")]
    one_line_error(capsys, argv, "verify.hidden_scale", "does not fit this device")
    assert not (tmp_path / "v").exists()


def test_a_sweep_over_the_verify_section_warns_where_nothing_reads_it(tmp_path, capsys, monkeypatch):
    """Before: `mtpsim run` of a sweep over verify.num_layers ran the same simulation at every
    point without a word (a sweep over the search section said so); `mtpsim verify`, which
    builds what that section says, takes such a sweep as it is."""
    text = BASE + "sweep: {verify.num_layers: [1, 2]}\n"
    assert cli.main(run(tmp_path, text) + ["--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "sweep.verify.num_layers: only `mtpsim verify` reads the verify section" in err, err
    _stub_verify(monkeypatch)
    path = run(tmp_path, VERIFY_H200 + "sweep: {verify.num_layers: [1, 2]}\n")[1]
    assert cli.main(["verify", path, "--out", str(tmp_path / "v")]) == 0
    assert "only `mtpsim verify`" not in capsys.readouterr().err


NONE = BASE.replace("design: nextn, steps: 2", "design: none").replace("acceptance: {per_depth: [0.8, 0.7]}\n", "")
MOOT = [  # (id, scenario, the key warned of, a word of the reason, a sweep over what makes it matter)
    ("cache-off-size", BASE + "engine: {prefix_cache: {enabled: false, max_tokens: 100}}\n",
     "engine.prefix_cache.max_tokens", "the prefix cache is off", "engine.prefix_cache.enabled: [false, true]"),
    ("overlap-without-scheduler", BASE + "engine: {overlap_schedule: false, speculative_overlap: true}\n",
     "engine.speculative_overlap", "engine.overlap_schedule is false", "engine.overlap_schedule: [false, true]"),
    ("locality-without-drafts", NONE + "acceptance: {per_depth: [0.8]}\ncost: {routing_locality: 0.5}\n",
     "cost.routing_locality", "design none", "speculative: [{design: none}, {design: nextn, steps: 1}]"),
]


@pytest.mark.parametrize("text,key,word,sweep", [c[1:] for c in MOOT], ids=[c[0] for c in MOOT])
def test_an_engine_or_cost_setting_another_setting_makes_moot_is_warned_of(tmp_path, capsys, text, key, word, sweep):
    """Before: each ran without a word and changed nothing: a prefix-cache size limit with the
    cache off (its block size was warned of), a speculative overlap without the overlap scheduler
    that hides host work (costs/iteration.py hiding_window), and a routing locality under design
    none, whose passes bring one token per request (costs/ffn.py shared_routing). A sweep over
    what makes them matter at other points leaves them alone."""
    lines = warnings_of(capsys, run(tmp_path, text) + ["--jobs", "1"])
    assert any(f": {key}: " in line and word in line for line in lines), lines
    (tmp_path / "swept").mkdir()
    lines = warnings_of(capsys, run(tmp_path / "swept", text + f"sweep: {{{sweep}}}\n") + ["--jobs", "1"])
    assert not any(f": {key}: " in line for line in lines), lines


@pytest.mark.parametrize("command,flag,key", [
    ("run", "verify.num_layers=3", "verify.num_layers"), ("run", "verify={num_layers: 3}", "verify"),
    ("cost", "search.gpus=16", "search.gpus"), ("recommend", "verify.device=cpu", "verify.device"),
    ("search", "verify.iterations=3", "verify.iterations")])
def test_a_set_inside_a_section_only_another_command_reads_is_warned_of(tmp_path, capsys, command, flag, key):
    """Before: `mtpsim run --set verify.num_layers=3` (or cost, recommend and search given a key
    of the verify or search section, which only `mtpsim verify` and `mtpsim search` read) ran
    without a word, the flag asked for ignored; a sweep over the search section was warned of."""
    argv = run(tmp_path, BASE)
    out = str(tmp_path / "out")
    argv = {"run": argv + ["--jobs", "1"], "cost": ["cost", argv[1]],
            "recommend": ["recommend", argv[1], "--batch", "1", "--seeds", "1", "--jobs", "1", "--out", out],
            "search": ["search", argv[1], "--gpus", "8", "--concurrency", "1", "--max-steps", "1", "--jobs", "1",
                       "--no-cache", "--no-plot", "--out", out]}[command]
    lines = warnings_of(capsys, argv + ["--set", flag])
    section = key.split(".")[0]
    assert any(line.startswith(f"mtpsim: warning: --set: {key}: only `mtpsim {section}` reads") for line in lines), lines
    (tmp_path / "again").mkdir()
    path = run(tmp_path / "again", BASE + "search: {gpus: 8}\nverify: {num_layers: 1}\n")[1]
    lines = warnings_of(capsys, ["cost", path])  # the file's own sections are for their commands: quiet
    assert not any("only `mtpsim" in line for line in lines), lines


@pytest.mark.parametrize("command", ["recommend", "search"])
@pytest.mark.parametrize("what", ["{1: 2, 4: 1}", "{1: 0}", "kept", "histogram"])
def test_recommend_and_search_do_not_judge_steps_they_do_not_run(tmp_path, capsys, command, what):
    """Before: recommend and search said the scenario's steps_by_batch policy is not used, and
    then judged it as if it ran: `steps_by_batch.4: no iteration of this workload runs more than
    2 requests (workload.concurrency), so this entry is never used` (their own batches and loads
    replace the workload's users), or that it never speculates: two lines about one ignored key.
    A kept-length curve deeper than speculative.steps 2 was said to count past 2 as keeping all,
    and a histogram of 3 accepted drafts to be used to depth 2 only, while they compared steps
    1..4 and 1..3, which use them whole."""
    if what == "kept":
        text = BASE.replace("[0.8, 0.7]}", "[0.8, 0.7, 0.6, 0.5], kept_length: [0.1, 0.2, 0.3, 0.2, 0.2]}")
    elif what == "histogram":
        (tmp_path / "h.csv").write_text("accepted,count\n0,10\n1,20\n2,30\n3,40\n")
        text = BASE.replace("per_depth: [0.8, 0.7]", f"histogram: {tmp_path / 'h.csv'}")
    else:
        text = BASE.replace("steps: 2}", f"steps: 2, policy: {{steps_by_batch: {what}}}}}")
    path, out = run(tmp_path, text)[1], str(tmp_path / "out")
    argv = {"recommend": ["recommend", path, "--batch", "1,4", "--seeds", "1", "--jobs", "1", "--out", out],
            "search": ["search", path, "--gpus", "8", "--concurrency", "1,4", "--max-steps", "4", "--jobs", "1",
                       "--no-cache", "--no-plot", "--out", out]}[command]
    lines = warnings_of(capsys, argv)
    if what in ("kept", "histogram"):
        key = {"kept": "acceptance.kept_length", "histogram": "acceptance.histogram"}[what]
        assert not any(key in line for line in lines), lines
        (tmp_path / "run").mkdir()  # `mtpsim run` runs speculative.steps, and says so
        lines = warnings_of(capsys, run(tmp_path / "run", text) + ["--jobs", "1"])
        assert any(f": {key}: " in line for line in lines), lines
        return
    assert [line for line in lines if "speculative.policy" in line] == \
        [next(line for line in lines if ": speculative.policy: " in line and "not used" in line)], lines


@pytest.mark.parametrize("where,key", [("default", "versions.default"), ("known", "versions.known"),
                                       ("since", "rules.0.since")])
def test_an_empty_release_in_a_users_engine_file_is_one_line(tmp_path, capsys, monkeypatch, where, key):
    """Before: an empty release in an engine file of MTPSIM_CATALOG (versions.default: "", a
    known release "", a rule's since: "") was an `IndexError: string index out of range`
    traceback: the test for a leading 'v', `text[:1] in "vV"`, holds for an empty text."""
    import yaml

    from mtpsim.packagedata import data_dir
    engine = yaml.safe_load((data_dir() / "engines" / "trtllm.yaml").read_text())
    if where == "default":
        engine["versions"]["default"] = ""
    elif where == "known":
        engine["versions"]["known"].append("")
    else:
        engine["rules"][0]["since"] = ""
    (tmp_path / "cat" / "engines").mkdir(parents=True)
    (tmp_path / "cat" / "engines" / "trtllm.yaml").write_text(yaml.safe_dump(engine, sort_keys=False))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, run(tmp_path, BASE + "engine: {kind: trtllm}\n"), key, "not a release number")
    assert "engines/trtllm.yaml" in line


@pytest.mark.parametrize("key", ["seed", "engine"])
def test_a_swept_seed_or_engine_section_keeps_its_own_column(tmp_path, capsys, key):
    """Before: a swept top-level key whose name is also a column the run adds was misread or
    overwritten. `sweep: {seed: [1, 2]}` (one seed a point) wrote its `seed` column into
    summary.csv alone, as any swept key, and `mtpsim plot` took it for replicates and refused the
    run's own folder (`requests.csv: seed: has no seed column, and summary.csv's runs are over
    seeds: the folder's tables come from different runs`); `sweep: {engine: [{mem_fraction: 0.8},
    {mem_fraction: 0.85}]}` wrote `sglang` in both points' engine column, the engine's name over
    the swept value, so nothing told the rows apart."""
    import pandas as pd
    sweep = {"seed": "seed: [1, 2]", "engine": "engine: [{mem_fraction: 0.8}, {mem_fraction: 0.85}]"}[key]
    argv = run(tmp_path, BASE + f"sweep: {{{sweep}}}\n")
    assert cli.main(argv + ["--jobs", "1"]) == 0
    capsys.readouterr()
    if key == "engine":
        summary = pd.read_csv(tmp_path / "out" / "summary.csv")
        assert list(summary.engine[summary.point >= 0]) == ["mem_fraction=0.8", "mem_fraction=0.85"]
    assert cli.main(["plot", argv[3]]) == 0, capsys.readouterr().err


def test_engines_refuses_an_engine_file_no_scenario_can_name(tmp_path, capsys, monkeypatch):
    """Before: `mtpsim engines` listed a user's engines/foo.yaml (MTPSIM_CATALOG) with its
    releases and rules as any engine, exit status 0, while every scenario naming it is refused
    (engine.kind is sglang, vllm or trtllm): as a file whose stem is no catalog name, it is an
    entry no scenario can use."""
    from mtpsim.packagedata import data_dir
    (tmp_path / "cat" / "engines").mkdir(parents=True)
    text = (data_dir() / "engines" / "trtllm.yaml").read_text().replace("name: trtllm", "name: foo")
    (tmp_path / "cat" / "engines" / "foo.yaml").write_text(text)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, ["engines"], "", "no engine a scenario can name")
    assert "engines/foo.yaml" in line


@pytest.mark.parametrize("command", ["recommend", "search"])
@pytest.mark.parametrize("budget,loads,said", [(4, "1", None), (9, "1,4", "4 running requests x 3 tokens")])
def test_recommend_and_search_judge_a_token_budget_at_their_own_loads(tmp_path, capsys, command, budget, loads, said):
    """Before: a mixing engine's token budget was judged at the workload's 2 users, which recommend
    and search replace with their own batches: at --batch 1 (3 tokens a step, inside vLLM's 4) they
    warned that 2 running requests x 3 tokens exceed it, and at --batch 1,4 past a 9-token budget
    (4 x 3 = 12 tokens a step) they said nothing."""
    text = BASE + f"engine: {{kind: vllm, chunked_prefill_tokens: {budget}}}\n"
    path, out = run(tmp_path, text)[1], str(tmp_path / "out")
    argv = {"recommend": ["recommend", path, "--batch", loads, "--seeds", "1", "--jobs", "1", "--out", out],
            "search": ["search", path, "--gpus", "8", "--concurrency", loads, "--max-steps", "2", "--jobs", "1",
                       "--no-cache", "--no-plot", "--out", out, "--set", "engine.max_running_requests=4"]}[command]
    lines = [line for line in warnings_of(capsys, argv) if "budget" in line]
    flag = {"recommend": "--batch", "search": "--concurrency"}[command]
    assert lines == ([] if said is None else [next(line for line in lines if line.startswith(
        f"mtpsim: warning: {flag}: nextn steps 2: {said}"))]), lines
