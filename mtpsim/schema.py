"""Scenario schema v1: one frozen pydantic model per YAML section.

Every key, its type and default lives here or in the section's own module (workload_schema.py,
acceptance_schema.py, engine_schema.py, layout_schema.py), which this one assembles; cross-section
checks that need the catalog (a design the model cannot run, an acceptance list shorter than
steps) are in checks.py.
"""
from __future__ import annotations

import bisect
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mtpsim.acceptance_schema import ACCEPTANCE_FORMS, ROW_SUM_SLACK, Acceptance, Forced  # noqa: F401 (read from here too)
from mtpsim.designs import DESIGNS, METHOD_DESIGNS, record
from mtpsim.engine_schema import Engine, PrefixCacheSettings  # noqa: F401 (read from here too)
from mtpsim.engines import EngineSpec
from mtpsim.errors import AtKey, ScenarioError
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.layout_schema import Disaggregation, Parallel
from mtpsim.limits import (  # noqa: F401 (the limits are read from here too)
    MAX_GPUS,
    MAX_RATE,
    MAX_REQUESTS,
    MAX_SCHEDULE_DRAWS,
    MAX_SEED,
    MAX_SEEDS,
    MAX_SIM_S,
    MAX_STEPS,
    MAX_SWEEP_POINTS,
    MAX_TOKENS,
    MAX_USERS,
)
from mtpsim.search.bounds import SearchBounds
from mtpsim.sections import Frozen, Probability, Ref, Section, Text  # noqa: F401 (read from here too)
from mtpsim.specs import ModelSpec
from mtpsim.workload_schema import (  # noqa: F401 (the workload section, read from here too)
    MAX_TRACE_S,
    TRACE_FORMATS,
    Length,
    LengthDist,
    RatePhase,
    SharedPrefix,
    TraceFile,
    Workload,
    max_length,
    mean_length,
)

Seeds = Annotated[int, Field(ge=1, le=MAX_SEEDS, strict=True)]  # strict: `seeds: true` is not 1


Design = Literal[DESIGNS]  # none | nextn | multi_layer | frozen_kv | parallel_heads (designs.py)


class Policy(Section):
    """An adaptive steps policy: each decode iteration runs the steps of the entry with the
    largest batch key <= the running batch (0: plain decoding that iteration). The keys are
    running batch sizes, the first must be 1; values at most `speculative.steps`, which stays
    the most the run reserves KV, draws acceptance and keeps draft layers for (those checks
    need the other keys: checks.py). With `acceptance.kept_length` the two compose: the policy
    sets how many drafts the iteration proposes for its running batch, then each request keeps
    min(its draw from kept_length, those steps) for verification (acceptance.py `kept_drafts`)."""

    steps_by_batch: dict[Annotated[int, Field(ge=1, le=MAX_USERS)], Annotated[int, Field(ge=0, le=MAX_STEPS)]]
    """Running batch size -> steps for iterations at that batch and up to the next key (0: plain decoding); needs key
    1."""

    _keys: list[int] = PrivateAttr(default_factory=list)  # the batch keys in order, read once

    def steps_for(self, batch: int) -> int:
        """The steps of the entry with the largest key <= batch: a bisection of the keys in order,
        as every iteration asks (a scan of a policy listing each batch up to 90,000 took 19 s)."""
        if not self._keys:
            self._keys = sorted(self.steps_by_batch)
        return self.steps_by_batch[self._keys[bisect.bisect_right(self._keys, batch) - 1]]


class Speculative(Section):
    design: Design = "none"
    """How drafting is organised: none | nextn | multi_layer | frozen_kv | parallel_heads."""
    steps: int = Field(default=3, ge=1, le=MAX_STEPS)
    """Draft tokens proposed per iteration (chain length); with a policy, the most any iteration runs."""
    topk: int = Field(default=1, ge=1, le=64)
    """Branching factor of the draft tree (1: a chain)."""
    draft_tokens: int | None = Field(default=None, ge=2)
    """Tokens verified per request per iteration, root included; default steps + 1 for a chain, 1 + steps x topk for
    a tree, at most 1 + topk + (steps - 1) x topk^2 (every candidate the tree proposes)."""
    # frozen_kv: the assistant; nextn: an external draft model (role: draft) instead of the model's
    # own MTP layer. A catalog name, {from: NAME, ...} or an inline spec
    draft: Ref | dict[str, Any] | None = None
    """frozen_kv: the assistant; nextn: an external draft model (role: draft). A catalog name, {from: NAME, ...} or
    an inline spec."""
    policy: Policy | None = None
    """Adaptive steps by running batch size; None: `steps` every iteration."""

    @field_validator("design", mode="before")
    @classmethod
    def _method_names(cls, value):
        """An engine's method name where a design is asked for: which design and draft express it."""
        if isinstance(value, str) and value not in DESIGNS and value.lower() in DESIGNS:
            raise ValueError(f"design names are lower case: {value.lower()}")
        hint = METHOD_DESIGNS.get(value.lower()) if isinstance(value, str) else None
        if hint is not None and value not in DESIGNS:
            raise ValueError(f"{value!r} is a speculative method, not a design: {hint} (the designs: "
                             f"{', '.join(DESIGNS)})")
        return value

    @model_validator(mode="after")
    def _shape(self) -> Speculative:
        if self.topk == 1 and self.draft_tokens not in (None, self.steps + 1):
            raise AtKey("draft_tokens", f"with topk 1, draft_tokens must be steps + 1 = {self.steps + 1}")
        if self.topk > 1 and self.draft_tokens is not None and self.draft_tokens > 1 + self.candidates:
            raise AtKey("draft_tokens", f"{self.draft_tokens} is more than the tree holds: 1 + the {self.candidates} "
                        f"candidates that steps {self.steps} at topk {self.topk} propose (topk + (steps - 1) x topk^2)")
        return self

    @property
    def candidates(self) -> int:
        """Drafts a tree proposes, of which it verifies the best draft_tokens - 1 (mtpsim/tree.py):
        topk at depth 1, then each of the topk live nodes' topk children at every later depth
        (SGLang's `organize_draft_results` ranks all of them: its own example verifies 64 of
        steps 5 at topk 8). A chain's: steps."""
        return self.topk + (self.steps - 1) * self.topk ** 2

    @property
    def num_draft_tokens(self) -> int:
        """N: tokens verified per request per iteration, root included (1 without speculation)."""
        if record(self.design).draft_part is None:
            return 1
        return self.draft_tokens or (self.steps + 1 if self.topk == 1 else 1 + self.steps * self.topk)


class Cost(Section):
    # auto: the measured profile the hardware names for engine.kind, else the roofline
    model: Literal["auto", "roofline", "calibrated"] = "auto"
    """auto (the measured profile the hardware names for engine.kind, else the roofline) | roofline | calibrated."""
    profile: Ref | None = None
    """A committed profile's name (mtpsim/data/profiles/) or a profile folder's path."""
    moe_skew: float = Field(default=0.0, ge=0, lt=1)  # routing skew: 0 = uniform
    """MoE routing skew: 0 = uniform routing over the experts."""
    moe_stream_overlap: float = Field(default=0.0, ge=0, le=1, description=(
        "Where the engine runs unfused shared experts on a second CUDA stream beside the routed experts "
        "(engine rules shared_experts_dual_stream, dual_stream_under_cuda_graphs, aux_stream_shared_experts), "
        "the share of the shorter branch's time that stream hides. 0: the branches take turns on the GPU, as "
        "the measured B200/B300 decode steps fit (mtpsim/costs/streams.py); 1: only the longer branch counts "
        "(aiconfigurator's OverlapOp)."))
    routing_locality: float = Field(default=0.0, ge=0, le=1, description=(
        "MoE routing locality: the share of a token's routed experts that its request's previous token also "
        "picked. A verify's k + 1 tokens of one request then touch 1 + k (1 - locality) tokens' worth of "
        "experts, not k + 1 (costs/ffn.py shared_routing). 0: every token routes independently (the default); "
        "Cohere measured ~2.5x one token's experts for 4 verified tokens on its MoE models, locality ~0.5 "
        "(docs/accuracy.md, 'A what-if')."))
    ep_imbalance: float | None = Field(default=None, ge=1, le=64, description=(
        "Under wide EP, the busiest EP rank's routed tokens over the mean; its experts and all-to-all set the "
        "layer's time. None: the published figure at EP32 (2.564 without EPLB, 1.109 with engine.eplb; "
        "mtpsim/costs/wide_ep.py) for wide EP over 32 ranks or more, else the busiest rank under uniform random "
        "routing at the pass's tokens (mtpsim/costs/ffn.py routed_imbalance: 2.5 at one token of DeepSeek-V3 over 8 "
        "ranks, toward 1 as the tokens grow)."))


class Verify(Section):
    num_layers: int = Field(default=2, ge=1, le=256)
    """Target layers to build in PyTorch (the simulation uses the same)."""
    hidden_scale: float = Field(default=0.0625, gt=0, le=1)
    """Factor shrinking the widths so the model fits the device."""
    num_experts: int = Field(default=8, ge=1, le=1024)
    """Cap on routed experts built."""
    device: Literal["cpu", "cuda", "auto"] = "auto"
    """cpu | cuda | auto."""
    iterations: int = Field(default=50, ge=1, le=100_000)
    """Timed decode iterations."""
    warmup_iterations: int = Field(default=5, ge=0, le=100_000)
    """Untimed iterations before them."""
    acceptance: Literal["forced", "greedy"] = "forced"
    """forced (drawn from the profile) | greedy (real comparison of tokens)."""
    dtype: Literal["fp32", "bf16", "fp16"] | None = None
    """fp32 | bf16 | fp16; None: bf16 on cuda, fp32 on cpu."""


class Scenario(Section):
    """A validated scenario (one sweep point). Catalog specs are resolved into `specs`."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$", max_length=120)
    """Used in output paths and titles."""
    question: Text | None = Field(default=None, max_length=2000)
    """The question the scenario answers, printed with the results."""
    model: Ref | dict[str, Any]
    """A catalog name, a spec file, {from: NAME, ...overrides} or {hf_config: config.json, ...overrides}."""
    hardware: Ref | dict[str, Any]
    """A catalog name, a spec file or {from: NAME, ...overrides}."""
    parallel: Parallel = Parallel()
    """How the model is sharded and replicated."""
    speculative: Speculative = Speculative()
    """The MTP design and its steps."""
    acceptance: Acceptance = Acceptance()
    """How often drafts are accepted (one form)."""
    workload: Workload = Workload()
    """Arrivals and request lengths."""
    engine: Engine = Engine()
    """The serving engine and its settings."""
    cost: Cost = Cost()
    """What prices the passes."""
    verify: Verify = Verify()
    """Only for `mtpsim verify`: the configuration actually built."""
    disaggregation: Disaggregation | None = None
    """Prefill and decode on separate pools; None: one aggregated replica group."""
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    """Random seed for lengths, arrivals and acceptance draws."""
    seeds: Seeds = 1  # replicates per point: seed, seed + 1, ... (intervals: mtpsim/intervals.py)
    """Replicates per point: seed, seed + 1, ... (means with 95% intervals)."""
    sweep: dict[str, list[Any]] | None = None
    """Dotted key -> list of values; the run is their product."""
    search: SearchBounds | None = None
    """`mtpsim search`'s bounds (mtpsim/search/bounds.py); `run` ignores it."""

    _specs: Specs = PrivateAttr()
    _source: str = PrivateAttr(default="<scenario>")
    _point: dict[str, Any] = PrivateAttr(default_factory=dict)
    _resolved_from: tuple = PrivateAttr(default=())  # what `specs` was resolved from (resolve.check_resolved)

    @property
    def specs(self) -> Specs:
        return self._specs

    @property
    def source(self) -> str:
        return self._source

    @property
    def point(self) -> dict[str, Any]:
        """The sweep values that made this point ({} when there is no sweep)."""
        return self._point

    @property
    def searched_designs(self) -> list[str]:
        """The designs `mtpsim search` compares (search.designs), [] where the section names none:
        what else this scenario's draft, acceptance and MTP layers may serve."""
        return list(self.search.designs) if self.search is not None and self.search.designs else []

    def describe_model(self) -> str:
        """The model in headers: its catalog name, and the alias the scenario gave where it gave one
        (`deepseek-v3 (as deepseek-r1)`): the reader sees the entry that was priced and why."""
        name, ref = self.specs.model.name, self.model
        return f"{name} (as {ref})" if isinstance(ref, str) and ref in self.specs.model.aliases and ref != name else name

    def describe_layout(self) -> str:
        """The deployment in headers: `parallel`'s GPUs and shape, or, disaggregated, the pools'
        (`16 h200 (prefill: 1 replica x tp 8; decode: 1 replica x tp 8)`)."""
        gpu, d = self.specs.hardware.name, self.disaggregation
        if d is None:
            return self.parallel.describe(gpu)
        return f"{d.prefill.gpus + d.decode.gpus} {gpu} (prefill: {d.prefill.shape(d.prefill.replicas)}; " \
               f"decode: {d.decode.shape(d.decode.replicas)})"


class Specs(Frozen, BaseModel):
    """Catalog entries a scenario resolves to, and the cost model that prices it: `cost_model`
    roofline or calibrated, with `profile` the calibrated profile's folder."""

    model_config = ConfigDict(frozen=True)
    model: ModelSpec
    """The resolved target model."""
    hardware: HardwareSpec
    """The resolved accelerator."""
    engine: EngineSpec
    """The resolved engine release."""
    assistant: ModelSpec | None = None
    """frozen_kv's assistant."""
    draft: ModelSpec | None = None
    """nextn's external draft model (role: draft), or block's drafter (role: block_draft)."""
    cost_model: Literal["roofline", "calibrated"] = "roofline"
    """roofline | calibrated."""
    profile: str | None = None
    """The calibrated profile's folder."""

    @property
    def block_kind(self) -> str | None:
        """The block drafter's kind (dflash, dspark) where the draft is one (design block), else None."""
        return self.draft.block.kind if self.draft is not None and self.draft.block is not None else None

    @property
    def pricing(self) -> str:
        """What priced the run, for headers and summaries: `roofline` or `calibrated:<profile>`."""
        return "roofline" if self.profile is None else f"calibrated:{Path(self.profile).name}"

    @property
    def priced_by(self) -> str:
        """`pricing` as the headers print it: with the release whose kernels a converted profile
        timed, since op times are that release's whatever engine.version the scenario names (its
        rules set scheduling, caps and host time; a check of new published cases found absolute
        times of a 2025 release 2-3x off with nothing in the output saying why)."""
        if self.profile is None:
            return self.pricing
        from mtpsim.costs.profile import held  # on first use: a roofline scenario never reads it
        kernels = held(Path(self.profile)).kernels
        return f"{self.pricing} ({kernels}'s kernels)" if kernels else self.pricing


def check_replicates(seed: int, seeds: int, where: str, key: str) -> None:
    """The replicates run seed, seed + 1, ..., seed + seeds - 1: past MAX_SEED is a ScenarioError
    naming `key` (the scenario's `seeds`, or the --seeds flag that gave the count)."""
    if seed + seeds - 1 > MAX_SEED:
        raise ScenarioError(where, key, f"{seeds} replicates from seed {seed} run past the largest seed {MAX_SEED} "
                            "(fewer seeds, or a smaller seed)")
