"""Verification accuracy: predicted vs measured TPS for nextn / multi_layer / frozen_kv / none / block at
batch 1, 4 and 16 on this machine's device, with the committed profile (the fidelity bar: median
|TPS error| <= 5% on the profiled machine; the CPU target for now is 10%).

    .venv/bin/python benchmarks/verify_accuracy.py                 # CPU, ~3 minutes on 2 cores
    .venv/bin/python benchmarks/verify_accuracy.py --device cuda --batches 1 8 32 128 \
        --hidden-scale 0.25 --num-layers 4                          # calibrate/gpu_verify.sh

Each design runs its scenarios/verify/<model>-<design>-cpu.yaml with the sweep replaced by the
batches asked for; results land in --out (verify.csv per design, all.csv for the lot).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = {
    "nextn": "deepseek-v3-nextn-cpu.yaml",
    "multi_layer": "mimo-v2-flash-multi_layer-cpu.yaml",
    "frozen_kv": "gemma-4-e2b-frozen_kv-cpu.yaml",
    "none": "deepseek-v3-none-cpu.yaml",
    "block": "qwen3-8b-block-cpu.yaml",
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--designs", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    p.add_argument("--batches", nargs="+", type=int, default=[1, 4, 16])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    p.add_argument("--hidden-scale", type=float, help="override verify.hidden_scale")
    p.add_argument("--num-layers", type=int, help="override verify.num_layers")
    p.add_argument("--iterations", type=int, help="override verify.iterations")
    p.add_argument("--calibrate", action="store_true", help="measure a quick profile on the spot")
    p.add_argument("--out", default=f"runs/verify-accuracy-{time.strftime('%Y%m%d-%H%M%S')}")
    args = p.parse_args(argv)

    from mtpsim.verify.command import main as verify
    out = Path(args.out)
    (out / "scenarios").mkdir(parents=True, exist_ok=True)
    tables = []
    for design in args.designs:
        data = yaml.safe_load((ROOT / "scenarios" / "verify" / SCENARIOS[design]).read_text())
        data["sweep"] = {"workload.concurrency": args.batches}
        data["verify"]["device"] = args.device
        for key, value in (("hidden_scale", args.hidden_scale), ("num_layers", args.num_layers),
                           ("iterations", args.iterations)):
            if value is not None:
                data["verify"][key] = value
        path = out / "scenarios" / f"{design}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        verify(argparse.Namespace(scenario=str(path), sets=[], out=str(out / design), calibrate=args.calibrate))
        tables.append(pd.read_csv(out / design / "verify.csv"))
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(out / "all.csv", index=False)
    report(table)
    return 0


def report(table: pd.DataFrame) -> None:
    """Per design x batch: TPS error and each pass kind's error; then median and worst |TPS error|."""
    wide = table.pivot_table(index=["design", "batch"], columns="kind", values="rel_error", sort=False)
    wide = wide[[k for k in ("tps", "iteration_s", "draft_s", "verify_s", "extend_s") if k in wide]]
    print("\nrelative error (predicted - measured) / measured")
    with pd.option_context("display.float_format", lambda x: f"{x:+.1%}", "display.width", 160):
        print(wide.to_string())
    tps = table[table.kind == "tps"]
    print(f"\n|TPS error| over {len(tps)} runs: median {tps.rel_error.abs().median():.1%}, worst {tps.rel_error.abs().max():.1%}")
    if "rel_error_at_level" in tps:  # CPU: the machine's speed against the profile's, per design's run
        levels = ", ".join(f"{d} {v:.2f}" for d, v in tps.groupby("design", sort=False).machine_level.first().items())
        print(f"with the machine's level divided out ({levels}): median {tps.rel_error_at_level.abs().median():.1%}, "
              f"worst {tps.rel_error_at_level.abs().max():.1%}")


if __name__ == "__main__":
    sys.exit(main())
