"""The KV-pool rule of a scenario's engine (engines/<kind>.yaml `kv_pool:`, engine_memory.py):
which fraction of which memory it gives its pool, from the scenario's `engine.mem_fraction` or the
release's default, and what it sets aside beside it (`PoolRule`, resolved once by `pool_rule`);
`pool_bytes` applies it to one GPU. memory.py sizes the budget with it.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.designs import BASELINE
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError
from mtpsim.hardware_spec import HardwareSpec

MIB = 2**20


@dataclass(frozen=True)
class PoolRule:
    """An engine's KV-pool rule resolved for one scenario (`pool_rule`): the fraction in force,
    where it came from, what it multiplies and what is set aside beside the pool."""

    engine: str
    knob: str                  # the engine's name for the fraction (mem_fraction_static, ...)
    fraction: float
    fraction_source: str       # "sglang default" or "scenario engine.mem_fraction"
    fraction_of: str           # capacity | free_at_start | free_after_load (specs.KVPoolSpec)
    startup_bytes: float
    activation_tokens: int     # tokens of the profiled forward whose activations are set aside (0: none)
    graph_bytes: float
    margin_bytes: float = 0.0          # a capacity pool's headroom: max(this, margin_share x activations)
    margin_share: float = 0.0

    def margin(self, activations: float) -> float:
        return max(self.margin_bytes, self.margin_share * activations)

    @property
    def label(self) -> str:
        return f"{self.knob}={self.fraction:g} ({self.fraction_source})"


def prefill_chunk_tokens(scenario) -> int:
    """Prompt tokens per prefill batch: the scenario's engine.chunked_prefill_tokens, else the
    engine's default on its GPU (engines.EngineSpec.chunk_tokens)."""
    s = scenario
    if s.engine.chunked_prefill_tokens is not None:
        return s.engine.chunked_prefill_tokens
    return s.specs.engine.chunk_tokens(s.specs.hardware.name, s.specs.hardware.memory_capacity_bytes / MIB)


def pool_rule(scenario, design: str | None = None) -> PoolRule:
    """The scenario's engine rule, its fraction from `engine.mem_fraction` or the engine default;
    `design`: the design it runs, when not the scenario's (its `none` baseline: SGLang reserves
    more for speculative decoding)."""
    s = scenario
    explicit = s.engine.model_fields_set
    rule = resolve_pool(s.specs.engine, s.specs.hardware, s.parallel.tp, s.parallel.attention_dp,
                        (design or s.speculative.design) != BASELINE, s.engine.mem_fraction,
                        prefill_chunk_tokens(s), explicit_prefill=s.engine.chunked_prefill_tokens is not None,
                        graph_batch=s.engine.max_graph_batch if "max_graph_batch" in explicit else None)
    if rule.fraction <= 0:  # the engine's own rule: it would not start either
        # the reserve grows with the prefill chunk and the graph batch: a size the scenario set is the cause
        given = [k for k in ("chunked_prefill_tokens", "max_graph_batch") if k in explicit and
                 (k != "chunked_prefill_tokens" or s.engine.chunked_prefill_tokens is not None)]
        key = f"engine.{given[0]}" if given else "engine.mem_fraction"
        why = f"its reserve for engine.{given[0]} outgrows the GPU" if given else "its reserve outgrows the GPU"
        capacity = s.specs.hardware.memory_capacity_bytes
        # no size the scenario set: the reserve is the engine file's, the capacity the hardware's
        at = (s.source, key) if given else reserve_at(s, "kv_pool.reserved")
        raise ScenarioError(*at, f"{s.specs.engine.name} {s.specs.engine.version}'s default "
                            f"{rule.knob} is {rule.fraction:g} for tp {s.parallel.tp} with attention_dp "
                            f"{s.parallel.attention_dp} on {s.specs.hardware.name} ({why}: it reserves "
                            f"{(1 - rule.fraction) * capacity / 1e9:.3g} GB of {capacity / 1e9:.3g} GB), so the engine "
                            "would not start" + (": give the launch command's fraction (engine.mem_fraction)"
                                                 if at[1].startswith("engine.") else ""))
    return rule


def check_engine_starts(s) -> None:
    """The engine's memory rule leaves it a fraction of the GPU to start with, on each pool
    (pool_rule refuses one that does not): checked with each point the loader validates
    (sweep.py), so the refusal comes before the point's warnings. It came first from the pricing
    inside `run`, `cost` or `recommend`, after their warnings had been said: two lines for one value."""
    from mtpsim.pools import pool_scenario
    for point in [pool_scenario(s, role) for role in ("prefill", "decode")] if s.disaggregation else [s]:
        pool_rule(point)


def reserve_at(s, key: str) -> tuple[str, str]:
    """(file, key) to name when one of the engine's reserves (`key` of its file: kv_pool.startup_mib,
    kv_pool.reserved, ...) leaves no memory on the GPU: a user's engine file (MTPSIM_CATALOG) that
    gives it; else the built-in figure is the engine's own, so the GPU's memory_capacity_bytes
    where it is written (a hardware file of the user's, or the scenario's inline mapping); else
    the scenario's engine.mem_fraction, the launch command's answer."""
    from mtpsim import catalog_lookup
    from mtpsim.packagedata import data_dir
    from mtpsim.pricing_choice import users_file, written_at
    engine_file = catalog_lookup.find("engines", s.engine.kind)
    if engine_file is not None and not engine_file.is_relative_to(data_dir()):
        return str(engine_file), key
    at = written_at(s.hardware, "hardware", "memory_capacity_bytes", s.source)
    inline = isinstance(s.hardware, dict) and "memory_capacity_bytes" in s.hardware
    ref = s.hardware.get("from") if isinstance(s.hardware, dict) else s.hardware
    if inline or (isinstance(ref, str) and users_file(ref)):
        return at
    return s.source, "engine.mem_fraction"


def resolve_pool(engine: EngineSpec, hw: HardwareSpec, tp: int = 1, attention_dp: int = 1,
                 speculative: bool = False, mem_fraction: float | None = None, prefill_tokens: int = 8192,
                 explicit_prefill: bool = False, graph_batch: int | None = None) -> PoolRule:
    """`pool_rule` from its parts: SGLang's default fraction reads the chunked-prefill size and
    CUDA-graph batch only where the scenario set them (else its memory class's)."""
    pool = engine.kv_pool
    if mem_fraction is not None:
        fraction, source = mem_fraction, "scenario engine.mem_fraction"
    elif engine.fraction_by_tp is not None:  # an older release's table (engines/<kind>.yaml rules)
        fraction, source = engine.fraction_by_tp.fraction(hw.memory_capacity_bytes / MIB, tp), f"{engine.name} default"
    elif pool.fraction is not None:
        fraction, source = pool.fraction, f"{engine.name} default"
    else:
        fraction = pool.reserved.fraction(hw.memory_capacity_bytes / MIB, tp, attention_dp, speculative,
                                          prefill_tokens if explicit_prefill else None, graph_batch)
        source = f"{engine.name} default"
    return PoolRule(engine.name, pool.knob, fraction, source, pool.fraction_of, pool.startup_mib * MIB,
                    prefill_tokens if pool.activations else 0, pool.graph_mib * MIB, pool.margin_mib * MIB,
                    pool.margin_activation_share)


def pool_bytes(rule: PoolRule, capacity: float, weights: float, activations: float) -> float:
    """The KV pool the engine's rule leaves on one GPU (negative: none)."""
    if rule.fraction_of == "capacity":
        # vLLM v0.34.0's extensible cache: min(requested - non-KV, headroom - margin) less the peak, so
        # a margin binds only past what a fraction below 1 already leaves (v1/worker/extensible_kv_cache.py)
        return min(rule.fraction * capacity, capacity - rule.margin(activations)) - weights - activations \
            - rule.graph_bytes
    if rule.fraction_of == "free_at_start":
        return rule.fraction * (capacity - rule.startup_bytes) - weights
    return rule.fraction * (capacity - rule.startup_bytes - weights - activations - rule.graph_bytes)
