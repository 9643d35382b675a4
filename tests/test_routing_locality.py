"""cost.routing_locality: a request's consecutive tokens share experts (costs/ffn.py shared_routing),
so a verify of k + 1 tokens per request touches fewer experts than k + 1 independent tokens."""
from __future__ import annotations

import pytest

from mtpsim import advice, catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs import ops as O
from mtpsim.designs import DesignShape
from mtpsim.report import op_table


def test_shared_routing_counts_one_draw_per_request_and_the_unshared_rest():
    assert O.shared_routing(0.0, 4) == 1.0 and O.shared_routing(0.5, 1) == 1.0
    assert O.shared_routing(1.0, 4) == pytest.approx(1 / 4)       # every token reuses the first one's experts
    assert O.shared_routing(0.5, 4) == pytest.approx(2.5 / 4)     # Cohere's ~2.5x one token's experts at 4 tokens
    shares = [O.shared_routing(x, 4) for x in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert shares == sorted(shares, reverse=True)


def test_at_whole_locality_a_verify_touches_what_a_decode_step_of_its_requests_does():
    ffn = catalog.load_model("deepseek-v3").ffn_kinds["moe"]
    par = O.Parallel(8)

    def touched(tokens, independent=1.0):
        ops = O.ffn_ops(ffn, 7168, tokens, "fp8", "fp8", par, independent=independent)
        return next(op.shape["touched"] for op in ops if op.name == "moe.experts")

    batch, q = 8, 4
    assert touched(batch * q, O.shared_routing(1.0, q)) == pytest.approx(touched(batch))
    assert touched(batch) < touched(batch * q, O.shared_routing(0.5, q)) < touched(batch * q)


def _ops(design: str, locality: float, model: str = "deepseek-v3", batch: int = 8):
    spec = {"speculative": {"design": design, "steps": 3}, "acceptance": {"per_depth": [0.8, 0.7, 0.6]}} \
        if design != "none" else {"speculative": {"design": "none"}}
    s = sc.validate({"name": "locality", "model": model, "hardware": "h200", "parallel": {"tp": 8},
                     "cost": {"routing_locality": locality}, **spec})
    return op_table(build_pricer(s), DesignShape.of(s.speculative), batch, 512)


def test_locality_cheapens_the_verify_experts_alone():
    """Only a pass that brings several tokens per request changes: the verify's experts get
    cheaper, the plain step, the draft's one-token passes and every other op do not."""
    base, shared = (_ops("nextn", x).set_index(["pass", "op"]).time_ms for x in (0.0, 0.5))
    verify = ("verify:target", "moe.experts")
    assert shared[verify] < base[verify]
    others = [row for row in base.index if row != verify and "extend" not in row[0]]
    assert shared[others].equals(base[others])
    assert _ops("none", 0.5).equals(_ops("none", 0.0))


def test_locality_on_a_dense_model_is_warned_of_and_changes_nothing():
    s = sc.validate({"name": "locality", "model": "llama-3.1-8b", "hardware": "h100-sxm",
                     "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
                     "acceptance": {"per_depth": [0.8, 0.7, 0.6]}, "cost": {"routing_locality": 0.5}})
    assert ("cost.routing_locality" in [k for k, _ in advice.problems(s)])
    dense = {"model": "llama-3.1-8b", "draft": "eagle3-llama-3.1-8b"}
    assert _dense(0.5, **dense).equals(_dense(0.0, **dense))


def _dense(locality, model, draft):
    s = sc.validate({"name": "locality", "model": model, "hardware": "h100-sxm",
                     "speculative": {"design": "nextn", "steps": 3, "draft": draft},
                     "acceptance": {"per_depth": [0.8, 0.7, 0.6]}, "cost": {"routing_locality": locality}})
    return op_table(build_pricer(s), DesignShape.of(s.speculative), 8, 512)


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_a_locality_outside_0_1_is_refused_at_its_key(value):
    with pytest.raises(sc.ScenarioError) as err:
        sc.validate({"name": "locality", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
                     "cost": {"routing_locality": value}})
    assert "cost.routing_locality" in str(err.value)
