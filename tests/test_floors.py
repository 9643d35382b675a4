"""Roofline latency floors (mtpsim/costs/floors.py, mtpsim/data/latency_floors.yaml)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mtpsim import catalog, specs
from mtpsim.calibration.grid import op_of
from mtpsim.costs import floors as F
from mtpsim.costs import floors_fit as FF
from mtpsim.costs import ops as O
from mtpsim.costs.roofline import RooflineCosts

GPUS = ("h100-sxm", "h200", "b200", "a100-80g", "mi300x")


def _synthetic(p: dict, n: int = 3000, seed: int = 1, collective: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    if collective:
        ranks = rng.choice([2, 4, 8], n).astype(float)
        memory = 10 ** rng.uniform(-8, -3, n)
        t = F.predict(p, 0.0, memory, ranks)
        return pd.DataFrame({"group": "allreduce", "compute_s": 0.0, "memory_s": memory, "ranks": ranks,
                             "items": 0.0, "small": memory < 1e-5, "time_s": t})
    compute, memory = 10 ** rng.uniform(-8, -3, n), 10 ** rng.uniform(-8, -3, n)
    n_items = rng.choice([0.0, 1.0, 64.0, 4096.0], n)
    t = F.predict(p, compute, memory, None, n_items)
    return pd.DataFrame({"group": "attention.gqa", "compute_s": compute, "memory_s": memory, "ranks": np.nan,
                         "items": n_items, "small": n_items <= 64, "time_s": t})


def test_fit_recovers_known_kernel_parameters():
    truth = {"floor_s": 6e-6, "eff_flops": 0.45, "eff_bandwidth": 0.8, "per_item_s": 2e-8}
    got = FF.fit_rows(_synthetic(truth))["attention.gqa"]
    for k, v in truth.items():
        assert got[k] == pytest.approx(v, rel=0.02), k


def test_fit_recovers_known_collective_parameters():
    truth = {"alpha_s": 3e-6, "alpha_per_doubling_s": 1e-6, "eff_link": 0.6}
    got = FF.fit_rows(_synthetic(truth, collective=True))["allreduce"]
    for k, v in truth.items():
        assert got[k] == pytest.approx(v, rel=0.02), k


def test_fit_is_robust_to_noise():
    truth = {"floor_s": 6e-6, "eff_flops": 0.45, "eff_bandwidth": 0.8, "per_item_s": 2e-8}
    rows = _synthetic(truth)
    rows["time_s"] *= np.exp(np.random.default_rng(2).normal(0, 0.05, len(rows)))
    got = FF.fit_rows(rows)["attention.gqa"]
    for k, v in truth.items():
        assert got[k] == pytest.approx(v, rel=0.1), k


def test_committed_yaml_loads():
    floors = F.load_floors()
    for group in ("gemm", "attention.gqa", "attention.mla", "moe", "allreduce"):
        assert group in floors.groups
    assert set(F.KERNEL_KEYS) <= set(floors.groups["gemm"])
    assert set(F.COLLECTIVE_KEYS) <= set(floors.groups["allreduce"])
    assert floors.meta["engine"] == "sglang" and floors.meta["held_out_abs_rel_error"]
    # lookups: per dtype where fitted, pooled otherwise; no floors for unfitted families
    assert floors.params("gemm", "bf16") is floors.groups["gemm.bf16"]
    assert floors.params("lm_head", "bf16") is floors.groups["gemm.bf16"]
    assert floors.params("attention", "bf16", "mla") is floors.groups["attention.mla"]
    assert floors.params("elementwise", "bf16") is None


def test_missing_parameter_is_named(tmp_path):
    path = tmp_path / "floors.yaml"
    path.write_text("groups:\n  gemm: {floor_s: 1.0e-6, eff_flops: 0.5}\n")
    with pytest.raises(Exception, match="eff_bandwidth"):
        F.load_floors(path)


def test_floors_on_gpu_hardware_not_on_cpu():
    for name in GPUS:
        assert catalog.load_hardware(name).latency_floors
        assert RooflineCosts(catalog.load_hardware(name)).floors is not None
    cpu = catalog.load_hardware("cpu")
    assert not cpu.latency_floors
    costs = RooflineCosts(cpu)
    assert costs.floors is None
    op = O.gemm("g", 1, 4096, 4096, "bf16")
    t = costs.time(op, graphs=False)
    plain = max(op.flops / (cpu.flops_per_s("bf16") * cpu.efficiency_flops),
                op.bytes / (cpu.memory_bandwidth_bytes_per_s * cpu.efficiency_bandwidth)) + cpu.launch_overhead_s
    assert t.total_s == pytest.approx(plain)


def _ops():
    dsv3 = catalog.load_model("deepseek-v3")
    ffn = next(f for f in dsv3.ffn_kinds.values() if f.kind == "moe")
    mla = next(a for a in dsv3.attention_kinds.values() if a.kind == "mla")
    gqa = specs.AttentionSpec(kind="gqa", num_heads=32, num_kv_heads=8, head_dim=128)
    return [O.gemm("g", 1, 7168, 2048, "fp8"), O.gemm("g", 64, 4096, 4096, "bf16"),
            O.attention_core(gqa, np.ones(4), np.full(4, 1000), "bf16", tp=1),
            O.attention_core(mla, np.ones(8), np.full(8, 4000), "bf16", tp=8),
            O.moe_experts(ffn, 7168, 16, "fp8", O.Parallel(tp=8, ep=8)),
            O.allreduce(8, 7168, 8), O.dispatch_combine(8, 8, 7168, 8)]


@pytest.mark.parametrize("name", GPUS)
def test_op_time_is_at_least_its_floor(name):
    costs = RooflineCosts(catalog.load_hardware(name))
    for op in _ops():
        p = costs.floor_params(op)
        assert p is not None, op.name
        for graphs in (True, False):
            t = costs.time(op, graphs).total_s
            floor = p.get("alpha_s", 0.0) + p.get("floor_s", 0.0)
            assert t >= floor > 0, op.name
            assert t >= costs.floor_s(op)


def test_floors_raise_small_batch_times_over_the_datasheet_roofline():
    hw = catalog.load_hardware("h200")
    with_floors, plain = RooflineCosts(hw), RooflineCosts(hw.model_copy(update={"latency_floors": False}))
    gqa = specs.AttentionSpec(kind="gqa", num_heads=32, num_kv_heads=8, head_dim=128)
    for op in (O.gemm("g", 1, 7168, 512, "bf16"), O.attention_core(gqa, np.ones(1), np.full(1, 500), "bf16", tp=1)):
        assert with_floors.time(op, True).total_s > plain.time(op, True).total_s
    # a small 8-GPU all-reduce: the fitted floor sits near the measured ~3 us on H200
    assert with_floors.time(O.allreduce(1, 7168, 8), True).total_s == pytest.approx(3.5e-6, rel=0.5)


def test_roofline_matches_the_fits_vectorised_model_on_profile_rows():
    """RooflineCosts prices an op built from a profile row as floors_predict prices the row."""
    hw = catalog.load_hardware("h200")
    costs = RooflineCosts(hw)
    rows = FF.profile_rows("h200-sglang", hw)
    pred = FF.floors_predict(costs.floors.groups, rows)
    raw = {f: pd.read_csv(FF.family_path(FF.PROFILES_DIR / "h200-sglang", f)) for f in FF.FIT_FAMILIES}
    raw["attention"] = raw["attention"][raw["attention"]["kind"].isin(["gqa", "mla"])].reset_index(drop=True)
    start = 0
    for family in FF.FIT_FAMILIES:
        df = raw[family]
        for i in (0, len(df) // 2, len(df) - 1):
            p = df.iloc[i].to_dict()
            if family in F.COLLECTIVES:
                size = p["bytes"] / (8 if family == "alltoall" else 1)
                op = (O.allreduce(1, 1, int(p["ranks"])) if family == "allreduce" else
                      O.dispatch_combine(int(p["tokens"]), int(p["top_k"]), int(p["d"]), int(p["ranks"])))
                op = O.Op(op.name, op.family, comm_bytes=p["bytes"], kernels=op.kernels, shape={**op.shape, "bytes": size})
            elif family == "moe":  # converted rows carry per-GPU shapes under moe tp/ep: the row's counts
                op = O.Op("moe.experts", "moe", flops=p["flops"], weight_bytes=p["bytes"], kernels=4,
                          dtype=p["dtype"], shape=p)
            else:
                op = op_of(family, p, "bf16")
            assert costs.time(op, graphs=True).total_s == pytest.approx(pred[start + i], rel=1e-6), (family, i)
        start += len(df)
