"""What a deployment search costs: a DeepSeek-V3 8xH200 search of at least 300 points on the
process pool, timed end to end (enumeration and checks included), with no cache. Prints the
point count, the wall time, the points per second and the CPU seconds the search and its
workers used (on a machine other jobs load, CPU / workers is the wall time two idle cores would
take, give or take the serial enumeration). Asserts nothing (issue 20 target: >= 300
points in <= 2 minutes on 2 cores).

  .venv/bin/python benchmarks/search_cost.py                 # 16 layouts x 4 settings x 5 loads = 320 points
  .venv/bin/python benchmarks/search_cost.py --jobs 2 --output-len 1024

The scenario is scenarios/search/deepseek-v3-8xh200.yaml with a shorter output (256 tokens by
default: InferenceX's 1k/1k takes about four times as long per point).
"""
from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from mtpsim.scenario import load
from mtpsim.search import execute, space
from mtpsim.search.command import bounds_of
from mtpsim.search.space import candidate_steps

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "search" / "deepseek-v3-8xh200.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--output-len", type=int, default=256)
    args = parser.parse_args()
    started = time.perf_counter()
    base = load(SCENARIO, [f"workload.output_len={args.output_len}"])[0]
    bounds = bounds_of(base, {"gpus": 8})
    layouts, _ = space.fitting_layouts(base, 8, bounds)
    points = space.points(base, layouts, space.design_settings(base, bounds, candidate_steps(base, None)), bounds)
    built = time.perf_counter() - started
    rows, ran = execute.run_search_points(points, execute.Cache(None), args.jobs, progress=False)
    wall = time.perf_counter() - started
    print(f"DeepSeek-V3 8xH200 search: {len(layouts)} layouts, {len(points)} points ({ran} simulated), "
          f"{args.jobs} workers, output {args.output_len} tokens")
    cpu = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    print(f"  enumerate + check: {built:.1f} s; total: {wall:.1f} s; {len(points) / wall:.1f} points/s; "
          f"summed simulation time {rows.sim_wall_s.sum():.1f} s")
    print(f"  CPU: {cpu:.1f} s in this process and its workers (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
