"""`mtpsim calibrate --from aiconfigurator`: measured GPU kernel tables converted into a profile.

NVIDIA's aiconfigurator-core (Apache-2.0, https://github.com/ai-dynamo/aiconfigurator) ships
kernel timings its collectors measured on real GPUs under TensorRT-LLM, SGLang and vLLM, as
parquet tables under `aiconfigurator_core/systems/data/<system>/<family>/<backend>/<version>/`.
This module writes them as an mtpsim profile (pandas + pyarrow; torch-free):
one gzipped CSV per op family with the columns of `costs/profile.py`, every row built as the
simulator's own `Op` (calibration/grid.py `op_of`), so the flops and bytes are the ones the
cost model prices with.

Which table of the database serves which family (SOURCES) and reading one, aic_sources.py;
where a table is and which of its rows are its own, aic_database.py; how a table becomes rows (units, per-GPU sizes,
dtypes, kernels and routing), aic_rows.py; kernels taken from another engine's table,
aic_kernels.py. meta.yaml says which version each family came from.
"""
from __future__ import annotations

import datetime
import re
from pathlib import Path

import pandas as pd
import yaml

from mtpsim.calibration.aic_database import (
    BACKENDS,
    PACKAGE,
    PINNED,
    SYSTEMS,
    current_version,
    installed_version,
    package_root,
    version_key,
)
from mtpsim.calibration.aic_sources import SOURCES, read_source, system_wide_tables
from mtpsim.calibration.replace import check_out
from mtpsim.catalog import load_hardware
from mtpsim.costs.profile import FAMILIES
from mtpsim.errors import ScenarioError, short
from mtpsim.outputs import staged, writing

ATTRIBUTION = ("Kernel timings measured by NVIDIA on real GPUs and distributed in aiconfigurator-core "
               f"{PINNED} (Apache-2.0), https://github.com/ai-dynamo/aiconfigurator; converted by mtpsim.")




# ----------------------------------------------------------------------------- the profile

def convert(system: str, backend: str, version: str | None, out: Path, root: Path | None = None,
            progress=print, archive: Path | None = None) -> dict:
    """Write the profile folder `out` (new, or an empty folder) and return its meta. `archive`: an
    older aiconfigurator systems folder, read for the SOURCES marked `archived` only."""
    root, data, version = _locate(system, backend, version, root)
    frames: dict[str, list[pd.DataFrame]] = {}
    sources: dict[str, list[dict]] = {}
    for src in SOURCES:
        if src.archived:
            if archive is None:
                progress(f"  {src.family:<10} read from an older database only (--archive): left out")
                continue
            found = read_source(archive, archive / "data" / system, system, backend, src.archived, src, progress,
                                 archived=True)
        else:
            found = read_source(root, data, system, backend, version, src, progress)
        if found is not None:
            frames.setdefault(src.family, []).append(found[0])
            sources.setdefault(src.family, []).append(found[1])
    for family, (rows, records) in system_wide_tables(root, data, system, backend).items():
        if len(rows):
            frames[family], sources[family] = [rows], records
            progress(f"  {family} {', '.join(r['table'] for r in records)}: {len(rows)} rows")
    for need in ("gemm", "attention"):
        if need not in frames:
            raise ScenarioError(str(data), need, f"the database has no {need} table for {backend} at or before {version}")
    out.mkdir(parents=True, exist_ok=True)
    families = _write_families(out, frames, sources)
    meta = profile_meta(system, backend, version, frames["gemm"][0], families)
    with writing(out / "meta.yaml") as file:
        file.write_text(yaml.safe_dump(meta, sort_keys=False, width=100))
    return meta


def _locate(system: str, backend: str, version: str | None, root: Path | None) -> tuple[Path, Path, str]:
    """(the package's systems folder, the system's data folder, the version to read), checked."""
    if system not in SYSTEMS:
        raise ScenarioError("--system", system, f"unknown system (known: {', '.join(SYSTEMS)})")
    if backend not in BACKENDS:
        raise ScenarioError("--backend", backend, f"unknown backend (known: {', '.join(BACKENDS)})")
    root = root or package_root()
    data = root / "data" / system
    if not data.is_dir():
        raise ScenarioError(str(data), "", f"the database has no folder for system {system!r}")
    if version is not None:  # a release the database holds tables of, not a number tables are filled back from
        known = sorted({p.name for family in data.iterdir() if (family / backend).is_dir()
                        for p in (family / backend).iterdir() if p.is_dir()}, key=version_key)
        if version not in known:
            raise ScenarioError("--version", short(version, 40)[1:-1], f"the database has no {backend} tables of that "
                                f"version for {system} (it has: {', '.join(known) or 'none'})")
    return root, data, version or current_version(root, system, backend)






def _write_families(out: Path, frames: dict, sources: dict) -> dict:
    """One gzipped CSV per family in `out`, with the columns costs/profile.py reads; meta.yaml's
    record of each."""
    families = {}
    for family, parts in frames.items():
        df = pd.concat(parts, ignore_index=True)
        f = FAMILIES[family]
        columns = list(dict.fromkeys([*f.keys, *f.dims, *f.axes, "flops", "bytes", "time_s"]))
        with writing(out / f"{family}.csv.gz") as file:
            df[columns].to_csv(file, index=False, float_format="%.6g", compression={"method": "gzip", "mtime": 0})
        families[family] = {"rows": int(len(df)), "sources": sources[family]}
    return families




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
        "launch": {  # op times are kernel times: launch figures from the hardware catalog's entry
            "included_in_op_times": False,
            "launch_s": hw.launch_overhead_s,
            "graph_kernel_s": hw.graph_launch_overhead_s,
            "graph_replay_s": hw.launch_overhead_s,
            "source": f"mtpsim/data/hardware/{sys_.hardware}.yaml launch_overhead_s, graph_launch_overhead_s",
        },
        "attention_kv": "per_request",
        "families": families,
        "not_measured": {
            "verify attention (q > 1 per request)": "extrapolated from the q = 1 rows by the roofline ratio, up to "
                                                     f"64 query tokens a request; {_prefill_rows_read(families)}",
            "frozen-KV query-only attention": "the GQA / MLA decode rows",
            "lm_head": "the GEMM rows",
            "elementwise, argmax, pass framing": "roofline bytes plus the launch figures above",
        },
    }


def _prefill_rows_read(families: dict) -> str:
    """What prices prefill-sized attention in this profile: its prefill_attention rows for the
    attention kinds they hold (a database without a context MLA table gives GQA rows only)."""
    tables = [src["table"] for src in families.get("prefill_attention", {}).get("sources", ())]
    if not tables:
        return "prefill-sized queries too (the database has no context attention table here)"
    if not any("context_mla" in t for t in tables):
        return ("prefill-sized queries read the prefill_attention rows, GQA only (the database has no context "
                "MLA table for this engine, so MLA prompts extrapolate from the decode rows)")
    return "prefill-sized queries read the prefill_attention rows"


def default_name(system: str, backend: str) -> str:
    """h200_sxm + sglang -> h200-sglang: the mtpsim hardware name with the engine measured under."""
    return f"{SYSTEMS[system].hardware}-{backend}" if system in SYSTEMS else re.sub(r"_sxm$", "", system) + f"-{backend}"


def main(args) -> int:
    """The CLI entry: convert into a fresh folder, never over an existing one."""
    out = Path(args.out) if args.out else None
    if out is None:
        raise ScenarioError("--out", "", "give the profile folder to write (e.g. profiles/h200-sglang)")
    problem = check_out(out)  # a new folder, or a profile under MTPSIM_CALIBRATE_REPLACE=1, as the device path
    if problem:
        raise ScenarioError(str(out), "", f"{problem} (nothing was written)")
    if not out.parent.is_dir():
        raise ScenarioError(str(out), "", "its parent folder does not exist")
    if args.system not in SYSTEMS:  # before the banner below prints the name
        raise ScenarioError("--system", short(args.system, 40)[1:-1], f"unknown system (known: {', '.join(SYSTEMS)})")
    archive = Path(args.archive) if getattr(args, "archive", None) else None
    if archive is not None and not (archive / "data").is_dir():
        raise ScenarioError("--archive", str(archive), "has no data folder: give an aiconfigurator systems folder "
                            "(aic-core/src/aiconfigurator_core/systems of a checkout)")
    print(f"mtpsim calibrate --from aiconfigurator: {args.system} / {args.backend} -> {out}")
    with staged(out) as tmp:  # whole or not at all: Ctrl-C, a full disk or a full stdout leaves no half profile
        meta = convert(args.system, args.backend, args.version, tmp, archive=archive)
        size = sum(p.stat().st_size for p in tmp.iterdir())
        print(f"wrote {len(meta['families'])} op families, {size / 1e6:.1f} MB, framework version "
              f"{meta['source']['framework_version']}, package {meta['source']['package_version']}")
    return 0


__all__ = ["convert", "default_name", "SYSTEMS", "BACKENDS", "main"]
