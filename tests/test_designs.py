"""Design records (designs.py): their passes, memory and checks against the model, and the
external EAGLE-3 draft that nextn runs for a model without MTP layers."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import catalog, catalog_lookup
from mtpsim import scenario as sc
from mtpsim.cli import main
from mtpsim.costs import build_pricer
from mtpsim.costs.passes import PassShape
from mtpsim.designs import DESIGNS, RECORDS, DesignShape, iteration_passes, label, prefill_passes
from mtpsim.memory import memory_budget, pool_rule

# ----------------------------------------------------------------------------- the records' passes

def _passes_before_records(design, S, K, N):
    """iteration_passes and prefill_passes as they read before the records (commit 2026447),
    kept here verbatim to pin the records to them."""
    verify = PassShape("verify", "target", N, N)
    target = PassShape("prefill", "target", 0, 1)
    if design == "none":
        return [PassShape("decode", "target", 1, 1)], [target]
    if design == "nextn":
        drafts = [PassShape("draft", "mtp", K, K, kv_offset=j) for j in range(1, S)]
        return drafts + [verify, PassShape("extend", "mtp", N, N)], [target, PassShape("prefill", "mtp", 0, 1)]
    if design == "multi_layer":
        return ([verify] + [PassShape("extend", "mtp", S + 1, 1, layer=k) for k in range(S)],
                [target] + [PassShape("prefill", "mtp", 0, 1, layer=k) for k in range(S)])
    if design == "frozen_kv":
        return [PassShape("draft", "assistant", K, K) for _ in range(S)] + [verify], [target]
    return [verify, PassShape("draft", "heads", N, N)], [target, PassShape("prefill", "heads", 0, 1)]


def _without_from_target(passes):
    """The records add `from_target` (what an external draft's fc keys on); all else is as before."""
    return [PassShape(p.kind, p.part, p.tokens_per_request, p.logits_per_request, p.layer, p.kv_offset)
            for p in passes]


@pytest.mark.parametrize("design", [d for d in DESIGNS if d != "block"])  # block came after the records
def test_record_passes_equal_the_lists_before_records(design):
    """Chains only: tree shapes (K > 1) follow SGLang's tree path since issue 12 (tests/test_tree.py)."""
    for S in range(1, 6):
        d = DesignShape(design, S, 1, S + 1) if design != "none" else DesignShape("none")
        iteration, prefill = _passes_before_records(design, d.steps, d.topk, d.draft_tokens)
        assert _without_from_target(iteration_passes(d)) == iteration
        assert _without_from_target(prefill_passes(d)) == prefill


def test_only_target_fed_passes_of_nextn_are_marked():
    d = DesignShape("nextn", 3, 1, 4)
    assert [p.kind for p in iteration_passes(d) if p.from_target] == ["extend"]
    assert [p.part for p in prefill_passes(d) if p.from_target] == ["mtp"]
    for other in ("multi_layer", "frozen_kv", "parallel_heads"):
        assert not any(p.from_target for p in iteration_passes(DesignShape(other, 3, 1, 4)))


def test_none_is_the_design_with_zero_steps():
    d = DesignShape.of(sc.Speculative(design="none", steps=3))
    assert (d.steps, d.topk, d.draft_tokens, d.reserved_tokens) == (0, 1, 1, 1)
    assert DesignShape("nextn", 3, 1, 4).reserved_tokens == 8 and DesignShape("nextn", 2, 4, 6).reserved_tokens == 16
    assert label("none", 0) == "none" and label("multi_layer", 2) == "multi_layer S=2"


@pytest.mark.parametrize("engine", catalog_lookup.names("engines"))
def test_engines_hide_host_time_only_behind_passes_a_design_runs(engine):
    spec = catalog.load_engine(engine)
    for design, kinds in spec.hides.items():
        assert set(kinds) <= set(RECORDS[design].pass_kinds), (engine, design)


def test_draft_layers_hold_weights_and_kv_as_the_records_say():
    s = sc.validate({"name": "m", "model": "mimo-v2-flash", "hardware": "h200", "parallel": {"tp": 8},
                     "speculative": {"design": "multi_layer", "steps": 3}, "acceptance": {"per_depth": [0.8] * 3}})
    pricer = build_pricer(s)
    one, three = (memory_budget(pricer, DesignShape(d, 3, 1, 4), pool_rule(s)) for d in ("nextn", "multi_layer"))
    assert three.draft_weight_bytes == pytest.approx(3 * one.draft_weight_bytes)
    assert len(three.draft_kv) == 3 * len(one.draft_kv) == 3
    assert memory_budget(pricer, DesignShape("none"), pool_rule(s, "none")).draft_weight_bytes == 0


# ----------------------------------------------------------------------------- designs against the model

SPEC = {"name": "t", "hardware": "h200", "acceptance": {"per_depth": [0.8, 0.7, 0.6]},
        "workload": {"arrival": "batch", "concurrency": 2, "num_requests": 2, "input_len": 64, "output_len": 8}}

WRONG = [
    # (id, model, speculative, key, reason fragment)
    ("heads-of-chained-mtp", "deepseek-v3", {"design": "parallel_heads"}, "speculative.design", "chained MTP layers"),
    ("heads-of-no-mtp", "llama-3.1-8b", {"design": "parallel_heads"}, "speculative.design", "no MTP layers"),
    ("nextn-of-heads", "meta-mtp-7b", {"design": "nextn"}, "speculative.design", "parallel heads"),
    ("multi-layer-of-heads", "meta-mtp-7b", {"design": "multi_layer"}, "speculative.design", "parallel heads"),
    ("nextn-no-mtp-no-draft", "llama-3.1-8b", {"design": "nextn"}, "speculative.draft", "external draft"),
    ("assistant-width", "gemma-4-e2b", {"design": "frozen_kv", "draft": "gemma-4-26b-a4b-assistant"},
     "speculative.draft", "2816 wide"),
    ("assistant-vocab", "gemma-4-e2b", {"design": "frozen_kv", "draft": {"from": "gemma-4-e2b-assistant",
                                                                        "vocab_size": 32000}},
     "speculative.draft", "32000-token vocabulary"),
    ("draft-width", "deepseek-v3", {"design": "nextn", "draft": "eagle3-llama-3.1-8b"}, "speculative.draft",
     "hidden_size 7168"),
    ("draft-is-an-assistant", "llama-3.1-8b", {"design": "nextn", "draft": "gemma-4-e2b-assistant"},
     "speculative.draft", "role: draft"),
    ("assistant-is-a-draft", "gemma-4-e2b", {"design": "frozen_kv", "draft": "eagle3-llama-3.1-8b"},
     "speculative.draft", "role: assistant"),
    ("multi-layer-takes-no-draft", "mimo-v2-flash", {"design": "multi_layer", "draft": "eagle3-llama-3.1-8b"},
     "speculative.draft", "no external draft"),
]


@pytest.mark.parametrize("case,model,speculative,key,reason", WRONG, ids=[w[0] for w in WRONG])
def test_a_design_the_model_cannot_run_is_one_line_exit_2(write_scenario, capsys, case, model, speculative, key,
                                                         reason):
    path = write_scenario({**SPEC, "model": model, "speculative": {"steps": 3, **speculative}})
    assert main(["cost", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"mtpsim: error: {path}: {key}: ") and reason in err


# ----------------------------------------------------------------------------- the external EAGLE-3 draft

def _eagle3(**speculative):
    return sc.validate({**SPEC, "model": "llama-3.1-8b", "hardware": "h100-sxm",
                        "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b", **speculative}})


def _ops(pricer, shape, batch=1):
    cost = pricer.price(shape, np.full(batch, max(shape.tokens_per_request, 1)), np.full(batch, 100), keep_ops=True)
    return {op.name: (op, n) for op, _, n in cost.ops}, cost


def test_eagle3_draft_ops_fuse_target_layers_only_when_fed_the_target():
    s = _eagle3()
    assert s.specs.draft.name == "eagle3-llama-3.1-8b" and s.specs.model.mtp is None
    pricer = build_pricer(s)
    extend, _ = _ops(pricer, PassShape("extend", "mtp", 4, 4, from_target=True))
    draft, cost = _ops(pricer, PassShape("draft", "mtp", 1, 1, kv_offset=1))
    assert extend["draft.fc"][0].weight_bytes == 3 * 4096 * 4096 * 2            # 3h -> h
    assert "draft.fc" not in draft                                              # its own h-wide hidden
    # embedding ++ hidden in, to 32 query heads and 8 key and value heads in one GEMM
    assert draft["attn.qkv_proj"][0].weight_bytes == 2 * 4096 * (4096 + 2 * 8 * 128) * 2
    assert draft["attn.o_proj"][0].weight_bytes == 4096 * 4096 * 2              # back to h
    assert draft["lm_head"][0].weight_bytes == 4096 * 32000 * 2                 # its own pruned head
    assert draft["sample.argmax"][0].act_bytes == 32000 * 2
    assert cost.kv_bytes == 1 * (100 + 1 + 1) * 8 * 128 * 2 * 2                 # one layer of its own KV


def test_eagle3_draft_memory_is_its_own_weights_and_one_layer_of_kv():
    s = _eagle3()
    budget = memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s))
    layer = 2 * 4096 * (4096 + 2048) + 4096 * 4096 + 3 * 4096 * 14336
    assert budget.draft_weight_bytes == (layer + 3 * 4096 * 4096 + 4096 * 32000) * 2   # ~0.42B params, bf16
    assert budget.draft_kv_bytes_per_token == 8 * 128 * 2 * 2


def test_eagle3_scenario_simulates_and_pays_at_batch_1():
    from mtpsim.run import run_points
    summary, _ = run_points([_eagle3()], progress=False)
    assert summary.loc[summary.design == "nextn", "speedup"].iloc[0] > 1.2
