"""Memory flat in a replayed trace (issue 22): a 1M-request Azure-format trace, its wall time and peak RSS.

  .venv/bin/python benchmarks/trace_replay.py                      # 1,000,000 requests (a few minutes)
  .venv/bin/python benchmarks/trace_replay.py --requests 100000 --no-progress
  .venv/bin/python benchmarks/trace_replay.py --file-rows 10000000  # a 10M-row file, the first 1M replayed

Bar: a 1,000,000-request Azure-format replay runs in under 500 MB peak RSS (ru_maxrss of this
process, imports and the catalog included). The trace is written first (synthetic: Poisson
arrivals at --rate, lognormal lengths as benchmarks/memory_flat.py draws them, in the
`TIMESTAMP,ContextTokens,GeneratedTokens` layout of AzureLLMInferenceTrace_*.csv) into a
temporary folder by a child process, outside the measured part; mtpsim/tracefiles then
streams it in chunks, once to check and count it and once to replay it, reading no further
than the requests replayed. Prints numbers, asserts nothing.
"""
from __future__ import annotations

import argparse
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from mtpsim.scenario import validate
from mtpsim.sim import simulate

ROWS_PER_WRITE = 500_000


def write_azure_trace(path: Path, rows: int, rate_per_s: float, seed: int = 0) -> None:
    """`rows` requests in the Azure layout, written in blocks (the writer stays small too)."""
    rng, start, t = np.random.default_rng(seed), pd.Timestamp("2023-11-16 18:15:46"), 0.0
    with open(path, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for lo in range(0, rows, ROWS_PER_WRITE):
            n = min(ROWS_PER_WRITE, rows - lo)
            times = t + np.cumsum(rng.exponential(1.0 / rate_per_s, n))
            t = float(times[-1])
            stamps = (start + pd.to_timedelta(times, unit="s")).strftime("%Y-%m-%d %H:%M:%S.%f")
            inputs = np.clip(np.rint(rng.lognormal(5.43, 0.47, n)), 16, 2048).astype(int)
            outputs = np.clip(np.rint(rng.lognormal(3.35, 0.47, n)), 2, 256).astype(int)
            pd.DataFrame({"t": stamps, "i": inputs, "o": outputs}).to_csv(f, header=False, index=False)


def scenario(path: Path, num_requests: int):
    """Llama-3.1-8B with its EAGLE-3 draft on one H100, roofline-priced, the trace's first N requests."""
    return validate({
        "name": "trace-replay", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
        "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth": [0.8, 0.6, 0.4]},
        "workload": {"arrival": "trace", "trace": {"path": str(path), "format": "azure", "max_requests": num_requests}},
    })


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=1_000_000, help="requests replayed")
    p.add_argument("--file-rows", type=int, default=None, help="rows in the trace file (default: --requests)")
    p.add_argument("--rate", type=float, default=60.0, help="arrivals per second in the written trace")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "AzureLLMInferenceTrace_synthetic.csv"
        started = time.perf_counter()
        with ProcessPoolExecutor(1) as writer:  # in a child process: its memory is not this one's peak
            writer.submit(write_azure_trace, path, args.file_rows or args.requests, args.rate).result()
        print(f"wrote {path.stat().st_size / 1e6:.0f} MB ({args.file_rows or args.requests:,} rows) in "
              f"{time.perf_counter() - started:.1f} s (not measured below)")
        rss_before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        s = scenario(path, args.requests)  # validating scans the trace once (checks and counts it)
        scanned_s = time.perf_counter() - started
        r = simulate(s, progress=not args.no_progress)
        wall_s = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = r.summary.iloc[0]
    print(f"{int(row.num_requests):,} Azure-format requests at {row.rate_per_s:.1f}/s "
          "(nextn S=3, llama-3.1-8b, 1x h100-sxm, roofline)")
    print(f"wall {wall_s:.1f} s (validating and scanning the trace {scanned_s:.1f} s); peak RSS {peak_mb:.0f} MB "
          f"(before {rss_before_mb:.0f} MB); {int(row.requests_kept):,} request rows kept of "
          f"{int(row.requests_total):,}")
    print(f"TPS {row.tps:.0f}, TTFT p50 {row.ttft_p50_s * 1e3:.2f} ms p99 {row.ttft_p99_s * 1e3:.2f} ms, "
          f"TPOT p50 {row.tpot_p50_s * 1e3:.2f} ms, accept length {row.accept_length:.2f}")


if __name__ == "__main__":
    main()
