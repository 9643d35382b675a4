"""Writing outputs: a file (or folder) mtpsim writes that cannot be written (a full disk, a
read-only folder, a path through a file) is one ScenarioError naming it and the reason, and
what was written of it is removed, so nothing half-written is later read as whole. Every file
mtpsim writes goes through `writing`; a run folder's completion marker (runfolder.py) is the
last of them.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mtpsim.errors import ScenarioError
from mtpsim.textfiles import blocked_by


@contextmanager
def writing(path: str | Path) -> Iterator[Path]:
    """Around the writing of one output file (or folder): an OSError (no space left, a read-only
    folder, a path through a file) becomes one ScenarioError naming the path and the reason. An
    output path that is a symbolic link is refused before anything is written: writing through it
    would overwrite what it points to (a file of the user's, or the run's own input)."""
    if Path(path).is_symlink():
        raise ScenarioError(str(path), "", "is a symbolic link: no output is written through a link, which would "
                            "overwrite what it points to; remove the link")
    try:
        yield Path(path)
    except OSError as exc:
        if Path(path).is_file():  # what was written of it is cut off: not left to be read as whole
            Path(path).unlink(missing_ok=True)
        raise ScenarioError(str(path), "", f"cannot write: {exc.strerror or exc}") from None


NAMELESS = "names no folder of its own (the current folder, its parent or the root): give one, e.g. --out ./my-profile"


def is_nameless(out: Path) -> bool:
    """Whether `out` names no folder staged() can write beside and rename (., .., /): NAMELESS says so."""
    return out.name in ("", ".", "..")


def is_fresh(out: Path) -> bool:
    """Whether `out` can take a new output folder: it does not exist, or is an empty folder (as
    good as none). calibrate and calibrate --from aiconfigurator both ask it first."""
    return not out.exists() or (out.is_dir() and not any(out.iterdir()))


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A folder written whole or not at all (a profile): the body writes into `<out>.partial`,
    created here exclusively (so a folder of that name we did not make is left alone); on any
    exception, Ctrl-C included, it is removed; on success it replaces `out` (the caller has
    checked that `out` may be replaced) by one rename, once what the body printed (its `wrote`
    line) has reached stdout: a stdout it cannot write (a full device) fails the command before
    anything is replaced."""
    out = Path(placed(str(out)))
    tmp = out.with_name(out.name + ".partial")
    made = missing_above(tmp)
    try:
        tmp.mkdir(parents=True)
    except OSError as exc:  # named as the user gave it (the .partial beside it is ours), with what blocks it
        blocked = blocked_by(out)  # a link to nothing on the way raises FileExistsError too
        if blocked is not None:
            raise ScenarioError(str(out), "", f"cannot create: {blocked}") from None
        if isinstance(exc, FileExistsError):
            raise ScenarioError(str(tmp), "", "exists (another command writing there, or one that was stopped); "
                                "remove it yourself if it is stale") from None
        raise ScenarioError(str(out), "", f"cannot create: {exc.strerror or exc}") from None
    try:
        yield tmp
        sys.stdout.flush()
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # the half-written folder we created
        remove_empty(made)
        raise


def placed(out: str) -> str:
    """`out` as the folder a command writes will really be: each `..` after a folder that does not
    exist yet taken off with that folder (`nothere/../b` is `b`, which `mkdir -p` reaches once it
    has made `nothere`; every check before then read `nothere/../b` as absent, and a run claimed
    the user's own `b`, wrote over its files, or removed it when stopped). A `..` after a folder
    or link that exists is left to the system, as it resolves it."""
    path = Path(out)
    at = Path(path.parts[0]) if path.is_absolute() else Path()
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        if part == ".." and at.name not in ("", "..") and not os.path.lexists(at):
            at = at.parent
        else:
            at = at / part
    return str(at)


def missing_above(path: Path) -> list[Path]:
    """The folders a `mkdir(parents=True)` of `path` would make above it, deepest first: its
    parts walked from the root as the system resolves them (`a/..` is where `a` is, so `b` in
    `a/../b` is looked for beside `a`, not under it), a folder that already exists never among
    them. A link on the way (where `..` would leave the link's target) stops the walk: nothing
    is listed, so nothing the user had is ever removed as one of the command's own."""
    parts = Path(path).absolute().parts
    at, made = Path(parts[0]), []
    for part in parts[1:-1]:
        if part == "..":
            if at.is_symlink():
                return []
            at = at.parent
        elif part != ".":
            at = at / part
            if at.is_symlink():
                return []
            if not at.exists() and at not in made:
                made.append(at)
    return made[::-1]


def remove_empty(folders: list[Path]) -> None:
    """Remove `folders` (deepest first: missing_above's), which a command made for an output it
    then gave back, while nothing else is in them: a stopped command leaves no empty tree behind."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # something else is there now, or it is gone: what is above it stays too
            break
