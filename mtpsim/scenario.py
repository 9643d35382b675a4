"""Loading scenarios: a strict YAML reader, `--set key.path=value` overrides (overrides.py),
`sweep:` expansion and paths anchored beside the file; each point then goes through resolve.py
(`validate`: the schema, the catalog entries and profile it names, checks.py's checks against them).

`load(path, sets)` returns one validated `Scenario` per sweep point. Anything wrong raises
`ScenarioError(file, key.path, reason)` before anything runs.
"""
from __future__ import annotations

import copy
import itertools
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mtpsim import catalog
from mtpsim.advice import advise, advise_sweep
from mtpsim.errors import ScenarioError, holding, note_set_keys, short, warn
from mtpsim.files import load_yaml, parse_yaml
from mtpsim.layout_schema import Parallel
from mtpsim.overrides import apply_sets, blamed_on_set, canonical, from_set, parse_sets, set_inside, set_key
from mtpsim.resolve import disaggregated, validate
from mtpsim.schema import (
    MAX_SWEEP_POINTS,
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
from mtpsim.textfiles import check_path_length
from mtpsim.yamlfiles import MAX_DEPTH, dump_yaml_all

__all__ = ["Acceptance", "Cost", "Engine", "LengthDist", "Parallel", "Scenario", "Specs", "Speculative",
           "Verify", "Workload", "ScenarioError", "load", "validate", "read_yaml", "disaggregated", "one_point",
           "left_out"]

def read_yaml(path: str | Path) -> dict[str, Any]:
    """A scenario file as a mapping, or ScenarioError naming the file (mtpsim/files.py's rules)."""
    data = load_yaml(path)
    if data is None:
        raise ScenarioError(str(path), "", "the file is empty")
    if not isinstance(data, dict):
        raise ScenarioError(str(path), "", "a scenario must be a mapping of sections")
    return data


MAPPING = "<dict>"  # what errors name for a scenario `load` was given as a mapping, not a file
PLAIN = (str, bool, int, float, type(None))  # the values YAML reads (besides lists and mappings)


def _source(source: Any) -> tuple[str | Path, dict[str, Any]]:
    """(what errors name, the scenario as a mapping) of `load`'s first argument: a file's path
    (str or os.PathLike) or a mapping of sections, which then passes the YAML reader's rules as if
    written in a file (paths in it are read from the current folder). Anything else is refused
    here, not met later as a TypeError from deep inside."""
    if isinstance(source, bytes):
        source = os.fsdecode(source)
    if isinstance(source, (str, os.PathLike)):
        return source, read_yaml(source)
    if isinstance(source, dict):
        return MAPPING, read_mapping(_plain(source, "", 0))
    raise ScenarioError("mtpsim.load", "", f"takes a scenario file's path (str or pathlib.Path) or a mapping of "
                        f"its sections, not {type(source).__name__} {short(source, 60)}")


def _plain(value: Any, key: str, depth: int) -> Any:
    """A mapping given to `load`, holding only what a YAML file can (else the key path of what
    does not), as a copy of built-in types: a subclass (an OrderedDict, a str or int Enum, a
    list subclass) as the dict, str, int or list it is, which the YAML writer takes; an integer
    or text no YAML file could hold (past the 4,300 digits Python converts, a lone surrogate) is
    named, not met as a ValueError or UnicodeError when the mapping is written out."""
    if depth > MAX_DEPTH:
        raise ScenarioError(MAPPING, short(key, 80)[1:-1], f"nested deeper than {MAX_DEPTH} levels (a mapping that "
                            "holds itself?)")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ScenarioError(MAPPING, key, f"a key is {type(k).__name__} {short(k, 40)}: keys are text (or "
                                    "integers, as steps_by_batch's batch sizes)")
            k = _plain(k, key, depth + 1)
            out[k] = _plain(v, f"{key}.{k}" if key else str(k), depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{key}.{i}", depth + 1) for i, v in enumerate(value)]
    if not isinstance(value, PLAIN):
        raise ScenarioError(MAPPING, key, f"is {type(value).__module__}.{type(value).__qualname__} {short(value, 40)}: "
                            "a scenario holds what YAML does (str, int, float, bool, None, lists and dicts; "
                            "int(x) or float(x) for a NumPy number)")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        text = str.__str__(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ScenarioError(MAPPING, key, f"holds {text[exc.start]!r}, a lone surrogate no UTF-8 text (and so no "
                                "file) can hold") from None
        return text
    if isinstance(value, int):
        number = int.__index__(value)
        try:
            str(number)
        except ValueError:
            raise ScenarioError(MAPPING, key, f"an integer of {number.bit_length():,} bits, more digits than a YAML "
                                "file's number may have (4,300)") from None
        return number
    return float(value)


def read_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """A mapping of plain values (_plain) as the YAML reader would return it from a file
    holding it: a copy (tuples as lists, int and str subclasses as int and str), under the same
    rules, so a mapping and the file written from it load alike."""
    if not data:
        raise ScenarioError(MAPPING, "", "the mapping is empty")
    return parse_yaml(dump_yaml_all([data], sort_keys=False, allow_unicode=True), MAPPING)


def load(path: str | Path | dict[str, Any], sets: list[str] = (), advise_points: bool = True,
         fixed: dict[str, str] | None = None) -> list[Scenario]:
    """Read, override, expand the sweep and validate: one Scenario per point, each point's
    warnings printed (advice.py) unless `advise_points` is False: a command that refuses some
    valid scenarios checks its own rule first and then advises, so bad input stays one line.
    `fixed`: top-level keys a command's own flag sets on every point afterwards (run's --seeds),
    key -> the flag as given: as a key --set gives, such a key stops being swept, with one warning.
    `path` may be a mapping of the file's sections instead (errors then name `<dict>`)."""
    path, data = _source(path)
    where = str(path)
    overrides = parse_sets(sets)
    written = apply_sets(data, overrides)  # what the file says, to tell its errors from --set's
    keys = [k for k, _ in overrides]  # warnings about these keys, during validation or later, name --set
    note_set_keys(where, (lambda key: from_set(key, keys, written)) if keys else None)
    with holding():  # what a point's validation warns of waits for every point and profile: bad input is one line
        try:
            scenarios = _points(data, path, overrides, fixed)
        except ScenarioError as exc:  # a value --set gave is the flag's fault, not the file's (a swept one too)
            blamed = blamed_on_set(exc, where, overrides, written, lambda trial, sets: _points(trial, path, sets, fixed))
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


def _points(data: dict[str, Any], path: str | Path, overrides: list[tuple[str, Any]],
            fixed: dict[str, str] | None = None) -> list[Scenario]:
    """The file's data (--set applied) -> its sweep checked and expanded, each point validated
    (a key in `fixed`, set by a command's flag, is not swept: load)."""
    where = str(path)
    sweep = {} if data.get("sweep") is None else data["sweep"]
    if not isinstance(sweep, dict):
        raise ScenarioError(where, "sweep", "must map dotted keys to lists")
    later = []  # warnings, said once every point has validated: bad input stays one line
    spelled = {}  # each key as the schema reads it (an integer part 01 is 1) -> as written
    for key, values in sweep.items():
        if not isinstance(key, str):
            raise ScenarioError(where, f"sweep.{key}", f"a sweep key is a dotted key path such as "
                                f"workload.concurrency, not {type(key).__name__} {key!r}")
        if not isinstance(values, list) or not values:
            raise ScenarioError(where, f"sweep.{key}", "must be a non-empty list")
        _check_key_exists(key, where)
        same = spelled.setdefault(_canonical_key(key), key)
        if same != key:
            raise ScenarioError(where, f"sweep.{key}", f"names the same key as sweep.{same}: sweep it once")
        twice = _repeated(values)
        if twice:
            later.append((where, f"sweep.{key}", f"lists {short(twice[0], 40)} more than once: each copy runs the same "
                          "point again (for replicates, use seeds)"))
        for other in sweep:
            if isinstance(other, str) and _canonical_key(key).startswith(_canonical_key(other) + "."):
                raise ScenarioError(where, f"sweep.{key}", f"lies inside sweep.{other}: the two would set the same "
                                    "value, each point keeping whichever comes last; sweep one of them")
    # --set wins over the sweep: a swept key it names (or lies under) stops being swept, and a
    # swept section it lies inside is overridden point by point; so does a command's flag that
    # sets a key on every point (run's --seeds), which, unlike --set, does not name the key: it says so
    sweep = {k: v for k, v in sweep.items() if not any(k == o or k.startswith(o + ".") for o, _ in overrides)}
    for key in sweep:
        sweep[key] = set_inside(key, sweep[key], overrides, where, later)
    fixed = fixed or {}
    for key in [k for k in sweep if _canonical_key(k) in fixed]:
        flag = fixed[_canonical_key(key)]
        later.append((where, f"sweep.{key}", f"{flag} sets {key} on every point, over the sweep (as --set would): "
                      f"the swept values {short(sweep.pop(key), 40)} are not run"))
    size = math.prod(len(v) for v in sweep.values())
    if size > MAX_SWEEP_POINTS:
        raise ScenarioError(where, "sweep", f"{size:,} points is over the limit of {MAX_SWEEP_POINTS:,} per scenario "
                            "(split the study over several scenario files)")
    points = [dict(zip(sweep, combo)) for combo in itertools.product(*sweep.values())] or [{}]
    scenarios = [_validate_point(data, point, i, len(points), path, where, overrides) for i, point in enumerate(points)]
    for warning in later:
        warn(*warning)
    return scenarios


@contextmanager
def one_point(points: list[Scenario], command: str) -> Iterator[Scenario]:
    """The point a one-point command (search, recommend, cost) uses: the first. Where the file
    sweeps, an error its checks raise about that point says it is sweep point 1 (the same
    key can be fine at another point), and once they pass, one warning says the other points
    are left out: a sweep is `mtpsim run`'s, and a note on stdout was easy to miss."""
    s, n = points[0], len(points)
    if n == 1:
        yield s
        return
    which = _which(s.point)
    try:
        yield s
    except ScenarioError as exc:
        if exc.where != s.source or "(sweep point " in exc.reason:
            raise
        raise ScenarioError(exc.where, exc.key, f"{exc.reason} (sweep point 1 of {n}: {which}, the one {command} "
                            "uses)") from None
    left_out(points, command)


def left_out(points: list[Scenario], command: str) -> None:
    """One warning where a one-point command is given a sweep: only the first point is used."""
    if len(points) > 1:
        others = "the other point is" if len(points) == 2 else f"the other {len(points) - 1} are"
        warn(points[0].source, "sweep", f"{command} uses one point, the first of the sweep's {len(points)} "
             f"({_which(points[0].point)}): {others} left out (`mtpsim run` runs a sweep; one {command} per point: "
             "--set the swept keys)")


def _which(point: dict[str, Any]) -> str:
    """A sweep point as its errors and warnings name it: `key=value, ...`, each value cut short."""
    return ", ".join(f"{k}={short(v, 40)}" for k, v in point.items())


def _canonical_key(key: str) -> str:
    """A dotted key as the schema reads it: an integer part (a steps_by_batch batch) by its value."""
    return ".".join(str(int(part)) if part.isdigit() else part for part in key.split("."))


def _repeated(values: list) -> tuple:
    """(the first value a sweep list holds twice, as the schema reads it,) or (); in one pass."""
    seen = set()
    for value in values:
        key = repr(canonical(value))
        if key in seen:
            return (value,)
        seen.add(key)
    return ()


def _validate_point(data: dict, point: dict, i: int, n: int, path, where: str, overrides) -> Scenario:
    """One sweep point, validated; its error says which point (the values the sweep gave it) when
    the file sweeps more than one, since the same key can be fine at one point and not another."""
    try:
        return validate(_anchor_paths(_with_point(data, point, where, overrides), Path(path).parent, where), where, point)
    except ScenarioError as exc:
        if n == 1 or not point:
            raise
        raise ScenarioError(exc.where, exc.key, f"{exc.reason} (sweep point {i + 1} of {n}: {_which(point)})") from None


def _anchor_paths(data: dict[str, Any], folder: Path, where: str) -> dict[str, Any]:
    """Relative trace / histogram paths, model / hardware / draft files and hf_config files that do not exist
    from the current folder are read beside the scenario file, so scenarios can ship their data
    next to them."""
    def anchored(value: Any, key: str) -> Any:
        if not isinstance(value, str):
            return value
        check_path_length(value, where, key)
        if not Path(value).is_absolute() and not Path(value).exists() and (folder / value).exists():
            return str(folder / value)
        return value

    def reference(value: str, key: str) -> str:
        """A catalog name or a file path (a catalog name is a file name too)."""
        return anchored(value, key) if catalog.is_path(value) else check_path_length(value, where, key)

    for section, key in (("workload", "trace"), ("acceptance", "histogram")):
        node = data.get(section)
        if isinstance(node, dict) and key in node:
            node[key] = anchored(node[key], f"{section}.{key}")
    trace = data["workload"].get("trace") if isinstance(data.get("workload"), dict) else None
    if isinstance(trace, dict) and "path" in trace:  # {path: ..., format: ...}
        trace["path"] = anchored(trace["path"], "workload.trace.path")
    for node, key, at in ((data, "model", "model"), (data, "hardware", "hardware"),
                          (data.get("speculative"), "draft", "speculative.draft")):
        value = node.get(key) if isinstance(node, dict) else None
        if isinstance(value, str):
            node[key] = reference(value, at)
        elif isinstance(value, dict) and isinstance(value.get("from"), str):
            value["from"] = reference(value["from"], f"{at}.from")
        if isinstance(value, dict) and isinstance(value.get("hf_config"), str):
            value["hf_config"] = anchored(value["hf_config"], f"{at}.hf_config")
    cost = data.get("cost")
    if isinstance(cost, dict) and isinstance(cost.get("profile"), str):
        check_path_length(cost["profile"], where, "cost.profile")
    return data


def _with_point(data: dict[str, Any], point: dict[str, Any], where: str, overrides=()) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out.pop("sweep", None)
    for key, value in [*point.items(), *overrides]:
        set_key(out, key, copy.deepcopy(value), where)
    return out


def _check_key_exists(dotted: str, where: str) -> None:
    """A sweep key must name a schema field (paths into model/hardware are checked on merge)."""
    model: type[BaseModel] | None = Scenario
    for part in dotted.split("."):
        if model is None:
            return
        if part not in model.model_fields or part == "sweep":
            raise ScenarioError(where, f"sweep.{dotted}", "unknown key")
        annotation = model.model_fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
