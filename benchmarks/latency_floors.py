"""How well the roofline's fitted latency floors predict a GPU they were not fitted on.

    .venv/bin/python benchmarks/latency_floors.py            # the held-out table
    .venv/bin/python benchmarks/latency_floors.py --write    # also refit on all three GPUs and
                                                             # rewrite mtpsim/data/latency_floors.yaml

Each of H100 SXM, H200 and B200 is held out in turn: the floor model (mtpsim/costs/floors.py) is
fitted on the other two GPUs' SGLang profiles (mtpsim/data/profiles/<gpu>-sglang, NVIDIA's measured
kernel tables converted from aiconfigurator-core) and its |predicted / measured - 1| reported on
the held-out GPU's rows, per op group: median and p90 over decode-sized shapes (m, tokens or
batch <= 256; all-reduces up to 4 MiB) and over all rows. `datasheet` is the plain roofline without
floors as RooflineCosts priced these ops before (catalog efficiencies, launch cost per kernel in a
CUDA graph, link latency + ring bytes over the link). Then the committed floors against GPUs they
were never fitted on (GB200, GB300, B300: UNSEEN), the error a GPU priced by the floors alone
(MI300X, MI325X, MI355X) can expect at best. Torch is not needed; no timing asserts.
"""
from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mtpsim.catalog import load_hardware  # noqa: E402
from mtpsim.costs import floors as F  # noqa: E402
from mtpsim.costs import floors_fit as FF  # noqa: E402

GPUS = ("h100-sxm", "h200", "b200")
ENGINE = "sglang"
# GPUs the committed floors were never fitted on, with measured tables of their own: how far the
# floors alone (what prices MI300X, MI325X and MI355X) land from a new GPU's measurements
UNSEEN = ("gb200", "gb300", "b300")


def held_out(rows: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """Per held-out GPU: errors of the floors fitted on the other two, and of the datasheet roofline."""
    tables, fits = [], {}
    for gpu in GPUS:
        train = pd.concat([rows[g] for g in GPUS if g != gpu], ignore_index=True)
        groups = FF.fit_rows(FF.subsample(train))
        fits[gpu] = groups
        test = rows[gpu]
        floors = FF.errors(test, FF.floors_predict(groups, test))
        plain = FF.errors(test, FF.datasheet_predict(load_hardware(gpu), test))
        tables.append(floors.merge(plain, on=["group", "rows"], suffixes=("", "_datasheet")).assign(held_out=gpu))
    return pd.concat(tables, ignore_index=True), fits


def unseen() -> pd.DataFrame:
    """The committed floors (fitted on GPUS) against each UNSEEN GPU's measured rows."""
    groups = F.committed_floors().groups
    tables = []
    for gpu in UNSEEN:
        test = FF.profile_rows(f"{gpu}-{ENGINE}")
        floors = FF.errors(test, FF.floors_predict(groups, test))
        plain = FF.errors(test, FF.datasheet_predict(load_hardware(gpu), test))
        tables.append(floors.merge(plain, on=["group", "rows"], suffixes=("", "_datasheet")).assign(held_out=gpu))
    return pd.concat(tables, ignore_index=True)


def print_table(df: pd.DataFrame) -> None:
    cols = ["held_out", "group", "rows", "small_median", "small_p90", "small_median_datasheet", "small_p90_datasheet",
            "median", "p90", "median_datasheet", "p90_datasheet"]
    out = df[cols].copy()
    for c in cols[3:]:
        out[c] = (100 * out[c]).map(lambda v: f"{v:.0f}%")
    out.columns = ["held out", "group", "rows", "small med", "small p90", "small med (ds)", "small p90 (ds)",
                   "all med", "all p90", "all med (ds)", "all p90 (ds)"]
    print(out.to_string(index=False))


def summary(df: pd.DataFrame) -> dict:
    """held-out GPU -> group -> rounded errors (for the yaml's provenance)."""
    out: dict = {}
    for r in df.to_dict("records"):
        out.setdefault(r["held_out"], {})[r["group"]] = {
            k: round(float(r[k]), 3) for k in ("small_median", "small_p90", "median", "p90",
                                                "small_median_datasheet", "small_p90_datasheet")}
    return out


def write_yaml(rows: dict[str, pd.DataFrame], errors: pd.DataFrame, path: Path = F.FLOORS_PATH) -> dict:
    groups = FF.fit_rows(FF.subsample(pd.concat(rows.values(), ignore_index=True)))
    doc = {
        "model": {"kernel": "floor_s + per_item_s * items + max(flops / (peak(dtype) * eff_flops), bytes / (bw * eff_bandwidth))",
                  "collective": "alpha_s + alpha_per_doubling_s * log2(ranks / 2) + share * bytes / (link_bw * eff_link)",
                  "items": "attention: batch x kv_heads per GPU; moe: routed token copies (tokens x top_k / ep)",
                  "peaks": "the hardware catalog's datasheet peak_flops, memory_bandwidth_bytes_per_s, "
                           "link_bandwidth_bytes_per_s"},
        "fitted_on": [f"mtpsim/data/profiles/{g}-{ENGINE}" for g in GPUS],
        "engine": ENGINE,
        "source": "NVIDIA-measured kernel tables from aiconfigurator-core 0.12.0, converted by mtpsim.calibration.aiconfigurator",
        "date": datetime.date.today().isoformat(),
        "command": "python benchmarks/latency_floors.py --write",
        "fit": f"weighted least squares on log time; decode-sized rows (<= {FF.SMALL} tokens) weigh {FF.SMALL_WEIGHT:g}x; "
               f"at most {FF.MAX_ROWS} rows per GPU and group (seeded subsample)",
        "held_out_abs_rel_error": summary(errors),
        "groups": {k: {kk: float(f"{vv:.4g}") for kk, vv in v.items()} for k, v in groups.items()},
    }
    header = ("# Roofline latency floors fitted on measured GPU kernel tables (mtpsim/costs/floors.py).\n"
              "# Written by `python benchmarks/latency_floors.py --write`; do not edit by hand.\n"
              "# groups: the parameters, fitted on all three GPUs' SGLang profiles. held_out_abs_rel_error:\n"
              "# |predicted / measured - 1| on each GPU when fitted on the other two (small_*: decode-sized\n"
              "# shapes; *_datasheet: the plain roofline without floors).\n")
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=120))
    return groups


def main(argv: list[str]) -> None:
    t0 = time.time()
    rows = {g: FF.profile_rows(f"{g}-{ENGINE}") for g in GPUS}
    errors, fits = held_out(rows)
    print(f"Latency floors, held-out GPU: fitted on the other two GPUs' {ENGINE} profiles; |predicted/measured - 1|.")
    print("small: decode-sized shapes (m / tokens / batch <= 256; all-reduce <= 4 MiB); (ds): datasheet roofline, no floors.\n")
    print_table(errors)
    print(f"\nGPUs never fitted on: the committed floors (fitted on {', '.join(GPUS)}) against their measured rows.\n")
    print_table(unseen())
    for gpu, groups in fits.items():
        print(f"\nfitted without {gpu}:")
        for name, p in groups.items():
            print(f"  {name:14s} " + "  ".join(f"{k}={v:.3g}" for k, v in p.items()))
    if "--write" in argv:
        groups = write_yaml(rows, errors)
        print(f"\nwrote {F.FLOORS_PATH} (fitted on all of {', '.join(GPUS)}):")
        for name, p in groups.items():
            print(f"  {name:14s} " + "  ".join(f"{k}={v:.3g}" for k, v in p.items()))
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
