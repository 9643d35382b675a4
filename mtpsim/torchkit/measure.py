"""Build the (shrunken) models, prefill B prompts, run warm-up + timed iterations, and record.

The harness of both torch users: `mtpsim verify` measures a scenario's point with it, and
`mtpsim calibrate` times the host work around its passes (calibration/host.py).

`measure(setup)` returns a `Measurement`: one row per timed iteration (wall time and time per
pass kind, tokens emitted), the accept histogram over timed iterations (per request: how many
drafts were accepted), the emitted tokens and the final KV lengths of every cache.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.specs import ModelSpec
from mtpsim.torchkit import loops
from mtpsim.torchkit.models import build

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}


@dataclass
class Setup:
    """What one verification run builds and runs (all shrunken already)."""

    model: ModelSpec
    assistant: ModelSpec | None
    design: str
    steps: int
    prompt_lens: list[int]
    iterations: int
    warmup_iterations: int
    acceptance: str = "forced"                  # forced | greedy
    profile: AcceptanceProfile | None = None    # forced
    device: str = "cpu"
    dtype: str = "fp32"
    seed: int = 0

    @property
    def batch(self) -> int:
        return len(self.prompt_lens)

    @property
    def capacity(self) -> int:
        """KV slots per request: prompt, every token the run can emit, and one window of slack."""
        n = self.steps + 1
        return max(self.prompt_lens) + (self.iterations + self.warmup_iterations + 2) * n + 1


@dataclass
class Measurement:
    iterations: pd.DataFrame     # iteration, iteration_s, draft_s, verify_s, extend_s, emitted, batch
    accept_counts: np.ndarray    # [steps + 1]: request-iterations with exactly j drafts accepted
    emitted: list[list[int]]
    run: loops.Run


def forced(profile: AcceptanceProfile, batch: int, steps: int, seed: int):
    """Accepted counts drawn as the simulator draws them (leading run of per-depth successes)."""
    rng = np.random.default_rng([seed, 7])
    levels = profile.request_levels(rng, batch, steps)
    return lambda drafts, targets: AcceptanceProfile.sample(rng, levels)


def greedy(drafts: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """Drafts accepted while they equal the target's greedy tokens."""
    match = drafts == targets[:, : drafts.shape[1]]
    return match.int().cumprod(1).sum(1).cpu().numpy()


def start(setup: Setup, propose=None) -> loops.Run:
    """Models built and prompts prefilled: a Run ready for its first iteration."""
    device = torch.device(setup.device)
    target, drafts = build(setup.model, setup.design, setup.steps, setup.assistant, DTYPES[setup.dtype],
                           device, setup.seed)
    accept = greedy if setup.acceptance == "greedy" or not setup.steps else \
        forced(setup.profile, setup.batch, setup.steps, setup.seed)
    run = loops.Run(target, drafts, setup.design, setup.steps, setup.batch, setup.capacity, accept, propose)
    gen = torch.Generator().manual_seed(setup.seed)
    prompts = [torch.randint(setup.model.vocab_size, (n,), generator=gen).to(device) for n in setup.prompt_lens]
    with torch.inference_mode():
        loops.prefill(run, prompts)
    return run


def measure(setup: Setup, propose=None, tick=None) -> Measurement:
    """`tick`: called once after each iteration, warm-up included (a progress bar's update)."""
    run = start(setup, propose)
    rows, counts = [], np.zeros(setup.steps + 1, dtype=np.int64)
    with torch.inference_mode():
        for i in range(setup.warmup_iterations + setup.iterations):
            row = loops.step(run)
            if tick is not None:
                tick()
            if i >= setup.warmup_iterations:
                counts += np.bincount(row.pop("accepted"), minlength=len(counts))[: len(counts)]
                rows.append({"iteration": i, **row, "batch": setup.batch})
    return Measurement(pd.DataFrame(rows), counts, run.emitted, run)
