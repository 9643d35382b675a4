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
Which model parts a scheme reaches is quant_parts.py's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from mtpsim.errors import ScenarioError, short
from mtpsim.hfconfig.patterns import Patterns, expression_problem, patterns_of
from mtpsim.hfconfig.view import Config, load_json

BITS = {(8, "float"): "fp8", (4, "float"): "fp4", (4, "int"): "fp4"}  # compressed-tensors (num_bits, type)
ALGOS = {"FP8": "fp8", "FP8_BLOCK": "fp8", "NVFP4": "fp4", "W4A16_NVFP4": "fp4", "MXFP4": "fp4", "W4A8_MXFP4_FP8": "fp4"}


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
        return patterns_of(tuple((p, None) for p in self.skipped))

    @cached_property
    def _targets(self) -> Patterns:  # a "*" target is every other linear layer's dtype (`_fallback`)
        return patterns_of(tuple((p, dt) for p, dt in self.per_module if p != "*"))

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
class Fields(Config):
    """A quantization mapping's reads (a config.json view, view.py's Config), each wrong value one
    ScenarioError at `path`: `prefix`key; beside Config's, its names and module patterns."""

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
            problem = expression_problem(v[3:])
            if problem:
                raise fields.error(f"{key}.{i}", f"{short(v)} {problem}")
    return tuple(value)


def _hf_quant_file(path: Path) -> Scheme | Problem | None:
    if path.is_dir():  # a file of that name is read: a folder in its place is not the export's file
        raise ScenarioError(str(path), "", "a folder, not a file: NVIDIA's ModelOpt exports write hf_quant_config.json "
                            "beside config.json")
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
            problem = expression_problem(module[3:]) if module.startswith("re:") else None
            if problem:  # a key is a module pattern as an exclusion is (Patterns)
                raise q.error(f"quantized_layers.{module}", f"{short(module)} {problem}")
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
            if size is not None and (type(size) is not int or size <= 0):  # absent: NVFP4's 16
                raise q.error(f"config_groups.{name}.weights.group_size", f"expected a positive whole number of "
                              f"weights a scale covers, got {short(size)}")
            size = size or 16
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
