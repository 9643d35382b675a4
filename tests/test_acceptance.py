"""Acceptance forms, closed forms and sampling."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.acceptance_histogram import read_histogram, write_histogram

probs = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6)


def test_expected_accept_length_closed_form():
    p = AcceptanceProfile((0.9, 0.8, 0.7))
    assert p.expected_accept_length(3) == pytest.approx(1 + 0.9 + 0.72 + 0.504)
    assert p.expected_accept_length(1) == pytest.approx(1.9)
    assert p.expected_accept_length(5) == pytest.approx(1 + 0.9 + 0.72 + 0.504)  # no depth 4, 5


@given(probs)
def test_cumulative_round_trip(alphas):
    p = AcceptanceProfile(tuple(alphas))
    q = AcceptanceProfile.from_cumulative(p.cumulative(len(alphas)))
    assert np.allclose(q.cumulative(len(alphas)), p.cumulative(len(alphas)))


@given(st.floats(1.0, 4.0), st.integers(3, 6))
def test_accept_length_gives_matching_geometric_profile(al, steps):
    p = AcceptanceProfile.from_accept_length(al, steps)
    assert p.expected_accept_length(steps) == pytest.approx(al, abs=1e-9)
    assert len(set(p.alphas)) == 1


def test_histogram_round_trip(tmp_path):
    p = AcceptanceProfile((0.8, 0.5, 0.25))
    # exact histogram of P(exactly j): 0.2, 0.4, 0.3, 0.1
    counts = np.array([0.2, 0.4, 0.3, 0.1]) * 1000
    assert np.allclose(AcceptanceProfile.from_histogram(counts).alphas, p.alphas)
    write_histogram(counts, tmp_path / "h.csv")
    assert np.allclose(read_histogram(tmp_path / "h.csv"), counts)


def test_sampled_mean_matches_closed_form():
    p = AcceptanceProfile((0.9, 0.7, 0.5))
    rng = np.random.default_rng(0)
    n = 200_000
    accepted = p.sample(rng, p.request_levels(rng, n, 3))
    var = np.var(accepted)
    assert abs(accepted.mean() + 1 - p.expected_accept_length(3)) < 5 * math.sqrt(var / n)


def test_sampled_histogram_matches_profile():
    p = AcceptanceProfile((0.9, 0.7, 0.5))
    rng = np.random.default_rng(1)
    n = 100_000
    counts = np.bincount(p.sample(rng, p.request_levels(rng, n, 3)), minlength=4)
    exact = np.array([0.1, 0.9 * 0.3, 0.63 * 0.5, 0.315]) * n
    assert np.all(np.abs(counts - exact) < 5 * np.sqrt(exact))


def test_spread_keeps_the_mean_and_varies_requests():
    p = AcceptanceProfile((0.8, 0.6), spread=0.5)
    levels = p.request_levels(np.random.default_rng(2), 50_000, 2)
    assert levels.std(axis=0).min() > 0.1
    assert np.allclose(levels.mean(axis=0), [0.8, 0.6], atol=0.01)


def test_cap_by_remaining_tokens():
    p = AcceptanceProfile((1.0, 1.0, 1.0))
    rng = np.random.default_rng(0)
    got = p.sample(rng, p.request_levels(rng, 4, 3), remaining=np.array([1, 2, 3, 10]))
    assert got.tolist() == [0, 1, 2, 3]


def test_a_histogram_is_read_again_once_its_file_changes(tmp_path):
    """read_histogram reads once per file version: the same file twice is one read, a changed
    file is read anew, and the shared array cannot be changed in place."""
    path = tmp_path / "h.csv"
    write_histogram([3, 2, 1], path)
    first = read_histogram(path)
    assert read_histogram(path) is first
    with pytest.raises(ValueError):
        first[0] = 0
    write_histogram([5, 4, 3, 2], path)
    assert np.allclose(read_histogram(path), [5, 4, 3, 2])
