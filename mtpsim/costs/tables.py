"""A measured family's rows as grids, and reading them: `build_tables` turns a family's CSV
rows into one Table per config (log time and log roofline work over log axes, outliers replaced
and monotone where the family says so, impossible MoE routings filled from the nearest timed one;
each built when a lookup first picks its config), and `interpolate` reads a Table at a point,
multilinear in log axes. profile.py reads the files; calibrated.py prices ops with these.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from mtpsim.costs.profile import FAMILIES
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path

# A measured time more than this many times both its neighbours' along a monotone axis is an outlier
# (`_despike`): along these axes the shape only grows, so a kernel's time may rise steeply (a
# prompt's attention 4x per doubling of q) but cannot fall by half at the next shape. The committed
# tables hold such cells, from 2x to 160x their neighbours (h200-trtllm's MLA decode row at batch
# 32, 4 tokens of KV: 2.2 ms between two of 14 us), and the running maximum carried each to every
# larger shape: DeepSeek's decode attention on H200 under TensorRT-LLM cost 135 ms a step at batch 32.
SPIKE = 2.0


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
    # each axis as Python floats and their logs (what _corners reads: no numpy scalar per lookup)
    grid: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.grid = {name: (v.tolist(), [math.log(a) for a in v.tolist()]) for name, v in self.axes.items()}


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
    interpolated over its other axes once per their values into a slice along kv (`kv_slice`),
    and each call is one interval of that slice (`along_kv`): the same value, summed in another
    order."""
    if "kv" not in table.axes:
        return _interpolate(table, x)
    return along_kv(table, kv_slice(table, x), x["kv"])


def kv_slice(table: Table, x: dict):
    """The table interpolated over every axis but kv at x's values (x's kv is not read): the
    slice `along_kv` reads, or False outside the grid; kept in the table per those values."""
    key = tuple([x[name] for name in table.axes if name != "kv"])
    piece = table.kv_slices.get(key)
    if piece is None:
        piece = table.kv_slices[key] = _kv_slice(table, x)
    return piece


def along_kv(table: Table, piece, kv: float) -> Hit | None:
    """A `kv_slice` read at `kv`; None outside the grid or at a gap."""
    found = read_slice(table.grid["kv"], piece, kv)
    return None if found is None else Hit(*found)


def read_slice(kv_axis: tuple[list, list], piece, kv: float) -> tuple[float, float, bool] | None:
    """`along_kv` as a plain (log time, log work, measured) tuple, `kv_axis` its table's
    grid["kv"]: _corners and the sum over them written out (every pass reads one), the same
    floats summed from 0.0 in corner order."""
    values, logs = kv_axis
    if piece is False or kv < values[0] * (1 - 1e-9) or kv > values[-1] * (1 + 1e-9):
        return None
    slice_t, slice_w, slice_measured = piece
    i = min(bisect_left(values, kv), len(values) - 1)
    if abs(values[i] - kv) <= 1e-9 * kv or i == 0:  # on a grid point: one corner of weight 1
        t = slice_t[i]
        if t != t:  # NaN: a gap in the measured grid
            return None
        return 0.0 + 1.0 * t, 0.0 + 1.0 * slice_w[i], bool(slice_measured[i])
    f = (math.log(kv) - logs[i - 1]) / (logs[i] - logs[i - 1])
    t0, t1 = slice_t[i - 1], slice_t[i]
    if t0 != t0 or t1 != t1:
        return None
    w = 1.0 - f
    return 0.0 + w * t0 + f * t1, 0.0 + w * slice_w[i - 1] + f * slice_w[i], \
        bool(slice_measured[i - 1]) and bool(slice_measured[i])


def _corners(axis: tuple[list, list], v: float) -> tuple | None:
    """The grid points around v on one log axis (`Table.grid`: values and their logs), as
    (index, weight); None outside the grid."""
    values, logs = axis
    if v < values[0] * (1 - 1e-9) or v > values[-1] * (1 + 1e-9):
        return None
    i = min(bisect_left(values, v), len(values) - 1)
    if abs(values[i] - v) <= 1e-9 * v or i == 0:
        return ((i, 1.0),)
    f = (math.log(v) - logs[i - 1]) / (logs[i] - logs[i - 1])
    return ((i - 1, 1.0 - f), (i, f))


def _interpolate(table: Table, x: dict) -> Hit | None:
    corners = []
    for name, grid in table.grid.items():
        axis = _corners(grid, x[name])
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
    for n, (name, grid) in enumerate(table.grid.items()):
        axis = ((slice(None), 1.0),) if n == k else _corners(grid, x[name])
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
    """(log time, log work) where a point outside the grid is read: the grid's edge nearest it
    (each axis clamped to its measured range), interpolated there, so a time scaled on from it
    by work is continuous and monotone past the edge (along kv, the longest KV measured there where
    the grid stops short of its kv axis at that batch); where no such point is timed, the
    measured cell closest in log axes (each axis in units of its grid span)."""
    edge = {name: min(max(x[name], values[0]), values[-1]) for name, (values, _) in table.grid.items()}
    hit = _interpolate(table, edge)
    if hit is None and "kv" in table.grid:  # a grid measured to shorter KV at larger batches: its kv edge there
        kvs = [v for v in table.grid["kv"][0] if v < edge["kv"]]
        while hit is None and kvs:
            hit = _interpolate(table, {**edge, "kv": kvs.pop()})
    if hit is not None:
        return hit.log_t, hit.log_w
    grids = np.meshgrid(*[np.log(v) for v in table.axes.values()], indexing="ij")
    dist = np.zeros_like(table.log_t)
    for g, (name, values) in zip(grids, table.axes.items()):
        v = x[name]
        span = max(math.log(values[-1] / values[0]), 1.0)
        dist += ((g - math.log(max(v, 1e-12))) / span) ** 2
    dist[np.isnan(table.log_t)] = np.inf
    idx = np.unravel_index(np.argmin(dist), dist.shape)
    return float(table.log_t[idx]), float(table.log_w[idx])


@dataclass
class TableConfig:
    """One measured config of a family: its dims, and its Table, built from its rows the first
    time a lookup picks it (`table`): a profile holds hundreds of configs (MoE's above all), and
    a run reads a few."""

    dims: dict | None
    family: str
    rows: np.ndarray     # its rows of the family's columns
    columns: dict        # the family's columns as numpy arrays, shared by its configs
    built: Table | None = field(default=None, repr=False)

    def table(self) -> Table:
        if self.built is None:
            self.built = _build_table(self.family, self.columns, self.rows, self.dims)
        return self.built


def build_tables(family: str, df: pd.DataFrame, ceilings: dict) -> dict:
    """keys tuple -> [TableConfig per config], configs in sorted order. The rows are read as
    numpy columns once and each config takes its rows by index when its Table is built."""
    f = FAMILIES[family]
    work = np.maximum(df["flops"] / ceilings["matmul_flops_per_s"], df["bytes"] / ceilings["copy_bytes_per_s"])
    columns = {"log_t": np.log(df["time_s"]).to_numpy(), "log_w": np.log(np.maximum(work, 1e-15)).to_numpy(),
               "time_s": df["time_s"].to_numpy(float), **{a: df[a].to_numpy(float) for a in f.axes}}
    by = list(f.keys + f.dims)
    configs = df.groupby(by, sort=True).indices.items() if by else [((), np.arange(len(df)))]
    out: dict = {}
    for key_vals, rows in configs:
        key_vals = tuple(v.item() if isinstance(v, np.generic) else v  # plain Python values, as groupby iterates
                         for v in (key_vals if isinstance(key_vals, tuple) else (key_vals,)))
        keys, dims = tuple(key_vals[:len(f.keys)]), dict(zip(f.dims, key_vals[len(f.keys):]))
        out.setdefault(keys, []).append(TableConfig(dims if f.dims else None, family, rows, columns))
    return out


def _build_table(family: str, columns: dict, rows: np.ndarray, dims: dict | None) -> Table:
    """One config's Table from its rows of the family's columns."""
    f = FAMILIES[family]
    axes = {a: np.unique(columns[a][rows]) for a in f.axes}
    log_t, log_w = (np.full([len(v) for v in axes.values()], np.nan) for _ in range(2))
    idx = tuple(np.searchsorted(axes[a], columns[a][rows]) for a in f.axes)
    log_t[idx], log_w[idx] = columns["log_t"][rows], columns["log_w"][rows]
    # outliers out before anything is filled from them or carried on by the running maximum; a
    # cell they were replaced in is no longer a measurement (Hit.measured: `calibrated-scaled`)
    log_t, replaced = _despike(log_t, [(list(f.axes).index(a), axes[a]) for a in f.monotone])
    measured = ~np.isnan(log_t) & ~replaced if replaced.any() else None
    if "touched" in f.axes:
        # a touched count the table did not time takes a timed one's time and work, and
        # Hit.measured tells the cost model to move it to the op's own work (calibrated.py).
        # More experts than the tokens were timed touching (the busiest EP rank's share at a few
        # tokens; a table of balanced routings times each token count at one count only): the
        # same experts timed at the next larger token count, whose weights are the op's, so only
        # the tokens' small work is scaled. Fewer (random routing's collisions): the nearest
        # touched count timed at this token count.
        measured = ~np.isnan(log_t) & ~replaced
        log_t, log_w = _fill_along(log_t, list(f.axes).index("tokens"), log_w, after_only=True)
        log_t, log_w = _fill_along(log_t, list(f.axes).index("touched"), log_w)
    for a in f.monotone:
        log_t = _running_max(log_t, list(f.axes).index(a))
    for a in f.envelope:
        log_t = _lower_envelope(log_t, list(f.axes).index(a))
    return Table(axes, dims, log_t, log_w, float(columns["time_s"][rows].min()), measured)


def _despike(a: np.ndarray, axes: list[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """`a` (log times) with its outliers along the monotone `axes` ((index, values) of each)
    replaced, and where they were. An outlier is a cell more than SPIKE times slower than both its
    neighbours along an axis; it takes their log-linear interpolation (where several axes flag it,
    the fastest of these). A cell with a neighbour on one side only (an axis's ends, a gap) cannot
    be told from a step and stands, as does a run of two or more slow cells (a step: the running
    maximum carries it on) and a steep rise."""
    best = np.full(a.shape, np.inf)
    limit = math.log(SPIKE)
    for axis, values in axes:
        line = np.moveaxis(a, axis, -1)
        before, after = np.full_like(line, np.nan), np.full_like(line, np.nan)
        before[..., 1:], after[..., :-1] = line[..., :-1], line[..., 1:]
        with np.errstate(invalid="ignore"):  # NaN neighbours compare False
            spike = (line - after > limit) & (line - before > limit)
        if not spike.any():
            continue
        x = np.log(np.asarray(values, float))
        share = np.zeros(len(x))  # where each value sits between its neighbours, in log
        share[1:-1] = (x[1:-1] - x[:-2]) / (x[2:] - x[:-2])
        between = before + share * (after - before)
        view = np.moveaxis(best, axis, -1)
        view[...] = np.minimum(view, np.where(spike, between, np.inf))
    replaced = np.isfinite(best)
    return np.where(replaced, best, a), replaced


def _running_max(a: np.ndarray, axis: int) -> np.ndarray:
    out = np.fmax.accumulate(a, axis=axis)
    out[np.isnan(a)] = np.nan
    return out


def _lower_envelope(a: np.ndarray, axis: int) -> np.ndarray:
    """Each cell the lowest value at its index or beyond along `axis` (a running minimum from
    the top): monotone like `_running_max`, but from below, so an isolated slow cell is read as
    the faster cells beyond it instead of lifting them all to its time."""
    flipped = np.flip(a, axis)
    out = np.flip(np.fmin.accumulate(flipped, axis=axis), axis)
    out[np.isnan(a)] = np.nan
    return out


def _fill_along(a: np.ndarray, axis: int, *alike: np.ndarray, after_only: bool = False):
    """Each NaN cell takes the value of the nearest non-NaN cell on its line along `axis` (the
    lower one on a tie; with `after_only`, the first one after it); a cell with none stays NaN.
    Vectorized: the last valid index at or before each cell and the first at or after it, by
    running max and min. `alike`: arrays with a's NaN cells (a table's log work beside its log
    time), each filled from the same cells; then the filled arrays come back as a tuple, `a`'s
    first."""
    line = a.swapaxes(axis, -1)
    n = line.shape[-1]
    pos = np.arange(n)
    ok = ~np.isnan(line)
    before = np.maximum.accumulate(np.where(ok, pos, -1), axis=-1)
    after = np.minimum.accumulate(np.where(ok, pos, n)[..., ::-1], axis=-1)[..., ::-1]
    take_before = (before >= 0) & ((after == n) | (pos - before <= after - pos)) & (not after_only)
    source = np.where(take_before, before, np.where(after < n, after, pos))
    # the flat index of each cell's source in its line (lines laid out one after another)
    flat = (source + n * np.arange(source.size // n).reshape(source.shape[:-1] + (1,))).ravel()
    filled = [b.swapaxes(axis, -1).ravel()[flat].reshape(line.shape).swapaxes(axis, -1) for b in (a, *alike)]
    return tuple(filled) if alike else filled[0]


def scaled(table: Table, t_ref: float, w_ref: float, work: float) -> float:
    """t_ref at work w_ref moved to `work`: the per-call floor stays, the rest scales."""
    floor = min(table.floor_s, t_ref)
    return floor + (t_ref - floor) * work / w_ref
