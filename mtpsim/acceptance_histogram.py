"""A measured acceptance histogram's file: a CSV `accepted,count`, the iterations in which exactly
`accepted` drafts were accepted (`acceptance.histogram`; `mtpsim verify` writes one).
mtpsim/acceptance.py turns the counts into a profile.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mtpsim.errors import ScenarioError
from mtpsim.files import Column, file_row, first_repeat_rows, read_csv, read_once
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path

MAX_ACCEPTED = 64  # the most drafts a histogram row may count (speculative.steps' limit)
MAX_COUNT = 1e15  # iterations a histogram row may count: their sum stays a finite float


@read_once
def read_histogram(path: str | Path, where: str = "") -> np.ndarray:
    """A CSV `accepted,count` -> counts indexed by accepted drafts (missing rows are 0): accepted
    an integer in 0..64, counts non-negative with a positive total over at least two depths.
    Read-only: read once per file version and shared."""
    df = read_csv(path, {"accepted": Column(low=0, high=MAX_ACCEPTED, integer=True),
                         "count": Column(low=0, high=MAX_COUNT)})
    again = first_repeat_rows(df, ["accepted"])
    if again is not None:  # two counts for one depth: a merge gone wrong, not something to add up
        raise ScenarioError(str(path), "accepted", f"rows {file_row(df, again[0])} and {file_row(df, again[1])} both "
                            f"count accepted {int(df.accepted.iloc[again[0]])}: keep one row per value")
    counts = np.zeros(int(df.accepted.max()) + 1)
    counts[df.accepted.to_numpy()] = df["count"].to_numpy()
    if len(counts) < 2 or counts.sum() <= 0:
        raise ScenarioError(str(path), "count", "a histogram needs rows for at least accepted 0 and 1 and a positive total")
    counts.flags.writeable = False
    return counts


def write_histogram(counts, path: str | Path) -> None:
    pd.DataFrame({"accepted": np.arange(len(counts)), "count": np.asarray(counts)}).to_csv(path, index=False)
