"""What a large sweep costs a per-point command before it prices anything: `mtpsim cost` of a
DeepSeek-V3 8xH200 scenario (scenarios/deepseek-v3-h200-steps.yaml, priced by its measured
profile) swept over speculative.steps 1-4 and workload.concurrency 1..N/4, as a whole process.
`cost` prices the first point alone and validates every point (scenario.load, as `run` does its
points; `search` validates each layout and point it builds the same way, resolve.py `validate`),
so its time is the sweep's per-point load. Prints the median wall of `--repeats` runs and the
points per second; asserts nothing.

  MTPSIM_CACHE_DIR=<a folder of your own> .venv/bin/python benchmarks/sweep_cost.py [--points 10000] [--repeats 3]

Measured 2026-12-05 on the 2-core machine shared with another job (load 2.2-3.8), neither tree
byte-compiled (each run compiles what it imports), the tree before (2fa2678) and after sharing one
read of a profile folder per version of it across the points (2c4e08c, costs/profile.py `held`:
each point asked load_meta for its meta.yaml three times, a version check each, and looked for
every table file the meta.yaml leaves out), each tree's runs alternating with the other's,
`MTPSIM_CACHE_DIR=<a folder of its own> PYTHONPATH=<tree> .venv/bin/python benchmarks/sweep_cost.py
--repeats 1`, 5 runs each (medians; the first run after the change, 19.3 s, re-parsed the profile,
its disk cache keyed on the code, while a test ran beside it; the range leaves it out):
    before   10,000 points 13.86 s (runs 13.06-14.02)
    after    10,000 points 11.73 s (runs 11.25-11.75)
Then (load 2.1-3.3, the same way, the tree before (2c4e08c) and after (5b1606d)): a folder's version
(textfiles.py `version`, the key of every read_once and of build_costs' loaded profiles) stamps
its entries by os.scandir, not a Path and its stat each (~150 -> ~85 us for a profile folder):
    before   10,000 points 11.65 s (runs 11.30-12.12)
    after    10,000 points 10.98 s (runs 10.76-11.50)
Both steps together, both trees byte-compiled (python -m compileall mtpsim), load 2.0-2.6, 5 runs
each in turn, the tree before (2fa2678) and after (8e186f2):
    before   10,000 points 13.24 s (runs 13.18-13.60)
    after    10,000 points 10.72 s (runs 10.67-10.90)
    (`cost`'s output, stdout and stderr, byte for byte the same.)
Where the rest goes (cProfile of the after tree's `cost`, shares of its time): the advice checks
~25% (advice.py `problems`, twice a point: advise, and advise_sweep for the swept keys), looking up
each point's catalog names ~11% (catalog_lookup.find: the model and hardware files in MTPSIM_CATALOG's
folders and the built-in one), the profile folder's version and require_profile's lookup ~13%,
the rest the schema's validation of each point and the sweep's expansion.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "deepseek-v3-h200-steps.yaml"
STEPS = [1, 2, 3, 4]
# depth 4 of the chain the scenario's comment continues to 7 drafts (0.87 0.72 0.62 0.52 ...)
PER_DEPTH = [0.87, 0.72, 0.62, 0.52]


def sweep_scenario(points: int) -> dict:
    """The scenario swept over STEPS x concurrency 1..points/len(STEPS), each point's closed loop
    with enough requests for its users."""
    data = yaml.safe_load(SCENARIO.read_text())
    users = points // len(STEPS)
    data["acceptance"]["per_depth"] = PER_DEPTH
    data["workload"]["num_requests"] = users
    data["sweep"] = {"speculative.steps": STEPS, "workload.concurrency": list(range(1, users + 1))}
    return data


def time_cost(scenario: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim.cli", "cost", str(scenario)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000, help="sweep points (a multiple of 4)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "sweep.yaml"
        data = sweep_scenario(args.points)
        scenario.write_text(yaml.safe_dump(data, sort_keys=False))
        runs = [time_cost(scenario) for _ in range(args.repeats)]
    n = len(STEPS) * len(data["sweep"]["workload.concurrency"])
    wall = statistics.median(runs)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeats}")
    print(f"mtpsim cost, {n:,} sweep points: {wall:.2f} s ({n / wall:,.0f} points/s)   "
          f"runs: {', '.join(f'{x:.2f}' for x in runs)}")


if __name__ == "__main__":
    main()
