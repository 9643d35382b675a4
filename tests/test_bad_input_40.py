"""Bad-input campaign 40, and the smaller notes campaign 39 left. Each test below failed on the code
before its fix:
- a scalar where a section of keys belongs was refused in pydantic's words, naming its own class
  ("a valid dictionary or instance of PrefixCacheSettings"), a name no user wrote;
- a sweep of speculative settings under design none, crossed with another key, said every point
  was the same run, where only those that share the other key's value are;
- plot's refusal of drafts accepted past a run's steps said "1 drafts accepted ... which drafts 0";
- a --set of a whole section dropped the scenario's other keys there for their defaults without a
  word (overrides._keys_dropped);
- a file given as a CSV table that is none (a YAML file as acceptance.histogram) was refused in
  pandas' words ("Error tokenizing data. C error: ..."), naming no line;
- $AICONFIGURATOR_PYTHON was passed over without a word where aiconfigurator imports in-process
  (campaign 38's note);
- mtpsim.disaggregated() blamed the scenario file for its own pool arguments, and refused a NumPy
  integer as "not a valid integer (got 1)" (H1, H2);
- the "takes minutes" warning counted every user as decoding at once, past the engine's running
  cap and over all replicas together ("about 8 decode iterations" for a run of 43,750), and so
  missed a run of 1.24M iterations (H3);
- search's bounds that admit no layout were blamed on the file's whole search section (a --set
  among them too), offered a dp bound the section does not take, and named none (H4);
- a trace past the model's context named the `input_len` column in every format, for an output
  past it too (H5);
- `mtpsim.load("")` read the current folder, and `load(fixed=...)` took keys no scenario has
  (smaller notes).
Campaign 41 (~390 probes of those fixes and beside them), the tests after the marker below:
- disaggregated() took pools whose weights leave no KV room, and simulate() then blamed the file
  (H1); `--set search=null` was said to be ignored (H3); a key a later --set gave again was said to
  go back to its default (H4); a trace's ragged row kept pandas' words (H5); the heavy-run warning
  read parallel.dp under disaggregation (H6); a one-point sweep's error named the key as the
  file's (H7); recommend's heavy-run warning blamed --batch for the file's requests per user (H8).
  A SIGTERM during `--backend ray` met Ray's native handler (a stack dump, status 1): H2, fixed in
  ray_backend._sigterm_kept and checked by hand: rc 143, `mtpsim: interrupted`, the folder given back.
"""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_38 import BASE


@pytest.mark.parametrize("key, value", [("workload", "5"), ("engine.prefix_cache", "3"), ("engine.batch_wait", "true"),
                                        ("verify", "[1, 2]"), ("cost", "x"), ("parallel", "8")])
def test_a_scalar_where_a_section_belongs_names_no_class(tmp_path, capsys, key, value):
    line = one_line_error(capsys, ["cost", run(tmp_path, BASE)[1], "--set", f"{key}={value}"], key, "section of keys")
    assert "instance of" not in line


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]


@pytest.mark.parametrize("sweep, same", [
    ("{speculative.steps: [1, 2]}", "these points are the same run"),
    ("{speculative.steps: [1, 2], workload.concurrency: [1, 4]}", "points that differ only in speculative settings")])
def test_a_none_sweep_crossed_with_another_key_is_not_all_one_run(tmp_path, capsys, sweep, same):
    """Before: steps crossed with users under design none said every point was the same run."""
    path = run(tmp_path, BASE.replace("design: nextn", "design: none").replace("draft: eagle3-llama-3.1-8b", ""))[1]
    said = [w for w in _warned(capsys, ["cost", path, "--set", f"sweep={sweep}"]) if "drafts nothing at every point" in w]
    assert len(said) == 1 and same in said[0], said


def test_a_none_run_with_drafts_accepted_is_said_in_words(tmp_path, capsys):
    """Before: "1 drafts accepted in a step of point 0, which drafts 0"."""
    import pandas as pd
    argv = run(tmp_path, BASE + "sweep: {speculative.design: [none, nextn]}\n")
    assert cli.main(argv) == 0
    table = tmp_path / "out" / "accept_counts.csv"
    counts = pd.read_csv(table)
    none = counts.index[counts.point == 0]
    assert len(none) > 0, counts
    counts.loc[none[0], ["accepted", "count"]] = [1, 5]
    counts.to_csv(table, index=False)
    capsys.readouterr()
    one_line_error(capsys, ["plot", str(tmp_path / "out")], "accepted", "1 draft accepted in a step of point 0, which "
                   "drafts nothing (design none)")


def test_a_set_of_a_whole_section_says_which_keys_it_drops(tmp_path, capsys):
    """Before: `--set workload={concurrency: 2}` ran the file's other workload keys at their
    defaults (input_len 64 -> 1024, num_requests 8 -> 64) without a word."""
    path = run(tmp_path, BASE)[1]
    said = [w for w in _warned(capsys, ["cost", path, "--set", "workload={concurrency: 2}"]) if "whole section" in w]
    # arrival: closed is the default the section goes back to: no change to name
    assert len(said) == 1 and ": workload: " in said[0] and "'s num_requests, input_len and output_len go back" in said[0]
    full = "workload={arrival: closed, concurrency: 2, num_requests: 8, input_len: 64, output_len: 16}"
    assert not [w for w in _warned(capsys, ["cost", path, "--set", full]) if "whole section" in w]
    assert not [w for w in _warned(capsys, ["cost", path, "--set", "workload.concurrency=2"]) if "whole section" in w]


def test_a_file_that_is_no_csv_table_is_said_without_pandas_words(tmp_path, capsys):
    """Before: "not a readable CSV: Error tokenizing data. C error: Expected 1 fields in line 4, saw 3"."""
    (tmp_path / "h.yaml").write_text("name: h\nmodel: x\n# a comment\nworkload: {a: 1, b: 2}\n")
    text = BASE.replace("acceptance: {per_depth: [0.8, 0.7, 0.6]}", f"acceptance: {{histogram: {tmp_path / 'h.yaml'}}}")
    line = one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "line 4", "2 fields where the header has 1")
    assert "tokenizing" not in line and "C error" not in line


def test_an_interpreter_named_for_aiconfigurator_that_is_passed_over_is_said(monkeypatch, capsys):
    """Before: $AICONFIGURATOR_PYTHON set to a path that does not exist was passed over without a
    word wherever aiconfigurator imports in-process."""
    import sys
    import types

    from mtpsim import peer
    monkeypatch.setattr(peer, "_importable_here", lambda: True)
    monkeypatch.setitem(sys.modules, "aiconfigurator", types.SimpleNamespace(__version__=peer.VERSION))
    errors._warned.clear()
    for named, said in (("", False), ("/no/such/python", True)):
        monkeypatch.setenv(peer.PYTHON_ENV, named)
        peer.unavailable.cache_clear()
        assert peer.unavailable() == ""
        err = capsys.readouterr().err
        assert (f"${peer.PYTHON_ENV}: not read" in err) is said, err
    peer.unavailable.cache_clear()


@pytest.mark.parametrize("kwargs, key, word", [
    (dict(prefill={"tpp": 1}, decode={"tp": 1}), "prefill.tpp", "unknown key"),
    (dict(prefill={"tp": 1}, decode={"tp": 1}, link="carrier-pigeon"), "link", "carrier-pigeon"),
    (dict(prefill={"tp": 1}, decode={"tp": 1}, gpus=1), "gpus", "exceed"),
    (dict(prefill={"tp": "numpy"}, decode={"tp": 1}), "prefill.tp", "numpy.int64 1"),
    (dict(prefill={"tp": 1}, decode={"tp": 1}, gpus="numpy"), "gpus", "numpy.int64 2")])
def test_disaggregated_names_its_own_arguments(tmp_path, kwargs, key, word):
    """Before: the scenario file was blamed for the call's pools (`q.yaml: disaggregation.prefill.tpp:
    unknown key`, a section q.yaml does not hold), and a NumPy integer was "not a valid integer (got 1)"."""
    import numpy as np

    import mtpsim
    from mtpsim.errors import ScenarioError
    kwargs = {k: ({kk: np.int64(1) if vv == "numpy" else vv for kk, vv in v.items()} if isinstance(v, dict) else
                  np.int64(2) if v == "numpy" else v) for k, v in kwargs.items()}
    s = mtpsim.load(run(tmp_path, BASE.replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none")
                        .replace("acceptance: {per_depth: [0.8, 0.7, 0.6]}\n", ""))[1], advise_points=False)[0]
    with pytest.raises(ScenarioError) as refused:
        mtpsim.disaggregated(s, **kwargs)
    assert (refused.value.where, refused.value.key) == ("mtpsim.disaggregated", key) and word in refused.value.reason, \
        refused.value.message


@pytest.mark.parametrize("engine, users, dp, output, iterations", [
    ("{max_running_requests: 16}", 100000, 1, 8, "100,000 requests (about 50,000 decode iterations)"),  # x 8 / 16
    ("{kind: sglang}", 100000, 1, 8, "(about 16,667 decode iterations)"),  # SGLang's speculative cap of 48
    ("{max_running_requests: 64}", 100000, 8, 8, "(about 12,500 decode iterations)"),  # 64 on each of 8 replicas
    ("{max_running_requests: 8}", 50000, 1, 200, "50,000 requests (about 1,250,000 decode iterations)")])  # heavy by them
def test_the_heavy_run_warning_counts_iterations_within_the_running_cap(tmp_path, capsys, engine, users, dp, output,
                                                                         iterations):
    """Before: "100,000 requests (about 8 decode iterations)", every user counted as decoding at once,
    where the run then took 43,750 at its cap of 16; and a run of 1.24M iterations got no warning."""
    import mtpsim
    from mtpsim.run import heavy_runs
    text = BASE.replace("concurrency: 4, num_requests: 8", f"concurrency: {users}, num_requests: {users}").replace(
        "output_len: 16", f"output_len: {output}").replace("hardware: h100-sxm\n", f"hardware: h100-sxm\nengine: {engine}\n"
                                                         f"parallel: {{dp: {dp}}}\n")
    errors._warned.clear()
    heavy_runs(mtpsim.load(run(tmp_path, text)[1], advise_points=False))
    assert iterations in capsys.readouterr().err


@pytest.mark.parametrize("bound, key, word", [("search.tp=[3]", "search.tp", "no tp tried divides the 2 GPUs"),
                                              ("search.attention_dp=[4]", "search.attention_dp", "divides no tp tried")])
def test_search_names_the_bound_that_admits_no_layout(tmp_path, capsys, bound, key, word):
    """Before: `s.yaml: search: ... widen tp, ep, dp or attention_dp`, naming the file for a --set,
    no bound, and a dp bound the section does not take."""
    argv = ["search", run(tmp_path, BASE)[1], "--gpus", "2", "--out", str(tmp_path / "o"), "--no-cache", "--no-plot"]
    line = one_line_error(capsys, [*argv, "--set", bound], key, word)
    assert line.startswith("mtpsim: error: --set: ") and " dp or " not in line
    (tmp_path / "f.yaml").write_text(BASE + f"search: {{{bound.replace('search.', '').replace('=', ': ')}}}\n")
    argv[1] = str(tmp_path / "f.yaml")
    assert f"f.yaml: {key}: " in one_line_error(capsys, argv, key, word)


@pytest.mark.parametrize("header, row, column", [
    ("arrival_s,input_len,output_len", "0,100,16000000", "output_len"),
    ("arrival_s,input_len,output_len", "0,16000000,10", "input_len"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens", "2023-11-16 18:15:46,100,16000000", "GeneratedTokens"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens", "2023-11-16 18:15:46,16000000,10", "ContextTokens")])
def test_a_trace_past_the_context_names_its_own_column_that_overflows(tmp_path, capsys, header, row, column):
    """Before: `input_len: row 2: 100 input + 16000000 output tokens exceed the max_context`, in every
    format, for an output past the context too."""
    first = "2023-11-16 18:15:45,10,10" if header.startswith("TIMESTAMP") else "0,10,10"
    (tmp_path / "t.csv").write_text(f"{header}\n{first}\n{row}\n")
    text = BASE.replace("workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                        f"workload: {{arrival: trace, trace: {tmp_path / 't.csv'}}}")
    one_line_error(capsys, ["cost", run(tmp_path, text)[1]], column, "row 3")


@pytest.mark.parametrize("call, word", [(lambda m: m.load(""), "the path is empty"),
                                        (lambda m: m.load(b""), "the path is empty"),
                                        (lambda m: m.load("x.yaml", fixed={"nosuch": "--x"}), "names 'nosuch'")])
def test_load_names_an_empty_path_and_a_fixed_key_no_scenario_has(call, word):
    """Before: `load("")` read the current folder (".: a folder, not a file"), and `fixed` took any key."""
    import mtpsim
    from mtpsim.errors import ScenarioError
    with pytest.raises(ScenarioError) as refused:
        call(mtpsim)
    assert refused.value.where == "mtpsim.load" and word in refused.value.reason


# ------------------------------------------------------------- campaign 41 (the holes in this file's fixes and beside them)

def test_disaggregated_refuses_a_pool_with_no_kv_room_as_its_own(tmp_path):
    """Before: accepted, and `simulate` then blamed the scenario file's disaggregation.decode, a
    section the file does not hold (campaign 41, H1)."""
    import mtpsim
    from mtpsim.errors import ScenarioError
    text = BASE.replace("model: llama-3.1-8b", "model: deepseek-v3").replace("hardware: h100-sxm", "hardware: h200") \
        .replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none") \
        .replace("acceptance: {per_depth: [0.8, 0.7, 0.6]}\n", "")
    s = mtpsim.load(run(tmp_path, text)[1], advise_points=False)[0]
    with pytest.raises(ScenarioError) as refused:
        mtpsim.disaggregated(s, {"tp": 8}, {"tp": 1})
    assert (refused.value.where, refused.value.key) == ("mtpsim.disaggregated", "decode"), refused.value.message


@pytest.mark.parametrize("section", ["search=null", "verify=null"])
def test_a_set_that_drops_a_section_is_not_said_to_be_ignored(tmp_path, capsys, section):
    """Before: `--set search=null` warned that only `mtpsim search` reads the section (campaign 41, H3)."""
    assert not [w for w in _warned(capsys, ["cost", run(tmp_path, BASE)[1], "--set", section]) if "reads the" in w]


def test_a_key_a_later_set_gives_again_is_not_said_to_go_back_to_its_default(tmp_path, capsys):
    """Before: `--set workload={...} --set workload.input_len=64` said input_len went back to its
    default, and it ran at 64 (campaign 41, H4)."""
    argv = ["cost", run(tmp_path, BASE)[1], "--set", "workload={concurrency: 2, num_requests: 8, output_len: 16}",
            "--set", "workload.input_len=64"]
    assert not [w for w in _warned(capsys, argv) if "whole section" in w]


def test_a_trace_row_longer_than_its_header_names_its_line(tmp_path, capsys):
    """Before: pandas' tokenizer text ("Error tokenizing data. C error: ...") at no key (campaign 41, H5)."""
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,16\n0.1,64,16,9\n")
    text = BASE.replace("workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 64, output_len: 16}",
                        f"workload: {{arrival: trace, trace: {tmp_path / 't.csv'}}}")
    line = one_line_error(capsys, ["cost", run(tmp_path, text)[1]], "line 3", "4 fields where the header has 3")
    assert "tokenizing" not in line


def test_the_heavy_run_warning_counts_a_disaggregated_decode_pools_replicas(tmp_path, capsys):
    """Before: parallel.dp (1 under disaggregation) was read, and the run went unwarned (campaign 41, H6)."""
    import mtpsim
    from mtpsim.run import heavy_runs
    text = BASE.replace("concurrency: 4, num_requests: 8", "concurrency: 8, num_requests: 40000").replace(
        "output_len: 16", "output_len: 100").replace("design: nextn, steps: 3, draft: eagle3-llama-3.1-8b", "design: none") \
        .replace("acceptance: {per_depth: [0.8, 0.7, 0.6]}\n", "") + \
        "disaggregation: {prefill: {tp: 1}, decode: {tp: 1, replicas: 4}}\n"
    errors._warned.clear()
    heavy_runs(mtpsim.load(run(tmp_path, text)[1], advise_points=False))
    assert "about 2,000,000 decode iterations" in capsys.readouterr().err


def test_a_one_point_sweeps_error_names_the_point(tmp_path, capsys):
    """Before: `speculative.topk: ...` as if the file set it; two points added the point (campaign 41, H7)."""
    text = BASE + "sweep: {speculative.topk: [2]}\n"
    line = one_line_error(capsys, ["cost", run(tmp_path, text.replace("draft: eagle3-llama-3.1-8b", "draft: "
                                                                      "eagle3-llama-3.1-8b, draft_tokens: 2"))[1]],
                          "", "sweep point 1 of 1: speculative.topk=2")
    assert "speculative" in line


def test_recommends_heavy_warning_blames_the_files_requests_per_user(tmp_path, capsys):
    """Before: blamed --batch, when the file's num_requests over its users made each point long (H8)."""
    text = BASE.replace("concurrency: 4, num_requests: 8", "concurrency: 1, num_requests: 20000").replace(
        "output_len: 16", "output_len: 256")
    import mtpsim
    from mtpsim.recommend import grid
    errors._warned.clear()
    grid(mtpsim.load(run(tmp_path, text)[1], advise_points=False)[0], [1], [1], [1])  # the points, not run
    said = [w for w in capsys.readouterr().err.splitlines() if "takes minutes" in w]
    assert len(said) == 1 and ": workload.num_requests: " in said[0], said


def test_a_dropped_key_that_held_its_factory_default_is_not_named(tmp_path, capsys):
    """Before: `engine.ignore_rules: []` (a list default) was said to go back to its default."""
    text = BASE.replace("hardware: h100-sxm\n", "hardware: h100-sxm\nengine: {kind: sglang, ignore_rules: []}\n")
    assert not [w for w in _warned(capsys, ["cost", run(tmp_path, text)[1], "--set", "engine={kind: sglang}"])
                if "whole section" in w]
