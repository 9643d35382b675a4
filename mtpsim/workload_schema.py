"""The `workload:` section of a scenario: request lengths (fixed or a distribution), arrivals
(closed loop, batch, Poisson with an optional rate schedule, or a trace file) and synthetic shared
prefixes. mtpsim/schema.py assembles it into the scenario with the other sections."""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from mtpsim.errors import AtKey
from mtpsim.limits import MAX_RATE, MAX_REQUESTS, MAX_SIM_S, MAX_TOKENS, MAX_USERS
from mtpsim.sections import Probability, Ref, Section


class LengthDist(Section):
    dist: Literal["uniform", "normal", "lognormal"]
    """uniform | normal | lognormal."""
    min: int = Field(default=1, ge=1, le=MAX_TOKENS)
    """Shortest length in tokens; draws are clipped to it."""
    max: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    """Longest length in tokens; draws are clipped to it (required: a context window bounds every length)."""
    mean: float | None = Field(default=None, gt=0, le=MAX_TOKENS)
    """normal, lognormal: the mean of the lengths, in tokens."""
    std: float | None = Field(default=None, ge=0, le=MAX_TOKENS)
    """normal, lognormal: the standard deviation of the lengths, in tokens."""

    @model_validator(mode="after")
    def _params(self) -> LengthDist:
        if self.dist == "uniform" and self.max is None:
            raise AtKey("max", "uniform needs min and max")
        if self.dist == "uniform" and (self.mean is not None or self.std is not None):
            raise AtKey("mean" if self.mean is not None else "std", "uniform draws between min and max: mean and std "
                        "shape normal and lognormal only")
        if self.dist != "uniform" and (self.mean is None or self.std is None or self.max is None):
            raise ValueError(f"{self.dist} needs mean, std and max (a context window bounds every length)")
        if self.max is not None and self.max < self.min:
            raise AtKey("max", f"{self.max} is below min {self.min}")
        return self

    def lognormal(self) -> tuple[float, float]:
        """(mu, sigma) of the log of a lognormal length whose own mean and std are `mean` and
        `std`: sigma^2 = log(1 + (std/mean)^2), mu = log(mean) - sigma^2 / 2. Where std/mean is
        past 1e150 its square would overflow (a Python OverflowError; a NaN sigma in NumPy drew
        lengths of -2^63 tokens), so sigma^2 is taken in logs there: 2 log(std/mean) + ...,
        which no mean and std the schema takes (5e-324 .. 2^24) can overflow."""
        ratio = self.std / self.mean
        if ratio <= 1e150:
            sigma2 = math.log1p(ratio ** 2)
        else:
            log_ratio = math.log(self.std) - math.log(self.mean)
            sigma2 = 2 * log_ratio + math.log1p(math.exp(-2 * log_ratio))
        return math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2)


Length = Annotated[int, Field(ge=1, le=MAX_TOKENS)] | LengthDist


def max_length(length: Length) -> int:
    """The longest a fixed or distributed `input_len` / `output_len` can be."""
    return length if isinstance(length, int) else length.max


def mean_length(length: Length) -> int:
    """The typical length of a fixed or distributed `input_len` / `output_len`: the number, the
    middle of a uniform range, else the mean within min..max, where the draws are clipped (a
    mean of 100,000 over max 10 draws 10 every time, where `cost` priced a context of 100,000;
    a mean of 0.5 priced a context of 0 tokens)."""
    if isinstance(length, int):
        return length
    if length.dist == "uniform":
        return (length.min + length.max) // 2
    return min(max(int(length.mean), length.min), length.max)


class RatePhase(Section):
    """One phase of a Poisson load whose rate changes: `rate_per_s` until `until_s` (simulated
    seconds from the start of the schedule's cycle)."""

    until_s: float = Field(gt=0, le=MAX_SIM_S)
    """End of the phase, in simulated seconds from the start of the schedule's cycle."""
    rate_per_s: float = Field(gt=0, le=MAX_RATE)
    """Poisson arrival rate during the phase, requests per second."""


TRACE_FORMATS = ("auto", "mtpsim", "azure", "burstgpt", "mooncake")  # mtpsim/tracefiles/formats.py
MAX_TRACE_S = 1e9  # a trace's timestamps, in seconds from its origin (~32 years)


class TraceFile(Section):
    """A trace to replay (mtpsim/tracefiles): which file, in which format, and which part of it.
    Given as a plain path it is read whole, its format recognised from its header."""

    path: Ref
    """The trace file (.gz read as is)."""
    format: Literal[TRACE_FORMATS] = Field(default="auto", description=(
        "mtpsim (arrival_s,input_len,output_len), azure (TIMESTAMP,ContextTokens,GeneratedTokens), "
        "burstgpt (Timestamp,...,Request tokens,Response tokens,...), mooncake (JSON lines: timestamp in ms, "
        "input_length, output_length, hash_ids). auto: recognised from the header."))
    speed: float = Field(default=1.0, gt=0, le=1e6, description="Replay k times faster: arrival times divided by k.")
    start_s: float = Field(default=0.0, ge=0, le=MAX_TRACE_S, description=(
        "Trace seconds (from the trace's origin) where the replay starts; arrivals are counted from here."))
    end_s: float | None = Field(default=None, gt=0, le=MAX_TRACE_S, description=(
        "Trace seconds where the replay stops (None: the end of the file)."))
    max_requests: int | None = Field(default=None, ge=1, le=MAX_REQUESTS, description=(
        "Replay only the first N requests of the window."))
    max_input_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description=(
        "Longer prompts are cut to this many tokens; how many were cut is reported (trace_capped_inputs)."))
    max_output_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description=(
        "Longer outputs are cut to this many tokens; how many were cut is reported (trace_capped_outputs)."))
    block_size: int = Field(default=512, ge=1, le=MAX_TOKENS, description=(
        "Tokens per hash_ids block (mooncake); each request holds at most ceil(input / block_size) of them."))

    @model_validator(mode="after")
    def _window(self) -> TraceFile:
        if self.end_s is not None and self.end_s <= self.start_s:
            raise AtKey("end_s", f"{self.end_s:g} must come after start_s {self.start_s:g}")
        return self


class SharedPrefix(Section):
    """A system prompt shared by a fraction of requests: those requests' first `tokens` prompt
    tokens (input_len counts them) are one of `groups` prompts, drawn uniformly."""

    tokens: int = Field(ge=1, le=MAX_TOKENS)
    """Tokens of the shared system prompt (counted in input_len)."""
    fraction: Probability = 1.0
    """Fraction of requests that open with it."""
    groups: int = Field(default=1, ge=1, le=MAX_REQUESTS)
    """Distinct shared prompts, drawn uniformly."""


class Workload(Section):
    arrival: Literal["closed", "poisson", "batch", "trace"] = "closed"
    """closed (fixed users, each sending the next request when one ends) | poisson | batch (all at t=0) | trace."""
    concurrency: int = Field(default=1, ge=1, le=MAX_USERS)
    """closed: users (run reads it there only: a batch load sends all num_requests at once; cost takes it as its batch)."""
    rate_per_s: float | None = Field(default=None, gt=0, le=MAX_RATE)
    """poisson: arrival rate, requests per second."""
    # poisson whose rate swings: phases in order, the schedule repeating after the last until_s
    rate_schedule: list[RatePhase] | None = Field(default=None, min_length=1, max_length=1000)
    """poisson whose rate swings: phases in time order, repeating after the last until_s."""
    num_requests: int = Field(default=64, ge=1, le=MAX_REQUESTS)
    """Requests in the run (a trace brings its own)."""
    input_len: Length = Field(default=1024)
    """Prompt tokens: a number, or a distribution {dist, min, max, mean, std}."""
    output_len: Length = Field(default=256)
    """Output tokens: a number, or a distribution {dist, min, max, mean, std}."""
    trace: TraceFile | None = None
    """A trace to replay: a path (format recognised from its header), or a mapping with the path and how to read it."""
    shared_prefix: SharedPrefix | None = None
    """Synthetic loads: a system prompt that a fraction of requests open with (for prefix caching)."""

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_path(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _arrival_needs(self) -> Workload:
        if self.arrival == "poisson" and self.rate_per_s is None and self.rate_schedule is None:
            raise AtKey("rate_per_s", "arrival poisson needs rate_per_s (or a rate_schedule)")
        if self.arrival == "trace" and self.trace is None:
            raise AtKey("trace", "arrival trace needs trace (a CSV with arrival_s,input_len,output_len)")
        return self
