"""A scenario's `sweep:` section: its keys checked (each a schema field, swept once, none inside
another, a list repeating a value warned of), --set and a command's fixed flags taken over it,
and its points expanded; each point built (its swept values and --set applied, relative paths
anchored beside the file) and validated through resolve.py, an error naming the point. And how
a one-point command (search, recommend, cost) takes the first point of a sweep (`one_point`,
`left_out`).

scenario.py's `load` calls `expand` (and hands it to overrides.py to blame --set's values).
"""
from __future__ import annotations

import contextlib
import copy
import itertools
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from mtpsim import catalog_lookup
from mtpsim.errors import ScenarioError, short, warn
from mtpsim.memory import check_engine_starts
from mtpsim.overrides import canonical, holds, set_inside, set_key
from mtpsim.resolve import validate
from mtpsim.schema import MAX_SWEEP_POINTS, Scenario
from mtpsim.schema_paths import known_key
from mtpsim.section_drops import sweep_drops
from mtpsim.textfiles import check_path_length

__all__ = ["Points", "expand", "left_out", "one_point"]


class Points(list):
    """The validated points `expand` returns, and `size`: how many the sweep has. A one-point
    command (search, recommend) validates the first alone (`first_only`), so the list can be
    shorter than the sweep its warnings and errors count."""

    def __init__(self, points: list[Scenario], size: int):
        super().__init__(points)
        self.size = size


def expand(data: dict[str, Any], path: str | Path, overrides: list[tuple[str, Any]],
           fixed: dict[str, str] | None = None, first_only: bool = False,
           refuse: Callable[[Scenario], None] | None = None) -> Points:
    """The file's data (--set applied) -> its sweep checked and expanded, each point validated
    (a key in `fixed`, set by a command's flag, is not swept: scenario.load), or with
    `first_only` the first alone: a command that uses one point need not pay for 10,000 (the
    sweep's own keys are still checked, and the count is the sweep's). `refuse(point)`: a
    command's own refusal of a valid point (scenario.load), run as part of its validation."""
    where = str(path)
    sweep = {} if data.get("sweep") is None else data["sweep"]
    if not isinstance(sweep, dict):
        raise ScenarioError(where, "sweep", "must map dotted keys to lists")
    sweep = dict(sweep)  # --set and fixed flags take keys over below: the file's data keeps its sweep
    later = []  # warnings, said once every point has validated: bad input stays one line
    _check_keys(sweep, where, later)
    _flags_over_sweep(sweep, overrides, fixed or {}, where, later)
    size = math.prod(len(v) for v in sweep.values())
    if size > MAX_SWEEP_POINTS:
        raise ScenarioError(where, "sweep", f"{size:,} points is over the limit of {MAX_SWEEP_POINTS:,} per scenario "
                            "(split the study over several scenario files)")
    for key, values in sweep.items():  # past the limit: a sweep too large is refused before its values are weighed
        drops = sweep_drops(data, key, values)
        if drops is not None:
            later.append((where, f"sweep.{key}", drops))
    points = [dict(zip(sweep, combo)) for combo in itertools.product(*sweep.values())] or [{}]
    used = points[:1] if first_only else points
    scenarios = [_validate_point(data, point, i, len(points), path, where, overrides) for i, point in enumerate(used)]
    for i, s in enumerate(scenarios if refuse is not None else ()):  # once every point is valid: the file's errors first
        _labelled(partial(refuse, s), used[i], i, len(points))
    for warning in later:
        warn(*warning)
    return Points(scenarios, len(points))


def _check_keys(sweep: dict, where: str, later: list) -> None:
    """Each sweep key a schema key path given once (as the schema reads it: an integer part 01 is
    1), none inside another swept key, each with a non-empty list; a value listed twice is said
    (into `later`)."""
    spelled = {}  # each key as the schema reads it -> as written
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


def _flags_over_sweep(sweep: dict, overrides: list[tuple[str, Any]], fixed: dict[str, str], where: str,
                      later: list) -> None:
    """--set wins over the sweep (in place): a swept key it names (or lies under) stops being
    swept, and a swept section it lies inside is overridden point by point; so does a command's
    flag that sets a key on every point (`fixed`: run's --seeds). Either says (into `later`)
    which swept values are not run."""
    for key, values in list(sweep.items()):
        setter = next(((o, value) for o, value in overrides if key == o or key.startswith(o + ".")), None)
        if setter is not None:
            dotted, value = setter
            del sweep[key]
            # a section set whole that leaves the swept key out replaces it with its default: say so
            inner = key[len(dotted) + 1:]
            does = f"replaces {dotted} on every point, leaving {key} at its default over the sweep" \
                if dotted != key and not (isinstance(value, dict) and holds(value, inner)) else None
            _over_sweep(where, key, f"--set {dotted}", [v for v in values if dotted != key or
                                                        canonical(v) != canonical(value)], later, does)
    for key in sweep:
        sweep[key] = set_inside(key, sweep[key], overrides, where, later)
    for key in [k for k in sweep if _canonical_key(k) in fixed]:
        _over_sweep(where, key, fixed[_canonical_key(key)], sweep.pop(key), later)


def _over_sweep(where: str, key: str, flag: str, lost: list, later: list, does: str | None = None) -> None:
    """The warning (into `later`) that a flag setting swept `key` on every point leaves its swept
    values `lost` (those other than the flag's) unrun: one wording for --set and a command's flag;
    `does`: what the flag does to the key where it does not set it itself."""
    lost = list(dict.fromkeys(short(v, 40) for v in lost))
    if lost:
        later.append((where, f"sweep.{key}", f"{flag} {does or f'sets {key} on every point, over the sweep'}: the swept "
                      f"value{'s' if len(lost) > 1 else ''} {', '.join(lost)} {'are' if len(lost) > 1 else 'is'} "
                      "not run"))


@contextmanager
def one_point(points: Points, command: str) -> Iterator[Scenario]:
    """The point a one-point command (search, recommend, cost) uses: the first. Where the file
    sweeps, an error its checks raise about that point says it is sweep point 1 (the same
    key can be fine at another point), and once they pass, one warning says the other points
    are left out: a sweep is `mtpsim run`'s, and a note on stdout was easy to miss."""
    s, n = points[0], points.size
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


def left_out(points: Points, command: str) -> None:
    """One warning where a one-point command is given a sweep: only the first point is used."""
    n = points.size
    if n > 1:
        others = "the other point is" if n == 2 else f"the other {n - 1} are"
        warn(points[0].source, "sweep", f"{command} uses one point, the first of the sweep's {n} "
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
    def check() -> Scenario:
        s = validate(_anchor_paths(_with_point(data, point, where, overrides), Path(path), where), where, point)
        check_engine_starts(s)  # an engine that would not start: refused with the point, before its warnings
        return s
    return _labelled(check, point, i, n)


def _labelled(check: Callable[[], Any], point: dict, i: int, n: int) -> Any:
    """check(), its ScenarioError saying which sweep point it is about (a one-point sweep's too: the
    value may be the sweep's, not the file's key the error names)."""
    try:
        return check()
    except ScenarioError as exc:
        if not point:
            raise
        raise ScenarioError(exc.where, exc.key, f"{exc.reason} (sweep point {i + 1} of {n}: {_which(point)})") from None


def _anchor_paths(data: dict[str, Any], scenario: Path, where: str) -> dict[str, Any]:
    """Relative trace / histogram paths, model / hardware / draft files, hf_config files and
    profile folders (a cost.profile path, not a name) that do not exist from the current folder
    are read beside the scenario file, so scenarios can ship their data next to them; beside a
    link to the scenario, else beside the file it links to (a linked scenario found none of the
    data that ships beside it)."""
    folders = [scenario.parent]
    with contextlib.suppress(OSError, RuntimeError):  # a link loop, or no such file (a mapping's `<dict>`)
        if scenario.is_symlink():
            folders.append(scenario.resolve(strict=True).parent)

    def anchored(value: Any, key: str) -> Any:
        if not isinstance(value, str):
            return value
        check_path_length(value, where, key)
        value = home(value)
        if not Path(value).is_absolute() and not Path(value).exists():
            # absolute: scenario.resolved.yaml is read again from other folders (`mtpsim plot`'s memory plot)
            return next((str((folder / value).absolute()) for folder in folders if (folder / value).exists()), value)
        return value

    def reference(value: str, key: str) -> str:
        """A catalog name or a file path (a catalog name is a file name too)."""
        return anchored(value, key) if catalog_lookup.is_path(value) else check_path_length(value, where, key)

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
        profile = home(cost["profile"])  # a bare name is a profile's name (profile_paths.find_profile)
        cost["profile"] = anchored(profile, "cost.profile") if "/" in profile or "\\" in profile else profile
    return data


def home(path: str) -> str:
    """A scenario's path with a leading `~` as the home folder, read as the model and hardware
    files already were: a trace, histogram or profile at `~/...` was `no such file`, and a
    config.json at `~/config.json` named its model `~`."""
    return os.path.expanduser(path) if path.startswith("~") else path


def _with_point(data: dict[str, Any], point: dict[str, Any], where: str, overrides=()) -> dict[str, Any]:
    # the sweep's lists are left out of the copy: copied for every point, a sweep of 10,000
    # points over a list of 10,000 values copied 10^8 of them
    out = copy.deepcopy({k: v for k, v in data.items() if k != "sweep"})
    for key, value in [*point.items(), *overrides]:
        set_key(out, key, copy.deepcopy(value), where)
    return out


def _check_key_exists(dotted: str, where: str) -> None:
    """A sweep key must name a schema field (paths into model/hardware are checked on merge)."""
    if not known_key(dotted):
        raise ScenarioError(where, f"sweep.{dotted}", "unknown key")
