"""frontier.csv and frontier.png: every point's throughput per GPU against its interactivity.

`frontier_rows` turns the search's summary rows into these rows (COLUMNS): the layout's numbers,
per-GPU and per-user figures, the speedup over `none`, memory headroom, cost, power, the Pareto
flags and whether the targets hold.

Interactivity is tok/s per user = 1 / TPOT p50 (as InferenceX plots it). A point is on the
Pareto frontier of its design family (`none`, or one speculative design at any steps and topk)
when no point of the family has at least its tok/s per GPU and tok/s per user and more of one.
The MTP-on curve is that family's frontier: at each interactivity, the best steps. Where the
MTP-off and MTP-on curves cross, speculation stops paying (`crossovers`).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mtpsim.designs import BASELINE
from mtpsim.search.targets import Target, meeting

COLUMNS = ["mode", "layout", "replicas", "tp", "ep", "attention_dp", "gpus", "design", "steps", "topk", "concurrency",
           "rate_per_s", "tps", "tps_per_gpu", "tps_per_user", "per_user_tps", "ttft_p50_s", "ttft_p99_s",
           "ttft_all_p50_s", "ttft_all_p99_s", "tpot_p50_s", "tpot_p99_s", "accept_length", "speedup",
           "weights_gb_per_gpu", "kv_pool_gb_per_gpu",
           "kv_headroom", "bound_by", "usd_per_m_tokens", "tps_per_kw", "pareto", "meets_targets"]


def frontier_rows(rows: pd.DataFrame, targets: list[Target]) -> pd.DataFrame:
    """Summary rows -> frontier rows: per-GPU and per-user figures, speedup over `none` on the same
    layout and load, memory headroom, cost and power, Pareto flags, whether the targets hold."""
    r = rows.copy()
    agg = r.layout.str.extract(r"^(\d+)x tp(\d+) ep(\d+) adp(\d+)$").astype(float)
    pools = r.layout.str.extract(r"^(\d+)P\(tp(\d+) ep\d+ adp\d+\) (\d+)D\(tp(\d+) ep(\d+) adp(\d+)\)$").astype(float)
    r["mode"] = np.where(agg[0].notna(), "agg", "disagg")  # a disaggregated row's layout columns are its decode pool's
    for col, a, d in (("replicas", 0, 2), ("tp", 1, 3), ("ep", 2, 4), ("attention_dp", 3, 5)):
        r[col] = agg[a].fillna(pools[d]).astype(int)
    r["gpus"] = (agg[0] * agg[1]).fillna(pools[0] * pools[1] + pools[2] * pools[3]).astype(int)
    r["tps_per_gpu"] = r.tps / r.gpus
    r["tps_per_user"] = 1.0 / r.tpot_p50_s
    load = r.concurrency.where(r.rate_per_s.isna(), r.rate_per_s)
    key = r.layout + " @ " + load.astype(str)
    none = r[r.design == BASELINE].set_index(key[r.design == BASELINE]).tps
    r["speedup"] = r.tps / key.map(none)
    per_group = (r.max_batch / r.attention_dp).apply(math.ceil)
    r["kv_headroom"] = 1.0 - per_group * r.request_kv_bytes / (r.kv_pool_gb_per_gpu * 1e9)
    r["usd_per_m_tokens"] = r.usd_per_gpu_hour * r.gpus / (r.tps * 3600) * 1e6
    r["tps_per_kw"] = r.tps / (r.gpus * r.board_power_w / 1e3)
    r = with_pareto(r)
    r["meets_targets"] = meeting(r, targets) if targets else True
    return r


def pareto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point has x' >= x and y' >= y with one of them larger (maximising both)."""
    on = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        dominated = (x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i]))
        on[i] = not dominated.any()
    return on


def with_pareto(rows: pd.DataFrame) -> pd.DataFrame:
    """`pareto` per design family (rows with a NaN interactivity are never on it)."""
    flags = pd.Series(False, index=rows.index)
    for _, fam in rows.groupby("design"):
        fam = fam[fam.tps_per_user.notna() & fam.tps_per_gpu.notna()]
        flags[fam.index] = pareto(fam.tps_per_user.to_numpy(float), fam.tps_per_gpu.to_numpy(float))
    return rows.assign(pareto=flags)


def curve(rows: pd.DataFrame) -> pd.DataFrame:
    """A family's frontier points, by interactivity."""
    return rows[rows.pareto].sort_values("tps_per_user")


def crossovers(off: pd.DataFrame, on: pd.DataFrame) -> list[float]:
    """Interactivities (tok/s per user) where the MTP-on frontier's tok/s per GPU meets the MTP-off
    one's, both read as piecewise-linear in log interactivity over the range they share."""
    if len(off) < 2 or len(on) < 2:
        return []
    lo = max(off.tps_per_user.min(), on.tps_per_user.min())
    hi = min(off.tps_per_user.max(), on.tps_per_user.max())
    if lo >= hi:
        return []
    grid = np.geomspace(lo, hi, 400)
    diff = (np.interp(np.log(grid), np.log(on.tps_per_user), on.tps_per_gpu)
            - np.interp(np.log(grid), np.log(off.tps_per_user), off.tps_per_gpu))
    idx = np.nonzero(np.sign(diff[:-1]) * np.sign(diff[1:]) < 0)[0]
    return [float(np.sqrt(grid[i] * grid[i + 1])) for i in idx]


def plot_frontier(rows: pd.DataFrame, path, chosen: pd.Series | None = None, min_user_tps: float | None = None,
                  title: str = "") -> None:
    """frontier.png: every point faint (disaggregated ones as crosses), the MTP-off frontier and each design's MTP-on frontier,
    the target region (tok/s per user at least the target) shaded, the points meeting every target
    ringed (TTFT and p99 targets have no edge on these axes), the chosen point marked and each
    crossing labelled."""
    from mtpsim.mpl import pyplot
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    off = curve(rows[rows.design == BASELINE])
    for i, (design, fam) in enumerate(sorted(rows.groupby("design"), key=lambda g: g[0] != BASELINE)):
        color = f"C{i}"  # none first: the same colour in every search
        split = fam["mode"] == "disagg" if "mode" in fam else pd.Series(False, index=fam.index)
        ax.scatter(fam.tps_per_user[~split], fam.tps_per_gpu[~split], s=8, alpha=0.25, color=color)
        if split.any():  # disaggregated points: crosses, in their design's colour
            ax.scatter(fam.tps_per_user[split], fam.tps_per_gpu[split], s=14, alpha=0.5, color=color, marker="x",
                       label=f"{design}, disaggregated (xPyD)")
        front = curve(fam)
        label = "MTP off (none)" if design == BASELINE else f"MTP on ({design}, best steps)"
        ax.plot(front.tps_per_user, front.tps_per_gpu, marker="o", ms=3, label=label, color=color)
        if design != BASELINE:
            for x in crossovers(off, front):
                y = np.interp(np.log(x), np.log(front.tps_per_user), front.tps_per_gpu)
                ax.annotate(f"{design} and none cross\nat {x:.0f} tok/s/user", (x, y), xytext=(10, 20),
                            textcoords="offset points", arrowprops={"arrowstyle": "->"}, fontsize=8)
    meets = rows[rows.meets_targets.astype(bool)] if "meets_targets" in rows else rows.iloc[:0]
    if len(meets) and len(meets) < len(rows):  # targets that are no bound on the x axis (TTFT, p99 TPOT)
        ax.scatter(meets.tps_per_user, meets.tps_per_gpu, s=24, facecolors="none", edgecolors="green",
                   linewidths=0.8, label="meets the targets")
    if min_user_tps is not None:
        ax.axvspan(min_user_tps, max(rows.tps_per_user.max() * 1.1, min_user_tps * 1.1), alpha=0.08, color="green",
                   label="target region")
    if chosen is not None:
        ax.scatter([chosen.tps_per_user], [chosen.tps_per_gpu], marker="*", s=250, color="red", zorder=5,
                   label=f"chosen: {chosen.layout}, {chosen.design} S={int(chosen.steps)}")
    ax.set_xlabel("interactivity: tok/s per user (1 / TPOT p50)")
    ax.set_ylabel("throughput: tok/s per GPU")
    ax.set_xscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
