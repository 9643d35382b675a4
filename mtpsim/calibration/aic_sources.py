"""Which table of aiconfigurator's database serves each profile family (SOURCES), and one
source read into a family's rows with meta.yaml's record of it (`read_source`): the table found
at the version asked for or the newest older one, its own rows (aic_database.py), the kernels
the engine really runs taken from another engine's table (aic_kernels.py), and the rows built by
aic_rows.py. aiconfigurator.py writes the families into a profile folder.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from mtpsim.calibration import aic_kernels
from mtpsim.calibration.aic_database import PACKAGE, PINNED, SYSTEMS, Table, current_version, find_table, read_table
from mtpsim.calibration.aic_deepep import deepep_rows
from mtpsim.calibration.aic_dtypes import GEMM_RULE, MOE_RULE, DtypeRule, choose_dtypes, filled_dtypes
from mtpsim.calibration.aic_nccl import nccl_rows
from mtpsim.calibration.aic_rows import (
    allreduce_rows,
    alltoall_rows,
    attention_rows,
    balanced,
    bmm_rows,
    context_attention_rows,
    context_mla_rows,
    gdn_rows,
    gemm_rows,
    mhc_rows,
    mla_rows,
    moe_rows,
    wide_ep_moe_rows,
)
from mtpsim.errors import ScenarioError


@dataclass(frozen=True)
class Source:
    """Where an mtpsim family's rows come from: a database folder, its file names (the first
    found wins), the row builder, and the dtype rule the builder relabels by (if any). `only`:
    (kernel_source, database dtype) of the one kernel the builder takes rows of (None: every
    row), which meta.yaml names. `archived`: the table is read from an older
    aiconfigurator systems folder (`--archive`), at this version or the newest older one that
    has it, not from the installed package; without --archive the family is left out."""

    family: str
    folder: str
    files: tuple[str, ...]
    build: object
    dtypes: DtypeRule | None = None
    only: tuple[str, str] | None = None
    archived: str | None = None


SOURCES = [
    Source("gemm", "gemm", ("gemm_perf.parquet",), gemm_rows, GEMM_RULE),
    Source("bmm", "mla_bmm", ("mla_bmm_perf.parquet",), bmm_rows),
    Source("attention", "attention", ("generation_attention_perf.parquet",), attention_rows),
    Source("attention", "mla", ("generation_mla_perf.parquet",), mla_rows),
    Source("prefill_attention", "attention", ("context_attention_perf.parquet",), context_attention_rows),
    Source("prefill_attention", "mla", ("context_mla_perf.parquet",), context_mla_rows),
    Source("moe", "moe", ("moe_perf.parquet",), moe_rows, MOE_RULE),
    # SGLang's DeepEP expert compute, decode (low-latency) and prefill (normal) kernels
    Source("moe_wide_ep", "moe", ("wideep_generation_moe_perf.parquet",), partial(wide_ep_moe_rows, mode="ll"), MOE_RULE),
    Source("moe_wide_ep", "moe", ("wideep_context_moe_perf.parquet",), partial(wide_ep_moe_rows, mode="normal"), MOE_RULE),
    Source("allreduce", "comm", ("custom_allreduce_perf.parquet",), allreduce_rows),
    Source("alltoall", "comm", ("wideep_deepep_ll_perf.parquet", "moe_a2a_perf.parquet"), alltoall_rows),
    # Gated DeltaNet's decode and prefill kernels (every engine's own table)
    Source("linear_state", "linear_attention", ("gdn_perf.parquet",), gdn_rows),
    # DeepSeek-V4's mHC pre / post kernels, per site (every engine's own table)
    Source("hyper_connection", "mhc", ("mhc_module_perf.parquet",), mhc_rows),
    # SGLang's Triton fused-MoE runner on block-FP8 experts (what SGLang runs for them on sm100
    # before v0.5.5: engine rule sm100_triton_fp8_moe, mtpsim/data/engines/sglang.yaml), from
    # SGLang 0.5.10's table: the newest that times that kernel at DeepSeek-V3/R1's shape (hidden
    # 7168, inter 2048, 256 experts, top 8). 0.5.14's table (the installed package's, which `moe`
    # reads) times fused_moe_triton at fp8_block only at other shapes (hidden 3072/4096/6144, and
    # 7168 with 384 experts top 6), and aiconfigurator-core 0.12.0 no longer ships the 0.5.10 and
    # 0.5.9 moe_perf tables: they are read from the repository's tree before it dropped them
    # (ai-dynamo/aiconfigurator 095f58a5, aic-core/src/aiconfigurator_core/systems, given as --archive)
    Source("moe_triton", "moe", ("moe_perf.parquet",), moe_rows, MOE_RULE, only=("sglang_fused_moe_triton", "fp8_block"),
           archived="0.5.10"),
]


def read_source(root: Path, data: Path, system: str, backend: str, version: str, src: Source,
                 progress, archived: bool = False) -> tuple[pd.DataFrame, dict] | None:
    """One source's rows and meta.yaml record, or None (said) when its table is missing or empty.
    `archived`: the table is from an older database (--archive), and its record says so and gives
    the file's sha256, by which it can be found again in aiconfigurator's history."""
    family, folder = src.family, src.folder
    table = next((t for f in src.files if (t := find_table(data, folder, backend, f, version))), None)
    if table is None:
        progress(f"  {family:<10} {folder}/{backend}: no table at or before {version}")
        return None
    name = f"{folder}/{backend}/{table.version}/{table.file}"
    framework = None if folder == "comm" and "deepep" in table.file else backend
    try:
        raw, foreign = read_table(data, backend, table, SYSTEMS[system].device, framework)
        read = len(raw)
        raw, borrowed = _borrow(root, data, system, backend, table, raw)
        if src.only is not None:
            raw = raw[(raw.kernel_source == src.only[0]) & (raw.moe_dtype == src.only[1])]
        rows = src.build(raw) if len(raw) else pd.DataFrame()
    except (OSError, KeyError, AttributeError, ValueError, TypeError) as exc:
        # pyarrow's errors derive from these; a table of another release's layout lands here
        raise ScenarioError(str(data / name), "", f"unexpected table layout for {PACKAGE} {PINNED}: "
                            f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if rows.empty:
        progress(f"  {family:<10} {name}: no usable rows")
        return None
    progress(f"  {family:<10} {name}: {len(rows)} rows ({foreign} foreign dropped)")
    old = {"database": "an older aiconfigurator systems folder (--archive), not the installed package",
           "sha256": hashlib.sha256((data / table.family / backend / table.version / table.file).read_bytes()).hexdigest(),
           "rows_kept": int(len(raw))} if archived else {}
    return rows, {"table": name, "framework_version": table.version, **old,
                  **({"kernel_source": src.only[0]} if src.only else {}), "rows_read": int(read),
                  "foreign_rows_dropped": foreign, "rows": int(len(rows)),
                  **(_dtype_record(raw, src) if src.dtypes else {}), **({"borrowed": borrowed} if borrowed else {})}


def system_wide_tables(root: Path, data: Path, system: str, backend: str) -> dict[str, tuple[pd.DataFrame, list[dict]]]:
    """The families read from tables outside the engine's folder: NCCL reduce-scatter /
    all-gather for every engine (aic_nccl.py), and DeepEP across nodes (aic_deepep.py) for SGLang
    only: those rows time SGLang's DeepEP (its --moe-a2a-backend deepep, from aiconfigurator's
    SGLang folder), while TensorRT-LLM's wide EP runs all-to-all kernels of its own (its
    moe_a2a rows, the `alltoall` family)."""
    device = SYSTEMS[system].device
    deepep = {"alltoall_wide_ep": deepep_rows(data, device)} if backend == "sglang" else {}
    return {**deepep, "collective": nccl_rows(root, system, device)}


def _borrow(root: Path, data: Path, system: str, backend: str, table: Table,
            raw: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """`raw` with the kernels the engine really runs taken from another engine's table on the same
    GPU where its own table times others (aic_kernels.py), and meta.yaml's record of each."""
    notes = []
    for rule in aic_kernels.borrows_for(backend, system, table.family, table.file):
        if not (data / table.family / rule.from_backend).is_dir():  # a database without that engine's tables
            continue
        other = find_table(data, table.family, rule.from_backend, table.file, current_version(root, system, rule.from_backend))
        if other is None:
            continue
        theirs, _ = read_table(data, rule.from_backend, other, SYSTEMS[system].device, rule.from_backend)
        raw = aic_kernels.apply(raw, theirs, rule)
        taken = int(((raw.kernel_source == rule.kernel) & (raw.moe_dtype == rule.dtype)).sum())
        notes.append(aic_kernels.record(rule, Path(table.family) / rule.from_backend / other.version / other.file, taken))
    return raw, notes


def _dtype_record(raw: pd.DataFrame, src: Source) -> dict:
    """meta.yaml's record of which database dtype each mtpsim dtype came from, and what was passed over."""
    # moe_rows keeps the balanced routings: the dtypes are chosen among those rows
    rows = balanced(raw) if src.build is moe_rows else raw
    chosen, rejected = choose_dtypes(rows, src.dtypes)
    filled = {ours: {other: [dict(zip(src.dtypes.fill, (int(v) for v in shape))) for shape in shapes]
                     for other, shapes in fills.items()} for ours, fills in filled_dtypes(rows, src.dtypes).items()}
    return {"dtypes": chosen, **({"dtypes_passed_over": rejected} if rejected else {}),
            **({"dtypes_filled_at_shapes": filled} if filled else {})}
