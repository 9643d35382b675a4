"""How well the calibrated cost model predicts measurements it was not fitted on.

    .venv/bin/python benchmarks/calibration_fit.py [mtpsim/data/profiles/cpu]

Two checks, both on times measured by the same `mtpsim calibrate` run as the profile:
- held-out op shapes (`holdout/<family>.csv`: shapes between the grid's values, never used by
  the model): median and worst |predicted / measured - 1| per op family and kind;
- whole layers (`layers.csv`): the sum of the layer's ops as the simulator prices them (with the
  layer glue fitted on the other widths) against the measured layer (MLA + MoE, GQA + dense,
  SWA + dense, frozen-KV assistant layer), on the held-out width (costs/layer.py HELDOUT_SCALE) and on
  the training widths; `ops only` leaves the glue out.
Targets on CPU: median <= 10% on held-out op shapes, <= 15% on whole layers.
Torch is not needed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import yaml

from mtpsim.calibration.grid import op_of
from mtpsim.catalog import load_hardware
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.layer import HELDOUT_SCALE, whole_layer_ops
from mtpsim.costs.profile import MEASURED_BY_CALIBRATE as FAMILIES

HARDWARE = {"cpu": "cpu", "cuda": "h200"}


def op_errors(costs: CalibratedCosts, folder: Path, dtype: str) -> pd.DataFrame:
    rows = []
    for family in FAMILIES:
        path = folder / "holdout" / f"{family}.csv"
        if not path.is_file():
            continue
        for r in pd.read_csv(path).to_dict("records"):
            t = costs.time(op_of(family, r, dtype), graphs=False)
            rows.append({"family": family, "kind": r.get("kind", ""), "source": t.source,
                         "measured_s": r["time_s"], "predicted_s": t.total_s})
    return _with_error(pd.DataFrame(rows))


def layer_errors(costs: CalibratedCosts, folder: Path, dtype: str, glue: bool = True) -> pd.DataFrame:
    rows = []
    for r in pd.read_csv(folder / "layers.csv").to_dict("records"):
        times = [costs.time(op, graphs=False) for op in whole_layer_ops(r, dtype, glue)]
        split = "held-out" if abs(r["scale"] - HELDOUT_SCALE) < 1e-9 else "train"
        rows.append({"family": f"layer {split}" if glue else "ops only", "kind": r["layer"], "scale": r["scale"],
                     "batch": r["batch"], "q": r["q"],
                     "kv": r["kv"], "source": "+".join(sorted({t.source for t in times})),
                     "measured_s": r["time_s"], "predicted_s": sum(t.total_s for t in times)})
    return _with_error(pd.DataFrame(rows))


def _with_error(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(error=df.predicted_s / df.measured_s - 1, abs_error=(df.predicted_s / df.measured_s - 1).abs())


def summary(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["family", "kind"], sort=False)
    out = g.abs_error.agg(n="size", median="median", worst="max")
    out["bias"] = g.error.median()
    out["calibrated_share"] = g.source.agg(lambda s: (s == "calibrated").mean())
    return out.reset_index()


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "mtpsim/data/profiles/cpu")
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    costs = CalibratedCosts.from_profile(folder, load_hardware(HARDWARE[meta["device"]]))
    ops, layers = op_errors(costs, folder, meta["dtype"]), layer_errors(costs, folder, meta["dtype"])
    bare = layer_errors(costs, folder, meta["dtype"], glue=False)
    fmt = {"display.width": 160, "display.float_format": lambda x: f"{x:.3f}"}
    with pd.option_context(*[x for kv in fmt.items() for x in kv]):
        print(f"profile {folder}: {meta['device_name']}, {meta['dtype']}, {meta['threads']} thread(s), {meta['date']}\n")
        print("held-out op shapes: |predicted / measured - 1|")
        print(summary(ops).to_string(index=False))
        print(f"\nall held-out ops: median {ops.abs_error.median():.3f}, worst {ops.abs_error.max():.3f} (n={len(ops)})")
        print("\nwhole layers: sum of ops (+ fitted glue) vs measured layer")
        print(summary(pd.concat([layers, bare])).to_string(index=False))
        held = layers[layers.family == "layer held-out"]
        print(f"\nheld-out layers: median {held.abs_error.median():.3f}, worst {held.abs_error.max():.3f} (n={len(held)})")
        print(f"all layers: median {layers.abs_error.median():.3f}, worst {layers.abs_error.max():.3f} (n={len(layers)}); "
              f"ops only: median {bare.abs_error.median():.3f}")
        worst = layers.sort_values("abs_error").tail(5)
        print("\nworst layers:\n" + worst.drop(columns=["family", "abs_error"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
