"""The scenario sections that lay a deployment out on GPUs (schema.py assembles them with the
others): `parallel`, one replica's sharding and the replicas, and `disaggregation`, prefill and
decode on pools of their own, each sharded as a replica is. Whether the model shards onto them is
layout_checks.py's.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.limits import MAX_GPUS
from mtpsim.sections import Section


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

    def shape(self, replicas: int) -> str:
        """`2 replicas x tp 8, ep 8`: how `replicas` copies of this replica are sharded."""
        parts = [f"{replicas} replica{'s' * (replicas > 1)} x tp {self.tp}"] + [f"ep {self.ep}"] * (self.ep > 1) + \
            [f"attention_dp {self.attention_dp}"] * (self.attention_dp > 1)
        return ", ".join(parts)

    @model_validator(mode="after")
    def _ep_divides_tp(self):
        if self.tp % self.ep:
            raise AtKey("ep", f"{self.ep} does not divide tp {self.tp} (experts split over ep groups of tp / ep GPUs)")
        # SGLang server_args.py _handle_data_parallelism: assert tp_size % dp_size == 0
        if self.tp % self.attention_dp:
            raise AtKey("attention_dp", f"{self.attention_dp} does not divide tp {self.tp} (each attention group holds "
                        "tp / attention_dp GPUs)")
        return self


class Parallel(Layout):
    dp: int = Field(default=1, ge=1, le=MAX_GPUS)
    """Independent replicas, each with its own batch and KV."""

    def describe(self, gpu: str) -> str:
        """The layout in headers: `16 h200 (2 replicas x tp 8, ep 8)`: GPUs in all, then dp x tp."""
        return f"{self.dp * self.tp} {gpu} ({self.shape(self.dp)})"

    @property
    def attention_tp(self) -> int:
        """GPUs one attention group shards its heads over (SGLang attn_tp_size = tp / dp)."""
        return self.tp // self.attention_dp


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
