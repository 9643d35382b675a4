"""DataFrames -> figures. Nothing here simulates or prices anything.

Each function takes the frames a run folder holds (summary.csv, accept_counts.csv, requests.csv,
iterations.csv, passes.csv, memory.csv) and returns a matplotlib Figure whose title names the
scenario. `write_plots` saves the set as PNGs; `mtpsim plot RUN_DIR` and `mtpsim run --plot`
call it.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from mtpsim.mpl import pyplot

plt = pyplot()  # files only, never a window; before matplotlib's first import
from matplotlib.figure import Figure  # noqa: E402

from mtpsim.designs import BASELINE, is_draft_key, label, record  # noqa: E402
from mtpsim.errors import cut_middle, warn  # noqa: E402
from mtpsim.outputs import writing  # noqa: E402
from mtpsim.results import HOST_COLUMN, PASS_COLUMN, share_column  # noqa: E402
from mtpsim.rows import key_labels  # noqa: E402

KIND_COLORS = {"draft": "tab:orange", "verify": "tab:blue", "decode": "tab:blue", "extend": "tab:green",
               "prefill": "tab:gray", "host": "tab:red"}
SHARES = {share_column(PASS_COLUMN["draft"]): "draft", share_column(PASS_COLUMN["verify"]): "verify / decode",
          share_column(PASS_COLUMN["extend"]): "extend", share_column(PASS_COLUMN["prefill"]): "prefill",
          "host_share": "host (exposed)"}
# Summary columns that name a run but never tell series apart.
NOT_SERIES = {"name", "concurrency", "rate_per_s", "num_requests", "draft_tokens", "dp", "point"}


# ---------------------------------------------------------------------------- helpers

# characters of a swept value a legend label shows (its start and end): a swept section's whole
# text (an acceptance curve with its kept lengths: 90 characters) made a legend wider than its
# figure, which matplotlib then drew with the axes collapsed to nothing
MAX_LABEL_VALUE = 32
MAX_LEGEND_LINES = 16  # legend entries a two-panel figure of 4 inches holds beside its axes
MAX_SERIES_LEGEND = 32  # and a one-panel figure of 4.5 inches
MAX_BARS = 200  # runs the time breakdown draws, a bar each (a figure 60 inches tall)


def _figure(title: str, size=(7.5, 4.5)) -> tuple[Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    fig.suptitle(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _name(summary: pd.DataFrame) -> str:
    return str(summary["name"].iloc[0]) if "name" in summary and len(summary) else "run"


def series_columns(summary: pd.DataFrame) -> list[str]:
    """design, steps (topk and policy when they vary) and any swept key other than the workload
    and the speculative section (which design, steps, topk and policy already show) that varies
    between rows."""
    cols = list(summary.columns)
    sweep = cols[cols.index("dp") + 1: cols.index("tps")] if {"dp", "tps"} <= set(cols) else []
    swept = [c for c in sweep if not c.startswith(("workload", "speculative")) and c not in NOT_SERIES]
    shown = [c for c in ("topk", "policy", *swept) if c in summary and summary[c].nunique(dropna=False) > 1]
    return ["design", "steps", *shown]


def _label(row, keys: list[str], texts: dict[str, dict[str, str]] | None = None) -> str:
    """`nextn S=3`, then what else tells the series apart: `topk 4`, the policy `1:3 128:2`,
    `layer=attention=swa ffn=dense`. The baseline reads `none` (and only what it runs with).
    `texts`: each key's values as the rows labelled beside this one show them (_texts; None:
    this row alone)."""
    parts, names = [label(row.design, row.steps)], key_labels(keys[2:])
    texts = texts if texts is not None else _texts(pd.DataFrame([row]), keys)
    for k in keys[2:]:
        if pd.isna(row[k]) or row.design == BASELINE and (k in ("topk", "policy") or is_draft_key(k)):
            continue
        name, value = names[k], texts[k][str(row[k])]
        parts.append(f"{name} {value}" if k in ("topk", "policy") else f"{name}={value}")
    return ", ".join(parts)


def _texts(frame: pd.DataFrame, keys: list[str]) -> dict[str, dict[str, str]]:
    """Each swept key's values in `frame` as a label shows them: cut to MAX_LABEL_VALUE characters,
    and numbered in order of appearance where two values cut alike (acceptance curves that differ
    only in their middle entries), so no two series share a label. Once a frame: a sweep of
    10,000 points labels each."""
    out = {}
    for k in keys[2:]:
        values = list(dict.fromkeys(str(v) for v in frame[k] if not pd.isna(v)))
        cut = {v: cut_middle(v, MAX_LABEL_VALUE) for v in values}
        alike = {text for text, n in Counter(cut.values()).items() if n > 1}
        seen: Counter = Counter()
        for v, text in cut.items():
            if text in alike:
                seen[text] += 1
                cut[v] = f"{text} #{seen[text]}"
        out[k] = cut
    return out


def load_axis(summary: pd.DataFrame) -> tuple[str, str]:
    """The load column a sweep varies and its axis label: concurrency, else Poisson rate."""
    if "rate_per_s" in summary and summary.rate_per_s.notna().any() and summary.concurrency.nunique() <= 1:
        return "rate_per_s", "arrival rate (requests/s)"
    return "concurrency", "concurrent requests"


def _series(summary: pd.DataFrame):
    keys = series_columns(summary)
    texts = _texts(summary, keys)
    for _, group in summary.groupby(keys, sort=False, dropna=False):
        yield _label(group.iloc[0], keys, texts), group


def _legend(ax, **options) -> None:
    """The axes' legend, where its entries fit beside the plot (MAX_SERIES_LEGEND); else a line
    saying how many series there are: a legend taller than the figure collapsed the axes."""
    handles, _ = ax.get_legend_handles_labels()
    if len(handles) <= MAX_SERIES_LEGEND:
        ax.legend(**options)
    else:
        ax.text(0.01, 0.99, f"{len(handles)} series: too many to name (summary.csv lists them)", transform=ax.transAxes,
                fontsize=8, va="top")


# ---------------------------------------------------------------------------- the plots

def speedup_vs_load(summary: pd.DataFrame) -> Figure:
    """Speedup over `none` against concurrency (or rate), one line per design/steps series."""
    x, xlabel = load_axis(summary)
    fig, ax = _figure(f"{_name(summary)}: speedup over plain decoding")
    for name, g in _series(summary[summary.design != BASELINE]):
        g = g.sort_values(x)
        ax.plot(g[x], g.speedup, marker="o", label=name)
    ax.axhline(1.0, color="black", lw=1, ls="--", label="no gain (1x)")
    if summary[x].min() > 0 and summary[x].max() / summary[x].min() >= 8:
        ax.set_xscale("log", base=2)
    ax.set(xlabel=xlabel, ylabel="speedup (TPS / TPS without speculation)")
    _legend(ax, fontsize=8)
    return fig


def throughput_frontier(summary: pd.DataFrame) -> Figure:
    """Output TPS (all replicas) against per-user TPS, one curve per series (baseline included), points
    labelled by load. Output tokens only: summary.csv's `tps`, not its `total_tps` (input + output)."""
    x, _ = load_axis(summary)
    fig, ax = _figure(f"{_name(summary)}: throughput vs per-user speed")
    for name, g in _series(summary.drop_duplicates(subset=[c for c in summary if c != "point"])):
        g = g.sort_values(x)
        style = dict(color="black", ls="--") if g.design.iloc[0] == BASELINE else {}
        ax.plot(g.per_user_tps, g.tps, marker="o", label=name, **style)
        for _, row in g.iterrows():
            ax.annotate(f"{row[x]:g}", (row.per_user_tps, row.tps), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.set(xlabel="per-user speed (tokens/s per request)", ylabel="output throughput (tokens/s, all replicas)")
    _legend(ax, fontsize=8, title=f"labels: {x}", title_fontsize=8)
    return fig


def time_breakdown(summary: pd.DataFrame) -> Figure:
    """Share of busy time by pass kind, one stacked horizontal bar per run (points and baselines)."""
    every = summary.drop_duplicates(subset=[c for c in summary if c != "point"]).reset_index(drop=True)
    rows = every.head(MAX_BARS)  # a bar a run: 10,000 made a figure 330,000 pixels tall, drawn in 108 s
    x, _ = load_axis(rows)
    keys = series_columns(rows)
    texts = _texts(rows, keys)
    labels = [f"{_label(r, keys, texts)}, {x} {r[x]:g}" for _, r in rows.iterrows()]
    shown = f" (the first {MAX_BARS} of {len(every)} runs)" if len(every) > MAX_BARS else ""
    fig, ax = _figure(f"{_name(summary)}: where the GPU time goes{shown}", size=(8.5, 1.2 + 0.3 * len(rows)))
    left = pd.Series(0.0, index=rows.index)
    for col, kind in SHARES.items():
        if col in rows:
            share = rows[col] * 100
            ax.barh(range(len(rows)), share, left=left, label=kind, color=KIND_COLORS[kind.split()[0]], height=0.7)
            left += share
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="share of busy time: GPU passes + exposed host time (%)", xlim=(0, 100))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def accept_histogram(counts: pd.DataFrame, summary: pd.DataFrame, max_series: int = 6) -> Figure:
    """Drafts accepted per request-iteration (0..S) as shares, grouped bars per design/steps.

    counts: accept_counts.csv (point, accepted, count)."""
    points = summary[(summary.point >= 0) & (summary.design != BASELINE)]
    keys = series_columns(points) if len(points) else ["design", "steps"]
    every = points.drop_duplicates(subset=keys)
    first = every.head(max_series)
    shown = f" (the first {max_series} of {len(every)} series)" if len(every) > max_series else ""  # not a silent cut
    fig, ax = _figure(f"{_name(summary)}: accepted drafts per iteration{shown}")
    width, texts = 0.8 / max(1, len(first)), _texts(points, keys)
    for i, (_, row) in enumerate(first.iterrows()):
        c = counts[counts.point == row.point]
        share = c["count"] / max(1, c["count"].sum()) * 100
        ax.bar(c.accepted + (i - (len(first) - 1) / 2) * width, share, width,
               label=f"{_label(row, keys, texts)} (AL {row.accept_length:.2f})")
    ax.set(xlabel="drafts accepted in one iteration (accept length - 1)",
           ylabel="share of request-iterations (%)")
    if len(first):
        ax.set_xticks(range(int(counts.accepted.max()) + 1))
        ax.legend(fontsize=8)
    return fig


def memory_budget(memory: pd.DataFrame, name: str = "run") -> Figure:
    """Per GPU: weights and KV budget (stacked, GB), and the max concurrent requests per design.

    memory: one row per design (label, target_weights_GB, draft_weights_GB, kv_budget_GB,
    max_requests, context; optionally capacity_GB, mem_fraction, fraction_source: the engine's rule;
    gpu: which GPU the rows are of, "GPU" or "decode-pool GPU")."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.5), layout="constrained")
    gpu = " or ".join(sorted(set(memory.gpu))) if "gpu" in memory else "GPU"  # a disaggregated run's: a decode-pool GPU
    fig.suptitle(f"{name}: memory per {gpu} and how many requests fit", fontsize=11)
    pos = range(len(memory))
    ax.bar(pos, memory.target_weights_GB, label="target weights", color="tab:gray")
    ax.bar(pos, memory.draft_weights_GB, bottom=memory.target_weights_GB, label="draft weights", color="tab:orange")
    ax.bar(pos, memory.kv_budget_GB, bottom=memory.target_weights_GB + memory.draft_weights_GB,
           label="KV budget", color="tab:blue")
    ax.set_xticks(pos, memory.label, fontsize=8, rotation=20, ha="right")
    top = (memory.target_weights_GB + memory.draft_weights_GB + memory.kv_budget_GB).max()
    if "capacity_GB" in memory:  # what the driver reports, and the engine fraction that sized the KV pool
        for cap in sorted(set(memory.capacity_GB)):
            ax.axhline(cap, color="black", lw=0.8, ls="--", label=f"GPU memory {cap:.1f} GB")
        top = max(top, memory.capacity_GB.max())
        # each bar's fraction, in bar order, and the rule that set them (once where they share it)
        sources = list(dict.fromkeys(memory.fraction_source))
        shares = ", ".join(f"{lab} {f:g}" + ("" if len(sources) == 1 else f" ({src})")
                           for lab, f, src in zip(memory.label, memory.mem_fraction, memory.fraction_source))
        ax.set_title(f"KV pool fraction{f' ({sources[0]})' if len(sources) == 1 else ''}: {shares}", fontsize=8)
    ax.set(ylabel=f"memory per {gpu} (GB)", ylim=(0, 1.3 * top))
    ax.legend(fontsize=8, ncols=3, loc="upper center")
    bars = ax2.bar(pos, memory.max_requests, color="tab:green")
    ax2.bar_label(bars, fmt="%d", fontsize=8)
    ax2.set_xticks(pos, memory.label, fontsize=8, rotation=20, ha="right")
    context = ", ".join(sorted({f"{c:g}" for c in memory.context}))
    ax2.set(ylabel="max concurrent requests (KV budget)", title=f"at {context} tokens per request")
    ax2.title.set_fontsize(9)
    for a in (ax, ax2):
        a.grid(True, axis="y", alpha=0.3)
    return fig


def passes_from_iterations(iterations: pd.DataFrame, design: str) -> pd.DataFrame:
    """Pass-like rows (one per kind per iteration, in the design's order) when passes.csv is absent."""
    order = (*record(design).pass_kinds, "host")
    rows = []
    for it in iterations.itertuples():
        t = it.start_s
        kinds = ("prefill", "host") if it.kind == "prefill" else order
        for kind in kinds:
            d = getattr(it, PASS_COLUMN.get(kind, HOST_COLUMN))
            if d > 0:
                rows.append((it.replica, t, d, kind, "", 0))
                t += d
    return pd.DataFrame(rows, columns=["replica", "start_s", "duration_s", "kind", "part", "tokens"])


def timeline(passes: pd.DataFrame, iterations: pd.DataFrame, name: str = "run", num_iterations: int = 5,
             point: str = "") -> Figure:
    """The passes of the first `num_iterations` decode iterations, one lane per replica.

    passes: passes.csv rows of one point (or passes_from_iterations); iterations: its
    iterations.csv rows, which fix the window (prefill before the first decode is skipped);
    point: which run point they are, where the run has several."""
    decode = iterations[iterations.kind == "decode"].sort_values("start_s")
    start = decode.start_s.min() if len(decode) else iterations.start_s.min()
    end_rows = decode.groupby("replica").head(num_iterations)
    end = (end_rows.start_s + end_rows.duration_s).max() if len(end_rows) else start + 1
    shown = passes[(passes.start_s >= start - 1e-12) & (passes.start_s < end)]
    fig, ax = _figure(f"{name}{f' ({point})' if point else ''}: first {num_iterations} decode iterations, pass by pass",
                      size=(10, 3.5))
    seen = set()
    for p in shown.itertuples():
        kind = p.kind if p.kind in KIND_COLORS else "verify"
        ax.barh(p.replica, p.duration_s * 1e3, left=(p.start_s - start) * 1e3, height=0.6,
                color=KIND_COLORS[kind], edgecolor="white", label=None if kind in seen else kind)
        seen.add(kind)
        if p.tokens and p.duration_s > 0.06 * (end - start):
            ax.text((p.start_s - start + p.duration_s / 2) * 1e3, p.replica, f"{p.tokens} tok",
                    ha="center", va="center", fontsize=7, color="white")
    replicas = sorted(passes.replica.unique())
    ax.set_yticks(replicas, [f"replica {r}" for r in replicas])
    ax.set(xlabel="time since the first decode iteration (ms); gaps = exposed host time")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


LINE_STYLES = ("-", "--", ":", "-.")


def latency_distributions(requests: pd.DataFrame, summary: pd.DataFrame) -> Figure:
    """Per request, TTFT and TPOT ((E2E - TTFT) / (output - 1), docs/metrics.md) as cumulative
    distributions, one line per run point (requests.csv rows, `point` naming the summary row).
    Past MAX_LEGEND_LINES points the legend names each series once, its points in its colour
    (one entry a point made the legend taller than the figure from 32 points on, and matplotlib
    then drew the axes collapsed); past that many series, none."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    fig.suptitle(f"{_name(summary)}: per-request latency distributions", fontsize=11)
    keys, (x, _) = series_columns(summary), load_axis(summary)
    rows = summary[summary.point >= 0]
    # by row (a swept key's column may hold a dot, which a namedtuple cannot), with the point's load
    texts = _texts(summary, keys)
    series = {int(r.point): _label(r, keys, texts) for _, r in rows.iterrows()}
    by_point = len(series) <= MAX_LEGEND_LINES
    labels = {p: f"{name}, {x} {r[x]:g}" for (p, name), (_, r) in zip(series.items(), rows.iterrows())} if by_point \
        else series
    colours = {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(series.values()))}
    ranks = {p: [q for q, n in series.items() if n == name].index(p) for p, name in series.items()}
    named = set()
    for point, group in requests.groupby("point", sort=True):
        ttft = np.sort((group.first_token_s - group.arrival_s).to_numpy()) * 1e3
        decoding = group[group.output_len > 1]
        tpot = np.sort(((decoding.finish_s - decoding.first_token_s) / (decoding.output_len - 1)).to_numpy()) * 1e3
        label = labels.get(int(point), str(point))
        # one colour a series, each point of a series its own line style: matplotlib's 10-colour cycle
        # gave two series' points one colour from the 11th line on
        style = {"color": colours.get(series.get(int(point)), "C0")} | (
            {"ls": LINE_STYLES[ranks[int(point)] % len(LINE_STYLES)]} if by_point else {"alpha": 0.6})
        for ax, values in zip(axes, (ttft, tpot)):
            shown = by_point or (label not in named and len(colours) <= MAX_LEGEND_LINES)
            ax.plot(values, np.arange(1, len(values) + 1) / max(len(values), 1), label=label if shown else "_", **style)
        named.add(label)
    axes[0].set(xlabel="TTFT (ms)", ylabel="fraction of requests")
    axes[1].set(xlabel="TPOT (ms per output token after the first)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------------- a run folder

def write_plots(folder: Path, summary: pd.DataFrame, counts: pd.DataFrame, iterations: pd.DataFrame,
                passes: pd.DataFrame | None = None, memory: pd.DataFrame | None = None,
                requests: pd.DataFrame | None = None) -> list[Path]:
    """Save every plot the frames allow into `folder`; returns the PNG paths."""
    folder, name = Path(folder), _name(summary)
    point0 = summary[summary.point == 0].iloc[0]
    it0 = iterations[iterations.point == 0]
    lane = passes[passes.point == 0] if passes is not None and len(passes) else \
        passes_from_iterations(it0, point0.design)
    keys, (x, _) = series_columns(summary), load_axis(summary)
    which = f"point 0: {_label(point0, keys, _texts(summary, keys))}, {x} {point0[x]:g}" \
        if (summary.point >= 0).sum() > 1 else ""
    figures = {"speedup.png": speedup_vs_load(summary), "frontier.png": throughput_frontier(summary),
               "breakdown.png": time_breakdown(summary), "timeline.png": timeline(lane, it0, name, point=which)}
    if (summary.design != BASELINE).any():
        figures["acceptance.png"] = accept_histogram(counts, summary)
    if memory is not None and len(memory):
        figures["memory.png"] = memory_budget(memory, name)
    if requests is not None and len(requests):
        figures["latency.png"] = latency_distributions(requests, summary)
    paths = []
    for file, fig in figures.items():
        with writing(folder / file):
            fig.savefig(folder / file, dpi=110)
        plt.close(fig)
        paths.append(folder / file)
    for file in OPTIONAL_FIGURES.keys() - figures.keys():  # an earlier plot's, of frames this folder lacks now
        if (folder / file).is_file() and not (folder / file).is_symlink():
            (folder / file).unlink()
            warn(str(folder / file), "", f"removed: drawn from {OPTIONAL_FIGURES[file]}, which this run folder no "
                 "longer holds, so it described another run")
    return paths


# the figures only some run folders allow: file -> what it is drawn from
OPTIONAL_FIGURES = {"acceptance.png": "a speculative design's accept counts", "memory.png": "memory.csv",
                    "latency.png": "requests.csv"}
