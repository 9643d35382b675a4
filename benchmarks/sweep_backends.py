"""Sweep backends side by side: a 1,000-point sweep of tiny points on the process pool and on
a local Ray; prints wall times and checks the two summaries agree. Asserts nothing else.

  .venv/bin/python benchmarks/sweep_backends.py              # 1,000 points, 2 workers (a few minutes on 2 cores)
  .venv/bin/python benchmarks/sweep_backends.py --points 100 --jobs 4

The points are DeepSeek-V3 nextn on 8 H200, priced by the roofline, 4 requests of 16 tokens:
a few milliseconds of simulation each, so the numbers show what each backend costs per task
(pickling a Scenario and its Results, scheduling) rather than simulation speed. Ray's time is
split into starting the local instance (once per `mtpsim run`) and the sweep itself.
"""
from __future__ import annotations

import argparse
import os
import time

from mtpsim.run import run_points
from mtpsim.scenario import validate

POINT = {
    "name": "backends", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8},
    "cost": {"model": "roofline"}, "speculative": {"design": "nextn", "steps": 1},
    "acceptance": {"per_depth": [0.9, 0.8, 0.7, 0.6]},
    "workload": {"arrival": "batch", "concurrency": 4, "num_requests": 4, "input_len": 256, "output_len": 16},
}


def sweep_points(n_points: int) -> list:
    """n_points of steps 1..4 x output lengths 16, 17, ...: one baseline per output length."""
    points = []
    for i in range(n_points):
        steps, output_len = 1 + i % 4, 16 + i // 4
        m = {**POINT, "speculative": {"design": "nextn", "steps": steps},
             "workload": {**POINT["workload"], "output_len": output_len}}
        points.append(validate(m, point={"speculative.steps": steps, "workload.output_len": output_len}))
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2, help="pool workers, and the local Ray's CPUs")
    args = parser.parse_args()
    started = time.perf_counter()
    points = sweep_points(args.points)
    print(f"{len(points)} points validated in {time.perf_counter() - started:.1f} s; "
          f"{os.cpu_count()} cores on this machine")

    started = time.perf_counter()
    pool, _ = run_points(points, jobs=args.jobs, progress=False)
    pool_s = time.perf_counter() - started
    print(f"pool ({args.jobs} processes): {len(pool)} runs (points + baselines) in {pool_s:.1f} s, "
          f"{pool_s / len(pool) * 1e3:.1f} ms per run; in-simulate time {pool.sim_wall_s.sum():.1f} s")

    import ray

    from mtpsim.ray_backend import runtime_env
    started = time.perf_counter()
    ray.init(address="local", num_cpus=args.jobs, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, runtime_env=runtime_env())
    init_s = time.perf_counter() - started
    started = time.perf_counter()
    on_ray, _ = run_points(points, jobs=args.jobs, progress=False, backend="ray")
    ray_s = time.perf_counter() - started
    ray.shutdown()
    print(f"ray (local, {args.jobs} CPUs): start {init_s:.1f} s, then {len(on_ray)} runs in {ray_s:.1f} s, "
          f"{ray_s / len(on_ray) * 1e3:.1f} ms per run; in-simulate time {on_ray.sim_wall_s.sum():.1f} s")
    same = on_ray.drop(columns="sim_wall_s").equals(pool.drop(columns="sim_wall_s"))
    print(f"summaries equal (all columns but sim_wall_s): {same}")


if __name__ == "__main__":
    main()
