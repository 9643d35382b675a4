"""Whether a scenario can be ranked by `mtpsim recommend` and `mtpsim search`, and as what: both
compare steps settings by the acceptance each step adds (refuse_fixed_accept_length) and rank by
time per output token under loads of their own (own_loads: a trace or rate schedule stands in by
its lengths). These check the scenario a command was given; space.py builds the points from it.
"""
from __future__ import annotations

from mtpsim import scenario as sc
from mtpsim.errors import ScenarioError, warn
from mtpsim.schema import max_length
from mtpsim.tracefiles import mean_lengths


def refuse_fixed_accept_length(s: sc.Scenario, compare: str) -> None:
    """recommend and search compare steps settings by the acceptance each step adds: an accept
    length given whole (accept_length, which a geometric profile is refitted to at any steps) or
    forced by the engine (acceptance.forced: the knob sets it whatever the steps) cannot."""
    for key in ("accept_length", "forced"):
        if getattr(s.acceptance, key) is not None:
            raise ScenarioError(s.source, f"acceptance.{key}", "fixes the accept length whatever the steps; give "
                                f"acceptance per depth (per_depth, cumulative or histogram) to {compare}")


def fixed_settings(s: sc.Scenario, command: str, compares: str) -> None:
    """One warning for each speculative key the command's grid sets itself (it `compares` fixed
    steps and widths), which the scenario gave: its policy, and a tree's verify width draft_tokens
    (each tree is verified whole, 1 + steps x topk tokens, as the grid's points have no N of their own)."""
    if s.speculative.policy is not None:
        warn(s.source, "speculative.policy", f"{command} compares {compares}: the scenario's policy is not used")
    if s.speculative.draft_tokens is not None and s.speculative.topk > 1:
        warn(s.source, "speculative.draft_tokens", f"{command} compares {compares}, each tree verified whole (1 + "
             f"steps x topk tokens): the scenario's {s.speculative.draft_tokens} is not used")


def own_loads(s: sc.Scenario, command: str, runs: str) -> sc.Scenario:
    """`s` as `command` runs it under its own loads (`runs`, e.g. closed-loop batches): a trace's
    requests stand in by their mean lengths (the workload's input_len / output_len would be the
    schema's defaults), with one warning for a trace or rate schedule it does not replay; a
    ScenarioError where no request would have a time per output token to rank by."""
    w = s.workload
    if w.arrival == "trace":
        lengths = dict(zip(("input_len", "output_len"), mean_lengths(w)))
        s = s.model_copy(update={"workload": w.model_copy(update=lengths)})
    if max_length(s.workload.output_len) < 2:  # before any warning: bad input is one line
        raise ScenarioError(s.source, "workload.trace" if w.arrival == "trace" else "workload.output_len",
                            f"{command} ranks settings by time per output token, and a request of one output token "
                            "has none (its only token is the prefill's): give outputs of 2 tokens or more")
    if w.arrival == "trace":
        warn(s.source, "workload.trace", f"{command} runs {runs} at the trace's mean lengths ({lengths['input_len']} in, "
             f"{lengths['output_len']} out): its arrivals and its spread of lengths are not replayed")
    elif w.rate_schedule:
        warn(s.source, "workload.rate_schedule", f"{command} runs {runs} over workload.input_len / output_len: "
             "the rate schedule is not replayed")
    elif w.arrival == "poisson" and command == "recommend":
        warn(s.source, "workload.arrival", f"{command} runs {runs}, not the scenario's Poisson arrivals")
    return s
