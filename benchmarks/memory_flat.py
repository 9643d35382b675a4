"""Memory flat in requests (issue 13 §2): one long Poisson run, its wall time and peak RSS.

  .venv/bin/python benchmarks/memory_flat.py                  # 1,000,000 requests (a few minutes)
  .venv/bin/python benchmarks/memory_flat.py --requests 100000 --no-progress
  .venv/bin/python benchmarks/memory_flat.py --disaggregated  # the same load on 1P1D pools (sim/disagg.py)

Bar: a 1,000,000-request Poisson trace runs in under 500 MB peak RSS (ru_maxrss of this process,
imports and the catalog included). Past `simulate`'s max_request_rows (100,000) request rows
stream into running sums and log histograms, as iteration rows past max_iteration_rows do; the
arrival plan is three numpy arrays. Prints numbers, asserts nothing.
"""
from __future__ import annotations

import argparse
import resource
import time

from mtpsim.scenario import validate
from mtpsim.sim import simulate


def scenario(num_requests: int, rate_per_s: float, disaggregated: bool = False):
    """Llama-3.1-8B with its EAGLE-3 draft on one H100 (or a prefill H100 and a decode H100 on one
    NVLink board), roofline-priced, short chat turns."""
    pools = {"disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}} if disaggregated else {}
    return validate({**pools,
        "name": "memory-flat", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth": [0.8, 0.6, 0.4]},
        "workload": {"arrival": "poisson", "rate_per_s": rate_per_s, "num_requests": num_requests,
                     "input_len": {"dist": "lognormal", "mean": 256, "std": 128, "min": 16, "max": 2048},
                     "output_len": {"dist": "lognormal", "mean": 32, "std": 16, "min": 2, "max": 256}},
    })


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--rate", type=float, default=60.0, help="arrivals per simulated second")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--disaggregated", action="store_true", help="1P1D pools instead of one aggregated GPU")
    args = p.parse_args()
    s = scenario(args.requests, args.rate, args.disaggregated)
    rss_before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    r = simulate(s, progress=not args.no_progress)
    wall_s = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = r.summary.iloc[0]
    where = "1P1D h100-sxm pools" if args.disaggregated else "1x h100-sxm"
    print(f"{args.requests:,} Poisson requests at {args.rate:g}/s (nextn S=3, llama-3.1-8b, {where}, roofline)")
    print(f"wall {wall_s:.1f} s; peak RSS {peak_mb:.0f} MB (before simulate {rss_before_mb:.0f} MB); "
          f"{int(row.requests_kept):,} request rows kept of {int(row.requests_total):,}, "
          f"{int(row.iterations_kept):,} iteration rows of {int(row.iterations_total):,}")
    print(f"TPS {row.tps:.0f}, TTFT p50 {row.ttft_p50_s * 1e3:.2f} ms p99 {row.ttft_p99_s * 1e3:.2f} ms, "
          f"TPOT p50 {row.tpot_p50_s * 1e3:.2f} ms, accept length {row.accept_length:.2f}")


if __name__ == "__main__":
    main()
