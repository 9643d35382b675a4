"""DeepEP dispatch + combine across nodes, from aiconfigurator-core's SGLang DeepEP unit timings.

aiconfigurator-core 0.12.0 holds DeepEP timed over 1, 2, 4 and 8 nodes of 8 GPUs (InfiniBand
between them) only in its oldest SGLang folder, `systems/data/<system>/comm/sglang/0.5.6.post2/`
(`wideep_deepep_ll_perf.parquet`, `wideep_deepep_normal_perf.parquet`); the current folder's
tables (0.5.12) time one node. Those rows name version `0.5.0` and, on h100_sxm, the device
`NVIDIA H100`: they are read here by the folder and the system's GPU family name, which is why
they do not go through aic_sources.py's version and device filter. One row per mode, ranks
(8 x nodes), width, top-k and tokens per rank:

- `ll` (low latency, decode): dispatch_avg_t_us + combine_avg_t_us, the multi-node rows only
  (one node's come from the current folder, the `alltoall` family); 256- and 288-expert rows of
  one shape are one row, their median, as `aic_rows.alltoall_rows` does;
- `normal` (prefill): for each phase the fastest SM count timed (`*_transmit_us + *_notify_us`),
  as an engine's DeepEP config picks it; every node count.

Microseconds in, seconds out; bytes as `ops.dispatch_combine` counts them (each routed copy
once each way, bf16). Torch-free.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

FOLDER = "comm/sglang/0.5.6.post2"
FILES = {"ll": "wideep_deepep_ll_perf.parquet", "normal": "wideep_deepep_normal_perf.parquet"}
COLUMNS = ["mode", "ranks", "d", "top_k", "tokens", "flops", "bytes", "time_s"]


def gpu_names(device: str) -> set[str]:
    """The device names a system's rows may carry: its own, and its family's short name
    (`NVIDIA H100 80GB HBM3` -> also `NVIDIA H100`)."""
    return {device, " ".join(device.split()[:2])}


def deepep_rows(data: Path, device: str) -> tuple[pd.DataFrame, list[dict]]:
    """(`alltoall_wide_ep` rows, one meta.yaml source record per table read) for the system
    folder `data`; empty when the folder has neither table."""
    frames, records = [], []
    for mode, file in FILES.items():
        path = data / FOLDER / file
        if not path.is_file():
            continue
        raw = pd.read_parquet(path)
        mine = raw[raw.device.isin(gpu_names(device))]
        rows = _ll(mine) if mode == "ll" else _normal(mine)
        if rows.empty:
            continue
        frames.append(rows)
        records.append({"table": f"{FOLDER}/{file}", "framework_version": "0.5.6.post2 (rows say "
                        f"{', '.join(sorted(map(str, mine.version.unique())))})", "rows_read": int(len(raw)),
                        "foreign_rows_dropped": int(len(raw) - len(mine)), "rows": int(len(rows))})
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)), records


def _ll(df: pd.DataFrame) -> pd.DataFrame:
    df = df[df.node_num > 1].assign(t_us=df.dispatch_avg_t_us + df.combine_avg_t_us)
    return _finish(df, "ll")


def _normal(df: pd.DataFrame) -> pd.DataFrame:
    shape = ["node_num", "hidden_size", "num_topk", "num_token"]
    dispatch = (df.dispatch_transmit_us + df.dispatch_notify_us).groupby([df[c] for c in shape]).min()
    combine = (df.combine_transmit_us + df.combine_notify_us).groupby([df[c] for c in shape]).min()
    return _finish((dispatch + combine).rename("t_us").reset_index(), "normal")


def _finish(df: pd.DataFrame, mode: str) -> pd.DataFrame:
    out = df.assign(ranks=8 * df.node_num, d=df.hidden_size, top_k=df.num_topk, tokens=df.num_token)
    out = out.groupby(["ranks", "d", "top_k", "tokens"], as_index=False).t_us.median()
    size = 2 * out.tokens * out.top_k * out.d * 2.0  # bf16, each routed copy once each way
    return out.assign(mode=mode, flops=0.0, bytes=size, time_s=out.t_us * 1e-6)[COLUMNS]
