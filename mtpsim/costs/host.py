"""What the serving engine does around a deployment's passes (`HostModel`): which passes replay
CUDA graphs and at what padded size, how it scores a verify, and its host time and overlap (its
engine file's, mtpsim/data/engines/). `host_model(scenario)` is the one home of a scenario's
CUDA graphs: its engine's `cuda_graph` (engine_sections.GraphCapture), with the scenario's
`engine.max_graph_batch` and `engine.graph_padding` over it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mtpsim.engines import EngineSpec

# The padded sizes of an engine whose file lists none (engine_sections.GraphCapture.pads_to),
# capped by max_graph_batch.
GRAPH_BUCKETS = (1, 2, 4, 8, 12, *range(16, 1025, 8))


@dataclass(frozen=True)
class HostModel:
    """What the serving engine does around the passes: it replays CUDA graphs for decode-shaped
    passes up to `max_graph_batch` (in `graph_unit`, requests or tokens: engine_sections.GraphCapture),
    padded to its captured sizes where `graph_padded` (else only a batch of one of `graph_sizes`
    replays; with padding, the sizes a batch pads up to: a plain decode's `graph_sizes` and a
    speculative iteration's passes' `speculative_graph_sizes`, None: GRAPH_BUCKETS), scores a
    verify its way (`engine.verify_scorer`), and its host figures and overlap window are
    `engine`'s (mtpsim/data/engines/)."""

    engine: EngineSpec
    cuda_graphs: bool = True
    max_graph_batch: int = 256
    two_batch_overlap: bool = False  # MoE layers as two micro-batches (costs/overlap.py)
    graph_unit: str = "requests"
    graph_padded: bool = True
    graph_sizes: Sequence[int] | None = None
    speculative_graph_sizes: tuple[int, ...] | None = None

    @property
    def graph_label(self) -> str:
        """The largest captured graph, as a run's limits name it (a padded list may end below
        max_graph_batch: SGLang before v0.5.10 does not add it)."""
        lists = [sizes[-1] if sizes else 0 for sizes in (self.graph_sizes, self.speculative_graph_sizes)
                 if sizes is not None and self.graph_padded]
        return f"{max(lists) if lists else self.max_graph_batch}{' tokens' if self.graph_unit == 'tokens' else ''}"

    @property
    def expands_verify(self) -> bool:
        """vLLM V0's batch-expansion scorer: a verify window runs as that many single-token sequences."""
        return self.engine.verify_scorer == "batch_expansion"

    def sizes_for(self, kind: str) -> tuple[int, ...] | None:
        """The captured sizes a pass of `kind` replays: a speculative iteration's passes (draft,
        verify, extend) the speculative list where the engine has one, plain decode the plain."""
        return self.speculative_graph_sizes if kind != "decode" and self.speculative_graph_sizes is not None \
            else self.graph_sizes

    def uses_graphs(self, kind: str, batch: int, per_request: int = 1) -> bool:
        """Decode-shaped passes of `batch` requests, `per_request` tokens each, replay CUDA graphs
        up to the largest captured size, but for the pass kinds the engine release runs eagerly
        (`engine.eager_passes`); prefill runs eagerly."""
        if not self.cuda_graphs or kind == "prefill" or kind in self.engine.eager_passes:
            return False
        size = batch * (per_request if self.graph_unit == "tokens" else 1)
        sizes = self.sizes_for(kind)
        if self.graph_padded:  # an empty list: none of its sizes is within the largest graph, none captured
            return size <= (self.max_graph_batch if sizes is None else sizes[-1] if sizes else 0)
        return size in (sizes or ())

    def padded_batch(self, batch: int, per_request: int = 1, kind: str = "decode") -> int:
        """The requests a batch replays its captured graph at (the batch itself past the largest,
        or where the engine does not pad): a graph of tokens holds whole requests' windows."""
        per = per_request if self.graph_unit == "tokens" else 1
        if not self.graph_padded:
            return batch
        sizes = self.sizes_for(kind)
        sizes = GRAPH_BUCKETS if sizes is None else sizes  # an empty list captured none: the batch as it is
        size = next((b for b in sizes if b >= batch * per and b <= self.max_graph_batch), batch * per)
        return max(batch, size // per)


def host_model(scenario) -> HostModel:
    """The scenario's host side: its engine's CUDA graphs (engine_sections.GraphCapture), the largest
    sized by `engine.max_graph_batch` in requests where the scenario sets it."""
    s, engine = scenario, scenario.specs.engine
    cap = engine.cuda_graph
    padded = cap.padded if s.engine.graph_padding is None else s.engine.graph_padding
    if s.engine.max_graph_batch is not None:
        largest, unit = s.engine.max_graph_batch, "requests"
    else:
        largest, unit = engine.graph_max(s.specs.hardware.memory_capacity_bytes / 2**20, s.parallel.tp), cap.unit
    speculative = None
    if padded:  # the engine's padded lists (SGLang's by release), else steps of 8 up to the largest;
        # a scenario's max_graph_batch is a graph the deployment captures (SGLang's --cuda-graph-bs
        # ending there, as InferenceX's and LMSYS's launches give it), whatever the release appends
        gpu_mib, named = s.specs.hardware.memory_capacity_bytes / 2**20, s.engine.max_graph_batch is not None
        sizes = cap.padded_sizes(largest, gpu_mib, False, True if named else None)
        speculative = cap.padded_sizes(largest, gpu_mib, True, True if named else None)
    elif cap.sizes is not None:  # the engine's list up to the largest, which it adds (TensorRT-LLM)
        sizes = tuple(sorted({*(b for b in cap.sizes if b < largest), largest}))
    else:  # SGLang without padding captures every size up to the largest (a range: a user file's max
        # of 2**24 tokens unpadded was a 16.8M tuple, 4 GB and 3 s a point)
        sizes = range(1, largest + 1)
    return HostModel(engine, s.engine.cuda_graphs, largest, s.engine.two_batch_overlap, unit, padded, sizes, speculative)


def graph_label(scenario) -> str | None:
    """The largest CUDA graph the scenario's engine captures, as a run's limits name it (None:
    graphs are off)."""
    return host_model(scenario).graph_label if scenario.engine.cuda_graphs else None
