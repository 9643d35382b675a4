"""A point's `none` baseline: which points share one (`baseline_key`: everything but the
speculation) and the scenario it runs (`baseline_of`). `mtpsim run` runs one per key (run.py
plan_runs), and the tables beside a run read the same keys (peer_compare.py).
"""
from __future__ import annotations

import json

from mtpsim import scenario as sc
from mtpsim.designs import BASELINE, is_draft_key

# what a `none` run does not depend on; `seeds` too: each replicate has its own baseline run, on
# its seed, so points that differ only in how many seeds they run share theirs
BASELINE_FREE = {"name", "question", "speculative", "acceptance", "sweep", "verify", "model", "seeds"}


def baseline_key(s: sc.Scenario) -> str:
    """Everything but the speculation: points that share it share one `none` run. The model counts
    as its resolved spec without its draft (an `mtp` override changes nothing for `none`)."""
    target = s.specs.model.model_dump(exclude={"mtp", "assistant", "block_draft"})
    return json.dumps([s.model_dump(exclude=BASELINE_FREE), target], sort_keys=True, default=str)


def baseline_of(s: sc.Scenario, seeds: int | None = None) -> sc.Scenario:
    """The `none` run of point run `s` (one replicate: one run, on its seed). Its point keeps only
    the swept keys a baseline runs with, so its rows and legend never carry the design's settings;
    a swept `seeds` reads `seeds`, the most of the points it is the baseline of (default: s's)."""
    data = s.model_dump(exclude={"sweep", "seeds"}, exclude_none=True)
    data["speculative"], data["acceptance"] = {"design": BASELINE}, {}
    point = {k: v for k, v in s.point.items() if not is_draft_key(k)}
    if "seeds" in point:
        point["seeds"] = seeds or s.seeds
    return sc.validate(data, s.source, point)
