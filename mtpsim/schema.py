"""Scenario schema v1 (DESIGN §9): one frozen pydantic model per YAML section.

Every key, its type and default lives here; cross-section checks that need the catalog (a
design the model cannot run, an acceptance list shorter than steps) are in scenario.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mtpsim.designs import DESIGNS, record
from mtpsim.engines import EngineSpec
from mtpsim.specs import HardwareSpec, ModelSpec

Probability = Annotated[float, Field(ge=0.0, le=1.0)]  # an error names the entry: acceptance.per_depth.2
MAX_SEEDS = 1000  # replicates per point; past this a run is better split into several
Seeds = Annotated[int, Field(ge=1, le=MAX_SEEDS, strict=True)]  # strict: `seeds: true` is not 1

# Size limits (documented in docs/limits.md; ranges also in `mtpsim schema`): past them a run would take hours
# or more memory than a workstation has, so they are refused up front rather than left to hang.
MAX_REQUESTS = 1_000_000        # requests per run (~200 B of records each; a trace holds at most this)
MAX_TOKENS = 2**24              # any one length (input, output, chunk); models' max_context binds first
MAX_USERS = 100_000             # closed-loop users (one simpy process each), running requests
MAX_GPUS = 4096                 # tp, ep, dp
MAX_SWEEP_POINTS = 10_000       # points per scenario (split larger studies over several files)
MAX_RATE = 1e6                  # requests per second
MAX_SEED = 2**63 - 1


class Section(BaseModel):
    """Unknown keys are errors; types are strict (no `true` for 1, no "8" for 8, no 8.0 for an
    integer) and floats finite, so a typo is an error rather than a quietly different number."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Parallel(Section):
    tp: int = Field(default=1, ge=1, le=MAX_GPUS)   # GPUs per replica
    ep: int = Field(default=1, ge=1, le=MAX_GPUS)   # expert groups within a replica
    dp: int = Field(default=1, ge=1, le=MAX_GPUS)   # independent replicas
    # DP attention (SGLang --dp-size with --enable-dp-attention): attention groups inside a
    # replica, each with its own requests and KV, attention sharded over tp / attention_dp GPUs;
    # the MoE layers still span all tp GPUs (costs/dp_attention.py)
    attention_dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    gpus_per_node: int | None = Field(default=None, ge=1, le=MAX_GPUS)  # None: the hardware's

    @model_validator(mode="after")
    def _ep_divides_tp(self) -> Parallel:
        if self.tp % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide tp ({self.tp})")
        # SGLang server_args.py _handle_data_parallelism: assert tp_size % dp_size == 0
        if self.tp % self.attention_dp:
            raise ValueError(f"attention_dp ({self.attention_dp}) must divide tp ({self.tp})")
        return self

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

    def steps_for(self, batch: int) -> int:
        """The steps of the entry with the largest key <= batch."""
        return self.steps_by_batch[max(k for k in self.steps_by_batch if k <= batch)]


class Speculative(Section):
    design: Design = "none"
    steps: int = Field(default=3, ge=1, le=MAX_STEPS)  # with a policy: the most any iteration runs
    topk: int = Field(default=1, ge=1, le=64)
    draft_tokens: int | None = Field(default=None, ge=2)
    # frozen_kv: the assistant; nextn: an external draft model (role: draft) instead of the model's
    # own MTP layer. A catalog name, {from: NAME, ...} or an inline spec
    draft: str | dict[str, Any] | None = None
    policy: Policy | None = None  # steps per running batch size (adaptive); None: `steps` every iteration

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


ROW_SUM_SLACK = 1e-9  # rounding in a measured row (0.7 + 0.2 + 0.1) must not refuse it


class Acceptance(Section):
    per_depth: list[Probability] | None = None     # conditional alpha_k
    # tree drafts: row k, column j = P(target's token at depth k is the draft's j-th best | path accepted)
    per_depth_topk: list[list[Probability]] | None = None
    cumulative: list[Probability] | None = None    # a_k = P(at least k accepted)
    accept_length: float | None = Field(default=None, ge=1)
    histogram: str | None = None                   # CSV accepted,count (measured)
    spread: float = Field(default=0.0, ge=0, lt=1)
    # draft length that adapts per request (a confidence threshold, a depth controller): entry j =
    # P(the rule keeps exactly j drafts of the iteration's for verification), j = 0, 1, ...; the
    # acceptance above is then that of the drafts kept. None: every draft is verified
    kept_length: list[Probability] | None = Field(default=None, min_length=2, max_length=MAX_STEPS + 1)

    @field_validator("kept_length")
    @classmethod
    def _a_distribution(cls, pmf: list[float] | None) -> list[float] | None:
        if pmf is not None and abs(sum(pmf) - 1.0) > 1e-6:
            raise ValueError(f"sums to {sum(pmf):.6g}, not 1: it is the distribution of drafts kept (entry j: "
                             "P(exactly j kept))")
        return pmf

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
        given = [k for k in ("per_depth", "per_depth_topk", "cumulative", "accept_length", "histogram")
                 if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of per_depth, per_depth_topk, cumulative, accept_length, histogram (got {given})")
        if self.cumulative and any(b > a for a, b in zip(self.cumulative, self.cumulative[1:])):
            raise ValueError("cumulative: must not increase with depth")
        return self


class LengthDist(Section):
    dist: Literal["uniform", "normal", "lognormal"]
    min: int = Field(default=1, ge=1, le=MAX_TOKENS)
    max: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    mean: float | None = Field(default=None, gt=0, le=MAX_TOKENS)  # normal, lognormal (the mean of the lengths)
    std: float | None = Field(default=None, ge=0, le=MAX_TOKENS)   # normal, lognormal

    @model_validator(mode="after")
    def _params(self) -> LengthDist:
        if self.dist == "uniform" and self.max is None:
            raise ValueError("uniform needs min and max")
        if self.dist != "uniform" and (self.mean is None or self.std is None or self.max is None):
            raise ValueError(f"{self.dist} needs mean, std and max (a context window bounds every length)")
        if self.max is not None and self.max < self.min:
            raise ValueError("max is below min")
        return self


Length = Annotated[int, Field(ge=1, le=MAX_TOKENS)] | LengthDist


def max_length(length: Length) -> int:
    """The longest a fixed or distributed `input_len` / `output_len` can be."""
    return length if isinstance(length, int) else length.max


def mean_length(length: Length) -> int:
    """The typical length of a fixed or distributed `input_len` / `output_len`."""
    if isinstance(length, int):
        return length
    return (length.min + length.max) // 2 if length.dist == "uniform" else int(length.mean)


class RatePhase(Section):
    """One phase of a Poisson load whose rate changes: `rate_per_s` until `until_s` (simulated
    seconds from the start of the schedule's cycle)."""

    until_s: float = Field(gt=0, le=1e9)
    rate_per_s: float = Field(gt=0, le=MAX_RATE)


TRACE_FORMATS = ("auto", "mtpsim", "azure", "burstgpt", "mooncake")  # mtpsim/tracefiles/formats.py
MAX_TRACE_S = 1e9  # a trace's timestamps, in seconds from its origin (~32 years)


class TraceFile(Section):
    """A trace to replay (mtpsim/tracefiles): which file, in which format, and which part of it.
    Given as a plain path it is read whole, its format recognised from its header."""

    path: str
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
            raise ValueError(f"end_s ({self.end_s:g}) must come after start_s ({self.start_s:g})")
        return self


class SharedPrefix(Section):
    """A system prompt shared by a fraction of requests: those requests' first `tokens` prompt
    tokens (input_len counts them) are one of `groups` prompts, drawn uniformly."""

    tokens: int = Field(ge=1, le=MAX_TOKENS)
    fraction: Probability = 1.0
    groups: int = Field(default=1, ge=1, le=MAX_REQUESTS)


class Workload(Section):
    arrival: Literal["closed", "poisson", "batch", "trace"] = "closed"
    concurrency: int = Field(default=1, ge=1, le=MAX_USERS)
    rate_per_s: float | None = Field(default=None, gt=0, le=MAX_RATE)
    # poisson whose rate swings: phases in order, the schedule repeating after the last until_s
    rate_schedule: list[RatePhase] | None = Field(default=None, min_length=1, max_length=1000)
    num_requests: int = Field(default=64, ge=1, le=MAX_REQUESTS)
    input_len: Length = Field(default=1024)
    output_len: Length = Field(default=256)
    trace: TraceFile | None = None  # a path, or a mapping with the path and how to read it
    shared_prefix: SharedPrefix | None = None  # synthetic loads: a system prompt some requests share

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_path(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _arrival_needs(self) -> Workload:
        if self.arrival == "poisson" and self.rate_per_s is None and self.rate_schedule is None:
            raise ValueError("arrival poisson needs rate_per_s (or a rate_schedule)")
        if self.arrival == "trace" and self.trace is None:
            raise ValueError("arrival trace needs trace (a CSV with arrival_s,input_len,output_len)")
        return self


class PrefixCacheSettings(Section):
    """Prefix caching over the KV pool (mtpsim/sim/prefix_cache.py). SGLang (RadixAttention),
    vLLM V1 (automatic prefix caching) and TRT-LLM (KV block reuse) turn it on by default; here
    it is off unless given, so runs without it match earlier results."""

    block_tokens: int = Field(default=16, ge=1, le=MAX_TOKENS, description=(
        "Tokens per cached block (vLLM --block-size defaults to 16; SGLang's radix tree works per token, "
        "page_size 1). A Mooncake trace's hash_ids use its own workload.trace.block_size instead."))
    max_tokens: int | None = Field(default=None, ge=1, le=2**40, description=(
        "The most tokens cached blocks may hold; None: any room the KV pool has. More than the pool holds is an error."))


class Engine(Section):
    kind: Literal["sglang", "vllm", "trtllm"] = "sglang"  # mtpsim/data/engines/<kind>.yaml: host time, overlap
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
    max_graph_batch: int = Field(default=256, ge=1, le=MAX_USERS)
    overlap_schedule: bool = True
    chunked_prefill_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description=(
        "Prompt tokens per prefill batch. None: the engine's default on this GPU (SGLang chunked_prefill_size by "
        "GPU memory, vLLM max_num_batched_tokens, TensorRT-LLM max_num_tokens; mtpsim/data/engines/<kind>.yaml)."))
    prefix_cache: PrefixCacheSettings | None = None  # None: no prefix caching
    # the fraction of GPU memory the engine's KV-pool rule reads (SGLang mem_fraction_static, vLLM
    # gpu_memory_utilization, TRT-LLM free_gpu_memory_fraction; engines/<kind>.yaml kv_pool);
    # None: the engine's default
    mem_fraction: float | None = Field(default=None, gt=0, le=1)


class Pool(Section):
    """One pool of a disaggregated deployment: its replicas and each replica's parallel layout
    (the keys `parallel` has, replicas for dp)."""

    replicas: int = Field(default=1, ge=1, le=MAX_GPUS)
    tp: int = Field(default=1, ge=1, le=MAX_GPUS)
    ep: int = Field(default=1, ge=1, le=MAX_GPUS)
    attention_dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    gpus_per_node: int | None = Field(default=None, ge=1, le=MAX_GPUS)  # None: the hardware's NVLink domain

    @model_validator(mode="after")
    def _layout_divides(self) -> Pool:
        if self.tp % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide tp ({self.tp})")
        if self.tp % self.attention_dp:
            raise ValueError(f"attention_dp ({self.attention_dp}) must divide tp ({self.tp})")
        return self

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
    decode: Pool
    link: Literal["auto", "nvlink", "network", "free"] = "auto"
    gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS)


class Cost(Section):
    # auto: the measured profile the hardware names for engine.kind, else the roofline
    model: Literal["auto", "roofline", "calibrated"] = "auto"
    profile: str | None = None  # a committed profile's name (mtpsim/data/profiles/), or a profile folder's path
    moe_skew: float = Field(default=0.0, ge=0, lt=1)  # routing skew: 0 = uniform (DESIGN §4)


class Verify(Section):
    num_layers: int = Field(default=2, ge=1, le=256)
    hidden_scale: float = Field(default=0.0625, gt=0, le=1)
    num_experts: int = Field(default=8, ge=1, le=1024)
    device: Literal["cpu", "cuda", "auto"] = "auto"
    iterations: int = Field(default=50, ge=1, le=100_000)
    warmup_iterations: int = Field(default=5, ge=0, le=100_000)
    acceptance: Literal["forced", "greedy"] = "forced"
    dtype: Literal["fp32", "bf16", "fp16"] | None = None


class Scenario(Section):
    """A validated scenario (one sweep point). Catalog specs are resolved into `specs`."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$", max_length=120)
    question: str | None = Field(default=None, max_length=2000)
    model: str | dict[str, Any]
    hardware: str | dict[str, Any]
    parallel: Parallel = Parallel()
    speculative: Speculative = Speculative()
    acceptance: Acceptance = Acceptance()
    workload: Workload = Workload()
    engine: Engine = Engine()
    cost: Cost = Cost()
    verify: Verify = Verify()
    disaggregation: Disaggregation | None = None  # prefill and decode pools (None: one aggregated group)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    seeds: Seeds = 1  # replicates per point: seed, seed + 1, ... (intervals: mtpsim/intervals.py)
    sweep: dict[str, list[Any]] | None = None

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

    model_config = ConfigDict(frozen=True)
    model: ModelSpec
    hardware: HardwareSpec
    engine: EngineSpec
    assistant: ModelSpec | None = None  # frozen_kv's assistant
    draft: ModelSpec | None = None      # nextn's external draft model (role: draft), block's drafter (role: block_draft)
    cost_model: Literal["roofline", "calibrated"] = "roofline"
    profile: str | None = None

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
