"""`mtpsim calibrate --from aiconfigurator`: measured GPU kernel tables converted into a profile.

NVIDIA's aiconfigurator-core (Apache-2.0, https://github.com/ai-dynamo/aiconfigurator) ships
kernel timings its collectors measured on real GPUs under TensorRT-LLM, SGLang and vLLM, as
parquet tables under `aiconfigurator_core/systems/data/<system>/<family>/<backend>/<version>/`.
This module reads them (pandas + pyarrow; torch-free) and writes them as an mtpsim profile:
one gzipped CSV per op family with the columns of `costs/profile.py`, every row built as the
simulator's own `Op` (calibration/grid.py `op_of`), so the flops and bytes are the ones the
cost model prices with.

Conventions, applied here and nowhere else:
- Units: `latency` is milliseconds in every table except the all-to-all ones, which are
  microseconds (`*_us` columns, and `latency` in `moe_a2a`). time_s is seconds.
- Sizes are per GPU. GEMM m/n/k are the shapes one GPU runs; attention `num_heads` and
  `num_key_value_heads` are the heads on one GPU (MLA rows name the model's tp beside them);
  MoE rows name the model's expert width and count with `moe_tp_size` / `moe_ep_size`, which
  become the per-GPU `inter` = inter_size / moe_tp and `num_experts` = num_experts / moe_ep.
- Attention rows are decode rows: one query token per request (`isl` 1) after `step` cached
  tokens, so the visible KV is step + 1 (capped by `window_size` when it is set).
- A comm `message_size` counts elements of `allreduce_dtype` (bf16: 2 bytes each).
- Dtypes: bfloat16 -> bf16; block-scaled fp8 (`fp8_block`, what DeepSeek-V3 and Qwen3 FP8
  checkpoints use) -> fp8, per-tensor fp8 only where no block rows exist; nvfp4 -> fp4, else
  the 4-bit MoE kernels the database has (mxfp4 weights with 16-bit activations, int4 weights).
  A candidate whose decode-sized rows are implausibly slow against bf16 is passed over for the
  next one, and meta.yaml says so (`choose_dtypes`).
- Kernel sources: where a table holds several kernels for one shape (triton vs fa3, marlin vs
  cutlass) the fastest is kept, as an engine's dispatch picks it.
- MoE: `balanced` routing only (uniform routing; `cost.moe_skew` models skew); its `touched`
  column is the simulator's own expected count of distinct experts for that many tokens.
- Foreign rows: a folder may hold rows collected under another framework, version or device.
  Only rows whose framework, version and device match the folder and system are kept.
- Versions: the backend's `current` version in the package's query_versions.yaml unless one is
  given; a family that version lacks is filled from the newest older version that has it
  (never a newer one), and meta.yaml says which version each family came from.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mtpsim.catalog import FFNSpec, load_hardware
from mtpsim.costs import ops as O
from mtpsim.costs.profile import FAMILIES
from mtpsim.errors import ScenarioError

PACKAGE = "aiconfigurator-core"
PINNED = "0.12.0"
ATTRIBUTION = ("Kernel timings measured by NVIDIA on real GPUs and distributed in aiconfigurator-core "
               f"{PINNED} (Apache-2.0), https://github.com/ai-dynamo/aiconfigurator; converted by mtpsim.")


@dataclass(frozen=True)
class System:
    """An aiconfigurator system: the device name its rows carry and the mtpsim hardware entry."""

    device: str
    hardware: str


SYSTEMS = {
    "h100_sxm": System("NVIDIA H100 80GB HBM3", "h100-sxm"),
    "h200_sxm": System("NVIDIA H200", "h200"),
    "b200_sxm": System("NVIDIA B200", "b200"),
    "a100_sxm": System("NVIDIA A100-SXM4-80GB", "a100-80g"),
}
BACKENDS = ("sglang", "trtllm", "vllm")

# mtpsim dtype -> the database's dtypes for it, best first
GEMM_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"), "fp4": ("nvfp4",)}
MOE_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"), "fp4": ("nvfp4", "w4a16_mxfp4", "int4_wo")}
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
ACT = "bf16"  # activations: every table here runs bf16 activations


@dataclass(frozen=True)
class Table:
    """One measured table: which file, and the version it came from."""

    family: str        # the database's folder (gemm, attention, mla, moe, comm)
    file: str
    version: str


def package_root() -> Path:
    """The installed aiconfigurator_core's systems folder, or a clear error saying how to get it."""
    try:
        import aiconfigurator_core
    except ImportError:
        raise ScenarioError("--from aiconfigurator", "", f"needs {PACKAGE}: pip install 'mtpsim[aiconfigurator]'") from None
    return Path(aiconfigurator_core.__file__).resolve().parent / "systems"


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


# ----------------------------------------------------------------------------- versions

def _version_key(v: str):
    """Sortable form of an engine version (1.3.0rc20, 0.5.6.post2, 2.29.2)."""
    from packaging.version import InvalidVersion, Version
    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, v)


def current_version(root: Path, system: str, backend: str) -> str:
    """The backend's `current` queryable version for `system` (query_versions.yaml)."""
    path = root / "query_versions.yaml"
    try:
        table = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(str(path), "", f"cannot read: {exc}") from None
    slot = (table.get("overrides") or {}).get(system, {}).get(backend) or (table.get("defaults") or {}).get(backend)
    if not slot or not slot.get("current"):
        raise ScenarioError(str(path), f"defaults.{backend}.current", "no current version")
    return str(slot["current"])


def find_table(data: Path, family: str, backend: str, file: str, version: str) -> Table | None:
    """`file` from `version`, else from the newest older version that has it (backward fill)."""
    folder = data / family / backend
    if not folder.is_dir():
        return None
    have = [p.name for p in folder.iterdir() if (p / file).is_file()]
    older = [v for v in have if _version_key(v) <= _version_key(version)]
    if not older:
        return None
    return Table(family, file, max(older, key=_version_key))


# ----------------------------------------------------------------------------- reading

def read_table(data: Path, backend: str, t: Table, device: str, framework: str | None = None) -> tuple[pd.DataFrame, int]:
    """A table's rows from its framework, version and device only; (rows, foreign rows dropped)."""
    path = data / t.family / backend / t.version / t.file
    df = pd.read_parquet(path)
    keep = df["device"] == device
    if "framework" in df.columns and framework is not None:
        keep &= df["framework"].str.lower() == framework.lower()
    if "version" in df.columns:
        keep &= df["version"].astype(str) == t.version
    return df[keep].reset_index(drop=True), int((~keep).sum())


@dataclass(frozen=True)
class DtypeRule:
    """How a table names its dtypes and shapes: the dtype column, mtpsim dtype -> the database's
    dtypes for it (best first), the shape columns, and the token column (decode-sized <= 64)."""

    column: str
    mapping: dict
    shape: tuple[str, ...]
    tokens: str


GEMM_RULE = DtypeRule("gemm_dtype", GEMM_DTYPES, ("m", "n", "k"), "m")
MOE_RULE = DtypeRule("moe_dtype", MOE_DTYPES, ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                                                "moe_tp_size", "moe_ep_size"), "num_tokens")
IMPLAUSIBLE = 2.0  # a low-precision kernel at decode sizes this many times slower than bf16 (median)


def choose_dtypes(df: pd.DataFrame, rule: DtypeRule) -> tuple[dict, dict]:
    """(mtpsim dtype -> the database dtype used, database dtype -> why it was passed over).

    Decode-sized GEMMs and expert kernels stream their weights, so a kernel reading 8-bit or
    4-bit weights is never much slower than the bf16 one at the same shape; a table whose
    decode-sized rows run at a median over IMPLAUSIBLE x the bf16 time was collected through
    another path than the one engines serve with (vLLM's fp8_block GEMM rows: 7-30x) and the
    next candidate is used instead."""
    present = set(df[rule.column].unique())
    small = df[df[rule.tokens] <= 64]
    best = small.groupby([rule.column, *rule.shape]).latency.min()
    bf16 = best.xs("bfloat16", level=0) if "bfloat16" in present else None
    chosen, rejected = {}, {}
    for ours, theirs in rule.mapping.items():
        for src in (d for d in theirs if d in present):
            if bf16 is not None and src != "bfloat16" and src in best.index.get_level_values(0):
                ratio = (best.xs(src, level=0) / bf16).dropna()
                if len(ratio) and ratio.median() > IMPLAUSIBLE:
                    rejected[src] = f"decode-sized rows take {ratio.median():.1f}x the bf16 time (median of {len(ratio)} shapes)"
                    continue
            chosen[ours] = src
            break
    return chosen, rejected


def _pick_dtypes(df: pd.DataFrame, rule: DtypeRule) -> pd.DataFrame:
    """Rows of the chosen database dtype for each mtpsim dtype, relabelled with the mtpsim name."""
    chosen, _ = choose_dtypes(df, rule)
    parts = [df[df[rule.column] == src].assign(dtype=ours) for ours, src in chosen.items()]
    return pd.concat(parts, ignore_index=True) if parts else df.iloc[0:0].assign(dtype=[])


def _fastest(df: pd.DataFrame, shape: list[str], time: str = "latency") -> pd.DataFrame:
    """One row per shape: the fastest kernel's."""
    return df.loc[df.groupby(shape, sort=False)[time].idxmin()].reset_index(drop=True)


# ----------------------------------------------------------------------------- families

def gemm_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = _fastest(_pick_dtypes(df, GEMM_RULE), ["dtype", "m", "n", "k"])
    ops = [O.gemm("gemm", m, k, n, dt, act=ACT) for dt, m, k, n in zip(df.dtype, df.m, df.k, df.n)]
    return _rows(df[["dtype", "m", "k", "n"]], ops, df.latency * 1e-3)


def attention_rows(df: pd.DataFrame) -> pd.DataFrame:
    """GQA (window 0) and sliding-window rows; the visible KV of a windowed row is capped by it."""
    if "window_size" not in df.columns:  # older tables measured global attention only
        df = df.assign(window_size=0)
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.isl == 1)].assign(kv_dtype=lambda d: d.kv_cache_dtype.map(KV_DTYPES))
    df = df.assign(kind=np.where(df.window_size > 0, "swa", "gqa"),
                   kv=np.where(df.window_size > 0, np.minimum(df.step + 1, df.window_size), df.step + 1))
    shape = ["kind", "num_key_value_heads", "head_dim", "kv_dtype", "batch_size", "num_heads", "kv"]
    df = _fastest(df[df.num_heads % df.num_key_value_heads == 0], shape)
    points = [dict(kind=k, kv_heads=kvh, head_dim=hd, v_head_dim=hd, kv_dtype=kd, batch=b, q=1, kv=kv, heads=h)
              for k, kvh, hd, kd, b, h, kv in zip(*(df[c] for c in shape))]
    return _point_rows(points, df.latency * 1e-3)


def mla_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepSeek-geometry MLA decode (kv_lora 512 + rope 64, absorbed): heads per GPU."""
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.isl == 1)].assign(kv_dtype=lambda d: d.kv_cache_dtype.map(KV_DTYPES))
    df = _fastest(df.assign(kv=df.step + 1), ["kv_dtype", "batch_size", "num_heads", "kv"])
    points = [dict(kind="mla", kv_heads=1, head_dim=576, v_head_dim=512, kv_dtype=kd, batch=b, q=1, kv=kv, heads=h)
              for kd, b, h, kv in zip(df.kv_dtype, df.batch_size, df.num_heads, df.kv)]
    return _point_rows(points, df.latency * 1e-3)


def moe_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = _pick_dtypes(_balanced(df), MOE_RULE)
    df = df[(df.inter_size % df.moe_tp_size == 0) & (df.num_experts % df.moe_ep_size == 0)]
    shape = ["dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
    df = _fastest(df, shape)
    ops = []
    for dt, t, d, inter, k, e, mtp, mep in zip(*(df[c] for c in shape)):
        ffn = FFNSpec(kind="moe", num_experts=int(e), top_k=int(k), expert_intermediate_size=int(inter))
        ops.append(O.moe_experts(ffn, int(d), int(t), dt, O.Parallel(tp=int(mtp * mep), ep=int(mep)), act=ACT))
    cols = pd.DataFrame([{a: op.shape[a] for a in ("dtype", "inter", "num_experts", "tokens", "touched", "top_k", "d")}
                         for op in ops])
    return _rows(cols, ops, df.latency * 1e-3).groupby(list(cols.columns), as_index=False).median()


def _balanced(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.distribution == "balanced"]


def allreduce_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Custom all-reduce under CUDA-graph capture where the table times both (decode runs in graphs)."""
    if "backend" in df.columns and df.backend.str.endswith("graph").any():
        df = df[df.backend.str.endswith("graph")]
    width = df.allreduce_dtype.map({"bfloat16": 2, "float16": 2, "half": 2, "float32": 4})
    df = df.assign(ranks=df.num_gpus, bytes=df.message_size * width).dropna(subset=["bytes"])
    df = _fastest(df, ["ranks", "bytes"])
    return pd.DataFrame({"ranks": df.ranks, "bytes": df.bytes, "flops": 0.0, "time_s": df.latency * 1e-3})


def alltoall_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepEP low-latency dispatch + combine (the decode kernels), microseconds, by tokens per rank.
    SGLang's table has both phases per row; vLLM's and TRT-LLM's `moe_a2a` one row per phase."""
    if "dispatch_avg_t_us" in df.columns:
        df = df.assign(ranks=8 * df.node_num, d=df.hidden_size, top_k=df.num_topk, tokens=df.num_token,
                       t_us=df.dispatch_avg_t_us + df.combine_avg_t_us)
    else:
        df = df[df.comm_backend.str.endswith("deepep_ll")]
        if "comm_dtype" in df.columns and (df.comm_dtype == "bfloat16").any():
            df = df[df.comm_dtype == "bfloat16"]
        phases = df.groupby(["ep_size", "hidden_size", "topk", "num_experts", "num_tokens", "phase"], as_index=False).latency.min()
        wide = phases.pivot_table(index=["ep_size", "hidden_size", "topk", "num_experts", "num_tokens"],
                                  columns="phase", values="latency").dropna().reset_index()
        df = wide.assign(ranks=wide.ep_size, d=wide.hidden_size, top_k=wide.topk, tokens=wide.num_tokens,
                         t_us=wide["dispatch"] + wide["combine"])
    out = df.groupby(["ranks", "d", "top_k", "tokens"], as_index=False).t_us.median()
    size = 2 * out.tokens * out.top_k * out.d * 2.0  # bf16, each routed copy once each way
    return pd.DataFrame({"ranks": out.ranks, "d": out.d, "top_k": out.top_k, "tokens": out.tokens,
                         "flops": 0.0, "bytes": size, "time_s": out.t_us * 1e-6})


def _rows(cols: pd.DataFrame, ops, seconds: pd.Series) -> pd.DataFrame:
    return cols.reset_index(drop=True).assign(flops=[op.flops for op in ops], bytes=[op.bytes for op in ops],
                                              time_s=seconds.to_numpy())


def _point_rows(points: list[dict], seconds: pd.Series) -> pd.DataFrame:
    from mtpsim.calibration.grid import op_of
    ops = [op_of("attention", p, ACT) for p in points]
    df = pd.DataFrame(points).assign(flops=[op.flops for op in ops], bytes=[op.bytes for op in ops],
                                     time_s=seconds.to_numpy())
    # windowed rows whose visible KV is capped repeat a shape: their median
    return df.groupby([c for c in df.columns if c not in ("flops", "bytes", "time_s")], as_index=False).median()


@dataclass(frozen=True)
class Source:
    """Where an mtpsim family's rows come from: a database folder, its file names (the first
    found wins), the row builder, and the dtype rule the builder relabels by (if any)."""

    family: str
    folder: str
    files: tuple[str, ...]
    build: object
    dtypes: DtypeRule | None = None


SOURCES = [
    Source("gemm", "gemm", ("gemm_perf.parquet",), gemm_rows, GEMM_RULE),
    Source("attention", "attention", ("generation_attention_perf.parquet",), attention_rows),
    Source("attention", "mla", ("generation_mla_perf.parquet",), mla_rows),
    Source("moe", "moe", ("moe_perf.parquet",), moe_rows, MOE_RULE),
    Source("allreduce", "comm", ("custom_allreduce_perf.parquet",), allreduce_rows),
    Source("alltoall", "comm", ("wideep_deepep_ll_perf.parquet", "moe_a2a_perf.parquet"), alltoall_rows),
]


# ----------------------------------------------------------------------------- the profile

def convert(system: str, backend: str, version: str | None, out: Path, root: Path | None = None,
            progress=print) -> dict:
    """Write the profile folder `out` (which must not exist) and return its meta."""
    if system not in SYSTEMS:
        raise ScenarioError("--system", system, f"unknown system (known: {', '.join(SYSTEMS)})")
    if backend not in BACKENDS:
        raise ScenarioError("--backend", backend, f"unknown backend (known: {', '.join(BACKENDS)})")
    root = root or package_root()
    data = root / "data" / system
    if not data.is_dir():
        raise ScenarioError(str(data), "", f"the database has no folder for system {system!r}")
    version = version or current_version(root, system, backend)
    sys_ = SYSTEMS[system]
    frames: dict[str, list[pd.DataFrame]] = {}
    sources: dict[str, list[dict]] = {}
    for src in SOURCES:
        family, folder = src.family, src.folder
        table = next((t for f in src.files if (t := find_table(data, folder, backend, f, version))), None)
        if table is None:
            progress(f"  {family:<10} {folder}/{backend}: no table at or before {version}")
            continue
        framework = None if folder == "comm" and "deepep" in table.file else backend
        where = str(data / folder / backend / table.version / table.file)
        try:
            raw, foreign = read_table(data, backend, table, sys_.device, framework)
            rows = src.build(raw) if len(raw) else pd.DataFrame()
        except (OSError, KeyError, AttributeError, ValueError, TypeError) as exc:
            # pyarrow's errors derive from these; a table of another release's layout lands here
            raise ScenarioError(where, "", f"unexpected table layout for {PACKAGE} {PINNED}: "
                                f"{type(exc).__name__}: {str(exc)[:200]}") from None
        if rows.empty:
            progress(f"  {family:<10} {folder}/{backend}/{table.version}/{table.file}: no usable rows")
            continue
        frames.setdefault(family, []).append(rows)
        sources.setdefault(family, []).append({
            "table": f"{folder}/{backend}/{table.version}/{table.file}", "framework_version": table.version,
            "rows_read": int(len(raw)), "foreign_rows_dropped": foreign, "rows": int(len(rows)),
            **(_dtype_record(raw, src) if src.dtypes else {})})
        progress(f"  {family:<10} {sources[family][-1]['table']}: {len(rows)} rows ({foreign} foreign dropped)")
    for need in ("gemm", "attention"):
        if need not in frames:
            raise ScenarioError(str(data), need, f"the database has no {need} table for {backend} at or before {version}")
    out.mkdir(parents=True)
    families = {}
    for family, parts in frames.items():
        df = pd.concat(parts, ignore_index=True)
        f = FAMILIES[family]
        columns = list(dict.fromkeys([*f.keys, *f.dims, *f.axes, "flops", "bytes", "time_s"]))
        df[columns].to_csv(out / f"{family}.csv.gz", index=False, float_format="%.6g",
                           compression={"method": "gzip", "mtime": 0})
        families[family] = {"rows": int(len(df)), "sources": sources[family]}
    meta = profile_meta(system, backend, version, frames["gemm"][0], families)
    (out / "meta.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, width=100))
    return meta


def _dtype_record(raw: pd.DataFrame, src: "Source") -> dict:
    """meta.yaml's record of which database dtype each mtpsim dtype came from, and what was passed over."""
    chosen, rejected = choose_dtypes(_balanced(raw) if src.family == "moe" else raw, src.dtypes)
    return {"dtypes": chosen, **({"dtypes_passed_over": rejected} if rejected else {})}


def profile_meta(system: str, backend: str, version: str, gemm: pd.DataFrame, families: dict) -> dict:
    """Device, ceilings read off the measured GEMMs, launch figures from the hardware catalog."""
    sys_ = SYSTEMS[system]
    hw = load_hardware(sys_.hardware)
    bf16 = gemm[gemm.dtype == "bf16"]
    streaming = gemm[gemm.m <= 16]
    return {
        "device": sys_.hardware,
        "device_name": sys_.device,
        "engine": backend,
        "date": datetime.date.today().isoformat(),
        "source": {"from": "aiconfigurator", "package": PACKAGE, "package_version": installed_version(),
                   "system": system, "backend": backend, "framework_version": version,
                   "attribution": ATTRIBUTION},
        "timing": {"statistic": "the database's per-shape latency (its collectors' CUDA-graph or event timing); "
                                "the fastest kernel per shape"},
        "ceilings": {  # the best the measured GEMMs reached: used to scale shapes the tables do not hold
            "matmul_flops_per_s": float((bf16.flops / bf16.time_s).max() if len(bf16) else (gemm.flops / gemm.time_s).max()),
            "copy_bytes_per_s": float((streaming.bytes / streaming.time_s).max()),
        },
        "overhead": {  # op times are kernel times: launch figures from the hardware catalog's entry
            "included_in_op_times": False,
            "launch_s": hw.launch_overhead_s,
            "graph_kernel_s": hw.graph_launch_overhead_s,
            "graph_replay_s": hw.launch_overhead_s,
            "source": f"mtpsim/data/hardware/{sys_.hardware}.yaml launch_overhead_s, graph_launch_overhead_s",
        },
        "attention_kv": "per_request",
        "families": families,
        "not_measured": {
            "verify attention (q > 1 per request)": "extrapolated from the q = 1 rows by the roofline ratio",
            "frozen-KV query-only attention": "the GQA / MLA decode rows",
            "lm_head": "the GEMM rows",
            "elementwise, argmax, pass framing": "roofline bytes plus the launch figures above",
        },
    }


def default_name(system: str, backend: str) -> str:
    """h200_sxm + sglang -> h200-sglang: the mtpsim hardware name with the engine measured under."""
    return f"{SYSTEMS[system].hardware}-{backend}" if system in SYSTEMS else re.sub(r"_sxm$", "", system) + f"-{backend}"


def main(args) -> int:
    """The CLI entry: convert into a fresh folder, never over an existing one."""
    out = Path(args.out) if args.out else None
    if out is None:
        raise ScenarioError("--out", "", "give the profile folder to write (e.g. profiles/h200-sglang)")
    if out.exists():
        raise ScenarioError(str(out), "", "already exists: give a new folder (nothing was overwritten)")
    if not out.parent.is_dir():
        raise ScenarioError(str(out), "", "its parent folder does not exist")
    print(f"mtpsim calibrate --from aiconfigurator: {args.system} / {args.backend} -> {out}")
    meta = convert(args.system, args.backend, args.version, out)
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {len(meta['families'])} op families, {size / 1e6:.1f} MB, framework version "
          f"{meta['source']['framework_version']}, package {meta['source']['package_version']}")
    return 0


__all__ = ["convert", "default_name", "SYSTEMS", "BACKENDS", "main"]
