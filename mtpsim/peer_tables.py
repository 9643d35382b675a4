"""aiconfigurator's answers (peer_compare.py `ask`) set beside mtpsim's: the table and peer.csv
`mtpsim run --peer` adds under its own (`compare`, `report`, `write_csv`), search's chosen deployment
and best without MTP (`search_beside`), and recommend's picks per batch (`recommend_picks`,
`recommend_report`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from mtpsim import peer
from mtpsim import scenario as sc
from mtpsim.designs import BASELINE
from mtpsim.peer_compare import NO_BASELINE_ROW, ask_row, cap_of


def compare(paired: list[tuple[dict, sc.Scenario]], progress: bool = True) -> list[dict]:
    """One row per (summary row, the scenario it ran: run.first_rows): mtpsim's mean TPOT,
    tokens/s and speedup beside aiconfigurator's (`ask`, at the batch the row's running cap,
    max_running, let run, and its speedup over the batch the point's baseline's cap let run: the
    `none` row of its baseline key among `paired`, else the same cap where the scenario sets one)."""
    from mtpsim.baselines import baseline_key
    from mtpsim.sim.progress import progress_bar
    base_caps: dict[str, int | None] = {}
    for row, s in paired:
        if row["design"] == BASELINE:
            base_caps.setdefault(baseline_key(s), cap_of(row))
    bar = progress_bar(len(paired), True if not progress or len(paired) < 3 else None, desc="aiconfigurator", unit="point")
    out = []
    try:
        for row, s in paired:
            out.append({"point": row["point"], **swept(row, s), "design": row["design"], "steps": row["steps"],
                        "concurrency": row.get("concurrency"), "accept_length": row["accept_length"],
                        "tpot_mean_ms": 1e3 * row["tpot_mean_s"], "tps": row["tps"], "speedup": row["speedup"],
                        **ask_row(row, s, base_caps.get(baseline_key(s), NO_BASELINE_ROW))})
            bar.update()
    finally:
        bar.close()
    return out


def swept(row: dict, s: sc.Scenario) -> dict:
    """The swept keys of the point a row ran (its summary row's columns of them) that the table's
    fixed columns do not show: what tells two rows of one design, steps and load apart (the
    baselines of a sweep over hardware, each `point` -1)."""
    from mtpsim.run_table import SHOWN_KEYS
    return {k: row[k] for k in s.point if k not in SHOWN_KEYS and k in row}


PEER_TABLE = {"design": "design", "steps": "S", "concurrency": "conc", "accept_length": "AL",
              "tpot_mean_ms": "TPOT ms", "aic_tpot_ms": "aic TPOT ms", "tps": "TPS", "aic_tps": "aic TPS",
              "speedup": "speedup", "aic_speedup": "aic speedup"}


# compare's other columns, in peer.csv alone; the rest of a row are its swept keys
PEER_COLUMNS = {"point", "aic_tps_per_user", "aic_per_user_speedup", "aic_version", "note"}


def report(rows: list[dict], seeded: bool = False) -> str:
    """The side-by-side table `mtpsim run --peer` prints: mtpsim's mean TPOT (the statistic
    aiconfigurator estimates), tokens/s and speedup, aiconfigurator's beside each, and the swept
    keys that tell its points apart (as run's table labels them), then the release its tables are
    and, once each, why a row has no answer. `seeded`: the run's points ran over several seeds,
    and mtpsim's figures here are each one's first seed (run.first_rows), not the table's means."""
    from mtpsim.rows import Table, key_labels, to_string
    from mtpsim.run_table import number
    keys = list(dict.fromkeys(k for r in rows for k in r if k not in PEER_TABLE and k not in PEER_COLUMNS))
    table = Table.of_rows([{**{k: r[k] for k in PEER_TABLE}, **{k: r.get(k) for k in keys}} for r in rows])
    table.rename({**PEER_TABLE, **key_labels(keys, taken=PEER_TABLE.values())})
    versions = sorted({r["aic_version"] for r in rows if r["aic_version"]})
    head = (f"aiconfigurator {peer.VERSION} beside mtpsim (its `cli estimate`, aggregated serving"
            f"{', tables of ' + ', '.join(versions) if versions else ''}; accept length: mtpsim's"
            f"{'; mtpsim: each point run on its first seed, not the means above' if seeded else ''}):")
    notes = [f"- {n}" for n in dict.fromkeys(r["note"] for r in rows if r["note"])]
    return "\n".join([head, to_string(table, number, na_rep="-"),
                      *(["notes (a row with - has no answer):", *notes] if notes else [])])


def write_csv(rows: list[dict], path) -> None:
    """peer.csv: compare's rows, every column."""
    from mtpsim.rows import Table
    from mtpsim.rows import write_csv as write
    write(Table.of_rows(rows), path)


def search_beside(points: list[sc.Scenario], rows: pd.DataFrame, chosen: pd.Series, folder: Path) -> list[dict]:
    """aiconfigurator beside the chosen point and the best `none` point under the targets (where
    the chosen one speculates), written to peer.csv."""
    picked = [chosen]
    plain = rows[rows.meets_targets & (rows.design == BASELINE)]
    if chosen.design != BASELINE and len(plain):
        picked.append(plain.loc[plain.tps_per_gpu.idxmax()])
    beside = compare([(row.to_dict(), points[int(row.point)]) for row in picked], progress=False)
    write_csv(beside, folder / "peer.csv")
    return beside


def recommend_picks(points: list[sc.Scenario], summary: pd.DataFrame, table: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """aiconfigurator asked every setting of the grid at every batch (peer_compare.py; each point
    with the accept length mtpsim ran), and its own TPS pick per batch beside mtpsim's: (one row
    per batch: mtpsim's steps and speedup, aiconfigurator's, `none` winning its ties as in
    best_by_batch; every asked row)."""
    key = ["design", "steps", "topk", "concurrency"]
    first = {}
    for p in points:  # a setting's first seed: aiconfigurator has no seeds
        first.setdefault((p.speculative.design, p.speculative.steps if p.speculative.design != BASELINE else 0,
                          p.speculative.topk if p.speculative.design != BASELINE else 1, p.workload.concurrency), p)
    rows = summary.assign(point=range(len(summary)))
    paired = [(r, first[tuple(r[k] for k in key)]) for r in rows.to_dict("records") if tuple(r[k] for k in key) in first]
    asked = compare(paired)
    peer = pd.DataFrame(asked).assign(topk=[r["topk"] for r, _ in paired])
    picks = []
    for batch, runs in peer.groupby("concurrency", sort=True):
        runs = runs.sort_values(["steps", "topk"], kind="stable")
        none = runs[runs.design == BASELINE].aic_tps
        best = runs.loc[runs.aic_tps.idxmax()] if runs.aic_tps.notna().any() else None
        mine = table[table.batch == batch].iloc[0]
        picks.append({"batch": int(batch), "S (TPS)": int(mine.tps_steps), "speedup": mine.speedup,
                      "aic S (TPS)": int(best.steps) if best is not None else float("nan"),  # no answer: -
                      "aic speedup": best.aic_tps / none.iloc[0] if best is not None and len(none) else float("nan")})
    return pd.DataFrame(picks), asked


def recommend_report(picks: pd.DataFrame, asked: list[dict]) -> str:
    """The per-batch picks of both tools, aiconfigurator's break-even batch, and the notes (why a
    setting has no answer, what it prices differently), once each."""
    from mtpsim import peer
    lost = picks[picks["aic S (TPS)"] == 0]
    even = int(lost.batch.min()) if len(lost) else None
    answered = picks[picks["aic S (TPS)"].notna()]
    if even is None:  # speculation won at every batch it answered, or it answered none
        even = "- (no answer at any batch)" if answered.empty else \
            f"none within the range (speculation wins up to {int(answered.batch.max())})"
    versions = sorted({r["aic_version"] for r in asked if r["aic_version"]})
    notes = [f"- {n}" for n in dict.fromkeys(r["note"] for r in asked if r["note"])]
    text = picks.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}")
    return "\n".join([f"aiconfigurator {peer.VERSION} on the same grid (its `cli estimate`"
                      f"{', tables of ' + ', '.join(versions) if versions else ''}; accept lengths: mtpsim's), "
                      "each tool's TPS pick:", text,
                      f"aiconfigurator's break-even batch: {even}",
                      *(["notes:", *notes] if notes else [])])
