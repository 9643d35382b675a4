"""Whether an engine can launch a deployment at all: the layouts and draft shapes its server
arguments and model code have no form for. One home for three users: search/flags.py prints the
reason where it would print the engine's launch options, engine_advice.py warns when a scenario
asks the engine for one, and search/space.py leaves such points out of a search under that engine.

Each fact as read in the release its engine file names as the default (the sources are in
search/flags.py's docstring): SGLang 0.5.12 server_args.py, vLLM 0.22.0 arg_utils.py,
config/speculative.py and fused_moe/config.py, TensorRT-LLM llmapi/llm_args.py. A design the
release has no speculative method for at all is the engine file's `lacks_methods` (engines.py),
not this module's.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.designs import BASELINE

ENGINE_LABEL = {"sglang": "SGLang", "vllm": "vLLM", "trtllm": "TensorRT-LLM"}


@dataclass(frozen=True)
class Drafter:
    """What the chosen design drafts with, as far as the engines' options tell them apart."""

    external: bool = False         # nextn with an external (EAGLE-3) draft
    mtp_layers: int | None = None  # the model's own MTP layers
    block_kind: str | None = None  # block: dflash | dspark

    @classmethod
    def of(cls, s) -> Drafter:
        """From a resolved scenario (its design's draft, the model's MTP layers)."""
        specs, design = s.specs, s.speculative.design
        mtp = specs.model.mtp.num_layers if specs.model.mtp is not None else None
        return cls(external=design == "nextn" and specs.draft is not None, mtp_layers=mtp,
                   block_kind=specs.block_kind if design == "block" else None)


def cannot_launch(kind: str, design: str, topk: int, tp: int, ep: int, attention_dp: int,
                  drafter: Drafter) -> tuple[str, str] | None:
    """(the scenario key at fault, why `kind` cannot launch it: `cannot run ...`, said after the
    engine's name), or None where it can: a replica
    of `tp` GPUs, `ep` expert groups and `attention_dp` attention groups running `design` with
    trees `topk` wide."""
    spec = design != BASELINE
    many = drafter.mtp_layers is not None and drafter.mtp_layers > 1 and design == "nextn" and not drafter.external
    if kind == "vllm":
        if ep not in (1, tp):
            return "parallel.ep", f"cannot run ep {ep} within {tp} GPUs (its experts span all of a server's GPUs or none)"
        if spec and topk > 1:
            return "speculative.topk", "cannot run a draft tree (topk > 1): its drafts are chains"
        if many:
            return "speculative.design", (f"cannot reuse one MTP layer of {drafter.mtp_layers} (it runs layer "
                                          "step % n_predict: that is design multi_layer)")
    elif kind == "trtllm":
        if attention_dp not in (1, tp):
            return "parallel.attention_dp", (f"cannot run attention_dp {attention_dp} of tp {tp} "
                                             "(attention DP spans all tp GPUs)")
        if spec and topk > 1:
            return "speculative.topk", "cannot run a draft tree (topk > 1) here: chains only"
        if many:
            return "speculative.design", (f"cannot reuse one MTP layer of {drafter.mtp_layers} (its MTP "
                                          "runs them in turn: multi_layer)")
    elif kind == "sglang" and design == "block" and drafter.block_kind == "dflash" and attention_dp > 1:
        return "parallel.attention_dp", "cannot run DFLASH with DP attention (server_args.py refuses it)"
    return None


def scenario_cannot_launch(s) -> tuple[str, str] | None:
    """`cannot_launch` for a resolved scenario under its own engine (both pools of a disaggregated
    one)."""
    drafter = Drafter.of(s)
    d = s.disaggregation
    pools = {"parallel": s.parallel} if d is None else {"disaggregation.prefill": d.prefill, "disaggregation.decode": d.decode}
    for at, par in pools.items():
        found = cannot_launch(s.engine.kind, s.speculative.design, s.speculative.topk, par.tp, par.ep,
                              par.attention_dp, drafter)
        if found is not None:
            key, why = found
            return (key.replace("parallel", at, 1) if key.startswith("parallel.") else key), why
    return None
