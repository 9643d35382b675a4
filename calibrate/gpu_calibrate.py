#!/usr/bin/env python3
"""Calibrate a CUDA GPU (written for one H200): the full grid in one run, well under 8 minutes.

    python calibrate/gpu_calibrate.py                      # -> mtpsim/data/profiles/h200
    python calibrate/gpu_calibrate.py --out DIR --quick    # the thinned grid, a smoke test
    python calibrate/gpu_calibrate.py --dry-run            # anywhere, no GPU: the plan and its time

Runs `mtpsim calibrate --device cuda` (bf16, CUDA events, graphs for ops under 1 ms) from this
checkout, so copy the repository to the GPU machine (torch with CUDA must be importable there).
The dry run counts the grid's points after the per-point limits and estimates the wall time
from the H200's catalog ceilings: each point's op time x repeats + a fixed cost per point
(inputs, graph capture), plus whole layers.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUDGET_S = 8 * 60
PER_POINT_S = 0.04       # inputs, warm-up, graph capture per point: measured on an H200 on
                         # 2026-12-04, the quick grid's 430 shapes in 19 s (calibrate/README.md)
TIME_PER_POINT_S = 0.01  # timing.TARGET_S["cuda"]: time spent repeating one point


def plan() -> tuple[dict, float]:
    """Points per family and an estimated wall time on an H200."""
    from mtpsim.calibration import grid as G
    from mtpsim.calibration.command import HOLDOUT_PER_CONFIG, LIMITS
    from mtpsim.catalog import load_hardware
    from mtpsim.costs.roofline import RooflineCosts
    roof = RooflineCosts(load_hardware("h200"))
    counts, total = {}, 0.0
    for c in G.grid("cuda", quick=False):
        points = list(c.points()) + G.holdout(c, HOLDOUT_PER_CONFIG[c.family])
        for p in points:
            if c.family == "moe" and not p["top_k"] <= p["touched"] <= p["tokens"] * p["top_k"]:
                continue
            op = G.op_of(c.family, p, "bf16")
            if op.flops > LIMITS["cuda"]["flops"] or op.bytes > LIMITS["cuda"]["bytes"]:
                continue
            t = max(roof.compute_s(op), roof.memory_s(op))
            total += PER_POINT_S + max(TIME_PER_POINT_S, 7 * t)
            counts[c.family] = counts.get(c.family, 0) + 1
    layers = G.layer_grid("cuda", quick=False)
    counts["layers"] = len(layers)
    return counts, total + len(layers) * 0.2 + 30  # + pool, ceilings, launch costs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="mtpsim/data/profiles/h200")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the estimated time; run nothing")
    a = ap.parse_args()
    if a.dry_run:
        counts, est = plan()
        print("points per family:", ", ".join(f"{k} {v}" for k, v in counts.items()))
        print(f"estimated {est / 60:.1f} min on an H200 (budget {BUDGET_S / 60:.0f} min)")
        return 0 if est < BUDGET_S else 1
    import torch
    if not torch.cuda.is_available():
        print("gpu_calibrate: no CUDA device visible to torch", file=sys.stderr)
        return 2
    from mtpsim.calibration.command import main as calibrate
    return calibrate(argparse.Namespace(device="cuda", quick=a.quick, out=a.out, threads=None))


if __name__ == "__main__":
    sys.exit(main())
