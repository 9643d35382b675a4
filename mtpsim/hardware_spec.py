"""The typed spec of one accelerator, as the catalog's hardware files describe it: peak rates,
memory, links, launch costs, and the measured profiles that price it. Like a model's spec
(specs.py, whose strict base it shares) unknown keys are errors and floats finite.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from mtpsim.errors import AtKey, ScenarioError
from mtpsim.limits import MAX_DEVICE_LATENCY_S as MAX_LATENCY_S
from mtpsim.limits import MAX_DEVICE_RATE as MAX_RATE
from mtpsim.limits import MIN_DEVICE_RATE as MIN_RATE
from mtpsim.sections import Name
from mtpsim.specs import DTYPE_BYTES, Dtype, Spec

MAX_GPUS_PER_NODE = 4096
# hardware rates (FLOP/s, bytes/s) within limits.py's device range, from a slow CPU's to past any
# accelerator's, so no op takes years or no time; capacities 1 MiB..1 EiB, latencies at most a second


class HardwareSpec(Spec):
    """One accelerator (per-GPU figures) and its interconnect."""

    name: Name  # printed in every header: a one-line name
    # dense tensor-core FLOP/s per dtype
    peak_flops: dict[Dtype, Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE)]] = Field(min_length=1)
    memory_bandwidth_bytes_per_s: float = Field(ge=MIN_RATE, le=MAX_RATE)
    memory_capacity_bytes: float = Field(ge=2**20, le=2**60)       # as the driver reports it (nvidia-smi / mem_get_info total)
    # NVIDIA's CUDA compute capability (8.0 A100, 9.0 Hopper, 10.0 B200): engines choose kernels by
    # it (engines.py); None for GPUs without one
    compute_capability: float | None = Field(default=None, ge=1, le=20)
    link_bandwidth_bytes_per_s: float = Field(ge=MIN_RATE, le=MAX_RATE)   # per GPU, one direction
    link_latency_s: float = Field(ge=0, le=MAX_LATENCY_S)     # per collective hop
    # host memory to one GPU, one direction (PCIe, or NVLink-C2C on Grace superchips): what a read of
    # host-resident data (DeepSeek-V4.1's Engram tables in host memory) moves at; None: not described
    host_link_bandwidth_bytes_per_s: float | None = Field(default=None, ge=MIN_RATE, le=MAX_RATE)
    # a node: GPUs on one NVLink / Infinity Fabric domain; collectives over more ranks than this
    # cross the inter-node network (per GPU, one direction) and pay its latency; None: no network
    # described, so a replica cannot span nodes
    gpus_per_node: int = Field(default=8, ge=1, le=MAX_GPUS_PER_NODE)
    internode_bandwidth_bytes_per_s: float | None = Field(default=None, ge=MIN_RATE, le=MAX_RATE)
    internode_latency_s: float | None = Field(default=None, ge=0, le=MAX_LATENCY_S)
    launch_overhead_s: float = Field(ge=0, le=MAX_LATENCY_S)            # per kernel, eager
    graph_launch_overhead_s: float = Field(ge=0, le=MAX_LATENCY_S)      # per kernel inside a CUDA-graph replay
    # shares of the peaks the roofline reaches; below 1% no op of a real GPU is priced (and tiny
    # shares overflowed op times to infinity)
    efficiency_flops: float = Field(default=0.7, ge=0.01, le=1)
    efficiency_bandwidth: float = Field(default=0.8, ge=0.01, le=1)
    # measured profiles (mtpsim/data/profiles/<name>) by serving engine; `default` for other engines
    profiles: dict[Literal["sglang", "vllm", "trtllm", "default"], Name] = Field(default_factory=dict)  # engine -> profile
    # roofline latency floors fitted on measured GPUs (mtpsim/data/latency_floors.yaml, costs/floors.py)
    latency_floors: bool = False
    # `mtpsim search`'s cost and power columns (each entry cites its source; a scenario's
    # `hardware: {from: h200, usd_per_gpu_hour: ...}` overrides them); None: not priced
    usd_per_gpu_hour: float | None = Field(default=None, ge=1e-3, le=1e4)  # a tenth of a cent an hour at least
    board_power_w: float | None = Field(default=None, ge=1, le=1e5)  # per GPU, as the vendor rates the board

    @model_validator(mode="after")
    def _network_whole(self) -> HardwareSpec:
        """A network bandwidth needs its latency: without one it would be read as no network at
        all (layout_checks.py, pools.py), silently dropping the bandwidth given. (A latency alone is
        how a `from:` copy drops its source's network: `internode_bandwidth_bytes_per_s: null`,
        as an override cannot delete a key.)"""
        if self.internode_bandwidth_bytes_per_s is not None and self.internode_latency_s is None:
            raise AtKey("internode_latency_s", "required with internode_bandwidth_bytes_per_s: give both, or "
                        "neither for no network")
        return self

    def oddities(self) -> list[tuple[str, str]]:
        """(key, reason) for figures that validate but contradict each other, each a warning
        (resolve.py): a CUDA-graph replay's launch dearer than an eager one, a narrower dtype
        slower than a wider one, an inter-node network faster than the GPU's own links."""
        odd = []
        if self.graph_launch_overhead_s > self.launch_overhead_s:
            odd.append(("graph_launch_overhead_s", f"{self.graph_launch_overhead_s:g} s is above launch_overhead_s "
                        f"({self.launch_overhead_s:g} s): a kernel inside a CUDA-graph replay then costs more than "
                        "an eager launch, so graphs slow every pass"))
        peaks = sorted(self.peak_flops.items(), key=lambda item: DTYPE_BYTES[item[0]])
        for (narrow, slow), (wide, fast) in ((a, b) for i, a in enumerate(peaks) for b in peaks[i + 1:]):
            if DTYPE_BYTES[narrow] < DTYPE_BYTES[wide] and slow < fast:
                odd.append((f"peak_flops.{narrow}", f"{slow:.3g} FLOP/s is below {wide}'s {fast:.3g}: a narrower "
                            f"dtype runs at least as fast on every accelerator"))
                break
        if self.internode_bandwidth_bytes_per_s and self.internode_bandwidth_bytes_per_s > self.link_bandwidth_bytes_per_s:
            odd.append(("internode_bandwidth_bytes_per_s", f"{self.internode_bandwidth_bytes_per_s:.3g} B/s is above "
                        f"link_bandwidth_bytes_per_s ({self.link_bandwidth_bytes_per_s:.3g}): the network between "
                        "nodes is then faster than the links inside one"))
        return odd

    def profile_for(self, engine: str) -> str | None:
        """The measured profile that prices this GPU under `engine` by default, if any."""
        return self.profiles.get(engine) or self.profiles.get("default")

    def summary(self, engine: str) -> str:
        """One line (`mtpsim hardware`): memory, bandwidth and what prices it under `engine`."""
        profile = self.profile_for(engine)
        if profile:
            others = sorted(k for k in self.profiles if k not in (engine, "default"))
            pricing = f"default profile {profile}" + (f" (+ {', '.join(others)} profiles)" if others else "")
        else:
            pricing = "roofline" + (" + fitted latency floors" if self.latency_floors else "")
        bw = self.memory_bandwidth_bytes_per_s
        bandwidth = f"{bw / 1e12:.3g} TB/s" if bw >= 1e12 else f"{bw / 1e9:.3g} GB/s"
        gib = self.memory_capacity_bytes / 2**30  # the driver's MiB / 1024: the size a GPU is sold by (80 GB H100)
        return f"{self.memory_capacity_bytes / 1e9:.0f} GB ({gib:.0f} GiB), {bandwidth}, {pricing}"

    def stored_kv(self, dtype: Dtype) -> Dtype:
        """The dtype a KV cache of `dtype` is kept in on this GPU: an FP4 cache is packed only on
        Blackwell (compute capability 10 and up); before it engines keep FP8 (SGLang v0.5.23
        mem_cache/deepseek_v4_memory_pool.py select_dsv4_kv_layout: the V4.1 FP4 layouts "need an
        SM100 / SM103 GPU", else the FP8 V4 layout). GPUs without a CUDA compute capability keep
        what the model says."""
        cc = self.compute_capability
        return "fp8" if dtype == "fp4" and cc is not None and cc < 10 else dtype

    def flops_per_s(self, dtype: Dtype) -> float:
        """Peak for `dtype` (`peak_for`); a missing one is an error naming the hardware."""
        peak = self.peak_for(dtype)
        if peak is None:
            raise ScenarioError(f"hardware {self.name!r}", "peak_flops", f"no entry usable for {dtype}")
        return peak

    def peak_for(self, dtype: Dtype) -> float | None:
        """Peak for `dtype`, falling back to the widest supported type (FP4 weights on Hopper
        are dequantised and computed in FP8 or BF16); None when no entry is that wide."""
        found = self.peak_dtype_for(dtype)
        return None if found is None else self.peak_flops[found]

    def peak_dtype_for(self, dtype: Dtype) -> str | None:
        """The peak_flops entry `peak_for` prices `dtype` at: its own, else the first of fp8, bf16,
        fp16, fp32 at least as wide."""
        for d in (dtype, "fp8", "bf16", "fp16", "fp32"):
            if d in self.peak_flops and (DTYPE_BYTES[d] >= DTYPE_BYTES[dtype]):
                return d
        return None
