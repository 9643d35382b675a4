"""How repeatable are this machine's op timings? Re-times the committed profile's held-out shapes
the way `mtpsim calibrate` times them (the same visits, each pass over the shapes in a new
shuffled order) and prints |retimed / committed - 1| per family, and how far the re-timings
differ from each other: the noise floor under which no calibrated model's held-out error can
fall (compare with benchmarks/calibration_fit.py).

  .venv/bin/python benchmarks/calibration_noise.py [--profile mtpsim/data/profiles/cpu] [--repeats 2] [--visits N]

Prints numbers; asserts nothing. CPU profiles only (same thread count as the profile).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
import yaml

from mtpsim.calibration.level import level as level_of
from mtpsim.calibration.level import retime
from mtpsim.torchkit.kernels import keep_freed_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="mtpsim/data/profiles/cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--visits", type=int, help="visits per shape (default: the profile's, from meta.yaml)")
    args = parser.parse_args()
    profile = Path(args.profile)
    meta = yaml.safe_load((profile / "meta.yaml").read_text())
    if meta["device"] != "cpu":
        raise SystemExit(f"{profile}: a {meta['device']} profile; this benchmark re-times CPU profiles only")
    keep_freed_memory()
    torch.set_num_threads(int(meta["threads"]))
    visits = args.visits or int(meta.get("visits", 1))
    df = retime(profile, visits, repeats=args.repeats)
    first = df[df.repeat == 0].set_index("case").retimed_s
    df["vs_committed"] = df.retimed_s / df.committed_s
    df["vs_first"] = df.retimed_s / df["case"].map(first)
    # a repeat's level: how fast the machine ran then, shared by every shape it timed (the
    # geometric median ratio); the grid and held-out shapes of one calibrate run share theirs
    for col in ("vs_committed", "vs_first"):
        level = df.groupby("repeat")[col].transform(level_of)
        df[col + "_level"], df[col + "_shape"] = level, df[col] / level
    err = lambda x: (x - 1).abs().median()  # noqa: E731
    print(f"profile {profile} ({meta['date']}), {meta['threads']} thread(s), {len(df)} timings "
          f"of {df['case'].nunique()} held-out shapes, {visits} visit(s) per shape\n")
    print("re-timed vs committed, median |ratio - 1| per family; `shape`: with each repeat's level divided out,")
    print("the noise floor for held-out error (grid and held-out shapes of one run share a level):")
    table = df.groupby("family").agg(count=("vs_committed", "size"), raw=("vs_committed", err),
                                     shape=("vs_committed_shape", err),
                                     worst=("vs_committed_shape", lambda x: (x - 1).abs().max()))
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"\nall: raw {err(df.vs_committed):.3f}, shape {err(df.vs_committed_shape):.3f}; "
          f"machine level now vs then: {', '.join(f'{v:.3f}' for v in df.groupby('repeat').vs_committed_level.first())}")
    later = df[df.repeat > 0]
    if len(later):
        print(f"repeats vs the first: raw {err(later.vs_first):.3f}, shape {err(later.vs_first_shape):.3f} "
              f"(worst {(later.vs_first_shape - 1).abs().max():.3f}); levels "
              f"{', '.join(f'{v:.3f}' for v in later.groupby('repeat').vs_first_level.first())}")

if __name__ == "__main__":
    main()
