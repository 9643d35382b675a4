"""NCCL reduce-scatter and all-gather within one node, from aiconfigurator-core's NCCL tables.

SGLang runs the attention group's collectives of a DP-attention layer whose MLP is scattered
(DeepEP) through NCCL, not its custom all-reduce (costs/comms.py `attn_tp_scatter_gather`).
aiconfigurator-core 0.12.0 times NCCL per system in `systems/data/<system>/comm/nccl/<version>/
nccl_perf.parquet` (op_name all_gather | reduce_scatter | alltoall | all_reduce, num_gpus 2/4/8,
nccl_dtype half | int8, message_size in elements, latency in ms); the NCCL version a system uses
is its `<system>.yaml` `misc.nccl_version` (h200_sxm: 2.26.2), as aiconfigurator's own database
loader picks it. Read here: half-precision reduce_scatter and all_gather rows, bytes = elements x
2 (the full buffer: the all-gather's output, the reduce-scatter's input; on h200_sxm an 8-GPU
all-gather of 2^28 halves takes 1.39 ms, 338 GB/s bus bandwidth, which only a count of elements
makes plausible), the fastest of repeated rows. Torch-free.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

OPS = ("reduce_scatter", "all_gather")
COLUMNS = ["op", "ranks", "flops", "bytes", "time_s"]


def nccl_version(root: Path, system: str) -> str | None:
    """The NCCL version aiconfigurator uses for `system` (its yaml's misc.nccl_version)."""
    path = root / f"{system}.yaml"
    if not path.is_file():
        return None
    spec = yaml.safe_load(path.read_text()) or {}
    version = (spec.get("misc") or {}).get("nccl_version")
    return str(version) if version else None


def nccl_rows(root: Path, system: str, device: str) -> tuple[pd.DataFrame, list[dict]]:
    """(`collective` rows, meta.yaml source records) for `system`; empty without a table."""
    version = nccl_version(root, system)
    path = root / "data" / system / "comm" / "nccl" / str(version) / "nccl_perf.parquet"
    if version is None or not path.is_file():
        return pd.DataFrame(columns=COLUMNS), []
    raw = pd.read_parquet(path)
    mine = raw[(raw.device == device) & raw.op_name.isin(OPS) & (raw.nccl_dtype == "half")]
    rows = (mine.assign(op=mine.op_name, ranks=mine.num_gpus, bytes=mine.message_size * 2.0)
            .groupby(["op", "ranks", "bytes"], as_index=False).latency.min())
    rows = rows.assign(flops=0.0, time_s=rows.latency * 1e-3)[COLUMNS]
    record = {"table": f"comm/nccl/{version}/nccl_perf.parquet", "framework_version": f"nccl {version}",
              "rows_read": int(len(raw)), "foreign_rows_dropped": int(len(raw) - len(mine)), "rows": int(len(rows))}
    return rows, [record]
