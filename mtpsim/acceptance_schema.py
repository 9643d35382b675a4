"""The `acceptance:` section of a scenario: how often drafts are accepted, in exactly one of its
forms (per depth, per depth and rank, cumulative, a mean accept length, a measured histogram, a
curve over steps, a named profile, or an engine's forced rule), with the per-request spread and
the adaptive kept length. mtpsim/schema.py assembles it into the scenario with the other
sections; acceptance.py turns it into the profile the simulator draws from."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from mtpsim.acceptance import curve_problem
from mtpsim.errors import AtKey
from mtpsim.limits import MAX_STEPS
from mtpsim.sections import Name, Probability, Ref, Section

ACCEPTANCE_FORMS = ("per_depth", "per_depth_topk", "cumulative", "accept_length", "histogram",
                    "accept_length_by_steps", "profile", "forced")
ROW_SUM_SLACK = 1e-9  # rounding in a measured row (0.7 + 0.2 + 0.1) must not refuse it


class Forced(Section):
    """A benchmark that forces acceptance: the engine and the value its knob is set to, as that
    engine reads it (acceptance.py AcceptanceProfile.forced: sglang and vllm take the accept
    length, trtllm the accepted drafts, one fewer)."""

    engine: Literal["sglang", "vllm", "trtllm"]
    """The engine whose forcing rule to reproduce: sglang | vllm | trtllm."""
    setting: float = Field(ge=0, le=MAX_STEPS + 1)
    """The knob's value as that engine reads it (sglang, vllm: the accept length; trtllm: accepted drafts)."""


class Acceptance(Section):
    per_depth: list[Probability] | None = None
    """Conditional acceptance alpha_k per depth, one per step at least."""
    # tree drafts: row k, column j = P(target's token at depth k is the draft's j-th best | path accepted)
    per_depth_topk: list[list[Probability]] | None = None
    """Tree drafts: row k, column j = P(the target's token at depth k is the draft's j-th best | path accepted)."""
    cumulative: list[Probability] | None = None
    """a_k = P(at least k drafts accepted), non-increasing."""
    accept_length: float | None = Field(default=None, ge=1)
    """Mean tokens per request per iteration (accepted + 1 bonus); a geometric profile is fitted to it."""
    histogram: Ref | None = None
    """A measured CSV `accepted,count` (iterations with exactly j drafts accepted)."""
    accept_length_by_steps: dict[Annotated[int, Field(ge=1, le=MAX_STEPS)], Annotated[float, Field(ge=1)]] | None = None
    """Accept length measured at each steps value, {1: 1.79, 2: 2.27, ...}; per-depth acceptance is derived
    from it (acceptance.py from_accept_lengths)."""
    profile: Name | None = Field(default=None, max_length=120)
    """A named accept-length curve shipped in mtpsim/data/acceptance/ (e.g. an InferenceX golden curve)."""
    forced: Forced | None = None
    """Reproduce an engine's forced acceptance (SGLANG_SIMULATE_ACC_LEN, vLLM's synthetic rule, TensorRT-LLM's)."""
    spread: float = Field(default=0.0, ge=0, lt=1)
    """Per-request variation of acceptance, 0 = identical requests."""
    # draft length that adapts per request (a confidence threshold, a depth controller): entry j =
    # P(the rule keeps exactly j drafts of the iteration's for verification), j = 0, 1, ...; the
    # acceptance above is then that of the drafts kept. None: every draft is verified
    kept_length: list[Probability] | None = Field(default=None, min_length=2, max_length=MAX_STEPS + 1)
    """Draft length that adapts per request: entry j = P(exactly j of the iteration's drafts are kept for
    verification); the acceptance above is that of the drafts kept. None: every draft is verified."""
    kept_by: Literal["confidence", "controller"] = "confidence"
    """Who sets kept_length's widths: `confidence` (a head scores the drafted block, DSpark's: every request
    drafts, then verifies what it kept) or `controller` (a depth controller picks each request's width before
    drafting: a request at 0 drafts nothing, and an iteration whose requests are all at 0 is a plain decode)."""

    @field_validator("kept_length")
    @classmethod
    def _a_distribution(cls, pmf: list[float] | None) -> list[float] | None:
        if pmf is not None and abs(sum(pmf) - 1.0) > 1e-6:
            raise ValueError(f"sums to {sum(pmf):.6g}, not 1: it is the distribution of drafts kept (entry j: "
                             "P(exactly j kept))")
        return pmf

    @field_validator("accept_length_by_steps")
    @classmethod
    def _curve(cls, curve: dict[int, float] | None) -> dict[int, float] | None:
        """Steps 1..M each with its accept length, rising with steps by no more than the step before
        rose (each gain is the chance of accepting one more draft: acceptance.from_accept_lengths)."""
        if curve is None:
            return None
        if not curve:
            raise ValueError("is empty: give the accept length at steps 1..M, {1: 1.8, 2: 2.3, ...}")
        problem = curve_problem(curve)
        if problem:
            raise ValueError(problem)
        return dict(sorted(curve.items()))

    @field_validator("per_depth_topk")
    @classmethod
    def _rank_rows(cls, rows: list[list[float]] | None) -> list[list[float]] | None:
        """Each depth's row: probabilities of ranks 1..K, best first, summing to at most 1 (the
        rest is the target's token not among the K)."""
        for depth, row in enumerate(rows or [], start=1):
            if not row:
                raise ValueError(f"row {depth} is empty (one probability per rank)")
            if sum(row) > 1.0 + ROW_SUM_SLACK:
                raise ValueError(f"row {depth} sums to {sum(row):.6g} > 1 (ranks of one depth exclude each other)")
            if any(b > a for a, b in zip(row, row[1:])):
                raise ValueError(f"row {depth} increases with rank (column j is the draft's j-th best candidate)")
        return rows

    @model_validator(mode="after")
    def _one_form(self) -> Acceptance:
        given = [k for k in ACCEPTANCE_FORMS if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of {', '.join(ACCEPTANCE_FORMS)} (got {given})")
        if self.forced is not None and self.spread:
            raise AtKey("spread", "forced acceptance is the engine's rule exactly: spread must be 0")
        if self.forced is not None and self.kept_length is not None:
            raise AtKey("kept_length", "forced acceptance is the engine's rule exactly, over every draft: a kept "
                        "length would cut what it accepts (the forced setting would not be reproduced)")
        if self.cumulative and any(b > a for a, b in zip(self.cumulative, self.cumulative[1:])):
            raise ValueError("cumulative: must not increase with depth")
        return self

