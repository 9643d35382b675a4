"""Loading scenarios: a strict YAML reader (or a mapping read as if from a file), `--set
key.path=value` overrides (overrides.py), then sweep.py's expansion (its points, paths anchored
beside the file); each point goes through resolve.py (`validate`: the schema, the catalog entries
and profile it names, checks.py's checks against them).

`load(path, sets)` returns one validated `Scenario` per sweep point. Anything wrong raises
`ScenarioError(file, key.path, reason)` before anything runs.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtpsim.advice import advise
from mtpsim.advice_sweep import advise_sweep
from mtpsim.errors import ScenarioError, holding, note_set_keys, short, warn
from mtpsim.files import load_yaml, parse_yaml
from mtpsim.layout_schema import Parallel
from mtpsim.overrides import apply_sets, parse_sets
from mtpsim.resolve import disaggregated, validate
from mtpsim.schema import (
    Acceptance,
    Cost,
    Engine,
    LengthDist,
    Scenario,
    Specs,
    Speculative,
    Verify,
    Workload,
)
from mtpsim.schema_paths import known_key
from mtpsim.section_drops import set_drop
from mtpsim.set_blame import blamed_on_set, from_set
from mtpsim.sweep import expand
from mtpsim.yamlfiles import dump_yaml_all, plain_values

__all__ = ["Acceptance", "Cost", "Engine", "LengthDist", "Parallel", "Scenario", "Specs", "Speculative",
           "Verify", "Workload", "ScenarioError", "load", "validate", "read_yaml", "disaggregated"]

def read_yaml(path: str | Path) -> dict[str, Any]:
    """A scenario file as a mapping, or ScenarioError naming the file (mtpsim/files.py's rules)."""
    data = load_yaml(path)
    if data is None:
        raise ScenarioError(str(path), "", "the file is empty")
    if not isinstance(data, dict):
        raise ScenarioError(str(path), "", "a scenario must be a mapping of sections")
    return data


MAPPING = "<dict>"  # what errors name for a scenario `load` was given as a mapping, not a file


def _source(source: Any) -> tuple[str | Path, dict[str, Any]]:
    """(what errors name, the scenario as a mapping) of `load`'s first argument: a file's path
    (str or os.PathLike) or a mapping of sections, which then passes the YAML reader's rules as if
    written in a file (paths in it are read from the current folder). Anything else is refused
    here, not met later as a TypeError from deep inside."""
    if isinstance(source, bytes):
        source = os.fsdecode(source)
    if isinstance(source, (str, os.PathLike)):
        if not os.fspath(source):  # Path("") is ".": the current folder, which no one meant
            raise ScenarioError("mtpsim.load", "", "the path is empty: give a scenario file's path or a mapping")
        return source, read_yaml(source)
    if isinstance(source, dict):
        return MAPPING, read_mapping(plain_values(source, MAPPING))
    raise ScenarioError("mtpsim.load", "", f"takes a scenario file's path (str or pathlib.Path) or a mapping of "
                        f"its sections, not {type(source).__name__} {short(source, 60)}")


def read_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """A mapping of plain values (yamlfiles.plain_values) as the YAML reader would return it from a file
    holding it: a copy (tuples as lists, int and str subclasses as int and str), under the same
    rules, so a mapping and the file written from it load alike."""
    if not data:
        raise ScenarioError(MAPPING, "", "the mapping is empty")
    return parse_yaml(dump_yaml_all([data], sort_keys=False, allow_unicode=True), MAPPING)


def load(path: str | Path | dict[str, Any], sets: list[str] = (), advise_points: bool = True,
         fixed: dict[str, str] | None = None, first_only: bool = False,
         refuse: Callable[[Scenario], None] | None = None) -> list[Scenario]:
    """Read, override, expand the sweep and validate: one Scenario per point, each point's
    warnings printed (advice.py) unless `advise_points` is False: a command that refuses some
    valid scenarios checks its own rule first and then advises, so bad input stays one line.
    `fixed`: top-level keys a command's own flag sets on every point afterwards (run's --seeds),
    key -> the flag as given: as a key --set gives, such a key stops being swept, with one warning.
    `path` may be a mapping of the file's sections instead (errors then name `<dict>`).
    `first_only`: validate the sweep's first point alone (search, recommend: the one they use);
    the list then holds it, and its `size` the sweep's count (sweep.Points). `refuse(point)`: a
    command's own refusal of a valid point (run's memory checks), raised as validation's are: before
    any warning, and as --set's where a flag's value is the cause (the file alone passes it)."""
    from mtpsim.api_checks import load_arguments
    load_arguments(advise_points, fixed, first_only, refuse)
    path, data = _source(path)
    where = str(path)
    overrides = parse_sets(sets)
    drops = []  # what each --set of a whole section drops: said once every point has validated
    written = apply_sets(data, overrides, known_key, lambda *replaced: drops.append(set_drop(*replaced)))
    keys = [k for k, _ in overrides]  # warnings about these keys, during validation or later, name --set
    note_set_keys(where, (lambda key: from_set(key, keys, written)) if keys else None)
    with holding():  # what a point's validation warns of waits for every point and profile: bad input is one line
        for drop in filter(None, drops):
            warn(*drop)
        try:
            scenarios = expand(data, path, overrides, fixed, first_only, refuse)
        except ScenarioError as exc:  # a value --set gave is the flag's fault, not the file's (a swept one too)
            blamed = blamed_on_set(exc, where, overrides, written, data.get("sweep"),
                                   lambda trial, sets: expand(trial, path, sets, fixed, first_only, refuse))
            if blamed is None:
                raise
            raise blamed from None
        read_profiles(scenarios)
    if advise_points:
        for s in scenarios:
            advise(s)
        advise_sweep(scenarios)
    return scenarios


def read_profiles(points: list[Scenario]) -> None:
    """Each measured profile the points price by, read and checked now (costs.build_costs keeps
    it for the run in this process, and its disk cache for the workers): a table with a bad row,
    or missing, is input like the scenario, so its one error comes before anything runs or is
    said, not from inside the first run (a search took it for a layout that does not fit)."""
    from mtpsim.costs import build_costs
    seen = set()
    for s in points:
        if s.specs.cost_model == "calibrated" and s.specs.profile not in seen:
            seen.add(s.specs.profile)
            build_costs(s)
