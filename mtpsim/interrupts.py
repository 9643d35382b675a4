"""A stop the user asked for (SIGTERM: `timeout`, `kill`, a CI cancel), kept beyond the one
KeyboardInterrupt that carries it, and what a stop does to worker processes. `terminated` turns
SIGTERM into a KeyboardInterrupt raised wherever the main thread is; code that swallows
exceptions there (a C extension's attribute probe, a finalizer) would drop it, and the run would
go on to the end and exit 0 with its folder written. Seen in CI: a SIGTERM that landed while
`np.random` was first resolved (numpy imports numpy.random lazily; the signal came during its
Cython modules' init, `abc.register`) lost its KeyboardInterrupt, and the run went on to exit 0.
So the request is also kept here, and the loops that take long check it: the simulator at every
finished request (sim/engine.py), a run folder before it is marked done (runfolder.py). Ctrl-C
raises the same KeyboardInterrupt but is not kept: an interactive user presses it again.
"""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

_requested = False


def on_sigterm() -> None:
    """Take SIGTERM as a stop (the command's own process: cli.py), unblocked: a parent may have
    blocked it (the mask survives exec), and `timeout` or a CI cancel would then wait for the
    whole run and find the claimed folder left behind."""
    signal.signal(signal.SIGTERM, terminated)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def terminated(signum, frame) -> None:
    """SIGTERM as KeyboardInterrupt: the same cleanup runs (a run folder's claim, a half-written
    profile or search cache entry are removed) and status 130; the request is kept too, raised
    again where long loops check should this one be swallowed."""
    global _requested
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second kill must not cut the cleanup short
    _requested = True
    raise KeyboardInterrupt


def check() -> None:
    """Raise KeyboardInterrupt if a stop was asked for: the same cleanup as Ctrl-C runs."""
    if _requested:
        raise KeyboardInterrupt


@contextmanager
def running(pool) -> Iterator:
    """A process pool for the length of a map: shut down when it ends, its tasks waited for when
    they all came back, ended at once (stop_workers) when the map stops or fails first (a failed
    point, Ctrl-C, SIGTERM, a caller that stopped reading a generator's results)."""
    try:
        yield pool
    except BaseException:
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def stop_workers(pool) -> None:
    """End a process pool's workers now, mid-task: what a stopped or failed map has no use for
    (a sweep's point of minutes kept `kill` waiting for it to finish, 17 s on a point of 12). Python
    3.14's executor does it itself (terminate_workers); before it, the pool's own worker processes
    are terminated."""
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
