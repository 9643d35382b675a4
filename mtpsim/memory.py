"""Memory budget per GPU (KV reservation): weights of target and draft, KV bytes per
token of each, and how many requests fit.

Full-attention layers cost KV bytes per token; sliding-window layers per token up to the window;
linear-attention layers a constant state per request. Which draft layers hold weights and KV is
each design's record (designs.py): `nextn` one MTP layer (or its external draft), `multi_layer`
and `parallel_heads` one per step, `frozen_kv` the assistant's weights and no KV.

The KV budget is sized as the serving engine sizes its pool (engines/<kind>.yaml `kv_pool:`):
`pool_rule` (pool_rule.py, re-exported here) resolves the engine's rule and fraction for a
scenario once, `memory_budget` applies it.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.costs import ops as O
from mtpsim.costs.compressed import layer_kv as compressed_kv
from mtpsim.costs.deployment import Deployment
from mtpsim.costs.engram import table_bytes_per_gpu
from mtpsim.costs.passes import Pricer
from mtpsim.designs import DesignShape
from mtpsim.errors import ScenarioError
from mtpsim.pool_rule import (  # noqa: F401 (the pool rule, read from here too)
    MIB,
    PoolRule,
    check_engine_starts,
    pool_bytes,
    pool_rule,
    prefill_chunk_tokens,
    reserve_at,
    resolve_pool,
)
from mtpsim.specs import DTYPE_BYTES


@dataclass(frozen=True)
class LayerKV:
    """KV cost of one layer on one GPU: bytes per token, its window (0 = global), state per request."""

    bytes_per_token: float
    window: int
    state_bytes: float

    def request_bytes(self, tokens: int) -> float:
        kept = min(tokens, self.window) if self.window else tokens
        return self.bytes_per_token * kept + self.state_bytes


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

    def request_bytes(self, length: int, reserve: bool = True) -> float:
        """KV bytes one running request of `length` committed tokens holds, the reservation for
        its next verify included unless `reserve` is False."""
        tokens = length + self.reserved_tokens * reserve
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
    target_w = pricer.weight_bytes("target", resident=True) + embedding + \
        table_bytes_per_gpu(model.engram, par.tp, dep.engram_tables)
    draft_w, draft_kv = 0.0, ()
    if rec.layer_part is not None:
        layers = rec.draft_layers(design.steps)
        draft_w = layers * pricer.weight_bytes(rec.layer_part, shared_head=False, resident=True)
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
            kept = 0 if att.chunked else att.window or 0  # chunked layers keep every token's KV (layer_specs.py)
            out += [LayerKV(O.kv_bytes_per_token(att, kv_dtype, tp), kept, 0.0)] * count
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


def engram_remedy(s) -> str:
    """What else frees GPU memory where a model's Engram tables sit on the GPU: keeping them in
    host memory, as the engines can (", or ..." to end a remedy; "" otherwise). Said wherever
    weights leave no room (check_fits, search's layouts)."""
    if s.specs.model.engram is None or s.engine.engram_tables != "gpu":
        return ""
    return ", or keep the Engram tables in host memory (engine.engram_tables: host)"


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
            raise ScenarioError(*reserve_at(s, key), f"{budget.rule.engine} sets aside {reserve / 1e9:.3g} GB per GPU "
                                f"({key}) on {s.specs.hardware.name}'s {budget.capacity_bytes / 1e9:.1f} GB, which with "
                                f"the weights ({weights:.1f} GB) leaves no KV pool: the engine would refuse to start")
        # a higher fraction helps only where the weights fit in the GPU at all; else the layout
        # (or a smaller checkpoint) is what can change, and the key named is the layout's
        fits = weights < budget.capacity_bytes / 1e9
        layout = f"disaggregation.{pool}.tp, disaggregation.{pool}.ep" if pool else "parallel.tp, parallel.ep"
        # the engine's own default comes from a reserve that grows with the layout (SGLang's: tp,
        # attention DP's graphs), so more GPUs would shrink it further: only the fraction helps
        derived = s.specs.engine.kv_pool.reserved is not None and s.engine.mem_fraction is None
        shrinking = derived and budget.rule.fraction < weights / (budget.capacity_bytes / 1e9)
        remedy = ("set engine.mem_fraction (the engine's default is what its reserve for this layout leaves, and it "
                  "shrinks with more GPUs)" if shrinking else "raise engine.mem_fraction or shard over more GPUs") if fits else \
            (f"they are more than the GPU's {budget.capacity_bytes / 1e9:.1f} GB: shard over more GPUs "
             f"({layout}) or quantize them (model: {{from: ..., dtypes: {{...}}}})")
        raise ScenarioError(s.source, f"disaggregation.{pool}" if pool else ("engine.mem_fraction" if fits else "parallel.tp"),
                            f"{whose if pool else 'the '}weights ({weights:.1f} GB per GPU) leave no KV pool under {rule}, "
                            f"and the engine would refuse to start: {remedy}{engram_remedy(s)}")
    need = budget.request_bytes(tokens) if need is None else need
    if need > budget.kv_budget_bytes:
        needed, held = _apart(need / 1e9, budget.kv_budget_bytes / 1e9)
        reserved = budget.reserved_tokens
        if not pool and reserved > tokens and budget.request_bytes(tokens, reserve=False) <= budget.kv_budget_bytes:
            # the reservation for a verify of the draft tree, more than the request itself, fills the pool
            raise ScenarioError(s.source, "speculative.draft_tokens" if s.speculative.draft_tokens is not None else
                                "speculative.topk", f"each request reserves {reserved:,} KV slots for its drafts "
                                f"and their verify (2 x max(steps x topk, draft_tokens)) beside its {tokens} tokens: "
                                f"{needed} GB per GPU, more than the {held} GB {whose}KV pool holds ({rule}); draft or "
                                "verify fewer tokens")
        raise ScenarioError(s.source, f"disaggregation.{pool}" if pool else "workload",
                            f"a request of {tokens} tokens needs {needed} GB of KV per GPU, more than the "
                            f"{held} GB {whose}KV pool holds ({rule})")


def _apart(a: float, b: float) -> tuple[str, str]:
    """`a` and `b` to 2 decimals, or as many more (up to 6) as tell them apart: a request a few
    tokens past the pool `needs 2.38 GB ..., more than the 2.38 GB` the pool holds."""
    digits = next((d for d in range(2, 7) if f"{a:.{d}f}" != f"{b:.{d}f}"), 6)
    return f"{a:.{digits}f}", f"{b:.{digits}f}"
