"""Parsed profiles kept on disk between processes: a `mtpsim run` reads the profile it ran
before from one pickle (~10 ms) instead of parsing and validating its CSVs again (~0.15-0.3 s).

An entry is keyed by the bytes of every file the profile is read from, the hardware and engine
specs it was built for, and the source of the mtpsim package (any code change makes a new key),
so an entry is only ever read back by the code that wrote it, for the files it was read from.
The folder is `$MTPSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/mtpsim`, else `~/.cache/mtpsim`;
MTPSIM_CACHE_DIR=off turns it off. A cache that cannot be read or written is no error: the
profile is parsed as without one. Entries are pickles, which run code when read: a folder
(or an entry) that another user could write is not used, with one warning. At most
MAX_ENTRIES entries are kept (the oldest go first); the folder may be shared with the user's own
files, so only names the cache writes (ENTRY_NAME) are ever counted or deleted.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

CACHE_ENV = "MTPSIM_CACHE_DIR"
MAX_ENTRIES = 8
# an entry's exact name: what `cached` writes, and all that `_prune` may delete
ENTRY_NAME = re.compile(r"profile-[0-9a-f]{32}\.pickle")
PACKAGE = Path(__file__).resolve().parent.parent

T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where entries live; None when the cache is off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        # `~` as a shell would expand it (a quoted or env-file value keeps it): never a folder named `~` here
        return None if chosen.strip().lower() in ("", "off", "0", "none") else Path(chosen).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "mtpsim"


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """The mtpsim source this process runs: what a pickled cost model's classes are."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(PACKAGE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def entry_key(profile: Path, *parts: str) -> str:
    """Each file the profile may be read from (profile.py `profile_files`) by name and content,
    then `parts` (the specs' JSON). Read in chunks, and only files the readers would take: one
    over their MAX_FILE_BYTES raises OSError (no entry; the loader refuses it if it reads it), so
    the key costs no more memory than reading the profile."""
    from mtpsim.costs.profile import profile_files
    from mtpsim.textfiles import MAX_FILE_BYTES
    h = hashlib.sha256(code_digest().encode())
    for path in profile_files(profile):
        if not path.is_file():  # absent, or not a regular file (the loader says why if it reads it)
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            raise OSError(f"{path}: over the {MAX_FILE_BYTES:,}-byte input limit")
        h.update(path.name.encode())
        with path.open("rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    for part in parts:
        h.update(part.encode())
    return h.hexdigest()[:32]


def cached(profile, parts: tuple[str, ...], load: Callable[[], T], kind: type[T]) -> T:
    """`load()` (which parses and validates the profile folder `profile`), or what it returned
    for the same files, specs `parts` and code in an earlier process: a `kind`, or the entry is
    not one and the profile is parsed again."""
    folder, profile = cache_dir(), Path(profile)
    if folder is None or not profile.is_dir():  # no cache, or a missing folder: the loader says why
        return load()
    if not _usable(folder):
        return load()
    try:
        file = folder / f"profile-{entry_key(profile, *parts)}.pickle"
    except OSError:  # an unreadable profile file: the loader names it
        return load()
    try:
        if _owned(file):  # unpickling runs code: only an entry no one else could have written is read
            found = pickle.loads(file.read_bytes())
            if isinstance(found, kind):
                return found
    except Exception:  # noqa: BLE001 -- missing, truncated or foreign: parse the profile instead
        pass
    value = load()
    tmp = None
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, file)  # whole or absent: a reader never sees half an entry
        tmp = None
        _prune(folder)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return value


def _owned(path: Path, folder: bool = False) -> bool:
    """Whether `path` is this user's, writable by no one else (no group or other write bit), and a
    regular file (a folder, or a link to one, where `folder`): a pipe named like an entry would
    block its read, and an entry that is a link could name another user's file."""
    st = path.stat() if folder else path.lstat()
    kind = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    return kind and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _usable(folder: Path) -> bool:
    """Whether the cache may live in `folder`: absent (made private on first write), or a folder
    of this user's that no one else can write into. Else one warning, and the profile is parsed
    without the cache: an entry is a pickle, and another user able to plant one there could run
    code in this process."""
    from mtpsim.errors import warn
    where = CACHE_ENV if os.environ.get(CACHE_ENV) is not None else "the profile cache (XDG_CACHE_HOME or ~/.cache)"
    try:
        if not folder.exists():
            return True
        if not folder.is_dir():
            warn(where, "", f"{folder} is not a folder: the profile cache is off (name a folder, or off)")
            return False
        if not _owned(folder, folder=True):
            warn(where, "", f"{folder} is writable by other users or not yours: the profile cache is off, as "
                 "its entries run code when read (name a folder only you can write, e.g. chmod 700)")
            return False
    except OSError:
        return False
    return True


def _prune(folder: Path) -> None:
    """Delete all but the newest MAX_ENTRIES entries. Only files named exactly as `cached` names
    its entries count: MTPSIM_CACHE_DIR may name a folder the user keeps other files in (a
    `profile-mine.pickle` of theirs is never touched)."""
    entries = sorted((p for p in folder.iterdir() if ENTRY_NAME.fullmatch(p.name) and p.is_file()),
                     key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)
