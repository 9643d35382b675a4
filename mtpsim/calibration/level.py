"""How fast this CPU runs now against when a profile was measured.

A shared machine's speed drifts over minutes (neighbours' load): on this project's machine a
profile's held-out shapes re-timed later ran 17-20% slower as a whole while agreeing with each
other to 5%. Such a drift moves every prediction made from the profile by the same factor, so
verification reports it beside its errors. `retime` re-times a profile's held-out shapes the
way `mtpsim calibrate` timed them (interleaved visits); `level` is the geometric median of
re-timed / committed: 1.2 means the machine now runs 20% slower than the profile says.
"""
from __future__ import annotations

import random
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mtpsim.calibration import kernels as K
from mtpsim.calibration import timing as T
from mtpsim.calibration.command import MEASURED, POOL_MIB, ROTATE_MIB


def retime(profile: Path, visits: int, repeats: int = 1, per_family: int | None = None,
           seed: int = 0) -> pd.DataFrame:
    """One row per held-out shape and repeat: case, family, repeat, committed_s, retimed_s.
    `per_family` samples that many shapes of each family (all when None)."""
    rng = random.Random(seed)
    cases = []
    for path in sorted((Path(profile) / "holdout").glob("*.csv")):
        rows = [r for _, r in pd.read_csv(path).iterrows()]
        if per_family is not None and len(rows) > per_family:
            rows = rng.sample(rows, per_family)
        cases += [(path.stem, {k: _plain(v) for k, v in r.items() if k not in MEASURED and pd.notna(v)}, r.time_s)
                  for r in rows]
    pool = T.Pool("cpu", torch.float32, POOL_MIB["cpu"] << 20, ROTATE_MIB["cpu"] << 20)

    def visit(i: int, share: float, first: bool) -> list[float]:
        family, shape, _ = cases[i]
        sets, fn = K.case(family, shape, pool)
        return T.samples_s(sets, fn, "cpu", graphs=False, share=share, first=first)

    rows = []
    for r in range(repeats):
        samples = T.interleaved(len(cases), visit, visits, seed=1000 * (seed + 1) + r)
        rows += [{"case": i, "family": family, "repeat": r, "committed_s": committed,
                  "retimed_s": statistics.median(times)}
                 for i, ((family, _, committed), times) in enumerate(zip(cases, samples))]
    return pd.DataFrame(rows)


def level(ratios) -> float:
    """Geometric median of time ratios: the factor every shape shares."""
    return float(np.exp(np.median(np.log(np.asarray(ratios, dtype=float)))))


def machine_level(profile: Path, visits: int = 3, per_family: int = 6) -> float:
    """re-timed / committed over a sample of the profile's held-out shapes (a few seconds)."""
    df = retime(profile, visits, per_family=per_family)
    return level(df.retimed_s / df.committed_s)


def _plain(v):
    """CSV values back to the ints / floats / strings the kernels expect."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v.item() if hasattr(v, "item") else v
