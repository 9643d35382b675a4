"""Calibration profiles on disk: the op families a profile measures, reading and validating
its CSVs and meta.yaml, and interpolation over a family's measured grid (log axes).

A missing file, column or meta key is a ScenarioError naming it, never a zero.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mtpsim.errors import ScenarioError


@dataclass(frozen=True)
class Family:
    keys: tuple[str, ...]       # must match exactly (kind)
    dims: tuple[str, ...]       # fixed per config; another value is scaled by roofline work
    axes: tuple[str, ...]       # interpolated over, in log space
    monotone: tuple[str, ...]   # time may not fall as these grow


FAMILIES = {
    "gemm": Family((), ("dtype",), ("m", "k", "n"), ("m",)),
    "lm_head": Family(("kind",), ("dtype",), ("m", "k", "n"), ("m",)),
    "attention": Family(("kind",), ("kv_heads", "head_dim", "v_head_dim"), ("batch", "q", "kv", "heads"), ("batch", "q", "kv")),
    "moe": Family((), ("dtype", "inter", "num_experts"), ("tokens", "touched", "top_k", "d"), ("tokens", "touched")),
    "elementwise": Family((), ("d",), ("tokens",), ("tokens",)),
    "pass": Family((), (), ("batch", "q", "kv"), ("batch", "q", "kv")),
    "argmax": Family((), (), ("m", "n"), ("m", "n")),
}


META_KEYS = ("device", "device_name", "torch", "dtype", "date", "threads", "ceilings", "overhead")


CEILINGS = ("copy_bytes_per_s", "matmul_flops_per_s")


@dataclass
class Table:
    """One config's grid: axis values, log time and log roofline work (NaN = not measured)."""

    axes: dict[str, np.ndarray]
    dims: dict
    log_t: np.ndarray
    log_w: np.ndarray
    floor_s: float


def interpolate(table: Table, x: dict) -> tuple[float, float] | None:
    """(log time, log work) multilinear in log axes; None outside the grid or at a gap."""
    corners = []
    for name, values in table.axes.items():
        v = x[name]
        if v < values[0] * (1 - 1e-9) or v > values[-1] * (1 + 1e-9):
            return None
        i = min(bisect_left(values, v), len(values) - 1)
        if abs(values[i] - v) <= 1e-9 * v or i == 0:
            corners.append(((i, 1.0),))
            continue
        f = (math.log(v) - math.log(values[i - 1])) / (math.log(values[i]) - math.log(values[i - 1]))
        corners.append(((i - 1, 1.0 - f), (i, f)))
    log_t = log_w = 0.0
    for combo in product(*corners):
        idx = tuple(i for i, _ in combo)
        weight = math.prod(w for _, w in combo)
        if weight == 0.0:
            continue
        if math.isnan(table.log_t[idx]):
            return None
        log_t += weight * table.log_t[idx]
        log_w += weight * table.log_w[idx]
    return log_t, log_w


def nearest_cell(table: Table, x: dict) -> tuple[float, float]:
    """The measured cell closest in log axes (each axis in units of its grid span)."""
    grids = np.meshgrid(*[np.log(v) for v in table.axes.values()], indexing="ij")
    dist = np.zeros_like(table.log_t)
    for g, (name, values) in zip(grids, table.axes.items()):
        v = x[name]
        span = max(math.log(values[-1] / values[0]), 1.0)
        dist += ((g - math.log(max(v, 1e-12))) / span) ** 2
    dist[np.isnan(table.log_t)] = np.inf
    idx = np.unravel_index(np.argmin(dist), dist.shape)
    return float(table.log_t[idx]), float(table.log_w[idx])


def load_meta(path: Path) -> dict:
    if not path.is_file():
        raise ScenarioError(str(path), "", "missing profile file")
    meta = yaml.safe_load(path.read_text())
    if not isinstance(meta, dict):
        raise ScenarioError(str(path), "", "meta.yaml must be a mapping")
    for key in META_KEYS:
        if key not in meta:
            raise ScenarioError(str(path), key, "missing key")
    for key in CEILINGS:
        if not _positive(meta["ceilings"].get(key) if isinstance(meta["ceilings"], dict) else None):
            raise ScenarioError(str(path), f"ceilings.{key}", "missing or not a positive number")
    need = ("call_s",) if meta["overhead"].get("included_in_op_times") else ("launch_s", "graph_kernel_s", "graph_replay_s")
    for key in ("included_in_op_times", *need):
        if key not in meta["overhead"]:
            raise ScenarioError(str(path), f"overhead.{key}", "missing key")
    return meta


def read_family(path: Path, family: str) -> pd.DataFrame:
    """A family CSV with every column the schema names; times positive and finite."""
    if not path.is_file():
        raise ScenarioError(str(path), "", f"missing profile file for op family {family!r}")
    df = pd.read_csv(path)
    f = FAMILIES[family]
    for col in (*f.keys, *f.dims, *f.axes, "flops", "bytes", "time_s"):
        if col not in df.columns:
            raise ScenarioError(str(path), col, "missing column")
    for col in (*f.axes, "flops", "bytes", "time_s"):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() | (values < 0) | ((values <= 0) if col not in ("flops",) else False)
        if bad.any():
            raise ScenarioError(str(path), col, f"row {int(bad.idxmax()) + 2}: not a positive number")
    if df.empty:
        raise ScenarioError(str(path), "", "no rows")
    return df


def build_tables(family: str, df: pd.DataFrame, ceilings: dict) -> dict:
    """keys tuple -> [Table per config]."""
    f = FAMILIES[family]
    work = np.maximum(df["flops"] / ceilings["matmul_flops_per_s"], df["bytes"] / ceilings["copy_bytes_per_s"])
    df = df.assign(_log_t=np.log(df["time_s"]), _log_w=np.log(np.maximum(work, 1e-15)))
    out: dict = {}
    for key_vals, group in df.groupby(list(f.keys + f.dims), sort=True) if f.keys + f.dims else [((), df)]:
        key_vals = key_vals if isinstance(key_vals, tuple) else (key_vals,)
        keys, dims = tuple(key_vals[:len(f.keys)]), dict(zip(f.dims, key_vals[len(f.keys):]))
        axes = {a: np.array(sorted(group[a].unique()), dtype=float) for a in f.axes}
        log_t, log_w = (np.full([len(v) for v in axes.values()], np.nan) for _ in range(2))
        idx = tuple(np.searchsorted(axes[a], group[a].to_numpy(float)) for a in f.axes)
        log_t[idx], log_w[idx] = group["_log_t"].to_numpy(), group["_log_w"].to_numpy()
        if family == "moe":  # routings that cannot happen take the nearest feasible touched count
            log_t, log_w = (_fill_along(a, list(f.axes).index("touched")) for a in (log_t, log_w))
        for a in f.monotone:
            log_t = _running_max(log_t, list(f.axes).index(a))
        out.setdefault(keys, []).append(Table(axes, dims if f.dims else None, log_t, log_w, float(group["time_s"].min())))
    return out


def _running_max(a: np.ndarray, axis: int) -> np.ndarray:
    out = np.fmax.accumulate(a, axis=axis)
    out[np.isnan(a)] = np.nan
    return out


def _fill_along(a: np.ndarray, axis: int) -> np.ndarray:
    def fill(line):
        ok = np.flatnonzero(~np.isnan(line))
        if not len(ok):
            return line
        return line[ok[np.abs(np.arange(len(line))[:, None] - ok[None, :]).argmin(1)]]
    return np.apply_along_axis(fill, axis, a)


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and x > 0 and math.isfinite(x)
