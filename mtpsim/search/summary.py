"""What `mtpsim search` prints: the space, the pick and its margin, MTP against no MTP, cost."""
from __future__ import annotations

import pandas as pd

from mtpsim.designs import BASELINE
from mtpsim.search import frontier
from mtpsim.search.targets import Target, margin_pct


def describe(row: pd.Series) -> str:
    """`1x tp8 ep8 adp8, nextn S=2 at 64 users` (a disaggregated layout: `1P(...) 1D(...)`)."""
    design = row.design if row.design == BASELINE else f"{row.design} S={int(row.steps)}" + \
        (f" K={int(row.topk)}" if row.topk > 1 else "")
    load = f"{row.rate_per_s:g} req/s" if pd.notna(row.rate_per_s) else f"{int(row.concurrency)} users"
    return f"{row.layout}, {design} at {load}"


def rate(value: float) -> str:
    """A rate as the summary prints it: whole units from 100 up, else three significant figures
    (a one-user load on thousands of GPUs is a fraction of a token a second per GPU, which
    `.0f` printed as 0 beside a margin between two zeros)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def figures(row: pd.Series) -> str:
    text = (f"{rate(row.tps_per_gpu)} tok/s/GPU, {row.tps_per_user:.1f} tok/s/user, TTFT p50/p99 "
            f"{row.ttft_p50_s * 1e3:.0f}/{row.ttft_p99_s * 1e3:.0f} ms, TPOT p50/p99 "
            f"{row.tpot_p50_s * 1e3:.1f}/{row.tpot_p99_s * 1e3:.1f} ms")
    if pd.notna(row.get("usd_per_m_tokens")):
        text += f", ${row.usd_per_m_tokens:.2f}/M output tokens"
    if pd.notna(row.get("tps_per_kw")):
        text += f", {rate(row.tps_per_kw)} tok/s/kW"
    return text


def report(base, bounds, rows: pd.DataFrame, final: pd.DataFrame, chosen: pd.Series, targets: list[Target],
           num_layouts: int, ran: int, wall_s: float, refused: dict) -> str:
    lines = [f"Q: {base.question}"] if base.question else []
    lines.append(f"{base.name}: {base.describe_model()} on {bounds.gpus}x {base.specs.hardware.name}, engine "
                 f"{base.specs.engine.label}, priced by {base.specs.priced_by}: {num_layouts} layouts "
                 f"({len(refused)} refused), {len(rows)} points ({ran} run, {len(rows) - ran} cached) in {wall_s:.1f} s")
    lines.append("targets: " + (", ".join(t.text for t in targets) if targets else "none (best tok/s per GPU at any latency)"))
    lines.append(f"\nbest: {describe(chosen)}\n      {figures(chosen)}")
    lines.append(f"margin: {verdict(final)}")
    edge = rows.rate_per_s.max() if pd.notna(chosen.rate_per_s) else rows.concurrency.max()
    if (chosen.rate_per_s if pd.notna(chosen.rate_per_s) else chosen.concurrency) == edge:
        lines.append("note: the best is at the ladder's heaviest load; a wider --concurrency / --rates may do better")
    users = int(chosen.concurrency) if pd.isna(chosen.rate_per_s) else None
    if users is not None and pd.notna(chosen.get("replicas")) and users < chosen.replicas:
        idle = int(chosen.replicas) - users
        lines.append(f"note: {int(chosen.replicas)} replicas for {users} user{'s' * (users > 1)}: {idle} never "
                     "serve a request, and tok/s/GPU counts their GPUs (fewer --gpus serve this load as fast)")
    if len(final) > 1:
        runner = rows.loc[int(final.iloc[1].point)]
        lines.append(f"runner-up: {describe(runner)}: {rate(runner.tps_per_gpu)} tok/s/GPU")
    lines += mtp_lines(rows)
    if bounds.disaggregated:
        lines.append(mode_line(rows, bounds.gpus))
    return "\n".join(lines)


def mode_line(rows: pd.DataFrame, gpus: int) -> str:
    """Aggregated against disaggregated: the best of each under the targets, or why there is no split."""
    if not (rows["mode"] == "disagg").any():
        tp = int(rows.tp.min())
        return f"disaggregated: no xPyD split of {gpus} GPUs (each pool needs a replica of at least tp {tp})"
    ok = rows[rows.meets_targets]
    best = {m: ok[ok["mode"] == m].tps_per_gpu.max() for m in ("agg", "disagg")}
    if any(pd.isna(v) for v in best.values()):
        met = [m for m, v in best.items() if pd.notna(v)]
        return f"agg vs disagg under the targets: only {' and '.join(met) or 'neither'} meets them"
    return (f"agg vs disagg under the targets: {rate(best['agg'])} vs {rate(best['disagg'])} tok/s/GPU "
            f"(disagg {100 * (best['disagg'] / best['agg'] - 1):+.1f}%)")


def mtp_lines(rows: pd.DataFrame) -> list[str]:
    """Does MTP pay: the best of each family under the targets, and where the frontiers cross."""
    ok = rows[rows.meets_targets]
    out = []
    bests = {d: fam.loc[fam.tps_per_gpu.idxmax()] for d, fam in ok.groupby("design")}
    if BASELINE in bests and len(bests) > 1:
        none = bests[BASELINE]
        for design, best in bests.items():
            if design != BASELINE:
                out.append(f"MTP ({design}) vs none under the targets: {rate(best.tps_per_gpu)} vs "
                           f"{rate(none.tps_per_gpu)} tok/s/GPU ({100 * (best.tps_per_gpu / none.tps_per_gpu - 1):+.1f}%)")
    off = frontier.curve(rows[rows.design == BASELINE])
    for design, fam in rows[rows.design != BASELINE].groupby("design"):
        cross = frontier.crossovers(off, frontier.curve(fam))
        if cross:
            out.append(f"frontiers of {design} and none cross at {', '.join(f'{x:.0f}' for x in cross)} tok/s/user")
    return out


def verdict(final: pd.DataFrame) -> str:
    """`margin` of the first over the second, or a tie where their intervals overlap."""
    if len(final) < 2:
        return "the only deployment that meets the targets"
    a, b = final.iloc[0], final.iloc[1]
    text = f"{margin_pct(a.tps_per_gpu, b.tps_per_gpu):+.1f}% tok/s per GPU over the runner-up"
    if "tps_per_gpu_ci_half" in final:
        if a.tps_per_gpu - a.tps_per_gpu_ci_half <= b.tps_per_gpu + b.tps_per_gpu_ci_half:
            return f"tie within noise ({text}; the {int(a.seeds)}-seed 95% intervals overlap)"
        return f"{text} (outside the {int(a.seeds)}-seed 95% intervals)"
    return text + " (one seed: run --seeds 5 to tell it from noise)"
