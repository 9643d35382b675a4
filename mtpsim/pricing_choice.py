"""Which cost model and profile price a scenario's hardware (`resolve_pricing`: the profile the
hardware names for its engine, the scenario's own, or the roofline, and when a profile measured
on other hardware is refused), and where a model's or hardware's key was written (`written_at`:
the scenario's inline mapping or the user's own file), which that choice's errors and warnings
name. resolve.py calls it for every point; split from it as its own idea."""
from __future__ import annotations

from pathlib import Path

from mtpsim import catalog, catalog_lookup
from mtpsim.costs.profile import held, known_profiles, require_profile
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, warn
from mtpsim.files import load_yaml
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.packagedata import data_dir
from mtpsim.schema import Scenario


def resolve_pricing(s: Scenario, hardware: HardwareSpec, engine: EngineSpec, where: str) -> tuple[str, str | None]:
    """(cost model, profile folder). auto: the profile the hardware names for the engine, else
    the roofline; a profile measured on other hardware than the scenario's is an error (or, for
    an auto default on hardware renamed from a measured GPU, the roofline)."""
    c = s.cost
    if c.model == "roofline":
        return "roofline", None
    ref = c.profile or hardware.profile_for(engine.name)
    if ref is None:
        if c.model == "calibrated":
            raise ScenarioError(where, "cost.profile", f"cost model calibrated needs a profile and hardware "
                                f"{hardware.name!r} names none (known: {', '.join(known_profiles())})")
        return "roofline", None
    # where the reference is written: the scenario's cost.profile, or the hardware entry's `profiles`
    named = f"profiles.{engine.name if engine.name in hardware.profiles else 'default'}"
    at = (where, "cost.profile") if c.profile else written_at(s.hardware, "hardware", named, where)
    path = require_profile(ref, *at)
    folder = held(path)
    device = folder.device
    if device != hardware.name:
        if c.profile is None and c.model == "auto" and not _names_profiles(s):
            return "roofline", None  # a renamed copy of a measured GPU: its own rates, not the profile
        hint = "" if c.profile else " (a copy of another GPU's entry? leave `profiles` out to price it by its own rates)"
        raise ScenarioError(*at, f"profile {path.name!r} was measured on {device!r}, "
                            f"not on the scenario's hardware {hardware.name!r}{hint}")
    for table in folder.unlisted:
        warn(str(path / "meta.yaml"), "families", f"{table} is in the profile folder but not listed here: it is "
             f"not read, and its ops are priced by the roofline (list its family, or move the file out)")
    timed = folder.engine
    # a profile named for this engine (cost.profile, or the hardware's `profiles` under the engine's
    # own key) that times another's kernels is a slip; the `default` entry is the fallback meant
    # for engines the GPU has no profile of (the header's `priced by` names it)
    if (c.profile is not None or engine.name in hardware.profiles) and timed is not None and timed != engine.name:
        warn(*at, f"profile {path.name!r} times {timed}'s kernels, and the scenario serves with "
             f"{engine.name} (engine.kind): the ops are priced as {timed} runs them")
    overridden = _rate_overrides(s, hardware)
    if overridden:
        warn(*written_at(s.hardware, "hardware", overridden[0], where), f"profile {path.name!r} prices the ops it "
             f"measured on {device}, so a rate changed here moves only the rest; give the hardware a name of its "
             "own (it then runs on the roofline) or set cost.model: roofline to price everything with the rates")
    return "calibrated", str(path)


# the hardware fields a profile's measured op times stand in for
RATE_FIELDS = ("peak_flops", "memory_bandwidth_bytes_per_s", "efficiency_flops", "efficiency_bandwidth",
               "launch_overhead_s", "graph_launch_overhead_s",
               "link_bandwidth_bytes_per_s", "link_latency_s")  # the measured collectives stand in for the link


def written_at(ref: object, kind: str, key: str, where: str) -> tuple[str, str]:
    """(file, dotted key) where a model's or hardware's `key` is written (`ref`: the scenario's
    model or hardware): the scenario's inline mapping when it gives the key, else the user's own
    file (a path, or an MTPSIM_CATALOG entry, named directly or as the mapping's `from`); else
    the scenario's key."""
    section = {"models": "model", "hardware": "hardware"}[kind]
    if isinstance(ref, dict):
        if key.split(".")[0] in ref:
            return where, f"{section}.{key}"
        ref = ref.get("from")
    if isinstance(ref, str) and users_file(ref, kind):
        return str(Path(ref).expanduser() if catalog_lookup.is_path(ref) else catalog_lookup.find(kind, ref)), key
    return where, f"{section}.{key}"


def _names_profiles(s: Scenario) -> bool:
    """Whether the scenario itself says which profiles price its hardware: an inline mapping with
    `profiles`, or a hardware file of its own (a path, not a catalog name: every profile it names
    is the user's), directly or as an inline mapping's `from` (whose file's `profiles` were dropped
    without a word where the path alone was refused)."""
    ref = s.hardware
    if isinstance(ref, dict):
        if "profiles" in ref:
            return True
        ref = ref.get("from")
        if not isinstance(ref, str):
            return False
        if catalog_lookup.is_path(ref):  # a file of the user's own under `from`: its profiles, if it writes any
            return "profiles" in load_yaml(Path(ref).expanduser())
    if catalog_lookup.is_path(ref):
        return True
    # a user catalog's entry that writes `profiles` itself (a renamed copy inherits them: roofline)
    return users_file(ref) and "profiles" in load_yaml(catalog_lookup.find("hardware", ref))


def users_file(ref: str, kind: str = "hardware") -> bool:
    """A file the user wrote: a path, or a name MTPSIM_CATALOG's folders hold (not the built-in
    catalog's): every profile a hardware file names is the user's choice."""
    if catalog_lookup.is_path(ref):
        return True
    path = catalog_lookup.find(kind, ref)
    return path is not None and not path.is_relative_to(data_dir())


def _rate_overrides(s: Scenario, hardware: HardwareSpec) -> list[str]:
    """The rate fields the scenario's hardware changes from the built-in entry whose profile
    prices it: an inline mapping's keys over its `from`, or a file of the user's own that keeps a
    built-in GPU's name with other rates."""
    if isinstance(s.hardware, dict):
        return [f for f in RATE_FIELDS if f in s.hardware] if "from" in s.hardware else []
    if not users_file(s.hardware):
        return []
    built_in = data_dir() / "hardware" / f"{hardware.name}.yaml"
    if not built_in.is_file():
        return []
    shipped = catalog.spec_file("hardware", str(built_in), HardwareSpec, str(built_in))
    return [f for f in RATE_FIELDS if getattr(shipped, f) != getattr(hardware, f)]
