"""Which device a `mtpsim verify` times, and the cost model it is measured against: one device
for every point of a run, the hardware catalog entry of a CUDA device, its committed profile (or
one measured now with --calibrate) and the CPU thread count that profile was timed with, and a
shared CPU's speed now against that profile's (calibration/level.py), by which verify.csv's
`rel_error_at_level` scales the prediction.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from mtpsim.catalog_lookup import hardware_for_device
from mtpsim.costs.profile import PROFILES_DIR
from mtpsim.errors import ScenarioError


def machine_level(device: str, profile: str | None) -> float | None:
    """A shared CPU's speed now against its profile's (calibration/level.py); None on CUDA or
    without a profile."""
    if device != "cpu" or profile is None:
        return None
    from mtpsim.calibration.level import machine_level
    return machine_level(Path(profile))


def at_level(table: pd.DataFrame, levels: list) -> float | None:
    """Add `machine_level` and `rel_error_at_level` (the prediction scaled by the machine's
    level: times x level, TPS / level) to `table`; the level used (geometric mean), or None."""
    if any(v is None for v in levels):
        return None
    level = float(np.exp(np.mean(np.log(levels))))
    scaled = np.where(table.kind == "tps", table.predicted / level, table.predicted * level)
    table["machine_level"] = level
    table["rel_error_at_level"] = np.where(table.measured > 0, scaled / table.measured.where(table.measured > 0, 1) - 1, 0.0)
    return level


def one_device(points: list) -> str:
    """The device every point runs on. One verify times one device, against that device's cost
    model (its profile, its thread count); a sweep whose points pick different devices is refused,
    not run on the first point's device while its rows say otherwise."""
    devices = [pick_device(s.verify.device, s.source) for s in points]
    if len(set(devices)) > 1:
        swept = next((f"sweep.{k}" for k in points[0].point if k in ("verify", "verify.device")), "verify.device")
        raise ScenarioError(points[0].source or "verify", swept, f"the points pick devices {sorted(set(devices))}: one "
                            "verify times one device against its own cost model; run one verify per device")
    return devices[0]


def pick_device(choice: str, where: str = "verify") -> str:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise ScenarioError(where, "verify.device", "cuda, and torch sees no CUDA device on this machine "
                            "(use cpu or auto)")
    return choice


def cost_source(device: str, calibrate: bool, out: Path | None) -> tuple[str, str | None]:
    """(hardware catalog name, profile folder or None): the committed profile of this device,
    or one measured now into `out` with --calibrate; roofline when there is neither."""
    hardware = "cpu"
    if device == "cuda":
        name = torch.cuda.get_device_name()
        hardware = hardware_for_device(name)
        if hardware is None:
            raise ScenarioError("verify", "", f"no hardware catalog entry for the device {name!r}")
    if calibrate:
        from mtpsim.calibration.command import write_profile
        folder = out / "profile"
        if write_profile(device, str(folder), quick=True) != 0:
            raise SystemExit(2)  # write_profile printed its one-line error
        return hardware, str(folder)
    folder = PROFILES_DIR / hardware
    if (folder / "meta.yaml").is_file():
        _match_threads(folder, device)
        return hardware, str(folder)
    if device == "cpu":
        torch.set_num_threads(1)  # see _match_threads
    return hardware, None


def _match_threads(folder: Path, device: str) -> None:
    """Time with the CPU thread count the profile was measured with (1 when it does not say:
    on a shared 2-core machine two spinning OpenMP threads make tiny ops 10x slower and noisy)."""
    meta = yaml.safe_load((folder / "meta.yaml").read_text()) or {}
    threads = meta.get("threads")
    if device == "cpu":
        torch.set_num_threads(threads if isinstance(threads, int) and threads > 0 else 1)
