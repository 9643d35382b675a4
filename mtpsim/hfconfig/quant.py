"""A checkpoint's quantization -> the dtype of each part it quantizes (hfconfig/__init__.py `_dtypes`).

Where a checkpoint says how its weights are stored, and how engines read it:
- `quantization_config` in config.json (or its text_config), by `quant_method`:
  - `fp8`: block-scaled e4m3 (DeepSeek-V3, MiMo-V2-Flash, the *-FP8 releases); modules left out
    in `modules_to_not_convert` (or `ignored_layers`);
  - `mxfp4`: 4-bit MX weights (gpt-oss); modules left out in `modules_to_not_convert`;
  - `compressed-tensors` (llm-compressor; Kimi-K2.5's INT4 experts, NVIDIA's NVFP4 exports):
    `config_groups`, each a weight scheme (`num_bits`, `type`) over `targets` (`Linear` for every
    linear layer, or module names), modules left out in `ignore`;
  - `modelopt` (NVIDIA Model Optimizer): `quant_algo` as below, left out in `exclude_modules` or
    `ignore`;
- else `hf_quant_config.json` beside config.json (NVIDIA's ModelOpt exports: {"quantization":
  {"quant_algo", "exclude_modules"}}), which vLLM and TensorRT-LLM read the same way:
  `quant_algo` FP8, NVFP4 (or W4A16_NVFP4), or MIXED_PRECISION with a per-module
  `quantized_layers` map.

4-bit weights of any of these formats (NVFP4, MXFP4, INT4) price as `fp4`, 8-bit floats as `fp8`.
Which parts a scheme reaches is read off module names: each part's modules (its projections in
every layer, named as the family's modelling code names them: `self_attn.q_proj`,
`mlp.experts.0.down_proj`, ...) are tested against the exclusions (exact names and their
children, `*` wildcards as fnmatch reads them, `re:` regular expressions). A part keeps the
checkpoint's base dtype when most of its modules are left out, and takes the quantized dtype
otherwise; a part split both ways is said in one warning (NVIDIA's NVFP4 DeepSeek exports leave
four of MLA's five projections in BF16: attention prices BF16). Left at the base dtype whatever
the scheme: the LM head and the embedding (every release here leaves them out), and the KV cache
(its dtype is the engine's choice: `model.dtypes.kv_cache`). Shared experts price with the
experts' dtype (costs/ffn.py) even where a checkpoint leaves them in BF16.
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from mtpsim.errors import ScenarioError, short, warn
from mtpsim.hfconfig.view import load_json

PARTS = ("attention", "dense_ffn", "experts", "mtp")  # the linear weights a scheme can reach
BITS = {(8, "float"): "fp8", (4, "float"): "fp4", (4, "int"): "fp4"}  # compressed-tensors (num_bits, type)
ALGOS = {"FP8": "fp8", "FP8_BLOCK": "fp8", "NVFP4": "fp4", "W4A16_NVFP4": "fp4", "MXFP4": "fp4", "W4A8_MXFP4_FP8": "fp4"}
LAYER_PREFIXES = ("model.layers.{i}.", "model.language_model.layers.{i}.", "language_model.model.layers.{i}.",
                  "layers.{i}.", "model.model.layers.{i}.")
MTP_PREFIXES = ("mtp.layers.{k}.", "model.mtp.layers.{k}.", "mtp.{k}.")


class Patterns:
    """Module-name patterns (exclusions, or a MIXED_PRECISION map's keys) matched fast: exact names
    by a lookup of every dotted run of the module's name (a name names the module, its parents and
    any name ending in it: `lm_head`, `model.layers.0`), wildcards by fnmatch over the module or
    a parent, `re:` expressions searched in it. NVIDIA's exports list hundreds to tens of thousands
    of exact names; a handful are wildcards."""

    def __init__(self, items: list[tuple[str, str | None]]):
        self.exact: dict[str, str | None] = {}
        self.other: list[tuple[Callable, str | None]] = []  # (a matcher of the module's name, the value)
        for pattern, value in items:
            if pattern.startswith("re:"):  # searched, its own flags and groups its own
                self.other.append((re.compile(pattern[3:]).search, value))
            elif any(ch in pattern for ch in "*?["):
                self.other.append((re.compile(f"{fnmatch.translate(pattern)}|{fnmatch.translate(pattern + '.*')}").match,
                                   value))
            else:
                self.exact.setdefault(pattern, value)

    def find(self, module: str) -> tuple[bool, str | None]:
        """(whether a pattern names `module`, the value of the first that does)."""
        if self.exact:
            parts = module.split(".")
            for i in range(len(parts)):
                for j in range(len(parts), i, -1):
                    run = ".".join(parts[i:j])
                    if run in self.exact:
                        return True, self.exact[run]
        for matches, value in self.other:
            if matches(module):
                return True, value
        return False, None


@dataclass(frozen=True)
class Scheme:
    """A checkpoint's quantization: the dtype its quantized weights take, the module patterns it
    leaves out, or (MIXED_PRECISION, targeted config groups) the dtype of each module pattern."""

    dtype: str | None
    skipped: tuple[str, ...] = ()
    per_module: tuple[tuple[str, str], ...] = ()
    source: str = "quantization_config"
    fp4_scale_bytes: float | None = None  # block-scale bytes a 4-bit weight carries (ModelSpec.fp4_scale_bytes)

    def dtype_of(self, module: str) -> str | None:
        """The dtype the scheme gives one module, None where it leaves the module as it was."""
        if self.leaves_out(module):
            return None
        if self.per_module:
            named, dtype = self._targets.find(module)
            return dtype if named else self._fallback
        return self.dtype

    def leaves_out(self, module: str) -> bool:
        return self._skipped.find(module)[0]

    def names(self, module: str) -> bool:
        """Whether the scheme names `module` at all (left out, or given a dtype of its own)."""
        return self.leaves_out(module) or self._targets.find(module)[0]

    @cached_property
    def _skipped(self) -> Patterns:
        return Patterns([(p, None) for p in self.skipped])

    @cached_property
    def _targets(self) -> Patterns:  # a "*" target is every other linear layer's dtype (`_fallback`)
        return Patterns([(p, dt) for p, dt in self.per_module if p != "*"])

    @cached_property
    def _fallback(self) -> str | None:
        return next((dt for p, dt in self.per_module if p == "*"), None)


@dataclass(frozen=True)
class Problem:
    """Why a scheme cannot be read: said as `model.dtypes` is asked for."""

    reason: str


def scheme_of(quant: Any, config_path: str, at: str = "quantization_config") -> Scheme | Problem | None:
    """The checkpoint's scheme from `quant` (config.json's quantization_config at key `at`, or None),
    else from hf_quant_config.json beside `config_path`; None where neither says anything. A
    scheme of a kind not read is a Problem (the scenario's model.dtypes then says the dtypes); one
    written wrong is a ScenarioError naming its file and key."""
    if quant is None:
        return _hf_quant_file(Path(config_path).with_name("hf_quant_config.json"))
    if not isinstance(quant, dict):
        raise ScenarioError(config_path, at, f"expected a mapping, got {short(quant)}")
    q = Fields(quant, config_path, at + ".")
    method = q.text("quant_method")
    if method in ("fp8", "mxfp4"):  # MXFP4: an E8M0 scale per 32 values
        return Scheme("fp8" if method == "fp8" else "fp4", q.patterns("modules_to_not_convert", "ignored_layers"),
                      fp4_scale_bytes=None if method == "fp8" else 1 / 32)
    if method == "compressed-tensors":
        return _compressed(q)
    if method == "modelopt" or (method is None and "quant_algo" in quant):  # ModelOpt's, written with or without it
        return _modelopt(q, "quantization_config")
    return Problem(f"has quantization_config quant_method {short(method)}, which is not read "
                   "(fp8, mxfp4, compressed-tensors and modelopt are)")


# a group quantified inside a quantified group, as `(\w+\.?)+`: Python's matcher can take exponential time on it
NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")


class Fields:
    """A quantization mapping's reads, each wrong value one ScenarioError at `path`: `prefix`key."""

    def __init__(self, data: dict, path: str, prefix: str):
        self.data, self.path, self.prefix = data, path, prefix

    def error(self, key: str, reason: str) -> ScenarioError:
        return ScenarioError(self.path, self.prefix + key, reason)

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.error(key, f"expected a name, got {short(value)}")
        return value

    def patterns(self, *keys: str) -> tuple[str, ...]:
        """The first of `keys` given, as module patterns (a list of names, wildcards or `re:` expressions)."""
        key = next((k for k in keys if self.data.get(k) is not None), None)
        return () if key is None else pattern_list(self.data[key], self, key)


def pattern_list(value: Any, fields: Fields, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise fields.error(key, f"expected a list of module names or patterns, got {short(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise fields.error(f"{key}.{i}", f"expected a module name or pattern, got {short(v)}")
        if v.startswith("re:"):
            try:
                re.compile(v[3:])
            except re.error as exc:
                raise fields.error(f"{key}.{i}", f"not a regular expression ({exc})") from None
            if NESTED_QUANTIFIER.search(v[3:]):
                raise fields.error(f"{key}.{i}", f"{short(v)} repeats a repeated group, which can take Python's "
                                   "matcher exponential time: write it without the nesting")
    return tuple(value)


def _hf_quant_file(path: Path) -> Scheme | Problem | None:
    if not path.is_file():
        return None
    data = load_json(str(path), str(path), "")
    inner = data.get("quantization", data)
    if not isinstance(inner, dict):
        raise ScenarioError(str(path), "quantization", f"expected a mapping, got {short(inner)}")
    return _modelopt(Fields(inner, str(path), "quantization." if "quantization" in data else ""), "hf_quant_config.json")


def _modelopt(q: Fields, source: str) -> Scheme | Problem:
    algo = q.text("quant_algo")
    skipped = q.patterns("exclude_modules", "ignore")
    if algo == "MIXED_PRECISION":
        layers = q.data.get("quantized_layers")
        if not isinstance(layers, dict) or not layers:
            raise q.error("quantized_layers", f"MIXED_PRECISION needs a map of module -> {{quant_algo: ...}}, got "
                          f"{short(layers)}")
        per = []
        for module, spec in layers.items():
            name = spec.get("quant_algo") if isinstance(spec, dict) else None
            if not isinstance(name, str):
                raise q.error(f"quantized_layers.{module}", f"expected {{quant_algo: NAME}}, got {short(spec)}")
            if name not in ALGOS:
                return Problem(f"has {source} quantized_layers.{module} quant_algo {short(name)}, which is not read "
                               f"({', '.join(ALGOS)} are)")
            per.append((module, ALGOS[name]))
        return Scheme(None, skipped, tuple(per), source)
    if algo not in ALGOS:
        return Problem(f"has {source} quant_algo {short(algo)}, which is not read ({', '.join(ALGOS)} and "
                       "MIXED_PRECISION are)")
    return Scheme(ALGOS[algo], skipped, (), source, 1 / 32 if "MXFP4" in algo else None)


def _compressed(q: Fields) -> Scheme | Problem:
    groups = q.data.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise q.error("config_groups", f"expected a map of weight schemes, got {short(groups)}")
    per, uniform, fp4_scale = [], set(), None
    form = str(q.data.get("format", ""))
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict) or type(weights.get("num_bits")) is not int \
                or not isinstance(weights.get("type"), str):
            raise q.error(f"config_groups.{name}.weights", f"expected {{num_bits: N, type: int | float}}, got "
                          f"{short(weights)}")
        key = (weights["num_bits"], weights["type"])
        if key not in BITS:
            return Problem(f"has compressed-tensors config_groups.{name} weights {short(key)} (num_bits, type), "
                           "which are not read (8-bit float and 4-bit float or int weights are)")
        if BITS[key] == "fp4":  # a scale per group: FP8 for 4-bit floats (NVFP4), BF16 for ints, E8M0 for MXFP4
            size = weights.get("group_size")
            size = size if type(size) is int and size > 0 else 16
            fp4_scale = 1 / 32 if "mxfp4" in form else (1 if key[1] == "float" else 2) / size
        targets = pattern_list(group.get("targets", []), Fields(group, q.path, f"{q.prefix}config_groups.{name}."),
                               "targets")
        if not targets:
            raise q.error(f"config_groups.{name}.targets", "names no module (Linear: every linear layer)")
        if "Linear" in targets:  # every linear layer; other targets beside it name a subset of them
            uniform.add(BITS[key])
        per += [(t, BITS[key]) for t in targets if t != "Linear"]
    skipped = q.patterns("ignore")
    if len(uniform) > 1:
        return Problem(f"has compressed-tensors groups of several dtypes ({', '.join(sorted(uniform))}) over every "
                       "linear layer")
    if uniform and per:  # a group over every linear layer beside named ones: the named ones first
        return Scheme(None, skipped, (*per, ("*", min(uniform))), "quantization_config", fp4_scale)
    return Scheme(uniform.pop(), skipped, fp4_scale_bytes=fp4_scale) if uniform else \
        Scheme(None, skipped, tuple(per), fp4_scale_bytes=fp4_scale)


# ------------------------------------------------------------------------- parts -> modules
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
    naming: a checkpoint names its modules one way, and patterns of that way match only it."""
    att, ffn = mapping["attention_kinds"], mapping["ffn_kinds"]
    layers = [ref for group in mapping["layers"] for ref in [group] * group["count"]]
    out: dict[str, list[list[str]]] = {part: [] for part in PARTS}
    for prefix in LAYER_PREFIXES:
        names: dict[str, list[str]] = {part: [] for part in PARTS}
        for i, ref in enumerate(layers):
            at = prefix.format(i=i)
            names["attention"] += [at + m for m in attention_modules(att[ref["attention"]], family)]
            kind = ffn[ref["ffn"]]
            names["experts" if kind.get("kind") == "moe" else "dense_ffn"] += [at + m for m in ffn_modules(kind, family)]
        mtp = mapping.get("mtp")
        if mtp and "layer" in mtp:
            ref = mtp["layer"]
            mods = attention_modules(att.get(ref["attention"], {}), family) + ffn_modules(ffn.get(ref["ffn"], {}), family)
            for k in range(mtp["num_layers"]):
                names["mtp"] += [prefix.format(i=len(layers) + k) + m for m in mods]
        for part in PARTS:
            out[part].append(names[part])
    if mapping.get("mtp") and "layer" in mapping["mtp"]:  # MTP layers under their own prefix (Qwen3.5's mtp.*)
        ref = mapping["mtp"]["layer"]
        mods = attention_modules(att.get(ref["attention"], {}), family) + ffn_modules(ffn.get(ref["ffn"], {}), family)
        out["mtp"] += [[p.format(k=k) + m for k in range(mapping["mtp"]["num_layers"]) for m in mods]
                       for p in MTP_PREFIXES]
    return out


def part_dtypes(scheme: Scheme, mapping: dict[str, Any], family: str, where: str, at: str,
                base: str | None) -> dict[str, str]:
    """The dtype of each part the scheme reaches (PARTS): per part, the naming under which the
    scheme names the most of its modules, then the majority of those modules' dtypes (the base
    where most are left out). A part split between dtypes is said once, at `at`."""
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
