"""cli_pair.py's fixed simpy reference loop, a module of its own so that it runs as a whole
process importing only numpy and simpy (cli_pair.py times it both ways):

    .venv/bin/python benchmarks/reference_loop.py 0.85,0.75,0.65
"""
from __future__ import annotations

import sys

import numpy as np
import simpy


def reference_run(per_depth: list[float], steps: int, num_requests: int = 1000, output_len: int = 1000, concurrency: int = 64,
                  seed: int = 0) -> int:
    """The fixed reference loop: closed-loop users, one simpy timeout per iteration of a fixed
    cost looked up by batch size, accepted drafts drawn per request (a leading run of successes
    under the per-depth acceptance). Returns the requests finished."""
    env, rng = simpy.Environment(), np.random.default_rng(seed)
    at_least = np.cumprod(per_depth[:steps])  # P(at least k accepted), k = 1..steps
    iteration_s = {b: 0.01 + 1e-5 * b * (steps + 1) for b in range(concurrency + 1)}  # seconds by batch size
    finished = []

    def engine():
        waiting, running = num_requests - concurrency, [0] * concurrency
        while running:
            yield env.timeout(iteration_s[len(running)])
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


def pair(per_depth: list[float]) -> None:
    """The reference of the CLI pair: S = 3 and its S = 0 baseline, 1,000 requests each."""
    assert reference_run(per_depth, 3) == reference_run(per_depth, 0) == 1000


if __name__ == "__main__":
    pair([float(x) for x in sys.argv[1].split(",")])
