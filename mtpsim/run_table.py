"""What `mtpsim run` prints: the summary as one table (`format_table`), and the lines under it
for limits that bound a row, a replayed trace, a prefix cache and a replicated run's intervals.
"""
from __future__ import annotations

import pandas as pd

from mtpsim import scenario as sc
from mtpsim.designs import BASELINE

TABLE = {"design": "design", "steps": "S", "policy": "policy", "concurrency": "conc", "rate_per_s": "rate/s", "tps": "TPS",
         "per_user_tps": "user TPS", "ttft_p50_s": "TTFT p50 ms", "ttft_p99_s": "TTFT p99 ms",
         "tpot_p50_s": "TPOT p50 ms", "tpot_p99_s": "TPOT p99 ms", "accept_length": "AL",
         "verify_width": "width", "speedup": "speedup",
         "draft_share": "draft%", "verify_share": "verify%", "extend_share": "extend%",
         "prefill_share": "prefill%", "host_share": "host%", "bound_by": "bound"}


def format_table(summary: pd.DataFrame) -> str:
    """The run's table; swept keys the fixed columns do not show get a column of their own. A
    replicated run's interval summary (summary_ci.csv's rows) shows TPS, per-user TPS and speedup
    as mean ± half-width, and `~` after a TPS whose interval overlaps another design's at the
    same load (see legend())."""
    shown = {"workload.concurrency", "speculative.steps", "speculative.design", "workload.rate_per_s",
             "speculative.policy"}
    swept = [c for c in summary.columns if "." in c and c not in shown]
    df = summary[[c for c in TABLE if c in summary.columns] + swept].copy()
    df = df.rename(columns={c: c.split(".")[-1] for c in swept})
    for load in ("concurrency", "rate_per_s"):  # closed loads have a concurrency, open ones a rate
        if load not in df:
            continue
        if df[load].isna().all():
            df = df.drop(columns=load)
        elif df[load].isna().any():  # both kinds in one run: each row shows its own
            df[load] = [_number(v) if pd.notna(v) else "" for v in df[load]]
    if "policy" in df:  # adaptive runs name their table; fixed-steps rows leave it blank
        df["policy"] = df.policy.fillna("")
    if "verify_width" in df and (df.verify_width.fillna(1) % 1 == 0).all():
        df = df.drop(columns="verify_width")  # fixed widths (S + 1, or 1 plain): nothing a ragged rule changed
    if "bound_by" in df and not df.bound_by.fillna("").astype(bool).any():
        df = df.drop(columns="bound_by")  # no limit bound: nothing to mark
    elif "bound_by" in df:
        df["bound_by"] = df.bound_by.fillna("")
    for col in df.columns:
        if col.endswith("_s") and not col.endswith("_per_s"):  # seconds shown as ms; rates as they are
            df[col] = df[col] * 1e3
        if col.endswith("_share"):
            df[col] = df[col] * 100
    if "tps_ci_half" in summary:
        for col in ("tps", "per_user_tps", "speedup"):
            df[col] = [f"{_number(m)} ± {_number(h)}" for m, h in zip(summary[col], summary[f"{col}_ci_half"])]
        df["tps"] = [f"{v} {'~' if o else ' '}" for v, o in zip(df.tps, summary.overlaps)]
    df = df.rename(columns=TABLE)
    return df.to_string(index=False, float_format=_number)


def limits_note(summary: pd.DataFrame, points: list[sc.Scenario]) -> str:
    """Lines under the table for each limit that bound a row (`bound` column): the running-request
    cap (and the engine rule that set it, if one did), the KV budget, batches past the CUDA graphs."""
    if "bound_by" not in summary:
        return ""
    rows = summary[summary.bound_by.fillna("").astype(bool)]
    lines = []
    for _, row in rows.iterrows():
        s = points[int(row.point)] if row.point >= 0 else points[0]
        load = f"conc {row.concurrency:g}" if pd.isna(row.rate_per_s) else f"{row.rate_per_s:g} req/s"
        where = f"{row.design} S={row.steps} at {load}"
        if row.capped_iterations:
            e = s.specs.engine
            origin = "engine.max_running_requests" if s.engine.max_running_requests is not None or row.design == BASELINE \
                else (f"{e.name} {e.version}'s cap under speculative decoding (rule spec_running_cap)"
                      if e.speculative_max_running_requests is not None else "the default cap")
            lines.append(f"cap {row.max_running:g}: {where}: at most {row.max_batch:g} requests ran at once (mean "
                         f"{row.mean_running:.1f}) while more waited, in {row.capped_iterations:g} iterations; "
                         f"set by {origin}")
        if row.kv_full_iterations:
            lines.append(f"KV: {where}: the KV budget turned waiting requests away in {row.kv_full_iterations:g} iterations")
        if row.eager_share:
            lines.append(f"eager: {where}: {row.eager_share:.0%} of decode iterations ran past the largest CUDA graph "
                         "(engine.max_graph_batch) without graphs")
    return "\n".join(lines)


def _number(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def trace_note(row: pd.Series, s: sc.Scenario) -> str:
    """What a replayed trace held: its requests, rate and format, and every row the selection
    skipped or capped (mtpsim/tracefiles), so no length was changed silently."""
    t = s.workload.trace
    parts = [f"trace {t.path} ({row.trace_format}): {row.num_requests:g} requests at {row.rate_per_s:.3g} req/s"]
    if t.speed != 1:
        parts.append(f"replayed {t.speed:g}x faster")
    if row.trace_skipped:
        parts.append(f"{row.trace_skipped:g} rows with 0 input or output tokens skipped")
    if row.trace_capped_inputs:
        parts.append(f"{row.trace_capped_inputs:g} prompts cut to max_input_len {t.max_input_len}")
    if row.trace_capped_outputs:
        parts.append(f"{row.trace_capped_outputs:g} outputs cut to max_output_len {t.max_output_len}")
    return "; ".join(parts)


def prefix_note(summary: pd.DataFrame) -> str:
    """Per row run with a prefix cache: its hit rate, the prefill tokens it saved, its evictions."""
    lines = []
    for _, row in summary[summary.prefix_hit_rate.notna()].iterrows():
        load = f"conc {row.concurrency:g}" if pd.isna(row.rate_per_s) else f"{row.rate_per_s:.3g} req/s"
        lines.append(f"prefix cache: {row.design} S={row.steps} at {load}: hit rate {row.prefix_hit_rate:.1%} of prompt "
                     f"tokens, {row.prefix_saved_tokens:,.0f} prefill tokens saved, "
                     f"{row.prefix_evicted_blocks:,.0f} blocks evicted")
    return "\n".join(lines)


def legend(ci: pd.DataFrame) -> str:
    """The lines under a replicated run's table: what ± is, and what ~ marks (when any)."""
    seeds = ", ".join(str(n) for n in dict.fromkeys(ci.seeds))
    lines = [f"± half-width of the 95% interval over {seeds} seeds (Student t; speedup seed by seed over "
             "the baseline of the same seed)"]
    if ci.overlaps.any():
        lines.append("~ its TPS interval overlaps another design's at the same load: these seeds do not "
                     "settle the difference")
    return "\n".join(lines)
