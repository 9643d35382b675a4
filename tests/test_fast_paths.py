"""The simulator's fast paths give the numbers of the plain code they stand in for, exactly.

Each fast path (a vectorized table fill, memoized or sliced pricing) is checked against a
straightforward reference over random inputs: the same floats, not just close ones.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mtpsim.costs.tables import _fill_along


def _fill_along_reference(a: np.ndarray, axis: int) -> np.ndarray:
    """Line by line: each cell takes the nearest non-NaN cell's value (argmin: the lower on a tie)."""
    def fill(line):
        ok = np.flatnonzero(~np.isnan(line))
        if not len(ok):
            return line
        return line[ok[np.abs(np.arange(len(line))[:, None] - ok[None, :]).argmin(1)]]
    return np.apply_along_axis(fill, axis, a)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(float, hnp.array_shapes(min_dims=1, max_dims=4, max_side=6),
                  elements=st.one_of(st.just(np.nan), st.floats(-5, 5))), st.data())
def test_fill_along_matches_line_by_line(a, data):
    axis = data.draw(st.integers(0, a.ndim - 1))
    np.testing.assert_array_equal(_fill_along(a, axis), _fill_along_reference(a, axis))
