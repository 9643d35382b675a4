"""Shared fixtures: small scenario files written into tmp_path."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# property tests check answers, not speed: hypothesis's default 200 ms deadline per example fails
# on a loaded 2-core CI machine (speed lives in benchmarks/)
settings.register_profile("mtpsim", deadline=None)
settings.load_profile("mtpsim")

BASE = {
    "name": "t",
    "model": "deepseek-v3",
    "hardware": "h200",
    "parallel": {"tp": 8},
    "speculative": {"design": "nextn", "steps": 3},
    "acceptance": {"per_depth": [0.9, 0.8, 0.7]},
    "workload": {"arrival": "batch", "concurrency": 4, "num_requests": 4, "input_len": 256, "output_len": 32},
}


@pytest.fixture
def write_scenario(tmp_path):
    """write_scenario(dict | str) -> path of a scenario file in tmp_path."""
    def write(content, name="s.yaml") -> Path:
        path = tmp_path / name
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        path.write_text(textwrap.dedent(text))
        return path
    return write



def pytest_configure(config):
    """Parsed profiles go to a cache of this session's own (costs/profile_cache.py), never the
    user's: a test run neither reads entries another run wrote nor leaves any behind."""
    import os
    import tempfile
    config._mtpsim_cache = tempfile.mkdtemp(prefix="mtpsim-test-cache-")
    os.environ["MTPSIM_CACHE_DIR"] = config._mtpsim_cache


@pytest.fixture(autouse=True)
def _close_figures():
    """Figures a test made (the plot functions return theirs for notebooks) are closed after it,
    so a worker running many plot tests does not accumulate them. pyplot is not imported here
    for tests that never load it."""
    yield
    import sys
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def pytest_unconfigure(config):
    import shutil
    shutil.rmtree(getattr(config, "_mtpsim_cache", ""), ignore_errors=True)
