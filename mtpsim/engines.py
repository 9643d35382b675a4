"""A serving engine at a release: the `EngineSpec` that prices and schedules a scenario (host
time, overlap, caps, verify scorer, KV pool, prefill chunk, mixed batches, prefix cache, dp
routing), the fields of its catalog file (mtpsim/data/engines/<kind>.yaml); the sections it holds
are engine_sections.py's (re-exported here). Which value a field
takes at a release is engine_releases.py's: it resolves the file's version rules into one
EngineSpec.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from mtpsim.designs import DESIGNS, RECORDS
from mtpsim.engine_memory import KVPoolSpec, TpFractions
from mtpsim.engine_sections import (  # noqa: F401 (the sections, read from here too)
    CapClass,
    ChunkClass,
    DpRouting,
    GpuClass,
    GraphCapture,
    HostTime,
    MixedBatches,
    PrefixCacheDefault,
    RunningCap,
    as_tuple,
    classes_read,
    first_holding,
)
from mtpsim.errors import AtKey
from mtpsim.limits import MAX_USERS
from mtpsim.specs import Architecture, ServedAs, Spec
from mtpsim.textnumbers import first_repeat

DEFAULT_MAX_RUNNING = 256  # running requests an engine file that names no running_cap admits (the shipped ones give theirs)
# The bounds of an engine file's (and its version rules') sizes are the scenario's for the same
# quantities (limits.py, engine_schema.py): a cap or CUDA-graph batch as engine.max_running_requests,
# a token count as engine.chunked_prefill_tokens, a tp as parallel.tp, a topk as speculative.topk,
# MiB as hardware memory_capacity_bytes (engine_memory.py MAX_MIB)
MAX_TOPK = 64


class EngineSpec(Spec):
    """A serving engine's host side (mtpsim/data/engines/<kind>.yaml, sources in its comment).

    host: per-iteration host time (scheduling, sampling, acceptance bookkeeping, input
    preparation) for plain decoding and for speculative iterations. hides: per design, the pass
    kinds during which the host prepares the next iteration (overlap scheduling); a design not
    listed hides nothing, so its host time is exposed every iteration."""

    name: str
    host: dict[Literal["decode", "speculative"], HostTime]
    hides: dict[Literal[DESIGNS], list[Literal["decode", "draft", "verify", "extend", "prefill"]]] = \
        Field(default_factory=dict)
    # the running-request cap the engine sets for speculative decoding when none is configured
    speculative_max_running_requests: int | None = Field(default=None, gt=0, le=MAX_USERS)
    # running-request caps the engine sets for a model class (its architectures[0]) when none is
    # configured, before its speculative default can (`for_model`)
    architecture_running_cap: dict[Architecture, Annotated[int, Field(gt=0, le=MAX_USERS)]] = Field(default_factory=dict)
    # host seconds a speculative iteration pays beyond `host.speculative` in some releases (vLLM V0's
    # SpecDecodeWorker: proposals synced to the CPU and the scoring batch built in Python)
    speculative_host_extra_s: float = Field(default=0.0, ge=0, le=1)
    # whether plain decoding overlaps host work (SGLang's overlap scheduler, vLLM's async scheduling
    # from v0.14); when False `none` hides nothing, whatever `hides` lists for it
    decode_overlap: bool = True
    # whether speculative iterations overlap host work at all (SGLang spec v2, vLLM async scheduling
    # of drafts); when False a speculative design hides nothing, whatever `hides` lists for it
    speculative_overlap: bool = True
    # whether the release has a speculative overlap to turn on at all (engine.speculative_overlap:
    # true takes it): SGLang's spec v2 from v0.5.5, vLLM's async speculative scheduling from v0.14
    speculative_overlap_possible: bool = True
    speculative_overlap_max_topk: int | None = Field(default=None, ge=1, le=MAX_TOPK)  # wider trees do not overlap
    # designs whose speculative worker this release runs without the overlap scheduler, whatever
    # speculative_overlap says for the others (SGLang's DFLASH and FROZEN_KV_MTP before v0.5.14)
    unoverlapped_designs: tuple[Literal["nextn", "multi_layer", "frozen_kv", "parallel_heads", "block"], ...] = ()
    # speculative pass kinds this release runs outside CUDA graphs even where graphs are on (SGLang's
    # EAGLE draft extend before v0.4.7): each kernel pays its own launch (costs/deployment.py uses_graphs)
    eager_passes: tuple[Literal["draft", "verify", "extend"], ...] = ()
    # how the target scores a request's draft window: one pass with N queries per request (mqa), or
    # the window expanded into N single-query sequences, each reading the request's whole KV
    # (vLLM V0's BatchExpansionTop1Scorer)
    verify_scorer: Literal["mqa", "batch_expansion"] = "mqa"
    # whether the engine runs a model's shared experts inside its routed-expert kernel where the
    # model allows it (SGLang's shared-expert fusion: costs/ops.py fusable_shared_experts)
    fuses_shared_experts: bool = False
    # ... except on GPUs of at least this compute capability, where the engine's default MoE
    # kernel for FP8/FP4 experts cannot take them (SGLang's flashinfer_trtllm runner on sm100)
    shared_fusion_below_capability: float | None = Field(default=None, ge=1, le=20)
    # on GPUs of at least this compute capability the release runs FP8 (block-scaled) experts
    # through its Triton fused-MoE runner, not the faster kernel a profile's `moe` table keeps
    # (SGLang before v0.5.5 on sm100): they are priced from the profile's `moe_triton` table
    # where it has one (`moe_table`; costs/calibrated.py), from `moe` where it has none
    triton_fp8_moe_from_capability: float | None = Field(default=None, ge=1, le=20)
    # when the engine runs unfused shared experts on a second CUDA stream beside the routed ones
    # (costs/streams.py): never, in passes of at most 1,024 tokens, or in CUDA-graph passes
    shared_expert_stream: Literal["none", "small_passes", "graphs"] = "none"
    # query heads a GPU's compressed-attention kernel (DeepSeek-V4's FlashMLA sparse decode and
    # prefill) runs under attention tp > 1: its own (`per_rank`), every head of the model
    # (`all_heads`), or 64 where its own fit in 64, else every head (`to_64`), the rest zero-padded
    # (costs/compressed.py CompressedKernel)
    compressed_query_heads: Literal["per_rank", "all_heads", "to_64"] = "per_rank"
    # the attention kernel the release runs on every layer of a model whose attention layers mix
    # head sizes (vLLM forces its Triton unified attention for Gemma 4), which no profile times:
    # said in one warning where such a model is served (resolve.py), not priced
    mixed_head_attention: str | None = Field(default=None, min_length=1, max_length=80)
    # ... except on GPUs of compute capability in [low, high), where the release runs such a model
    # on FlashAttention 4 (vLLM from v0.24.0), which the profiles' FlashAttention rows price
    mixed_head_fa4_capability: tuple[Annotated[float, Field(ge=1, le=20)], Annotated[float, Field(ge=1, le=20)]] | None = None
    # what this release has no speculative method for, where its code was read: a design, or a block
    # drafter's kind (dflash, dspark); a scenario running one is priced with the engine's host rules
    # as if it ran it, with one warning (engine_advice.py)
    # eagle3: an external EAGLE-3 draft (one that fuses target layers) under design nextn
    lacks_methods: tuple[Literal["multi_layer", "frozen_kv", "parallel_heads", "dflash", "dspark", "eagle3"], ...] = ()
    # model classes (ModelSpec.served_as) this release has no code for, where its code was read: a
    # scenario serving one is priced with the engine's rules as if it ran it, with one warning (engine_advice.py)
    lacks_architectures: tuple[ServedAs, ...] = ()
    # designs whose iterations this release mixes prompt chunks into, where mixing is on, by running
    # that step's requests as plain one-token decodes (SGLang from v0.5.19): not modelled, said in one
    # warning (engine_advice.py); mixed_batches.speculative stays the rule mtpsim prices
    mixes_as_decode: tuple[Literal["nextn", "multi_layer", "frozen_kv", "parallel_heads", "block"], ...] = ()
    # whether a prefill runs a model's replay tail (ModelSpec.replay_tail: DeepSeek-V4.1's decoder
    # layers) over each request's last window of prompt tokens only (SGLang's decoder SWA bounded replay)
    prefill_tail_replay: bool = False
    version: str = ""            # the release these fields were resolved for (engine_releases.py)
    rules: tuple[str, ...] = ()  # the version rules in force at that release
    set_by: dict[str, str] = Field(default_factory=dict)  # a field a rule in force set -> that rule's name
    kv_pool: KVPoolSpec  # how the engine sizes its KV pool (memory.py)
    # a release's default memory fraction by tp, where it predates kv_pool.reserved's rule (a version rule sets it)
    fraction_by_tp: TpFractions | None = None
    # the default prefill chunk by GPU (vLLM max_num_batched_tokens, TensorRT-LLM max_num_tokens);
    # None: SGLang's memory classes (kv_pool.reserved) give its chunked_prefill_size
    prefill_chunk: list[ChunkClass] | None = Field(default=None, min_length=1)
    # whether prefill chunks ride inside decode iterations (vLLM V1, TensorRT-LLM in-flight batching)
    mixed_batches: MixedBatches = MixedBatches()
    prefix_cache: PrefixCacheDefault = PrefixCacheDefault()  # the engine's prefix cache without flags
    cuda_graph: GraphCapture = GraphCapture()  # the CUDA graphs it captures without flags
    running_cap: RunningCap = RunningCap(fixed=DEFAULT_MAX_RUNNING)  # the requests it admits without flags
    dp_routing: DpRouting = DpRouting()  # how arrivals are spread over dp replicas

    @field_validator("unoverlapped_designs", "eager_passes", "mixes_as_decode", "mixed_head_fa4_capability", "lacks_methods",
                     "lacks_architectures",
                     mode="before")
    @classmethod
    def _lists_as_tuples(cls, value):
        return as_tuple(value)

    @model_validator(mode="after")
    def _designs_once(self) -> EngineSpec:
        """A design listed twice says nothing more (as `hides` refuses a pass listed twice)."""
        for key in ("unoverlapped_designs", "eager_passes", "mixes_as_decode", "lacks_methods", "lacks_architectures"):
            again = first_repeat(list(getattr(self, key)))
            if again is not None:
                raise AtKey(f"{key}.{again}", f"{getattr(self, key)[again]} is listed twice: list each once")
        return self

    @model_validator(mode="after")
    def _both_host_times(self) -> EngineSpec:
        if set(self.host) != {"decode", "speculative"}:
            raise ValueError("host needs decode and speculative")
        return self

    @model_validator(mode="after")
    def _hides_what_runs(self) -> EngineSpec:
        """A pass kind hides host work only where the design's iteration runs it (designs.py):
        `nextn: [prefill]` would hide nothing while it reads as hiding something."""
        for design, kinds in self.hides.items():
            runs, again = RECORDS[design].pass_kinds, first_repeat(kinds)
            for i, kind in enumerate(kinds):
                if kind not in runs:
                    raise AtKey(f"hides.{design}.{i}", f"{design}'s iteration runs no {kind} pass (its passes: "
                                f"{', '.join(runs)})")
                if i == again:
                    raise AtKey(f"hides.{design}.{i}", f"{kind} is listed twice: list each pass once")
        return self

    @property
    def label(self) -> str:
        """The engine and the release it was resolved for, as headers name it ("sglang 0.5.12")."""
        return f"{self.name} {self.version}" if self.version else self.name

    def graph_max(self, gpu_mib: float, tp: int) -> int:
        """The largest CUDA graph this engine captures by default on a GPU of `gpu_mib` MiB at
        `tp` (cuda_graph.unit's units): its own figure, else SGLang's memory class's."""
        if self.cuda_graph.max is not None:
            return self.cuda_graph.max
        c = self.kv_pool.reserved.memory_class(gpu_mib)
        return c.graph_batch if tp < 4 else c.graph_batch_tp4

    @model_validator(mode="after")
    def _a_graph_rule(self) -> EngineSpec:
        if self.cuda_graph.max is None and self.kv_pool.reserved is None:
            raise AtKey("cuda_graph.max", "needed where kv_pool has no memory classes (reserved) to give it")
        if self.kv_pool.reserved is not None and self.cuda_graph.unit == "tokens":  # 256 requests read as tokens
            raise AtKey("cuda_graph.unit", "tokens, where the memory classes (kv_pool.reserved) give the largest "
                        "graph: their graph_batch counts requests (cuda_graph_max_bs)")
        if self.kv_pool.reserved is not None and self.cuda_graph.max is not None:  # graphs past the reserve
            raise AtKey("cuda_graph.max", "the memory classes (kv_pool.reserved.classes graph_batch) give the largest "
                        "graph and size the reserve for it: a max here would capture graphs the reserve does not "
                        "hold (give the size there)")
        return self

    def chunk_tokens(self, gpu_name: str, gpu_mib: float) -> int:
        """The engine's default prefill chunk on a GPU of `gpu_mib` MiB named `gpu_name`."""
        if self.prefill_chunk is None:
            return self.kv_pool.reserved.memory_class(gpu_mib).chunked_prefill_tokens
        return first_holding(self.prefill_chunk, gpu_name, gpu_mib).tokens

    @model_validator(mode="after")
    def _a_capability_range(self) -> EngineSpec:
        """[low, high) holds a GPU only where low < high: [12.0, 9.0] or [9.0, 9.0] held none, so the
        release's FlashAttention 4 path was never taken, without a word."""
        fa4 = self.mixed_head_fa4_capability
        if fa4 is not None and fa4[1] <= fa4[0]:
            raise AtKey("mixed_head_fa4_capability.1", f"{fa4[1]:g} is not above {fa4[0]:g}: the range [low, high) "
                        "holds no compute capability")
        return self

    @model_validator(mode="after")
    def _mixes_as_decode_read(self) -> EngineSpec:
        """mixes_as_decode names designs whose mixed steps this engine runs as plain decodes, where it
        otherwise keeps prompts out of speculative iterations: with mixed_batches.speculative it
        prices mixed speculative iterations, and the list was read by nothing (engine_advice.py)."""
        if self.mixes_as_decode and self.mixed_batches.speculative:
            raise AtKey("mixes_as_decode", f"{self.mixes_as_decode[0]} is priced as mixing prompt chunks into its "
                        "iterations (mixed_batches.speculative: true): no step runs as plain decodes")
        return self

    @model_validator(mode="after")
    def _chunk_classes_read(self) -> EngineSpec:
        """chunk_tokens takes the first class that holds (_classes_read)."""
        classes_read(self.prefill_chunk, "prefill_chunk")
        return self

    @model_validator(mode="after")
    def _a_chunk_rule(self) -> EngineSpec:
        if self.prefill_chunk is None and self.kv_pool.reserved is None:
            raise ValueError("prefill_chunk: needed where kv_pool has no memory classes (reserved)")
        return self

    def fuses_shared_on(self, hardware, expert_dtype: str) -> bool:
        """Whether shared experts run inside the routed-expert kernel on `hardware` (a
        HardwareSpec) with experts in `expert_dtype`; the model's side is ops.fusable_shared_experts."""
        limit, cc = self.shared_fusion_below_capability, hardware.compute_capability
        return self.fuses_shared_experts and not (
            limit is not None and cc is not None and cc >= limit and expert_dtype in ("fp8", "fp4"))

    def moe_table(self, hardware, expert_dtype: str) -> str:
        """The profile family that times the routed-expert kernel this release runs on `hardware`
        (a HardwareSpec) for experts in `expert_dtype`: `moe_triton` where it runs the Triton
        runner for them (triton_fp8_moe_from_capability), else `moe`."""
        limit, cc = self.triton_fp8_moe_from_capability, hardware.compute_capability
        triton = limit is not None and cc is not None and cc >= limit and expert_dtype == "fp8"
        return "moe_triton" if triton else "moe"

    def mixes(self, design: str, configured: bool | None) -> bool:
        """Whether iterations of `design` carry prefill chunks: the scenario's engine.mixed_batches
        where set, else the engine's default; never under speculation where the engine refuses it."""
        wanted = self.mixed_batches.enabled if configured is None else configured
        return wanted and (design == "none" or self.mixed_batches.speculative)

    def routing(self, policy: str | None) -> DpRouting:
        """The routing in force: the engine's, or `policy` (the scenario's engine.dp_routing) with
        the engine's settings for it."""
        return self.dp_routing if policy is None else self.dp_routing.model_copy(update={"policy": policy})

    def host_s(self, design: str, batch: float) -> float:
        if design == "none":
            return self.host["decode"].at(batch)
        return self.host["speculative"].at(batch) + self.speculative_host_extra_s

    def hidden_by(self, design: str, topk: int = 1) -> tuple[str, ...]:
        """The pass kinds during which the host prepares the next iteration of `design`."""
        if design == "none":
            overlaps = self.decode_overlap
        else:
            wide = self.speculative_overlap_max_topk is not None and topk > self.speculative_overlap_max_topk
            overlaps = self.speculative_overlap and not wide and design not in self.unoverlapped_designs
        return tuple(self.hides.get(design, ())) if overlaps else ()

    def for_model(self, architecture: str | None) -> EngineSpec:
        """This release as it runs a model of `architecture` (ModelSpec.architecture): where the
        engine fills the running-request cap for that class before its speculative default is
        applied (SGLang's DeepSeek-V4 hook, rule deepseek_v4_running_cap), that cap holds for every
        design, and the speculative default, which only fills an unset cap, does not apply."""
        cap = self.architecture_cap(architecture)
        if cap is None:
            return self
        return self.model_copy(update={"speculative_max_running_requests": None, "running_cap": RunningCap(fixed=cap)})

    def architecture_cap(self, architecture: str | None) -> int | None:
        """The running cap this release sets for `architecture`'s models, where it sets one."""
        return self.architecture_running_cap.get(architecture) if architecture else None

    def cap_origin(self, design: str, configured: bool, architecture: str | None, file: str = "the engine file's") -> str:
        """Who set the running-request cap `max_running` gives (`configured`: the scenario set
        engine.max_running_requests), for the lines that say a cap bound: the rule in force that
        set the field, else the engine file's own field."""
        if configured:
            return "engine.max_running_requests"
        if self.architecture_cap(architecture) is not None:  # for_model
            return (f"{self.name} {self.version}'s cap for {architecture} models "
                    f"({self.origin_of('architecture_running_cap', file)})")
        if design != "none" and self.speculative_max_running_requests is not None:
            return (f"{self.name} {self.version}'s cap under speculative decoding "
                    f"({self.origin_of('speculative_max_running_requests', file)})")
        return f"{self.name} {self.version}'s default cap"

    def origin_of(self, field: str, file: str = "the engine file's") -> str:
        """Who set `field` at this release, as a message names it: the version rule in force that
        set it, else the engine file (`file`: how to name it) itself."""
        rule = self.set_by.get(field)
        return f"rule {rule}" if rule is not None else f"{file} {field}"

    def max_running(self, design: str, configured: int | None, hardware=None, kv_tokens: int | None = None,
                    context: int | None = None) -> int:
        """The running-request cap in force: the scenario's when it set one, else the engine's
        speculative default for a speculative design where it has one, else its own (`running_cap`
        on `hardware`, a HardwareSpec, with a pool of `kv_tokens`; without hardware the floor of
        what it can be)."""
        if configured is not None:
            return configured
        if design != "none" and self.speculative_max_running_requests is not None:
            return self.speculative_max_running_requests
        name, mib = (hardware.name, hardware.memory_capacity_bytes / 2**20) if hardware is not None else ("", 0.0)
        return self.running_cap.requests(name, mib, kv_tokens, context)
