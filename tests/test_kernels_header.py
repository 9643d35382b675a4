"""Headers name the release whose kernels priced the ops (schema.py Specs.priced_by): op times are
the converted profile's release whatever engine.version a scenario names, and a check of new
published cases (2026-12-07) found a 2025 release's absolute times 2-3x off with nothing in the
output saying so."""
from __future__ import annotations

from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim import scenario as sc
from mtpsim.costs.profile_meta import kernels_release

QUICKSTART = str(Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.yaml")


@pytest.mark.parametrize("argv, said", [
    (["cost", QUICKSTART, "--batch", "4"], "priced by calibrated:h200-sglang (sglang 0.5.14's kernels)"),
    (["cost", QUICKSTART, "--batch", "4", "--set", "engine.version=0.4.4"],
     "engine sglang 0.4.4, priced by calibrated:h200-sglang (sglang 0.5.14's kernels)"),
    (["cost", QUICKSTART, "--batch", "4", "--set", "cost.model=roofline"], "priced by roofline\n"),
])
def test_the_header_names_the_kernels_release(capsys, argv, said):
    assert cli.main(argv) == 0
    assert said in capsys.readouterr().out


def test_a_profile_calibrated_here_names_no_release():
    """mtpsim's own torch timings (the cpu profile) time no engine's kernels."""
    point = sc.load(QUICKSTART, ["hardware=cpu", "cost.profile=cpu", "parallel.tp=1", "model=llama-3.1-8b",
                                 "speculative.design=none", "acceptance=null"])[0]
    assert point.specs.priced_by == point.specs.pricing == "calibrated:cpu"


def test_the_release_comes_from_the_converted_source():
    assert kernels_release({"engine": "vllm", "source": {"framework_version": "0.24.0"}}) == "vllm 0.24.0"
    assert kernels_release({"engine": "vllm", "source": {}}) is None
    assert kernels_release({"source": {"framework_version": "0.24.0"}}) is None
