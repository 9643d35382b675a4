"""Cost models: ops (shapes), layer (a decoder layer's ops; a profile's whole-layer rows), roofline
(datasheet), calibrated (measured profile, read by profile.py), passes (pricing). The scenario
loader picks which one prices a scenario (`Specs.cost_model`). Torch-free, and importing nothing
from calibration/, verify/ or torchkit/: what a profile means is defined here (tests/test_imports.py).

`build_pricer(scenario)` is the entry: it resolves the scenario's deployment once (deployment.py:
the model's parts as records, the parallel layout, the engine's host model), picks its cost model
(a `cost_model.CostModel`) and returns a Pricer whose `price(shape, q_lens, kv_lens)` gives a
PassCost.
"""
from __future__ import annotations

from mtpsim.costs.cost_model import CostModel
from mtpsim.costs.deployment import Deployment, resolve
from mtpsim.costs.passes import PassCost, PassShape, Pricer
from mtpsim.costs.roofline import RooflineCosts
from mtpsim.files import version


def build_costs(scenario):
    """The scenario's op-level cost model (roofline, or calibrated from a profile folder). A
    profile is read once per process while its files are unchanged (a point and its baseline,
    the points of a sweep run in one worker, share it: it takes ~0.3 s to load), and a process
    after the first reads it parsed from the disk cache (profile_cache.py)."""
    specs = scenario.specs
    if specs.cost_model == "calibrated":
        from mtpsim.costs.calibrated import CalibratedCosts
        from mtpsim.costs.profile_cache import cached
        key = (version(specs.profile), specs.hardware.model_dump_json(), specs.engine.model_dump_json())
        if key not in _PROFILES:
            if len(_PROFILES) >= 4:
                _PROFILES.pop(next(iter(_PROFILES)))
            _PROFILES[key] = cached(specs.profile, key[1:], lambda: CalibratedCosts.from_profile(
                specs.profile, specs.hardware, specs.engine), CalibratedCosts)
        return _PROFILES[key]
    return RooflineCosts(specs.hardware, specs.engine)


_PROFILES: dict = {}  # build_costs' loaded profiles, oldest first


def build_pricer(scenario, costs: CostModel | None = None) -> Pricer:
    """The scenario's deployment (costs/deployment.py `resolve`) priced by its cost model, or by `costs`."""
    return Pricer(resolve(scenario), costs or build_costs(scenario))


__all__ = ["CostModel", "Deployment", "PassCost", "PassShape", "Pricer", "build_costs", "build_pricer"]
