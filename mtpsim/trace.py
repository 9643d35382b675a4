"""Pass records -> Chrome / Perfetto trace JSON (`mtpsim run --trace` writes trace.json).

Open the file in https://ui.perfetto.dev or chrome://tracing. One process per run point, one
track (thread) per dp replica, one complete slice ("ph": "X") per simulated pass, named
`kind:part` and carrying its token count; gaps between slices are exposed host time or idle.
Times are simulated time in microseconds, the trace format's unit.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mtpsim.designs import label
from mtpsim.outputs import writing

US_PER_S = 1e6


def trace_events(passes: pd.DataFrame, summary: pd.DataFrame | None = None) -> list[dict]:
    """One slice per row of `passes` (passes.csv: replica, start_s, duration_s, kind, part,
    tokens, point), plus metadata events naming each point's process and each replica's track."""
    passes = passes if "point" in passes else passes.assign(point=0)
    events = []
    for (point, replica), _ in passes.groupby(["point", "replica"], sort=True):
        events.append({"ph": "M", "name": "thread_name", "pid": int(point), "tid": int(replica),
                       "args": {"name": f"replica {replica}"}})
    for point in sorted(passes.point.unique()):
        events.append({"ph": "M", "name": "process_name", "pid": int(point),
                       "args": {"name": _point_name(int(point), summary)}})
    for p in passes.itertuples(index=False):
        events.append({"ph": "X", "name": f"{p.kind}:{p.part}", "cat": p.kind, "pid": int(p.point),
                       "tid": int(p.replica), "ts": p.start_s * US_PER_S, "dur": p.duration_s * US_PER_S,
                       "args": {"kind": p.kind, "part": p.part, "tokens": int(p.tokens)}})
    return events


def _point_name(point: int, summary: pd.DataFrame | None) -> str:
    if summary is None or "point" not in summary or not (summary.point == point).any():
        return f"point {point}"
    row = summary[summary.point == point].iloc[0]
    load = f"concurrency {row.concurrency:g}" if pd.notna(row.concurrency) else f"{row.rate_per_s:g} req/s"
    return f"point {point}: {row['name']} {label(row.design, row.steps)}, {load}"


def write_trace(path: Path, passes: pd.DataFrame, summary: pd.DataFrame | None = None) -> Path:
    """Write trace.json; returns its path."""
    doc = {"traceEvents": trace_events(passes, summary), "displayTimeUnit": "ms",
           "otherData": {"source": "mtpsim", "clock": "simulated time"}}
    with writing(path) as file:
        file.write_text(json.dumps(doc))
    return Path(path)
