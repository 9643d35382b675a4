"""Where the CLI pair's whole process goes (issue 23): cli_pair.py's pair, phase by phase, each
repeat in a fresh interpreter, as `mtpsim run` runs them.

    .venv/bin/python benchmarks/sim_phases.py [--repeats 3]

Phases: the bare interpreter (`python -c pass`, timed from outside), `import mtpsim.run`,
loading the scenario and its `none` baseline (validation, catalogs), the profile load (the
first pricer: profile_cache.py's pickle when warm), each simulation (the baseline reuses the
loaded profile), and the table and run folder (summary, requests, iterations, accept counts).
Medians of `--repeats`; the machine's load is printed with them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_pair import NEXTN  # noqa: E402 (the pair's scenario, one home)

ROOT = Path(__file__).resolve().parent.parent
PHASES = r"""
import json, sys, time
t = [time.perf_counter()]
import mtpsim.run as run
t.append(time.perf_counter())
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.run_table import format_table
from mtpsim.runfolder import write_run
from mtpsim.sim import simulate
points = sc.load(sys.argv[1], [])
base = run.baseline_of(points[0])
t.append(time.perf_counter())
pricer = build_pricer(points[0])
t.append(time.perf_counter())
results = [simulate(points[0], pricer=pricer)]
t.append(time.perf_counter())
results.append(simulate(base))
t.append(time.perf_counter())
rows = run.with_speedups([{**r.row, "point": p} for r, p in zip(results, (0, -1))], ["pair", "pair"])
format_table(rows)
write_run(__import__("pathlib").Path(sys.argv[2]), points, rows, results, [{"point": 0}, {"point": -1}])
t.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(t, t[1:])]))
"""
NAMES = ["import mtpsim.run", "scenario + baseline", "profile load", "simulate nextn", "simulate none", "table + run folder"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs, bare = [], []
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "pair.yaml"
        scenario.write_text(yaml.safe_dump({**NEXTN, "name": "cli-pair"}, sort_keys=False))
        for i in range(args.repeats):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - started)
            out = Path(tmp) / f"run{i}"
            out.mkdir()
            done = subprocess.run([sys.executable, "-c", PHASES, str(scenario), str(out)], check=True, cwd=ROOT,
                                  env=env, capture_output=True, text=True)
            runs.append(json.loads(done.stdout.splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.repeats}")
    print(f"{'interpreter (python -c pass)':28s} {statistics.median(bare):.3f} s")
    for j, name in enumerate(NAMES):
        print(f"{name:28s} {statistics.median(r[j] for r in runs):.3f} s")
    print(f"{'sum':28s} {statistics.median(bare) + sum(statistics.median(r[j] for r in runs) for j in range(len(NAMES))):.3f} s")


if __name__ == "__main__":
    main()
