"""Loading scenarios: a strict YAML reader, `--set key.path=value` overrides, `sweep:` expansion and
paths anchored beside the file; each point then goes through resolve.py (`validate`: the schema,
the catalog entries and profile it names, checks.py's checks against them).

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
from mtpsim.errors import ScenarioError, note_set_keys, short, silenced, warn
from mtpsim.files import load_yaml, parse_yaml
from mtpsim.resolve import disaggregated, validate
from mtpsim.schema import (
    MAX_SWEEP_POINTS,
    Acceptance,
    Cost,
    Engine,
    LengthDist,
    Parallel,
    Scenario,
    Specs,
    Speculative,
    Verify,
    Workload,
)
from mtpsim.textfiles import check_path_length
from mtpsim.yamlfiles import MAX_DEPTH, dump_yaml_all

__all__ = ["Acceptance", "Cost", "Engine", "LengthDist", "Parallel", "Scenario", "Specs", "Speculative",
           "Verify", "Workload", "ScenarioError", "load", "validate", "read_yaml", "parse_set", "set_key",
           "disaggregated", "one_point", "left_out"]

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
        _check_plain(source, "", 0)
        return MAPPING, read_mapping(source)
    raise ScenarioError("mtpsim.load", "", f"takes a scenario file's path (str or pathlib.Path) or a mapping of "
                        f"its sections, not {type(source).__name__} {short(source, 60)}")


def _check_plain(value: Any, key: str, depth: int) -> None:
    """A mapping given to `load` holds only what a YAML file can (the key path of what does not)."""
    if depth > MAX_DEPTH:
        raise ScenarioError(MAPPING, short(key, 80)[1:-1], f"nested deeper than {MAX_DEPTH} levels (a mapping that "
                            "holds itself?)")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ScenarioError(MAPPING, key, f"a key is {type(k).__name__} {short(k, 40)}: keys are text (or "
                                    "integers, as steps_by_batch's batch sizes)")
            _check_plain(v, f"{key}.{k}" if key else str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain(v, f"{key}.{i}", depth + 1)
    elif not isinstance(value, PLAIN):
        raise ScenarioError(MAPPING, key, f"is {type(value).__module__}.{type(value).__qualname__} {short(value, 40)}: "
                            "a scenario holds what YAML does (str, int, float, bool, None, lists and dicts; "
                            "int(x) or float(x) for a NumPy number)")


def read_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """A mapping of plain values (_check_plain) as the YAML reader would return it from a file
    holding it: a copy (tuples as lists, int and str subclasses as int and str), under the same
    rules, so a mapping and the file written from it load alike."""
    if not data:
        raise ScenarioError(MAPPING, "", "the mapping is empty")
    return parse_yaml(dump_yaml_all([data], sort_keys=False, allow_unicode=True), MAPPING)


def _set_items(sets: Any) -> list[str]:
    """`load`'s `sets` as the list of `key.path=value` texts --set gives, or a ScenarioError."""
    if isinstance(sets, (str, bytes)) or not isinstance(sets, (list, tuple)):
        raise ScenarioError("mtpsim.load", "sets", f"is a list of 'key.path=value' texts (as --set gives), not "
                            f"{type(sets).__name__} {short(sets, 60)}")
    for i, item in enumerate(sets):
        if not isinstance(item, str):
            raise ScenarioError("mtpsim.load", f"sets.{i}", f"is {type(item).__name__} {short(item, 40)}: each is "
                                "a 'key.path=value' text")
    return list(sets)


def set_key(data: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    """Set `a.b.c` in nested mappings, creating intermediate mappings. A part in digits names an
    integer key (as YAML reads `8:`), unless the mapping has it as text; `null` removes the key,
    so its default applies (`--set acceptance=null` drops the section). A sweep entry's key is
    itself dotted: `sweep.workload.concurrency` sets the entry `workload.concurrency` of `sweep`."""
    node = data
    if dotted.count(".") >= MAX_DEPTH:
        raise ScenarioError(where, short(dotted, 80)[1:-1], f"a key path of more than {MAX_DEPTH} levels (YAML nests "
                            f"at most {MAX_DEPTH})")
    *parents, leaf = _parts(dotted)
    for i, part in enumerate(parents):
        part = _key(node, part)
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif isinstance(child, str) and part in ("model", "hardware") and i == 0:
            child = node[part] = {"from": child}
        elif not isinstance(child, dict):
            raise ScenarioError(where, dotted, f"{'.'.join(parents[: i + 1])} is not a mapping")
        node = child
    if value is None:
        node.pop(_key(node, leaf), None)
    else:
        node[_key(node, leaf)] = value


def _parts(dotted: str) -> list[str]:
    """A dotted key path's parts; under `sweep` all that follows is one part, an entry's key."""
    head, sep, rest = dotted.partition(".")
    return [head, rest] if head == "sweep" and sep else dotted.split(".")


def _key(node: dict[str, Any], part: str) -> str | int:
    """A dotted path's part as the key it names in `node`."""
    # an integer key (steps_by_batch's batch sizes) has a few digits; a longer run stays text, for
    # the schema to refuse as a key (int() of 4,300 digits or more raises)
    return int(part) if part.isascii() and part.isdigit() and len(part) <= 18 and part not in node else part


NULLS = ("null", "Null", "NULL", "~")  # YAML's spellings of null: `--set key=null` drops the key


def parse_set(item: str) -> tuple[str, Any]:
    """`key.path=value` with the value parsed as YAML."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ScenarioError("--set", short(item, 80)[1:-1], "expected key.path=value")
    if not raw.strip():  # YAML reads nothing as null, which would drop the key without a word
        raise ScenarioError("--set", short(key.strip(), 80)[1:-1], "no value after '=' (write =null to drop the key "
                            "and take its default)")
    if any(not part.strip() for part in key.strip().split(".")):
        raise ScenarioError("--set", short(key, 80)[1:-1], "an empty part in the key path (a leading, trailing "
                            "or doubled '.')")
    try:
        value = parse_yaml(raw, "--set")
    except ScenarioError as exc:
        at = ".".join(k for k in (key.strip(), exc.key) if k and not k.startswith("line "))
        raise ScenarioError("--set", at, f"value is not valid YAML: {exc.reason}") from None
    if value is None and raw.strip() not in NULLS:  # `=#2`: YAML reads a comment, which would drop the key
        raise ScenarioError("--set", short(key.strip(), 80)[1:-1], f"the value {short(raw.strip(), 40)} reads as "
                            "nothing (a YAML comment starts with '#'; quote it, or write =null to drop the key)")
    return key.strip(), value


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
    overrides = [parse_set(item) for item in _set_items(sets)]
    written = copy.deepcopy(data) if overrides else data  # what the file says, to tell its errors from --set's
    for key, value in overrides:
        set_key(data, key, value, "--set")
    keys = [k for k, _ in overrides]  # warnings about these keys, during validation or later, name --set
    twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if twice is not None:
        raise ScenarioError("--set", twice, "given twice: the last one would win; give it once")
    # a later --set of a section replaces what an earlier one set inside it: the earlier one is lost
    lost = next(((inner, outer) for i, inner in enumerate(keys) for outer in keys[i + 1:]
                 if inner.startswith(f"{outer}.")), None)
    if lost is not None:
        inner, outer = lost
        raise ScenarioError("--set", outer, f"replaces the whole section after --set {inner}, which it would undo: "
                            f"give {inner} after it, or inside it")
    note_set_keys(where, (lambda key: _set_by_flag(key, keys, written)) if keys else None)
    try:
        scenarios = _points(data, path, overrides, fixed)
    except ScenarioError as exc:  # a value --set gave is the flag's fault, not the file's (a swept one too)
        if exc.where == where and exc.key and (_set_by_flag(exc.key, keys, written) or
                                               _set_by_flag(f"sweep.{exc.key}", keys, written)):
            raise ScenarioError("--set", exc.key, exc.reason) from None
        culprit = _breaking_set(written, path, overrides, fixed) if exc.where == where and overrides else None
        if culprit is not None:  # the file alone is valid: the flag broke it elsewhere (a sibling, a parent)
            at = f"{exc.key}: " if exc.key and exc.key != culprit else ""
            raise ScenarioError("--set", culprit, f"{at}{exc.reason}") from None
        raise
    if advise_points:
        for s in scenarios:
            advise(s)
        advise_sweep(scenarios)
    return scenarios


def _breaking_set(written: dict[str, Any], path: str | Path, overrides: list[tuple[str, Any]],
                  fixed: dict[str, str] | None) -> str | None:
    """The --set key whose value breaks a file that validates on its own (the first that does so
    alone; else the first given), or None when the file alone fails too: an error a flag causes
    away from the key it sets (a null that leaves its parent without a required entry, a value
    that a sibling must now match) is the flag's, not the file's. Trial validations, said
    nothing of: the error path only."""
    def fails(sets: list[tuple[str, Any]]) -> bool:
        data = copy.deepcopy(written)
        for key, value in sets:
            set_key(data, key, copy.deepcopy(value), "--set")
        try:
            with silenced():
                _points(data, path, sets, fixed)
        except ScenarioError:
            return True
        return False

    if fails([]):
        return None
    return next((key for key, value in overrides if fails([(key, value)])), overrides[0][0])


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
        sweep[key] = _set_inside(key, sweep[key], overrides, where, later)
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


def _set_inside(key: str, values: list, overrides: list[tuple[str, Any]], where: str, later: list) -> list:
    """A swept section's values with each --set that lies inside it applied, as the points run
    it: the rows then say what ran. Where the section's values set that key otherwise, a warning
    (into `later`) says the swept values are not run, as for a swept key --set names."""
    for dotted, value in overrides:
        if not dotted.startswith(key + "."):
            continue
        inner = dotted[len(key) + 1:]
        swept = [_get(v, inner) for v in values if isinstance(v, dict) and _holds(v, inner)]
        lost = list(dict.fromkeys(short(v, 40) for v in swept if _canonical(v) != _canonical(value)))
        if lost:
            later.append((where, f"sweep.{key}", f"--set {dotted} sets it on every point, inside this swept section: "
                          f"its swept values {', '.join(lost)} are not run"))
        values = [_with_set(v, inner, value, where) if isinstance(v, dict) else v for v in values]
    return values


def _with_set(section: dict[str, Any], dotted: str, value: Any, where: str) -> dict[str, Any]:
    """A copy of `section` with `dotted` set to `value` (set_key's rules)."""
    out = copy.deepcopy(section)
    set_key(out, dotted, copy.deepcopy(value), where)
    return out


def _get(data: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted key path the mapping holds (_holds)."""
    for part in dotted.split("."):
        data = data[part if part in data else _key(data, part)]
    return data


def _canonical_key(key: str) -> str:
    """A dotted key as the schema reads it: an integer part (a steps_by_batch batch) by its value."""
    return ".".join(str(int(part)) if part.isdigit() else part for part in key.split("."))


def _canonical(value: Any) -> Any:
    """A value as the schema compares it: mappings whatever their key order, 0 and 0.0 alike."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return tuple(sorted(((str(k), _canonical(v)) for k, v in value.items()), key=repr))
    if isinstance(value, list):
        return tuple(_canonical(v) for v in value)
    return value


def _repeated(values: list) -> tuple:
    """(the first value a sweep list holds twice, as the schema reads it,) or (); in one pass."""
    seen = set()
    for value in values:
        key = repr(_canonical(value))
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


def _set_by_flag(key: str, set_keys: list[str], written: dict[str, Any]) -> bool:
    """Whether the value at `key` came from --set: it lies at or under a key the flag set, or it
    is a mapping the flag created on the way to one (the file does not hold it)."""
    return any(key == k or key.startswith(k + ".") or (k.startswith(key + ".") and not _holds(written, key))
               for k in set_keys)


def _holds(data: Any, dotted: str) -> bool:
    """Whether the mapping has the dotted key path (each part as written, or as an integer key)."""
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return False
        key = part if part in data else _key(data, part)
        if key not in data:
            return False
        data = data[key]
    return True


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
