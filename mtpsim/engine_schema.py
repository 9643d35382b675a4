"""The `engine:` section of a scenario: which serving engine and release, and the settings that
change how it schedules (running-request cap, CUDA graphs, overlap, chunked prefill, prefix
caching, DP routing, mixed batches, KV-pool fraction). mtpsim/schema.py assembles it into the
scenario with the other sections; engines.py holds the engine files these settings default from."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mtpsim.limits import MAX_TOKENS, MAX_USERS
from mtpsim.sections import Name, Section


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


class BatchWait(Section):
    """TensorRT-LLM's batch waiting (trtllm-serve's `batch_wait_timeout_iters` and
    `batch_wait_max_tokens_ratio`; tensorrt_llm/llmapi/llm_args.py TorchLlmArgs, prototype knobs, both 0 by
    default): while requests decode, admitted prompts are held back until the step's scheduled tokens (the
    prompts' and the decodes') reach max_tokens_ratio x the token budget, or timeout_iters steps have held
    them (_torch/pyexecutor/py_executor.py `_waiting_requests`). Not under attention DP. InferenceX's
    B200 DeepSeek-R1 scripts set {timeout_iters: 40, max_tokens_ratio: 0.8} from 64 streams on 1k/1k."""

    timeout_iters: int = Field(default=0, ge=0, le=1_000_000, description=(
        "The most decode steps admitted prompts wait (batch_wait_timeout_iters). With 0 they never wait, "
        "whatever the ratio: the engine stops waiting once its count of held steps reaches this."))
    max_tokens_ratio: float = Field(default=0.0, ge=0, le=1, description=(
        "Prompts stop waiting once a step's scheduled tokens reach this share of the token budget "
        "(engine.chunked_prefill_tokens, TensorRT-LLM max_num_tokens; batch_wait_max_tokens_ratio)."))


EngineKind = Literal["sglang", "vllm", "trtllm"]  # the engines mtpsim models (also what a profile may time)


class Engine(Section):
    kind: EngineKind = "sglang"
    """The serving engine: sglang | vllm | trtllm (mtpsim/data/engines/<kind>.yaml: host time, overlap, KV pool)."""
    version: Name | None = Field(default=None, max_length=40, description=(
        "The engine release (e.g. \"0.5.12\"); its version rules (mtpsim/data/engines/<kind>.yaml `rules`) set "
        "the speculative running-request cap, whether speculation overlaps host work, the verify scorer. "
        "None: the catalog's default release. `mtpsim engines` lists the releases and rules."))

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_text(cls, value):
        """A release written as a YAML number has already lost its spelling (0.10 reads as 0.1,
        0.20 as 0.2): refuse it and say to quote it, rather than match another release."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError(f"{value!r} is a number, and a number loses a release's spelling (0.10 reads as 0.1): "
                             "write the release as text, in quotes (e.g. \"0.5.12\")")
        return value
    max_running_requests: int | None = Field(default=None, ge=1, le=MAX_USERS, description=(
        "Running-request cap. None: the engine's rule at its version (SGLang sets 48 under speculative "
        "decoding), else 256."))
    speculative_overlap: bool | None = Field(default=None, description=(
        "Whether speculative iterations overlap host work (SGLang SGLANG_ENABLE_SPEC_V2, vLLM async "
        "scheduling). None: the engine's rule at its version."))
    bounded_replay: bool | None = Field(default=None, description=(
        "Whether a prefill runs DeepSeek-V4.1's decoder layers over each prompt's last 128 tokens only (SGLang "
        "--enable-decoder-swa-bounded-replay, on by default; other engines: off). None: the engine's default."))
    engram_tables: Literal["gpu", "host", "host_per_rank"] = Field(default="gpu", description=(
        "Where DeepSeek-V4.1's Engram tables (or Qwen4-Exp's PLE n-gram table) live: gpu (rows sharded over the "
        "TP GPUs, SGLang's default), host (one shared copy in host memory: SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE, "
        "layout shared) or host_per_rank (a shard per TP rank in host memory, layout per_rank; vLLM's "
        "--engram-config cpu_offload / VLLM_PLE_CPU_OFFLOAD, each rank's ETP shard pinned, on by default in "
        "v0.34.0's EngramConfig: not a rule here, say it). Host tables free GPU memory; each lookup reads its rows "
        "over the host link (mtpsim/costs/engram.py)."))
    ignore_rules: list[str] = Field(default_factory=list, max_length=32, description=(
        "Version rules to resolve the engine without (what-if studies, the leave-one-rule-out benchmark)."))
    cuda_graphs: bool = True
    """Whether decode batches up to max_graph_batch replay CUDA graphs (fewer launch costs)."""
    max_graph_batch: int | None = Field(default=None, ge=1, le=MAX_USERS)
    """Largest batch (requests) with a captured CUDA graph; larger batches run eagerly. Default: the
    engine's own (its file's cuda_graph: SGLang's by GPU memory and tp, vLLM's 512 tokens)."""
    graph_padding: bool | None = Field(default=None, description=(
        "Whether a batch between captured CUDA-graph sizes replays the next size up (TensorRT-LLM's "
        "cuda_graph_config.enable_padding; SGLang's --disable-cuda-graph-padding is false here, and then "
        "every size up to the largest is captured). Default: the engine's (its file's cuda_graph)."))
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
    batch_wait: BatchWait | None = None
    """TensorRT-LLM's batch waiting: prompts held back from mixed steps to prefill more at once (see
    BatchWait). None: none (every engine's default)."""
    # the fraction of GPU memory the engine's KV-pool rule reads (SGLang mem_fraction_static, vLLM
    # gpu_memory_utilization, TRT-LLM free_gpu_memory_fraction; engines/<kind>.yaml kv_pool);
    # None: the engine's default
    mem_fraction: float | None = Field(default=None, gt=0, le=1)
    """Fraction of GPU memory the engine's KV-pool rule reads (SGLang mem_fraction_static, vLLM
    gpu_memory_utilization, TRT-LLM free_gpu_memory_fraction); None: the engine's default."""

