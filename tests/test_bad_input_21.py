"""Bad-input campaign 21: `--peer` (aiconfigurator 0.12.0 beside mtpsim) on run, search and
recommend: mtpsim/peer.py, mtpsim/peer_compare.py and their callers.

Probed, and already fine (one line, or a note naming the key, or the right numbers): poisson,
trace (scenarios/azure-conv-replay.yaml) and rate-schedule loads; disaggregated scenarios (run,
and search --disagg); attention DP whose users do not split (12 over 8 groups), replicas and
attention DP against a direct peer.estimate (DeepSeek-V3 tp8 ep8 adp4 dp2: 580 tok/s a replica,
1161 printed); --seeds 3 over a sweep of hardware and concurrency (each row paired with its own
point's first seed, baselines shared over seeds); sweeps over hardware (mi300x, a100-80g, h200),
engines (vllm, trtllm, sglang 0.4.0), whole speculative sections and seeds; every design of the
committed scenarios (nextn, multi_layer, frozen_kv, block, trees, EAGLE-3 drafts); a model given
as a file path, a user catalog's deepseek-v3 of other shapes, `{from: X, dtypes: ...}`;
mi300x, cpu (refused by its KV pool first), a100-80g; 100,000 users (aiconfigurator answers OOM in
1-4 s, never minutes); an accept length past nextn + 1 (held to it); $AICONFIGURATOR_PYTHON
unset, empty, missing; output folders already holding peer.csv (refused, kept); --peer with
--plot and --trace, with --backend ray; search --no-plot, --seeds 2, --disagg; recommend --seeds
3, --topk 1,2 (refused before anything runs for want of per_depth_topk), a swept design.

Found and fixed:
- $AICONFIGURATOR_PYTHON naming a folder, a non-executable file, a Python without aiconfigurator
  or one that hangs was `--peer: needs aiconfigurator 0.12.0: pip install ...` whatever was wrong
  (the hanging one after 120 s): the line now names the variable's value and why (peer.unavailable);
- a worker that hangs was waited for 600 s at every point asked (a 30-point recommend grid: five
  hours): now 120 s, once per interpreter, the other points noted `not asked` (peer._ask_worker);
- a worker answering out of protocol (bad JSON, no answers, a dict, empty dicts) gave notes such
  as `not enough values to unpack` or a KeyError traceback; a failed worker's note carried 2000
  characters of traceback over many lines; a non-executable interpreter was a PermissionError
  traceback from peer_compare.ask;
- in-process, aiconfigurator calling sys.exit ended `run --peer` silently with its status (folder
  incomplete); a result of another shape was an AttributeError traceback; a TPOT of 0 or NaN was
  printed as its answer (peer._answer_safely, _answer);
- another aiconfigurator release (here or under its Python) was asked with 0.12.0's API and MTP
  model and labelled 0.12.0;
- a point the running cap held below its users (128 users, SGLang's speculative cap 48) was asked
  at 128 beside mtpsim's 48 running, its speedup at 1.19x beside mtpsim's 0.95x: now asked at the
  batch that ran, its speedup over the batch its baseline ran (peer_compare.question's cap, compare);
- a batch load (all requests at t=0) was asked at workload.concurrency, which run does not read:
  32 requests beside aiconfigurator's batch of 1 (its default), 213 tok/s beside 1449;
- a sweep's rows could not be told apart (two `none` rows at one load, peer.csv's baselines all
  point -1), and a row without an answer read NaN under a note about rows with `-`;
- a model file named deepseek-r1 or as a Hugging Face id peer.MODELS maps failed the whole run
  after the simulation (`models file .../deepseek-r1.yaml: no such file`); a hardware file named
  h200-sxm the same way would have;
- a GPU of other figures ({from: h200, memory_bandwidth_bytes_per_s: 2.4e12}) or a replica over
  nodes of 4 was asked as aiconfigurator's stock 8-GPU system;
- acceptance.kept_length was asked as full-width nextn; output_len 1 gave an unkeyed `accept_length
  nan outside [1, nextn + 1 = 4]` and 0 tokens/s for `none`;
- recommend: a batch without an answer read `None`, and no answer at any batch read `break-even
  batch: none within the range`, as if speculation had won everywhere;
- over seeds, the table beside aiconfigurator showed each point's first seed under the means
  above it without saying so.
"""
from __future__ import annotations

import csv
import math
import types

import pytest

from mtpsim import cli, peer, peer_compare
from tests.test_bad_input import one_line_error
from tests.test_peer import needs_aic, point


@pytest.fixture(autouse=True)
def _fresh_peer():
    """peer.unavailable() is cached per process, a hung worker remembered and every answer kept
    (peer._ANSWERED): each test starts clean, its own aiconfigurator asked afresh."""
    peer.unavailable.cache_clear()
    peer._hung.clear()
    peer._ANSWERED.clear()
    yield
    peer.unavailable.cache_clear()
    peer._hung.clear()
    peer._ANSWERED.clear()


@pytest.fixture
def fake_peer(monkeypatch):
    """tests/test_peer.py's fake aiconfigurator, answering every point asked."""
    from tests.test_peer import Fake
    f = Fake()
    monkeypatch.setattr(peer, "available", lambda: True)
    monkeypatch.setattr(peer, "speedup", f.speedup)
    monkeypatch.setattr(peer, "estimate", f.estimate)
    return f


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def elsewhere(monkeypatch):
    """aiconfigurator not importable here: only $AICONFIGURATOR_PYTHON can answer."""
    monkeypatch.setattr(peer, "_importable_here", lambda: False)
    return lambda python: monkeypatch.setenv(peer.PYTHON_ENV, python)


# ------------------------------------------------------------- 1. $AICONFIGURATOR_PYTHON that cannot answer

@pytest.mark.parametrize("make, word", [
    (lambda t: str(t / "missing" / "python"), "does not exist"),
    (lambda t: str(t), "cannot be run"),  # a folder
    (lambda t: (t / "notes.txt").write_text("hello") and str(t / "notes.txt"), "cannot be run"),  # not executable
    (lambda t: _script(t, "py", "echo 'ModuleNotFoundError: No module named aiconfigurator' >&2; exit 1"),
     "cannot import aiconfigurator: ModuleNotFoundError"),
    (lambda t: _script(t, "py", "exec sleep 30"), "did not import aiconfigurator within 1 s"),
])
def test_an_aiconfigurator_python_that_cannot_answer_is_named_with_why(tmp_path, capsys, monkeypatch, elsewhere,
                                                                       make, word):
    """Each was `--peer: needs aiconfigurator 0.12.0: pip install ...` whatever the variable named
    (a hanging one after 120 s): the line now says what $AICONFIGURATOR_PYTHON names and what is
    wrong with it."""
    monkeypatch.setattr(peer, "CHECK_TIMEOUT_S", 1)
    python = make(tmp_path)
    elsewhere(python)
    line = one_line_error(capsys, ["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")],
                          "", word)
    assert line.startswith("mtpsim: error: --peer: ") and python in line and not (tmp_path / "o").exists()


def test_a_worker_that_hangs_is_waited_for_once(tmp_path, monkeypatch, elsewhere):
    """A worker that hangs was waited for TIMEOUT_S (then 600 s) at every point: a recommend grid of
    30 points sat five hours. Now once per interpreter; the other points say why they were not asked."""
    monkeypatch.setattr(peer, "TIMEOUT_S", 1)
    elsewhere(_script(tmp_path, "py", "exec sleep 30"))
    first, second = peer_compare.ask(point(), 2.5), peer_compare.ask(point(), 2.5)
    assert "timed out after 1 s" in first["note"] and second["note"].startswith("not asked: ")
    assert math.isnan(second["aic_tpot_ms"]) and peer.TIMEOUT_S <= 120 < 600


@pytest.mark.parametrize("body, word", [
    ("echo '@@aiconfigurator_peer@@ [not json'", "did not answer one result per request"),
    ("echo '@@aiconfigurator_peer@@ []'", "did not answer one result per request"),
    ("echo '@@aiconfigurator_peer@@ {\"error\": 1}'", "did not answer one result per request"),
    ("echo '@@aiconfigurator_peer@@ [{}, {}]'", "did not answer one result per request"),
    ("printf 'Traceback (most recent call last):\\n  File x\\nMemoryError: out\\n' >&2; exit 1", "MemoryError: out"),
])
def test_a_worker_answering_out_of_protocol_is_one_note(tmp_path, elsewhere, body, word):
    """A JSON error, a list of none or of empty answers, a dict (whose "error" key was found as a
    substring of its keys) were notes such as `not enough values to unpack (expected 2, got 0)`, or
    a KeyError traceback; a failed worker's note carried 2000 characters of its traceback, lines
    and all, into the notes' one-line list."""
    elsewhere(_script(tmp_path, "py", body))
    got = peer_compare.ask(point(), 2.5)
    assert word in got["note"] and "\n" not in got["note"] and math.isnan(got["aic_tps"])


def test_a_worker_that_cannot_be_run_is_a_note_not_a_traceback(tmp_path, elsewhere):
    """peer.ask (benchmarks call it without --peer's check) raised PermissionError for a
    $AICONFIGURATOR_PYTHON that is not executable."""
    (tmp_path / "py").write_text("#!/bin/sh\n")
    elsewhere(str(tmp_path / "py"))
    assert "cannot be run: Permission denied" in peer_compare.ask(point(), 2.5)["note"]


# ------------------------------------------------------------- 2. aiconfigurator raising, exiting, answering nonsense

def _result(raw, tpot=10.0):
    return types.SimpleNamespace(raw=raw, tpot=tpot, ttft=1.0, backend_version="0.5.14", mode="agg",
                                 kv_cache_warning=None)


@needs_aic
@pytest.mark.parametrize("answer, word", [
    (SystemExit(3), "SystemExit: 3"),
    (KeyError("boom"), "KeyError: 'boom'"),
    (RuntimeError("two\nlines"), "RuntimeError: two lines"),
    (_result(None), "aiconfigurator failed: AttributeError"),
    (_result({"tokens/s": 0.0, "tokens/s/user": 0.0, "concurrency": 16}, tpot=0.0), "a TPOT of 0 ms and 0 tokens/s"),
    (_result({"tokens/s": math.nan, "tokens/s/user": math.nan, "concurrency": 16}, tpot=math.nan), "TPOT of nan"),
])
def test_aiconfigurator_failing_oddly_is_a_note(tmp_path, capsys, monkeypatch, answer, word):
    """In-process: aiconfigurator calling sys.exit ended `mtpsim run --peer` silently with its
    status, the run folder left incomplete; a result of another shape was an AttributeError
    traceback; a TPOT of 0 or NaN was printed as its answer."""
    import aiconfigurator.cli.api as api

    def estimate(*args, **options):
        if isinstance(answer, BaseException):
            raise answer
        return answer
    monkeypatch.setattr(api, "cli_estimate", estimate)
    assert cli.main(["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    notes = out.split("notes (a row with - has no answer):\n")[1].splitlines()
    assert word in notes[0] and notes[1] == ""
    with open(tmp_path / "o" / "peer.csv") as f:
        assert all(r["aic_tps"] == "" for r in csv.DictReader(f))


# ------------------------------------------------------------- 3. a running cap below the users

@pytest.mark.parametrize("over, cap, base_cap, batch, base_batch", [
    ({}, 8, None, 8, 16),                                                  # SGLang's speculative cap alone
    ({}, 8, 8, 8, 8),                                                      # a cap both ran under
    ({}, 64, 64, 16, 16),                                                  # a cap above the users holds nothing
    ({"parallel": {"tp": 8, "dp": 2, "attention_dp": 2}}, 4, None, 2, 4),  # a replica's cap, over its groups
])
def test_a_capped_point_is_asked_at_the_batch_that_ran(over, cap, base_cap, batch, base_batch):
    q = peer_compare.question(point(**over), cap, base_cap)
    assert (q.args[6], q.base_batch) == (batch, base_batch)
    assert ("engine.max_running_requests: the running cap held" in q.caveat) == (cap < 16 // q.replicas)


def test_a_cap_that_does_not_split_over_attention_groups_is_named():
    with pytest.raises(peer.NotExpressible, match=r"^workload.concurrency: .*the running cap lets 6 of them run"):
        peer_compare.question(point(parallel={"tp": 8, "attention_dp": 4}), 6)


@needs_aic
def test_run_asks_a_capped_point_at_its_cap_and_its_speedup_over_its_own_baseline(tmp_path, capsys):
    """128 users under nextn with no max_running_requests: SGLang ran at most 48 at once (its
    speculative cap), `none` all 128, yet aiconfigurator was asked both at 128: 2228 tok/s and a
    1.19x speedup beside mtpsim's 0.95x, two different questions side by side. Now the MTP point
    is asked at 48 and its speedup is over its plain estimate at 128, as mtpsim's is."""
    assert cli.main(["run", "scenarios/quickstart.yaml", "--peer", "--set", "workload.concurrency=128",
                     "--set", "workload.num_requests=256", "--set", "engine.max_running_requests=null",
                     "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "the running cap held a replica's 128 users to 48 at once" in out
    with open(tmp_path / "o" / "peer.csv") as f:
        mtp, plain = csv.DictReader(f)
    direct = peer.estimate("deepseek-v3", "h200", "sglang", 8, 8, 1, 48, 2048, 256, 3, float(mtp["accept_length"]),
                           kvcache_quant_mode="bfloat16")
    assert float(mtp["aic_tps"]) == pytest.approx(direct["tps"])
    assert float(mtp["aic_speedup"]) == pytest.approx(float(mtp["aic_tps"]) / float(plain["aic_tps"]))
    assert float(mtp["aic_speedup"]) < 1.1 and plain["note"] == ""


# ------------------------------------------------------------- 4. the table beside the run's

SWEPT = """\
name: sw
model: deepseek-v3
hardware: h200
parallel: {tp: 8}
speculative: {design: nextn, steps: 2}
acceptance: {per_depth: [0.8, 0.7]}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 200, output_len: 20}
sweep: {hardware: [h200, mi300x]}
"""


def test_a_sweeps_rows_say_which_point_they_are_and_no_answer_reads_dash(tmp_path, capsys, fake_peer):
    """A sweep over hardware printed four rows, two `nextn` and two `none` at 4 users, with nothing
    telling them apart (peer.csv's baselines were all point -1), and a row without an answer read
    NaN under a note saying `a row with - has no answer`."""
    (tmp_path / "s.yaml").write_text(SWEPT)
    assert cli.main(["run", str(tmp_path / "s.yaml"), "--peer", "--out", str(tmp_path / "o")]) == 0
    table = capsys.readouterr().out.split("accept length: mtpsim's):\n")[1].splitlines()
    assert table[0].split()[-1] == "hardware" and "NaN" not in "\n".join(table)
    assert [(r.split()[0], r.split()[-1]) for r in table[1:5]] == \
        [("nextn", "h200"), ("nextn", "mi300x"), ("none", "h200"), ("none", "mi300x")]
    assert table[2].split()[5] == "-" and table[1].split()[5] == "5"  # mi300x: no answer; h200: the fake's 5 ms
    with open(tmp_path / "o" / "peer.csv") as fh:
        assert [(r["point"], r["hardware"]) for r in csv.DictReader(fh)] == \
            [("0", "h200"), ("1", "mi300x"), ("-1", "h200"), ("-1", "mi300x")]


# ------------------------------------------------------------- 5. a model file named as a checkpoint mtpsim has no entry of

@pytest.mark.parametrize("name", ["deepseek-r1", "meta-llama/Llama-3.1-8B-Instruct"])
def test_a_model_named_as_a_checkpoint_without_a_built_in_entry_is_a_note(tmp_path, name, fake_peer, capsys):
    """A model file (or user catalog entry) named deepseek-r1, as aiconfigurator's checkpoint is
    (peer.MODELS maps it, for peer.estimate's callers), failed `mtpsim run --peer` after the
    simulation with `peer: models file '.../models/deepseek-r1.yaml': no such file`: there is no
    built-in entry of that name to compare its shapes with."""
    from mtpsim.catalog import CATALOG_DIR
    base = "deepseek-v3" if name.startswith("deepseek") else "llama-3.1-8b"
    text = (CATALOG_DIR / "models" / f"{base}.yaml").read_text().replace(f"name: {base}\n", f"name: {name}\n", 1)
    (tmp_path / "m.yaml").write_text(text)
    with pytest.raises(peer.NotExpressible, match=f"^model: {name}: mtpsim has no built-in entry of that name"):
        peer_compare.question(point(model=str(tmp_path / "m.yaml"), speculative={"design": "none"}))
    assert cli.main(["run", "scenarios/quickstart.yaml", "--peer", "--set", f"model={tmp_path / 'm.yaml'}",
                     "--set", "speculative.design=none", "--out", str(tmp_path / "o")]) == 0
    assert f"- model: {name}: mtpsim has no built-in entry" in capsys.readouterr().out


# ------------------------------------------------------------- 6. a batch load

def test_a_batch_load_is_asked_at_its_requests_not_its_unread_concurrency():
    """arrival: batch sends every request at t=0 and run reads no concurrency of it (advice.py
    warns where one is set), yet aiconfigurator was asked at workload.concurrency: 32 requests
    at once beside its estimate for a batch of 1 (its default), 213 tok/s beside mtpsim's 1449."""
    q = peer_compare.question(point(workload={"arrival": "batch", "concurrency": 1, "num_requests": 32}))
    assert q.args[6] == 32 and q.users == 32 and q.load_key == "workload.num_requests"
    assert "workload.num_requests: a batch load's 32 requests" in q.caveat  # the tables' conc column shows 1
    assert "workload.num_requests" not in peer_compare.question(point()).caveat
    over = point(workload={"arrival": "batch", "num_requests": 30}, parallel={"tp": 8, "attention_dp": 4})
    with pytest.raises(peer.NotExpressible, match=r"^workload.num_requests: 30 requests sent at once do not split"):
        peer_compare.question(over)


# ------------------------------------------------------------- 7. recommend where aiconfigurator answers no batch

def test_recommend_without_an_answer_says_so_not_none_within_the_range(tmp_path, capsys, fake_peer):
    """Attention DP 8 at batches 1 and 4 (neither splits over 8 groups): its pick column read
    `None`, and its break-even line `none within the range`, as if it had found speculation
    winning at every batch."""
    assert cli.main(["recommend", "scenarios/quickstart.yaml", "--batch", "1,4", "--seeds", "1", "--max-steps", "1",
                     "--set", "parallel.attention_dp=8", "--peer", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.split("each tool's TPS pick:\n")[1]
    assert "None" not in out and [row.split()[3] for row in out.splitlines()[1:3]] == ["-", "-"]
    assert "aiconfigurator's break-even batch: - (no answer at any batch)" in out and not fake_peer.calls


# ------------------------------------------------------------- 8. points whose decode aiconfigurator would price otherwise

def test_kept_widths_one_token_outputs_and_no_accept_length_are_named(fake_peer):
    """acceptance.kept_length (ragged verify widths) was asked as full-width nextn, its AL beside a
    verify mtpsim did not run; output_len 1 gave `accept_length nan outside [1, nextn + 1 = 4]`
    (no key) and `none` an answer of 0 tokens/s; an accept length of NaN the same unkeyed note."""
    kept = point(acceptance={"per_depth": [0.8, 0.7, 0.6], "kept_length": [0.1, 0.2, 0.3, 0.4]})
    assert peer_compare.ask(kept, 2.5)["note"].startswith("acceptance.kept_length: aiconfigurator prices every")
    for design in ("nextn", "none"):
        one = point(workload={"output_len": 1}, speculative={"design": design, "steps": 3} if design != "none"
                    else {"design": "none"})
        assert peer_compare.ask(one, 1.0)["note"].startswith("workload.output_len: requests of 1 output token")
    assert peer_compare.ask(point(), math.nan)["note"].startswith("accept_length: the run accepted no drafts")
    assert not fake_peer.calls


def test_over_seeds_the_table_says_its_mtpsim_figures_are_the_first_seeds(tmp_path, capsys, fake_peer):
    """--seeds 2: the table above shows each point's mean ± interval, the one beside
    aiconfigurator its first seed's run (aiconfigurator has no seeds), and nothing said so."""
    assert cli.main(["run", "scenarios/quickstart.yaml", "--peer", "--seeds", "2", "--set", "workload.num_requests=16",
                     "--out", str(tmp_path / "o")]) == 0
    head = capsys.readouterr().out.split("aiconfigurator 0.12.0 beside mtpsim")[1].splitlines()[0]
    assert "mtpsim: each point run on its first seed, not the means above" in head
    with open(tmp_path / "o" / "summary.csv") as f, open(tmp_path / "o" / "peer.csv") as g:
        first = [r for r in csv.DictReader(f) if r["seed"] == "0"]
        assert [float(r["tps"]) for r in csv.DictReader(g)] == [float(r["tps"]) for r in first]


# ------------------------------------------------------------- 9. a GPU of other figures than aiconfigurator's

@pytest.mark.parametrize("over, note", [
    ({"hardware": {"from": "h200", "memory_bandwidth_bytes_per_s": 2.4e12}},
     "hardware: memory_bandwidth_bytes_per_s differs from the built-in h200's: aiconfigurator times its own h200_sxm"),
    ({"parallel": {"tp": 8, "gpus_per_node": 4}}, "parallel.gpus_per_node: 4: aiconfigurator's h200_sxm nodes are"),
])
def test_a_gpu_other_than_aiconfigurators_is_named(over, note, fake_peer):
    """Half H200's bandwidth, or its replica over two nodes of 4, was asked as the stock 8-GPU
    H200 node, aiconfigurator's 1070 tok/s beside a point it did not describe."""
    assert peer_compare.ask(point(**over), 2.5)["note"].startswith(note) and not fake_peer.calls


def test_a_gpus_pricing_keys_and_its_own_node_size_are_not_refused(fake_peer):
    for over in ({"hardware": {"from": "h200", "usd_per_gpu_hour": 9.0, "efficiency_flops": 0.5}},
                 {"parallel": {"tp": 8, "gpus_per_node": 8}}):
        assert peer_compare.ask(point(**over), 2.5)["note"] == ""


def test_a_hardware_file_named_as_an_aiconfigurator_alias_is_a_note(tmp_path, fake_peer):
    """peer.SYSTEMS maps h100 (and h200-sxm, b200-sxm) for peer.estimate's callers; a hardware file
    of that name has no built-in entry to be compared with."""
    from mtpsim.catalog import CATALOG_DIR
    (tmp_path / "h.yaml").write_text((CATALOG_DIR / "hardware" / "h200.yaml").read_text()
                                     .replace("name: h200\n", "name: h200-sxm\n", 1).replace("profiles:", "#", 1))
    got = peer_compare.ask(point(hardware=str(tmp_path / "h.yaml")), 2.5)
    assert got["note"].startswith("hardware: h200-sxm: mtpsim has no built-in entry of that name")


# ------------------------------------------------------------- 10. another release of aiconfigurator

@needs_aic
def test_another_aiconfigurator_release_here_is_refused(tmp_path, capsys, monkeypatch):
    """--peer reads aiconfigurator 0.12.0's API and MTP model and heads its table `aiconfigurator
    0.12.0`; another release installed here was asked and labelled 0.12.0."""
    import aiconfigurator
    monkeypatch.setattr(aiconfigurator, "__version__", "0.13.0")
    one_line_error(capsys, ["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")], "",
                   "aiconfigurator 0.13.0 is installed here, whose API and MTP model differ")


def test_another_aiconfigurator_release_under_its_python_is_refused(tmp_path, capsys, elsewhere):
    elsewhere(_script(tmp_path, "py", "echo 0.11.0"))
    one_line_error(capsys, ["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")], "",
                   "has aiconfigurator 0.11.0, whose API and MTP model differ")


def test_a_rows_cap_is_read_whatever_number_type_holds_it():
    import numpy as np
    assert [peer_compare.cap_of({"max_running": v}) for v in (np.int64(48), 48.0, 64, math.nan, None, True)] == \
        [48, 48, 64, None, None, None]
    assert peer_compare.cap_of({}) is None
