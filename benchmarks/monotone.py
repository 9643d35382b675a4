"""Physical monotonicity of the cost model across the catalog: more work never priced cheaper.

    .venv/bin/python benchmarks/monotone.py            # every target x measured GPU x engine, at the
                                                       # smallest tp that holds it (a few minutes)
    .venv/bin/python benchmarks/monotone.py --quick    # one engine (sglang), for a check in seconds

For each (target, GPU, engine) with a measured profile and a tp (1, 2, 4, 8; ep = tp for MoE)
whose weights fit, it prices the decode pass over batches 1..256 at 2,048 tokens of context, the
nextn verify pass over 2..8 tokens a request at batch 1 and 16 (where the model has MTP layers), and the
decode pass over contexts 0..16k at batch 8, and counts each step where the pass got cheaper by
more than 1%: a larger batch, a wider verify or a longer context costs at least as much on any
GPU. Prints the count per sweep and the worst steps with the ops that fell most, so a change to
the lookup code (costs/calibrated.py, tables.py, table_build.py) shows what it moves. No timing
asserts: tests/test_monotone_31.py and tests/test_moe_lookup.py pin the cases once found.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mtpsim import catalog, catalog_lookup  # noqa: E402
from mtpsim import scenario as sc  # noqa: E402
from mtpsim.costs import build_pricer  # noqa: E402
from mtpsim.designs import DesignShape, iteration_passes  # noqa: E402
from mtpsim.errors import ScenarioError  # noqa: E402
from mtpsim.memory import memory_budget  # noqa: E402
from mtpsim.pool_rule import pool_rule  # noqa: E402

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WIDTHS = (2, 3, 4, 5, 6, 7, 8)  # verify tokens a request: steps + 1
VERIFY_BATCHES = (1, 16)
CONTEXTS = (0, 256, 1024, 4096, 16384)
DROP = 0.01  # a step cheaper by more than this is counted


def targets() -> list[str]:
    return [n for n in catalog_lookup.names("models") if catalog.load_model(n).role == "target"]


def scenario(model: str, hardware: str, engine: str, tp: int, steps: int = 0):
    spec = catalog.load_model(model)
    moe = any(k.kind == "moe" for k in spec.ffn_kinds.values())
    data = {"name": "m", "model": model, "hardware": hardware, "engine": {"kind": engine},
            "parallel": {"tp": tp, "ep": tp if moe else 1},
            "speculative": {"design": "nextn", "steps": steps} if steps else {"design": "none"},
            "acceptance": {"per_depth": [0.8] * steps} if steps else {},
            "workload": {"concurrency": 1, "num_requests": 2, "input_len": 256, "output_len": 16}}
    return sc.validate(data)


def fits(s) -> bool:
    pricer = build_pricer(s)
    shape = DesignShape.of(s.speculative)
    return memory_budget(pricer, shape, pool_rule(s)).kv_budget_bytes > 0


def pass_ms(pricer, shape, batch: int, q: int, kv: int) -> tuple[float, dict]:
    cost = pricer.price(shape, np.full(batch, q), np.full(batch, kv), keep_ops=True)
    ops: dict = {}
    for op, t, count in cost.ops:
        ops[op.name] = ops.get(op.name, 0.0) + t.total_s * count
    return cost.time_s * 1e3, ops


def drops(label: str, points: list[tuple[str, float, dict]]) -> list[tuple]:
    """(relative drop, label, from, to, the op that fell most) for each step cheaper by > DROP."""
    out = []
    for (a, ta, oa), (b, tb, ob) in zip(points, points[1:]):
        if tb < ta * (1 - DROP):
            fell = min(ob, key=lambda k: ob[k] - oa.get(k, 0.0))
            out.append((1 - tb / ta, label, a, b, ta, tb, fell))
    return out


def audit(models: list[str], engines: tuple[str, ...]) -> tuple[dict, list]:
    counts = {"decode x batch": 0, "verify x width": 0, "decode x context": 0, "combinations": 0}
    found: list = []
    for model in models:
        for hw in catalog_lookup.names("hardware"):
            hardware = catalog.load_hardware(hw)
            for engine in engines:
                measured = engine in hardware.profiles or (engine == "sglang" and "default" in hardware.profiles)
                if not measured:  # a GPU priced by the roofline, or by another engine's tables, is not audited here
                    continue
                try:
                    tp = next(t for t in (1, 2, 4, 8) if fits(scenario(model, hw, engine, t)))
                except (StopIteration, ScenarioError):
                    continue
                counts["combinations"] += 1
                name = f"{model} {hw} {engine} tp{tp}"
                s = scenario(model, hw, engine, tp)
                pricer, decode = build_pricer(s), iteration_passes(DesignShape.of(s.speculative))[0]
                pts = [(f"batch {b}", *pass_ms(pricer, decode, b, 1, 2048)) for b in BATCHES]
                got = drops(f"{name} decode", pts)
                pts = [(f"context {c}", *pass_ms(pricer, decode, 8, 1, c)) for c in CONTEXTS]
                more = drops(f"{name} decode", pts)
                counts["decode x batch"] += len(got)
                counts["decode x context"] += len(more)
                found += got + more
                if catalog.load_model(model).mtp is None:
                    continue
                verifies = []
                for w in WIDTHS:
                    try:
                        sv = scenario(model, hw, engine, tp, steps=w - 1)
                    except ScenarioError:
                        break
                    shape = next(p for p in iteration_passes(DesignShape.of(sv.speculative)) if p.kind == "verify")
                    verifies.append((w, build_pricer(sv), shape))
                for batch in VERIFY_BATCHES:
                    pts = [(f"width {w}", *pass_ms(pricer, shape, batch, w, 2048)) for w, pricer, shape in verifies]
                    got = drops(f"{name} verify at batch {batch}", pts)
                    counts["verify x width"] += len(got)
                    found += got
    return counts, sorted(found, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sglang only")
    args = parser.parse_args()
    engines = ("sglang",) if args.quick else ("sglang", "vllm", "trtllm")
    counts, found = audit(targets(), engines)
    print(f"{counts['combinations']} (target, GPU, engine) combinations at the smallest tp that holds them")
    for sweep in ("decode x batch", "verify x width", "decode x context"):
        print(f"  {sweep}: {counts[sweep]} steps cheaper by more than {DROP:.0%}")
    if found:
        print("\nworst steps (drop, pass, from -> to, ms, the op that fell most):")
        for drop, label, a, b, ta, tb, op in found[:15]:
            print(f"  {drop:6.1%}  {label}: {a} -> {b}  {ta:.3f} -> {tb:.3f} ms  ({op})")


if __name__ == "__main__":
    main()
