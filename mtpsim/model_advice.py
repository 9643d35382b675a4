"""Warnings about the models a scenario serves (advice.py runs them with the rest): settings of
a model or draft spec that price nothing or look like a slip, where refusing would be too
strict. Each check takes the scenario and returns (dotted key, reason) pairs."""
from __future__ import annotations

from collections.abc import Iterator

from mtpsim.schema import Scenario
from mtpsim.specs import ModelSpec

# Sizes past which no released model lies, kept generous so that only a slip (a digit lost or
# added, a test value left in) warns. Width: the narrowest released language models are 128 wide
# and more (Pythia-14M: 128; SmolLM-135M: 576; Qwen3-0.6B: 1024); only toy models go below 64
# (TinyStories-1M: 64). MTP layers / draft heads: 1 in DeepSeek-V3/V3.2/V4, GLM-4.5/5 and
# Qwen3-Next, 3 in MiMo-7B, MiMo-V2-Flash and Step-3.5-Flash, 4-5 Medusa heads: none past 16,
# and never more than the trunk they draft for.
MIN_HIDDEN_SIZE = 64
MAX_MTP_LAYERS = 16


def served(s: Scenario) -> Iterator[tuple[str, object, ModelSpec]]:
    """(scenario key, what the scenario wrote there, resolved spec) of the target and of its draft
    or assistant when the design runs one."""
    yield "model", s.model, s.specs.model
    draft = s.specs.draft or s.specs.assistant
    if draft is not None:
        yield "speculative.draft", s.speculative.draft, draft


def no_context_limit(s: Scenario) -> list[tuple[str, str]]:
    """A model without max_context (a config.json without max_position_embeddings): nothing is
    checked against one."""
    if s.specs.model.max_context is not None:
        return []
    return [("model", f"model {s.specs.model.name!r} states no context limit (max_context; in a config.json "
             "max_position_embeddings): no request's length is checked against one")]


def unread_dtypes(s: Scenario) -> list[tuple[str, str]]:
    """Per-part dtypes the scenario writes for a part its model lacks or never prices: experts on
    a dense model, mtp where no MTP layer is the model's own (a draft's layers take attention and
    dense_ffn), a block drafter's lm_head (it borrows the target's), an assistant's kv_cache (it
    keeps none). Only keys the scenario writes: a catalog entry's full table is not the user's."""
    found = []
    for key, ref, spec in served(s):
        given = ref.get("dtypes") if isinstance(ref, dict) else None
        if not isinstance(given, dict):
            continue
        found += [(f"{key}.dtypes.{part}", f"{spec.name!r} {why}: this dtype prices nothing")
                  for part, why in unread_dtype_parts(spec).items() if part in given]
    return found


def unread_dtype_parts(spec) -> dict[str, str]:
    """part -> why `spec`'s dtype for it prices nothing (a ModelSpec's parts it lacks or borrows)."""
    unread = {"experts": "has no experts" if not spec.has_experts else None,
              "mtp": "has no MTP layers of its own" if spec.mtp is None or spec.role != "target" else None,
              "lm_head": "borrows the target's LM head" if spec.role == "block_draft" else None,
              "kv_cache": "keeps no KV of its own" if spec.role == "assistant" else None}
    return {part: why for part, why in unread.items() if why}


def spec_entry(spec, **dump) -> dict:
    """A ModelSpec as a scenario's inline entry (mode json), without the dtypes it never reads: what
    a command writes for the user to run again (verify's simulated.yaml) says nothing it ignores."""
    entry = spec.model_dump(mode="json", **dump)
    unread = unread_dtype_parts(spec)
    entry["dtypes"] = {part: dtype for part, dtype in entry.get("dtypes", {}).items() if part not in unread}
    return entry


def fp4_kv_before_blackwell(s: Scenario) -> list[tuple[str, str]]:
    """A target whose KV cache is FP4 on a GPU that keeps it as FP8 (HardwareSpec.stored_kv):
    priced and sized as FP8, said once."""
    hw, kv = s.specs.hardware, s.specs.model.dtypes.kv_cache
    if hw.stored_kv(kv) == kv:
        return []
    given = isinstance(s.model, dict) and isinstance(s.model.get("dtypes"), dict) and "kv_cache" in s.model["dtypes"]
    return [("model.dtypes.kv_cache" if given else "model",
             f"{s.specs.model.name!r} keeps an FP4 KV cache, which engines pack only on Blackwell (compute capability "
             f"10+); {hw.name!r} is {hw.compute_capability:.1f}, so its cache is priced and sized as FP8")]


def windows_past_context(s: Scenario) -> list[tuple[str, str]]:
    """A sliding window (or DeepSeek-V4's compressed window) at least as long as the longest
    sequence the model serves: every layer of that kind attends its whole context, as a global
    one would; the window then sizes nothing."""
    limit = s.specs.model.max_context
    if limit is None:
        return []
    found = []
    for key, _, spec in served(s):
        for name, att in spec.attention_kinds.items():
            window, at = (att.compressed.window, "compressed.window") if att.compressed else (att.window, "window")
            if window is not None and window >= limit:
                found.append((f"{key}.attention_kinds.{name}.{at}", f"{window:,} tokens is not shorter than model "
                              f"{s.specs.model.name}'s context of {limit:,} (max_context): no sequence outgrows it, so "
                              "these layers attend their whole context, as global ones"))
    return found


def _written_at(key: str, ref: object, field: str, in_config: str) -> tuple[str, str]:
    """(the scenario key a spec's dotted `field` came from, how the reason names the value): the
    field itself where the scenario (or a model file) writes it; `<key>.hf_config` and the
    config.json key (`in_config`) where config.json gave it."""
    written = isinstance(ref, dict) and field.split(".")[0] in ref
    if isinstance(ref, dict) and "hf_config" in ref and not written:
        return f"{key}.hf_config", f"config.json's {in_config}"
    return f"{key}.{field}", field


def past_any_model(s: Scenario) -> list[tuple[str, str]]:
    """Widths and layer counts no released model has (MIN_HIDDEN_SIZE, MAX_MTP_LAYERS): the run
    prices them as given, but they are more likely a slip than a model. One warning per value."""
    found = []
    for key, ref, spec in served(s):
        for field in ("hidden_size", "backbone_hidden_size"):
            width = getattr(spec, field)
            if width is not None and width < MIN_HIDDEN_SIZE:
                at, said = _written_at(key, ref, field, "hidden_size")
                found.append((at, f"{said} {width} is narrower than any released model (the narrowest are 128 wide "
                              "and more): priced as given"))
        if spec.mtp is not None and spec.role == "target":
            n, trunk = spec.mtp.num_layers, spec.num_layers
            if n > min(MAX_MTP_LAYERS, trunk):
                at, said = _written_at(key, ref, "mtp.num_layers", "MTP layer count (num_nextn_predict_layers or alike)")
                past = f"more than the model's own {trunk} layers" if n > trunk else \
                    f"more than any released model has (1 to 5; past {MAX_MTP_LAYERS} warns)"
                found.append((at, f"{said} {n} is {past}: priced as given"))
    return found


def odd_widths(s: Scenario) -> list[tuple[str, str]]:
    """Query heads x head width far from the hidden size (more than 32x either way): released models
    keep them within about 10x (DeepSeek-V4-Pro's compressed attention: 128 x 512 against 7168),
    so such a kind is more likely a slip of a digit. A hidden_size past any model is said of
    itself (past_any_model), not of every attention kind measured against it."""
    found = []
    for key, _, spec in served(s):
        if spec.hidden_size < MIN_HIDDEN_SIZE:
            continue
        for name, att in spec.attention_kinds.items():
            if att.head_dim is None:  # MLA: its widths are latent ranks
                continue
            width = att.num_heads * att.head_dim
            if not spec.hidden_size / 32 <= width <= spec.hidden_size * 32:
                found.append((f"{key}.attention_kinds.{name}", f"{att.num_heads} heads x {att.head_dim} = {width:,} wide "
                              f"against hidden_size {spec.hidden_size:,}: released models keep the two within about "
                              "10x of each other"))
    return found
