"""The deployment record (costs/deployment.py) and the cost-model protocol (costs/cost_model.py)."""
from __future__ import annotations

import pytest

from mtpsim import scenario as sc
from mtpsim.catalog import load_engine, load_hardware, load_model
from mtpsim.costs import CostModel
from mtpsim.costs.deployment import deploy, resolve
from mtpsim.costs.roofline import RooflineCosts

H200 = load_hardware("h200")


def test_parts_are_the_ones_the_specs_can_run():
    dsv3, llama = load_model("deepseek-v3"), load_model("llama-3.1-8b")
    own = deploy(dsv3, H200, load_engine("sglang"), heads=3)
    assert set(own.parts) == {"target", "mtp", "heads"}
    assert own.part("heads").copies == 3 and own.part("heads").groups[0][0] == 3
    assert own.part("mtp").shares_target_head and not own.part("target").shares_target_head
    eagle = deploy(llama, H200, load_engine("sglang"), draft=load_model("eagle3-llama-3.1-8b"))
    assert eagle.part("mtp").spec.name == "eagle3-llama-3.1-8b"
    assert not eagle.part("mtp").shares_target_head  # EAGLE-3 has a head of its own
    assert eagle.part("block_context").groups == () and eagle.part("block_context").kv_layers == ()
    with pytest.raises(KeyError, match="no part 'assistant'"):
        eagle.part("assistant")


def test_a_parts_attention_sums_its_layer_groups():
    m = load_model("deepseek-v3")
    target = deploy(m, H200, load_engine("sglang")).part("target")
    assert sum(n for _, n in target.attention) == sum(g.count for g in m.layers) == sum(n for n, _ in target.kv_layers)


def test_resolve_reads_the_scenarios_layout_and_engine():
    s = sc.validate({"name": "t", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8, "attention_dp": 8},
                     "engine": {"max_graph_batch": 64, "cuda_graphs": False},
                     "speculative": {"design": "nextn", "steps": 2}, "acceptance": {"per_depth": [0.8, 0.6]},
                     "workload": {"arrival": "batch", "concurrency": 8, "num_requests": 8}})
    d = resolve(s)
    assert (d.parallel.tp, d.parallel.attention_tp, d.parallel.gpus_per_node) == (8, 1, H200.gpus_per_node)
    assert (d.host.cuda_graphs, d.host.max_graph_batch, d.host.engine.name) == (False, 64, s.specs.engine.name)
    assert not d.host.uses_graphs("decode", 1) and d.group_batch(17) == 3


def test_both_cost_models_declare_the_protocol():
    from mtpsim.costs.calibrated import CalibratedCosts
    from mtpsim.costs.profile import PROFILES_DIR
    assert isinstance(RooflineCosts(H200), CostModel)
    assert isinstance(CalibratedCosts.from_profile(PROFILES_DIR / "cpu", load_hardware("cpu")), CostModel)
    assert not isinstance(object(), CostModel)
