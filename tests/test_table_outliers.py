"""A measured table's outliers stay where they were measured (costs/tables.py `_despike`, then the
running maximum that makes a table monotone): property tests over random monotone grids with one
slow cell put in, and with a slow step.

Before: the running maximum carried any slow cell to every larger shape along the table's
monotone axes (docs/accuracy.md, "Outliers in the measured tables").
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mtpsim.costs.table_build import SPIKE, _despike, _running_max

AXIS_VALUES = [np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]), np.array([64.0, 256.0, 1024.0, 4096.0, 16384.0])]


@st.composite
def monotone_grid(draw):
    """A 6 x 5 grid of log times rising along both axes by at most 20% a step (noise-free data)."""
    rows, cols = (len(v) for v in AXIS_VALUES)
    step = st.floats(0.0, math.log(1.2))
    start = draw(st.floats(math.log(1e-6), math.log(1e-3)))
    down = np.array(draw(st.lists(step, min_size=rows, max_size=rows)))
    across = np.array(draw(st.lists(step, min_size=cols, max_size=cols)))
    return start + np.cumsum(down)[:, None] + np.cumsum(across)[None, :]


def built(grid: np.ndarray) -> np.ndarray:
    """What _build_table does to a family's log times along its monotone axes."""
    out, _ = _despike(grid, list(enumerate(AXIS_VALUES)))
    for axis in range(grid.ndim):
        out = _running_max(out, axis)
    return out


@settings(max_examples=200, deadline=None)
@given(monotone_grid(), st.integers(1, 4), st.integers(1, 3), st.floats(2.5, 200.0))
def test_one_slow_cell_moves_no_other_cell(grid, row, col, factor):
    """Any interior cell made 2.5-200x slower: every other cell of the built table is as measured,
    and the slow cell lies within its neighbours' range along its rows."""
    slow = grid.copy()
    slow[row, col] += math.log(factor)
    out = built(slow)
    others = np.ones_like(grid, bool)
    others[row, col] = False
    np.testing.assert_allclose(out[others], grid[others], rtol=0, atol=1e-12)
    assert grid[row - 1, col] - 1e-12 <= out[row, col] <= max(grid[row + 1, col], grid[row, col + 1]) + 1e-12


@settings(max_examples=100, deadline=None)
@given(monotone_grid(), st.integers(1, 3), st.floats(2.5, 50.0))
def test_a_slow_step_is_carried_on(grid, row, factor):
    """Every cell from one row on made slower (a kernel that slows from that batch on) is a step,
    not an outlier: the built table keeps it, monotone."""
    slow = grid.copy()
    slow[row:, :] += math.log(factor)
    out = built(slow)
    np.testing.assert_allclose(out, slow, rtol=0, atol=1e-12)


def test_the_threshold_is_a_halving():
    """A cell just under SPIKE times both neighbours stands (a steep rise, then the next shape a
    little faster: noise the running maximum lifts); just over, it is an outlier."""
    base = np.log(np.array([[1.0, 1.0, 1.0]]))
    values = [np.array([1.0]), np.array([1.0, 2.0, 4.0])]
    for factor, moved in ((SPIKE * 0.99, False), (SPIKE * 1.01, True)):
        grid = base.copy()
        grid[0, 1] = math.log(factor)
        out, replaced = _despike(grid, list(enumerate(values)))
        assert (out[0, 1] != grid[0, 1]) == moved == replaced[0, 1] == replaced.any(), factor
