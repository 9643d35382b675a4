"""Progress bars that cost nothing when off: tqdm (~0.02 s to import) loads only for a bar that
may show. `disable` as tqdm takes it: True never shows, None shows on a terminal only."""
from __future__ import annotations


class NoBar:
    """What a bar that never shows is asked: update, close, and its total and disable."""

    disable = True

    def __init__(self, total: int = 0):
        self.total = total

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, disable: bool | None, **kwargs):
    """tqdm(total=total, disable=disable, **kwargs), or a NoBar when `disable` is True."""
    if disable is True:
        return NoBar(total)
    from tqdm import tqdm
    return tqdm(total=total, disable=disable, **kwargs)
