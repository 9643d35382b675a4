"""Reading a Hugging Face config.json: a `Config` view whose typed reads name the key path of
anything missing or out of range, the `Layout` a family reader returns, and the kinds vocabulary
the readers build (`gqa_kind`, `dense_kind`, `moe_kind`). families.py and deepseek_v4.py hold the
readers themselves.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpsim.errors import ScenarioError, short, warn
from mtpsim.files import read_text, require_file, strict_json
from mtpsim.specs import MAX_CONTEXT, MAX_LAYERS

_REQUIRED = object()
MAX_CONFIG_BYTES = 4 * 2**20  # a config.json is a few kB

Pair = tuple[str, str]  # (attention kind, ffn kind) of one layer


def load_json(path: object, where: str, at: str) -> dict[str, Any]:
    """A config.json's object, or one ScenarioError (the files.read_text rules, then strict JSON)."""
    if not isinstance(path, str) or not path:
        raise ScenarioError(where, at, f"expected the path of a config.json, got {short(path)}")
    file = Path(path).expanduser()
    require_file(file, where, at)
    text = read_text(file, str(file), MAX_CONFIG_BYTES)
    try:
        data = strict_json(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(str(file), f"line {exc.lineno}", f"not valid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # duplicate keys, NaN, a 5000-digit integer, deep nesting
        raise ScenarioError(str(file), "", f"not readable JSON: {short(str(exc) or type(exc).__name__, 120)[1:-1]}") from None
    if not isinstance(data, dict):
        raise ScenarioError(str(file), "", "a config.json must hold a JSON object")
    return data


class Config:
    """A config.json mapping (or its text_config) whose reads name the key path of anything
    missing or of the wrong type. JSON null reads as absent."""

    def __init__(self, data: dict[str, Any], path: str, prefix: str = ""):
        self.data, self.path, self.prefix = data, path, prefix

    def error(self, key: str, reason: str) -> ScenarioError:
        return ScenarioError(self.path, self.prefix + key, reason)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: str, default: Any = _REQUIRED, low: int = 0) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _REQUIRED:
                raise self.error(key, "missing (the reader of this model_type needs it)")
            return default
        high = MAX_LAYERS if "layers" in key else MAX_CONTEXT  # past these a model's lists would not fit memory
        if type(value) is not int or not low <= value <= high:
            raise self.error(key, f"expected an integer {low}..{high:,}, got {short(value)}")
        return value

    def fraction(self, key: str, default: float) -> float:
        """A number in (0, 1] (a share of a width, such as partial_rotary_factor)."""
        value = self.get(key, default)
        if type(value) not in (int, float) or not 0 < value <= 1:
            raise self.error(key, f"expected a number in (0, 1], got {short(value)}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {short(value)}")
        return value

    def list(self, key: str, length: int, default: Any = _REQUIRED, past: int | None = 0) -> Any:
        """A list of at least `length` entries, one per layer; `past`: how many entries after
        those the reader reads (the MTP layers'; None: any number), more being said to be cut
        (transformers refuses a layer_types of another length than num_hidden_layers)."""
        value = self.data.get(key)
        if value is None and default is not _REQUIRED:
            return default
        if not isinstance(value, list) or len(value) < length:
            raise self.error(key, f"expected a list of at least {length} entries, got {short(value)}")
        if past is not None and len(value) > length + past:
            read = f"{length} layers" + (f" and {past} MTP layers" if past else "")
            warn(self.path, f"{self.prefix}{key}", f"{len(value)} entries for {read}: the {len(value) - length - past} "
                 "past those are not read")
        return value

    def sub(self, key: str) -> Config:
        value = self.data.get(key)
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping, got {short(value)}")
        return Config(value, self.path, f"{self.prefix}{key}.")


@dataclass(frozen=True)
class Layout:
    """What a family reader finds: the kinds, the pair of kinds at each layer index (None where
    the config does not say, as past num_hidden_layers for most hybrids), a hint for model.mtp
    when it cannot say, and tie_word_embeddings' default in the family's config class."""

    attention_kinds: dict[str, dict[str, Any]]
    ffn_kinds: dict[str, dict[str, Any]]
    pair: Callable[[int], Pair | None]
    mtp_hint: str = ""
    tie_default: bool = False


# ------------------------------------------------------------------------------------ kinds
def layer_runs(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-layer mappings (attention, ffn and any flag such as V4.1's engram) -> runs of equal
    layers in model order, each with its count: a catalog's `layers`."""
    groups: list[dict[str, Any]] = []
    for layer in layers:
        if groups and {k: v for k, v in groups[-1].items() if k != "count"} == layer:
            groups[-1]["count"] += 1
        else:
            groups.append({"count": 1, **layer})
    return groups


def gqa_kind(heads: int, kv_heads: int, head_dim: int, window: int | None = None, v_head_dim: int | None = None) -> dict:
    spec = {"kind": "gqa", "num_heads": heads, "num_kv_heads": kv_heads, "head_dim": head_dim}
    if window:
        spec["window"] = window
    if v_head_dim and v_head_dim != head_dim:
        spec["v_head_dim"] = v_head_dim
    return spec


def dense_kind(width: int) -> dict:
    return {"kind": "dense", "intermediate_size": width}


def moe_kind(experts: int, top_k: int, width: int, shared: int = 0, shared_width: int | None = None) -> dict:
    spec = {"kind": "moe", "num_experts": experts, "top_k": top_k, "expert_intermediate_size": width}
    if shared:
        spec |= {"num_shared_experts": shared, "shared_intermediate_size": shared_width}
    return spec


def head_dim_of(c: Config, heads: int, default: int | None = None) -> int:
    """head_dim, else the family's own default where its transformers config class sets one
    (`default`: Qwen3Config's 128, which its attention reads whatever the width), else
    hidden_size / heads (Llama's and Qwen2's rule), which must divide evenly."""
    if c.get("head_dim") is None and default is not None:
        return default
    if c.get("head_dim") is None and c.int("hidden_size") % heads:
        raise c.error("hidden_size", f"{c.int('hidden_size')} is not a multiple of the {heads} attention heads, and "
                      "no head_dim is given to say their width")
    return c.int("head_dim", c.int("hidden_size") // heads)


def kinds_of(c: Config, key: str, types: list, names: dict[Any, str]) -> list[str]:
    """Per-layer entries (layer_types, hybrid_layer_pattern, ...) -> kind names, or an error
    naming the first entry that is none of `names`."""
    for i, t in enumerate(types):
        if not isinstance(t, (str, int)) or isinstance(t, bool) or t not in names:
            raise c.error(f"{key}.{i}", f"{short(t)} is not one of {', '.join(map(str, names))}")
    return [names[t] for t in types]

