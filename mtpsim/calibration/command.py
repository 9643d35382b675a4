"""`mtpsim calibrate`: time the grid on this machine's device and write a profile folder.

    mtpsim calibrate --device cpu --threads 1 --out profiles/cpu

The folder: `<family>.csv` per op family (shape columns, the op's flops and bytes
as ops.py counts them, `time_s`), `holdout/<family>.csv` (shapes between the grid's values, not
used by the model: the benchmark's test set), `layers.csv` (whole layers) and `meta.yaml`.
An existing non-empty folder is never overwritten, except a profile folder (one holding
meta.yaml) when MTPSIM_CALIBRATE_REPLACE=1 is set: the new profile is written beside it and
swapped in only when complete.
"""
from __future__ import annotations

import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import torch
import yaml
from tqdm import tqdm

from mtpsim.calibration import grid as G
from mtpsim.calibration import kernels as K
from mtpsim.calibration import timing as T
from mtpsim.calibration.host import host_times
from mtpsim.calibration.layers import layer_case
from mtpsim.calibration.replace import check_out
from mtpsim.catalog_lookup import hardware_for_device
from mtpsim.costs.layer import layer_spec
from mtpsim.errors import MAX_WHERE, cut_middle, line, printable
from mtpsim.outputs import staged, writing
from mtpsim.torchkit.kernels import keep_freed_memory, without_cudnn_attention

HOLDOUT_PER_CONFIG = {"gemm": 40, "lm_head": 12, "attention": 14, "prefill_attention": 8, "moe": 30, "elementwise": 6,
                      "pass": 12, "argmax": 12}
POOL_MIB = {"cpu": 768, "cuda": 4096}      # random data inputs are sliced from
ROTATE_MIB = {"cpu": 16, "cuda": 256}      # rotated input sets span at least this much
MEASURED = ("flops", "bytes", "time_s")   # the columns a profile row adds to its shape
# timed eagerly on CUDA: moe reads its expert counts on the host, a pass frame copies its
# positions to the device; neither can be captured in a graph (a failed capture also leaves
# the CUDA generator mid-capture)
EAGER_FAMILIES = ("moe", "pass")
VISITS = {"cpu": {False: 6, True: 3}, "cuda": {False: 1, True: 1}}  # [device][quick]: passes over the shapes
# per point: flops, bytes, attention score cells (batch x heads x kv x (head_dim + v_head_dim)),
# and whole layers' hidden width
LIMITS = {"cpu": dict(flops=4e9, bytes=600e6, cells=2 ** 26, d=1024),
          "cuda": dict(flops=4e12, bytes=8e9, cells=2 ** 33, d=1 << 20)}  # SDPA's math path expands
# K and V to every query head: 2^33 cells is 16 GiB in bf16 (a 64 x 128-head x 16k MLA point asked 144 GiB)
ROTATE = {"cpu": "L2 (2 x 2 MiB): rotated sets span 16 MiB, so data comes from L3 or memory, as in a "
                 "small model's pass", "cuda": "L2 (50 MB): rotated sets span 256 MiB"}


def main(args) -> int:
    return write_profile(args.device, args.out, args.quick, args.threads, getattr(args, "visits", None))


def write_profile(choice: str, out: str | None, quick: bool, threads: int | None = None,
                  visits: int | None = None) -> int:
    """Calibrate device `choice` (auto | cpu | cuda) into the profile folder `out` (default
    profiles/<device>): 0, or 2 after a one-line error. `mtpsim verify --calibrate` calls it too."""
    device = _device(choice)
    if device is None:
        print(line("error", "--device: cuda, and torch sees no CUDA device on this machine (use cpu or auto)"),
              file=sys.stderr)
        return 2
    out = Path(out or f"profiles/{device}")  # the current folder, never the package
    problem = check_out(out)
    if problem:
        print(line("error", f"{cut_middle(str(out), MAX_WHERE)}: {problem}"), file=sys.stderr)
        return 2
    if device == "cpu":
        keep_freed_memory()  # as the verification loop runs (see there)
        if threads:
            torch.set_num_threads(threads)
    else:
        without_cudnn_attention()  # as the verification loop runs (see there)
    started = time.time()
    with staged(out) as tmp:
        (tmp / "holdout").mkdir()
        meta = calibrate(device, quick, tmp, visits)
        meta["wall_s"] = round(time.time() - started, 1)
        with writing(tmp / "meta.yaml") as file:
            file.write_text(yaml.safe_dump(meta, sort_keys=False))
        # within staged: a line that cannot be printed replaces nothing
        print(f"wrote {printable(str(out))} in {meta['wall_s']:.0f} s")
    return 0


def _device(choice: str) -> str | None:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        return None
    return choice


def calibrate(device: str, quick: bool, folder: Path, visits: int | None = None) -> dict:
    """Time ceilings, launch costs, the grid, held-out shapes and whole layers into `folder`,
    in `visits` passes over the shapes (default VISITS)."""
    dtype_name = G.DTYPE[device]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    pool = T.Pool(device, dtype, POOL_MIB[device] << 20, ROTATE_MIB[device] << 20)
    configs = G.grid(device, quick)
    jobs = [(c, p, "grid") for c in configs for p in c.points() if _fits(c.family, p, device, dtype_name)]
    jobs += [(c, p, "holdout") for c in configs
             for p in G.holdout(c, max(2, HOLDOUT_PER_CONFIG[c.family] // (3 if quick else 1)))
             if _fits(c.family, p, device, dtype_name)]
    layers = [r for r in G.layer_grid(device, quick) if layer_spec(r["layer"], r["scale"])[0] <= LIMITS[device]["d"]]
    visits = visits or VISITS[device][quick]
    meta = _header(device, dtype_name, quick, visits)
    meta["ceilings"] = _ceilings(pool, device)
    meta["launch"] = {**T.launch_costs(pool, device), "included_in_op_times": device == "cpu"}
    # every op visited VISITS times, each pass in a new shuffled order: a slow spell of the
    # machine (other work on shared cores) then lands on a share of every shape's repeats, and
    # on grid, held-out and layer shapes alike, instead of biasing some against the others
    order = jobs + [(None, r, "layer") for r in layers]

    def visit(i: int, share: float, first: bool) -> list[float]:
        c, p, part = order[i]
        try:
            sets, fn = layer_case(p, pool) if part == "layer" else K.case(c.family, p, pool)
            return T.samples_s(sets, fn, device, graphs=part != "layer" and c.family not in EAGER_FAMILIES,
                               share=share, first=first)
        except torch.OutOfMemoryError:  # past this device's memory (SDPA's math path expands K / V
            torch.cuda.empty_cache()      # per query head): the shape is left out of the profile
            return []

    with tqdm(total=len(order) * visits, desc=f"calibrate {device} ({visits} visits per shape)",
              unit="shape", smoothing=0.05) as bar:
        samples = T.interleaved(len(order), visit, visits, progress=bar.update)
    rows, layer_rows = {"grid": {}, "holdout": {}}, []
    for (c, p, part), times in zip(order, samples):
        if not times:
            continue
        t = statistics.median(times)
        if part == "layer":
            layer_rows.append({**p, "d": layer_spec(p["layer"], p["scale"])[0], "time_s": t})
        else:
            op = G.op_of(c.family, p, dtype_name)
            rows[part].setdefault(c.family, []).append({**p, "flops": op.flops, "bytes": op.bytes, "time_s": t})
    for part, sub in (("grid", folder), ("holdout", folder / "holdout")):
        for family, fam_rows in rows[part].items():
            _write(pd.DataFrame(fam_rows), sub / f"{family}.csv")
    _write(pd.DataFrame(layer_rows), folder / "layers.csv")
    meta["families"] = {f: len(r) for f, r in rows["grid"].items()}
    meta["attention_kv"] = "batch_max"  # attend_cache reads every request up to the longest
    meta["host_s"] = host_times(device, dtype_name)
    return meta


def _write(df: pd.DataFrame, path: Path) -> None:
    """Rows sorted by their shape columns (they were measured in shuffled order)."""
    shape = [c for c in df.columns if c not in MEASURED]
    with writing(path):
        df.sort_values(shape).to_csv(path, index=False, float_format="%.6g")


def _fits(family: str, p: dict, device: str, dtype: str) -> bool:
    """Skip cells past the device's budget per point and routings that cannot happen
    (touched experts must lie in [top_k, tokens x top_k])."""
    if family == "moe" and not (p["top_k"] <= p["touched"] <= p["tokens"] * p["top_k"]):
        return False
    lim = LIMITS[device]
    kv = p["q"] if family == "prefill_attention" else p.get("kv")
    if family in ("attention", "prefill_attention") and \
            p["batch"] * p["heads"] * kv * (p["head_dim"] + p["v_head_dim"]) > lim["cells"]:
        return False
    op = G.op_of(family, p, dtype)
    return op.flops <= lim["flops"] and op.bytes <= lim["bytes"]


def _ceilings(pool: T.Pool, device: str) -> dict:
    cases = K.ceilings_cases(pool, device)
    out = {}
    for name, (sets, fn, work) in cases.items():
        rate = work / T.median_time_s(sets, fn, device, graphs=False)
        out["copy_bytes_per_s" if name == "copy" else "matmul_flops_per_s"] = float(f"{rate:.4g}")
    return out


def _header(device: str, dtype: str, quick: bool, visits: int) -> dict:
    name = torch.cuda.get_device_name() if device == "cuda" else (platform.processor() or platform.machine())
    if device == "cpu":
        name = _cpu_model() or name
    hardware = "cpu" if device == "cpu" else hardware_for_device(name)
    return {"device": device, "device_name": name, **({"hardware": hardware} if hardware else {}),
            "torch": str(torch.__version__), "dtype": dtype,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "threads": torch.get_num_threads() if device == "cpu" else None, "quick": quick, "visits": visits,
            "timing": {"statistic": f"median of {T.MIN_REPS}..{T.MAX_REPS} calls, spread over {visits} "
                                    f"visits per shape (each pass over the shapes in a new shuffled order), "
                                    f"after 3 warm-up calls on a shape's first visit, 1 on later ones",
                       "clock": "host perf_counter per call (CPU ops are synchronous)" if device == "cpu"
                       else f"CUDA events; ops under {T.GRAPH_BELOW_S * 1e3:g} ms replayed from a CUDA graph",
                       "rotation": ROTATE[device]},
            "launch_note": "CPU: each op time includes PyTorch's per-call dispatch, so the calibrated model "
                             "adds no kernel or pass launch cost. CUDA: op times are in-graph kernel times; eager "
                             "passes add (launch_s - graph_kernel_s) per kernel, graph passes one graph_replay_s."}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None
