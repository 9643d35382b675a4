"""Progress that costs nothing when off. On a terminal: a tqdm bar (~0.02 s to import, loaded
only for a bar that may show). In a log or a pipe, where a bar's carriage returns are noise: a
`Heartbeat`, silent for a short job, a plain line now and then for a long one, so that a search
or sweep left running in a log never stays silent for minutes. `disable` as tqdm takes it: True
never shows, None shows on a terminal only (and a heartbeat elsewhere)."""
from __future__ import annotations

import sys
import time


class NoBar:
    """What a bar that never shows is asked: update, close, and its total and disable."""

    disable = True

    def __init__(self, total: int = 0):
        self.total = total

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


LONG_JOB = 1000  # items (points, runs) a Heartbeat counts up front: minutes of work at a fraction of a second each


class Heartbeat(NoBar):
    """A bar for a log: nothing during the first `first_s` seconds (a short job prints nothing
    more than it would on a terminal), then at most one stderr line every `every_s`:
    `searching: 1,234 of 5,620 points done after 2.0 min, about 7.1 min left at this rate`. A job
    of LONG_JOB items or more to run says so as it starts, so a log shows at once what it waits
    on. `disable` stays True: it is not a bar."""

    def __init__(self, total: int = 0, desc: str = "", unit: str = "it", initial: int = 0, first_s: float = 60.0,
                 every_s: float = 60.0, **_):
        super().__init__(total)
        self.desc, self.unit, self.n, self.initial, self.every_s = desc or "progress", unit, initial, initial, every_s
        self.started = time.monotonic()
        self.next_at = self.started + first_s
        if total - initial >= LONG_JOB:
            print(f"{self.desc}: {total - initial:,} {self.unit}s to run (a line each minute says how far, and "
                  "how long the rest takes)", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now >= self.next_at and self.n < self.total:
            self.next_at = now + self.every_s
            print(f"{self.desc}: {self.n:,} of {self.total:,} {self.unit}s done after "
                  f"{(now - self.started) / 60:.1f} min{self.left(now)}", file=sys.stderr, flush=True)

    def left(self, now: float) -> str:
        """`, about 2.7 h left at this rate`: the time the rest takes at the rate since the start
        (the points done before it, a cache's, cost nothing), or nothing before any is done."""
        done = self.n - self.initial
        if done <= 0:
            return ""
        rest = (self.total - self.n) * (now - self.started) / done
        return f", about {rest / 3600:.1f} h left at this rate" if rest >= 5400 else \
            f", about {max(rest / 60, 0.1):.1f} min left at this rate"


def progress_bar(total: int, disable: bool | None, **kwargs):
    """tqdm(total=total, disable=disable, **kwargs), a Heartbeat where `disable` is None and stderr
    is no terminal, or a NoBar when `disable` is True."""
    if disable is True:
        return NoBar(total)
    if disable is None and not on_terminal(kwargs.get("file", sys.stderr)):
        return Heartbeat(total, **kwargs)
    from tqdm import tqdm
    return tqdm(total=total, disable=disable, **kwargs)


def on_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
