"""`mtpsim run --backend ray`: a sweep's runs as Ray tasks, on this machine or a cluster.

Imported only when that backend is chosen: the simulator itself never needs Ray. Each run is
one `@ray.remote` task; `ray.wait` hands back the tasks as they finish, for the progress bar;
the results come back in submission order, so the summary is the one the process pool gives.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import ray
from ray.exceptions import RayTaskError

import mtpsim
from mtpsim.errors import ScenarioError, short
from mtpsim.sim import simulate

WAIT_S = 0.2  # the progress bar moves at least this often while tasks finish


@ray.remote
def _simulate(scenario, keep_passes: bool):
    return simulate(scenario, keep_passes=keep_passes)


def map_ray(tasks: list, keep_passes: bool, bar, address: str | None, jobs: int | None) -> list:
    """Simulate `tasks` (Scenarios) as Ray tasks; returns their Results in order. The first task
    to fail cancels the rest and its error is raised here as the worker raised it (a
    ScenarioError stays one; it pickles whole)."""
    started = connect(address, jobs)
    try:
        refs = [_simulate.remote(s, keep_passes) for s in tasks]
        order = {ref: i for i, ref in enumerate(refs)}
        out: list = [None] * len(refs)
        pending = refs
        while pending:
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=WAIT_S)
            for ref in done:
                out[order[ref]] = get_result(ref, pending)
                bar.update()
        return out
    finally:
        if started:
            ray.shutdown()


def get_result(ref, pending: list):
    try:
        return ray.get(ref)
    except RayTaskError as exc:
        for other in pending:
            ray.cancel(other)
        raise exc.cause from None


def runtime_env() -> dict:
    """What every worker gets: this process's mtpsim package (py_modules), so that each node, this
    machine's included, runs the simulator the driver runs whatever else it has installed (its
    other packages, simpy, pydantic and the rest, must be there: see README, Sweeps on Ray)."""
    return {"py_modules": [str(Path(mtpsim.__file__).parent)]}


def connect(address: str | None, jobs: int | None) -> bool:
    """Join a Ray instance: the one this process already has, else `address` (or RAY_ADDRESS),
    else a new local one with `jobs` CPUs. Returns whether this call connected (and so should
    disconnect)."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS")
    quiet = {"logging_level": "ERROR", "log_to_driver": False}
    if address:
        where = "--address" if os.environ.get("RAY_ADDRESS") != address else "RAY_ADDRESS"
        problem = probe(address)
        if problem:
            raise ScenarioError(where, "", f"no Ray cluster reached at {address!r}: {problem}")
        try:
            with _sigterm_kept():
                ray.init(address=address, runtime_env=runtime_env(), **quiet)
        except (ConnectionError, ValueError) as exc:  # nothing listening there; not an address at all
            raise ScenarioError(where, "", f"no Ray cluster reached at {address!r}: {exc}") from None
    else:
        with _sigterm_kept():
            ray.init(address="local", num_cpus=jobs, include_dashboard=False, runtime_env=runtime_env(), **quiet)
    return True


@contextlib.contextmanager
def _sigterm_kept():
    """ray.init installs its C++ core's handler for SIGTERM, which prints a native stack dump and
    exits 1: a `kill` of a sweep on Ray then skipped mtpsim's stop (`mtpsim: interrupted`, status
    143, the run folder given back). The handler in place before (the CLI's, interrupts.on_sigterm,
    or a notebook's own) is put back."""
    kept = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        yield
    finally:
        if kept is not None:
            signal.signal(signal.SIGTERM, kept)


PROBE_S = 20  # how long a cluster may take to answer before `--address` is called unreachable
CONNECT_S = 5  # how long its host:port may take to accept a connection at all
_PROBE = ("import sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
          "ray.shutdown()")


def unreachable(address: str) -> str | None:
    """Why nothing accepts a connection at `address` (host:port or ray://host:port), within
    CONNECT_S seconds, or None when something does (or the address has another form, left to
    Ray). A host that does not resolve, refuses or drops the connection is told at once, not
    after Ray's retries."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
    except TimeoutError:
        return f"{host}:{port} accepted no connection within {CONNECT_S} s"
    except OSError as exc:
        return f"cannot connect to {host}:{port}: {exc.strerror or exc}"
    return None


def probe(address: str) -> str | None:
    """Why no Ray cluster answers at `address`, or None when one does. Asked in a child process
    with a deadline: ray.init on an address where nothing answers retries for minutes and writes
    its C++ core's warnings to stderr, and neither can be stopped from inside this process."""
    if address in ("auto", "local"):
        return None
    problem = unreachable(address)
    if problem:
        return problem
    env = {**os.environ, "RAY_gcs_rpc_server_reconnect_timeout_s": str(PROBE_S // 2)}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, address], capture_output=True, text=True,
                              timeout=PROBE_S, env=env)
    except subprocess.TimeoutExpired:
        return f"nothing answered within {PROBE_S} s"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if "Error" in line] or done.stderr.splitlines() or ["no answer"]
    return short(lines[-1].strip(), 160)[1:-1]
