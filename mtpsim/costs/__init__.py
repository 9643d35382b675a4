"""Cost models: ops (shapes), layer (a decoder layer's ops; a profile's whole-layer rows), roofline
(datasheet), calibrated (measured profile, read by profile.py), passes (pricing). The scenario
loader picks which one prices a scenario (`Specs.cost_model`). Torch-free, and importing nothing
from calibration/, verify/ or torchkit/: what a profile means is defined here (tests/test_imports.py).

`build_pricer(scenario)` is the entry: it picks the scenario's cost model and returns a Pricer
whose `price(shape, q_lens, kv_lens)` gives a PassCost.
"""
from __future__ import annotations

from mtpsim.costs.ops import Parallel
from mtpsim.costs.passes import PassCost, PassShape, Pricer
from mtpsim.costs.roofline import RooflineCosts
from mtpsim.costs.wide_ep import ep_imbalance
from mtpsim.files import version


def build_costs(scenario):
    """The scenario's op-level cost model (roofline, or calibrated from a profile folder). A
    profile is read once per process while its files are unchanged (a point and its baseline,
    the points of a sweep run in one worker, share it: it takes ~0.3 s to load)."""
    specs = scenario.specs
    if specs.cost_model == "calibrated":
        from mtpsim.costs.calibrated import CalibratedCosts
        key = (version(specs.profile), specs.hardware.model_dump_json(), specs.engine.model_dump_json())
        if key not in _PROFILES:
            if len(_PROFILES) >= 4:
                _PROFILES.pop(next(iter(_PROFILES)))
            _PROFILES[key] = CalibratedCosts.from_profile(specs.profile, specs.hardware, specs.engine)
        return _PROFILES[key]
    return RooflineCosts(specs.hardware, specs.engine)


_PROFILES: dict = {}  # build_costs' loaded profiles, oldest first


def build_pricer(scenario, costs=None) -> Pricer:
    s, p = scenario, scenario.parallel
    layout = Parallel(p.tp, p.ep, p.attention_dp, p.gpus_per_node or s.specs.hardware.gpus_per_node)
    return Pricer(s.specs.model, s.specs.hardware, costs or build_costs(s), tp=s.parallel.tp,
                  ep=s.parallel.ep, assistant=s.specs.assistant, moe_skew=s.cost.moe_skew,
                  cuda_graphs=s.engine.cuda_graphs, max_graph_batch=s.engine.max_graph_batch,
                  heads=s.speculative.steps, draft=s.specs.draft, attention_dp=s.parallel.attention_dp,
                  gpus_per_node=s.parallel.gpus_per_node, two_batch_overlap=s.engine.two_batch_overlap,
                  ep_imbalance=ep_imbalance(s.cost.ep_imbalance, s.engine.eplb, layout))


__all__ = ["PassCost", "PassShape", "Pricer", "build_costs", "build_pricer"]
