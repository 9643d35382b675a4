"""Start-up (issue 23): what every command pays before it runs, and the floor under it.

    .venv/bin/python benchmarks/startup.py [--repeats 3]

- `import mtpsim.cli` (-X importtime) and `mtpsim --version` as a whole process: what every
  command pays, building the parser included (target at most 0.2 s);
- `import mtpsim.run`: what `mtpsim run` adds before it reads the scenario (numpy, pydantic,
  simpy and the simulator);
- the floor: the libraries a run cannot start without (numpy, simpy, PyYAML, pydantic's models),
  imported alone in a fresh interpreter, and a bare interpreter's start. cli_pair.py adds them to
  its reference loop for the best ratio any CLI on these libraries could reach.
The measurements over time: docs/speed.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The libraries `mtpsim run` cannot start without: numpy (the acceptance draw), simpy (the loop),
# PyYAML (the scenario) and pydantic's models (the schema every scenario is checked against).
LIBRARIES = "import numpy, simpy, yaml; from pydantic import BaseModel, Field"


def floor_s() -> tuple[float, float]:
    """(a bare interpreter's start as a whole process, the libraries' import in a fresh one): what
    any CLI built on them pays before its first line of its own code runs."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - started
    done = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); " + LIBRARIES
                           + "; print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
    return bare, float(done.stdout)


def median_floor(repeats: int) -> tuple[float, float]:
    """floor_s's two figures, each the median of `repeats` runs."""
    floors = [floor_s() for _ in range(repeats)]
    return statistics.median(f[0] for f in floors), statistics.median(f[1] for f in floors)


def time_version() -> float:
    """`mtpsim --version` as a whole process: what every command pays before it runs."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim.cli", "--version"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
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
    imports = {m: statistics.median(import_s(m) for _ in range(args.repeats)) for m in ("mtpsim.cli", "mtpsim.run")}
    version_s = statistics.median(time_version() for _ in range(args.repeats))
    bare_s, libraries_s = median_floor(args.repeats)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.repeats}")
    print(f"import mtpsim.cli         {imports['mtpsim.cli']:.3f} s")
    print(f"mtpsim --version          {version_s:.3f} s (whole process, parser included; target <= 0.2 s)")
    print(f"import mtpsim.run         {imports['mtpsim.run']:.3f} s (what `mtpsim run` adds before it reads the scenario)")
    print(f"floor: the libraries alone {libraries_s:.3f} s in a fresh interpreter ({LIBRARIES.removeprefix('import ')});"
          f" interpreter start {bare_s:.3f} s")


if __name__ == "__main__":
    main()
