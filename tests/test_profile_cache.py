"""The disk cache of parsed profiles (costs/profile_cache.py): a hit is the profile as parsed,
and a changed file, a damaged entry or a cache turned off each parse the profile again."""
from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest

from mtpsim.catalog import load_hardware, load_model
from mtpsim.costs import profile_cache
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.profile import PROFILES_DIR

CPU = load_hardware("cpu")


@pytest.fixture
def profile(tmp_path, monkeypatch):
    monkeypatch.setenv(profile_cache.CACHE_ENV, str(tmp_path / "cache"))
    folder = tmp_path / "cpu"
    shutil.copytree(PROFILES_DIR / "cpu", folder)
    return folder


def _load(folder, calls):
    def load():
        calls.append(1)
        return CalibratedCosts.from_profile(folder, CPU)
    return profile_cache.cached(folder, ("cpu",), load, CalibratedCosts)


def _price(costs) -> tuple:
    shape = PassShape("verify", "target", 4, 4)
    return tuple(Pricer.of(load_model("deepseek-v3"), CPU, costs).price(shape, np.full(3, 4), np.array([90, 500, 7]))[:12])


def test_a_hit_prices_as_the_parsed_profile(profile):
    calls = []
    first, second = _load(profile, calls), _load(profile, calls)
    assert len(calls) == 1 and second is not first
    assert _price(second) == _price(first)


def test_a_changed_file_or_a_damaged_entry_parses_again(profile):
    calls = []
    _load(profile, calls)
    meta = profile / "meta.yaml"
    meta.write_text(meta.read_text() + "\n# edited\n")
    _load(profile, calls)
    assert len(calls) == 2
    for entry in (profile.parent / "cache").glob("profile-*.pickle"):
        entry.write_bytes(entry.read_bytes()[:100])
    _load(profile, calls)
    assert len(calls) == 3 and _load(profile, calls) is not None and len(calls) == 3  # rewritten whole
    for entry in (profile.parent / "cache").glob("profile-*.pickle"):
        entry.write_bytes(pickle.dumps({"a": 1}))  # a whole pickle of something else (was an AttributeError)
    assert isinstance(_load(profile, calls), CalibratedCosts) and len(calls) == 4


def test_off_parses_every_time(profile, monkeypatch):
    monkeypatch.setenv(profile_cache.CACHE_ENV, "off")
    calls = []
    _load(profile, calls), _load(profile, calls)
    assert len(calls) == 2 and not (profile.parent / "cache").exists()
