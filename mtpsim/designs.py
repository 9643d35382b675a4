"""The designs as data: one frozen record per design, saying which passes one decode
iteration and one prefill run, what its draft is, what it keeps in memory and what it needs of
the model.

Shapes depend on S, K, N only, never on how many drafts were accepted; acceptance only changes
how fast KV grows. The engine, the memory budget, the scenario checks and the reports read these
records, so designs differ here and nowhere else. `none` is the design with S = 0.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from mtpsim.design_checks import (
    assistant_reads_target,
    block_fits,
    block_size,
    block_taps,
    chained_mtp,
    external_fits,
    has_parallel_heads,
    not_block_checkpoint,
    one_layer_per_step,
    own_mtp_or_external,
    takes_no_draft,
)

Check = Callable[[object, object, object], "tuple[str, str] | None"]  # (speculative, model, draft) -> (key, reason)


@dataclass(frozen=True)
class Design:
    """One design.

    iteration(S, K, N) / prefill(S): the passes of one decode iteration and of one prompt chunk,
    per-request shapes in order. draft_part: the pricer part its draft passes run (mtp |
    assistant | heads; None: no draft). layer_part and draft_layers(S): the memory budget counts
    draft_layers(S) copies of `layer_part`'s weights (and of its KV when has_draft_kv).
    chain: how its draft steps follow one another: `recursive` (one layer reused, its own hidden
    carried to the next step: nextn), `stacked` (layer k reads layer k-1's hidden and the tokens
    one further: multi_layer), `parallel` (every head reads the target's hidden: parallel_heads),
    `seeded` (the target's last hidden seeds a carry the assistant updates: frozen_kv), `block`
    (one forward drafts every step at once from the target's injected context: block).
    external: the catalog role a `speculative.draft` must have (None: the design takes none).
    trees: whether it can draft trees (topk > 1); a chain-only design refuses topk > 1.
    checks: what it needs of the target model and the external draft, as (key, reason) failures.
    """

    name: str
    iteration: Callable[[int, int, int], list[PassShape]]
    prefill: Callable[[int], list[PassShape]]
    draft_part: str | None = None
    layer_part: str | None = None
    draft_layers: Callable[[int], int] = lambda steps: 0
    has_draft_kv: bool = False
    chain: str | None = None
    external: str | None = None
    trees: bool = False
    checks: tuple[Check, ...] = ()

    @property
    def pass_kinds(self) -> tuple[str, ...]:
        """Kinds of the passes an iteration runs, in order: what the host could prepare the next
        iteration behind (which of them an engine's overlap scheduler uses is engine data,
        `hides` in mtpsim/data/engines/)."""
        return tuple(dict.fromkeys(p.kind for p in self.iteration(2, 1, 3)))

    def label(self, steps: int) -> str:
        """How tables and plots name a run of this design: `none`, `nextn S=3`."""
        return self.name if self.draft_part is None else f"{self.name} S={steps}"

    def problems(self, speculative, model, draft) -> list[tuple[str, str]]:
        """(key, reason) for each way the model (and external draft) cannot run this design."""
        chain = [] if self.trees or speculative.topk == 1 else [
            ("speculative.topk", f"{self.name} proposes a chain (one draft per step): topk must be 1")]
        return chain + [p for p in (check(speculative, model, draft) for check in self.checks) if p]


# ---------------------------------------------------------------------- passes

@dataclass(frozen=True)
class PassShape:
    """One pass of a design, as its record lists them (and the cost model prices: costs/passes.py).

    kind: decode | draft | verify | extend | prefill. part: target | mtp | assistant | heads.
    tokens_per_request: query tokens per request; logits_per_request: LM-head rows per request;
    layer: which MTP layer (multi_layer); kv_offset: tokens this pass sees beyond the committed KV;
    from_target: the pass reads the target's hidden states rather than the draft's own last ones
    (nextn's extend and prefill: an external EAGLE-3 draft then runs its fc over the fused target
    layers). tree_keys: 0 for a causal mask; else a tree mask, each query reading the committed
    KV plus tree_keys keys on average (its ancestors and itself) of the kv_offset cached and the
    pass's own tokens. compact_tokens: KV entries per request the target copies after the pass
    (a tree's accepted path moved to consecutive slots). context_per_request: target positions
    per request whose hidden states a block drafter injects into its context KV in this pass
    (its fc and every draft layer's K/V projection run over them; costs/blocks.py). ragged: the
    batch's requests add different token counts (a verify whose widths a confidence rule set per
    request): the pass runs over the batch's token total, not tokens_per_request per request.
    """

    kind: str
    part: str
    tokens_per_request: int
    logits_per_request: int
    layer: int = 0
    kv_offset: int = 0
    from_target: bool = False
    tree_keys: float = 0.0
    compact_tokens: int = 0
    context_per_request: int = 0
    ragged: bool = False

    @property
    def by_total(self) -> bool:
        """Whether the pass runs over the batch's token total (a prefill chunk, a ragged verify)
        rather than tokens_per_request consecutive tokens per request."""
        return self.kind == "prefill" or self.ragged


def _verify(n: int) -> PassShape:
    return PassShape("verify", "target", n, n)


def _target_prefill() -> PassShape:
    return PassShape("prefill", "target", 0, 1)  # token counts come from the chunk, one logits row per request


def _tree_verify(S: int, N: int) -> PassShape:
    """Verify of a tree of N tokens (root included) under its tree mask, then the compaction of
    the accepted path's target KV. Each query reads the committed KV once per request (FA3's
    cascade for target verify with topk > 1, layers/attention/flashattention_backend.py
    `use_cascade_attn`) plus its ancestors and itself: 1 + mean depth keys, the N-1 drafts taken
    spread evenly over depths 1..min(S, N-1) (a chain's N = S+1 gives (N+1)/2, the causal mean).
    After verify, eagle_info.py `verify` moves the accepted tokens' KV to consecutive slots
    (`move_kv_cache(tgt_cache_loc, src_cache_loc)`, with page_size > 1; page_size 1 remaps
    indices instead): priced as a copy of the longest path, S+1 tokens per request."""
    deepest = min(S, N - 1)
    return PassShape("verify", "target", N, N, tree_keys=1 + (N - 1) * (deepest + 1) / (2 * N), compact_tokens=S + 1)


def _nextn(S: int, K: int, N: int) -> list[PassShape]:
    # the first draft token came out of the last extend: S-1 draft passes, then an extend over the
    # whole verify window that fills the draft KV and proposes the next first draft
    if K == 1:
        drafts = [PassShape("draft", "mtp", K, K, kv_offset=j) for j in range(1, S)]
        return drafts + [_verify(N), PassShape("extend", "mtp", N, N, from_target=True)]
    # a tree (eagle_worker.py `draft_forward`): the extend's top-K seed depth 1; step j feeds the
    # K live nodes of depth j (B*K tokens, K logits rows each for their top-K children), each
    # reading the committed KV, the last emitted token, and its j-1 ancestors and itself of the
    # (j-1)*K earlier draft tokens. The extend after verify runs over S+1 tokens per request
    # (`forward_draft_extend_after_decode`: num_tokens_per_req = speculative_num_steps + 1), the
    # longest accepted path, not the N-token tree.
    drafts = [PassShape("draft", "mtp", K, K, kv_offset=1 + (j - 1) * K, tree_keys=j + 1) for j in range(1, S)]
    return drafts + [_tree_verify(S, N), PassShape("extend", "mtp", S + 1, S + 1, from_target=True)]


def _multi_layer(S: int, K: int, N: int) -> list[PassShape]:
    # drafts come out of the previous iteration's extends; layer k extends over S+1 tokens, one
    # logits row per request
    return [_verify(N)] + [PassShape("extend", "mtp", S + 1, 1, layer=k) for k in range(S)]


def _frozen_kv(S: int, K: int, N: int) -> list[PassShape]:
    # a seed pass from the last accepted target hidden, then S-1 more, each reading only the
    # target's committed KV (no draft KV, no extend)
    if K == 1:
        return [PassShape("draft", "assistant", K, K) for _ in range(S)] + [_verify(N)]
    # a tree (speculative/frozen_kv_mtp_worker.py: `select_top_k_tokens` as EAGLE's): the seed
    # proposes the top-K of depth 1 from one token per request, then S-1 passes over the K live
    # nodes; the assistant's queries read the target's KV only, one key per query as in the chain
    seed = PassShape("draft", "assistant", 1, 1)
    return [seed] + [PassShape("draft", "assistant", K, K, tree_keys=1) for _ in range(1, S)] + [_tree_verify(S, N)]


def _block(S: int, K: int, N: int) -> list[PassShape]:
    # one drafter forward: the anchor (the last emitted token) and S masks as queries, each reading
    # the drafter's context KV and the whole block (bidirectional: S + 1 keys of its own), after the
    # last verify window's target hidden states are injected as context (N positions per request,
    # the fixed shape an extend has); then the target verifies the block
    draft = PassShape("draft", "block", S + 1, S, from_target=True, tree_keys=S + 1, context_per_request=N)
    return [draft, _verify(N)]


# ---------------------------------------------------------------------- the records

RECORDS: dict[str, Design] = {d.name: d for d in (
    Design("none", lambda S, K, N: [PassShape("decode", "target", 1, 1)], lambda S: [_target_prefill()]),
    Design("nextn", _nextn, lambda S: [_target_prefill(), PassShape("prefill", "mtp", 0, 1, from_target=True)],
           draft_part="mtp", layer_part="mtp", draft_layers=lambda S: 1, has_draft_kv=True, chain="recursive",
           external="draft", trees=True,
           checks=(not_block_checkpoint, own_mtp_or_external, chained_mtp, external_fits)),
    Design("multi_layer", _multi_layer,
           lambda S: [_target_prefill()] + [PassShape("prefill", "mtp", 0, 1, layer=k) for k in range(S)],
           draft_part="mtp", layer_part="mtp", draft_layers=lambda S: S, has_draft_kv=True, chain="stacked",
           checks=(takes_no_draft, not_block_checkpoint, chained_mtp, one_layer_per_step)),
    Design("frozen_kv", _frozen_kv, lambda S: [_target_prefill()],
           draft_part="assistant", layer_part="assistant", draft_layers=lambda S: 1, chain="seeded",
           external="assistant", trees=True,
           checks=(external_fits, assistant_reads_target)),
    Design("parallel_heads", lambda S, K, N: [_verify(N), PassShape("draft", "heads", N, N)],
           lambda S: [_target_prefill(), PassShape("prefill", "heads", 0, 1)],
           draft_part="heads", layer_part="mtp", draft_layers=lambda S: S, has_draft_kv=True, chain="parallel",
           checks=(takes_no_draft, has_parallel_heads, one_layer_per_step)),
    Design("block", _block, lambda S: [_target_prefill(), PassShape("prefill", "block_context", 0, 0, from_target=True)],
           draft_part="block", layer_part="block", draft_layers=lambda S: 1, has_draft_kv=True, chain="block",
           external="block_draft", checks=(block_fits, block_taps, block_size)),
)}
DESIGNS = tuple(RECORDS)
BASELINE = "none"  # the design speedups are measured against (plain decoding)


def record(name: str) -> Design:
    """The record of a design name (schema.Speculative has checked the name)."""
    return RECORDS[name]


def is_draft_key(key: str) -> bool:
    """A scenario's dotted key that only the speculation reads (the `none` baseline runs without it)."""
    return key.split(".")[0] in ("speculative", "acceptance") or key.startswith(("model.mtp", "model.assistant"))


def label(design: str, steps: int) -> str:
    """`none` or `<design> S=<steps>`: the one way tables, plots and traces name a design."""
    return record(design).label(steps)


@dataclass(frozen=True)
class DesignShape:
    """design, steps S, topk K and draft_tokens N (S = 0 and N = 1 for `none`)."""

    design: str
    steps: int = 0
    topk: int = 1
    draft_tokens: int = 1

    @classmethod
    def of(cls, spec) -> DesignShape:
        """From a scenario's `speculative` section."""
        if record(spec.design).draft_part is None:
            return cls(spec.design)
        return cls(spec.design, spec.steps, spec.topk, spec.num_draft_tokens)

    @property
    def record(self) -> Design:
        return RECORDS[self.design]

    @property
    def reserved_tokens(self) -> int:
        """KV slots each running request holds beyond its committed KV: 2 * max(S*K, N), or the one
        token a plain decode feeds."""
        if self.record.draft_part is None:
            return 1
        return 2 * max(self.steps * self.topk, self.draft_tokens)

    @property
    def label(self) -> str:
        return self.record.label(self.steps)

    def with_steps(self, steps: int) -> DesignShape:
        """This chain run at `steps` (an adaptive policy's iteration); 0 is plain decoding."""
        return DesignShape(BASELINE) if steps == 0 else replace(self, steps=steps, draft_tokens=steps + 1)


def iteration_passes(d: DesignShape) -> list[PassShape]:
    """The passes of one decode iteration, in order, per request shapes."""
    return d.record.iteration(d.steps, d.topk, d.draft_tokens)


def prefill_passes(d: DesignShape) -> list[PassShape]:
    """Passes over a prompt chunk (token counts come from the chunk, one logits row per request)."""
    return d.record.prefill(d.steps)


def overlap_window(d: DesignShape, engine) -> tuple[str, ...]:
    """Pass kinds during which the host can prepare the next iteration, as the
    serving engine's overlap scheduler runs it (mtpsim/data/engines/<kind>.yaml `hides`)."""
    return engine.hidden_by(d.design, d.topk)


# engines' method names (SGLang --speculative-algorithm, vLLM speculative_config.method) -> the
# design and draft that express them here
METHOD_DESIGNS = {
    "eagle": "design nextn with speculative.draft an EAGLE head (e.g. eagle3-llama-3.1-8b)",
    "eagle3": "design nextn with speculative.draft an EAGLE-3 head (e.g. eagle3-llama-3.1-8b)",
    "mtp": "design nextn (one MTP layer reused) or multi_layer (one per step), on a model with MTP layers",
    "deepseek_mtp": "design nextn, on a model with MTP layers",
    "standalone": "design nextn with speculative.draft a small target model",
    "draft_model": "design nextn with speculative.draft a small target model",
    "dflash": "design block with speculative.draft a DFlash drafter (e.g. dflash-qwen3-8b-b16)",
    "dspark": "design block with speculative.draft a DSpark drafter (e.g. dspark-deepseek-v4-flash)",
    "frozen_kv_mtp": "design frozen_kv with speculative.draft an assistant (e.g. gemma-4-31b-assistant)",
    "medusa": "design parallel_heads, on a model whose MTP layers are parallel heads",
}
