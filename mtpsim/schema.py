"""Scenario schema v1: one frozen pydantic model per YAML section.

Every key, its type and default lives here; cross-section checks that need the catalog (a
design the model cannot run, an acceptance list shorter than steps) are in scenario.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mtpsim.acceptance import curve_problem
from mtpsim.designs import DESIGNS, record
from mtpsim.engines import EngineSpec
from mtpsim.limits import (  # noqa: F401 (the limits are read from here too)
    MAX_GPUS,
    MAX_RATE,
    MAX_REQUESTS,
    MAX_SCHEDULE_DRAWS,
    MAX_SEED,
    MAX_SEEDS,
    MAX_SIM_S,
    MAX_SWEEP_POINTS,
    MAX_TOKENS,
    MAX_USERS,
)
from mtpsim.search.bounds import SearchBounds
from mtpsim.sections import Probability, Ref, Section  # noqa: F401 (read from here too)
from mtpsim.specs import HardwareSpec, ModelSpec
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


class Layout(Section):
    """How one replica is sharded: the keys `parallel` and each disaggregated pool share."""

    tp: int = Field(default=1, ge=1, le=MAX_GPUS)
    """GPUs per replica (tensor parallel)."""
    ep: int = Field(default=1, ge=1, le=MAX_GPUS)
    """Expert groups within a replica; experts are split over them, each expert over tp / ep GPUs."""
    # DP attention (SGLang --dp-size with --enable-dp-attention): attention groups inside a
    # replica, each with its own requests and KV, attention sharded over tp / attention_dp GPUs;
    # the MoE layers still span all tp GPUs (costs/dp_attention.py)
    attention_dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    """DP attention groups inside a replica (SGLang --enable-dp-attention); must divide tp."""
    gpus_per_node: int | None = Field(default=None, ge=1, le=MAX_GPUS)
    """GPUs per node (NVLink domain); None: the hardware's. A replica wider than a node spans whole nodes."""

    @model_validator(mode="after")
    def _ep_divides_tp(self):
        if self.tp % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide tp ({self.tp})")
        # SGLang server_args.py _handle_data_parallelism: assert tp_size % dp_size == 0
        if self.tp % self.attention_dp:
            raise ValueError(f"attention_dp ({self.attention_dp}) must divide tp ({self.tp})")
        return self


class Parallel(Layout):
    dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    """Independent replicas, each with its own batch and KV."""

    def describe(self, gpu: str) -> str:
        """The layout in headers: `16 h200 (2 replicas x tp 8, ep 8)`: GPUs in all, then dp x tp."""
        n = self.dp * self.tp
        parts = [f"{self.dp} replica{'s' * (self.dp > 1)} x tp {self.tp}"] + [f"ep {self.ep}"] * (self.ep > 1) + \
            [f"attention_dp {self.attention_dp}"] * (self.attention_dp > 1)
        return f"{n} {gpu} ({', '.join(parts)})"

    @property
    def attention_tp(self) -> int:
        """GPUs one attention group shards its heads over (SGLang attn_tp_size = tp / dp)."""
        return self.tp // self.attention_dp


Design = Literal[DESIGNS]  # none | nextn | multi_layer | frozen_kv | parallel_heads (designs.py)
MAX_STEPS = 64  # draft steps per iteration; a chain past this accepts nothing more


class Policy(Section):
    """An adaptive steps policy: each decode iteration runs the steps of the entry with the
    largest batch key <= the running batch (0: plain decoding that iteration). The keys are
    running batch sizes, the first must be 1; values at most `speculative.steps`, which stays
    the most the run reserves KV, draws acceptance and keeps draft layers for (those checks
    need the other keys: scenario.py). With `acceptance.kept_length` the two compose: the policy
    sets how many drafts the iteration proposes for its running batch, then each request keeps
    min(its draw from kept_length, those steps) for verification (acceptance.py `kept_drafts`)."""

    steps_by_batch: dict[Annotated[int, Field(ge=1, le=MAX_USERS)], Annotated[int, Field(ge=0, le=MAX_STEPS)]]
    """Running batch size -> steps for iterations at that batch and up to the next key (0: plain decoding); needs key
    1."""

    def steps_for(self, batch: int) -> int:
        """The steps of the entry with the largest key <= batch."""
        return self.steps_by_batch[max(k for k in self.steps_by_batch if k <= batch)]


class Speculative(Section):
    design: Design = "none"
    """How drafting is organised: none | nextn | multi_layer | frozen_kv | parallel_heads."""
    steps: int = Field(default=3, ge=1, le=MAX_STEPS)
    """Draft tokens proposed per iteration (chain length); with a policy, the most any iteration runs."""
    topk: int = Field(default=1, ge=1, le=64)
    """Branching factor of the draft tree (1: a chain)."""
    draft_tokens: int | None = Field(default=None, ge=2)
    """Tokens verified per request per iteration, root included; default steps + 1 for a chain."""
    # frozen_kv: the assistant; nextn: an external draft model (role: draft) instead of the model's
    # own MTP layer. A catalog name, {from: NAME, ...} or an inline spec
    draft: Ref | dict[str, Any] | None = None
    """frozen_kv: the assistant; nextn: an external draft model (role: draft). A catalog name, {from: NAME, ...} or
    an inline spec."""
    policy: Policy | None = None
    """Adaptive steps by running batch size; None: `steps` every iteration."""

    @model_validator(mode="after")
    def _shape(self) -> Speculative:
        if self.topk == 1 and self.draft_tokens not in (None, self.steps + 1):
            raise ValueError(f"with topk 1, draft_tokens must be steps + 1 = {self.steps + 1}")
        if self.topk > 1 and self.draft_tokens is not None and self.draft_tokens > 1 + self.steps * self.topk:
            raise ValueError("draft_tokens exceeds 1 + steps * topk (more than the tree holds)")
        return self

    @property
    def num_draft_tokens(self) -> int:
        """N: tokens verified per request per iteration, root included (1 without speculation)."""
        if record(self.design).draft_part is None:
            return 1
        return self.draft_tokens or (self.steps + 1 if self.topk == 1 else 1 + self.steps * self.topk)


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
    profile: str | None = Field(default=None, max_length=120)
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
            raise ValueError("forced acceptance is the engine's rule exactly: spread must be 0")
        if self.cumulative and any(b > a for a, b in zip(self.cumulative, self.cumulative[1:])):
            raise ValueError("cumulative: must not increase with depth")
        return self


class PrefixCacheSettings(Section):
    """Prefix caching over the KV pool (mtpsim/sim/prefix_cache.py, sim/caching.py). SGLang
    (RadixAttention), vLLM V1 (automatic prefix caching) and TRT-LLM (KV block reuse) turn it on
    by default, and so does a scenario without this section (mtpsim/data/engines/<kind>.yaml
    `prefix_cache`); `enabled: false` turns it off."""

    enabled: bool = True
    """Whether the engine caches prompt prefixes (the engine's default when the section is absent: on)."""
    block_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description=(
        "Tokens per cached block. None: the engine's (vLLM --block-size 16, TensorRT-LLM tokens_per_block 32; "
        "SGLang's radix tree works per token, taken as 16). A Mooncake trace's hash_ids use its own "
        "workload.trace.block_size instead."))
    max_tokens: int | None = Field(default=None, ge=1, le=2**40, description=(
        "The most tokens cached blocks may hold; None: any room the KV pool has. More than the pool holds is an error."))


class Engine(Section):
    kind: Literal["sglang", "vllm", "trtllm"] = "sglang"
    """The serving engine: sglang | vllm | trtllm (mtpsim/data/engines/<kind>.yaml: host time, overlap, KV pool)."""
    version: str | None = Field(default=None, max_length=40, description=(
        "The engine release (e.g. \"0.5.12\"); its version rules (mtpsim/data/engines/<kind>.yaml `rules`) set "
        "the speculative running-request cap, whether speculation overlaps host work, the verify scorer. "
        "None: the catalog's default release. `mtpsim engines` lists the releases and rules."))
    max_running_requests: int | None = Field(default=None, ge=1, le=MAX_USERS, description=(
        "Running-request cap. None: the engine's rule at its version (SGLang sets 48 under speculative "
        "decoding), else 256."))
    speculative_overlap: bool | None = Field(default=None, description=(
        "Whether speculative iterations overlap host work (SGLang SGLANG_ENABLE_SPEC_V2, vLLM async "
        "scheduling). None: the engine's rule at its version."))
    ignore_rules: list[str] = Field(default_factory=list, max_length=32, description=(
        "Version rules to resolve the engine without (what-if studies, the leave-one-rule-out benchmark)."))
    cuda_graphs: bool = True
    """Whether decode batches up to max_graph_batch replay CUDA graphs (fewer launch costs)."""
    max_graph_batch: int = Field(default=256, ge=1, le=MAX_USERS)
    """Largest batch with a captured CUDA graph; larger batches run eagerly."""
    overlap_schedule: bool = True
    """Whether the host prepares the next iteration while the GPU runs this one."""
    eplb: bool = Field(default=False, description=(
        "Whether EPLB places (and replicates) experts by their measured load (SGLang --enable-eplb or "
        "--init-expert-location with --ep-num-redundant-experts, TensorRT-LLM moe_config.load_balancer; off by "
        "default in both). Sets the default cost.ep_imbalance."))
    two_batch_overlap: bool = Field(default=False, description=(
        "Two-batch overlap: the target's MoE layers run as two micro-batches, one's DeepEP dispatch + combine "
        "hidden under the other's compute (SGLang --enable-two-batch-overlap, off by default in server_args.py "
        "of v0.4.7; mtpsim/costs/overlap.py). Changes only layouts whose MoE layers run wide EP."))
    chunked_prefill_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description=(
        "Prompt tokens per prefill batch. None: the engine's default on this GPU (SGLang chunked_prefill_size by "
        "GPU memory, vLLM max_num_batched_tokens, TensorRT-LLM max_num_tokens; mtpsim/data/engines/<kind>.yaml)."))
    prefix_cache: PrefixCacheSettings | None = None
    """Prefix caching over the KV pool; None: the engine's default (on; `{enabled: false}` turns it off)."""
    dp_routing: Literal["round_robin", "least_loaded", "cache_aware"] | None = Field(default=None, description=(
        "How arrivals are spread over dp replicas (and a disaggregated prefill pool's): round_robin | least_loaded | "
        "cache_aware (SGLang's router: prefix affinity unless loads spread). None: the engine's (SGLang's "
        "--dp-size round robin, vLLM's least loaded; mtpsim/data/engines/<kind>.yaml dp_routing)."))
    mixed_batches: bool | None = Field(default=None, description=(
        "Whether waiting prompts' chunks ride inside decode iterations, up to chunked_prefill_tokens tokens in all "
        "(the decode batch's tokens, 1 + steps per request, first). None: the engine's default (vLLM and TensorRT-LLM "
        "mix, SGLang does not; SGLang never mixes under speculative decoding: mtpsim/data/engines/<kind>.yaml)."))
    # the fraction of GPU memory the engine's KV-pool rule reads (SGLang mem_fraction_static, vLLM
    # gpu_memory_utilization, TRT-LLM free_gpu_memory_fraction; engines/<kind>.yaml kv_pool);
    # None: the engine's default
    mem_fraction: float | None = Field(default=None, gt=0, le=1)
    """Fraction of GPU memory the engine's KV-pool rule reads (SGLang mem_fraction_static, vLLM
    gpu_memory_utilization, TRT-LLM free_gpu_memory_fraction); None: the engine's default."""


class Pool(Layout):
    """One pool of a disaggregated deployment: its replicas and each replica's parallel layout
    (the keys `parallel` has, replicas for dp)."""

    replicas: int = Field(default=1, ge=1, le=MAX_GPUS)
    """Independent replicas in the pool (dp)."""

    @property
    def gpus(self) -> int:
        return self.replicas * self.tp


class Disaggregation(Section):
    """Prefill and decode on separate pools (mtpsim/sim/disagg.py): a request prefills in the
    prefill pool, its KV moves over `link` to the decode pool, and it decodes there.

    link: `auto` (NVLink when both pools fit one NVLink domain, the scale-out network otherwise),
    `nvlink`, `network`, or `free` (no transfer cost: a what-if, and the check that the pools
    invent no time). gpus: the deployment's GPU count the pools must fit in (None: their sum)."""

    prefill: Pool
    """The pool that prefills prompts."""
    decode: Pool
    """The pool that decodes, after the KV transfer."""
    link: Literal["auto", "nvlink", "network", "free"] = "auto"
    """What the KV crosses: auto | nvlink | network | free (no cost)."""
    gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS)
    """The deployment's GPU count the pools must fit in; None: their sum."""
    kv_streaming: bool = Field(default=False, description=(
        "Whether the KV moves layer by layer while the prompt prefills, so only what the last layer adds (or what "
        "the link could not keep up with) follows the prefill (Mooncake's layer-wise prefill; vllm-ascend "
        "kv_p2p/layerwise_push; mtpsim/pools.py). False: the whole KV moves after the prefill."))


class Cost(Section):
    # auto: the measured profile the hardware names for engine.kind, else the roofline
    model: Literal["auto", "roofline", "calibrated"] = "auto"
    """auto (the measured profile the hardware names for engine.kind, else the roofline) | roofline | calibrated."""
    profile: Ref | None = None
    """A committed profile's name (mtpsim/data/profiles/) or a profile folder's path."""
    moe_skew: float = Field(default=0.0, ge=0, lt=1)  # routing skew: 0 = uniform
    """MoE routing skew: 0 = uniform routing over the experts."""
    ep_imbalance: float | None = Field(default=None, ge=1, le=64, description=(
        "Under wide EP, the busiest EP rank's routed tokens over the mean; its experts and all-to-all set the "
        "layer's time. None: the published figure at EP32 (2.564 without EPLB, 1.109 with engine.eplb; "
        "mtpsim/costs/wide_ep.py) for wide EP over 32 ranks or more, else 1 (uniform)."))


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
    question: str | None = Field(default=None, max_length=2000)
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


class Specs(BaseModel):
    """Catalog entries a scenario resolves to, and the cost model that prices it: `cost_model`
    roofline or calibrated, with `profile` the calibrated profile's folder."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)
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
    def pricing(self) -> str:
        """What priced the run, for headers and summaries: `roofline` or `calibrated:<profile>`."""
        return "roofline" if self.profile is None else f"calibrated:{Path(self.profile).name}"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (`mtpsim schema`): every key, its type and default.
    `model` and `hardware` are catalog names, spec files or mappings (catalog.py's specs; a model
    mapping may read a Hugging Face config.json: `{hf_config: path, ...overrides}`)."""
    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": "mtpsim scenario"}
