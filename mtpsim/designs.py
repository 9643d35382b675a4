"""The designs as data (DESIGN §3): which passes one decode iteration and one prefill run.

Shapes depend on B, S, K, N only, never on how many drafts were accepted; acceptance only
changes how fast KV grows. The engine runs whatever list these functions return, so designs
differ here and nowhere else.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.costs.passes import PassShape

DESIGNS = ("none", "nextn", "multi_layer", "frozen_kv", "parallel_heads")


@dataclass(frozen=True)
class DesignShape:
    """design, steps S, topk K and draft_tokens N (N = 1 for `none`)."""

    design: str
    steps: int = 1
    topk: int = 1
    draft_tokens: int = 1

    @classmethod
    def of(cls, spec) -> "DesignShape":
        """From a scenario's `speculative` section."""
        if spec.design == "none":
            return cls("none")
        return cls(spec.design, spec.steps, spec.topk, spec.num_draft_tokens)

    @property
    def reserved_tokens(self) -> int:
        """KV slots each running request holds beyond its committed KV: 2 * max(S*K, N)."""
        if self.design == "none":
            return 1
        return 2 * max(self.steps * self.topk, self.draft_tokens)


def iteration_passes(d: DesignShape) -> list[PassShape]:
    """The passes of one decode iteration, in order, per request shapes."""
    S, K, N = d.steps, d.topk, d.draft_tokens
    verify = PassShape("verify", "target", N, N)
    if d.design == "none":
        return [PassShape("decode", "target", 1, 1)]
    if d.design == "nextn":
        # the first draft token came out of the last extend: S-1 draft passes, then an extend
        # over the whole verify window that fills the draft KV and proposes the next first draft
        drafts = [PassShape("draft", "mtp", K, K, kv_offset=j) for j in range(1, S)]
        return drafts + [verify, PassShape("extend", "mtp", N, N)]
    if d.design == "multi_layer":
        # drafts come out of the previous iteration's extends; layer k extends over S+1 tokens,
        # one logits row per request
        return [verify] + [PassShape("extend", "mtp", S + 1, 1, layer=k) for k in range(S)]
    if d.design == "frozen_kv":
        # a seed pass from the last accepted target hidden, then S-1 more, each reading only the
        # target's committed KV (no draft KV, no extend)
        return [PassShape("draft", "assistant", K, K) for _ in range(S)] + [verify]
    if d.design == "parallel_heads":
        return [verify, PassShape("draft", "heads", N, N)]
    raise ValueError(f"unknown design {d.design!r}")


def prefill_passes(d: DesignShape) -> list[PassShape]:
    """Passes over a prompt chunk (token counts come from the chunk, one logits row per request)."""
    target = PassShape("prefill", "target", 0, 1)
    if d.design == "nextn":
        return [target, PassShape("prefill", "mtp", 0, 1)]
    if d.design == "multi_layer":
        return [target] + [PassShape("prefill", "mtp", 0, 1, layer=k) for k in range(d.steps)]
    if d.design == "parallel_heads":
        return [target, PassShape("prefill", "heads", 0, 1)]
    return [target]


def overlap_window(d: DesignShape, engine) -> tuple[str, ...]:
    """Pass kinds during which the host can prepare the next iteration (DESIGN §3), as the
    serving engine's overlap scheduler runs it (mtpsim/data/engines/<kind>.yaml `hides`)."""
    return engine.hidden_by(d.design)
