"""Latency floors for the roofline, fitted on measured GPU kernel tables (DESIGN §4).

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

`fit(profiles)` fits them by weighted least squares on log time (a few Levenberg-Marquardt steps
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
import pandas as pd
import yaml

from mtpsim.catalog import HardwareSpec, load_hardware
from mtpsim.costs.profile import PROFILES_DIR, family_path
from mtpsim.errors import ScenarioError
from mtpsim.packagedata import data_dir

FLOORS_PATH = data_dir() / "latency_floors.yaml"

KERNEL_KEYS = ("floor_s", "eff_flops", "eff_bandwidth")
ITEM_KEY = "per_item_s"  # attention: per (request x KV head); MoE: per routed token copy
COLLECTIVE_KEYS = ("alpha_s", "alpha_per_doubling_s", "eff_link")
COLLECTIVES = ("allreduce", "alltoall")

SMALL = 256                  # tokens (m, batch) up to which a shape is decode-sized
SMALL_BYTES = 256 * 8192 * 2  # an all-reduce of 256 tokens x 8192 wide in bf16
SMALL_WEIGHT = 4.0           # weight of a decode-sized row against a large one
MAX_ROWS = 12000             # rows per group and GPU the fit keeps (a seeded subsample)
ACT = "bf16"                 # the converted profiles' activation dtype (attention computes in it)

# the families the fit reads, and the table each comes from
FIT_FAMILIES = ("gemm", "attention", "moe", "allreduce", "alltoall")


@dataclass(frozen=True)
class Floors:
    """Fitted parameters by group name (see the module docstring)."""

    groups: dict[str, dict[str, float]]
    meta: dict

    def params(self, family: str, dtype: str | None = None, kind: str | None = None) -> dict | None:
        """The group pricing an op of `family` (gemm, lm_head, attention, moe, allreduce,
        alltoall): `<family>.<dtype>` if fitted, else `<family>`; None for families without floors."""
        if family == "lm_head":
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
    return p["floor_s"] + p.get(ITEM_KEY, 0.0) * np.asarray(n_items, float) + np.maximum(c / p["eff_flops"], m / p["eff_bandwidth"])


# ----------------------------------------------------------------------------- rows

def profile_rows(profile: str | Path, hw: HardwareSpec | None = None, families=FIT_FAMILIES) -> pd.DataFrame:
    """One measured profile's rows as the fit sees them: group, datasheet compute and memory (or
    link) seconds, ranks (collectives), size (tokens; bytes for all-reduce), small, time_s.
    `hw`: the profile's GPU (its meta.yaml `device` in the hardware catalog by default)."""
    folder = Path(profile)
    if not folder.is_dir():
        folder = PROFILES_DIR / str(profile)
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    hw = hw or load_hardware(str(meta["device"]))
    frames = []
    for family in families:
        path = family_path(folder, family)
        if not path.is_file():
            continue
        df = pd.read_csv(path)
        frames.append(_rows(family, df, hw).assign(gpu=str(meta["device"])))
    return pd.concat(frames, ignore_index=True)


def _rows(family: str, df: pd.DataFrame, hw: HardwareSpec) -> pd.DataFrame:
    out = pd.DataFrame({"time_s": df["time_s"].to_numpy(float)})
    if family in COLLECTIVES:
        out["group"] = family
        out["ranks"] = df["ranks"].to_numpy(float)
        out["compute_s"] = 0.0
        out["memory_s"] = share(family, df["ranks"]) * df["bytes"].to_numpy(float) / hw.link_bandwidth_bytes_per_s
        out["size"] = df["bytes"] if family == "allreduce" else df["tokens"]
        out["small"] = out["size"] <= (SMALL_BYTES if family == "allreduce" else SMALL)
        out["items"] = 0.0
        return out
    if family == "attention":
        keep = df["kind"].isin(["gqa", "mla"]).to_numpy()
        df, out = df[keep], out[keep].reset_index(drop=True)
        out["group"] = ("attention." + df["kind"]).to_numpy()
        dtypes = np.full(len(df), ACT)
        size = df["batch"]
    else:
        out["group"] = (family + "." + df["dtype"]).to_numpy()
        dtypes = df["dtype"].to_numpy()
        size = df["m"] if family == "gemm" else df["tokens"]
    peaks = {d: hw.flops_per_s(d) for d in set(dtypes)}
    out["ranks"] = np.nan
    out["compute_s"] = df["flops"].to_numpy(float) / np.array([peaks[d] for d in dtypes])
    out["memory_s"] = df["bytes"].to_numpy(float) / hw.memory_bandwidth_bytes_per_s
    out["size"] = size.to_numpy(float)
    out["small"] = out["size"] <= SMALL
    out["items"] = items(family, df, df["flops"])
    return out


def subsample(rows: pd.DataFrame, max_rows: int = MAX_ROWS, seed: int = 0) -> pd.DataFrame:
    """At most max_rows rows per (gpu, group), a seeded random subset (all decode-sized rows first)."""
    parts = []
    for _, g in rows.groupby(["gpu", "group"], sort=True):
        if len(g) > max_rows:
            small, large = g[g["small"]], g[~g["small"]]
            n_small = min(len(small), max_rows // 2 if len(large) else max_rows)
            g = pd.concat([small.sample(n_small, random_state=seed) if len(small) > n_small else small,
                           large.sample(min(len(large), max_rows - n_small), random_state=seed)])
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


# ----------------------------------------------------------------------------- the fit

def fit(profiles: list[str], engine: str = "sglang", by_dtype: bool = True, max_rows: int = MAX_ROWS) -> dict:
    """Fit every group on the named GPUs' `<gpu>-<engine>` profiles (or profile folder paths).
    Returns {group: parameters}. by_dtype: fit gemm and moe per weight dtype as well as pooled."""
    rows = pd.concat([profile_rows(p if "/" in str(p) or str(p).endswith(f"-{engine}") else f"{p}-{engine}")
                      for p in profiles], ignore_index=True)
    return fit_rows(subsample(rows, max_rows), by_dtype)


def fit_rows(rows: pd.DataFrame, by_dtype: bool = True) -> dict:
    """{group: parameters} fitted on prepared rows (profile_rows' columns: group, compute_s,
    memory_s, ranks, small, time_s)."""
    groups: dict[str, pd.DataFrame] = {}
    for name, g in rows.groupby("group", sort=True):
        family = name.split(".")[0]
        if family in ("gemm", "moe"):
            groups.setdefault(family, []).append(g)
            if by_dtype:
                groups[name] = [g]
        else:
            groups.setdefault(name, []).append(g)
    return {name: fit_group(pd.concat(parts), collective=name in COLLECTIVES) for name, parts in sorted(groups.items())}


def fit_group(g: pd.DataFrame, collective: bool = False) -> dict:
    """Weighted least squares on log time over the log of the three parameters (all positive),
    Levenberg-Marquardt from a few starts; the best start wins."""
    t = g["time_s"].to_numpy(float)
    c, m = g["compute_s"].to_numpy(float), g["memory_s"].to_numpy(float)
    ranks = g["ranks"].to_numpy(float) if collective else None
    n_items = g["items"].to_numpy(float) if "items" in g else np.zeros(len(g))
    w = np.sqrt(np.where(g["small"].to_numpy(bool), SMALL_WEIGHT, 1.0))
    with_items = not collective and bool(np.any(n_items > 0))
    keys = COLLECTIVE_KEYS if collective else KERNEL_KEYS + ((ITEM_KEY,) if with_items else ())
    log_t = np.log(t)

    def residual(theta):
        p = dict(zip(keys, np.exp(theta)))
        return w * (np.log(predict(p, c, m, ranks, n_items)) - log_t)

    floor0 = float(np.quantile(t, 0.02))
    starts = [np.log([floor0 * f, a, b]) for f in (0.3, 1.0) for a, b in ((0.5, 0.5), (0.9, 0.9), (0.2, 0.8))]
    if with_items:
        per = float(np.median(t / np.maximum(n_items, 1.0)))
        starts = [np.append(s, np.log(per * f)) for s in starts for f in (1e-3, 1e-1)]
    if collective:
        starts = [np.log([floor0 * f, floor0 * 0.1, e]) for f in (0.5, 1.0) for e in (0.3, 0.8)]
    best = min((_levenberg_marquardt(residual, s) for s in starts), key=lambda r: r[1])
    return {k: float(v) for k, v in zip(keys, np.exp(best[0]))}


def _levenberg_marquardt(residual, theta, iters: int = 60) -> tuple[np.ndarray, float]:
    theta = np.asarray(theta, float)
    r = residual(theta)
    cost, lam = float(r @ r), 1e-3
    for _ in range(iters):
        jac = np.empty((len(r), len(theta)))
        for j in range(len(theta)):
            step = np.zeros_like(theta)
            step[j] = 1e-6
            jac[:, j] = (residual(theta + step) - r) / 1e-6
        jtj, jtr = jac.T @ jac, jac.T @ r
        improved = False
        while lam < 1e10:
            delta = np.linalg.solve(jtj + lam * np.diag(np.diag(jtj) + 1e-12), -jtr)
            trial = np.clip(theta + delta, -40.0, 5.0)
            r_new = residual(trial)
            cost_new = float(r_new @ r_new)
            if cost_new < cost:
                improved = cost - cost_new > 1e-12 * max(cost, 1e-30)
                theta, r, cost, lam = trial, r_new, cost_new, max(lam / 3, 1e-9)
                break
            lam *= 4
        if not improved:
            break
    return theta, cost


# ----------------------------------------------------------------------------- evaluation

def floors_predict(groups: dict, rows: pd.DataFrame) -> np.ndarray:
    """Floor-model seconds for prepared rows, each priced by its group's parameters as the roofline
    looks them up (per dtype where fitted, else the pooled family)."""
    floors = Floors(groups, {})
    out = np.full(len(rows), np.nan)
    for name, g in rows.groupby("group", sort=False):
        family, _, sub = name.partition(".")
        p = floors.params(family, dtype=sub, kind=sub)
        if p is None:
            continue
        out[g.index.to_numpy()] = predict(p, g["compute_s"], g["memory_s"], g["ranks"] if family in COLLECTIVES else None,
                                          g["items"] if "items" in g else 0.0)
    return out


# kernels each family's op launches in ops.py (what the plain roofline charges launch cost for)
KERNELS = {"gemm": 1, "attention": 1, "moe": 4, "allreduce": 1, "alltoall": 2}


def datasheet_predict(hw: HardwareSpec, rows: pd.DataFrame) -> np.ndarray:
    """The plain roofline without floors, as RooflineCosts prices these ops inside a CUDA graph:
    max(compute / eff_f, memory / eff_b) + kernels x graph launch; collectives link_latency +
    share * bytes / link_bw + kernels x graph launch."""
    family = rows["group"].str.split(".").str[0]
    kernels = family.map(KERNELS).to_numpy(float) * hw.graph_launch_overhead_s
    roof = np.maximum(rows["compute_s"] / hw.efficiency_flops, rows["memory_s"] / hw.efficiency_bandwidth)
    coll = hw.link_latency_s + rows["memory_s"]
    return np.where(family.isin(COLLECTIVES), coll, roof) + kernels


def errors(rows: pd.DataFrame, predicted: np.ndarray) -> pd.DataFrame:
    """Median and p90 |predicted / measured - 1| per group, on all rows and on decode-sized ones."""
    e = (np.asarray(predicted) / rows["time_s"].to_numpy() - 1)
    df = rows.assign(err=np.abs(e))
    out = []
    for name, g in df.groupby("group", sort=True):
        s = g[g["small"]]
        out.append({"group": name, "rows": len(g), "median": g.err.median(), "p90": g.err.quantile(0.9),
                    "small_median": s.err.median(), "small_p90": s.err.quantile(0.9)})
    return pd.DataFrame(out)
