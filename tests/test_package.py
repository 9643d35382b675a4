"""The package as a user gets it: a wheel built from this tree, installed into a fresh venv (its
dependencies borrowed from the project venv, so no network), run from an empty folder by catalog
names alone. Catches data that is read from beside the source tree instead of from the package."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import BASE, ROOT

pytestmark = pytest.mark.slow

SKIP = shutil.ignore_patterns(".git", ".venv", "build", "dist", "runs", "*.egg-info", "__pycache__",
                              ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", "notebooks")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """A venv holding only the wheel; the project venv's site-packages supplies the dependencies."""
    tmp = tmp_path_factory.mktemp("package")
    src = shutil.copytree(ROOT, tmp / "src", ignore=SKIP)  # a clean tree: no stale build/ in the wheel
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", tmp / "dist", src])
    wheel = next((tmp / "dist").glob("mtpsim-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel])
    env = {k: v for k, v in os.environ.items() if k not in ("MTPSIM_CATALOG", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]  # dependencies only: .pth files there are not run
    return {"wheel": wheel, "python": python, "mtpsim": venv / "bin" / "mtpsim", "env": env,
            "cwd": tmp_path_factory.mktemp("elsewhere")}


def test_wheel_ships_the_catalogs_profiles_and_floors(installed):
    files = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for name in ("mtpsim/data/models/deepseek-v3.yaml", "mtpsim/data/hardware/h200.yaml",
                 "mtpsim/data/engines/sglang.yaml", "mtpsim/data/latency_floors.yaml",
                 "mtpsim/data/profiles/h200-sglang/meta.yaml", "mtpsim/data/profiles/h200-sglang/gemm.csv.gz",
                 "mtpsim/data/profiles/cpu/gemm.csv", "mtpsim/data/profiles/cpu/holdout/gemm.csv"):
        assert name in files


def test_installed_package_runs_a_scenario_by_name_from_another_folder(installed):
    cwd, env = installed["cwd"], installed["env"]
    where = _run([installed["python"], "-c", "import sys, mtpsim; assert 'torch' not in sys.modules; "
                  "print(mtpsim.__file__); print(mtpsim.__version__)"], cwd=cwd, env=env).stdout.split()
    assert Path(where[0]).is_relative_to(installed["python"].parent.parent) and where[1][0].isdigit()
    scenario = {**BASE, "name": "installed", "workload": {**BASE["workload"], "output_len": 16}}
    (cwd / "s.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    done = _run([installed["mtpsim"], "run", "s.yaml", "--out", "run", "--jobs", "1"], cwd=cwd, env=env)
    assert "calibrated:h200-sglang" in done.stdout and (cwd / "run" / "summary.csv").is_file()
    listing = _run([installed["mtpsim"], "models"], cwd=cwd, env=env).stdout
    assert "deepseek-v3" in listing and "mimo-v2-flash" in listing
    assert "h200-sglang" in _run([installed["mtpsim"], "hardware"], cwd=cwd, env=env).stdout
