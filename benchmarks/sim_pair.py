"""The issue-13 pair: nextn S=3 and its none baseline, 1000 requests x 1000 tokens, concurrency 64,
DeepSeek-V3 on 8xH200 (calibrated h200-sglang), in one process: each simulate's wall time (the
first includes loading the profile, ~0.26 s since the table build was vectorized, ~0.85 s before;
the second reuses it).

    .venv/bin/python benchmarks/sim_pair.py

Measured 2026-12-01 on this project's 2-core machine, quiet, median of 3 (target: pair < 1 s):
    046f31c (before issue 13)      nextn 2.58 s, none 2.24 s, pair 4.82 s (two profile loads)
    after the engine work          nextn 2.24 s, none 1.05 s, pair 3.29 s
    + kv slices in interpolate     nextn 2.12 s, none 0.96 s, pair 3.08 s
    + no slowest-group max for one nextn 2.06 s, none 0.92 s, pair 2.98 s
Measured 2026-12-01, the same 2-core machine, shared (load ~0.8), median of 3:
    before the speed pass (e599bf3) nextn 2.04 s, none 0.92 s, pair 2.96 s
    + vectorized profile load      nextn 1.43 s, none 0.89 s, pair 2.32 s (load 0.85 s -> 0.26 s)
    + pass plans per batch size    nextn 1.24 s, none 0.78 s, pair 2.03 s
"""

from __future__ import annotations

import copy
import time

from mtpsim.scenario import validate
from mtpsim.sim import simulate

NEXTN = {"name": "speed", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
         "speculative": {"design": "nextn", "steps": 3}, "acceptance": {"per_depth": [0.85, 0.75, 0.65]},
         "workload": {"arrival": "closed", "concurrency": 64, "num_requests": 1000, "input_len": 1024,
                      "output_len": 1000},
         "engine": {"max_running_requests": 256}}


def main() -> None:
    none = copy.deepcopy(NEXTN)
    none["speculative"], none["acceptance"] = {"design": "none"}, {}
    walls, tps = [], []
    for data in (NEXTN, none):
        start = time.perf_counter()
        result = simulate(validate(data))
        walls.append(time.perf_counter() - start)
        tps.append(float(result.summary["tps"].iloc[0]))
    print(f"nextn {walls[0]:.2f} s, none {walls[1]:.2f} s, pair {sum(walls):.2f} s, "
          f"simulated TPS {tps[0]:.1f} / {tps[1]:.1f}")


if __name__ == "__main__":
    main()
