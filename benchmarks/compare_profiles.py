"""Two profiles of one GPU, op by op: the median time ratio per op family on the shapes both hold.

Run: .venv/bin/python benchmarks/compare_profiles.py A B      (profile names or folders)

e.g. an H200 profile measured here by `calibrate/gpu_calibrate.py` against the one converted from
aiconfigurator's database (`h200` against `h200-sglang`), or two engines' tables of one GPU
(`h200-sglang` against `h200-trtllm`). Each row of A's tables is priced by B's cost model; a row
counts as shared when B prices it from its own measured grid (source `calibrated`: inside B's
measured range, same dtype and widths), so no extrapolation enters the ratio. Prints, per family
(and attention kind), how many shapes are shared and the median, p10 and p90 of time_B / time_A.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mtpsim.calibration.grid import op_of  # noqa: E402
from mtpsim.catalog import load_hardware  # noqa: E402
from mtpsim.costs.calibrated import CalibratedCosts  # noqa: E402
from mtpsim.costs.profile import family_path, find_profile, held, profile_families, read_family  # noqa: E402
from mtpsim.costs.profile_meta import load_meta  # noqa: E402
from mtpsim.errors import ScenarioError  # noqa: E402

COMPARED = ("gemm", "attention", "moe", "allreduce", "alltoall")


def _folder(ref: str) -> Path:
    path = find_profile(ref)
    if path is None:
        raise ScenarioError(ref, "", "no such profile (a committed profile's name, or a folder holding meta.yaml)")
    return path


def rows_of(folder: Path, family: str) -> pd.DataFrame:
    return read_family(family_path(folder, family), family)


def compare(a: Path, b: Path) -> pd.DataFrame:
    """One row per (family, kind): shared shapes and the time ratio B / A."""
    meta_a = load_meta(a / "meta.yaml")
    dtype = meta_a.get("dtype") or "bf16"
    hw = load_hardware(held(b).device)
    costs_b = CalibratedCosts.from_profile(b, hw)
    held_b = set(profile_families(load_meta(b / "meta.yaml")))
    out = []
    for family in COMPARED:
        if family not in held_b or family not in profile_families(meta_a):
            continue
        ratios: dict[str, list[float]] = {}
        for r in rows_of(a, family).to_dict("records"):
            # columns other kinds leave empty read as floats: a shape's integers back to int
            r = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in r.items()}
            op = _op(family, r, dtype)
            if op is None:
                continue
            t = costs_b.time(op, graphs=True)
            if t.source != "calibrated":
                continue
            kind = r.get("kind", r.get("dtype", "")) if family != "allreduce" else f"{r['ranks']} ranks"
            ratios.setdefault(str(kind), []).append(t.total_s / r["time_s"])
        for kind, values in ratios.items():
            v = np.array(values)
            out.append({"family": family, "kind": kind, "shared shapes": len(v), "median B/A": np.median(v),
                        "p10": np.quantile(v, 0.1), "p90": np.quantile(v, 0.9)})
    return pd.DataFrame(out)


def _op(family: str, r: dict, dtype: str):
    from mtpsim.costs import ops as O
    if family == "allreduce":
        return O.Op("comm.allreduce", "allreduce", comm_bytes=r["bytes"], shape={"bytes": r["bytes"], "ranks": int(r["ranks"])})
    if family == "alltoall":
        return O.Op("comm.alltoall", "alltoall", comm_bytes=r["bytes"], kernels=2,
                    shape={"bytes": r["bytes"], "ranks": int(r["ranks"]), "tokens": r["tokens"],
                           "top_k": r["top_k"], "d": r["d"]})
    if family == "moe":  # per-GPU expert counts can fall below top_k (wide EP): the row's own shape
        return O.Op("moe.experts", "moe", flops=r["flops"], weight_bytes=r["bytes"], kernels=4, dtype=r["dtype"],
                    shape={k: r[k] for k in ("tokens", "num_experts", "top_k", "d", "inter", "touched", "dtype")})
    return op_of(family, r, dtype)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="the reference profile (ratios are B / A)")
    ap.add_argument("b")
    args = ap.parse_args()
    try:
        a, b = _folder(args.a), _folder(args.b)
        if held(a).device != held(b).device:
            raise ScenarioError(str(b), "device", f"measured on {held(b).device!r}, A on {held(a).device!r}")
        table = compare(a, b)
    except ScenarioError as exc:
        print(f"compare_profiles: error: {exc.message}", file=sys.stderr)
        return 2
    print(f"time in {b.name} / time in {a.name}, on the shapes both measured:\n")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}") if len(table) else "(no shared shapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
