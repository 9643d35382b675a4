"""`--backend ray`: the same summary as the process pool, errors as one line, Ray only on demand.

One local Ray instance (2 CPUs, no dashboard) serves the whole session; map_ray joins it."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml

from mtpsim import scenario as sc
from mtpsim.cli import main
from mtpsim.run import run_points
from tests.conftest import BASE, ROOT

ray = pytest.importorskip("ray")

TINY = {**BASE, "cost": {"model": "roofline"}, "workload": {**BASE["workload"], "output_len": 16}}


@pytest.fixture(scope="session")
def local_ray():
    from mtpsim.ray_backend import runtime_env
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env=runtime_env())
    yield
    ray.shutdown()


def _points(tmp_path, data):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return sc.load(path)


def test_ray_and_the_pool_give_the_same_summary(local_ray, tmp_path):
    data = {**TINY, "seeds": 2, "sweep": {"speculative.steps": [1, 2, 3], "workload.concurrency": [2, 4]}}
    points = _points(tmp_path, data)
    pool, pool_results = run_points(points, jobs=2, progress=False)
    on_ray, ray_results = run_points(points, jobs=2, progress=False, backend="ray")
    assert len(on_ray) == 6 * 2 + 2 * 2  # six points and two baselines, two seeds each
    pd.testing.assert_frame_equal(on_ray.drop(columns="sim_wall_s"), pool.drop(columns="sim_wall_s"))
    for a, b in zip(ray_results, pool_results):
        pd.testing.assert_frame_equal(a.requests, b.requests)


def test_progress_moves_once_per_finished_task(local_ray, tmp_path):
    from mtpsim.ray_backend import map_ray

    class Bar:
        count = 0

        def update(self, n=1):
            self.count += n

    points, bar = _points(tmp_path, {**TINY, "sweep": {"speculative.steps": [1, 2, 3]}}), Bar()
    results = map_ray(points, False, bar, None, None)
    assert bar.count == 3 and [r.summary.steps.iloc[0] for r in results] == [1, 2, 3]


def test_a_point_failing_on_ray_is_one_line(local_ray, write_scenario, tmp_path, capsys):
    """The second point (DeepSeek-V3 on 8 A100-80G) leaves no KV pool: its worker raises
    ScenarioError, which reaches the user as the same one line (exit 2) as in the pool."""
    data = {**TINY, "sweep": {"hardware": ["h200", "a100-80g"]}}
    code = main(["run", str(write_scenario(data)), "--backend", "ray", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("mtpsim: error: ") and "leave no KV pool" in err[-1]
    assert not any("Traceback" in line or "RayTaskError" in line for line in err)


def test_address_without_ray_backend_is_one_line(write_scenario, tmp_path, capsys):
    code = main(["run", str(write_scenario(TINY)), "--address", "localhost:6379", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["mtpsim: error: --address: names a Ray cluster: use it with --backend ray"]


def test_ray_backend_without_ray_says_how_to_get_it(write_scenario, tmp_path, capsys, monkeypatch):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    code = main(["run", str(write_scenario(TINY)), "--backend", "ray", "--out", str(tmp_path / "r")])
    assert code == 2 and "pip install 'mtpsim[ray]'" in capsys.readouterr().err


def test_the_simulator_and_the_pool_never_import_ray(write_scenario):
    code = ("import sys, mtpsim, mtpsim.cli, mtpsim.run; "
            f"points = mtpsim.load({str(write_scenario(TINY))!r}); "
            "mtpsim.run.run_points(points, jobs=1, progress=False); "
            "assert 'ray' not in sys.modules, 'ray imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_a_cluster_that_does_not_answer_is_one_line(write_scenario, tmp_path, capsys, monkeypatch):
    """ray.init's own errors for an --address where no cluster answers (ConnectionError) or that
    is not an address (ValueError) reach the user as one line naming --address."""
    def refuse(**kwargs):
        raise ConnectionError(f"Failed to connect to Ray cluster at {kwargs['address']}")

    from mtpsim import ray_backend
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # the session's local Ray aside
    monkeypatch.setattr(ray_backend, "probe", lambda address: None)  # the probe passes; ray.init refuses
    monkeypatch.setattr(ray, "init", refuse)
    code = main(["run", str(write_scenario(TINY)), "--backend", "ray", "--address", "10.0.0.1:6379",
                 "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("mtpsim: error: --address: no Ray cluster reached")


def test_an_address_that_never_answers_is_one_line_within_the_deadline(write_scenario, tmp_path, capsys, monkeypatch):
    """A port that accepts and then says nothing (ray.init would retry there for minutes, its C++
    core logging to stderr): one line naming --address once the probe's deadline passes."""
    import socket
    import time

    from mtpsim import ray_backend
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_backend, "PROBE_S", 4)
    with socket.create_server(("127.0.0.1", 0)) as silent:
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.perf_counter()
        code = main(["run", str(write_scenario(TINY)), "--backend", "ray", "--address", address,
                     "--out", str(tmp_path / "r")])
        took = time.perf_counter() - started
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"mtpsim: error: --address: no Ray cluster reached at "
                                                             f"'{address}'"), err
    assert took < 4 + 5
