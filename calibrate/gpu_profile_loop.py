#!/usr/bin/env python3
"""Where a verification iteration's time goes on a CUDA device: torch.profiler over a few
iterations of one design's decode loop (the scenario of benchmarks/verify_accuracy.py), the ops
ranked by host time and by device time, and the launches per iteration.

    python calibrate/gpu_profile_loop.py --design none --batch 8     # on the GPU box
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile
    from verify_accuracy import SCENARIOS

    from mtpsim.scenario import load
    from mtpsim.torchkit import loops
    from mtpsim.torchkit.kernels import without_cudnn_attention
    from mtpsim.torchkit.measure import start
    from mtpsim.verify.setup import setup_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", default="none", choices=list(SCENARIOS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--cudnn", action="store_true", help="leave SDPA's cuDNN backend on (as torch does by default)")
    a = ap.parse_args()
    data = yaml.safe_load((ROOT / "scenarios" / "verify" / SCENARIOS[a.design]).read_text())
    data.pop("sweep", None)
    data["workload"].update(concurrency=a.batch, num_requests=a.batch)
    data["verify"].update(device=a.device, hidden_scale=0.25, num_layers=4)
    path = Path("/tmp/profile-loop.yaml")
    path.write_text(yaml.safe_dump(data))
    if a.device == "cuda" and not a.cudnn:
        without_cudnn_attention()
    run = start(setup_of(load(path)[0], a.device))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
    with torch.inference_mode():
        for _ in range(3):
            loops.step(run)
        with profile(activities=activities) as prof:
            for _ in range(a.iterations):
                loops.step(run)
    events = prof.key_averages()
    print(f"{a.design} batch {a.batch}: {a.iterations} iterations")
    print(events.table(sort_by="self_cpu_time_total", row_limit=a.rows))
    if a.device == "cuda":
        print(events.table(sort_by="self_device_time_total", row_limit=a.rows))
        launches = sum(e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
        print(f"kernel launches per iteration: {launches / a.iterations:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
