"""Two engines' GEMM tables for one GPU, shape by shape: do their collectors time the same kernel alike?

Run: .venv/bin/python benchmarks/gemm_collectors.py [--system h100_sxm] [--engines vllm sglang] [--dtype bfloat16]
     (needs aiconfigurator-core: pip install 'mtpsim[peer]')

aiconfigurator-core ships one GEMM table per (GPU, engine, engine version), each timed by that
engine's collector. Where two collectors time the same kernel (BF16: `torch.nn.functional.linear`,
cuBLAS, in both vLLM's and SGLang's), their times for a shape should agree; a steady ratio names a
difference in how they measured. vLLM's collector (`collector/vllm/collect_gemm.py`) leaves its
BF16 weights as `torch.empty` made them, where SGLang's fills them with `torch.randn`: data that
flips few bits draws less power and runs at higher clocks (docs/accuracy.md, the compute-bound lead).

Prints, per engine pair and bound class, the median ratio of the first engine's time over the
second's on the shapes both tables hold (a shape is compute-bound where the second table's rate is
above 60% of its best, memory-bound where below 10%), with quartiles, and each table's best rate.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def table(system: str, engine: str, dtype: str) -> tuple[pd.DataFrame, str]:
    """The newest GEMM table of `engine` for `system` (its rows of `dtype`), and its version."""
    import aiconfigurator_core
    root = Path(aiconfigurator_core.__file__).parent / "systems" / "data" / system / "gemm" / engine
    versions = sorted((p.parent.name for p in root.glob("*/gemm_perf.parquet")),
                      key=lambda v: [int(x) if x.isdigit() else -1 for x in v.replace("rc", ".").replace("post", ".").split(".")])
    if not versions:
        raise SystemExit(f"gemm_collectors.py: no {engine} GEMM table for {system} under {root}")
    df = pd.read_parquet(root / versions[-1] / "gemm_perf.parquet")
    return df[df.gemm_dtype == dtype][["m", "n", "k", "latency"]], versions[-1]


def compare(system: str, first: str, second: str, dtype: str) -> str:
    a, va = table(system, first, dtype)
    b, vb = table(system, second, dtype)
    both = a.merge(b, on=["m", "n", "k"], suffixes=("_a", "_b"))
    if both.empty:
        return f"{system} {dtype}: {first} {va} and {second} {vb} share no shape"
    both["ratio"] = both.latency_a / both.latency_b
    flops = 2.0 * both.m * both.n * both.k
    rate_a, rate_b = flops / (both.latency_a * 1e-3), flops / (both.latency_b * 1e-3)
    lines = [f"{system} {dtype}: {first} {va} over {second} {vb}, {len(both):,} shared shapes; "
             f"best rate {rate_a.max() / 1e12:,.0f} against {rate_b.max() / 1e12:,.0f} TFLOP/s"]
    for name, rows in (("compute-bound", both[rate_b > 0.6 * rate_b.max()]),
                       ("memory-bound", both[rate_b < 0.1 * rate_b.max()]), ("all", both)):
        q = rows.ratio.quantile([0.25, 0.5, 0.75])
        lines.append(f"  {name:>13}: median {q[0.5]:.3f} (quartiles {q[0.25]:.3f} / {q[0.75]:.3f}), {len(rows):,} shapes")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", nargs="+", default=["h100_sxm", "h200_sxm", "b200_sxm"])
    parser.add_argument("--engines", nargs=2, default=["vllm", "sglang"], metavar=("FIRST", "SECOND"))
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args(argv)
    try:
        import aiconfigurator_core  # noqa: F401 -- the tables live in its package
    except ImportError:
        print("gemm_collectors.py: aiconfigurator-core is not installed (pip install 'mtpsim[peer]')")
        return 0
    for system in args.system:
        print(compare(system, *args.engines, args.dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main())
