"""A log-binned histogram of positive values (seconds): exact count and sum, quantiles within a
fixed relative error, flat memory however many values it takes. results.py keeps the run's
TTFT, TPOT, E2E and inter-token latencies in these when their rows are not all kept.
"""
from __future__ import annotations

import math

import numpy as np


class LogHistogram:
    """Counts of positive values in log-spaced bins, each GROWTH times as wide as the one before
    over [LOW, HIGH] seconds (values outside are clamped to the end bins). A quantile is the
    geometric middle of the bin holding that order statistic, so it is within RELATIVE_ERROR
    (sqrt(GROWTH) - 1, 0.5%) of it for values inside the range."""

    LOW, HIGH, GROWTH = 1e-9, 1e7, 1.01
    RELATIVE_ERROR = math.sqrt(GROWTH) - 1
    NUM_BINS = math.ceil(math.log(HIGH / LOW) / math.log(GROWTH))

    FLUSH_VALUES = 1 << 16  # add_many binning waits for this many values (one bincount for many calls)

    def __init__(self):
        self.counts = np.zeros(self.NUM_BINS, np.int64)
        self.n = 0
        self.total = 0.0  # the values' exact sum
        self._pending: list = []  # (values, times or None) not yet binned
        self._num_pending = 0

    def add(self, value: float) -> None:
        b = int(math.log(max(value, self.LOW) / self.LOW) / math.log(self.GROWTH))
        self.counts[min(b, self.NUM_BINS - 1)] += 1
        self.n += 1
        self.total += value

    def add_many(self, values: np.ndarray, times: np.ndarray | None = None, total: int | None = None) -> None:
        """`add` for each of an array of values (`times[i]` times each where given; `total`: their
        sum, where the caller has it). n and the sum count at once; the binning waits for
        FLUSH_VALUES values (quantile and merged bin first)."""
        if not len(values):
            return
        self.n += len(values) if times is None else int(times.sum()) if total is None else total
        # np.add.reduce: what values.sum() runs, without its Python wrapper (an add_many per decode iteration)
        self.total += float(np.add.reduce(values)) if times is None else float(np.dot(values, times))
        self._pending.append((values, times))
        self._num_pending += len(values)
        if self._num_pending >= self.FLUSH_VALUES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        values = np.concatenate([v for v, _ in self._pending])
        weighted = any(t is not None for _, t in self._pending)
        times = np.concatenate([np.ones(len(v), np.int64) if t is None else t for v, t in self._pending]) if weighted else None
        self._pending, self._num_pending = [], 0
        b = (np.log(np.maximum(values, self.LOW) / self.LOW) / math.log(self.GROWTH)).astype(np.int64)
        b = np.minimum(b, self.NUM_BINS - 1)
        found = np.bincount(b, weights=times, minlength=self.NUM_BINS)
        self.counts += found.astype(np.int64) if weighted else found

    def merged(self, other: LogHistogram) -> LogHistogram:
        """Both histograms' values in one (a new histogram)."""
        self._flush()
        other._flush()
        out = LogHistogram()
        out.counts, out.n, out.total = self.counts + other.counts, self.n + other.n, self.total + other.total
        return out

    def quantile(self, q: float) -> float:
        """The q-quantile's lower order statistic, x_(floor(q (n - 1))), to RELATIVE_ERROR."""
        if not self.n:
            return float("nan")
        self._flush()
        rank = math.floor(q * (self.n - 1))
        b = int(np.searchsorted(np.cumsum(self.counts), rank + 1))
        return self.LOW * self.GROWTH ** (b + 0.5)
