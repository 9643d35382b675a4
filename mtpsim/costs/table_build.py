"""A measured family's rows as grids (tables.py's Table, read there): `build_tables` turns a
family's CSV rows into one Table per config, built when a lookup first picks it. The build, in
order: log time and log roofline work over log axes; outliers replaced (`_despike`); for the MoE
families, impossible routings filled from the nearest timed one; then monotone where the family
says so (`_running_max`, `_lower_envelope`). profile.py reads the files.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mtpsim.costs.profile import FAMILIES
from mtpsim.costs.tables import Table
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path

# A measured time more than this many times both its neighbours' along a monotone axis is an outlier
# (`_despike`): along these axes the shape only grows, so a kernel's time may rise steeply (a
# prompt's attention 4x per doubling of q) but cannot fall by half at the next shape. The committed
# tables hold such cells, from 2x to 160x their neighbours (h200-trtllm's MLA decode row at batch
# 32, 4 tokens of KV: 2.2 ms between two of 14 us), and the running maximum carried each to every
# larger shape: DeepSeek's decode attention on H200 under TensorRT-LLM cost 135 ms a step at batch 32.
SPIKE = 2.0


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

    def gap(self, near: dict) -> float:
        """How far the config's rows lie from `near` along those axes: per axis, |log| of the ratio
        to its closest value timed, summed (dims_distance's units)."""
        return sum(float(np.min(np.abs(np.log(self.columns[a][self.rows] / v)))) for a, v in near.items())


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
    if "touched" in f.axes:  # timed along a diagonal (touched = tokens x top_k): no grid neighbours to tell a spike by
        log_t, along = _despike_diagonal(log_t, list(f.axes), axes)
        replaced |= along
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


def _despike_diagonal(a: np.ndarray, names: list[str], axes: dict) -> tuple[np.ndarray, np.ndarray]:
    """`_despike` for the MoE tables, whose cells are timed one routing a token count (touched =
    tokens x top_k): along each line of the other axes (top_k, width) the timed cells in order of
    tokens are the sequence, and a cell more than SPIKE times slower than the timed cells on both
    sides takes their log-linear interpolation in log tokens. Without it such a cell had no
    neighbour on either grid axis, and the running maximum carried it on: b200-vllm's row of
    gpt-oss-120b's experts at 4 tokens (1,647 us between 69 and 142) priced its decode 9x slow
    from batch 4 on."""
    out, replaced = a.copy(), np.zeros(a.shape, bool)
    t_axis, k_axis = names.index("tokens"), names.index("touched")
    others = [i for i in range(a.ndim) if i not in (t_axis, k_axis)]
    limit, tokens = math.log(SPIKE), np.log(np.asarray(axes["tokens"], float))
    for rest in np.ndindex(*[a.shape[i] for i in others]):
        index: list = [slice(None)] * a.ndim
        for i, v in zip(others, rest):
            index[i] = v
        plane = a[tuple(index)]  # tokens x touched (in axis order)
        if t_axis > k_axis:
            plane = plane.T
        cells = [(i, j) for i, j in zip(*np.nonzero(~np.isnan(plane)))]
        for n in range(1, len(cells) - 1):
            (i0, j0), (i, j), (i1, j1) = cells[n - 1], cells[n], cells[n + 1]
            before, here, after = plane[i0, j0], plane[i, j], plane[i1, j1]
            if here - before > limit and here - after > limit and tokens[i1] > tokens[i0]:
                share = (tokens[i] - tokens[i0]) / (tokens[i1] - tokens[i0])
                at = list(index)
                at[t_axis], at[k_axis] = i, j
                out[tuple(at)] = before + share * (after - before)
                replaced[tuple(at)] = True
    return out, replaced


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
