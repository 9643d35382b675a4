"""Progress in a log: silent for a short job, a plain line now and then for a long one
(sim/progress.py), so a search left running in a log never stays silent for minutes."""
from __future__ import annotations

import io

from mtpsim.sim import progress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_heartbeat_only_once_a_job_runs_long(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    bar = progress.progress_bar(100, None, desc="searching", unit="point", file=io.StringIO())  # no terminal
    assert isinstance(bar, progress.Heartbeat) and bar.disable
    for _ in range(10):  # the first minute: nothing, as a terminal's cleared bar leaves nothing
        clock.now += 5
        bar.update()
    assert capsys.readouterr().err == ""
    clock.now += 15
    bar.update()
    clock.now += 30
    bar.update()  # within a minute of the last line: nothing more
    assert capsys.readouterr().err == "searching: 11 of 100 points done after 1.1 min\n"
    clock.now += 31
    bar.update(88)  # the job is done: the report follows, not a progress line
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_bar_and_off_means_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    bar = progress.progress_bar(3, None, desc="x", file=Tty())
    assert not isinstance(bar, progress.NoBar) and not bar.disable
    bar.close()
    assert type(progress.progress_bar(3, True)) is progress.NoBar
