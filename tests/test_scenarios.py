"""Every scenario file loads, opens with its question and command, and runs."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import pandas as pd
import pytest

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.run import run_points

ROOT = Path(__file__).resolve().parent.parent
SIMULATED = sorted(ROOT.glob("scenarios/*.yaml")) + sorted(ROOT.glob("scenarios/published/*.yaml"))
VERIFY = sorted(ROOT.glob("scenarios/verify/*.yaml"))


@pytest.mark.parametrize("path", SIMULATED + VERIFY, ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario_loads_and_opens_with_its_question(path):
    points = sc.load(path)
    head = path.read_text().split("\n\n")[0].lower()
    assert head.startswith("#") and "mtpsim" in head        # the command that runs it
    assert points[0].question


@functools.cache
def summary_of(name: str) -> pd.DataFrame:
    """One run of scenarios/<name> (each is run once per session, whichever tests read it)."""
    summary, _ = run_points(sc.load(ROOT / "scenarios" / name), jobs=1, progress=False)
    return summary


def _by_load(summary: pd.DataFrame, **where) -> pd.Series:
    rows = summary
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return rows.set_index("concurrency").sort_index()


def _expected_accept_length(per_depth: list[float]) -> float:
    """E[A] = 1 + sum_k prod_{j<=k} alpha_j (a chain, identical requests)."""
    return 1 + sum(math.prod(per_depth[: k + 1]) for k in range(len(per_depth)))


def _holds_everywhere(summary: pd.DataFrame) -> None:
    """What any run must show, whatever its question: bounds that follow from how speculation works,
    not from today's numbers. A baseline row accepts exactly its one token and verifies one; a
    speculative row keeps at least the bonus token and at most every draft plus the bonus
    (AL <= steps + 1, AL <= the tokens it verifies); a speculative iteration costs at least a plain
    one at the same batch and a batch's throughput does not fall as it grows, so the TPS speedup
    cannot exceed the accept length; the time shares of an iteration's parts add up to the whole."""
    assert len(summary) > 0 and (summary.design == "none").any(), "every run carries its baseline"
    base, spec = summary[summary.design == "none"], summary[summary.design != "none"]
    decoded = base.accept_length.notna()  # a prefill-only point decodes nothing
    assert (base.accept_length[decoded] == 1).all() and (base.verify_width[decoded] == 1).all()
    assert (base.draft_share == 0).all() and (base.speedup == 1).all()
    eps = 1e-9
    assert spec.accept_length.between(1, spec.steps + 1 + eps).all(), spec[["design", "steps", "accept_length"]]
    assert (spec.accept_length <= spec.draft_tokens + eps).all() and (spec.accept_length <= spec.verify_width + eps).all()
    assert (spec.speedup <= spec.accept_length + eps).all(), spec[["design", "steps", "speedup", "accept_length"]]
    # per user, only at a closed load: an open load's speculative run drains its queue and decodes
    # smaller batches than its baseline, which a user feels beyond the accept length
    closed = spec[spec.concurrency.notna()]
    assert (closed.per_user_speedup <= closed.accept_length + eps).all()
    shares = summary[["draft_share", "verify_share", "extend_share", "prefill_share", "host_share"]]
    assert (shares >= 0).all().all() and shares.sum(axis=1).to_numpy() == pytest.approx(1, abs=1e-9)


def _quickstart(s):
    nextn, none = (s[s.design == d].iloc[0] for d in ("nextn", "none"))
    assert nextn.speedup > 1  # nextn S=3 pays at 16 users
    assert nextn.draft_share > 0 and nextn.extend_share > 0  # where the time goes: the draft passes are priced
    assert nextn.decode_iterations < none.decode_iterations  # each verify commits more than one token


def _break_even(s):
    speedup = _by_load(s, design="nextn").speedup  # speculation pays less as the batch grows
    assert speedup.iloc[-1] < speedup.iloc[0] and speedup.iloc[-1] < speedup.iloc[:4].min()


def _steps_sweep(s):
    at_one = s[(s.concurrency == 1) & (s.design == "nextn")].set_index("steps").speedup
    assert at_one.is_monotonic_increasing  # at batch 1 each step buys more
    per_depth = sc.load(ROOT / "scenarios" / "deepseek-v3-h200-steps.yaml")[0].acceptance.per_depth
    for steps, g in s[s.design == "nextn"].groupby("steps"):
        g = g.sort_values("concurrency")
        assert g.speedup.iloc[-1] < g.speedup.iloc[0], steps  # and less at batch 256 than at 1
        # what each step buys is the file's acceptance at every load: the closed form, within
        # sampling error and the last iteration's output cap (which only shortens)
        closed_form = _expected_accept_length(per_depth[:steps])
        assert ((g.accept_length - closed_form).abs() < 0.05).all(), (steps, closed_form)


def _frozen_kv(s):
    kv, nextn = _by_load(s, design="frozen_kv"), _by_load(s, design="nextn")
    assert (kv.accept_length - nextn.accept_length).abs().max() < 0.05  # same acceptance: a fair race
    assert kv.tps.iloc[0] > nextn.tps.iloc[0]  # at batch 1 the assistant's cheaper passes win


def _multi_layer(s):
    nextn = summary_of("mimo-v2-flash-nextn.yaml")
    multi, one = _by_load(s, design="multi_layer"), _by_load(nextn, design="nextn")
    assert (multi.accept_length > one.accept_length).all()  # dedicated layers keep deeper drafts accepted
    assert (multi.tps > one.tps).all()


def _swa_draft(s):
    swa = _by_load(s, **{"model.mtp.layer": "attention=swa ffn=dense"})
    moe = _by_load(s, **{"model.mtp.layer": "attention=global ffn=moe"})
    assert (swa.tps > moe.tps).all()  # the cheap draft layer decodes faster at every load


def _my_acceptance(s):
    chain = [0.85, 0.70, 0.60]
    for steps, g in s[s.design == "nextn"].groupby("steps"):
        # identical requests: the simulated accept length is the closed form, within sampling error
        assert abs(g.accept_length.mean() - _expected_accept_length(chain[:steps])) < 0.05, steps
    best = s.loc[s[s.design == "nextn"].groupby("concurrency").tps.idxmax()].set_index("concurrency")
    assert best.steps.loc[1] == 3 and (best.speedup > 1).all()  # at batch 1 a third step at 0.6 still pays


def _tree_vs_chain(s):
    spec = s[s.design == "nextn"]
    assert (spec.draft_tokens == 8).all()  # the race is at equal verify width N = 8
    chain, tree = _by_load(spec, topk=1), _by_load(spec, topk=4)
    assert (chain.accept_length > tree.accept_length).all()
    # the file's closed forms (before output caps, which only shorten): the chain's is the product
    # form over the first column, the tree's mtpsim/tree.py's; the simulated lengths sit at or below
    acc = sc.load(ROOT / "scenarios" / "tree-vs-chain.yaml")[0].acceptance
    chain_form = _expected_accept_length([row[0] for row in acc.per_depth_topk])
    tree_form = AcceptanceProfile.from_section(acc, 3, "", topk=4, draft_tokens=8).expected_accept_length(3)
    assert chain_form > tree_form  # the assumption itself favours the chain's length
    assert (chain.accept_length <= chain_form + 0.05).all() and (tree.accept_length <= tree_form + 0.05).all()
    assert (chain.accept_length > chain_form - 0.5).all() and (tree.accept_length > tree_form - 0.5).all()


def _adaptive(s):
    none = s[s.design == "none"]
    spec = s[s.design != "none"]
    assert ((spec.tps / none.tps.iloc[0] - 1).abs() < 0.02).all()  # an open load: TPS is the offered rate
    fixed = spec[spec.policy.isna()].set_index("steps").per_user_tps
    policies = spec[spec.policy.notna()].per_user_tps
    assert (fixed > none.per_user_tps.iloc[0]).all()  # so per-user speed decides, and speculation raises it
    assert policies.between(fixed[1], fixed[3] + 1e-9).all()  # a policy lies between steps 1 and steps 3


def _trace_replay(s):
    none, nextn = (s[s.design == d].iloc[0] for d in ("none", "nextn"))
    assert nextn.tpot_p50_s < 0.7 * none.tpot_p50_s  # MTP shortens each request's decode ...
    assert abs(nextn.tps / none.tps - 1) < 0.1     # ... while the trace's arrivals set the throughput
    assert math.isnan(none.concurrency) and math.isnan(nextn.concurrency)  # an open load: no concurrency


def _block_confidence(s):
    spec = s[s.design == "block"]
    kept = spec[spec.verify_width < spec.verify_width.max()]  # the confidence rule verifies fewer drafts
    full = spec[spec.verify_width == spec.verify_width.max()]
    assert len(kept) == len(full) == 4
    gain = kept.set_index("concurrency").tps / full.set_index("concurrency").tps
    assert (gain > 1).all()  # at the same accept length, a narrower verify is never slower


def _disagg(s):
    spec = s[s.design == "nextn"]
    assert (spec.speedup > 1).all()  # MTP pays on the decode pool at both steps
    assert (spec.transfer_share_of_ttft < 0.05).all()  # NVLink inside the rack: the KV move is a sliver of TTFT


def _dspark_vs_mtp1(s):
    mtp1, dspark = _by_load(s, design="nextn"), _by_load(s, design="block")
    assert dspark.per_user_tps.iloc[0] > mtp1.per_user_tps.iloc[0]  # at batch 1 five drafts a block win
    for g in (mtp1, dspark):  # and each pays less as the batch grows
        assert g.speedup.iloc[-1] < g.speedup.iloc[0]


def _engram_host(s):
    two, four = (_by_load(s, design="block", **{"parallel.tp": n}) for n in (2, 4))
    assert (four.per_user_tps > two.per_user_tps).all()  # four GPUs decode each request faster ...
    assert (two.tps / 2 > four.tps / 4).all()           # ... two give more tokens per GPU
    assert (two.speedup > 1).all() and (four.speedup > 1).all()  # DSpark pays on both at these loads


CLAIMS = {"azure-conv-replay.yaml": _trace_replay, "dspark-vs-mtp1-deepseek-v4-flash.yaml": _dspark_vs_mtp1,
          "deepseek-v4.1-flash-engram-host.yaml": _engram_host,
          "block-confidence-qwen3-8b.yaml": _block_confidence,
          "disagg-gb200-1p3d.yaml": _disagg,
          "quickstart.yaml": _quickstart, "break-even-batch.yaml": _break_even,
          "deepseek-v3-h200-steps.yaml": _steps_sweep, "gemma4-frozen-kv-vs-nextn.yaml": _frozen_kv,
          "mimo-v2-flash-multi_layer.yaml": _multi_layer,  # the pair's comparison, from either side:
          "mimo-v2-flash-nextn.yaml": lambda s: _multi_layer(summary_of("mimo-v2-flash-multi_layer.yaml")),
          "moe-vs-swa-draft.yaml": _swa_draft, "steps-for-my-acceptance.yaml": _my_acceptance,
          "tree-vs-chain.yaml": _tree_vs_chain, "adaptive-steps.yaml": _adaptive}


def test_the_globs_find_the_scenarios():
    """A glob that matched nothing would parametrize the tests above over nothing: they would pass."""
    assert len(SIMULATED) > len(CLAIMS) and VERIFY and sorted(ROOT.glob("scenarios/published/*.yaml"))


def test_every_scenario_has_its_claim_checked():
    assert sorted(CLAIMS) == sorted(p.name for p in ROOT.glob("scenarios/*.yaml"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_scenario_shows_what_it_asks(name):
    """Each scenario runs, and its results show what its question is about (the check beside it
    in CLAIMS: the trend, the comparison or the closed form the scenario exists to show)."""
    summary = summary_of(name)
    assert len(summary[summary.point >= 0]) == len(sc.load(ROOT / "scenarios" / name))
    assert (summary.tps > 0).all() and summary.speedup.notna().all()
    _holds_everywhere(summary)
    CLAIMS[name](summary)


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(ROOT.glob("scenarios/published/*.yaml")), ids=lambda p: p.name)
def test_published_scenario_runs(path):
    """The published cases' figures are checked by benchmarks/published.py; here each runs."""
    points = sc.load(path)
    summary, _ = run_points(points, jobs=1, progress=False)
    assert len(summary[summary.point >= 0]) == len(points)
    assert (summary.tps > 0).all() and summary.speedup.notna().all()
    _holds_everywhere(summary)
