"""The sections of an engine file (mtpsim/data/engines/<kind>.yaml) that an `EngineSpec` holds,
each the engine's own default for one thing a scenario may leave unset: host time, GPU classes
and what they default (prefill chunk, running requests), mixed batches, prefix cache, dp routing
and CUDA graphs. engines.py holds the EngineSpec that composes them.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from mtpsim.engine_memory import MAX_MIB
from mtpsim.errors import AtKey
from mtpsim.limits import MAX_GRAPHS, MAX_TOKENS, MAX_USERS
from mtpsim.specs import Spec


class HostTime(Spec):
    """Host seconds per decode iteration: base + per_request * running requests."""

    base_s: float = Field(ge=0, le=1)  # a second of host work per iteration is past any engine
    per_request_s: float = Field(default=0.0, ge=0, le=1)

    def at(self, batch: float) -> float:
        return self.base_s + self.per_request_s * batch


def as_tuple(value):
    """A YAML list (an engine file or a version rule) as the tuple a frozen record keeps."""
    return tuple(value) if isinstance(value, list) else value


def first_holding(classes, gpu_name: str, gpu_mib: float):
    """The first of `classes` (GpuClass) a GPU of `gpu_mib` MiB named `gpu_name` meets, else the last."""
    return next((c for c in classes if c.holds(gpu_name, gpu_mib)), classes[-1])


class GpuClass(Spec):
    """One class of GPUs: the first class of a list whose conditions a GPU meets applies:
    capacity below `below_mib` (None: any) and a name holding one of `gpus` (None: any)."""

    below_mib: float | None = Field(default=None, gt=0, le=MAX_MIB)
    # matched within the GPU's name, letter case aside (an empty list or name: no GPU, every GPU)
    gpus: list[Annotated[str, Field(min_length=1, max_length=80)]] | None = Field(default=None, min_length=1)

    def holds(self, gpu_name: str, gpu_mib: float) -> bool:
        return (self.below_mib is None or gpu_mib < self.below_mib) and \
            (self.gpus is None or any(g.lower() in gpu_name.lower() for g in self.gpus))


def classes_read(classes, key: str) -> None:
    """The first class that holds applies: a class after one of any GPU name whose bound is none or
    at least its own is never read ([{tokens: 16384}, {gpus: [a100], ...}] gave every GPU 16384
    tokens, without a word)."""
    widest, at = 0.0, None  # the largest bound of an earlier class of any name (inf: none), and its index
    for i, c in enumerate(classes or ()):
        if at is not None and (c.below_mib is None and widest == float("inf") or
                               c.below_mib is not None and c.below_mib <= widest):
            raise AtKey(f"{key}.{i}", f"no GPU reaches this class: {key}.{at} takes every GPU it "
                        "would (give classes by rising below_mib, the one of any GPU without below_mib last)")
        bound = float("inf") if c.below_mib is None else c.below_mib
        if c.gpus is None and bound > widest:
            widest, at = bound, i
    last = len(classes or ()) - 1
    if last >= 0 and (classes[last].below_mib is not None or classes[last].gpus is not None):
        # first_holding gives a GPU no class holds the last class, whose bound it does not meet
        raise AtKey(f"{key}.{last}", "the last class is taken by every GPU no class holds, its own bound "
                    "aside: give it neither below_mib nor gpus (the class of any other GPU)")


class ChunkClass(GpuClass):
    """A class of GPUs and its default prefill chunk (tokens per prefill batch)."""

    tokens: int = Field(gt=0, le=MAX_TOKENS)


class CapClass(GpuClass):
    """A class of GPUs and its default running-request cap."""

    requests: int = Field(gt=0, le=MAX_USERS)


class RunningCap(Spec):
    """The running requests an engine admits when the scenario sets no cap (a speculative rule's
    cap aside): `fixed` (TensorRT-LLM's max_batch_size), `by_gpu` (vLLM's max_num_seqs by GPU
    class), or SGLang's from its KV pool: min(clamp(KV tokens / context x `per_context`, `floor`,
    `ceiling`), KV tokens x `kv_share`)."""

    fixed: int | None = Field(default=None, ge=1, le=MAX_USERS)
    by_gpu: list[CapClass] | None = Field(default=None, min_length=1)
    per_context: float | None = Field(default=None, gt=0, le=MAX_USERS)
    floor: int | None = Field(default=None, ge=1, le=MAX_USERS)
    ceiling: int | None = Field(default=None, ge=1, le=MAX_USERS)
    kv_share: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_form(self) -> RunningCap:
        forms = [k for k in ("fixed", "by_gpu", "per_context") if getattr(self, k) is not None]
        if len(forms) != 1:
            raise ValueError("give one of fixed, by_gpu and per_context")
        pool = ("floor", "ceiling", "kv_share")
        if self.per_context is not None and any(getattr(self, k) is None for k in pool):
            raise AtKey(next(k for k in pool if getattr(self, k) is None), "per_context needs floor, ceiling and kv_share")
        if self.per_context is None and any(getattr(self, k) is not None for k in pool):
            raise AtKey(next(k for k in pool if getattr(self, k) is not None), "only a per_context cap reads it")
        if self.floor is not None and self.ceiling is not None and self.ceiling < self.floor:
            raise AtKey("ceiling", f"{self.ceiling} is below floor {self.floor}")
        classes_read(self.by_gpu, "by_gpu")
        return self

    def requests(self, gpu_name: str, gpu_mib: float, kv_tokens: int | None, context: int | None) -> int:
        """The cap on a GPU of `gpu_mib` MiB named `gpu_name`, with a KV pool of `kv_tokens` tokens
        (None: not sized, the floor of a per_context cap) for a model of `context` tokens (None: a
        model that states none, the floor too, within the pool's share)."""
        if self.fixed is not None:
            return self.fixed
        if self.by_gpu is not None:
            return first_holding(self.by_gpu, gpu_name, gpu_mib).requests
        if kv_tokens is None:
            return self.floor
        estimated = self.floor if context is None else \
            min(max(int(kv_tokens / context * self.per_context), self.floor), self.ceiling)
        return max(1, min(estimated, int(kv_tokens * self.kv_share)))


class MixedBatches(Spec):
    """Whether an engine runs waiting prompts' chunks inside decode iterations (one forward over
    the decode batch and the chunk, up to the token budget: the prefill chunk size), and how.

    enabled: the engine's default; speculative: whether it still mixes under speculative decoding
    (SGLang turns mixing off there); split_prompts: a prompt may be cut to fill the budget left
    (False: it rides whole when it fits, else waits; TensorRT-LLM without chunked context);
    batch_wait: the engine can hold admitted prompts back from mixed steps to prefill more at once
    (TensorRT-LLM's batch_wait_timeout_iters / batch_wait_max_tokens_ratio: a scenario's
    engine.batch_wait)."""

    enabled: bool = False
    speculative: bool = False
    split_prompts: bool = True
    batch_wait: bool = False


class PrefixCacheDefault(Spec):
    """An engine's prefix cache as it starts without flags: on or off, and its block size."""

    enabled: bool = True
    block_tokens: int = Field(default=16, gt=0, le=MAX_TOKENS)


class DpRouting(Spec):
    """How arrivals are spread over dp replicas (sim/scheduler.py Router): `round_robin`;
    `least_loaded`, the replica of the fewest waiting_weight x waiting + running requests;
    `cache_aware`, SGLang's router: the replica whose past prompts match the most of this one
    when more than `cache_threshold` of it matches, else the one holding the fewest prompt
    tokens, and the least loaded whenever loads spread by more than `balance_abs` requests and
    a factor `balance_rel`."""

    policy: Literal["round_robin", "least_loaded", "cache_aware"] = "least_loaded"
    # past MAX_USERS (more than can ever wait) it orders replicas as any larger weight would; 1e308 x 2
    # waiting requests overflowed to inf, tying every replica with a queue
    waiting_weight: float = Field(default=1.0, ge=0, le=MAX_USERS)
    cache_threshold: float = Field(default=0.3, ge=0, le=1)
    balance_abs: int = Field(default=64, ge=0, le=MAX_USERS)
    balance_rel: float = Field(default=1.5, ge=1)


GraphSize = Annotated[int, Field(ge=1, le=MAX_TOKENS)]


class SizeRange(Spec):
    """Captured sizes first, first + step, ... up to last (None: up to the largest graph), as an
    engine's source writes `range(first, last + 1, step)`."""

    first: GraphSize
    last: GraphSize | None = None
    step: GraphSize = 1

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value):
        """[first, last, step] (last null: to the largest graph), or one size. Anything else but a
        mapping is refused saying so: pydantic's "a valid dictionary or instance of SizeRange" named
        neither form ([16, 256] without its step, 8.0)."""
        if isinstance(value, list) and len(value) == 3:
            return dict(zip(("first", "last", "step"), value))
        if isinstance(value, int) and not isinstance(value, bool):
            return {"first": value, "last": value}
        if isinstance(value, list):
            raise ValueError(f"a list of {len(value)} item{'s' * (len(value) != 1)}, where a range is "
                             "[first, last, step] (last null: up to the largest graph)")
        if not isinstance(value, dict):
            raise ValueError(f"{value!r} is neither a size (a whole number) nor a range [first, last, step]")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if self.last is not None and self.last < self.first:
            raise AtKey("last", f"{self.last} is below first, {self.first}: the range is empty")
        return self

    def sizes(self, largest: int) -> range:
        return range(self.first, min(self.last or largest, largest) + 1, self.step)


class GpuSizes(Spec):
    """Sizes an engine adds to its padded list on GPUs of more than `above_mib` MiB (SGLang
    v0.4.6-v0.5.2: "H200, H20" past 90 GiB, "B200, MI300" past 160 GB)."""

    above_mib: float = Field(ge=0, le=MAX_MIB)
    sizes: tuple[SizeRange, ...] = Field(min_length=1)

    @field_validator("sizes", mode="before")
    @classmethod
    def _list_as_tuple(cls, value):
        return as_tuple(value)


def expand(items, largest: int) -> set[int]:
    """The sizes of a list of sizes and ranges, up to `largest`."""
    return {size for item in items for size in item.sizes(largest)}


class GraphCapture(Spec):
    """The CUDA graphs an engine captures for decode-shaped passes by default (a scenario's
    `engine.max_graph_batch` sets the largest, in requests). unit: what a graph's size counts,
    requests, or tokens (vLLM keys its graphs on a pass's tokens, so a verify of k + 1 tokens a
    request fits k + 1 times fewer requests); max: the largest size (None: SGLang's memory class,
    kv_pool.reserved); padded: a batch between sizes replays the next size up (False: only a
    batch of one of `sizes` replays, the rest run eagerly); sizes: the list an unpadded capture
    replays. With padding, a batch pads up to the next of `pads_to` (a plain decode's) or of
    `speculative_pads_to` (a speculative iteration's passes; None: `pads_to`), each size or range
    capped at the largest graph, plus `gpu_pads_to` on larger GPUs and, where `adds_max`, the
    largest itself; a batch past the last runs eagerly. pads_to None: every multiple of 8 (with
    1, 2, 4 and 12) up to the largest."""

    unit: Literal["requests", "tokens"] = "requests"
    max: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    padded: bool = True
    sizes: tuple[GraphSize, ...] | None = Field(default=None, min_length=1)
    pads_to: tuple[SizeRange, ...] | None = Field(default=None, min_length=1)
    speculative_pads_to: tuple[SizeRange, ...] | None = Field(default=None, min_length=1)
    gpu_pads_to: tuple[GpuSizes, ...] = ()
    adds_max: bool = True

    @field_validator("sizes", "pads_to", "speculative_pads_to", "gpu_pads_to", mode="before")
    @classmethod
    def _list_as_tuple(cls, value):
        return as_tuple(value)

    @model_validator(mode="after")
    def _sizes_when_unpadded(self) -> GraphCapture:
        if not self.padded and self.sizes is None:
            raise AtKey("sizes", "an unpadded capture replays only the sizes it lists: give them")
        if self.pads_to is None and (self.speculative_pads_to is not None or self.gpu_pads_to):
            raise AtKey("pads_to", "the plain list the speculative or GPU sizes go with: give it")
        return self

    @model_validator(mode="after")
    def _few_enough_sizes(self) -> GraphCapture:
        """Each padded list's sizes up to the largest graph it may reach (max, or MAX_USERS: the
        memory classes' graph_batch and a scenario's max_graph_batch stay within it) are at most
        MAX_GRAPHS: host_model expands them into a sorted tuple at every point, and [[1, null, 1]]
        under a max of 2**24 tokens was 16.8M sizes (4 GB, 20 s a point), where an engine captures
        tens to hundreds of graphs at start-up."""
        largest = max(self.max or 0, MAX_USERS)
        lists = [("pads_to", self.pads_to), ("speculative_pads_to", self.speculative_pads_to),
                 ("gpu_pads_to", [item for extra in self.gpu_pads_to for item in extra.sizes])]
        for key, items in lists:
            count = sum(len(item.sizes(largest)) for item in items or ())
            if count > MAX_GRAPHS:
                raise AtKey(key, f"lists {count:,} sizes up to a largest graph of {largest:,}, past the {MAX_GRAPHS:,} "
                            "mtpsim expands (an engine captures a graph per size at start-up, tens to hundreds in "
                            "all): give its ranges a larger step")
        return self

    def padded_sizes(self, largest: int, gpu_mib: float, speculative: bool, adds_max: bool | None = None) \
            -> tuple[int, ...] | None:
        """The sizes a padded batch pads up to on a GPU of `gpu_mib` MiB, up to `largest` (None:
        pads_to is not given, every multiple of 8); `adds_max` overrides whether `largest` itself
        is captured (a deployment that names its largest graph captures it)."""
        if self.pads_to is None:
            return None
        listed = self.speculative_pads_to if speculative and self.speculative_pads_to is not None else self.pads_to
        sizes = expand(listed, largest)
        for extra in self.gpu_pads_to:
            if gpu_mib > extra.above_mib:
                sizes |= expand(extra.sizes, largest)
        return tuple(sorted(sizes | ({largest} if (self.adds_max if adds_max is None else adds_max) else set())))


__all__ = ["CapClass", "ChunkClass", "DpRouting", "GpuClass", "GpuSizes", "GraphCapture", "HostTime", "MixedBatches",
           "PrefixCacheDefault", "RunningCap", "SizeRange", "as_tuple", "classes_read", "first_holding"]
