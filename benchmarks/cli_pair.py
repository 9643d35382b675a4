"""The whole command-line pair against a fixed simpy reference loop, timed in the same run (issue 23).

    .venv/bin/python benchmarks/cli_pair.py [--repeats 3]

The pair: `mtpsim run` of nextn S=3 and its `none` baseline, 1,000 requests x 1,000 tokens at
concurrency 64 (sim_pair.py's scenario), as a whole process: interpreter start, imports, profile
load, both simulations, the table and the run folder. The reference: the least a simpy
simulator of that pair must do, in this process: one `env.timeout` per iteration, each running
request's accepted drafts drawn from the same per-depth acceptance, its tokens committed in a
Python loop, finished requests replaced from the queue; no pricing, no records, no outputs. The
ratio is the median CLI wall over the median reference wall, each of `--repeats` interleaved
runs (the machine's load moves both alike). Target: at most 1.6.

Start-up import: `python -X importtime -c "import mtpsim.cli"` (what every command pays before
it parses its arguments; target at most 0.2 s), and the same for mtpsim.run (what `mtpsim run`
adds: numpy, pandas, pydantic, simpy and the simulator).
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

import numpy as np
import simpy
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_pair import NEXTN  # noqa: E402 (the pair's scenario, one home)

ROOT = Path(__file__).resolve().parent.parent
PER_DEPTH = NEXTN["acceptance"]["per_depth"]


def reference_run(steps: int, num_requests: int = 1000, output_len: int = 1000, concurrency: int = 64,
                  seed: int = 0) -> int:
    """The fixed reference loop: closed-loop users, one simpy timeout per iteration, accepted
    drafts drawn per request (a leading run of successes under the per-depth acceptance). Returns
    the requests finished."""
    env, rng = simpy.Environment(), np.random.default_rng(seed)
    at_least = np.cumprod(PER_DEPTH[:steps])  # P(at least k accepted), k = 1..steps
    finished = []

    def engine():
        waiting, running = num_requests - concurrency, [0] * concurrency
        while running:
            yield env.timeout(0.01)
            u = rng.random(len(running))
            accepted = (u[:, None] < at_least[None, :]).sum(axis=1).tolist() if steps else [0] * len(running)
            still = []
            for generated, a in zip(running, accepted):
                generated += 1 + a
                if generated < output_len:
                    still.append(generated)
                else:
                    finished.append(env.now)
                    if waiting:
                        waiting -= 1
                        still.append(0)
            running = still

    env.process(engine())
    env.run()
    return len(finished)


def time_reference() -> float:
    started = time.perf_counter()
    assert reference_run(3) == reference_run(0) == 1000
    return time.perf_counter() - started


def time_cli(scenario: Path, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim.cli", "run", str(scenario), "--out", str(out)], check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def import_s(module: str) -> float:
    """The cumulative import time of `module` in a fresh interpreter (-X importtime's last line)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                          text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = [row for row in done.stderr.splitlines() if row.rstrip().endswith(f"| {module}")][-1]
    return int(line.split("|")[1]) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "pair.yaml"
        scenario.write_text(yaml.safe_dump({**NEXTN, "name": "cli-pair"}, sort_keys=False))
        cli, ref = [], []
        for i in range(args.repeats):
            ref.append(time_reference())
            cli.append(time_cli(scenario, Path(tmp) / f"run{i}"))
    imports = {m: statistics.median(import_s(m) for _ in range(args.repeats)) for m in ("mtpsim.cli", "mtpsim.run")}
    cli_s, ref_s = statistics.median(cli), statistics.median(ref)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.repeats}")
    print(f"CLI pair (whole process)  {cli_s:.2f} s   runs: {', '.join(f'{x:.2f}' for x in cli)}")
    print(f"reference simpy loop      {ref_s:.2f} s   runs: {', '.join(f'{x:.2f}' for x in ref)}")
    print(f"ratio                     {cli_s / ref_s:.2f}x   (target <= 1.6x)")
    print(f"import mtpsim.cli         {imports['mtpsim.cli']:.3f} s (target <= 0.2 s)")
    print(f"import mtpsim.run         {imports['mtpsim.run']:.3f} s (what `mtpsim run` adds before it reads the scenario)")


if __name__ == "__main__":
    main()
