"""How repeatable are this machine's op timings? Re-times the committed profile's held-out shapes
and prints |retimed / committed - 1| per family: the noise floor under which no calibrated
model's held-out error can fall (compare with benchmarks/calibration_fit.py).

  .venv/bin/python benchmarks/calibration_noise.py [--profile calibrate/profiles/cpu] [--repeats 2]

Prints numbers; asserts nothing. CPU profiles only (same thread count as the profile).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch
import yaml

from mtpsim.calibration import kernels as K
from mtpsim.calibration import timing as T
from mtpsim.calibration.command import POOL_MIB, ROTATE_MIB
from mtpsim.verify.kernels import keep_freed_memory

MEASURED = ("flops", "bytes", "time_s")


def retime(profile: Path, repeats: int) -> pd.DataFrame:
    """One row per held-out shape and repeat: family, committed and retimed seconds."""
    pool = T.Pool("cpu", torch.float32, POOL_MIB["cpu"] << 20, ROTATE_MIB["cpu"] << 20)
    rows = []
    for path in sorted((profile / "holdout").glob("*.csv")):
        family = path.stem
        for _, row in pd.read_csv(path).iterrows():
            shape = {k: _plain(v) for k, v in row.items() if k not in MEASURED and pd.notna(v)}
            sets, fn = K.case(family, shape, pool)
            for r in range(repeats):
                rows.append({"family": family, "repeat": r, "committed_s": row.time_s,
                             "retimed_s": T.median_time_s(sets, fn, "cpu", graphs=False)})
    return pd.DataFrame(rows)


def _plain(v):
    """CSV values back to the ints / floats / strings the kernels expect."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v.item() if hasattr(v, "item") else v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="calibrate/profiles/cpu")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    profile = Path(args.profile)
    meta = yaml.safe_load((profile / "meta.yaml").read_text())
    if meta["device"] != "cpu":
        raise SystemExit(f"{profile}: a {meta['device']} profile; this benchmark re-times CPU profiles only")
    keep_freed_memory()
    torch.set_num_threads(int(meta["threads"]))
    df = retime(profile, args.repeats)
    df["signed"] = df.retimed_s / df.committed_s - 1
    df["vs_committed"] = df.signed.abs()
    pairs = df.pivot_table(index=[df.index // args.repeats], values="retimed_s", aggfunc=["min", "max"])
    print(f"profile {profile} ({meta['date']}), {meta['threads']} thread(s), {len(df)} timings "
          f"of {len(df) // args.repeats} held-out shapes\n")
    print("|retimed / committed - 1| per family (the noise floor for held-out error):")
    table = df.groupby("family").agg(count=("vs_committed", "size"), median=("vs_committed", "median"),
                                     worst=("vs_committed", "max"), bias=("signed", "median"))
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    spread = (pairs[("max", "retimed_s")] / pairs[("min", "retimed_s")] - 1)
    print(f"\nall: median {df.vs_committed.median():.3f}; back-to-back repeats differ by a median "
          f"{spread.median():.3f} (worst {spread.max():.3f})")


if __name__ == "__main__":
    main()
