"""Shrinking a catalog model to what verification builds (the `verify:` section), without torch.

The one shrink rule: `mtpsim verify` builds and its simulated side prices the very spec returned
here, so prediction and measurement describe one model; `mtpsim calibrate` times whole layers
shrunk by it (`shrink_layer`, via mtpsim/costs/layer.py), so the layers a profile's glue is
fitted on are the layers verification runs. Rules:
- layers: `num_layers` of the target's layers, chosen so that every attention kind and every
  FFN kind survives (the last layer of each kind first, since a frozen-KV assistant reads the
  target's *last* sliding / full layer), then evenly spaced ones, kept in model order;
- widths (hidden, FFN and expert widths, LoRA ranks, vocabulary) times `hidden_scale`, rounded
  up to a multiple of 8, at least MIN_WIDTH; centroids times `hidden_scale`, rounded, at least 1;
- head counts times `hidden_scale`, rounded, at least 1; query heads then the nearest multiple
  of the KV heads (at least one group), while head dims stay real, because attention cost per
  head depends on them;
- routed experts capped at `num_experts`, top-k capped at the experts left;
- every dtype set to the one the torch model runs in (fp32 on CPU, bf16 on CUDA by default).
"""
from __future__ import annotations

import math
from typing import Any

from mtpsim.specs import AttentionSpec, FFNSpec, LayerRef, ModelSpec

MIN_WIDTH = 16


def shrink_model(spec: ModelSpec, verify, dtype: str = "fp32", *, keep_layers: bool = False) -> ModelSpec:
    """`spec` at the verify section's layers, width and expert cap, every component in `dtype`
    (what the torch model runs in). Assistants keep all layers (`keep_layers`)."""
    scale = verify.hidden_scale
    raw = spec.model_dump()
    raw["dtypes"] = dict.fromkeys(raw["dtypes"], dtype)
    raw["hidden_size"] = _width(spec.hidden_size, scale)
    raw["vocab_size"] = _width(spec.vocab_size, scale)
    if not keep_layers:
        raw["layers"] = _groups(pick_layers(spec.expanded_layers, verify.num_layers))
        used = {r.attention for r in _refs(raw)} | {r.ffn for r in _refs(raw)}
        raw["attention_kinds"] = {k: v for k, v in raw["attention_kinds"].items() if k in used}
        raw["ffn_kinds"] = {k: v for k, v in raw["ffn_kinds"].items() if k in used}
    raw["attention_kinds"] = {k: _attention(v, scale) for k, v in raw["attention_kinds"].items()}
    raw["ffn_kinds"] = {k: _ffn(v, scale, verify.num_experts) for k, v in raw["ffn_kinds"].items()}
    if spec.lm_head.kind == "centroid":
        raw["lm_head"]["num_centroids"] = max(1, round(spec.lm_head.num_centroids * scale))
        raw["lm_head"]["top_clusters"] = min(spec.lm_head.top_clusters, raw["lm_head"]["num_centroids"])
    if spec.mtp and spec.mtp.vocab_size:
        raw["mtp"]["vocab_size"] = _width(spec.mtp.vocab_size, scale)
    if spec.backbone_hidden_size:
        raw["backbone_hidden_size"] = _width(spec.backbone_hidden_size, scale)
    raw["name"] = f"{spec.name}-verify"
    return ModelSpec.model_validate(raw)


def shrink_assistant(assistant: ModelSpec, target: ModelSpec, verify, dtype: str = "fp32") -> ModelSpec:
    """A frozen-KV assistant shrunk like its target, reading the shrunken target's width, and
    with each query-only kind's KV geometry equal to the target layer it reads."""
    small = shrink_model(assistant, verify, dtype, keep_layers=True)
    kinds = {}
    for name, att in small.attention_kinds.items():
        source = target.kv_source_kind(att.kv_source)
        kinds[name] = att.model_copy(update={"num_kv_heads": source.num_kv_heads, "head_dim": source.head_dim,
                                             "v_head_dim": source.v_head_dim, "window": source.window,
                                             "num_heads": _multiple(att.num_heads, source.num_kv_heads)})
    return small.model_copy(update={"attention_kinds": kinds, "backbone_hidden_size": target.hidden_size})


def shrink_block_drafter(drafter: ModelSpec, target: ModelSpec, verify, dtype: str = "fp32") -> ModelSpec:
    """A block drafter shrunk like its target (all its layers kept), reading the shrunken
    target's width; each tap past the shrunken target's last layer reads that last layer
    instead, once (a layer is tapped at most once: the fc has one input per tap), and it is built
    for the shrunken target."""
    small = shrink_model(drafter, verify, dtype, keep_layers=True)
    taps = list(dict.fromkeys(min(t, target.num_layers - 1) for t in drafter.block.target_layer_ids))
    block = small.block.model_copy(update={"target_layer_ids": taps, "built_for": target.name,
                                           "target_num_layers": target.num_layers if small.block.target_num_layers else None})
    return small.model_copy(update={"block": block, "backbone_hidden_size": target.hidden_size})


def shrink_layer(spec: ModelSpec, attention: str, ffn: str, scale: float,
                 max_experts: int) -> tuple[int, AttentionSpec, FFNSpec]:
    """(hidden, attention, ffn) of one of `spec`'s layers, its `attention` and `ffn` kinds shrunk
    as `shrink_model` shrinks them at `hidden_scale` = scale and `num_experts` = max_experts."""
    att = AttentionSpec.model_validate(_attention(spec.attention_kinds[attention].model_dump(), scale))
    out = FFNSpec.model_validate(_ffn(spec.ffn_kinds[ffn].model_dump(), scale, max_experts))
    return _width(spec.hidden_size, scale), att, out


def pick_layers(layers: list[LayerRef], count: int) -> list[LayerRef]:
    """`count` layers in model order: the last of each attention kind, the last of each FFN
    kind, then evenly spaced others."""
    if count >= len(layers):
        return list(layers)
    chosen: list[int] = []
    for key in ("attention", "ffn"):
        for kind in dict.fromkeys(getattr(r, key) for r in layers):
            last = max(i for i, r in enumerate(layers) if getattr(r, key) == kind)
            if last not in chosen and len(chosen) < count:
                chosen.append(last)
    spaced = [round(i * (len(layers) - 1) / max(count - 1, 1)) for i in range(count)]
    for i in spaced + list(range(len(layers))):
        if len(chosen) >= count:
            break
        if i not in chosen:
            chosen.append(i)
    return [layers[i] for i in sorted(chosen)]


def _groups(layers: list[LayerRef]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ref in layers:
        if out and (out[-1]["attention"], out[-1]["ffn"]) == (ref.attention, ref.ffn):
            out[-1]["count"] += 1
        else:
            out.append({"count": 1, "attention": ref.attention, "ffn": ref.ffn})
    return out


def _refs(raw: dict[str, Any]) -> list[LayerRef]:
    refs = [LayerRef(attention=g["attention"], ffn=g["ffn"]) for g in raw["layers"]]
    if raw.get("mtp"):
        refs.append(LayerRef(**raw["mtp"]["layer"]))
    return refs


def _attention(att: dict[str, Any], scale: float) -> dict[str, Any]:
    out = dict(att)
    kv = out.get("num_kv_heads")
    if kv is not None:
        out["num_kv_heads"] = max(1, round(kv * scale))
    out["num_heads"] = _multiple(max(1, round(att["num_heads"] * scale)), out.get("num_kv_heads") or 1) \
        if att["kind"] == "gqa" else max(1, round(att["num_heads"] * scale))
    if att["kind"] == "linear":  # value heads must be a multiple of key heads
        out["num_heads"] = _multiple(out["num_heads"], out["num_kv_heads"])
    for key in ("q_lora_rank", "kv_lora_rank"):
        if att.get(key):
            out[key] = _width(att[key], scale)
    return out


def _ffn(ffn: dict[str, Any], scale: float, max_experts: int) -> dict[str, Any]:
    out = dict(ffn)
    for key in ("intermediate_size", "expert_intermediate_size", "shared_intermediate_size"):
        if ffn.get(key):
            out[key] = _width(ffn[key], scale)
    if ffn["kind"] == "moe":
        out["num_experts"] = min(ffn["num_experts"], max_experts)
        out["top_k"] = min(ffn["top_k"], out["num_experts"])
    return out


def _width(value: int, scale: float) -> int:
    return max(MIN_WIDTH, 8 * math.ceil(value * scale / 8))


def _multiple(value: int, of: int) -> int:
    return max(of, of * round(value / of))
