"""Reading the files users hand us, at the level every reader shares: a file's bytes or text,
each file at most MAX_FILE_BYTES (after gunzipping a `.gz`), UTF-8 text without NUL bytes (a
binary file is called binary), and an unreadable or corrupt one a single ScenarioError naming it.
`read_once` memoises a reader per version of its file. yamlfiles.py, csvfiles.py and jsonfiles.py parse what
these return; files.py gathers them under the names callers use.
"""
from __future__ import annotations

import errno
import functools
import gzip
import io
import os
import zlib
from pathlib import Path

from mtpsim.errors import ScenarioError, short

MAX_FILE_BYTES = 512 * 2**20   # the largest file read (a 1M-request trace is ~25 MB)


def read_text(path: str | Path, where: str | None = None, limit: int = MAX_FILE_BYTES) -> str:
    """A file's text: at most `limit` bytes, UTF-8, not binary. `.gz` files are gunzipped."""
    return read_bytes(path, where, limit).decode("utf-8")


# what reading a file, plain or gzipped, can raise: gzip.BadGzipFile is an OSError; a cut-off
# stream an EOFError; a bad deflate stream zlib's error
READ_ERRORS = (OSError, EOFError, zlib.error)


def unreadable(where: str, exc: BaseException) -> ScenarioError:
    """The one line for a file a READ_ERRORS exception stopped reading."""
    reason = "a corrupt or cut-off .gz file" if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)) \
        else getattr(exc, "strerror", None) or str(exc)
    return ScenarioError(where, "", f"cannot read: {short(reason, 160)[1:-1]}")


def not_a_file(path: Path) -> str:
    """Why a path that is not a regular file cannot be read: absent, a folder, or another kind
    (a device, a pipe or a socket, which would block or never end)."""
    if path.is_dir():
        return "a folder, not a file"
    if path.exists():
        return "not a regular file (a device, pipe or socket)"
    if path.is_symlink():  # a link to nothing, or a loop of links (stat fails with ELOOP)
        try:
            path.stat()
        except OSError as exc:
            what = "a loop of links" if exc.errno == errno.ELOOP else "a link that leads nowhere"
            return f"{what} ({exc.strerror or exc})"
    return "no such file"


def not_a_folder(path: Path) -> str:
    """Why a path that should be a folder to write into is not one (it exists as something else)."""
    return f"exists and is not a folder ({_kind(path)})"


def _kind(path: Path) -> str:
    """What a path that exists (or is a link) but is no folder is."""
    if path.is_file():
        return "a file"
    if path.is_symlink() and not path.exists():
        return "a link to nothing"
    return "a device, pipe or socket"


def blocked_by(path: Path) -> str | None:
    """Why no folder can be made at `path` because of a folder on the way to it (an ancestor, the
    topmost first): it exists as something else, a file, a device or a link to nothing, e.g.
    `runs is a link to nothing, not a folder`; None when every ancestor is a folder or
    absent. mkdir's own error names neither that path nor the cause (a link to nothing raises
    FileExistsError, as if the folder asked for were there)."""
    for parent in reversed(Path(path).parents):
        if os.path.lexists(parent) and not parent.is_dir():
            return f"{parent} is {_kind(parent)}, not a folder"
    return None


def blocked_note(path: Path) -> str:
    """` (runs is a file, not a folder)`: what blocks making `path` (blocked_by), to follow the
    system's own words for a failed mkdir; "" where nothing on the way does."""
    blocked = blocked_by(path)
    return f" ({blocked})" if blocked is not None else ""


NAME_MAX = 255  # bytes in one path component (Linux, macOS): a longer name fails every file call


def check_path_length(value: str, where: str, key: str) -> str:
    """`value`, or a ScenarioError naming the key when one of its components is longer than a file
    name can be: the filesystem's "File name too long" would otherwise surface from whichever
    call first touched it, naming neither the scenario nor the key."""
    longest = max((len(part.encode("utf-8", "surrogatepass")) for part in value.split("/")), default=0)
    if longest > NAME_MAX:
        raise ScenarioError(where, key, f"a path component of {longest:,} bytes; file names end at {NAME_MAX}: "
                            f"{short(value, 80)[1:-1]}")
    return value


def require_file(path: str | Path, where: str, key: str) -> None:
    """A ScenarioError naming the key (`where`: the file that names `path`) unless `path` is a
    regular file: for a path a scenario gives, checked before it is read under its own name."""
    if not Path(path).is_file():
        raise ScenarioError(where, key, f"{not_a_file(Path(path))}: {short(str(path), 200)[1:-1]}")


def read_bytes(path: str | Path, where: str | None = None, limit: int = MAX_FILE_BYTES) -> bytes:
    """`read_text`'s checks, the text left as its UTF-8 bytes (what the CSV reader parses)."""
    path = Path(path)
    where = where or str(path)
    try:
        if not path.is_file():
            raise ScenarioError(where, "", not_a_file(path))
        if path.stat().st_size > limit:
            raise ScenarioError(where, "", f"{path.stat().st_size:,} bytes is over the {limit:,}-byte limit")
        data = path.read_bytes()
        if path.suffix == ".gz":
            with gzip.open(io.BytesIO(data)) as f:
                data = f.read(limit + 1)
            if len(data) > limit:
                raise ScenarioError(where, "", f"gunzips to over the {limit:,}-byte limit")
    except READ_ERRORS as exc:
        raise unreadable(where, exc) from None
    if b"\0" in data:
        raise ScenarioError(where, "", "a binary file, not text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(where, "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    return data


MAX_LINE_BYTES = 1 << 16  # one CSV row: summary.csv's ~60 columns take ~1.5 KB, a trace row a few dozen bytes


class LineLimit:
    """Bytes fed in file order, refused (one ScenarioError naming the line) once a line is longer
    than `limit` bytes: a row of a million fields (a run of commas) costs pandas seconds per 100k
    of them, and a gzip bomb of one endless line would be read into memory whole. Lines end at
    \\n, \\r\\n or a lone \\r, as the CSV readers split them."""

    def __init__(self, where: str, limit: int = MAX_LINE_BYTES):
        self.where, self.limit = where, limit
        self.run = 0     # bytes of the line being read, so far
        self.ended = 0   # line endings seen before the current chunk
        self.after_cr = False  # the last chunk ended in \r: a \n opening the next ends no other line

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        parts = chunk.replace(b"\r", b"\n").split(b"\n")
        split = self.after_cr and chunk[:1] == b"\n"  # a \r\n cut between two reads
        if self.run + len(parts[0]) > self.limit or (len(parts) > 2 and max(map(len, parts[1:-1])) > self.limit) \
                or len(parts) > 1 and len(parts[-1]) > self.limit:
            self._refuse(chunk, parts, split)
        self.run = self.run + len(parts[0]) if len(parts) == 1 else len(parts[-1])
        self.ended += _endings(chunk) - split
        self.after_cr = chunk.endswith(b"\r")

    def _refuse(self, chunk: bytes, parts: list[bytes], split: bool) -> None:
        offset, length = 0, self.run + len(parts[0])
        for k, part in enumerate(parts):
            if k:
                offset, length = offset + len(parts[k - 1]) + 1, len(part)
            if length > self.limit:
                break
        line = self.ended + _endings(chunk[:offset]) - (split and offset > 0) + 1
        raise ScenarioError(self.where, "", f"line {line:,} is longer than {self.limit:,} bytes, far longer than any row "
                            "mtpsim reads (thousands of fields, or a file that is no table?)")


def _endings(data: bytes) -> int:
    """Line endings in `data`: \\n, \\r\\n and a lone \\r, each counted once."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def check_lines(data: bytes, where: str, limit: int = MAX_LINE_BYTES) -> None:
    """A ScenarioError naming the first line of `data` longer than `limit` bytes (LineLimit)."""
    if len(data) <= limit:
        return
    check, step = LineLimit(where, limit), 1 << 20
    for start in range(0, len(data), step):
        check.feed(data[start:start + step])


class LinesCapped(io.RawIOBase):
    """A binary stream read through a LineLimit: what a streamed reader (pandas' chunked CSV
    reader, a JSON-lines loop) reads is refused at the first line over the limit, before the line
    is held whole. Wrap it in io.BufferedReader for a buffered stream."""

    def __init__(self, raw, where: str, limit: int = MAX_LINE_BYTES):
        super().__init__()
        self.raw, self.check = raw, LineLimit(where, limit)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Back to the start only (a reader that sniffs the header, then reads from the top)."""
        if (offset, whence) != (0, io.SEEK_SET):
            raise io.UnsupportedOperation("a line-capped stream rewinds to its start only")
        self.check = LineLimit(self.check.where, self.check.limit)
        return self.raw.seek(0)

    def tell(self) -> int:
        return self.raw.tell()

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        if n:
            self.check.feed(bytes(memoryview(buffer)[:n]))
        return n

    def close(self) -> None:
        try:
            self.raw.close()
        finally:
            super().close()


def version(path: str | Path) -> tuple:
    """What changes when a file, or any file in a folder, changes: the resolved path and each
    file's (name, mtime, size). () for a path that does not exist (its reader then says why)."""
    path = Path(path)
    if path.is_dir():  # a folder's entries by os.scandir: each a Path, and its stat, took twice as long
        with os.scandir(path) as entries:
            stamps = sorted(_stamp(entry) for entry in entries)  # by name, as the folder's paths sort
    else:
        stamps = [_stamp(path)] if path.exists() else []
    return (str(path.resolve()), *stamps)


def _stamp(path: Path | os.DirEntry) -> tuple:
    """(name, mtime, size) of a folder's entry; of the link itself where it leads nowhere (the
    reader that opens it says so, naming the file, rather than a bare OSError here)."""
    try:
        st = path.stat()
    except OSError:
        st = path.stat(follow_symlinks=False)
    return path.name, st.st_mtime_ns, st.st_size


def read_once(reader):
    """`reader(path, *args)`, run once per version of the file at `path` (the last 8 kept): a
    sweep validates and then runs every point from the same trace, histogram or profile. What
    it returns is shared by every caller, so it must not be changed in place."""
    cached = functools.lru_cache(maxsize=8)(lambda path, _version, *args: reader(path, *args))

    @functools.wraps(reader)
    def read(path, *args):
        return cached(path, version(path), *args)
    read.cache_clear = cached.cache_clear
    return read


def unsigned(value):
    """A number (or an array of them) with a zero's sign dropped and every other value kept: -0.0
    + 0.0 is 0.0. The one rule of the YAML, JSON and CSV readers: a zero's sign means nothing to a
    user, but -0.0 passes a `>= 0` bound and then NumPy refused it (`normal(scale=-0.0)`). A float
    other than zero comes back as the same object (PyYAML's NaN is one shared object, which both of
    yamlfiles.py's parsers then return alike); an array is added to elementwise."""
    if isinstance(value, float):
        return 0.0 if value == 0 else value
    return value + 0.0
