"""A disaggregated deployment's pools and the link between them, as data: each pool as the
aggregated scenario it would be on its own (its parallel layout, replicas as dp), the link the
KV crosses (NVLink inside one NVLink domain, the scale-out network otherwise, from the hardware
entry), and the bytes one request's KV puts on it. No simpy here (the processes are disagg.py's).

The KV a request moves is what its prefill left in the pool, per GPU of an attention group:
every target layer's KV over the prompt (a sliding window's capped, a linear layer's state),
plus the draft's own KV where the design keeps one (nextn's MTP layer runs in prefill and fills
it; multi_layer's layers each; frozen_kv reads the target's and has none): memory.LayerKV. Each
GPU sends its shard over its own link at once, so a transfer takes bytes per GPU / the link's
bandwidth per GPU + its latency (Mooncake / NIXL transfer engines move each rank's pages in
parallel, as SGLang's disaggregation/ and TensorRT-LLM's kv cache transceiver run them); the
receiving GPUs' shard where larger (a decode attention group of fewer GPUs holds more per GPU).
sim/disagg.py queues the transfers on both ends' links, so prefill replicas sending to the same
decode GPUs share their bandwidth.

With `disaggregation.kv_streaming` the KV leaves layer by layer while the prompt prefills (the
Mooncake paper's layer-wise prefill, arXiv 2407.00079; vllm-ascend's Mooncake connector,
vllm_ascend/distributed/kv_transfer/kv_p2p/layerwise_push/): only the last layer's bytes follow
the prefill, unless the link is slower than the layers (`Link.streamed_finish_s`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mtpsim.errors import ScenarioError
from mtpsim.layout_schema import Parallel

ROLES = ("prefill", "decode")


@dataclass(frozen=True)
class Link:
    """What a KV transfer crosses: `nvlink`, `network` or `free` (no cost), per GPU one way."""

    kind: str
    bandwidth_bytes_per_s: float
    latency_s: float

    def transfer_s(self, bytes_per_gpu: float) -> float:
        """Seconds to move `bytes_per_gpu` from every prefill GPU to its decode GPU at once."""
        if self.kind == "free":
            return 0.0
        return self.latency_s + bytes_per_gpu / self.bandwidth_bytes_per_s

    def finish_s(self, bytes_per_gpu: float, prefilled_s: float, wire_free_s: float) -> float:
        """When a KV moved after its prefill ends, on a wire that is free from `wire_free_s` (FIFO)."""
        return max(prefilled_s, wire_free_s) + self.transfer_s(bytes_per_gpu)

    def streamed_finish_s(self, bytes_per_gpu: float, last_layer_bytes: float, layers: int, pass_start_s: float,
                          prefilled_s: float, wire_free_s: float) -> float:
        """When a KV streamed layer by layer ends: each layer's KV leaves once its layer has run,
        the pass's `layers` taking equal shares of [pass_start_s, prefilled_s]. With layers of
        equal bytes the stream ends when the last layer's bytes have followed the prefill's end or
        when the whole KV has crossed from the first layer's end on, whichever is later; the
        latency is paid once."""
        if self.kind == "free":
            return max(prefilled_s, wire_free_s)
        first_ready = pass_start_s + (prefilled_s - pass_start_s) / max(layers, 1)
        whole = max(first_ready, wire_free_s) + bytes_per_gpu / self.bandwidth_bytes_per_s
        return self.latency_s + max(prefilled_s + last_layer_bytes / self.bandwidth_bytes_per_s, whole)


def pool_scenario(s, role: str):
    """The scenario as pool `role` runs on its own: its layout as `parallel` (replicas as dp), no
    disaggregation; specs, source and sweep point as the scenario's."""
    pool = getattr(s.disaggregation, role)
    parallel = Parallel(tp=pool.tp, ep=pool.ep, dp=pool.replicas, attention_dp=pool.attention_dp,
                        gpus_per_node=pool.gpus_per_node)
    return s.model_copy(update={"parallel": parallel, "disaggregation": None})


def domain_gpus(s) -> int:
    """GPUs on one NVLink domain: the pools' own `gpus_per_node` where both give one, else the hardware's."""
    d, hw = s.disaggregation, s.specs.hardware
    given = {p.gpus_per_node for p in (d.prefill, d.decode) if p.gpus_per_node is not None}
    return min(given) if given else hw.gpus_per_node


def resolve_link(s, where: str) -> Link:
    """The link the scenario's KV crosses; a link the hardware entry does not describe, or NVLink
    asked of pools that do not fit one domain, is a ScenarioError naming disaggregation.link."""
    d, hw = s.disaggregation, s.specs.hardware
    if d.link == "free":
        return Link("free", math.inf, 0.0)
    fits = d.prefill.gpus + d.decode.gpus <= domain_gpus(s)
    kind = ("nvlink" if fits else "network") if d.link == "auto" else d.link
    if kind == "nvlink":
        if not fits:
            raise ScenarioError(where, "disaggregation.link", f"nvlink: the pools' {d.prefill.gpus} + {d.decode.gpus} GPUs "
                                f"do not fit one NVLink domain of {domain_gpus(s)} GPUs (hardware {hw.name!r})")
        return Link("nvlink", hw.link_bandwidth_bytes_per_s, hw.link_latency_s)
    if hw.internode_bandwidth_bytes_per_s is None or hw.internode_latency_s is None:
        why = "link network asks for the scale-out network, and" if fits else \
            f"the pools' {d.prefill.gpus + d.decode.gpus} GPUs span more than one NVLink domain of {domain_gpus(s)}, and"
        raise ScenarioError(where, "disaggregation.link", f"{why} hardware {hw.name!r} describes no scale-out network to "
                            "move the KV over (internode_bandwidth_bytes_per_s, internode_latency_s)")
    return Link("network", hw.internode_bandwidth_bytes_per_s, hw.internode_latency_s)


def last_layer_bytes(budget, prompt_tokens: int) -> float:
    """KV bytes per GPU the prefill's last layer leaves (the draft's layer where it keeps KV: it
    runs after the target's)."""
    layers = budget.target_kv + budget.draft_kv
    return layers[-1].request_bytes(prompt_tokens) if layers else 0.0


def transfer_bytes(budget, prompt_tokens: int) -> float:
    """KV bytes per GPU a prefilled prompt hands over: target and draft layers (memory.MemoryBudget
    of the prefill pool), without the decode-time reservation."""
    return sum(x.request_bytes(prompt_tokens) for x in budget.target_kv + budget.draft_kv)


def describe(s) -> str:
    """`1P(tp8) 3D(tp8 ep8 dp-attn8)`: the pools in one summary cell."""
    parts = []
    for role in ROLES:
        p = getattr(s.disaggregation, role)
        layout = " ".join([f"tp{p.tp}", *([f"ep{p.ep}"] if p.ep > 1 else []),
                           *([f"dp-attn{p.attention_dp}"] if p.attention_dp > 1 else [])])
        parts.append(f"{p.replicas}{role[0].upper()}({layout})")
    return " ".join(parts)
