"""Draft length that adapts per request (`acceptance.kept_length`): ragged verify widths priced
as they are, acceptance of what is kept, the mean verify width in the summary, and how it
composes with a `steps_by_batch` policy."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs import build_pricer
from mtpsim.costs.ops import BatchLens
from mtpsim.costs.ragged import all_plain, pass_lens
from mtpsim.designs import DesignShape, iteration_passes
from mtpsim.sim import simulate
from tests.test_bad_input import BASE, one_line_error, run

KEPT = [0.1, 0.2, 0.3, 0.4]  # P(0, 1, 2, 3 drafts kept)
ALPHAS = [0.9, 0.8, 0.7]


def scenario(cost: str = "auto", concurrency: int = 16, policy=None, **acceptance):
    spec = {"design": "nextn", "steps": 3, **({"policy": {"steps_by_batch": policy}} if policy else {})}
    return sc.validate({"name": "k", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
                        "speculative": spec, "cost": {"model": cost},
                        "acceptance": {"per_depth": ALPHAS, **acceptance},
                        "workload": {"arrival": "closed", "concurrency": concurrency, "num_requests": 8 * concurrency,
                                     "input_len": 512, "output_len": 512},
                        "engine": {"max_running_requests": 256}})


@pytest.mark.parametrize("cost", ["roofline", "calibrated"])
@pytest.mark.parametrize("batch", [1, 8, 64, 200])
def test_ragged_verify_costs_between_min_and_max_width(cost, batch):
    s = scenario(cost)
    pricer = build_pricer(s)
    verify = next(p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify")
    rng = np.random.default_rng(batch)
    kv = rng.integers(200, 4000, batch)
    widths = rng.integers(1, verify.tokens_per_request + 1, batch)
    widths[0], widths[-1] = 1, verify.tokens_per_request  # both extremes present (one request: the max)
    ragged = pricer.price_lens(replace(verify, ragged=True), BatchLens.of(widths, kv)).time_s

    def uniform(width):
        return pricer.price_lens(replace(verify, tokens_per_request=width, logits_per_request=width),
                                 BatchLens.uniform(width, kv, int(kv.sum()), int(kv.max()))).time_s

    lo, hi = uniform(int(widths.min())), uniform(int(widths.max()))
    assert lo <= ragged <= hi
    if batch > 1:
        assert lo < ragged < hi  # ragged is priced as itself, not as either end


def test_ragged_verify_of_equal_widths_is_the_uniform_verify():
    s = scenario("roofline", 8)
    pricer = build_pricer(s)
    verify = next(p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify")
    kv = np.arange(100, 900, 100)
    n = verify.tokens_per_request
    ragged = pricer.price_lens(replace(verify, ragged=True), BatchLens.of(np.full(8, n), kv))
    uniform = pricer.price_lens(verify, BatchLens.uniform(n, kv, int(kv.sum()), int(kv.max())))
    assert ragged.time_s == pytest.approx(uniform.time_s, rel=1e-12)


def _closed_form_accept_length(kept, alphas, steps):
    """E[A] = 1 + sum_j P(kept j) sum_{k <= min(j, S)} a_k."""
    a = np.cumprod(alphas[:steps])
    return 1 + sum(p * a[: min(j, steps)].sum() for j, p in enumerate(kept))


def test_accept_length_and_verify_width_follow_the_kept_distribution():
    """4096 request-iterations and more: the standard error of the mean accept length (sd < 1.2)
    is under 0.02, so 0.05 is over two of them."""
    row = simulate(scenario(kept_length=KEPT)).summary.iloc[0]
    assert row.accept_length == pytest.approx(_closed_form_accept_length(KEPT, ALPHAS, 3), abs=0.05)
    mean_kept = sum(j * p for j, p in enumerate(KEPT))
    assert row.verify_width == pytest.approx(1 + mean_kept, abs=0.05)
    fixed = simulate(scenario()).summary.iloc[0]
    assert fixed.verify_width == 4  # every request verifies its S + 1
    assert row.tps != fixed.tps


def test_a_steps_policy_caps_what_a_request_keeps():
    """The policy sets the iteration's steps for the running batch; each request then keeps
    min(its draw, those steps): at 1 step a request verifies 1 or 2 tokens."""
    row = simulate(scenario(kept_length=KEPT, policy={1: 1})).summary.iloc[0]
    assert row.verify_width == pytest.approx(1 + (1 - KEPT[0]), abs=0.05)
    assert row.accept_length == pytest.approx(_closed_form_accept_length(KEPT, ALPHAS, 1), abs=0.05)


def test_kept_drafts_cap_and_mean():
    prof = AcceptanceProfile(tuple(ALPHAS), kept_pmf=tuple(KEPT))
    kept = prof.kept_drafts(np.random.default_rng(0), 10_000, 2)
    assert kept.max() == 2 and kept.min() == 0
    assert prof.kept_length_mean(2) == pytest.approx(0.2 + 2 * 0.7)
    assert AcceptanceProfile(tuple(ALPHAS)).kept_drafts(np.random.default_rng(0), 5, 3) is None


@pytest.mark.parametrize("acceptance, key, word", [
    ("{per_depth: [0.8, 0.7], kept_length: [0.5, 0.4]}", "acceptance.kept_length", "not 1"),
    ("{per_depth: [0.8, 0.7], kept_length: [1.2, -0.2]}", "acceptance.kept_length.0", "less than or equal to 1"),
    ("{per_depth: [0.8, 0.7], kept_length: [1.0]}", "acceptance.kept_length", "at least 2"),
])
def test_kept_length_not_a_distribution_is_one_line(tmp_path, capsys, acceptance, key, word):
    text = BASE.replace("{per_depth: [0.8, 0.7]}", acceptance)
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_kept_length_needs_a_chain(tmp_path, capsys):
    text = BASE.replace("design: nextn, steps: 2", "design: none").replace(
        "{per_depth: [0.8, 0.7]}", "{kept_length: [0.5, 0.5]}")
    one_line_error(capsys, run(tmp_path, text), "acceptance.kept_length", "drafts nothing")


def test_a_batch_expansion_scorer_expands_each_request_by_its_own_width():
    """vLLM V0's scorer runs request i's window as q[i] single-token sequences: a ragged verify
    of equal widths is the uniform one, and narrower widths cost less."""
    from mtpsim.costs.batch_expansion import expanded_verify
    verify = next(p for p in iteration_passes(DesignShape("nextn", 3, 1, 4)) if p.kind == "verify")
    kv = np.array([100, 250, 900])
    _, uniform = expanded_verify(verify, BatchLens.uniform(4, kv, int(kv.sum()), int(kv.max())))
    _, ragged = expanded_verify(replace(verify, ragged=True), BatchLens.of(np.full(3, 4), kv))
    np.testing.assert_array_equal(uniform.kv, ragged.kv)
    _, narrow = expanded_verify(replace(verify, ragged=True), BatchLens.of(np.array([1, 2, 4]), kv))
    assert narrow.kv.tolist() == [100, 250, 251, 900, 901, 902, 903]



def _batch_run(design: str, **acceptance):
    """Eight requests arriving at once: one prefill, then decode iterations over the same (batch,
    KV) sequence whatever the design, as long as each emits one token per request."""
    spec = {"design": design, **({"steps": 3} if design != "none" else {})}
    s = sc.validate({"name": "c", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
                     "speculative": spec, "cost": {"model": "roofline"},
                     **({"acceptance": {"per_depth": ALPHAS, **acceptance}} if design != "none" else {}),
                     "workload": {"arrival": "batch", "concurrency": 8, "num_requests": 8,
                                  "input_len": 512, "output_len": 64}})
    iterations = simulate(s).iterations
    return iterations[iterations.kind == "decode"]


def test_a_controller_at_width_zero_decodes_plainly():
    """Every request at width 0 before drafting: each iteration is the plain decode step (same
    time as design none's, no draft, no extend), where a confidence rule still drafts first."""
    plain = _batch_run("none")
    controlled = _batch_run("nextn", kept_length=[1, 0, 0, 0], kept_by="controller")
    assert len(controlled) == len(plain)
    assert controlled.duration_s.to_numpy() == pytest.approx(plain.duration_s.to_numpy(), rel=1e-12)
    assert (controlled.draft_s == 0).all() and (controlled.extend_s == 0).all()
    confident = _batch_run("nextn", kept_length=[1, 0, 0, 0])
    assert (confident.draft_s > 0).all() and (confident.duration_s.to_numpy() > plain.duration_s.to_numpy()).all()


def test_a_controller_drafts_only_for_requests_above_width_zero():
    """Half the batch at width 0: the draft passes run over the other half, priced as that half
    alone; the verify stays ragged over everyone."""
    s = scenario("roofline", 8)
    pricer = build_pricer(s)
    draft = next(p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "draft")
    kv = np.arange(100, 900, 100)
    kept = np.array([0, 3, 0, 3, 0, 3, 0, 3])

    def uniform(q, kv=kv):
        return BatchLens.uniform(q, kv, int(kv.sum()), int(kv.max()))

    half = pass_lens("draft", draft.tokens_per_request, kept, kv, uniform, before_drafting=True)
    alone = uniform(draft.tokens_per_request, kv[kept > 0])
    assert pricer.price_lens(draft, half).time_s == pytest.approx(pricer.price_lens(draft, alone).time_s, rel=1e-12)
    everyone = pass_lens("draft", draft.tokens_per_request, kept, kv, uniform, before_drafting=False)
    assert everyone.batch == 8 and half.batch == 4
    assert pass_lens("draft", 1, np.zeros(8, int), kv, uniform, before_drafting=True) is None
    assert all_plain(np.zeros(8, int), True) and not all_plain(np.zeros(8, int), False)


def test_kept_by_controller_needs_a_kept_length(tmp_path, capsys):
    text = BASE.replace("{per_depth: [0.8, 0.7]}", "{per_depth: [0.8, 0.7], kept_by: controller}")
    one_line_error(capsys, run(tmp_path, text), "acceptance.kept_by", "kept_length")


def test_cost_report_prices_the_kept_widths_beside_the_full_width():
    """`mtpsim cost` with a kept_length: the design at full width and again at the widths the rule
    keeps, its mean verify width 1 + E[kept] (20 requests hold KEPT's proportions exactly)."""
    from mtpsim.report import cost_report
    it = cost_report(scenario("roofline", kept_length=KEPT), 20, 1024)["iterations"].set_index("design")
    assert it.loc["nextn", "verify_width"] == 4
    assert it.loc["nextn kept", "verify_width"] == pytest.approx(1 + sum(j * p for j, p in enumerate(KEPT)))
    assert it.loc["none", "iteration_s"] < it.loc["nextn kept", "iteration_s"] < it.loc["nextn", "iteration_s"]
    plain = cost_report(scenario("roofline", kept_length=[1, 0, 0, 0], kept_by="controller"), 64, 1024)
    it = plain["iterations"].set_index("design")
    assert it.loc["nextn kept", "iteration_s"] == it.loc["none", "iteration_s"]
