"""A block drafter's config.json (design block) -> the `role`, `backbone_hidden_size` and
`block` keys of its ModelSpec; its layers are read by its base family (qwen3: dense_gqa).

Two layouts are read:
- z-lab DFlash (architectures DFlashDraftModel; z-lab/dflash dflash/model.py): `block_size`,
  `dflash_config.target_layer_ids`, or when absent the default spread over
  `num_target_layers` (build_target_layer_ids: one tap at the middle for a one-layer drafter,
  else num_hidden_layers taps from layer 1 to num_target_layers - 3); num_target_layers, where
  given, is the depth of the target it was trained against (block.target_num_layers);
- DeepSpec (architectures Qwen3DSparkModel; deepseek-ai/DeepSpec
  deepspec/modeling/dspark/qwen3/config.py build_draft_config): `block_size`, `target_layer_ids`,
  `markov_rank` (0: none), `enable_confidence_head`, `num_target_layers` as above. DeepSpec's
  DFlash checkpoints are the same architecture with neither head: kind dflash; with either head:
  dspark.
The drafter's width is the target's (both build their config from the target's), so
backbone_hidden_size is its hidden_size. Any other config is not a block drafter: {}.
"""
from __future__ import annotations

from typing import Any

from mtpsim.hfconfig.view import Config

DFLASH, DEEPSPEC = "DFlashDraftModel", "Qwen3DSparkModel"


def block_keys(top: Config) -> dict[str, Any]:
    """The block-drafter keys of a config (top level), or {} for any other model."""
    architectures = top.get("architectures", [])
    arch = next((a for a in architectures if a in (DFLASH, DEEPSPEC)), None) if isinstance(architectures, list) else None
    if arch is None:
        return {}
    layers = top.int("num_hidden_layers", low=1)
    if arch == DFLASH:
        extra = top.sub("dflash_config") if top.get("dflash_config") is not None else Config({}, top.path)
        taps = extra.list("target_layer_ids", 1, None, past=None)
        if taps:
            depth = top.int("num_target_layers", None, low=1)
        else:
            depth = top.int("num_target_layers", low=1 if layers == 1 else 4 + layers - 1)
            taps = _default_taps(depth, layers)
        block = {"kind": "dflash", "target_layer_ids": taps}
    else:
        markov, confidence = top.int("markov_rank", 0), top.bool("enable_confidence_head", False)
        block = {"kind": "dspark" if markov or confidence else "dflash",
                 "target_layer_ids": top.list("target_layer_ids", 1, past=None)}
        depth = top.int("num_target_layers", None, low=1)
        block |= ({"markov_rank": markov} if markov else {}) | ({"confidence_head": True} if confidence else {})
    if depth is not None:  # the depth of the target it was trained against: block_fits holds the model to it
        block["target_num_layers"] = depth
    block["block_size"] = top.int("block_size", low=2)
    return {"role": "block_draft", "backbone_hidden_size": top.int("hidden_size"), "block": block}


def _default_taps(target_layers: int, draft_layers: int) -> list[int]:
    """z-lab/dflash build_target_layer_ids: the middle layer for one draft layer, else an even
    spread from layer 1 to target_layers - 3 (distinct layers: the caller asks for a target of at
    least 3 + draft_layers layers)."""
    if draft_layers == 1:
        return [target_layers // 2]
    span = target_layers - 3 - 1
    return [int(round(1 + i * span / (draft_layers - 1))) for i in range(draft_layers)]
