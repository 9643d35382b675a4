"""The issue-13 pair: nextn S=3 and its none baseline, 1000 requests x 1000 tokens, concurrency 64,
DeepSeek-V3 on 8xH200 (calibrated h200-sglang), in one process: each simulate's wall time (the
first includes loading the profile, ~0.12 s since the CSV reader parses bytes, ~0.14 s with tables
built on first use, ~0.26 s with the vectorized build, ~0.85 s before; the second reuses it).

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
Measured 2026-12-01, the same machine, shared (load ~0.7-1.1), median of 3, each commit of the
second speed pass (git archive of the commit, run as above):
    before it (8209339)                  nextn 1.26 s, none 0.80 s, pair 2.07 s
    + one simpy event per iteration      nextn 1.23 s, none 0.79 s, pair 2.03 s
    + attention kernels, frame memo      nextn 1.12 s, none 0.65 s, pair 1.78 s
    + fewer numpy calls per iteration    nextn 1.06 s, none 0.52 s, pair 1.58 s
    + PassCost, BatchLens named tuples   nextn 1.03 s, none 0.49 s, pair 1.52 s
    + MoE log work filled with log time  nextn 0.99 s, none 0.50 s, pair 1.48 s
    + request KV bytes per length        nextn 0.98 s, none 0.49 s, pair 1.48 s
    + a repeated attention core once     nextn 0.93 s, none 0.50 s, pair 1.42 s
    + price_lens' one-group path         nextn 0.91 s, none 0.49 s, pair 1.40 s
    + tables built on first use          nextn 0.80 s, none 0.52 s, pair 1.33 s
      (the pair's one full GC collection, ~0.03 s, moved from the nextn run to the none run)
Measured 2026-12-01, the same machine, shared (load ~0.8-1.0), median of 3, each commit of the
third speed pass (git archive of the commit, run as above):
    before it (66ebda2)                  nextn 0.80 s, none 0.52 s, pair 1.32 s
    + roofline rates once, OpTime tuple  nextn 0.78 s, none 0.50 s, pair 1.27 s
    + attention core without its Op      nextn 0.67 s, none 0.39 s, pair 1.05 s
    + Work a named tuple                 nextn 0.65 s, none 0.38 s, pair 1.03 s
    + fewest tokens left kept (S = 0)    nextn 0.62 s, none 0.37 s, pair 0.99 s
    + plan carries kernels and pricers   nextn 0.66 s, none 0.35 s, pair 1.01 s (noise: +-0.02 s)
    + acceptance by logical_and          nextn 0.62 s, none 0.34 s, pair 0.96 s
    + CSV bytes, numpy column checks     nextn 0.61 s, none 0.35 s, pair 0.96 s (load 0.14 -> 0.12 s)
    + Work.plus unpacks its tuples       nextn 0.62 s, none 0.35 s, pair 0.97 s
Measured 2026-12-05, the same machine, shared (load ~2.4; 4ece59a, the "Work.plus unpacks its
tuples" tree above, took 2.3-2.6 s for the pair here that day, at load ~1.4), the tree before
issue 23's pricing pass (cf6c016) and after it, one after the other: nextn 1.65 -> 1.10 s, none
1.21 -> 0.75 s, pair 2.86 -> 1.85 s (CPU seconds, least of 5 alternating runs: 2.70 -> 1.72 s).
What changed and where the rest goes: docs/speed.md.
Where the ~0.96 s goes (the same machine, shared, load ~0.9): profile load ~0.12 s (CSV ~0.08: gunzip ~0.03,
pandas' C parser ~0.045); ~40k decode passes at ~7.5 us (~0.30 s: the attention core's
CorePricer ~3 us, summing the rows ~1.1 us, plan, frame, sources and PassCost ~1.5 us, the rest
the call itself); their cold side, plans, pass frames and prefill chunks priced the plain way
~0.07 s; the engine with pricing stubbed out ~0.34 s (nextn ~32 us an iteration over 6.2k:
acceptance draw ~8 us, commit and records ~6 us, four pass loops, one simpy event; none ~8.7 us
over 16.1k); the pair's one full GC collection ~0.03 s; results ~0.025 s. What is left is spread
thin over Python calls and small numpy ops: no single piece above ~0.1 s.
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
