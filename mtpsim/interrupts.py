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
    profile or search cache entry are removed) and status 143; the request is kept too, raised
    again where long loops check should this one be swallowed."""
    global _requested
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second kill must not cut the cleanup short
    _requested = True
    raise KeyboardInterrupt


def exit_status() -> int:
    """A stopped command's status, as a shell reports a signal's: 128 + 15 after SIGTERM, 128 + 2
    (Ctrl-C) otherwise."""
    return 128 + (signal.SIGTERM if _requested else signal.SIGINT)


def check() -> None:
    """Raise KeyboardInterrupt if a stop was asked for: the same cleanup as Ctrl-C runs."""
    if _requested:
        raise KeyboardInterrupt


def worker_pool(jobs: int, initializer=None, initargs: tuple = ()):
    """A process pool whose workers leave a stop to the parent: a terminal's Ctrl-C reaches the
    whole process group, and each worker printed its own KeyboardInterrupt traceback (37-131
    lines before `mtpsim: interrupted`). Workers ignore SIGINT and die quietly on SIGTERM (the
    parent's handler, inherited through fork, would raise in them); the parent, in `running`,
    ends them (stop_workers). `initializer(*initargs)` runs after, in each worker."""
    from concurrent.futures import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=jobs, initializer=_quiet_worker, initargs=(initializer, initargs))


def _quiet_worker(initializer, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)


POLL_S = 0.2  # how long a stop may wait while the main thread waits for a worker's point


def first_finished(futures) -> tuple[set, set]:
    """`concurrent.futures.wait(futures, return_when=FIRST_COMPLETED)`, woken every POLL_S. A wait
    with no deadline blocks the main thread in a lock the kernel never interrupts when Ctrl-C's
    SIGINT is handed to another of the process's threads (the pool's manager or queue thread, a
    progress bar's monitor: Linux gives a process-wide signal to any thread that does not block
    it). Python runs its handler only in the main thread, so the KeyboardInterrupt waited for the
    point to finish: minutes, in CI, of a sweep that was told to stop. Each wake-up lets it raise."""
    from concurrent.futures import FIRST_COMPLETED, wait
    while True:
        done, pending = wait(futures, timeout=POLL_S, return_when=FIRST_COMPLETED)
        if done:
            return done, pending


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
    import multiprocessing
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
    # a worker the pool was starting when the stop came (forked, not yet in its table) is ended too:
    # else the pool's shutdown waits for it to finish its point, minutes after the stop
    for process in multiprocessing.active_children():
        process.terminate()
