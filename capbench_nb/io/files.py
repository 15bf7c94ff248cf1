"""Opening inputs safely: regular files only, never blocking, lexical path checks, digests."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from typing import BinaryIO, Iterator

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.pointer import EvidenceError

__all__ = ["NotARegularFile", "open_input", "input_errors", "read_regular_file", "checked_stat", "check_relative_path",
           "inside", "sha256_file"]


def check_relative_path(path: str, what: str) -> None:
    """Refuse absolute paths and ``..`` components (a lexical check, no I/O)."""
    if os.path.isabs(path) or path.startswith(("/", "\\")):
        raise EvidenceError(f"{what} {path!r} must be a relative path")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise EvidenceError(f"{what} {path!r} must not contain '..'")
    if "\x00" in path:
        raise EvidenceError(f"{what} {path!r} contains a NUL character")


class NotARegularFile(OSError):
    """An input path names a FIFO, a socket or a device: refused unread (reading could block or never end).

    ``kind`` says what it is instead (``"a named pipe (FIFO)"``, ``"a socket"``, ``"a device"``).
    """

    def __init__(self, kind: str, path: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", path)
        self.kind = kind


def open_input(path: str | os.PathLike, *, null_device: bool = True) -> BinaryIO:
    """Open an input file for reading in binary mode, without ever blocking in ``open()``.

    The file is opened with ``O_NONBLOCK`` (a FIFO without a writer opens at once) and checked
    with ``fstat`` on the open descriptor (no race with a rename).  Anything but a regular file
    raises :class:`NotARegularFile` (an ``OSError`` whose ``strerror`` says what the file is):
    a FIFO or a socket could block for ever, a device such as ``/dev/zero`` or a terminal never
    end.  The one exception, with ``null_device``, is the null device (``results.jsonl ->
    /dev/null`` is a run without attempts).  A directory raises ``IsADirectoryError``, as
    ``open()`` does.
    """
    fd = _open_fd(path, null_device)
    try:
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def input_errors(file: str, name: str, *, missing_rule: str, missing: str, unreadable_rule: str) -> Iterator[None]:
    """Opening and reading one of the run's input files (``name``, e.g. ``results.jsonl``) inside the
    block: an ``OSError`` becomes one :class:`~capbench_nb.errors.InvalidRunError` on ``file``.

    A missing file gives ``missing_rule`` with the message ``missing``; a directory, or any other
    error (:class:`NotARegularFile` included), ``unreadable_rule``.
    """
    try:
        yield
    except FileNotFoundError:
        raise InvalidRunError(file, missing_rule, missing) from None
    except IsADirectoryError:
        raise InvalidRunError(file, unreadable_rule, f"{name} is a directory, not a file") from None
    except OSError as exc:
        raise InvalidRunError(file, unreadable_rule, f"cannot read {name}: {exc.strerror}") from None


class FileTooLarge(Exception):
    """A file holds more bytes than the limit its reader states (:func:`read_regular_file`)."""


def read_regular_file(path: str | os.PathLike, *, limit: int | None = None) -> bytes:
    """The whole content of a regular file (as :func:`open_input` with ``null_device=False``, read at once).

    With ``limit``, a file of more bytes raises :class:`FileTooLarge` before (by its size) or while it is
    read, so memory never holds more than ``limit`` + 1 MiB of it.
    """
    fd = _open_fd(path, False)
    try:
        if limit is not None and os.fstat(fd).st_size > limit:
            raise FileTooLarge(limit)
        parts, size = [], 0
        while True:
            part = os.read(fd, 1 << 20)
            if not part:
                break
            size += len(part)
            if limit is not None and size > limit:
                raise FileTooLarge(limit)
            parts.append(part)
    finally:
        os.close(fd)
    return b"".join(parts)


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0) | _NONBLOCK


def _is_null_device(st: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and stat.S_ISCHR(null.st_mode) and st.st_rdev == null.st_rdev


def checked_stat(fd: int, path: str | os.PathLike, *, null_device: bool) -> os.stat_result:
    """``fstat`` of a descriptor opened with ``O_NONBLOCK``, after the checks of :func:`open_input`.

    A regular file passes (``O_NONBLOCK`` changes nothing for it); with ``null_device``, so does
    the null device, made blocking again.  A directory raises ``IsADirectoryError``, anything else
    :class:`NotARegularFile`.  The one check of what an input file is, for the loader's inputs,
    evidence files and ingest's artifacts alike.
    """
    st = os.fstat(fd)
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return st
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not (null_device and _is_null_device(st)):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file")
        raise NotARegularFile(kind, str(path))
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return st


def _open_fd(path: str | os.PathLike, null_device: bool) -> int:
    """A read-only descriptor of ``path`` after the checks of :func:`open_input`."""
    fd = os.open(path, _FLAGS)
    try:
        checked_stat(fd, path, null_device=null_device)
        return fd
    except BaseException:
        os.close(fd)
        raise


def inside(child: str, parent: str) -> bool:
    """Whether real path ``child`` is ``parent`` or lies under it."""
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def sha256_file(path: str | os.PathLike) -> str:
    """``"sha256:"`` + lowercase hex digest of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()
