"""The run folder: claimed exclusively before a run simulates anything, written when it ends
(`write_run`) and marked complete last. What the files hold is described in run.py's docstring;
run_reader.py reads them back, checked, for `mtpsim plot` (what it needs of them is its RUN_TABLES).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim import interrupts
from mtpsim import scenario as sc
from mtpsim.designs import BASELINE, DesignShape
from mtpsim.errors import ScenarioError
from mtpsim.files import dump_yaml_all
from mtpsim.outputs import missing_above, placed, remove_empty, writing
from mtpsim.results import (
    ITERATION_COLUMNS,
    PASS_COLUMNS,
    REQUEST_COLUMNS,
    Results,
)
from mtpsim.rows import Table
from mtpsim.rows import write_csv as write_table
from mtpsim.textfiles import blocked_by, blocked_note, not_a_folder

if TYPE_CHECKING:
    import pandas as pd

CLAIM = ".mtpsim-run"  # created exclusively in a run folder before anything is simulated
COMPLETE = ".mtpsim-complete"  # written last, once every table is whole (mark_complete)


def output_dir(name: str, out: str | None) -> Path:
    """The run folder, claimed before simulating: new, or an existing empty one, never one with
    files in it, and never one another run is writing into (the claim file is created
    exclusively, so of two runs started into one folder only one proceeds)."""
    out = placed(out) if out else out
    made = not out or not Path(out).exists()
    path = Path(out) if out else _new_default(name)
    claimed_here: list = []
    try:
        return _claim(path, claimed_here)
    except ScenarioError:
        raise
    except BaseException:  # a signal between making the folder and the claim's end: give back ours
        if claimed_here:
            (path / CLAIM).unlink(missing_ok=True)
        if made and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        raise


def free_out(out: str | None) -> None:
    """--out refused as output_dir would refuse it (a file, a folder holding something), checked
    while the scenario's warnings are still held: a bad --out is then the one line. The claim
    itself is made later (output_dir); this makes nothing."""
    if not out:
        return
    path = Path(placed(out))
    blocked = blocked_by(path)  # a file or a link to nothing on the way: refused now, while warnings are held
    if blocked is not None:
        raise ScenarioError(str(path), "", f"cannot create the run folder: {blocked}: pass another --out")
    if path.exists() and not path.is_dir():
        raise ScenarioError(str(path), "", f"{not_a_folder(path)}: pass another --out")
    if path.is_dir() and any(path.iterdir()):
        raise _busy(path)


def _busy(path: Path) -> ScenarioError:
    """The refusal of a folder that holds something, saying what: a run being written, a run that
    stopped part-way (no completion marker: a full disk, a signal), or other files."""
    if (path / COMPLETE).exists():
        what = ": it holds a finished run (nothing overwritten);"
    elif (path / CLAIM).exists():
        what = ": it holds a run being written, or one killed before it finished;"
    elif (path / "scenario.resolved.yaml").exists():
        what = f": it holds a run that stopped part-way (no {COMPLETE}): remove it or"
    else:
        what = " (nothing overwritten);"
    return ScenarioError(str(path), "", f"output folder exists and is not empty{what} pass another --out")


def _claim(path: Path, claimed_here: list) -> Path:
    """Make `path` if needed and claim it (output_dir's rules); `claimed_here` gets an entry as
    the claim file is made (a claim someone else holds is a ScenarioError, never cleaned up)."""
    free_out(str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        claimed_here.append(CLAIM)  # before: a signal can land once the file is made, never inside the call
        os.close(os.open(path / CLAIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # made meanwhile, or a link to nothing (it, or a folder on the way to it)
        blocked = blocked_by(path)
        raise (_busy(path) if path.is_dir() else ScenarioError(str(path), "", f"cannot create the run folder: {blocked}: "
                                                        "pass another --out") if blocked is not None else
               ScenarioError(str(path), "", f"{not_a_folder(path)}: pass another --out")) from None
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot create the run folder: {exc.strerror or exc}{blocked_note(path)}") \
            from None
    return path


def _new_default(name: str) -> Path:
    """runs/<name>-<timestamp>, or -2, -3, ... after it when runs started in the same second
    made those: created here (exclusively), so two runs never share a default folder."""
    stem = Path("runs") / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    for n in range(1, 10_000):
        path = stem if n == 1 else stem.with_name(f"{stem.name}-{n}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            blocked = blocked_by(path)
            if blocked is not None:  # `runs` a link to nothing: no name would do
                raise ScenarioError(str(path), "", f"cannot create the run folder: {blocked}: pass --out") from None
            continue
        except OSError as exc:
            raise ScenarioError(str(path), "", f"cannot create the run folder: {exc.strerror or exc}{blocked_note(path)}") \
                from None
    raise ScenarioError(str(stem), "", "10,000 runs of this name started this second: pass --out")


@contextmanager
def claimed(name: str, out: str | None) -> Iterator[Path]:
    """`output_dir`'s folder for the length of a command, which prints its report within (after
    mark_complete): the report is flushed to stdout before the block ends. A command that fails
    anywhere in the block (a bad point, an unreachable cluster, a full disk, a stdout it cannot
    write, Ctrl-C) gives its claim back and its completion marker too, so that no later command
    reads the folder as done, and the folder itself while nothing else is in it when this
    command made it, so that the same --out can be used again; what it had already written stays.
    A reader that left (`| head`, a BrokenPipeError: status 0) takes nothing from a finished folder."""
    out = placed(out) if out else out
    made = out is None or not Path(out).exists()  # a folder this run creates; an empty one given by --out stays
    above = missing_above(Path(out) if out else Path("runs") / "run")  # and the folders it creates above it
    path = output_dir(name, out)  # gives back what it made if interrupted itself
    try:
        yield path
        interrupts.check()  # a SIGTERM whose KeyboardInterrupt something swallowed: not a finished run
        sys.stdout.flush()  # a full or closed stdout fails here, while the folder can still be unmarked
    except BaseException as exc:
        if not (isinstance(exc, BrokenPipeError) and (path / COMPLETE).is_file()):
            (path / COMPLETE).unlink(missing_ok=True)
            (path / CLAIM).unlink(missing_ok=True)
            if made and not any(path.iterdir()):
                path.rmdir()
                remove_empty(above)
            elif isinstance(exc, KeyboardInterrupt) and not exc.args and any(path.iterdir()):
                # what a command writes as it goes (verify's points) stays: say so on the one line
                raise KeyboardInterrupt(f"{path} keeps what was written before the stop, not marked complete") \
                    from None
        raise


def write_run(path: Path, points: list[sc.Scenario], summary: list[dict], results: list[Results],
              labels: list[dict], intervals=None) -> None:
    """The run's files: the resolved scenario, summary.csv from the summary rows (and summary_ci.csv
    over seeds, a DataFrame), and requests, iterations, accept counts and passes with the `labels`
    (point, seed) of each result, each as DataFrame.to_csv wrote them (mtpsim/rows.py). A file
    that cannot be written is a ScenarioError naming it; the folder is not `complete`."""
    resolved = [{**p.model_dump(exclude={"sweep"}, exclude_none=True), "point": p.point,
                 "resolved_specs": p.specs.model_dump(exclude_none=True)} for p in points]
    with writing(path / "scenario.resolved.yaml") as file:
        file.write_text(dump_yaml_all(resolved, sort_keys=False))
    write_table(Table.of_rows(summary), path / "summary.csv")
    if intervals is not None:
        write_csv(intervals, path / "summary_ci.csv")
    write_table(labelled(results, "request_rows", REQUEST_COLUMNS, labels), path / "requests.csv")
    write_table(labelled(results, "iteration_rows", ITERATION_COLUMNS, labels), path / "iterations.csv")
    counts = [(*label.values(), j, count) for label, r in zip(labels, results)
              for j, count in enumerate(r.accept_counts.tolist())]
    write_table(Table.of_tuples([*labels[0], "accepted", "count"], counts), path / "accept_counts.csv")
    if any(r.pass_rows for r in results):
        write_table(labelled(results, "pass_rows", PASS_COLUMNS, labels), path / "passes.csv")


def labelled(results: list[Results], attr: str, columns: list[str], labels: list[dict]) -> Table:
    """One of the results' row lists (request_rows, iteration_rows, pass_rows) for all, as columns,
    each row with its result's label columns after its own."""
    table = {name: [] for name in [*columns, *labels[0]]}
    for label, r in zip(labels, results):
        rows = getattr(r, attr)
        for name, column in zip(columns, zip(*rows)):
            table[name].extend(column)
        for name, value in label.items():
            table[name].extend([value] * len(rows))
    return Table.of_columns(table)


def write_csv(frame, path: Path) -> None:
    """One output DataFrame, or a ScenarioError naming it (outputs.writing)."""
    with writing(path):
        frame.to_csv(path, index=False)


def mark_complete(path: Path) -> None:
    """The last file a command writes into its folder: every table in it is whole. `plot` reads
    only folders that have it, so a run that died (a full disk, Ctrl-C) is never read as done."""
    with writing(path / COMPLETE) as file:
        file.write_text("")


def concat(results: list[Results], attr: str, labels: list[dict]):
    """One of the results' frames (requests, iterations, passes) for all, each with its label columns."""
    import pandas as pd
    return pd.concat([getattr(r, attr).assign(**label) for label, r in zip(labels, results)], ignore_index=True)


def memory_frame(points: list[sc.Scenario]) -> pd.DataFrame:
    """Per-GPU memory budget of each distinct design in the run (and `none`): weights, KV budget,
    and max concurrent requests at a request's mean input + output length (a trace's: its
    replayed requests'). A disaggregated run's requests hold their KV on the decode pool, so the
    budget is a decode GPU's, on that pool's layout (the scenario's own `parallel` is not read)."""
    import pandas as pd

    from mtpsim.costs import build_pricer
    from mtpsim.memory import memory_budget, pool_rule
    from mtpsim.pools import pool_scenario
    from mtpsim.report import budget_columns
    from mtpsim.sim import point_text
    from mtpsim.tracefiles import mean_lengths
    rows = {}
    for s in points:
        pool = "" if s.disaggregation is None else "decode-pool "
        s = s if s.disaggregation is None else pool_scenario(s, "decode")
        pricer, context = build_pricer(s), sum(mean_lengths(s.workload))
        for d in (DesignShape(BASELINE), DesignShape.of(s.speculative)):
            label = d.label + "".join(f", {k.split('.')[-1]}={point_text(v)}" for k, v in s.point.items()
                                      if k.startswith("model") and d.design != BASELINE)
            m = memory_budget(pricer, d, pool_rule(s, d.design))
            rows.setdefault((label, context), {
                "label": label, "design": d.design, "steps": d.steps, "gpu": f"{pool}GPU",
                "context": context, **budget_columns(m), "target_weights_GB": m.target_weight_bytes / 1e9,
                "draft_weights_GB": m.draft_weight_bytes / 1e9, "kv_budget_GB": m.kv_budget_bytes / 1e9,
                "max_requests": m.max_requests(context)})
    return pd.DataFrame(list(rows.values()))
