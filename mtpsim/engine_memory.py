"""How a serving engine sizes GPU memory by default, as its catalog file gives it
(mtpsim/data/engines/<kind>.yaml `kv_pool:` and the `fraction_by_tp` a version rule sets): the KV
pool's rule (`KVPoolSpec`: what the memory fraction multiplies, what is set aside), SGLang's
reserve rule that derives its default fraction (`ReservedMemory`, by GPU memory class), and an
older release's fraction by tp (`TpFractions`). engines.py's EngineSpec holds them; memory.py
applies them to a deployment.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.limits import MAX_GPUS, MAX_TOKENS, MAX_USERS
from mtpsim.specs import Spec

# bounded as the scenario's same quantities are (engines.py): MiB as hardware memory_capacity_bytes
# (2**60 bytes); every fraction lies in (0, 1]
MAX_MIB = 2**40
Mib = Annotated[float, Field(ge=0, le=MAX_MIB)]
Fraction = Annotated[float, Field(gt=0, le=1)]


class MemoryClass(Spec):
    """One of SGLang's GPU-memory classes: GPUs below `below_mib` (None: any larger) default to
    this chunked-prefill size and CUDA-graph batch (`graph_batch` under tp 4, `graph_batch_tp4`
    from tp 4)."""

    below_mib: float | None = Field(default=None, gt=0, le=MAX_MIB)
    chunked_prefill_tokens: int = Field(gt=0, le=MAX_TOKENS)
    graph_batch: int = Field(gt=0, le=MAX_USERS)
    graph_batch_tp4: int = Field(gt=0, le=MAX_USERS)


class ReservedMemory(Spec):
    """SGLang's default mem_fraction_static = (gpu - reserved) / gpu, `reserved` in MiB from the
    chunked-prefill size, CUDA-graph batch, tp, DP attention and speculative decoding (the sources
    are in engines/sglang.yaml)."""

    classes: list[MemoryClass] = Field(min_length=1)
    base_mib: Mib
    per_prefill_token_mib: Mib
    min_prefill_tokens: int = Field(ge=0, le=MAX_TOKENS)
    per_graph_batch_mib: Mib
    per_tp_mib: Mib
    dp_attention_per_graph_batch_mib: Mib
    dp_attention_large_graph_batch: int = Field(ge=0, le=MAX_USERS)
    dp_attention_large_per_graph_batch_mib: Mib
    floor_above_mib: Mib
    floor_mib: Mib
    speculative_mib: Mib

    @model_validator(mode="after")
    def _classes_in_order(self) -> ReservedMemory:
        """Classes by rising `below_mib`, the catch-all (no below_mib) last: `memory_class` takes
        the first that holds, so a class after a catch-all or after a larger bound is never read."""
        bounds = [c.below_mib for c in self.classes]
        for i, (low, high) in enumerate(zip(bounds, bounds[1:])):
            if low is None or high is not None and high <= low:
                raise AtKey(f"classes.{i + 1}", "no GPU reaches this class: give classes by rising below_mib, the "
                            "one without below_mib (any larger GPU) last")
        if bounds[-1] is not None:  # memory_class gives a larger GPU the last class, past its bound
            raise AtKey(f"classes.{len(bounds) - 1}", "the last class is taken by every GPU past its below_mib too: "
                        "end with a class without below_mib (any larger GPU)")
        return self

    def memory_class(self, gpu_mib: float) -> MemoryClass:
        return next((c for c in self.classes if c.below_mib is None or gpu_mib < c.below_mib), self.classes[-1])

    def fraction(self, gpu_mib: float, tp: int, attention_dp: int, speculative: bool,
                 prefill_tokens: int | None = None, graph_batch: int | None = None) -> float:
        """The default fraction; prefill_tokens / graph_batch: the scenario's where it set them,
        else the memory class's."""
        c = self.memory_class(gpu_mib)
        prefill = prefill_tokens or c.chunked_prefill_tokens
        graphs = graph_batch or (c.graph_batch if tp < 4 else c.graph_batch_tp4)
        mib = (self.base_mib + max(prefill, self.min_prefill_tokens) * self.per_prefill_token_mib
               + graphs * self.per_graph_batch_mib + tp * self.per_tp_mib)
        if attention_dp > 1:
            mib += graphs * attention_dp * self.dp_attention_per_graph_batch_mib
            if graphs > self.dp_attention_large_graph_batch:
                mib += graphs * attention_dp * self.dp_attention_large_per_graph_batch_mib
        if gpu_mib > self.floor_above_mib:
            mib = max(mib, self.floor_mib)
        mib += self.speculative_mib if speculative else 0.0
        return round((gpu_mib - mib) / gpu_mib, 3)


class KVPoolSpec(Spec):
    """How an engine sizes its KV pool per GPU (engines/<kind>.yaml `kv_pool:`).

    knob: the engine's name for its memory fraction (scenario `engine.mem_fraction` sets it).
    fraction_of: what the fraction multiplies. `capacity`: the driver's total (vLLM:
    pool = f x capacity - weights - activations - graphs); `free_at_start`: what is free when the
    engine starts, capacity - startup (SGLang: pool = f x that - weights); `free_after_load`: what
    is free after weights, activations and graphs (TensorRT-LLM: pool = f x that).
    fraction: the engine's fixed default; None: `reserved` derives it (SGLang).
    startup_mib: CUDA context and communicator buffers taken before the engine measures.
    activations: whether the engine's profiled activation peak is set aside (estimated from the
    model's widths, memory.py `activation_bytes`); graph_mib: CUDA-graph memory set aside;
    margin_mib / margin_activation_share: a further headroom of max(margin_mib, share x that
    activation peak) set aside from a `capacity` pool (vLLM's extensible KV cache)."""

    knob: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")  # a launch flag's name, printed in errors
    fraction_of: Literal["capacity", "free_at_start", "free_after_load"]
    fraction: Fraction | None = None
    reserved: ReservedMemory | None = None
    startup_mib: Mib = 0.0
    activations: bool = False
    graph_mib: Mib = 0.0
    margin_mib: Mib = 0.0
    margin_activation_share: float = Field(default=0.0, ge=0, le=10)

    @model_validator(mode="after")
    def _one_default(self) -> KVPoolSpec:
        if (self.fraction is None) == (self.reserved is None):
            raise ValueError("give one of fraction (a fixed default) and reserved (SGLang's rule)")
        return self

    @model_validator(mode="after")
    def _margin_of_a_capacity_pool(self) -> KVPoolSpec:
        """memory.py sets the margin aside from a `capacity` pool alone: on another it was read by
        nothing, and the pool came out as without it."""
        if self.fraction_of != "capacity":
            for key in ("margin_mib", "margin_activation_share"):
                if getattr(self, key):
                    raise AtKey(key, f"a margin is set aside from a fraction_of: capacity pool only (this one's is "
                                f"{self.fraction_of}): it would change nothing")
        if self.margin_activation_share and not self.activations:
            raise AtKey("margin_activation_share", "a share of the activation peak, but this pool sets no activations "
                        "aside (activations: false): it would change nothing")
        return self


class TpFractions(Spec):
    """SGLang's default mem_fraction_static before its reserve rule (`ReservedMemory`): by tp x pp
    on GPUs up to `small_gpu_mib`, `large` above; on GPUs over `raise_above_mib` raised to
    min(f + raise_mib x (1 - f) / gpu, (gpu - cap_reserve_mib) / gpu), in MiB (the source is
    in engines/sglang.yaml)."""

    small_gpu_mib: float = Field(gt=0, le=MAX_MIB)
    # the largest tp bound a replica reaches -> fraction
    by_tp: dict[Annotated[int, Field(ge=1, le=MAX_GPUS)], Fraction] = Field(min_length=1)
    large: Fraction
    raise_above_mib: float = Field(gt=0, le=MAX_MIB)
    raise_mib: Mib
    cap_reserve_mib: Mib

    def fraction(self, gpu_mib: float, tp: int) -> float:
        f = self.large
        if gpu_mib <= self.small_gpu_mib:
            f = self.by_tp[max((b for b in self.by_tp if tp >= b), default=min(self.by_tp))]
        if gpu_mib > self.raise_above_mib:
            f = min(f + self.raise_mib * (1 - f) / gpu_mib, (gpu_mib - self.cap_reserve_mib) / gpu_mib)
        return f
