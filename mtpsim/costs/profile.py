"""Calibration profiles on disk: the op families a profile measures, reading and validating
its CSVs (plain or gzipped) and meta.yaml, and interpolation over a family's measured grid (log axes).

A profile holds the families its meta.yaml lists under `families` (a profile without that list
holds every family `mtpsim calibrate` measures). A listed family whose file or column is missing
is a ScenarioError naming it, never a zero; a family a profile does not hold is priced by the
roofline and labelled so.
"""
from __future__ import annotations

import datetime
import math
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mtpsim.errors import ScenarioError, from_validation
from mtpsim.files import COUNT, NON_NEGATIVE, POSITIVE, TEXT, Column, load_yaml, read_csv, read_once
from mtpsim.packagedata import data_dir, user_catalog_dirs


@dataclass(frozen=True)
class Family:
    keys: tuple[str, ...]       # must match exactly (kind)
    dims: tuple[str, ...]       # fixed per config; another value is scaled by roofline work
    axes: tuple[str, ...]       # interpolated over, in log space
    monotone: tuple[str, ...]   # time may not fall as these grow
    optional: tuple[str, ...] = ()  # dims older profiles lack: read as ANY, matching every value


ANY = "*"

FAMILIES = {
    "gemm": Family((), ("dtype",), ("m", "k", "n"), ("m",)),
    "lm_head": Family(("kind",), ("dtype",), ("m", "k", "n"), ("m",)),
    "attention": Family(("kind",), ("kv_heads", "head_dim", "v_head_dim", "kv_dtype"), ("batch", "q", "kv", "heads"),
                        ("batch", "q", "kv"), optional=("kv_dtype",)),
    "moe": Family((), ("dtype", "inter", "num_experts"), ("tokens", "touched", "top_k", "d"), ("tokens", "touched")),
    "elementwise": Family((), ("d",), ("tokens",), ("tokens",)),
    "pass": Family((), (), ("batch", "q", "kv"), ("batch", "q", "kv")),
    "argmax": Family((), (), ("m", "n"), ("m", "n")),
    # communication: all-reduce by message bytes; all-to-all dispatch + combine by tokens per rank
    "allreduce": Family(("ranks",), (), ("bytes",), ("bytes",)),
    "alltoall": Family(("ranks",), ("d", "top_k"), ("tokens",), ("tokens",)),
}

# what `mtpsim calibrate` measures, so what a profile without a `families` list must hold
MEASURED_BY_CALIBRATE = ("gemm", "lm_head", "attention", "moe", "elementwise", "pass", "argmax")



PROFILES_DIR = data_dir() / "profiles"   # the committed profiles (package data)
LEGACY_PREFIX = "calibrate/profiles/"    # where the committed profiles lived in the source tree


def committed_profiles() -> list[str]:
    return sorted(p.name for p in PROFILES_DIR.iterdir() if (p / "meta.yaml").is_file()) if PROFILES_DIR.is_dir() else []


def find_profile(ref: str) -> Path | None:
    """A profile folder from `cost.profile`: a path from the current folder, or a profile's name
    (`h200-sglang`), looked up in MTPSIM_CATALOG's folders' profiles/ and then the committed
    ones; the old source-tree spelling `calibrate/profiles/NAME` still names it when no such
    folder exists here. A name never reaches outside those folders."""
    candidates = [Path(ref)]
    name = ref.removeprefix(LEGACY_PREFIX).rstrip("/")
    if name and "/" not in name and "\\" not in name and ".." not in name and name != ".":
        candidates += [folder / "profiles" / name for folder in user_catalog_dirs()] + [PROFILES_DIR / name]
    for path in candidates:
        if (path / "meta.yaml").is_file():
            return path
    return None


def profile_device(path: Path) -> str:
    """The hardware catalog entry a profile was measured on: meta.yaml's `hardware` (what
    `mtpsim calibrate` writes on a GPU), else its `device` (cpu, or a converted profile's entry)."""
    meta = load_meta(path / "meta.yaml")
    return str(meta.get("hardware") or meta["device"])


@dataclass
class Table:
    """One config's grid: axis values, log time and log roofline work (NaN = not measured)."""

    axes: dict[str, np.ndarray]
    dims: dict
    log_t: np.ndarray
    log_w: np.ndarray
    floor_s: float
    measured: np.ndarray | None = None  # cells timed, not filled (None: every non-NaN cell)
    # along-kv slices by the other axes' values (interpolate's fast path), filled as they are asked for
    kv_slices: dict = field(default_factory=dict, repr=False, compare=False)


class Hit(NamedTuple):
    """An interpolated cell: log time, log roofline work, and whether every corner was timed
    (False when a corner was filled from a neighbour, so the time belongs to the neighbour's work)."""

    log_t: float
    log_w: float
    measured: bool = True


def interpolate(table: Table, x: dict) -> Hit | None:
    """(log time, log work) multilinear in log axes; None outside the grid or at a gap.

    Multilinear interpolation is separable, so a table with a `kv` axis (attention, the pass
    frame: every pass looks one up at a new KV length but the same batch, q and heads) is
    interpolated over its other axes once per their values into a slice along kv, and each call
    is one interval of that slice: the same value, summed in another order."""
    if "kv" not in table.axes:
        return _interpolate(table, x)
    key = tuple(x[name] for name in table.axes if name != "kv")
    piece = table.kv_slices.get(key)
    if piece is None:
        piece = table.kv_slices[key] = _kv_slice(table, x)
    kv = _corners(table.axes["kv"], x["kv"])
    if piece is False or kv is None:
        return None
    slice_t, slice_w, slice_measured = piece
    log_t = log_w = 0.0
    measured = True
    for i, weight in kv:
        t = slice_t[i]
        if t != t:  # NaN: a gap in the measured grid
            return None
        log_t += weight * t
        log_w += weight * slice_w[i]
        measured = measured and bool(slice_measured[i])
    return Hit(log_t, log_w, measured)


def _corners(values: np.ndarray, v: float) -> tuple | None:
    """The grid points around v on one log axis, as (index, weight); None outside the grid."""
    if v < values[0] * (1 - 1e-9) or v > values[-1] * (1 + 1e-9):
        return None
    i = min(bisect_left(values, v), len(values) - 1)
    if abs(values[i] - v) <= 1e-9 * v or i == 0:
        return ((i, 1.0),)
    f = (math.log(v) - math.log(values[i - 1])) / (math.log(values[i]) - math.log(values[i - 1]))
    return ((i - 1, 1.0 - f), (i, f))


def _interpolate(table: Table, x: dict) -> Hit | None:
    corners = []
    for name, values in table.axes.items():
        axis = _corners(values, x[name])
        if axis is None:
            return None
        corners.append(axis)
    # every corner of the cell: (index, weight) with the weights multiplied in axis order
    cell = [((), 1.0)]
    for axis in corners:
        cell = [(idx + (i,), weight * w) for idx, weight in cell for i, w in axis]
    log_t = log_w = 0.0
    measured = True
    for idx, weight in cell:
        if weight == 0.0:
            continue
        t = table.log_t[idx]
        if t != t:  # NaN: a gap in the measured grid
            return None
        log_t += weight * t
        log_w += weight * table.log_w[idx]
        measured = measured and (table.measured is None or bool(table.measured[idx]))
    return Hit(log_t, log_w, measured)


def _kv_slice(table: Table, x: dict):
    """The table interpolated over every axis but kv at x: (log time, log work, measured) along
    the kv grid (NaN where a corner with weight is a gap), or False when x is outside the grid."""
    k = list(table.axes).index("kv")
    cell = [((), 1.0)]
    for n, (name, values) in enumerate(table.axes.items()):
        axis = ((slice(None), 1.0),) if n == k else _corners(values, x[name])
        if axis is None:
            return False
        cell = [(idx + (i,), weight * w) for idx, weight in cell for i, w in axis]
    size = len(table.axes["kv"])
    log_t, log_w, measured = np.zeros(size), np.zeros(size), np.ones(size, bool)
    for idx, weight in cell:
        if weight == 0.0:
            continue
        log_t += weight * table.log_t[idx]
        log_w += weight * table.log_w[idx]
        if table.measured is not None:
            measured &= table.measured[idx]
    return log_t.tolist(), log_w.tolist(), measured.tolist()


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


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False, frozen=True)


class _Ceilings(_Strict):
    copy_bytes_per_s: float = Field(gt=0)
    matmul_flops_per_s: float = Field(gt=0)


class _Overhead(_Strict):
    """CPU profiles: dispatch is inside op times (`call_s` per call); GPU profiles: launch,
    in-graph kernel and graph replay seconds added by the cost model."""

    included_in_op_times: bool
    call_s: float | None = Field(default=None, ge=0)
    launch_s: float | None = Field(default=None, ge=0)
    graph_kernel_s: float | None = Field(default=None, ge=0)
    graph_replay_s: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _what_the_model_reads(self) -> _Overhead:
        need = ("call_s",) if self.included_in_op_times else ("launch_s", "graph_kernel_s", "graph_replay_s")
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"{missing[0]}: required key is missing")
        return self


class ProfileMeta(_Strict):
    """The meta.yaml keys the cost model reads, typed; other keys (provenance, timing notes,
    attribution) are kept as they are."""

    model_config = ConfigDict(extra="allow")
    device: str
    device_name: str
    date: str | datetime.datetime | datetime.date
    hardware: str | None = None
    dtype: str | None = None
    ceilings: _Ceilings
    overhead: _Overhead
    families: dict[str, int | str | dict[str, Any]] | None = None
    attention_kv: str | None = None
    host_s: dict[str, dict[int, float]] | None = None


@read_once
def load_meta(path: Path) -> dict:
    """meta.yaml, checked against ProfileMeta: a missing key or a wrong type names its key path.
    Read once per file version (every sweep point checks its profile's device) and shared: not
    to be changed in place."""
    if not path.is_file():
        raise ScenarioError(str(path), "", "missing profile file")
    meta = load_yaml(path)
    if not isinstance(meta, dict):
        raise ScenarioError(str(path), "", "meta.yaml must be a mapping")
    try:
        ProfileMeta.model_validate(meta)
    except ValidationError as exc:
        raise from_validation(exc, str(path)) from None
    if any(v <= 0 for table in (meta.get("host_s") or {}).values() for v in table.values()):
        raise ScenarioError(str(path), "host_s", "host times must be positive")
    return meta


def profile_families(meta: dict, where: str = "meta.yaml") -> tuple[str, ...]:
    """The op families a profile holds: meta.yaml's `families` keys, else what calibrate measures."""
    listed = meta.get("families")
    if listed is None:
        return MEASURED_BY_CALIBRATE
    if not isinstance(listed, dict) or not listed:
        raise ScenarioError(where, "families", "must map op family names to their row counts or sources")
    unknown = [f for f in listed if f not in FAMILIES]
    if unknown:
        raise ScenarioError(where, f"families.{unknown[0]}", f"unknown op family (known: {', '.join(FAMILIES)})")
    return tuple(listed)


def family_path(folder: Path, family: str) -> Path:
    """`<family>.csv`, or its gzipped `<family>.csv.gz` (how the large GPU profiles are committed)."""
    plain = folder / f"{family}.csv"
    packed = folder / f"{family}.csv.gz"
    return packed if packed.is_file() and not plain.is_file() else plain


def read_family(path: Path, family: str) -> pd.DataFrame:
    """A family CSV with every column the schema names: axes and times positive and finite,
    flops non-negative, key and dim columns present (optional dims read as ANY)."""
    if not path.is_file():
        raise ScenarioError(str(path), "", f"missing profile file for op family {family!r}")
    f = FAMILIES[family]
    columns = dict.fromkeys((*f.keys, *f.dims), TEXT) | dict.fromkeys(f.axes, POSITIVE) | \
        {"flops": NON_NEGATIVE, "bytes": NON_NEGATIVE, "time_s": POSITIVE}
    df = read_csv(path, columns, optional=f.optional)
    for col in f.optional:
        if col not in df.columns:
            df[col] = ANY
    for col in (*f.keys, *f.dims):
        if df[col].isna().any():
            raise ScenarioError(str(path), col, f"row {int(df[col].isna().to_numpy().argmax()) + 2}: empty")
    return df


LAYER_COLUMNS = {"layer": TEXT, "scale": POSITIVE, "batch": Column(low=1, integer=True),
                 "q": Column(low=1, integer=True), "kv": COUNT, "d": Column(low=1, integer=True), "time_s": POSITIVE}


def read_layers(folder: Path) -> pd.DataFrame | None:
    """layers.csv (whole decoder layers timed by `mtpsim calibrate`), or None when the profile has none."""
    path = folder / "layers.csv"
    if not path.is_file():
        return None
    df = read_csv(path, LAYER_COLUMNS)
    short_kv = df.kv < df.q
    if short_kv.any():
        raise ScenarioError(str(path), "kv", f"row {int(short_kv.to_numpy().argmax()) + 2}: kv counts the pass's own "
                            "q tokens, so it cannot be below q")
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
        measured = None
        if family == "moe":
            # a touched count the table did not time (a routing that cannot happen at that token
            # count, or, in a table of balanced routings only, fewer experts than tokens x top_k)
            # takes the nearest timed one's time and work; Hit.measured tells the cost model to
            # move it to the op's own work (calibrated.py)
            measured = ~np.isnan(log_t)
            log_t, log_w = (_fill_along(a, list(f.axes).index("touched")) for a in (log_t, log_w))
        for a in f.monotone:
            log_t = _running_max(log_t, list(f.axes).index(a))
        out.setdefault(keys, []).append(Table(axes, dims if f.dims else None, log_t, log_w, float(group["time_s"].min()),
                                              measured))
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
