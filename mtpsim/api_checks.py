"""The Python API's argument checks: what a notebook passes by hand to the functions the commands
call (run_points here, run_search's in search/command.py), held to the ranges the CLI's flags hold (--jobs, --seeds,
--backend), each a ScenarioError naming the function and the argument. One home, so the API and
the CLI cannot drift apart on a range."""
from __future__ import annotations

from mtpsim.cli_types import MAX_JOBS
from mtpsim.errors import ScenarioError, short
from mtpsim.limits import MAX_SEEDS

BACKENDS = ("pool", "ray")


def whole(where: str, key: str, value, most: int) -> None:
    """`value` None, or a whole number 1..`most` (a bool is no number here)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most):
        raise ScenarioError(where, key, f"is {short(value, 40)}: a whole number 1..{most}, or None")


def workers(where: str, jobs, backend, seeds=None) -> None:
    """jobs and seeds as --jobs and --seeds take them, and a backend --backend names."""
    whole(where, "jobs", jobs, MAX_JOBS)
    whole(where, "seeds", seeds, MAX_SEEDS)
    if backend not in BACKENDS:
        raise ScenarioError(where, "backend", f"is {short(backend, 40)}: {' or '.join(map(repr, BACKENDS))}")


def run_points_arguments(points, jobs, progress, keep_passes, backend) -> None:
    """run_points': a non-empty list of points mtpsim.load resolved (resolve.check_resolved: a point
    changed after load priced its row on the old specs and its baseline on the new), flags as
    booleans, and the workers."""
    from mtpsim.resolve import check_resolved
    where = "mtpsim.run.run_points"
    if not isinstance(points, (list, tuple)) or not points:
        raise ScenarioError(where, "points", f"is {type(points).__name__} {short(points, 40)}: a non-empty list of the "
                            "points mtpsim.load returns")
    for point in points:
        check_resolved(point, where)
    workers(where, jobs, backend)
    flags(where, progress=progress, keep_passes=keep_passes)


def flags(where: str, **values) -> None:
    """Each of `values` a boolean (a notebook's 1 or "no" is no flag)."""
    for key, value in values.items():
        if not isinstance(value, bool):
            raise ScenarioError(where, key, f"is {short(value, 40)}: True or False")


def load_arguments(advise_points, fixed, first_only, refuse) -> None:
    """mtpsim.load's keyword arguments as the commands pass them: flags as booleans, `fixed` a
    mapping of top-level keys to the flag that set them, `refuse` a function of a point."""
    where = "mtpsim.load"
    flags(where, advise_points=advise_points, first_only=first_only)
    if fixed is not None and not (isinstance(fixed, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                   for k, v in fixed.items())):
        raise ScenarioError(where, "fixed", f"is {short(fixed, 40)}: a mapping of top-level keys to the flag that set "
                            "them (text), or None")
    if fixed:
        from mtpsim.schema import Scenario
        stray = next((k for k in fixed if k not in Scenario.model_fields), None)
        if stray is not None:
            raise ScenarioError(where, "fixed", f"names {short(stray, 40)}, no top-level key of a scenario (known: "
                                f"{', '.join(sorted(Scenario.model_fields))})")
    if refuse is not None and not callable(refuse):
        raise ScenarioError(where, "refuse", f"is {short(refuse, 40)}: a function of a point, or None")

