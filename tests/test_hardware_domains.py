"""Today's GPUs and their NVLink domains (mtpsim/data/hardware/): the new entries' figures, the
profiles converted for them, and expert all-to-all priced by whether it leaves the domain."""
from __future__ import annotations

import pytest

from mtpsim import catalog
from mtpsim.costs import ops as O
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.roofline import RooflineCosts
from mtpsim.memory import MIB
from mtpsim.packagedata import data_dir

NEW = ("gb200", "gb300", "b300", "mi325x", "mi355x")


@pytest.mark.parametrize("name", NEW)
def test_new_gpus_give_every_figure_the_issue_asks(name):
    hw = catalog.load_hardware(name)
    text = (catalog.CATALOG_DIR / "hardware" / f"{name}.yaml").read_text()
    assert "Sources:" in text and hw.board_power_w is not None
    assert hw.memory_capacity_bytes % MIB == 0  # as the driver reports it, in MiB
    assert {"bf16", "fp8"} <= set(hw.peak_flops) and hw.internode_bandwidth_bytes_per_s
    assert hw.peak_flops["fp8"] == pytest.approx(2 * hw.peak_flops["bf16"], rel=0.01)
    if name != "mi325x":  # CDNA 3 has no FP4 matrix path: FP4 weights compute in FP8
        assert hw.peak_flops["fp4"] >= 1.99 * hw.peak_flops["fp8"]  # datasheet rounding
    else:
        assert "fp4" not in hw.peak_flops and hw.flops_per_s("fp4") == hw.peak_flops["fp8"]


def test_nvl72_racks_are_one_domain_and_boards_are_eight():
    assert catalog.load_hardware("gb200").gpus_per_node == 72 == catalog.load_hardware("gb300").gpus_per_node
    assert catalog.load_hardware("b300").gpus_per_node == 8 == catalog.load_hardware("b200").gpus_per_node


def test_driver_capacities_of_the_converted_systems():
    # aiconfigurator-core 0.12.0 systems/<system>.yaml mem_capacity: nvidia-smi's MiB
    for name, mib in {"gb200": 189471, "gb300": 284208, "b300": 275040}.items():
        assert catalog.load_hardware(name).memory_capacity_bytes == mib * MIB


@pytest.mark.parametrize("name", ["gb200", "gb300", "b300"])
def test_measured_profiles_are_the_default(name):
    hw = catalog.load_hardware(name)
    profile = hw.profile_for("sglang")
    folder = data_dir() / "profiles" / profile
    costs = CalibratedCosts.from_profile(folder, hw)
    assert costs.meta["device"] == name and {"gemm", "attention", "moe", "alltoall"} <= set(costs.tables)


def _alltoall_s(costs, ranks: int, per_node: int) -> tuple[float, str]:
    op = O.dispatch_combine(64, 8, 7168, ranks, nodes=O.Parallel(ranks, ranks, 1, per_node).nodes(ranks))
    t = costs.time(op, graphs=True)
    return t.total_s, t.source


def test_expert_traffic_that_leaves_the_domain_costs_more():
    gb200, b200 = catalog.load_hardware("gb200"), catalog.load_hardware("b200")
    inside, _ = _alltoall_s(RooflineCosts(gb200), 16, gb200.gpus_per_node)
    across, source = _alltoall_s(RooflineCosts(b200), 16, b200.gpus_per_node)
    # same NVLink 5 per GPU: what differs is the 50 GB/s network leg two B200 boards cross
    assert across > 2 * inside and source == "extrapolated"


def test_collectives_past_the_measured_ranks_are_labelled_extrapolated():
    hw = catalog.load_hardware("gb200")
    costs = CalibratedCosts.from_profile(data_dir() / "profiles" / "gb200-trtllm", hw)
    measured = _alltoall_s(costs, 4, 72)
    wide = _alltoall_s(costs, 72, 72)
    assert measured[1].startswith("calibrated") and wide[1] == "extrapolated"
    assert _alltoall_s(RooflineCosts(hw), 8, 72)[1] == "roofline"
