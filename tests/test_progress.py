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
    # 11 points in 65 s: the other 89 at that rate
    assert capsys.readouterr().err == "searching: 11 of 100 points done after 1.1 min, about 8.8 min left at this rate\n"
    clock.now += 31
    bar.update(88)  # the job is done: the report follows, not a progress line
    assert capsys.readouterr().err == ""


def test_the_heartbeat_says_what_is_left_from_the_points_run_now_not_those_a_cache_held(monkeypatch, capsys):
    """A search of 4,780 points said only how many were done after a minute: the user had to work
    out that the rest was ~2.7 hours. The rate counts the points run since the start: 1,000 a
    cache held cost nothing and would make the rest look five times faster."""
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    bar = progress.progress_bar(4780, None, desc="searching", unit="point", initial=1000, file=io.StringIO())
    assert capsys.readouterr().err == ("searching: 3,780 points to run (a line each minute says how far, and how "
                                       "long the rest takes)\n")  # a long job says so as it starts
    clock.now += 60
    bar.update(29)
    # 29 points a minute: the other 3,751 take 129 min
    assert capsys.readouterr().err == ("searching: 1,029 of 4,780 points done after 1.0 min, about 2.2 h left at "
                                       "this rate\n")


def test_a_terminal_gets_a_bar_and_off_means_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    bar = progress.progress_bar(3, None, desc="x", file=Tty())
    assert not isinstance(bar, progress.NoBar) and not bar.disable
    bar.close()
    assert type(progress.progress_bar(3, True)) is progress.NoBar
