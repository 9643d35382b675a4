"""Fitting the roofline's latency floors (costs/floors.py) on measured profiles, and the errors
the benchmark reports (benchmarks/latency_floors.py). Only the fit and the benchmark import this;
the roofline reads the committed parameters through floors.py. Torch-free.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mtpsim.catalog import load_hardware
from mtpsim.costs.floors import COLLECTIVE_KEYS, COLLECTIVES, ITEM_KEY, KERNEL_KEYS, Floors, items, predict, share
from mtpsim.costs.profile import PROFILES_DIR, family_path
from mtpsim.hardware_spec import HardwareSpec

SMALL = 256                  # tokens (m, batch) up to which a shape is decode-sized
SMALL_BYTES = 256 * 8192 * 2  # an all-reduce of 256 tokens x 8192 wide in bf16
SMALL_WEIGHT = 4.0           # weight of a decode-sized row against a large one
MAX_ROWS = 12000             # rows per group and GPU the fit keeps (a seeded subsample)
ACT = "bf16"                 # the converted profiles' activation dtype (attention computes in it)

# the families the fit reads, and the table each comes from
FIT_FAMILIES = ("gemm", "attention", "moe", "allreduce", "alltoall")


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
                                          g.get("items", 0.0))
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
