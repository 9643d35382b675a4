"""Latency targets and the pick: the best point meeting them by tok/s per GPU, and its margin.

A target is `[p50:|p99:]VALUE[UNIT]` (p50 when no percentile is given):
- `--ttft p99:2s`   time to first token at that percentile, at most VALUE (ms unless `s`);
- `--tpot p50:20ms` time per output token after the first, at most VALUE (ms unless `s`);
- `--min-user-tps p99:40` tokens per second one user sees, at least VALUE, read as 1 / TPOT at
  that percentile (p99: the user whose TPOT is the 99th percentile's, so 99% of users see more).
The percentiles are over a point's requests, each request's TPOT being (finish - first token) /
(output tokens - 1): the definitions of SGLang's bench_serving and aiconfigurator's targets.

The pick compares deployments (layout, design, steps, topk), each at its best load that meets
every target; the runner-up is the next deployment. `margin` is the winner's lead in percent.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from mtpsim.errors import ScenarioError, short

DEPLOYMENT = ["layout", "design", "steps", "topk"]
_TARGET = re.compile(r"^(?:(p50|p99):)?([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(ms|s)?$")


METRICS = ("ttft", "tpot", "user_tps")  # what a Target measures


@dataclass(frozen=True)
class Target:
    """One latency target: `metric` ttft | tpot | user_tps, at percentile p50 | p99."""

    metric: str
    percentile: str
    value: float  # seconds for ttft / tpot, tokens per second for user_tps

    @property
    def flag(self) -> str:
        return {"ttft": "--ttft", "tpot": "--tpot", "user_tps": "--min-user-tps"}[self.metric]

    @property
    def column(self) -> str:
        return f"{'tpot' if self.metric == 'user_tps' else self.metric}_{self.percentile}_s"

    def reached(self, rows: pd.DataFrame) -> pd.Series:
        """Each row's value of the metric (seconds, or tokens per second per user)."""
        return 1.0 / rows[self.column] if self.metric == "user_tps" else rows[self.column]

    def met(self, rows: pd.DataFrame) -> pd.Series:
        v = self.reached(rows)
        return v >= self.value if self.metric == "user_tps" else v <= self.value

    def show(self, value: float) -> str:
        """A value as the user reads it: three significant digits (0.001 ms is not 0.0 ms)."""
        return f"{value:.3g} tok/s" if self.metric == "user_tps" else f"{value * 1e3:.3g} ms"

    @property
    def text(self) -> str:
        op = ">=" if self.metric == "user_tps" else "<="
        return f"{self.metric} {self.percentile} {op} {self.show(self.value)}"


def parse_target(text: str, metric: str) -> Target:
    """`p99:50ms` -> Target; a bad one is a ScenarioError naming its flag (the API's: a metric
    other than ttft, tpot or user_tps, or a text that is none, naming parse_target)."""
    if metric not in METRICS:
        raise ScenarioError("parse_target", "metric", f"is {short(metric, 40)}: one of {', '.join(METRICS)}")
    flag = Target(metric, "p50", 0).flag
    if not isinstance(text, str):
        raise ScenarioError(flag, "", f"is {type(text).__name__} {short(text, 40)}: a text such as 'p99:50'")
    m = _TARGET.match(text.strip().lower())
    if not m:
        form = "[p50:|p99:]VALUE (tokens per second, e.g. p99:40)" if metric == "user_tps" else \
            "[p50:|p99:]VALUE[ms|s] (milliseconds when no unit, e.g. p99:50ms)"
        raise ScenarioError(flag, "", f"{short(text, 40)} is not {form}")
    percentile, value, unit = m.group(1) or "p50", float(m.group(2)), m.group(3)
    if metric == "user_tps" and unit:
        raise ScenarioError(flag, "", f"{short(text, 40)}: tokens per second take no unit (e.g. p50:40)")
    if value <= 0:
        raise ScenarioError(flag, "", f"{short(text, 40)}: must be above 0")
    seconds = value if unit == "s" else value / 1e3
    # seconds: from 1 us to ~11 days; tokens per second the same bounds turned over (1 / TPOT): a
    # user at 1e7 tok/s is a TPOT of 0.1 us, which --tpot refuses, and no search can meet
    low, high = (1e-6, 1e6)
    if not low <= (value if metric == "user_tps" else seconds) <= high:
        raise ScenarioError(flag, "", f"{short(text, 40)}: outside {low:g}..{high:g} "
                            f"{'tokens per second' if metric == 'user_tps' else 'seconds'}")
    return Target(metric, percentile, value if metric == "user_tps" else seconds)


def meeting(rows: pd.DataFrame, targets: list[Target]) -> pd.Series:
    ok = pd.Series(True, index=rows.index)
    for t in targets:
        ok &= t.met(rows)
    return ok


def binding(rows: pd.DataFrame, targets: list[Target]) -> ScenarioError:
    """Why no point meets the targets, naming the flag that binds: the first target no point
    meets alone, with the best value reached; else the targets together, with the best the
    others' points reach on the last."""
    for t in targets:
        if not t.met(rows).any():
            v = t.reached(rows)
            best = v.max() if t.metric == "user_tps" else v.min()
            return ScenarioError(t.flag, "", f"no point meets {t.flag} ({t.text}): the best {t.metric} {t.percentile} "
                                 f"reached is {t.show(best)}")
    *others, last = targets
    near = rows[meeting(rows, others)]
    v = last.reached(near)
    best = v.max() if last.metric == "user_tps" else v.min()
    return ScenarioError(last.flag, "", f"no point meets all targets together: of the {len(near)} points meeting "
                         f"{', '.join(t.flag for t in others)}, the best {last.metric} {last.percentile} is "
                         f"{last.show(best)} ({last.flag} asks {last.show(last.value)})")


def finalists(rows: pd.DataFrame, targets: list[Target], count: int = 2) -> pd.DataFrame:
    """The best `count` deployments meeting the targets, each at its best meeting load, best first
    by tok/s per GPU (ties: fewer steps, then fewer GPUs per replica)."""
    ok = rows[meeting(rows, targets)]
    if ok.empty:
        raise binding(rows, targets)  # the flag that binds is the one to loosen: it names it, as a flag's error does
    ok = ok.sort_values(["tps_per_gpu", "steps", "tp"], ascending=[False, True, True], kind="stable")
    return ok.drop_duplicates(DEPLOYMENT).head(count)


def margin_pct(best: float, runner_up: float) -> float:
    return 100.0 * (best / runner_up - 1.0)
