"""Reading a measured family's grid (a Table, built by table_build.py): `interpolate` at a point,
multilinear in log axes, along kv by slices (`kv_slice`, `read_slice`: every pass reads one),
`nearest_cell` past the grid, and `scaled`, a time moved to another op's work. calibrated.py and
core_pricer.py price ops with these.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

import numpy as np


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


def along_work(table: Table, x: dict, work: float, along: tuple[str, ...] = ("top_k", "d")) -> float | None:
    """The time of an op of roofline `work` (seconds) read off the cells measured at x's values of
    `along` (MoE's top_k and width) and at the token counts that bracket x's: their (work, time)
    points in order of work, times made monotone in it (a running maximum), interpolated in
    log-log. The MoE tables time each token count at one routing only (touched = tokens x top_k,
    balanced), so the cells between them hold a neighbour's time: by work, a routing of 3 tokens
    falls between the 2- and 4-token rows, as its bytes do. Only the token counts around x's: a
    curve over every count read a 64-token decode's experts off the compute-bound rows of
    thousands of tokens where its bytes outran the decode rows (Step-3.5-Flash: 3x its 128-token
    time). None where x's values were not measured, fewer than two cells were, or the work lies
    outside theirs (the caller scales from the nearest cell)."""
    names = list(table.axes)
    index: list = [slice(None)] * len(names)
    for a in along:
        values = table.grid[a][0]
        at = next((i for i, v in enumerate(values) if abs(v - x[a]) <= 1e-9 * abs(v)), None)
        if at is None:
            return None
        index[names.index(a)] = at
    bracket = _corners(table.grid["tokens"], x["tokens"])
    if bracket is None:
        return None
    tokens, count = names.index("tokens"), len(table.grid["tokens"][0])
    measured = ~np.isnan(table.log_t) if table.measured is None else table.measured

    def rows(i: int) -> list:
        index[tokens] = i
        keep = measured[tuple(index)]
        return list(zip(table.log_w[tuple(index)][keep].tolist(), table.log_t[tuple(index)][keep].tolist()))
    lo, hi = bracket[0][0], bracket[-1][0]
    points = [p for i in range(lo, hi + 1) for p in rows(i)]
    lw = math.log(work)
    # a routing of more (or fewer) experts than the bracketing rows timed, as the busiest EP rank's share
    # of 3 tokens touching as many as 6 balanced: the next token count's rows on that side, one only
    if points and lw > max(points)[0] and hi + 1 < count:
        points += rows(hi + 1)
    if points and lw < min(points)[0] and lo > 0:
        points += rows(lo - 1)
    points.sort()
    if len(points) < 2 or not points[0][0] <= lw <= points[-1][0]:
        return None
    ws, ts = [w for w, _ in points], list(accumulate((t for _, t in points), max))
    i = max(1, bisect_left(ws, lw))
    if ws[i] == ws[i - 1]:
        return math.exp(ts[i])
    f = (lw - ws[i - 1]) / (ws[i] - ws[i - 1])
    return math.exp(ts[i - 1] + f * (ts[i] - ts[i - 1]))


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


def scaled(table: Table, t_ref: float, w_ref: float, work: float, floor: float | None = None) -> float:
    """t_ref at work w_ref moved to `work`: the per-call floor stays, the rest scales. `floor`:
    the launch's own (`slice_floor`) where known, else the config's fastest time."""
    floor = min(table.floor_s if floor is None else floor, t_ref)
    return floor + (t_ref - floor) * work / w_ref


def slice_floor(piece) -> float | None:
    """A `kv_slice`'s shortest time, at its least KV (times are lifted to rise with kv as they
    load): what a call at that batch, q and heads takes whatever it reads, so the part of a time
    that scales with an extrapolated query count is what lies above it. The config's fastest
    time (a batch-1, one-head call) left the launch latency of a wider call in the scaled part, and
    a verify's extra queries multiplied it: DeepSeek-V3's verify attention on B200 cost 22 µs a
    layer at no context and 13 µs at 500 tokens. None at a gap or outside the grid."""
    if piece is False:
        return None
    first = piece[0][0]
    return None if first != first else math.exp(first)
