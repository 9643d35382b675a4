"""The deployment a scenario runs, resolved once from its specs (`resolve(scenario)`): the
model's parts as records, the parallel layout and the engine's host model (costs/host.py). The Pricer
(costs/passes.py) builds a part's ops from its record and memory.py sizes its weights and KV
from it; neither asks which part it is, as the engine reads a design's record (designs.py).

Parts, by the name a PassShape gives (`part`):
- `target`: the model's own layers, its LM head and sampling;
- `mtp`: the model's own MTP layer, or the external draft (role: draft) that runs instead;
- `heads`: the model's MTP layer once per parallel head (parallel_heads: one per step);
- `assistant`: the frozen_kv assistant, its queries over the target's KV (no KV of its own);
- `block`, `block_context`: a block drafter's forward, and its context injection alone.
A part the specs cannot run (no MTP layers, no assistant, no block drafter) is not built.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from mtpsim.costs import compressed as C
from mtpsim.costs import edges, streams
from mtpsim.costs import ops as O
from mtpsim.costs.ffn import deepseek_family
from mtpsim.costs.host import HostModel, host_model
from mtpsim.costs.ops import Parallel
from mtpsim.costs.wide_ep import ep_imbalance
from mtpsim.engines import EngineSpec
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.specs import AttentionSpec, LayerRef, ModelSpec


@dataclass(frozen=True)
class ModelPart:
    """One part of the deployed model, as a pass runs it on one GPU.

    spec: the model whose widths its ops take. groups: its layers as (count, layer) groups (none
    for `block_context`, which runs no layer). attn/ffn/expert dtypes: what its layers' weights
    are stored in. query_only: its attention projects queries only (it reads another's KV).
    edge: the ops it runs outside its layers (costs/edges.py), called as edge(deployment, part,
    tokens, logits rows, from_target, context positions) -> [(op, count)]. copies: how many times
    it runs its layer and edge per pass (parallel heads; 1 otherwise). shares_target_head: its
    logits come from the target's LM head, whose weights count once (the target's).
    kv_layers: (count, attention kind) per layer group that keeps KV or state of its own;
    attention: (attention kind, layer count) per kind its queries read, for the attention cores."""

    name: str
    spec: ModelSpec
    groups: tuple[tuple[int, LayerRef], ...]
    attn_dtype: str
    ffn_dtype: str
    expert_dtype: str
    edge: Callable
    copies: int = 1
    shares_target_head: bool = False
    query_only: bool = False
    # a prefill's replay tail (ModelSpec.replay_tail): (count, layer) of the groups' layers in it,
    # the window of prompt tokens it runs over, and the layer that starts it (it writes every row's entries)
    tail: tuple[tuple[int, LayerRef], ...] = ()
    tail_window: int = 0
    tail_source: LayerRef | None = None

    @property
    def kv_layers(self) -> tuple[tuple[int, AttentionSpec], ...]:
        return tuple((count, self.spec.attention_kinds[ref.attention]) for count, ref in self.groups)

    @property
    def attention(self) -> tuple[tuple[AttentionSpec, int], ...]:
        return self._by_attention(self.groups)

    @property
    def tail_attention(self) -> tuple[tuple[AttentionSpec, int], ...]:
        """`attention` of the replay tail's layers alone."""
        return self._by_attention(self.tail)

    def _by_attention(self, groups) -> tuple[tuple[AttentionSpec, int], ...]:
        counts = Counter()
        for count, ref in groups:
            counts[ref.attention] += count
        return tuple((self.spec.attention_kinds[name], n) for name, n in counts.items())


@dataclass(frozen=True)
class Deployment:
    """One replica of a scenario as the cost path sees it: the target model and hardware, the
    parallel layout, the engine's host model, the model's parts by name and the expert skew."""

    model: ModelSpec
    hardware: HardwareSpec
    parallel: Parallel
    host: HostModel
    parts: Mapping[str, ModelPart]
    moe_skew: float = 0.0
    moe_stream_overlap: float = 0.0  # the share of the shared experts a second stream hides (costs/streams.py)
    routing_locality: float = 0.0  # experts a token shares with its request's previous one (ffn.py shared_routing)
    engram_tables: str = "gpu"     # where a model's Engram tables live: gpu | host | host_per_rank (costs/engram.py)

    def part(self, name: str) -> ModelPart:
        found = self.parts.get(name)
        if found is None:
            raise KeyError(f"this deployment has no part {name!r} (it has {', '.join(self.parts)})")
        return found

    @property
    def kv_dtype(self) -> str:
        """What every part's KV cache is stored in: the target's, as this GPU keeps it (an FP4
        cache is FP8 before Blackwell: HardwareSpec.stored_kv)."""
        return self.hardware.stored_kv(self.model.dtypes.kv_cache)

    @property
    def act(self) -> str:
        return self.model.dtypes.activations

    def kv_bytes_per_token(self, part: str) -> float:
        """KV cache bytes one token holds over all of a part's layers on one GPU."""
        return sum(n * C.kv_bytes_per_token(att, self.kv_dtype, self.parallel.tp) for att, n in self.part(part).attention)

    @property
    def fuses_shared_experts(self) -> bool:
        """Whether the engine runs the model's shared experts inside its routed-expert kernel on
        this hardware (engine rule, engines.py `fuses_shared_on`) and the model is one it fuses
        (ops.deepseek_v3_architecture); ops.ffn_ops checks each FFN and the layout."""
        return self.host.engine.fuses_shared_on(self.hardware, self.model.dtypes.experts) \
            and O.deepseek_v3_architecture(self.model)

    def stream_regions(self, att: AttentionSpec, tokens: int, graphs: bool) -> tuple:
        """The regions of a layer with attention `att` that run on side CUDA streams in a pass of
        `tokens` per GPU (`graphs`: a CUDA-graph pass), as (chains, overlap) pairs (costs/streams.py): SGLang's
        DeepSeek-V4 attention prologue; the shared experts beside the routed ones where the
        engine's rule runs them so (EngineSpec.shared_expert_stream), the model is one whose
        MoE code does it (SGLang deepseek_v2.py, TensorRT-LLM modeling_deepseekv3.py), its
        shared experts are not fused, and no DP attention runs (its all-to-all MoE path has no
        dual stream: deepseek_v2.py takes it only without an a2a backend)."""
        engine = self.host.engine
        regions = []
        if streams.attention_runs(engine.name, att.kind, tokens, graphs, self.hardware.compute_capability):
            regions.append((streams.ATTENTION_CHAINS, 1.0))
        if streams.moe_runs(engine.shared_expert_stream, tokens, graphs) and self.runs_moe_side_stream:
            regions.append((streams.MOE_CHAINS, self.moe_stream_overlap))
        return tuple(regions)

    @property
    def runs_moe_side_stream(self) -> bool:
        """Whether some pass runs the shared experts on a second stream (stream_regions): the
        engine's rule runs one, the model's MoE code has it, its shared experts are not fused and
        no DP attention runs."""
        return self.host.engine.shared_expert_stream != "none" and not self.fuses_shared_experts \
            and self.parallel.attention_dp == 1 and deepseek_family(self.model)

    @property
    def moe_side_stream_passes(self) -> str:
        """Which passes stream_regions gives the second stream (streams.moe_stream_passes), "" where
        runs_moe_side_stream is False."""
        if not self.runs_moe_side_stream:
            return ""
        return streams.moe_stream_passes(self.host.engine.shared_expert_stream, self.host.cuda_graphs)

    def group_batch(self, batch: int) -> int:
        """The largest attention group's share of a batch (the whole batch without DP attention):
        the batch a pass's CUDA graph must hold."""
        return -(-batch // self.parallel.attention_dp)


def resolve(scenario) -> Deployment:
    """The scenario's deployment: its specs, parallel layout, engine settings and skew."""
    s, specs = scenario, scenario.specs
    p = s.parallel
    layout = Parallel(p.tp, p.ep, p.attention_dp, p.gpus_per_node or specs.hardware.gpus_per_node)
    layout = replace(layout, ep_imbalance=ep_imbalance(s.cost.ep_imbalance, s.engine.eplb, layout))
    return Deployment(specs.model, specs.hardware, layout, host_model(s),
                      model_parts(specs.model, specs.draft, specs.assistant, s.speculative.steps), s.cost.moe_skew,
                      s.cost.moe_stream_overlap, s.cost.routing_locality, s.engine.engram_tables)


def deploy(model: ModelSpec, hardware: HardwareSpec, engine: EngineSpec, *, tp: int = 1, ep: int = 1,
           attention_dp: int = 1, gpus_per_node: int | None = None, draft: ModelSpec | None = None,
           assistant: ModelSpec | None = None, heads: int = 1, moe_skew: float = 0.0, cuda_graphs: bool = True,
           max_graph_batch: int = 256, two_batch_overlap: bool = False, ep_imbalance: float = 1.0,
           moe_stream_overlap: float = 0.0, routing_locality: float = 0.0, engram_tables: str = "gpu") -> Deployment:
    """A deployment from its pieces, without a scenario (tests and benchmarks that vary one)."""
    layout = Parallel(tp, ep, attention_dp, gpus_per_node or hardware.gpus_per_node, ep_imbalance)
    return Deployment(model, hardware, layout,
                      HostModel(engine, cuda_graphs, max_graph_batch, two_batch_overlap),
                      model_parts(model, draft, assistant, heads),
                      moe_skew, moe_stream_overlap, routing_locality, engram_tables)


def model_parts(model: ModelSpec, draft: ModelSpec | None, assistant: ModelSpec | None,
                heads: int) -> Mapping[str, ModelPart]:
    """The parts these specs can run, by name: `heads` parallel heads (parallel_heads' steps)."""
    parts = {"target": _with_tail(_whole("target", model, edges.target))}
    if draft is not None:
        parts["mtp"] = _whole("mtp", draft, edges.external_draft)
        parts["block"] = _whole("block", draft, edges.block, shares_target_head=True)
        parts["block_context"] = ModelPart("block_context", draft, (), draft.dtypes.attention, draft.dtypes.dense_ffn,
                                           draft.dtypes.experts, edges.block_context, shares_target_head=True)
    if model.mtp is not None:
        own_head = draft is None and model.mtp.vocab_size is None
        dt = model.dtypes.mtp
        for name, copies in (("mtp", 1), ("heads", heads)):
            if name not in parts:
                parts[name] = ModelPart(name, model, ((copies, model.mtp.layer),), dt, dt, dt, edges.own_mtp,
                                        copies, shares_target_head=own_head)
    if assistant is not None:
        parts["assistant"] = _whole("assistant", assistant, edges.assistant, query_only=True)
    return MappingProxyType(parts)


def _with_tail(part: ModelPart) -> ModelPart:
    """The target part with its replay tail's layers counted by group, where the model has one."""
    found = part.spec.replay_tail
    if found is None:
        return part
    start, window = found
    layers = part.spec.expanded_layers
    counts = Counter(layers[start:])
    return replace(part, tail=tuple((n, ref) for ref, n in counts.items()), tail_window=window, tail_source=layers[start])


def _whole(name: str, spec: ModelSpec, edge: Callable, shares_target_head: bool = False,
           query_only: bool = False) -> ModelPart:
    """A whole model's layers as one part: (count, layer) groups, with its own dtypes."""
    counts = Counter((g.attention, g.ffn, g.engram) for g in spec.layers for _ in range(g.count))
    groups = tuple((n, LayerRef(attention=a, ffn=f, engram=e)) for (a, f, e), n in counts.items())
    dt = spec.dtypes
    return ModelPart(name, spec, groups, dt.attention, dt.dense_ffn, dt.experts, edge,
                     shares_target_head=shares_target_head, query_only=query_only)
