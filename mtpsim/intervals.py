"""Seed replicates -> means and 95% confidence intervals (`seeds: N`, `mtpsim run --seeds N`).

A point run over seeds s, s+1, ..., s+N-1 gives N independent replicates of each metric (the
seeds draw the request lengths, arrivals and acceptances). The interval is Student t's:

    mean ± t(0.975, N-1) · sd / sqrt(N)        sd: the sample standard deviation (ddof 1)

which is exact for normally distributed replicates and close for sums over many requests, as
TPS is. Speedups are taken seed by seed (each replicate over the `none` run of the same seed,
the same requests), so the shared workload noise cancels before the interval is drawn.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

LEVEL = 0.95
INTERVAL_METRICS = ("tps", "per_user_tps", "speedup", "per_user_speedup")


def t_critical(df: int, level: float = LEVEL) -> float:
    """The two-sided Student t quantile: P(|T| <= t) = level for T with `df` degrees of freedom.

    P(|T| <= t) has a closed form for whole df (Abramowitz & Stegun 26.7.3-4), with
    θ = atan(t / sqrt(df)) and c = cos²θ:
        df 1:    2θ/π
        df odd:  (2/π)·(θ + sinθ·cosθ·(1 + (2/3)c + (2·4)/(3·5)c² + ... up to c^((df-3)/2)))
        df even: sinθ·(1 + (1/2)c + (1·3)/(2·4)c² + ... up to c^((df-2)/2))
    It rises with θ, so bisection on θ in (0, π/2) finds the quantile to float precision."""
    if df < 1:
        raise ValueError("an interval needs at least two replicates (df >= 1)")

    def coverage(theta: float) -> float:
        c, s = math.cos(theta) ** 2, math.sin(theta)
        if df == 1:
            return 2 * theta / math.pi
        term, total = 1.0, 1.0
        # the series' ratios: odd df 2/3, 4/5, ... ((df-3)/2 terms); even df 1/2, 3/4, ... ((df-2)/2 terms)
        first, extra = (2, (df - 3) // 2) if df % 2 else (1, df // 2 - 1)
        for k in range(extra):
            term *= c * (first + 2 * k) / (first + 2 * k + 1)
            total += term
        return (2 / math.pi) * (theta + s * math.cos(theta) * total) if df % 2 else s * total

    low, high = 0.0, math.pi / 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if coverage(mid) < level else (low, mid)
    return math.sqrt(df) * math.tan((low + high) / 2)


def half_width(values: pd.Series | np.ndarray, level: float = LEVEL) -> float:
    """t(level, n-1) · sd / sqrt(n) of the replicates; 0 for one replicate (no interval)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return 0.0
    return t_critical(len(x) - 1, level) * x.std(ddof=1) / math.sqrt(len(x))


def seed_intervals(runs: pd.DataFrame, unit: str, group: str) -> pd.DataFrame:
    """One row per run unit (a sweep point, or a baseline) from its per-seed rows.

    runs: summary rows with a `seed` column; `unit` names the column that tells units apart and
    `group` the one that tells which units compete at the same load (the points that share a
    baseline, and that baseline). Out, per unit in first-seen order: its columns as they are
    where all its seeds agree (what names the point) and their mean where they differ (what was
    measured), `seeds` (replicates), and for each of INTERVAL_METRICS `<m>_ci_half`,
    `<m>_ci_low`, `<m>_ci_high`; `overlaps` is True where the unit's TPS interval meets another
    unit's of the same group (a difference the seeds do not settle)."""
    rows = []
    for _, g in runs.drop(columns="seed").groupby(unit, sort=False):
        row = {c: g[c].mean() if _varies(g[c]) else g[c].iloc[0] for c in g.columns}
        row["seeds"] = len(g)
        for m in INTERVAL_METRICS:
            h = half_width(g[m])
            row.update({f"{m}_ci_half": h, f"{m}_ci_low": row[m] - h, f"{m}_ci_high": row[m] + h})
        rows.append(row)
    out = pd.DataFrame(rows)
    out["overlaps"] = _overlaps(out, group)
    return out


def _varies(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and column.nunique(dropna=False) > 1


def _overlaps(units: pd.DataFrame, group: str) -> list[bool]:
    """Per unit: does [tps_ci_low, tps_ci_high] meet that of another unit in its group?"""
    flags = []
    for i, row in units.iterrows():
        others = units[(units[group] == row[group]) & (units.index != i)]
        flags.append(bool(((others.tps_ci_low <= row.tps_ci_high) & (row.tps_ci_low <= others.tps_ci_high)).any()))
    return flags
