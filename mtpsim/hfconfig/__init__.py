"""A Hugging Face config.json -> a raw ModelSpec mapping (catalog.py), read as plain JSON: no
torch, no transformers.

A scenario names a checkpoint's config with `model: {hf_config: path/to/config.json}`; the other
keys of that mapping are overrides deep-merged on top (catalog.resolve), as with `{from: NAME}`:
`{hf_config: ./config.json, dtypes: {experts: fp4}, mtp: {num_layers: 3}}`.

The family reader (families.py), picked by `model_type` or else the `architectures` class, gives
the kinds and each layer's pair of kinds; runs of equal layers become one group. For every family:
hidden_size, vocab_size, max_position_embeddings -> max_context, tie_word_embeddings ->
tie_embeddings, num_nextn_predict_layers -> mtp (DeepSeek-style modules: two norms, a 2h x h
projection, one decoder layer), torch_dtype / dtype and quantization_config -> dtypes
(quant_method fp8: the linear weights; embeddings, LM head and KV cache keep the base dtype).
A Gemma-style `text_config` is read in place of the top level. The name is the folder holding
config.json (override with `name:`). A block drafter's config (z-lab DFlash, DeepSpec DSpark)
also gives its role and `block` (hfconfig/blocks.py), and not tie_embeddings (its
tie_word_embeddings, true in z-lab's Gemma 4 drafter, describes the target's head it borrows).

What config.json does not say comes from the scenario's keys, else it is one ScenarioError: the
MTP layers' kind where the family's per-layer rule does not reach them (`model.mtp`), the dtypes
when it gives neither torch_dtype / dtype nor a quantization read here (`model.dtypes`), and a
model_type no reader knows (`model.hf_config`). A missing, binary, non-UTF-8 or oversized file,
malformed JSON (duplicate keys, NaN included) and a field of the wrong type are one error each.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtpsim.errors import ScenarioError, short, warn
from mtpsim.hfconfig import deepseek_v4, quant, quant_parts
from mtpsim.hfconfig.blocks import block_keys
from mtpsim.hfconfig.families import ARCHITECTURES, READERS
from mtpsim.hfconfig.view import Config, Layout, layer_runs, load_json
from mtpsim.layer_specs import named_kind

READERS["deepseek_v4"] = deepseek_v4.deepseek_v4  # DeepSeek-V4 (hfconfig/deepseek_v4.py)
READERS["deepseek_v41"] = READERS["deepseek_v41_text"] = deepseek_v4.deepseek_v4  # and V4.1: the same reader
ARCHITECTURES["DeepseekV4ForCausalLM"] = "deepseek_v4"
ARCHITECTURES["DeepseekV41ForCausalLM"] = "deepseek_v41"

TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
PARTS = ("attention", "dense_ffn", "experts", "mtp", "lm_head", "kv_cache", "activations")


def read(path: object, where: str, key: str = "", overrides: dict[str, Any] | None = None,
         drafters: Callable[[], dict] | None = None, mtp_runs: bool = True) -> dict[str, Any]:
    """config.json at `path` -> a raw ModelSpec mapping. `key` is the model's key path in `where`
    ("model"); `overrides` (the scenario's other keys, merged on top by the caller) are looked at
    only to know whether they give what the config cannot say; `drafters` gives the catalog's
    DSpark drafters (catalog.dspark_drafters), for a DeepSeek-V4 checkpoint that bundles one;
    `mtp_runs`: whether the scenario runs the model's own MTP layers (where it does not, MTP layers
    whose kind the config leaves out are left out, not asked for)."""
    overrides = overrides or {}
    at = f"{key}.hf_config" if key else "hf_config"
    top = Config(load_json(path, where, at), str(path))
    text = top.sub("text_config") if top.get("text_config") is not None else top
    layout = _reader(top, where, at)(text)
    n = text.int("num_hidden_layers", low=1)
    pairs = [layout.pair(i) for i in range(n)]
    routed = {name for name, ffn in layout.ffn_kinds.items() if ffn.get("kind") == "moe"}
    if routed and not any(ffn in routed for _, ffn in pairs):
        raise text.error("num_hidden_layers", f"the config routes experts, yet none of its {n} layers is MoE by its "
                         "layer rule (first_k_dense_replace, moe_layer_freq, mlp_only_layers, moe_layers_enum): "
                         "a rule that reaches past the layers")
    mapping: dict[str, Any] = {
        "name": _name(Path(str(path)), where, at, overrides), "hidden_size": text.int("hidden_size"),
        "vocab_size": text.int("vocab_size"),
        "layers": layer_runs([{"attention": a, "ffn": f} for a, f in pairs]),
        "tie_embeddings": text.bool("tie_word_embeddings", top.bool("tie_word_embeddings", layout.tie_default))}
    if text.get("max_position_embeddings") is not None:
        mapping["max_context"] = _max_context(text)
    mtp = _mtp(text, layout, n, where, key, overrides, mtp_runs)
    if mtp is not None:
        mapping["mtp"] = mtp
    mapping |= _kinds(layout, mapping, overrides)
    mapping["dtypes"] = _dtypes(top, text, where, key, overrides, mapping)
    if _reader(top, where, at) is deepseek_v4.deepseek_v4:
        mapping = deepseek_v4.finish(top, text, mapping, drafters() if drafters else {})
    block = block_keys(top)  # a block drafter's (hfconfig/blocks.py)
    if block:  # it borrows the target's embedding and LM head: whether they are tied is the target's
        mapping.pop("tie_embeddings", None)
    return mapping | block


def _max_context(c: Config) -> int:
    """The longest sequence the engines serve the checkpoint at: max_position_embeddings, times
    the RoPE scaling factor unless the scaling is one that does not lengthen the context (su,
    longrope, llama3), from original_max_position_embeddings under YaRN (vLLM and SGLang
    `_get_and_verify_max_len`, the derived max_model_len: a Qwen3 config with YaRN factor 4 on
    32k serves 131,072 tokens)."""
    length = c.int("max_position_embeddings", low=1)
    # transformers 5 writes the scaling into rope_parameters (Qwen3.5's configs), beside rope_theta
    key = "rope_scaling" if c.get("rope_scaling") else "rope_parameters"  # transformers: rope_scaling or rope_parameters
    if c.get(key) is None:
        return length
    _one_scaling(c)
    scaling = c.sub(key)
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind is not None and not isinstance(kind, str):  # a list or a number is no scaling's name: not a multiplier
        raise scaling.error("rope_type" if "rope_type" in scaling.data else "type",
                            f"expected the scaling's name (e.g. \"yarn\"), got {short(kind)}")
    if kind in (None, "default", "su", "longrope", "llama3", "mrope"):
        return length
    factor = scaling.get("factor", 1.0)
    if type(factor) not in (int, float) or not 0 < factor <= 1024:
        raise scaling.error("factor", f"expected a context multiple in (0, 1024], got {short(factor)}")
    if kind == "yarn":
        length = scaling.int("original_max_position_embeddings", low=1)
    if int(length * factor) < 1:  # else said as the spec's model.max_context, a key config.json does not have
        raise scaling.error("factor", f"{short(factor)} times {length:,} tokens leaves no context to serve")
    return int(length * factor)


def _one_scaling(c: Config) -> None:
    """rope_scaling and rope_parameters may both be written (transformers 5 keeps the first for old
    readers); where both give the scaling they must agree on what the context length reads (its
    kind, factor and original length), else which one an engine reads decides the context."""
    old, new = c.get("rope_scaling"), c.get("rope_parameters")
    if not isinstance(old, dict) or not isinstance(new, dict) or not old:  # an empty rope_scaling gives way
        return
    # a kind or factor one leaves out is the default (no scaling, 1): said apart from one that gives it
    for name, fields, default in (("kind", ("rope_type", "type"), "default"), ("factor", ("factor",), 1.0),
                                  ("original length", ("original_max_position_embeddings",), None)):
        a = next((old[f] for f in fields if old.get(f) is not None), default)
        b = next((new[f] for f in fields if new.get(f) is not None), default)
        if a is not None and b is not None and a != b:
            raise c.error("rope_parameters", f"gives the RoPE scaling's {name} as {short(b)}, and rope_scaling as "
                          f"{short(a)}: the two say one thing, so keep one (or make them agree)")


def _reader(top: Config, where: str, at: str):
    """The family reader of model_type, else of the first architectures class. Either given in
    another form than transformers writes (a list for model_type, a string for architectures) is
    an error at its key: it was passed over for the other, or said to be missing."""
    model_type, architectures = top.get("model_type"), top.get("architectures", [])
    if not isinstance(model_type, (str, type(None))):
        raise top.error("model_type", f"expected the architecture's name as text (e.g. \"deepseek_v3\"), got "
                        f"{short(model_type)}")
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise top.error("architectures", f"expected a list of class names (e.g. [\"DeepseekV3ForCausalLM\"]), got "
                        f"{short(architectures)}")
    first = architectures[0] if architectures else None
    if first is not None and "eagle" in first.lower():  # SpecForge's LlamaForCausalLMEagle3 under model_type llama
        raise top.error("architectures", f"{short(first)} is an EAGLE draft head, which a family reader would read as "
                        "a plain decoder (its draft vocabulary, fused target layers and double-width attention input "
                        "lost): write it as a catalog file with role: draft (as mtpsim/data/models/eagle3-llama-3.1-8b.yaml)")
    reader = READERS.get(model_type) if model_type is not None else None
    if reader is None and model_type is not None and first in ARCHITECTURES:
        # the class's family reads it (a fine-tune's own model_type): said, as a family it does not
        # name (qwen3_omni_moe under Qwen3ForCausalLM) loses what it adds (experts, windows) in silence
        warn(top.path, top.prefix + "model_type", f"{short(model_type)} is not a family mtpsim reads: the config is "
             f"read by the reader of architectures[0] {short(first)} ({ARCHITECTURES[first]}), so what "
             f"{short(model_type)} adds to that layout (experts, sliding windows) is not priced")
    reader = reader or (READERS.get(ARCHITECTURES.get(first)) if first is not None else None)
    if reader is None:
        named = (f"model_type {short(model_type)} is" if model_type is not None else
                 f"no model_type, and architectures[0] {short(first)} is" if first is not None else
                 "no model_type nor architectures is")
        raise ScenarioError(where, at, f"{named} not supported (supported: {', '.join(sorted(READERS))}); write the "
                            "spec as a catalog file instead")
    return reader


def _family(top: Config) -> str | None:
    """The family whose modelling code names the checkpoint's modules: model_type where a reader
    knows it, else that of architectures[0] (the reader `_reader` picked)."""
    model_type, architectures = top.get("model_type"), top.get("architectures", [])
    if model_type in READERS:
        return model_type
    return ARCHITECTURES.get(architectures[0]) if architectures else None


def _name(path: Path, where: str, at: str, overrides: dict) -> str:
    """The model's name: the folder a config.json sits in (a checkpoint's), else the file's stem;
    one that cannot name a model is refused here, naming where it came from, unless the
    scenario gives model.name itself."""
    folder = path.resolve().parent.name
    name = folder if path.name == "config.json" and folder else path.stem
    if "name" in overrides:
        return name
    if not name.strip() or len(name) > 200 or not name.isprintable():  # sections.Name's rules
        source = f"the folder {short(name, 40)} holding it" if name == folder else f"its file name {short(name, 40)}"
        raise ScenarioError(where, at, f"{source} would name the model, and a name is one line of 1 to 200 printable "
                            "characters: give model.name")
    return name


def _mtp(c: Config, layout: Layout, n: int, where: str, key: str, overrides: dict,
         runs: bool = True) -> dict[str, Any] | None:
    """num_nextn_predict_layers (mtp_num_hidden_layers) -> the mtp section, its layer kind from the family's rule where
    the rule gives every MTP layer the same pair; else the scenario's model.mtp must give it."""
    said = next((k for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers") if c.int(k, 0)), None)  # Qwen3.5: the latter
    count = c.int(said) if said else 0
    if said == "num_nextn_predict_layers" and c.int("mtp_num_hidden_layers", 0) not in (0, count):
        # two counts of one thing: the engines of a family read one key each (SGLang's qwen3_5_mtp.py the latter)
        raise c.error("mtp_num_hidden_layers", f"{c.int('mtp_num_hidden_layers')} MTP layers, and num_nextn_predict_layers "
                      f"says {count}: give one count")
    if not count and c.bool("use_mtp", False):  # MiniMax-M2: MTP modules of mtp_transformer_layers each
        said, count = "num_mtp_modules", c.int("num_mtp_modules", 0) * c.int("mtp_transformer_layers", 1, low=1)
    if not count:
        return None
    mtp: dict[str, Any] = {"num_layers": count, "input_projection": True}
    pairs = {layout.pair(i) for i in range(n, n + count)}
    if len(pairs) == 1 and None not in pairs:
        attention, ffn = pairs.pop()
        mtp["layer"] = {"attention": attention, "ffn": ffn}
    elif not runs and not isinstance(overrides.get("mtp"), dict):
        return None  # nothing here runs those layers: their kind need not be known
    elif not isinstance(overrides.get("mtp"), dict) or "layer" not in overrides["mtp"]:
        hint = f" ({layout.mtp_hint})" if layout.mtp_hint else ""
        at = f"{key}.mtp" if key else "mtp"
        raise ScenarioError(where, at, f"config.json has {said} {count} but does not say the MTP "
                            f"layer's kind; give {at}: {{layer: {{attention: KIND, ffn: KIND}}}}{hint}")
    return mtp


def _kinds(layout: Layout, mapping: dict[str, Any], overrides: dict) -> dict[str, Any]:
    """The kinds some layer uses (the trunk's, the MTP layer's, or one the overrides name): an
    unused kind would still be checked for sharding."""
    layer = (overrides.get("mtp") or {}).get("layer") if isinstance(overrides.get("mtp"), dict) else None
    refs = [*mapping["layers"], *([mapping["mtp"]["layer"]] if "layer" in mapping.get("mtp", {}) else []),
            *([layer] if isinstance(layer, dict) else [])]
    used = {(part, named_kind(ref, part)) for ref in refs for part in ("attention", "ffn")}
    return {"attention_kinds": {k: v for k, v in layout.attention_kinds.items() if ("attention", k) in used},
            "ffn_kinds": {k: v for k, v in layout.ffn_kinds.items() if ("ffn", k) in used}}


def _dtypes(top: Config, text: Config, where: str, key: str, overrides: dict, mapping: dict) -> dict[str, str]:
    """torch_dtype / dtype for every part; the checkpoint's quantization (hfconfig/quant.py:
    quantization_config, else a sibling hf_quant_config.json) for the linear weights it reaches.
    Where the config gives no dtype, or a quantization not read here, the scenario's model.dtypes must.
    The scales a scheme stores its 4-bit weights with go to `mapping` (fp4_scale_bytes)."""
    name = next((c.get(k) for c in (text, top) for k in ("dtype", "torch_dtype") if c.get(k) is not None), None)
    # no dtype at all is transformers' default, float32 (PretrainedConfig; vLLM's `_get_and_verify_dtype`
    # reads a missing torch_dtype as float32 too): openai/gpt-oss-120b's config.json gives none
    base = TORCH_DTYPES.get(name) if isinstance(name, str) else "fp32" if name is None else None
    at = f"{key}.hf_config" if key else "hf_config"  # where the warnings below name the file read
    if base == "fp32":  # a float32 checkpoint is served in 16 bits (the engines' `--dtype auto`)
        if "dtypes" not in overrides:
            said = "says float32" if name is not None else "gives no torch_dtype (transformers' default: float32)"
            warn(where, at, f"config.json {said}, which vLLM and SGLang serve in 16 bits under their default "
                 "--dtype auto (SGLang model_config.py and vLLM's `_get_and_verify_dtype`: float16 or bfloat16 for "
                 "float32 models): priced bf16 (model.dtypes overrides)")
        base = "bf16"
    out = dict.fromkeys(PARTS, base) if base else {}
    problem = None if base else f"has dtype {short(name)}, not one of {', '.join(TORCH_DTYPES)}"
    inner = text is not top and text.get("quantization_config") is not None
    if inner and top.get("quantization_config") is not None and top.get("quantization_config") != \
            text.get("quantization_config"):  # which one an engine reads would set the weights' dtypes
        raise top.error("quantization_config", "differs from text_config.quantization_config: the two describe one "
                        "checkpoint's weights, so keep one (or make them agree)")
    scheme = quant.scheme_of((text if inner else top).get("quantization_config"), top.path,
                             ("text_config." if inner else "") + "quantization_config")
    if isinstance(scheme, quant.Problem):
        problem = scheme.reason
    elif scheme is not None:
        out |= quant_parts.part_dtypes(scheme, mapping, _family(top), where, at, base)
        if scheme.fp4_scale_bytes is not None and "fp4" in out.values():  # the scales its 4-bit weights are stored with
            mapping["fp4_scale_bytes"] = scheme.fp4_scale_bytes
    if problem:  # the scenario's model.dtypes must say what config.json cannot, for each weight the model has
        at = f"{key}.dtypes" if key else "dtypes"
        given = overrides.get("dtypes")
        held = [part for part, namings in quant_parts.part_modules(mapping, _family(top)).items() if any(namings)]
        missing = [part for part in held if not isinstance(given, dict) or part not in given]
        if given is None or missing:
            also = f" (it gives {', '.join(given)} only)" if isinstance(given, dict) and given else ""
            raise ScenarioError(where, at, f"config.json {problem}; give {at} for {', '.join(missing)}{also}")
    return out
