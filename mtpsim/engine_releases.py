"""Engine releases: an engine file (mtpsim/data/engines/<kind>.yaml) holds the engine's fields as
they are at every release it knows (engines.py `EngineSpec`), plus
- `versions`: the releases it knows (`known`) and the one a scenario without `engine.version`
  runs (`default`);
- `rules`: fields that differ between releases, each a named change over a version range
  (`since` inclusive, `until` exclusive) with its source at that version.

A rule applies to every scenario of its versions, never to one case; `engine.ignore_rules`
resolves without some (what-if studies, benchmarks/published.py --rules). This module is the one
home of that resolution: `run`, `recommend`, `cost` and the benchmarks all get their engine here
through resolve.py.
"""
from __future__ import annotations

from typing import Any, Literal

from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError

from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, short, warn
from mtpsim.specs import Spec

RuleField = Literal["speculative_max_running_requests", "speculative_overlap", "verify_scorer",
                    "fuses_shared_experts", "shared_fusion_below_capability", "shared_expert_stream",
                    "fraction_by_tp", "unoverlapped_designs", "speculative_overlap_max_topk", "decode_overlap",
                    "speculative_host_extra_s", "eager_passes"]


class VersionRule(Spec):
    """One field's value over a range of releases, with the source that shows it there."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    field: RuleField
    value: Any
    since: str | None = None  # the first release it holds for
    until: str | None = None  # the first release it no longer holds for
    source: str = Field(min_length=1)

    def holds_at(self, version: Version) -> bool:
        return (self.since is None or version >= release(self.since)) and \
            (self.until is None or version < release(self.until))


class Versions(Spec):
    default: str
    known: list[str] = Field(min_length=1)


def release(text: str) -> Version:
    """A release's comparable form: 0.5.12.post1 and 1.3.0rc20 compare as 0.5.12 and 1.3.0 (the
    rules name releases; a post or candidate build runs its release's code paths)."""
    return Version(Version(text).base_version)


def resolve_engine(raw: dict, version: str | None, ignore: list[str] | tuple[str, ...] = (),
                   where: str = "<scenario>") -> EngineSpec:
    """The engine file `raw` at `version` (None: its default), without the rules in `ignore`.
    An unknown version or rule name is a ScenarioError naming engine.version / engine.ignore_rules."""
    raw = dict(raw)
    versions, rules = _versions(raw.pop("versions", None), raw), _rules(raw.pop("rules", ()), raw)
    chosen = version or versions.default
    at = _known(chosen, versions, raw.get("name", "?"), where)
    unknown = sorted(set(ignore) - {r.name for r in rules})
    if unknown:
        raise ScenarioError(where, "engine.ignore_rules", f"no rule {short(unknown[0])} for {raw.get('name')} "
                            f"(its rules: {', '.join(r.name for r in rules) or 'none'})")
    idle = [r.name for r in rules if r.name in ignore and not r.holds_at(at)]
    if idle or len(set(ignore)) < len(ignore):  # leaving out what is not in force changes nothing
        twice = next((n for n in ignore if list(ignore).count(n) > 1), None)
        warn(where, "engine.ignore_rules", f"{short(twice)} is listed twice" if twice else
             f"rule {idle[0]} does not hold at {raw.get('name')} {chosen}: leaving it out changes nothing")
    applied = [r for r in rules if r.holds_at(at) and r.name not in ignore]
    fields = {**raw, **{r.field: r.value for r in applied}, "version": chosen, "rules": tuple(r.name for r in applied)}
    try:
        return EngineSpec.model_validate(fields)
    except ValidationError as exc:
        raise ScenarioError(f"engines/{raw.get('name')}.yaml", "rules", f"a rule sets an invalid value: "
                            f"{exc.errors()[0]['msg']}") from None


def engine_rules(raw: dict) -> list[VersionRule]:
    """The rules of an engine file (for listings and the leave-one-rule-out benchmark)."""
    return _rules(raw.get("rules", ()), raw)


def known_versions(raw: dict) -> Versions:
    return _versions(raw.get("versions"), raw)


def _known(chosen: str, versions: Versions, name: str, where: str) -> Version:
    """`chosen` as a comparable release, when the engine file knows it."""
    try:
        at = release(chosen)
    except InvalidVersion:
        at = None
    # written out to its last part: "0.5" names the 0.5 series, not its first release 0.5.0, though
    # the two compare equal
    if at is None or at.release not in {release(v).release for v in versions.known}:
        raise ScenarioError(where, "engine.version", f"unknown {name} version {short(chosen)} "
                            f"(known: {', '.join(versions.known)})")
    return at


def _versions(data, raw: dict) -> Versions:
    if data is None:
        raise ScenarioError(f"engines/{raw.get('name')}.yaml", "versions", "an engine file needs versions: {default, known}")
    try:
        versions = Versions.model_validate(data)
        for v in [versions.default, *versions.known]:
            release(v)
    except (ValidationError, InvalidVersion) as exc:
        raise ScenarioError(f"engines/{raw.get('name')}.yaml", "versions", str(exc).splitlines()[0]) from None
    if release(versions.default) not in {release(v) for v in versions.known}:
        raise ScenarioError(f"engines/{raw.get('name')}.yaml", "versions.default", "is not among versions.known")
    return versions


def _rules(data, raw: dict) -> list[VersionRule]:
    try:
        rules = [VersionRule.model_validate(r) for r in data]
        for r in rules:
            for v in (r.since, r.until):
                if v is not None:
                    release(v)
    except (ValidationError, InvalidVersion, TypeError) as exc:
        raise ScenarioError(f"engines/{raw.get('name')}.yaml", "rules", str(exc).splitlines()[0]) from None
    return rules


__all__ = ["VersionRule", "Versions", "engine_rules", "known_versions", "release", "resolve_engine"]
