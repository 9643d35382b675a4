"""What a deployment search costs: a DeepSeek-V3 8xH200 search of at least 300 points on the
process pool, timed end to end (enumeration and checks included), with no cache. Prints the
point count, the wall time, the points per second and the CPU seconds the search and its
workers used (on a machine other jobs load, CPU / workers is the wall time two idle cores would
take, give or take the serial enumeration). Asserts nothing (issue 20 target: >= 300
points in <= 2 minutes on 2 cores).

  .venv/bin/python benchmarks/search_cost.py                 # 16 layouts x 4 settings x 5 loads = 320 points
  .venv/bin/python benchmarks/search_cost.py --jobs 2 --output-len 1024
  .venv/bin/python benchmarks/search_cost.py --gpus 4096 --enumerate-only   # what a big search does before its first point

Enumeration, measured 2026-12-04 on the 2-core machine while other jobs loaded it (load 4-5),
--enumerate-only, the tree before (3558397) and after the catalog caches (catalog.py `_parsed`,
`spec_file`, `load_engine`: each catalog file parsed and each spec validated once per version of
the file, where every candidate layout and point re-read and re-validated all three) and
`Pricer.weight_bytes` leaving the ops unpriced (a layout's memory check timed every op):
    256 GPUs, 285 candidate layouts, 236 fit, 4,720 points: layouts 21.5 s -> 0.7 s, points 266.6 s -> 3.5 s
    4096 GPUs, 819 candidates, 281 fit, 5,620 points: layouts 2.5 s, points 6.6 s (after; before, the
    layouts alone ran past a minute, and a `search --gpus 4096` printed nothing for over 3 minutes)
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
from mtpsim.search.layouts import fitting_layouts
from mtpsim.search.space import steps_by_design

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "search" / "deepseek-v3-8xh200.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--enumerate-only", action="store_true", help="time the layouts and points, run none")
    args = parser.parse_args()
    started = time.perf_counter()
    base = load(SCENARIO, [f"workload.output_len={args.output_len}"])[0]
    bounds = bounds_of(base, {"gpus": args.gpus})
    layouts, refused = fitting_layouts(base, args.gpus, bounds)
    fitted = time.perf_counter() - started
    points = space.points(base, layouts, space.design_settings(base, bounds, steps_by_design(base, bounds)), bounds)
    built = time.perf_counter() - started
    if args.enumerate_only:
        print(f"DeepSeek-V3 on {args.gpus}x H200: {len(layouts) + len(refused)} candidate layouts, {len(layouts)} fit "
              f"({fitted:.1f} s); {len(points)} points built ({built - fitted:.1f} s)")
        return
    rows, ran = execute.run_search_points(points, execute.Cache(None), args.jobs, progress=False)
    wall = time.perf_counter() - started
    print(f"DeepSeek-V3 {args.gpus}xH200 search: {len(layouts)} layouts, {len(points)} points ({ran} simulated), "
          f"{args.jobs} workers, output {args.output_len} tokens")
    cpu = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    print(f"  enumerate + check: {built:.1f} s; total: {wall:.1f} s; {len(points) / wall:.1f} points/s; "
          f"summed simulation time {rows.sim_wall_s.sum():.1f} s")
    print(f"  CPU: {cpu:.1f} s in this process and its workers (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
