"""Latency floors for the roofline, fitted on measured GPU kernel tables.

A bare roofline prices a decode-sized kernel at the time its bytes take to stream, which at small
batch is far below what any GPU measures: launch and in-graph scheduling, the first bytes'
latency, a GEMM's tile prologue and epilogue, a fused MoE's routing, permutation and several
kernels all cost microseconds that do not shrink with the shape. The floor model adds them:

    kernel op:   t = floor_s + max(flops / (peak(dtype) * eff_flops), bytes / (bw * eff_bandwidth))
    collective:  t = alpha_s + alpha_per_doubling_s * log2(ranks / 2) + share * bytes / (link_bw * eff_link)

peak, bw and link_bw are the hardware catalog's datasheet figures; share is the ring's 2(r-1)/r of
the buffer for an all-reduce, (r-1)/r for an all-to-all (`comm_bytes`, as roofline.py counts it).
The parameters are per op *group*, hardware-independent (floors in seconds) or relative to the
spec (efficiencies as fractions of the datasheet peaks):

    gemm, gemm.<dtype>       GEMM and LM head (the dtype's own group where one was fitted)
    attention.gqa            GQA / MHA decode attention (sliding-window and query-only use it)
    attention.mla            MLA absorbed decode attention
    moe, moe.<dtype>         the routed experts' fused op (routing, grouped GEMMs, combine)
    allreduce, alltoall      tensor-parallel all-reduce; expert-parallel dispatch + combine

`floors_fit.fit(profiles)` fits them by weighted least squares on log time (a few Levenberg-Marquardt steps
per group, numpy only) on the rows of measured profiles (mtpsim/data/profiles/<gpu>-<engine>/, whose
flops and bytes are the simulator's own per-GPU counts for each shape); small-batch shapes (m,
tokens or batch <= 256; all-reduces up to 256 tokens x 8192 wide in bf16) weigh SMALL_WEIGHT
times the rest, as they decide decode speed. `mtpsim/data/latency_floors.yaml` holds the committed
fit (with its provenance); `load_floors()` reads it, and the roofline applies it to hardware whose
catalog entry sets `latency_floors: true`.

Torch-free.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from mtpsim.errors import ScenarioError
from mtpsim.packagedata import data_dir

FLOORS_PATH = data_dir() / "latency_floors.yaml"

KERNEL_KEYS = ("floor_s", "eff_flops", "eff_bandwidth")
ITEM_KEY = "per_item_s"  # attention: per (request x KV head); MoE: per routed token copy
COLLECTIVE_KEYS = ("alpha_s", "alpha_per_doubling_s", "eff_link")
COLLECTIVES = ("allreduce", "alltoall", "collective")  # collective: NCCL reduce-scatter / all-gather
# the widest collective the fitted profiles measured: one 8-GPU NVLink board (their allreduce rows
# span 2-8 ranks, their DeepEP all-to-all rows 8); wider ones, or any that crosses the domain onto
# the network, are priced beyond the fit and labelled `extrapolated`
FITTED_MAX_RANKS = 8


def collective_source(shape: dict) -> str:
    """How the fit prices a collective of this shape: `roofline` within the ranks it measured,
    `extrapolated` past them or across nodes."""
    beyond = shape["ranks"] > FITTED_MAX_RANKS or shape.get("nodes", 1) > 1
    return "extrapolated" if beyond else "roofline"


@dataclass(frozen=True)
class Floors:
    """Fitted parameters by group name (see the module docstring)."""

    groups: dict[str, dict[str, float]]
    meta: dict

    def params(self, family: str, dtype: str | None = None, kind: str | None = None) -> dict | None:
        """The group pricing an op of `family` (gemm, lm_head, attention, moe, allreduce,
        alltoall): `<family>.<dtype>` if fitted, else `<family>`; None for families without floors."""
        if family in ("lm_head", "bmm"):  # GEMM kernels, fitted with the GEMMs
            family = "gemm"
        if family == "attention":
            return self.groups.get(f"attention.{'mla' if kind == 'mla' else 'gqa'}")
        if family not in ("gemm", "moe", *COLLECTIVES):
            return None
        return self.groups.get(f"{family}.{dtype}") or self.groups.get(family)


def load_floors(path: Path | str = FLOORS_PATH) -> Floors:
    """The committed fit; a missing file or parameter is a ScenarioError naming it."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(str(path), "", "latency floors file not found (run benchmarks/latency_floors.py --write)")
    data = yaml.safe_load(path.read_text())
    groups = (data or {}).get("groups")
    if not isinstance(groups, dict) or not groups:
        raise ScenarioError(str(path), "groups", "missing or empty")
    for name, p in groups.items():
        need = COLLECTIVE_KEYS if name.split(".")[0] in COLLECTIVES else KERNEL_KEYS
        for key in need:
            v = p.get(key) if isinstance(p, dict) else None
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (key.startswith("eff") and v <= 0):
                raise ScenarioError(str(path), f"groups.{name}.{key}", "missing or not a valid number")
    return Floors({k: {kk: float(vv) for kk, vv in v.items()} for k, v in groups.items()},
                  {k: v for k, v in data.items() if k != "groups"})


_CACHE: dict[str, Floors] = {}


def committed_floors() -> Floors:
    """load_floors() of the committed file, read once per process."""
    key = str(FLOORS_PATH)
    if key not in _CACHE:
        _CACHE[key] = load_floors(FLOORS_PATH)
    return _CACHE[key]


# ----------------------------------------------------------------------------- the model

def share(family: str, ranks) -> np.ndarray:
    """Fraction of the buffer each GPU sends in a ring: 2(r-1)/r all-reduce, (r-1)/r all-to-all."""
    r = np.asarray(ranks, dtype=float)
    return 2 * (r - 1) / r if family == "allreduce" else (r - 1) / r


def items(family: str, shape, flops) -> np.ndarray | float:
    """Work items an op's fixed per-item cost applies to: attention (request, KV head) pairs on
    the GPU; MoE routed token copies its experts process, flops / (6 d inter) (= tokens x top_k
    / ep, ops.moe_experts); 0 for other families. `shape`: an op's shape dict or a profile's columns."""
    if family == "attention":
        return np.asarray(shape["batch"], float) * np.asarray(shape["kv_heads"], float)
    if family == "moe":
        return np.asarray(flops, float) / (6.0 * np.asarray(shape["d"], float) * np.asarray(shape["inter"], float))
    return 0.0


def predict(p: dict, compute_s, memory_s, ranks=None, n_items=0.0) -> np.ndarray:
    """Seconds from a group's parameters. Kernels: compute_s = flops / peak, memory_s = bytes / bw
    (datasheet, no efficiency). Collectives (ranks given): memory_s = share * bytes / link_bw."""
    c, m = np.asarray(compute_s, float), np.asarray(memory_s, float)
    if ranks is not None:
        doublings = np.log2(np.maximum(np.asarray(ranks, float), 2.0) / 2.0)
        return p["alpha_s"] + p["alpha_per_doubling_s"] * doublings + m / p["eff_link"]
    roofline = np.maximum(c / p["eff_flops"], m / p["eff_bandwidth"])
    return p["floor_s"] + p.get(ITEM_KEY, 0.0) * np.asarray(n_items, float) + roofline
