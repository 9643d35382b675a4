"""What `mtpsim run` prints (`print_report`): the question and a header line, the summary as one
table (`format_table`), and the lines under it for limits that bound a row, a replayed trace, a
prefix cache and a replicated run's intervals, and a disaggregated run's pools (`pools_table`).
The summary comes as rows (dicts, what run_rows gives) or as a DataFrame; the table is the one
pandas' to_string printed, made without pandas (mtpsim/rows.py).
"""
from __future__ import annotations

import math

from mtpsim import scenario as sc
from mtpsim.catalog import engine_file_label
from mtpsim.errors import ScenarioError, printable, short
from mtpsim.histogram import LogHistogram
from mtpsim.results import Results
from mtpsim.rows import Table, key_labels, missing, to_string

TABLE = {"design": "design", "steps": "S", "policy": "policy", "concurrency": "conc", "rate_per_s": "rate/s", "tps": "TPS",
         "per_user_tps": "user TPS", "ttft_p50_s": "TTFT p50 ms", "ttft_p99_s": "TTFT p99 ms",
         "tpot_p50_s": "TPOT p50 ms", "tpot_p99_s": "TPOT p99 ms", "accept_length": "AL",
         "verify_width": "width", "speedup": "speedup",
         "draft_share": "draft%", "verify_share": "verify%", "extend_share": "extend%",
         "prefill_share": "prefill%", "host_share": "host%", "bound_by": "bound"}


# swept keys a table's fixed columns show already (design, S, conc, rate, policy): no column of their own
SHOWN_KEYS = {"workload.concurrency", "speculative.steps", "speculative.design", "workload.rate_per_s",
              "speculative.policy"}


def format_table(summary) -> str:
    """The run's table; swept keys the fixed columns do not show get a column of their own. A
    replicated run's interval summary (summary_ci.csv's rows) shows TPS, per-user TPS and speedup
    as mean ± half-width, and `~` after a TPS whose interval overlaps another design's at the
    same load (see legend()). `summary`: rows (dicts) or a DataFrame."""
    rows = isinstance(summary, list) and all(isinstance(r, dict) for r in summary)
    if not rows and type(summary).__name__ != "DataFrame":  # pandas is not imported for rows
        raise ScenarioError("mtpsim.run.format_table", "summary", f"is {type(summary).__name__} {short(summary, 40)}: "
                            "run_points' summary (a DataFrame) or its rows (dicts)")
    table = Table.of_rows(summary) if isinstance(summary, list) else Table.of_frame(summary)
    shown = SHOWN_KEYS
    cols = list(table.columns)
    # the swept keys sit between dp and tps in a summary row (results.py): a top-level one (model,
    # hardware, seed, name) as well as a dotted one
    block = cols[cols.index("dp") + 1: cols.index("tps")] if {"dp", "tps"} <= set(cols) else []
    swept = [c for c in dict.fromkeys(block + [c for c in cols if "." in c]) if c not in shown]
    df = Table({c: table.columns[c] for c in [c for c in TABLE if c in table.columns] + swept},
               {c: table.kinds[c] for c in [c for c in TABLE if c in table.columns] + swept})
    labels = key_labels(swept, taken=[c for c in df.columns if c not in swept])
    df.rename(labels)
    as_written = {labels.get(c, c) for c in swept}  # a swept key's values, shown as the scenario gives them
    for load in ("concurrency", "rate_per_s"):  # closed loads have a concurrency, open ones a rate
        if load not in df.columns:
            continue
        values = df.columns[load]
        if all(missing(v) for v in values):
            df.drop(load)
        elif any(missing(v) for v in values):  # both kinds in one run: each row shows its own
            df.set(load, [number(v) if not missing(v) else "" for v in values], "object")
    if "policy" in df.columns:  # adaptive runs name their table; fixed-steps rows leave it blank
        df.set("policy", _filled(df.columns["policy"]), "object")
    if "verify_width" in df.columns and all((1 if missing(v) else v) % 1 == 0 for v in df.columns["verify_width"]):
        df.drop("verify_width")  # fixed widths (S + 1, or 1 plain): nothing a ragged rule changed
    if "bound_by" in df.columns and not any(_filled(df.columns["bound_by"])):
        df.drop("bound_by")  # no limit bound: nothing to mark
    elif "bound_by" in df.columns:
        df.set("bound_by", _filled(df.columns["bound_by"]), "object")
    for col in [c for c in df.columns if c not in as_written]:  # a swept end_s of 2 is 2, not 2000 ms
        if col.endswith("_s") and not col.endswith("_per_s"):  # seconds shown as ms; rates as they are
            df.set(col, [v * 1e3 for v in df.columns[col]], "float")
        if col.endswith("_share"):
            df.set(col, [v * 100 for v in df.columns[col]], "float")
    if "tps_ci_half" in table.columns:
        seeds = table.columns.get("seeds") or [2] * len(table.columns["tps"])
        for col in ("tps", "per_user_tps", "speedup"):  # one replicate has no interval: its mean alone
            # a value no seed has (one-token outputs: no per-user speed) has no interval either, and
            # seeds that agree have none wider than rounding (a speedup of 0.978 ± 3.38e-16)
            df.set(col, ["NaN" if missing(m) else f"{number(m)} ± {number(0.0 if h <= 1e-12 * abs(m) else h)}"
                         if n > 1 else number(m)
                         for m, h, n in zip(table.columns[col], table.columns[f"{col}_ci_half"], seeds)], "object")
        if len(set(seeds)) > 1:  # a sweep over seeds: each row says how many it averages
            df.set("seeds", [int(n) for n in seeds], "int")
        df.set("tps", [f"{v} {'~' if o else ' '}" for v, o in zip(df.columns["tps"], table.columns["overlaps"])], "object")
    df.rename(TABLE)
    return to_string(df, number)


def _filled(values: list) -> list:
    """fillna(""): missing cells as empty text."""
    return ["" if missing(v) else v for v in values]


def limits_note(summary: list[dict], points: list[sc.Scenario]) -> str:
    """Lines under the table for each limit that bound a row (`bound` column): the running-request
    cap (and the engine rule that set it, if one did), a mixing engine's token budget, the KV
    budget, batches past the CUDA graphs."""
    lines = []
    for row in summary:
        s = _point_of(row, points)
        where = f"{row['design']} S={row['steps']} {load_label(row)}"
        if not missing(row.get("batch_wait_iterations")) and row["batch_wait_iterations"]:
            lines.append(_batch_wait_line(row, s, where))
        if missing(row.get("bound_by")) or not row["bound_by"]:
            continue
        budget = "budget" in row["bound_by"].split()
        if row["capped_iterations"]:
            lines.append(_cap_line(row, s, where, budget))
        if budget:
            lines.append(_budget_line(row, s, where))
        if row["kv_full_iterations"]:
            lines.append(f"KV: {where}: the KV budget turned waiting requests away in {row['kv_full_iterations']:g} iterations")
        if row["eager_share"]:
            lines.append(f"eager: {where}: {row['eager_share']:.0%} of decode iterations ran past the largest CUDA graph "
                         "or outside an unpadded engine's sizes (engine.max_graph_batch, engine.graph_padding) without graphs")
    return "\n".join(lines)


def _point_of(row: dict, points: list[sc.Scenario]) -> sc.Scenario:
    """The point whose settings a summary row ran with: its own, or for a baseline no point is
    (`point` -1) the first point whose swept values it carries (a baseline keeps every swept key
    but the draft's: baselines.baseline_of). points[0] was read for every baseline, so a sweep over
    engine.batch_wait [null, {...}] under speculation read the null one's for the other's baseline
    (an AttributeError traceback), and a swept cap or chunk named the first point's."""
    from mtpsim.designs import is_draft_key
    from mtpsim.sim import point_text
    if row["point"] >= 0:
        return points[int(row["point"])]
    return next((p for p in points if all(row.get(k) == point_text(v) for k, v in p.point.items()
                                          if not is_draft_key(k) and k != "seeds")), points[0])


def _cap_line(row: dict, s: sc.Scenario, where: str, budget: bool) -> str:
    """The running-request cap's line: the batch it held, and the rule that set it. Where the
    decoding batch stayed below the cap (a mixing engine prefills admitted prompts a chunk per
    step within its token budget), the cap bound admissions only, and the line says so."""
    origin = s.specs.engine.cap_origin(row["design"], s.engine.max_running_requests is not None,
                                       s.specs.model.architecture, engine_file_label(s.specs.engine.name))
    held = f"{row['capped_iterations']:g} iterations; set by {origin}"
    if row["max_batch"] < row["max_running"]:
        return (f"cap {row['max_running']:g}: {where}: {row['max_running']:g} requests were admitted while more waited, "
                f"in {held}; at most {row['max_batch']:g} of them decoded at once"
                f"{' (the budget below kept the others prefilling)' if budget else ''}")
    return (f"cap {row['max_running']:g}: {where}: at most {_requests(row['max_batch'])} ran at once (mean "
            f"{row['mean_running']:.1f}) while more waited, in {held}")


def _requests(n: float) -> str:
    """'1 request', '48 requests': the summaries' counts of the batch held."""
    return f"{n:g} request{'' if n == 1 else 's'}"


def _budget_line(row: dict, s: sc.Scenario, where: str) -> str:
    """A mixing engine's token budget a step, filled by the running batch's decode, or (an engine
    that prefills a prompt whole) too small for a waiting prompt beside it: admitted prompts waited
    for room to prefill (sim/mixed.py), which kept the decoding batch small."""
    from mtpsim.memory import prefill_chunk_tokens
    tokens = prefill_chunk_tokens(s)
    origin = "engine.chunked_prefill_tokens" if s.engine.chunked_prefill_tokens is not None else \
        f"{s.specs.engine.name}'s default"
    held = f"at most {_requests(row['max_batch'])} decoded at once (mean {row['mean_running']:.1f})"
    if not s.specs.engine.mixed_batches.split_prompts:  # a prompt rides whole or waits, and those behind it
        return (f"budget {tokens}: {where}: {s.specs.engine.name} prefills a prompt whole, and a waiting prompt did not "
                f"fit beside the running batch's decode tokens in the {tokens}-token budget a step (set by {origin}): "
                f"it and the prompts behind it waited for the batch to shrink; {held} (the warning on "
                "engine.chunked_prefill_tokens or workload.input_len gives a budget that admits every prompt)")
    return (f"budget {tokens}: {where}: the running batch's decode filled the {tokens}-token budget a step (set by "
            f"{origin}), so admitted prompts waited to prefill; {held}")


def _batch_wait_line(row: dict, s: sc.Scenario, where: str) -> str:
    """engine.batch_wait's line: how many decode steps held admitted prompts back to prefill more
    of them at once (TensorRT-LLM's batch waiting: sim/mixed.py), which lengthens their TTFT."""
    from mtpsim.memory import prefill_chunk_tokens
    wait = s.engine.batch_wait
    return (f"batch wait: {where}: {row['batch_wait_iterations']:g} of {row['decode_iterations']:g} decode steps held "
            f"admitted prompts back until {wait.timeout_iters} steps had held them or a step's tokens reached "
            f"{wait.max_tokens_ratio:g} x the {prefill_chunk_tokens(s)}-token budget (engine.batch_wait), so they "
            "prefilled more at once and waited longer for their first token")


def number(x: float) -> str:
    """A table cell's number: three significant figures, whole numbers from 100 (the run's table
    and the tables printed beside it)."""
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def load_label(row: dict) -> str:
    """A summary row's load as the notes under the table say it: `at 2.5 req/s` (Poisson, or a
    replayed trace's rate), `at conc 8` (closed loop), else `all at once` (a trace whose
    requests share one timestamp has neither a rate nor users)."""
    if not missing(row.get("rate_per_s")):
        return f"at {number(row['rate_per_s'])} req/s"
    if not missing(row.get("concurrency")):
        return f"at conc {row['concurrency']:g}"
    return "all at once"


def trace_note(row: dict, s: sc.Scenario) -> str:
    """What a replayed trace held: its requests, rate and format, and every row the selection
    skipped or capped (mtpsim/tracefiles), so no length was changed silently."""
    t = s.workload.trace
    n = row["num_requests"]
    parts = [f"trace {printable(t.path)} ({row['trace_format']}): {_requests(n)} {load_label(row)}"]
    if t.speed != 1:
        parts.append(f"replayed {t.speed:g}x faster")
    if row["trace_skipped"]:
        parts.append(f"{row['trace_skipped']:g} rows with 0 input or output tokens skipped")
    if row["trace_capped_inputs"]:
        parts.append(f"{row['trace_capped_inputs']:g} prompts cut to max_input_len {t.max_input_len}")
    if row["trace_capped_outputs"]:
        parts.append(f"{row['trace_capped_outputs']:g} outputs cut to max_output_len {t.max_output_len}")
    return "; ".join(parts)


def prefix_note(summary: list[dict]) -> str:
    """Per row run with a prefix cache: its hit rate, the prefill tokens it saved, its evictions."""
    lines = []
    for row in summary:
        if missing(row.get("prefix_hit_rate", math.nan)):
            continue
        lines.append(f"prefix cache: {row['design']} S={row['steps']} {load_label(row)}: hit rate {row['prefix_hit_rate']:.1%} "
                     f"of prompt tokens, {row['prefix_saved_tokens']:,.0f} prefill tokens saved, "
                     f"{row['prefix_evicted_blocks']:,.0f} blocks evicted")
    return "\n".join(lines)


def legend(ci) -> str:
    """The lines under a replicated run's table: what ± is, and what ~ marks (when any)."""
    seeds = ", ".join(str(n) for n in dict.fromkeys(ci.seeds) if n > 1)
    lines = [f"± half-width of the 95% interval over {seeds} seeds (Student t; speedup seed by seed over "
             "the baseline of the same seed)" + ("; a row of one seed has none" if (ci.seeds == 1).any() else "")]
    if ci.overlaps.any():
        lines.append("~ its TPS interval overlaps another design's at the same load: these seeds do not "
                     "settle the difference")
    return "\n".join(lines)


POOL_COLUMNS = {"design": "design", "pools": "pools", "link": "link", "prefill_utilisation": "prefill util",
                "prefill_queue_mean_s": "P queue ms", "decode_utilisation": "decode util",
                "decode_queue_mean_s": "D queue ms", "transfer_mean_s": "transfer ms",
                "transfer_share_of_ttft": "transfer/TTFT", "transfer_bytes_per_gpu_mean": "KV MB/GPU"}


def pools_table(summary: list[dict]) -> str:
    """A disaggregated run's pool columns (sim/disagg.py `pool_columns`) as a printed table (ms,
    MB, percentages). pandas is imported here, where only a disaggregated run's table needs it."""
    import pandas as pd

    frame = pd.DataFrame(summary)
    df = frame[[c for c in POOL_COLUMNS if c in frame]].copy()
    for c in df:
        if c.endswith("_s"):
            df[c] = (1e3 * df[c]).round(2)
        elif c.endswith("utilisation") or c.endswith("share_of_ttft"):
            df[c] = (100 * df[c]).map(lambda v: f"{v:.3g}%")
        elif c.endswith("_mean") and c.startswith("transfer_bytes"):
            df[c] = (df[c] / 1e6).round(1)
    return df.rename(columns=POOL_COLUMNS).to_string(index=False)


def _seed_counts(points: list[sc.Scenario]) -> str:
    """How many seeds the points run: `3`, or `1 or 3` where a sweep gives them different counts."""
    counts = sorted({p.seeds for p in points})
    return str(counts[0]) if len(counts) == 1 else f"{', '.join(map(str, counts[:-1]))} or {counts[-1]}"


def _pricing(points: list[sc.Scenario]) -> str:
    """What priced the run (one cost model, or each one a sweep used)."""
    return ", ".join(dict.fromkeys(p.specs.priced_by for p in points))


def print_report(points: list[sc.Scenario], sets: list[str], summary: list[dict], results: list[Results],
                 labels: list[dict], intervals, wall_s: float) -> None:
    """What `mtpsim run` prints: the question, a header line, the table and the notes it needs."""
    replicated = intervals is not None
    s = points[0]
    if s.question:  # the question as written, and what --set changed of the scenario it asks about
        print(f"Q: {s.question}" + (f" (with --set {printable(', '.join(sets))})" if sets else ""))
    # what the header names of the first point, and what of it a sweep varies (its own column)
    named = {"model": lambda p: p.specs.model.name, "hardware": lambda p: p.specs.hardware.name,
             "layout": lambda p: (p.parallel, p.disaggregation), "engine": lambda p: p.specs.engine.label}
    swept = [k for k, of in named.items() if len({of(p) for p in points}) > 1]
    varies = " and ".join([", ".join(swept[:-1]), swept[-1]] if len(swept) > 1 else swept)
    print(f"{s.name}: {s.describe_model()} on {s.describe_layout()}, engine {s.specs.engine.label}"
          f"{f' (the first point; {varies} swept: see the columns)' if varies else ''}, "
          f"priced by {_pricing(points)}, {len(points)} point(s)"
          f"{f' x {_seed_counts(points)} seeds' if replicated else ''} in {wall_s:.1f} s\n")
    if replicated:
        print(format_table(intervals) + "\n\n" + legend(intervals))
    else:
        print(format_table(summary))
    if any("pools" in row for row in summary):  # a disaggregated deployment: per pool, and the KV transfer
        print("\n" + pools_table(summary))
    note = limits_note(summary if not replicated else [r for r in summary if r["seed"] == min(r["seed"] for r in summary)],
                       points)
    if note:
        print("\n" + note)
    if s.workload.arrival == "trace":
        print("\n" + trace_note(summary[0], s))
    if any("prefix_hit_rate" in row for row in summary):
        print("\n" + prefix_note(summary))
    if any(r.iterations_truncated for r in results):
        print("\n(iterations.csv keeps the first rows of very long runs; the summary counts every iteration)")
    if any(r.requests_truncated for r in results):
        print("(requests.csv keeps the first finished requests of very long runs; the summary counts every request,\n"
              f" its percentiles from histograms within {LogHistogram.RELATIVE_ERROR:.1%})")
