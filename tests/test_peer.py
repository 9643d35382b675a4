"""aiconfigurator beside mtpsim (`mtpsim run --peer`; mtpsim/peer_compare.py puts a point to
mtpsim/peer.py): each point is asked as the deployment it is, or not at all with the reason; the
answers are paired with the run's rows. aiconfigurator itself is faked here except in the last
tests, which need it installed (pip install 'mtpsim[peer]')."""
from __future__ import annotations

import csv
import math

import pytest

from mtpsim import cli, peer, peer_compare, peer_tables
from mtpsim.run import first_rows, run_rows
from mtpsim.scenario import validate
from tests.test_bad_input import one_line_error


def point(**over):
    data = {"name": "p", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
            "speculative": {"design": "nextn", "steps": 3}, "acceptance": {"per_depth": [0.8, 0.7, 0.6]},
            "workload": {"arrival": "closed", "concurrency": 16, "num_requests": 16,
                         "input_len": 1000, "output_len": {"dist": "uniform", "min": 100, "max": 300}}}
    for key, value in over.items():  # the load's keys are merged into it, every other section replaced
        data[key] = {**data[key], **value} if key == "workload" else value
    return validate(data)


def test_a_point_is_asked_as_its_deployment():
    q = peer_compare.question(point())
    assert q.args == ("deepseek-v3", "h200", "sglang", 8, 8, 1, 16, 1000, 200)
    assert q.options == {"kvcache_quant_mode": "bfloat16"} and q.nextn == 3 and q.replicas == 1 and not q.caveat


@pytest.mark.parametrize("parallel, args, options, replicas", [
    # aiconfigurator's tp is the attention group's, its batch one group's in one replica, and its
    # experts split moe_tp x moe_ep over all of a replica's GPUs
    ({"tp": 8, "attention_dp": 2}, (4, 8, 1, 8), {"attention_dp_size": 2}, 1),
    ({"tp": 8, "ep": 8}, (8, 1, 8, 16), {}, 1),
    ({"tp": 8, "dp": 2}, (8, 8, 1, 8), {}, 2),
    ({"tp": 8, "ep": 4, "attention_dp": 4, "dp": 2}, (2, 2, 4, 2), {"attention_dp_size": 4}, 2),
])
def test_parallel_layouts_map_onto_its_terms(parallel, args, options, replicas):
    q = peer_compare.question(point(parallel=parallel))
    assert q.args[3:7] == args and q.options == {"kvcache_quant_mode": "bfloat16", **options}
    assert q.replicas == replicas and q.users * q.replicas == 16


def test_the_kv_dtype_is_passed_and_other_precisions_refused():
    fp8 = point(model={"from": "deepseek-v3", "dtypes": {"kv_cache": "fp8"}})
    assert peer_compare.question(fp8).options["kvcache_quant_mode"] == "fp8"
    with pytest.raises(peer.NotExpressible, match="model.dtypes"):
        peer_compare.question(point(model={"from": "deepseek-v3", "dtypes": {"experts": "fp4"}}))


@pytest.mark.parametrize("over, key", [
    ({"workload": {"arrival": "poisson", "rate_per_s": 2.0}}, "workload.arrival"),
    ({"model": "step-3.5-flash", "acceptance": {"per_depth": [0.8, 0.7, 0.6]}}, "model"),
    ({"hardware": "mi300x"}, "hardware"),
    ({"speculative": {"design": "nextn", "steps": 3, "topk": 2},
      "acceptance": {"per_depth_topk": [[0.6, 0.2], [0.5, 0.2], [0.4, 0.2]]}}, "speculative.topk"),
    ({"workload": {"concurrency": 15}, "parallel": {"tp": 8, "attention_dp": 2}}, "workload.concurrency"),
])
def test_what_it_cannot_express_is_named(over, key):
    s = point(**over)
    with pytest.raises(peer.NotExpressible, match=rf"^{key}: "):
        peer_compare.question(s)


def test_designs_it_has_no_counterpart_for_are_refused_and_draft_models_marked():
    gemma = {"model": "gemma-4-26b-a4b", "hardware": "h100-sxm", "parallel": {"tp": 1},
             "speculative": {"design": "frozen_kv", "steps": 3}}
    with pytest.raises(peer.NotExpressible, match="^speculative.design: frozen_kv"):
        peer_compare.question(point(**gemma))
    eagle = point(model="llama-3.1-8b", hardware="h100-sxm", parallel={"tp": 1},
                  speculative={"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"})
    q = peer_compare.question(eagle)
    assert q.nextn == 3 and q.caveat.startswith("speculative.draft: ")
    plain = peer_compare.question(point(speculative={"design": "none"}))
    assert plain.nextn == 0


class Fake:
    """aiconfigurator's two calls, recorded; tokens/s of one replica 1000 (MTP) and 800 (plain)."""

    def __init__(self, held=None):
        self.calls, self.held = [], held

    def estimate(self, *args, **options):
        self.calls.append(("estimate", args, options))
        return self._answer(args[6], 10.0, 800.0)

    def speedup(self, *args, **options):
        self.calls.append(("speedup", args, options))
        base, mtp = self._answer(args[6], 10.0, 800.0), self._answer(args[6], 5.0, 1000.0)
        return {"speedup": 1.25, "per_user_speedup": 2.0, "mtp": mtp, "base": base}

    def _answer(self, batch, tpot, tps):
        return {"tpot_ms": tpot, "tps": tps, "tps_per_user": 1e3 / tpot, "backend": "sglang",
                "backend_version": "0.5.14", "concurrency": self.held or batch}


@pytest.fixture
def fake(monkeypatch):
    f = Fake()
    monkeypatch.setattr(peer, "estimate", f.estimate)
    monkeypatch.setattr(peer, "speedup", f.speedup)
    return f


def test_ask_gives_the_accept_length_and_the_deployments_rate(fake):
    got = peer_compare.ask(point(parallel={"tp": 8, "dp": 2}), 9.7)
    call, args, _ = fake.calls[0]
    assert call == "speedup" and args[-2:] == (3, 4.0)  # nextn, and the accept length held to nextn + 1
    assert got["aic_tps"] == 2000.0 and got["aic_tpot_ms"] == 5.0 and got["aic_speedup"] == 1.25
    assert got["aic_per_user_speedup"] == 2.0 and got["note"] == ""
    plain = peer_compare.ask(point(speculative={"design": "none"}), 1.0)
    assert fake.calls[-1][0] == "estimate" and plain["aic_speedup"] == 1.0 and plain["aic_tps"] == 800.0


def test_a_batch_it_cannot_hold_is_noted(monkeypatch):
    f = Fake(held=5)
    monkeypatch.setattr(peer, "speedup", f.speedup)
    got = peer_compare.ask(point(), 2.5)
    assert "holds 5 of the 16 users" in got["note"]


def test_no_answer_leaves_numbers_out_and_says_why(fake):
    got = peer_compare.ask(point(hardware="mi300x"), 2.5)
    assert math.isnan(got["aic_tpot_ms"]) and got["note"].startswith("hardware: mi300x") and not fake.calls


def test_compare_pairs_each_point_and_baseline_with_its_first_seed(fake):
    points = [point(workload={"concurrency": c, "num_requests": c}, seeds=2) for c in (2, 4)]
    summary, _ = run_rows(points, jobs=1, progress=False)
    rows = peer_tables.compare(first_rows(points, summary), progress=False)
    assert [(r["point"], r["design"], r["concurrency"]) for r in rows] == \
        [(0, "nextn", 2), (1, "nextn", 4), (-1, "none", 2), (-1, "none", 4)]
    first = [r for r in summary if r["seed"] == points[0].seed]
    for row, ran in zip(rows, first):
        assert row["tps"] == ran["tps"] and row["tpot_mean_ms"] == 1e3 * ran["tpot_mean_s"]
    assert [c[1][6] for c in fake.calls] == [2, 4, 2, 4]  # each asked at its own batch
    text = peer_tables.report(rows)
    assert "aic TPOT ms" in text and "sglang 0.5.14" in text


def test_peer_without_aiconfigurator_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(peer, "available", lambda: False)
    line = one_line_error(capsys, ["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")],
                          "", "pip install 'mtpsim[peer]'")
    assert "--peer" in line and not (tmp_path / "o").exists()


needs_aic = pytest.mark.skipif(not peer._importable_here(), reason="aiconfigurator not installed (mtpsim[peer])")


@needs_aic
def test_run_prints_and_writes_aiconfigurators_answer(capsys, tmp_path):
    assert cli.main(["run", "scenarios/quickstart.yaml", "--peer", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "aiconfigurator 0.12.0 beside mtpsim" in out and "aic TPOT ms" in out
    with open(tmp_path / "o" / "peer.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["design"] for r in rows] == ["nextn", "none"]
    for r in rows:  # both answered, at figures of the deployment's size (DeepSeek-V3 on 8 H200)
        assert 2 < float(r["aic_tpot_ms"]) < 200 and float(r["aic_tps"]) > 0 and r["note"] == ""
    assert float(rows[0]["aic_speedup"]) > 1 and float(rows[1]["aic_speedup"]) == 1


def test_search_asks_for_the_chosen_deployment_and_the_best_without_mtp(fake, monkeypatch, tmp_path, capsys):
    from tests.test_search import search
    monkeypatch.setattr(peer, "available", lambda: True)
    assert cli.main(search(tmp_path, "--tpot", "p99:100ms", "--peer")) == 0
    out = capsys.readouterr().out
    assert "the chosen deployment and the best without MTP, aiconfigurator" in out
    with open(tmp_path / "out" / "peer.csv") as f:
        rows = list(csv.DictReader(f))
    chosen = out.split("best: ")[1].splitlines()[0]  # `1x tp8 ep8 adp1, nextn S=2 at 8 users`
    assert [r["design"] for r in rows] == ["nextn", "none"] and f"S={rows[0]['steps']}" in chosen
    assert [c[0] for c in fake.calls] == ["speedup", "estimate"]
    assert fake.calls[0][1][3:7] == (8, 1, 8, int(rows[0]["concurrency"]))  # tp 8, experts over ep 8


@needs_aic
def test_another_interpreter_answers_through_the_worker(monkeypatch):
    """$AICONFIGURATOR_PYTHON: peer.py runs by its path under that interpreter (it imports nothing
    of mtpsim) and answers as in-process aiconfigurator does."""
    import sys
    here = peer_compare.ask(point(), 2.5)
    monkeypatch.setattr(peer, "_importable_here", lambda: False)
    monkeypatch.setenv(peer.PYTHON_ENV, sys.executable)
    there = peer_compare.ask(point(), 2.5)
    assert there["note"] == "" and there["aic_tpot_ms"] == pytest.approx(here["aic_tpot_ms"])
    assert there["aic_speedup"] == pytest.approx(here["aic_speedup"])


def test_a_user_catalogs_model_of_a_mapped_name_is_compared_with_the_built_in_one(tmp_path, monkeypatch):
    import yaml

    from mtpsim.catalog import CATALOG_DIR
    entry = yaml.safe_load((CATALOG_DIR / "models" / "deepseek-v3.yaml").read_text())
    entry["hidden_size"] = 4096
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "deepseek-v3.yaml").write_text(yaml.safe_dump(entry))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    with pytest.raises(peer.NotExpressible, match="^model: hidden_size differs from the built-in deepseek-v3"):
        peer_compare.question(point())


def test_recommend_prints_each_tools_pick_per_batch(monkeypatch, tmp_path, capsys):
    """Fake aiconfigurator: MTP (1000 tok/s) beats plain (800) at every batch but the largest,
    where plain wins (1200): its picks and break-even follow its own numbers, not mtpsim's."""
    f = Fake()
    monkeypatch.setattr(peer, "available", lambda: True)
    monkeypatch.setattr(peer, "speedup", f.speedup)
    monkeypatch.setattr(peer, "estimate", lambda *a, **o: {**f._answer(a[6], 10.0, 1200.0 if a[6] == 8 else 800.0)})
    assert cli.main(["recommend", "scenarios/quickstart.yaml", "--batch", "1,8", "--seeds", "1", "--max-steps", "2",
                     "--peer", "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    table = out.split("each tool's TPS pick:\n")[1].splitlines()
    assert table[1].split()[0] == "1" and table[1].split()[3] == "1"      # batch 1: its pick S=1 (ties: fewest)
    assert table[2].split()[0] == "8" and table[2].split()[3] == "0"      # batch 8: plain wins
    assert "aiconfigurator's break-even batch: 8" in out
    with open(tmp_path / "p" / "peer.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 6  # 2 batches x (none, S=1, S=2)


def test_a_question_asked_twice_is_answered_once(monkeypatch):
    """A sweep's points share their baselines' questions: peer._run answers each once a process."""
    calls = []
    monkeypatch.setattr(peer, "_importable_here", lambda: True)
    monkeypatch.setattr(peer, "_ANSWERED", {})
    monkeypatch.setattr(peer, "_answer_safely", lambda r: calls.append(r["batch"]) or
                        {"tpot_ms": 10.0 + r["batch"], "tps": 100.0, "tps_per_user": 10.0})
    args = ("deepseek-v3", "h200", "sglang", 8, 8, 1)
    first = peer.estimate(*args, 4, 1000, 200)
    again = peer.estimate(*args, 4, 1000, 200)
    other = peer.estimate(*args, 8, 1000, 200)
    assert calls == [4, 8] and first == again and other["tpot_ms"] == 18.0
