"""Memory budget per GPU (KV reservation): weights of target and draft, KV bytes per
token of each, and how many requests fit.

Full-attention layers cost KV bytes per token; sliding-window layers per token up to the window;
linear-attention layers a constant state per request. Which draft layers hold weights and KV is
each design's record (designs.py): `nextn` one MTP layer (or its external draft), `multi_layer`
and `parallel_heads` one per step, `frozen_kv` the assistant's weights and no KV.

The KV budget is sized as the serving engine sizes its pool (engines/<kind>.yaml `kv_pool:`):
`pool_rule` resolves the engine's rule and fraction for a scenario once, `memory_budget` applies it.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.costs import ops as O
from mtpsim.costs.compressed import layer_kv as compressed_kv
from mtpsim.costs.deployment import Deployment
from mtpsim.costs.engram import table_bytes_per_gpu
from mtpsim.costs.passes import Pricer
from mtpsim.designs import BASELINE, DesignShape
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.specs import DTYPE_BYTES

MIB = 2**20


@dataclass(frozen=True)
class LayerKV:
    """KV cost of one layer on one GPU: bytes per token, its window (0 = global), state per request."""

    bytes_per_token: float
    window: int
    state_bytes: float

    def request_bytes(self, tokens: int) -> float:
        kept = min(tokens, self.window) if self.window else tokens
        return self.bytes_per_token * kept + self.state_bytes


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
        at = (s.source, key) if given else _reserve_at(s, "kv_pool.reserved")
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


def _reserve_at(s, key: str) -> tuple[str, str]:
    """(file, key) to name when one of the engine's reserves (`key` of its file: kv_pool.startup_mib,
    kv_pool.reserved, ...) leaves no memory on the GPU: a user's engine file (MTPSIM_CATALOG) that
    gives it; else the built-in figure is the engine's own, so the GPU's memory_capacity_bytes
    where it is written (a hardware file of the user's, or the scenario's inline mapping); else
    the scenario's engine.mem_fraction, the launch command's answer."""
    from mtpsim import catalog
    from mtpsim.packagedata import data_dir
    from mtpsim.resolve import users_file, written_at
    engine_file = catalog.find("engines", s.engine.kind)
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


def activation_bytes(pricer: Pricer, tokens: int) -> float:
    """Estimated activation peak of a forward over `tokens` on one GPU (what vLLM and TensorRT-LLM
    profile): per token, ~4 hidden-wide tensors live (residual, normed input, attention output,
    a copy) plus the widest FFN's intermediates: a dense layer's gate/up and activated output
    (3 x intermediate / tp), a fused MoE's per-chosen-expert gate/up, output and down buffers
    (top_k x (3 x expert intermediate / expert shard + hidden)); in the activation dtype."""
    model, par = pricer.deployment.model, pricer.deployment.parallel
    widths = [3 * f.intermediate_size / par.tp if f.kind == "dense"
              else f.top_k * (3 * f.expert_intermediate_size / par.expert_shard + model.hidden_size)
              for f in model.ffn_kinds.values()]
    return tokens * DTYPE_BYTES[model.dtypes.activations] * (4 * model.hidden_size + max(widths, default=0.0))


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


@dataclass(frozen=True)
class MemoryBudget:
    """Per-GPU memory: weights, the KV budget left, and per-token / per-request KV."""

    capacity_bytes: float
    target_weight_bytes: float
    draft_weight_bytes: float
    kv_budget_bytes: float
    target_kv: tuple[LayerKV, ...]
    draft_kv: tuple[LayerKV, ...]
    reserved_tokens: int
    groups: int = 1  # DP attention groups in a replica, each with its own KV pool of kv_budget_bytes
    rule: PoolRule | None = None     # how the engine sized kv_budget_bytes
    activation_bytes: float = 0.0    # set aside for the profiled forward's activations (rule.activation_tokens)

    @property
    def replica_kv_budget_bytes(self) -> float:
        """KV bytes per GPU summed over a replica's attention groups: each group's GPUs hold only
        its own requests' KV, so a replica admits `groups` times one GPU's budget (pooled: the
        round-robin split keeps the groups' loads equal)."""
        return self.kv_budget_bytes * self.groups

    @property
    def kv_bytes_per_token(self) -> float:
        """Bytes per token of the global (unbounded) layers, target + draft."""
        return sum(x.bytes_per_token for x in self.target_kv + self.draft_kv if not x.window)

    @property
    def draft_kv_bytes_per_token(self) -> float:
        return sum(x.bytes_per_token for x in self.draft_kv)

    @property
    def max_kv_tokens(self) -> int:
        """Tokens the KV budget holds in the global layers (windowed layers and states aside)."""
        per = self.kv_bytes_per_token
        return int(self.kv_budget_bytes // per) if per else 0

    def request_bytes(self, length: int) -> float:
        """KV bytes one running request of `length` committed tokens holds, reservation included."""
        tokens = length + self.reserved_tokens
        return sum(x.request_bytes(tokens) for x in self.target_kv + self.draft_kv)

    def max_requests(self, length: int) -> int:
        """Concurrent requests of `length` tokens the KV budget admits."""
        return max(0, int(self.kv_budget_bytes // self.request_bytes(length)))


def memory_budget(pricer: Pricer, design: DesignShape, rule: PoolRule) -> MemoryBudget:
    """Per-GPU budget for a design: the design's record says how many draft layers hold weights
    (and KV), and of which part; the pricer says what a part's weights weigh, the deployment's
    part records what KV it keeps; the engine's rule (`pool_rule`) how much of the GPU its KV
    pool takes."""
    dep, rec = pricer.deployment, design.record
    hw, model, par = dep.hardware, dep.model, dep.parallel
    # the embedding splits like the LM head: over the attention GPUs (all tp without DP attention)
    embedding = 0.0 if model.tie_embeddings else model.vocab_size * model.hidden_size * 2 / par.attention_tp
    # Engram tables (DeepSeek-V4.1) are looked up, not read whole: sized here, never in a pass's weight bytes
    target_w = pricer.weight_bytes("target") + embedding + table_bytes_per_gpu(model.engram, par.tp, dep.engram_tables)
    draft_w, draft_kv = 0.0, ()
    if rec.layer_part is not None:
        layers = rec.draft_layers(design.steps)
        draft_w = layers * pricer.weight_bytes(rec.layer_part, shared_head=False)
        draft_kv = part_kv(dep, rec.layer_part) * layers if rec.has_draft_kv else ()
    activations = activation_bytes(pricer, rule.activation_tokens)
    budget = pool_bytes(rule, hw.memory_capacity_bytes, target_w + draft_w, activations)
    return MemoryBudget(hw.memory_capacity_bytes, target_w, draft_w, max(budget, 0.0),
                        part_kv(dep, "target"), draft_kv, design.reserved_tokens, par.attention_dp,
                        rule, activations)


def part_kv(deployment: Deployment, part: str) -> tuple[LayerKV, ...]:
    """One LayerKV per layer of a part that keeps KV or state of its own, on one GPU of an
    attention group (KV heads split over its attention_tp GPUs)."""
    kv_dtype, tp = deployment.kv_dtype, deployment.parallel.attention_tp
    out = []
    for count, att in deployment.part(part).kv_layers:
        if att.kind == "linear":
            out += [LayerKV(0.0, 0, O.linear_state_bytes(att, tp))] * count
        elif att.kind == "compressed":  # compressed entries per token; window ring and states per request
            per_token, per_request = compressed_kv(att, kv_dtype)
            out += [LayerKV(per_token, 0, per_request)] * count
        else:
            out += [LayerKV(O.kv_bytes_per_token(att, kv_dtype, tp), att.window or 0, 0.0)] * count
    return tuple(out)


def _largest_reserve(budget: MemoryBudget) -> tuple[str, float]:
    """(the engine file's key, bytes) of the largest reserve its rule takes from the GPU beside
    the weights (pool_bytes: startup memory, CUDA graphs), each where the rule subtracts it."""
    rule = budget.rule
    # the margin is the larger of its two figures: named by the one that set it
    share = rule.margin_share * budget.activation_bytes > rule.margin_bytes
    reserves = {"kv_pool.startup_mib": rule.startup_bytes if rule.fraction_of != "capacity" else 0.0,
                "kv_pool.graph_mib": rule.graph_bytes if rule.fraction_of != "free_at_start" else 0.0,
                f"kv_pool.margin_{'activation_share' if share else 'mib'}":  # what it takes past (1 - fraction)
                    max(0.0, rule.margin(budget.activation_bytes) - (1 - rule.fraction) * budget.capacity_bytes)
                    if rule.fraction_of == "capacity" else 0.0}
    return max(reserves.items(), key=lambda item: item[1])


def _activation_reserve(budget: MemoryBudget) -> float:
    """Bytes per GPU the rule sets aside for the profiled forward's activations, and for the
    share of them a `capacity` pool's margin adds (the part the scenario's prefill chunk sizes)."""
    rule = budget.rule
    if rule.fraction_of == "free_at_start":
        return 0.0
    share = rule.margin_share * budget.activation_bytes if rule.fraction_of == "capacity" else 0.0
    return budget.activation_bytes + (share if share > rule.margin_bytes else 0.0)


def check_fits(s, budget: MemoryBudget, tokens: int, pool: str | None = None, need: float | None = None) -> None:
    """The longest request's KV (`need` bytes per GPU; default: `tokens` tokens of this budget's
    KV) fits the budget's KV pool, or a ScenarioError: of a whole replica, or of the disaggregated
    `pool` ("prefill" / "decode", named in the key and the reason)."""
    rule = f"{budget.rule.label} of {budget.capacity_bytes / 1e9:.1f} GB"
    whose = f"the {pool} pool's " if pool else "the engine's "
    if budget.kv_budget_bytes <= 0:
        # as the engine itself refuses (SGLang model_runner: "Not enough memory. Please try to
        # increase --mem-fraction-static."): the weights, or one of the engine's reserves, fill all
        # the rule leaves; a reserve larger than the weights is named where it is written
        weights = (budget.target_weight_bytes + budget.draft_weight_bytes) / 1e9
        key, reserve = _largest_reserve(budget)
        chunk, profiled = s.engine.chunked_prefill_tokens, _activation_reserve(budget)
        if chunk is not None and profiled / 1e9 > weights and profiled > reserve:
            # the scenario's prefill chunk sizes the engine's profiled forward: its activations,
            # not the engine file's reserve nor the fraction, leave no pool
            raise ScenarioError(s.source, "engine.chunked_prefill_tokens", f"{budget.rule.engine} sets aside "
                                f"{profiled / 1e9:.3g} GB per GPU{f' of the {pool} pool' if pool else ''} for the "
                                f"activations of a {chunk:,}-token prefill chunk on {s.specs.hardware.name}'s "
                                f"{budget.capacity_bytes / 1e9:.1f} GB, which with "
                                f"the weights ({weights:.1f} GB) leaves no KV pool: the engine would refuse to start "
                                "(a smaller chunk needs less)")
        if reserve / 1e9 > weights:
            raise ScenarioError(*_reserve_at(s, key), f"{budget.rule.engine} sets aside {reserve / 1e9:.3g} GB per GPU "
                                f"({key}) on {s.specs.hardware.name}'s {budget.capacity_bytes / 1e9:.1f} GB, which with "
                                f"the weights ({weights:.1f} GB) leaves no KV pool: the engine would refuse to start")
        tables = s.specs.model.engram is not None and s.engine.engram_tables == "gpu"
        raise ScenarioError(s.source, f"disaggregation.{pool}" if pool else "engine.mem_fraction",
                            f"{whose if pool else 'the '}weights ({weights:.1f} GB per GPU) leave no KV pool under {rule}, "
                            "and the engine would refuse to start: raise engine.mem_fraction or shard over more GPUs"
                            + (", or keep the Engram tables in host memory (engine.engram_tables: host)" if tables else ""))
    need = budget.request_bytes(tokens) if need is None else need
    if need > budget.kv_budget_bytes:
        raise ScenarioError(s.source, f"disaggregation.{pool}" if pool else "workload",
                            f"a request of {tokens} tokens needs {need / 1e9:.2f} GB of KV per GPU, more than the "
                            f"{budget.kv_budget_bytes / 1e9:.2f} GB {whose}KV pool holds ({rule})")
