"""Which model parts a quantization scheme reaches (hfconfig/quant.py reads the scheme; hfconfig/
__init__.py `_dtypes` calls `part_dtypes`).

It is read off module names: each part's modules (its projections in every layer, named as the
family's modelling code names them: `self_attn.q_proj`, `mlp.experts.0.down_proj`, ...) are tested
against the scheme's exclusions (quant.Patterns: exact names and their children, `*` wildcards as
fnmatch reads them, `re:` regular expressions). A part keeps the checkpoint's base dtype when most
of its modules are left out, and takes the quantized dtype otherwise; a part split both ways is said
in one warning (NVIDIA's NVFP4 DeepSeek exports leave four of MLA's five projections in BF16:
attention prices BF16). Left at the base dtype whatever the scheme: the LM head and the embedding
(every release here leaves them out), and the KV cache (its dtype is the engine's choice:
`model.dtypes.kv_cache`). Shared experts price with the experts' dtype (costs/ffn.py) even where a
checkpoint leaves them in BF16.
"""
from __future__ import annotations

from typing import Any

from mtpsim.errors import ScenarioError, short, warn
from mtpsim.hfconfig import patterns
from mtpsim.hfconfig.patterns import SlowPatterns
from mtpsim.hfconfig.quant import Scheme

PARTS = ("attention", "dense_ffn", "experts", "mtp")  # the linear weights a scheme can reach
LAYER_PREFIXES = ("model.layers.{i}.", "model.language_model.layers.{i}.", "language_model.model.layers.{i}.",
                  "layers.{i}.", "model.model.layers.{i}.")
MTP_PREFIXES = ("mtp.layers.{k}.", "model.mtp.layers.{k}.", "mtp.{k}.")


def attention_modules(kind: dict, family: str) -> list[str]:
    """The projections of one attention layer of this kind, as the family's modelling code names them."""
    if kind.get("kind") == "mla":
        q = ["self_attn.q_a_proj", "self_attn.q_b_proj"] if kind.get("q_lora_rank") else ["self_attn.q_proj"]
        return [*q, "self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.o_proj"]
    if kind.get("kind") == "linear":
        if family == "qwen3_next":
            return ["linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.out_proj"]
        return ["linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.in_proj_b",
                "linear_attn.in_proj_a", "linear_attn.out_proj"]
    return ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]


def ffn_modules(kind: dict, family: str) -> list[str]:
    """One FFN's weights: a dense MLP's projections, or one routed expert's (its experts all alike)."""
    if family in ("llama4", "llama4_text"):  # transformers llama4: the FFN is `feed_forward`, its experts fused
        return (["feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj"] if kind.get("kind") == "moe"
                else ["feed_forward.gate_proj", "feed_forward.up_proj", "feed_forward.down_proj"])
    if kind.get("kind") != "moe":
        return ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
    if family in ("mixtral", "minimax_m2"):
        return ["block_sparse_moe.experts.0.w1", "block_sparse_moe.experts.0.w2", "block_sparse_moe.experts.0.w3"]
    if family == "gpt_oss":
        return ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    if family in ("gemma4", "gemma4_text"):  # the routed experts beside the layer's dense mlp (its shared expert here)
        return ["experts.gate_up_proj", "experts.down_proj"]
    return ["mlp.experts.0.gate_proj", "mlp.experts.0.up_proj", "mlp.experts.0.down_proj"]


def part_modules(mapping: dict[str, Any], family: str) -> dict[str, list[list[str]]]:
    """Each part's modules under every naming of the layer prefix (LAYER_PREFIXES), one list per
    naming: a checkpoint names its modules one way, and patterns of that way match only it. MTP
    layers are named after the trunk's (DeepSeek's model.layers.61) or under their own prefix
    (Qwen3.5's mtp.*: MTP_PREFIXES)."""
    att, ffn = mapping["attention_kinds"], mapping["ffn_kinds"]
    layers = [ref for group in mapping["layers"] for ref in [group] * group["count"]]
    mtp = mapping.get("mtp") or {}
    ref = mtp.get("layer")
    mtp_mods = (attention_modules(att.get(ref["attention"], {}), family) + ffn_modules(ffn.get(ref["ffn"], {}), family)
                if ref else [])
    out: dict[str, list[list[str]]] = {part: [] for part in PARTS}
    for prefix in LAYER_PREFIXES:
        names: dict[str, list[str]] = {part: [] for part in PARTS}
        for i, layer in enumerate(layers):
            at = prefix.format(i=i)
            names["attention"] += [at + m for m in attention_modules(att[layer["attention"]], family)]
            kind = ffn[layer["ffn"]]
            names["experts" if kind.get("kind") == "moe" else "dense_ffn"] += [at + m for m in ffn_modules(kind, family)]
        names["mtp"] = [prefix.format(i=len(layers) + k) + m for k in range(mtp.get("num_layers", 0)) for m in mtp_mods]
        for part in PARTS:
            out[part].append(names[part])
    if mtp_mods:
        out["mtp"] += [[p.format(k=k) + m for k in range(mtp["num_layers"]) for m in mtp_mods] for p in MTP_PREFIXES]
    return out


def part_dtypes(scheme: Scheme, mapping: dict[str, Any], family: str, where: str, at: str,
                base: str | None) -> dict[str, str]:
    """The dtype of each part the scheme reaches (PARTS): per part, the naming under which the
    scheme names the most of its modules, then the majority of those modules' dtypes (the base
    where most are left out). A part split between dtypes is said once, at `at`."""
    try:
        return _part_dtypes(scheme, mapping, family, where, at, base)
    except SlowPatterns as slow:
        raise ScenarioError(where, at, f"the {scheme.source}'s {slow.count} module patterns took over "
                            f"{patterns.MATCH_BUDGET_S:g} s to match the model's modules (stopped at {short(slow.pattern, 60)}): "
                            "name the modules exactly, or give fewer patterns (an expression that backtracks without end "
                            "stops here too)") from None


def _part_dtypes(scheme: Scheme, mapping: dict[str, Any], family: str, where: str, at: str,
                 base: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for part, namings in part_modules(mapping, family).items():
        if not any(namings):  # none of it in the model, or MTP layers of a kind the config does not say
            if scheme.dtype or base:  # (the scenario's model.mtp will): as the checkpoint would store it
                out[part] = scheme.dtype or base
            continue
        names = max(namings, key=lambda ns: sum(map(scheme.names, ns)))
        dtypes = [scheme.dtype_of(m) or base for m in names]
        counts = {dt: dtypes.count(dt) for dt in dict.fromkeys(dtypes)}
        chosen = max(counts, key=lambda dt: (counts[dt], dt != base))
        if chosen is None:
            continue
        out[part] = chosen
        if len(counts) > 1:
            split = ", ".join(f"{n} of {len(dtypes)} {dt or 'unquantised'}" for dt, n in counts.items())
            warn(where, at, f"the {scheme.source} leaves the {part} weights of mixed dtypes ({split}): priced "
                 f"{chosen} (model.dtypes.{part} overrides)")
    return out
