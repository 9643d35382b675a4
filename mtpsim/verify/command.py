"""`mtpsim verify SCENARIO [--out DIR] [--calibrate]`.

Per scenario point: shrink the model as `verify:` says, build it in PyTorch, run the design's
real decode loop for B requests (warm-up excluded), then simulate the same shrunken
configuration with the cost model calibrated on this device and the acceptance observed, and
print predicted vs measured per pass kind and TPS. Writes DIR/verify.csv, DIR/verify.png and,
per point, the measured iterations, the accept histogram and the simulated scenario.

On a CPU with a profile it also re-times a sample of the profile's held-out shapes before and
after the runs (calibration/level.py): a shared CPU's speed drifts by 10-20% over minutes, which
moves every measured time against the profile alike. verify.csv then carries `machine_level`
and `rel_error_at_level` (the prediction scaled by that level) beside the plain `rel_error`.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from mtpsim import scenario as sc
from mtpsim.advice import advise, swept_at, swept_verify
from mtpsim.advice_sweep import advise_sweep
from mtpsim.errors import ScenarioError, holding, warn
from mtpsim.model_advice import spec_entry
from mtpsim.outputs import writing
from mtpsim.runfolder import claimed, free_out, mark_complete, write_csv
from mtpsim.sim.progress import progress_bar
from mtpsim.torchkit import loops
from mtpsim.torchkit.kernels import keep_freed_memory, without_cudnn_attention
from mtpsim.torchkit.measure import Setup, measure
from mtpsim.verify.compare import comparison, fits_memory, plot, predict, simulated_mapping
from mtpsim.verify.device import at_level, cost_source, machine_level, one_device
from mtpsim.verify.setup import setup_of
from mtpsim.workload_advice import concurrency_unread


def main(args) -> int:
    with holding():  # the loader's warnings wait for verify's own checks of every point: bad input is one line
        points = sc.load(args.scenario, args.sets, advise_points=False)
        device = one_device(points)
        hardware, profile = cost_source(device, False, None)  # --calibrate's profile is measured later
        for i, s in enumerate(points):  # every point fits this device, before any warning or loop
            _check_memory(s, setup_of(s, device), _point_folder(Path("."), i, s), hardware, profile)
        skip = (swept_verify, concurrency_unread)  # the verify section, and any load's users, this command reads
        for s in points:
            advise(s, skip=skip)
        advise_sweep(points, skip=skip)
        free_out(args.out)  # a busy --out is the one line, not after the scenario's warnings
    with claimed(f"{points[0].name}-verify", args.out) as out:  # new or empty; a failed run gives it back
        return _verify(points, args, out)


def _verify(points: list, args, out: Path) -> int:
    device = one_device(points)
    if device == "cpu":
        keep_freed_memory()  # large temporaries reuse kept memory, as in the calibration
    else:
        without_cudnn_attention()  # as the calibration times it
    hardware, profile = cost_source(device, args.calibrate, out)
    folders = [_point_folder(out, i, s) for i, s in enumerate(points)]
    for s, folder in zip(points, folders) if args.calibrate else ():  # checked again with the profile measured now
        _check_memory(s, setup_of(s, device), folder, hardware, profile)
    _other_deployment(points, device, hardware)
    print(f"verify {points[0].name} on {device} ({hardware}); cost model: "
          f"{'calibrated, ' + profile if profile else 'roofline (no profile for this device yet)'}")
    levels = [machine_level(device, profile)]
    tables = []
    for s, folder in zip(points, folders):
        folder.mkdir(exist_ok=True)
        tables.append(verify_point(s, device, hardware, profile, folder))
    levels.append(machine_level(device, profile))
    _unread_settings(points, device, profile, args.calibrate)
    _report(pd.concat(tables, ignore_index=True), levels, out)
    return 0


def _other_deployment(points: list, device: str, hardware: str) -> None:
    """Said of the deployment of any point (a sweep may vary the hardware or the layout), not
    only the first's: verify runs a shrunken model on this one device."""
    other = next((p for p in points if p.specs.hardware.name != hardware or p.parallel.dp * p.parallel.tp > 1
                  or p.disaggregation is not None), None)
    if other is not None:  # the key that makes it another deployment (a --set of it is blamed as such)
        key = "hardware" if other.specs.hardware.name != hardware else "disaggregation" \
            if other.disaggregation is not None else "parallel.tp" if other.parallel.tp > 1 else "parallel.dp"
        warn(points[0].source or "verify", *swept_at(other, key, f"verify runs a shrunken copy of the model on this {device} "
             f"({hardware}, one device), not the scenario's {other.describe_layout()}: it checks the simulator "
             "against a real loop here, not that deployment's speed"))


def _unread_settings(points: list, device: str, profile: str | None, calibrate: bool) -> None:
    """What of the scenario verify does not read (arrivals, its cost section, seeds, engine
    settings), said once every point passed its own checks: bad input stays one line."""
    first = points[0]
    if first.workload.arrival != "batch":
        trace = " (the trace's first ones, their prompt lengths)" if first.workload.arrival == "trace" else ""
        warn(first.source or "verify", "workload.arrival", f"verify decodes one batch of workload.concurrency requests"
             f"{trace} that all start at t=0: the scenario's {first.workload.arrival} arrivals are not replayed")
    chosen = next((p for p in points if p.cost.model != "auto" or p.cost.profile is not None), None)
    if chosen is not None:  # the prediction is of this device's loop: priced by its own cost source
        key = "cost.profile" if chosen.cost.profile is not None else "cost.model"
        used = f"the profile {profile}" if profile else "the roofline"
        how = "--calibrate" if calibrate else "this device's committed profile, else the roofline"
        asked = f"model {chosen.cost.model}" + (f", profile {chosen.cost.profile}" if chosen.cost.profile else "")
        warn(chosen.source or "verify", key, f"verify prices the loop on this {device} with {used} ({how}), not "
             f"with the scenario's cost section ({asked})")
    if first.seeds > 1:  # run's replicates: verify times one loop per point, at the scenario's seed
        warn(first.source or "verify", "seeds", f"verify runs one loop per point, at seed {first.seed}: the "
             f"{first.seeds} replicates seeds asks for are `mtpsim run`'s")
    adaptive = next((p for p in points if p.speculative.policy is not None), None)
    if adaptive is not None:  # the loop, and so its prediction (compare.simulated_mapping), run fixed steps
        warn(adaptive.source or "verify", "speculative.policy", f"verify's loop drafts speculative.steps "
             f"({adaptive.speculative.steps}) every iteration, and its prediction does too: the steps_by_batch "
             "policy is not read (`mtpsim run` reads it)")
    kept = next((p for p in points if p.acceptance.kept_length is not None), None)
    if kept is not None:  # the loop verifies every draft, and its prediction reads the loop's accept counts
        warn(kept.source or "verify", "acceptance.kept_length", "verify's loop verifies every draft it makes, and "
             "its prediction does too: the kept-length curve is not read (`mtpsim run` reads it)")
    engined = next((p for p in points if p.engine.model_fields_set), None)
    if engined is not None:  # compare.simulated_mapping prices the loop with an engine section of its own
        keys = [f"engine.{k}" for k in sorted(engined.engine.model_fields_set)]
        warn(engined.source or "verify", keys[0], f"verify times its own loop (eager, no host overlap, no serving "
             f"engine) and predicts that: the scenario's {', '.join(keys[:4])}{' ...' * (len(keys) > 4)} "
             f"{'is' if len(keys) == 1 else 'are'} "
             "not read (`mtpsim run` reads it)")


def _report(table: pd.DataFrame, levels: list, out: Path) -> None:
    """verify.csv, its plot, the folder marked complete, and the TPS errors (with this CPU's speed
    against its profile's divided out, where measured)."""
    level = at_level(table, levels)
    write_csv(table, out / "verify.csv")
    with writing(out / "verify.png"):
        plot(table, out / "verify.png")
    mark_complete(out)
    tps = table[table.kind == "tps"]
    errors = tps.rel_error.abs()
    print(f"\n|TPS error|: median {errors.median():.1%}, worst {errors.max():.1%}  ->  {out / 'verify.csv'}")
    if level is not None:
        print(f"this CPU ran at {level:.2f}x the profile's op times (held-out shapes re-timed before and after: "
              f"{levels[0]:.2f}, {levels[1]:.2f}); with that divided out, |TPS error|: median "
              f"{tps.rel_error_at_level.abs().median():.1%}, worst {tps.rel_error_at_level.abs().max():.1%}")


def _point_folder(out: Path, i: int, s) -> Path:
    return out / f"{i:02d}-{s.speculative.design}-b{s.workload.concurrency}"


def verify_point(s, device: str, hardware: str, profile: str | None, folder: Path) -> pd.DataFrame:
    setup = setup_of(s, device)  # its memory was checked with every point's, before any loop (_verify)
    # a long loop on a CPU runs for minutes: a bar on a terminal, a line a minute in a log (sim/progress.py)
    bar = progress_bar(setup.warmup_iterations + setup.iterations, None, desc=f"verify {setup.design}",
                       unit="iteration", leave=False)
    try:
        measured = measure(setup, tick=bar.update)
    finally:
        bar.close()
    write_csv(measured.iterations, folder / "measured_iterations.csv")
    mapping = _mapping(s, setup, measured.accept_counts, folder, hardware, profile)
    with writing(folder / "simulated.yaml") as file:
        file.write_text(yaml.safe_dump(mapping, sort_keys=False))
    predicted = predict(mapping, str(folder / "simulated.yaml"),
                        setup.warmup_iterations, setup.iterations)
    write_csv(predicted, folder / "predicted_iterations.csv")
    table = comparison(setup.design, setup.batch, measured.iterations, predicted)
    _print(s, setup, measured, table)
    return table


def _mapping(s, setup: Setup, accept_counts, folder: Path, hardware: str, profile: str | None) -> dict:
    """compare.simulated_mapping of what `setup` built, its shrunken assistant or drafter inline,
    so simulated.yaml reproduces the prediction."""
    mapping = simulated_mapping(s, spec_entry(setup.model), setup.prompt_lens, accept_counts, folder,
                                hardware, profile, setup.warmup_iterations + setup.iterations)
    if setup.assistant is not None:
        mapping["speculative"]["draft"] = spec_entry(setup.assistant, exclude_none=True)
    return mapping


def _check_memory(s, setup: Setup, folder: Path, hardware: str, profile: str | None) -> None:
    """The shrunken deployment fits this device's memory as the simulation will size it, checked
    for every point before any warning or real loop (a point's loop took minutes, and a sweep's
    later point was refused after its earlier ones had run), and blamed on the scenario's verify
    section, which sized the model. `folder`: the point's, not made yet (it names the error)."""
    placeholder = np.ones(setup.steps + 1)  # any histogram: memory does not read it
    with tempfile.TemporaryDirectory() as scratch:  # the mapping's trace and histogram files, nothing kept
        mapping = _mapping(s, setup, placeholder, Path(scratch), hardware, profile)
        try:
            fits_memory(mapping, str(folder / "simulated.yaml"))
        except ScenarioError as exc:
            if exc.key == "engine.chunked_prefill_tokens":  # the loop prefills every prompt in one chunk
                # both the batch and the prompts' length set it: the section, not one key of it
                raise ScenarioError(s.source or "verify", "workload", f"the loop prefills its "
                                    f"{len(setup.prompt_lens)} requests' {sum(setup.prompt_lens):,} prompt tokens in one "
                                    "chunk, and the simulated engine's reserve for it outgrows this device: fewer "
                                    "requests (concurrency) or shorter prompts (input_len) fit") from None
            if exc.key.startswith("workload") or "max_context" in exc.reason:  # the iterations set the lengths
                raise ScenarioError(s.source or "verify", "verify.iterations", f"the loop's requests are too long for "
                                    f"the simulation: {exc.reason} (fewer iterations and warmup_iterations fit)") from None
            raise ScenarioError(s.source or "verify", "verify.hidden_scale", f"the shrunken model does not fit "
                                f"this device: {exc.reason} (a smaller verify.hidden_scale or fewer layers "
                                "fit)") from None


def _print(s, setup: Setup, measured, table: pd.DataFrame) -> None:
    it = measured.iterations
    passes = it[list(loops.KINDS)].sum(axis=1)
    print(f"\n== {s.speculative.design}, steps {setup.steps}, batch {setup.batch}, prompts {setup.prompt_lens}: "
          f"{setup.model.num_layers} target layers, hidden {setup.model.hidden_size}, {setup.dtype}")
    if setup.steps:
        counts = measured.accept_counts
        length = 1 + (counts * np.arange(len(counts))).sum() / max(counts.sum(), 1)
        print(f"accept histogram (drafts accepted: count) {dict(enumerate(counts.tolist()))}, "
              f"accept length {length:.2f} ({setup.acceptance})")
        if setup.acceptance == "greedy":
            print("note: greedy acceptance with random weights: the drafts almost never match the target, "
                  "so acceptance is near zero; use forced acceptance to exercise longer accepts")
    print(f"measured host time outside passes: {(it.iteration_s - passes).mean() * 1e3:.3f} ms per iteration")
    shown = table.assign(predicted=lambda d: np.where(d.kind == "tps", d.predicted, d.predicted * 1e3),
                         measured=lambda d: np.where(d.kind == "tps", d.measured, d.measured * 1e3))
    shown["kind"] = [k if k == "tps" else k.replace("_s", "_ms") for k in shown.kind]
    with pd.option_context("display.float_format", lambda x: f"{x:.4g}"):
        print(shown[["kind", "predicted", "measured", "rel_error"]].to_string(index=False))
