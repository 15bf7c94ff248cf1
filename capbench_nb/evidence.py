"""Evidence references ``FILE#JSON_POINTER`` (RFC 6901) into an attempt's artifacts.

One resolver serves validation (every reference in results.jsonl must resolve)
and, later, record derivation.  A reference may only read inside the attempt's
artifact directory, which itself must lie inside the run directory; both are
checked on real paths, so symlinks cannot escape.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "EvidenceError",
    "parse_pointer",
    "resolve_pointer",
    "split_reference",
    "check_relative_path",
    "EvidenceResolver",
    "NotARegularFile",
    "checked_stat",
    "open_input",
    "read_regular_file",
]

_MISSING = object()


class EvidenceError(ValueError):
    """A reference that is malformed, escapes its directory or does not resolve."""


def parse_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 JSON pointer into unescaped reference tokens.

    ``""`` is the whole document; otherwise the pointer starts with ``/``.
    ``~1`` decodes to ``/`` and ``~0`` to ``~`` (in that order, as RFC 6901
    section 4 requires); any other ``~`` sequence is an error.
    """
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise EvidenceError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for tok in tokens:
        i = tok.find("~")
        while i != -1:
            if i + 1 >= len(tok) or tok[i + 1] not in "01":
                raise EvidenceError(f"JSON pointer {pointer!r} has an invalid '~' escape")
            i = tok.find("~", i + 2)
    return [tok.replace("~1", "/").replace("~0", "~") for tok in tokens]


def resolve_pointer(document: Any, pointer: str) -> Any:
    """Return the value ``pointer`` refers to in ``document``.

    Raises
    ------
    EvidenceError
        When a token names a missing key, an index past the end (``-``
        included), a non-canonical index such as ``01``, or steps into a scalar.
    """
    node = document
    tokens = parse_pointer(pointer)
    for depth, tok in enumerate(tokens):
        where = "/" + "/".join(tokens[:depth]) if depth else "the document root"
        if isinstance(node, dict):
            if tok not in node:
                raise EvidenceError(f"pointer {pointer!r}: no key {tok!r} at {where}")
            node = node[tok]
        elif isinstance(node, list):
            if not tok.isdigit() or not tok.isascii() or (tok != "0" and tok.startswith("0")):
                raise EvidenceError(f"pointer {pointer!r}: {tok!r} is not an array index at {where}")
            idx = int(tok)
            if idx >= len(node):
                raise EvidenceError(
                    f"pointer {pointer!r}: index {idx} is past the end of the array "
                    f"(length {len(node)}) at {where}"
                )
            node = node[idx]
        else:
            raise EvidenceError(f"pointer {pointer!r}: cannot step into a {type(node).__name__} at {where}")
    return node


def split_reference(reference: str) -> tuple[str, str]:
    """Split ``FILE#POINTER`` at its first ``#``; the pointer is used as written."""
    file, sep, pointer = reference.partition("#")
    if not sep or not file:
        raise EvidenceError(f"evidence reference {reference!r} is not of the form FILE#JSON_POINTER")
    return file, pointer


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


def read_regular_file(path: str | os.PathLike) -> bytes:
    """The whole content of a regular file (as :func:`open_input` with ``null_device=False``, read at once)."""
    fd = _open_fd(path, False)
    try:
        parts = []
        while True:
            part = os.read(fd, 1 << 20)
            if not part:
                break
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


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


class EvidenceResolver:
    """Resolve evidence references of the attempts of one run directory.

    Parsed artifact files are cached (a bounded number), so many references
    into one file read it once.

    Parameters
    ----------
    run_dir : path-like
        The run directory; nothing outside its real path is ever read.
    cache_size : int, default 256
        Number of parsed artifact files kept.
    """

    def __init__(self, run_dir: str | os.PathLike, *, cache_size: int = 256) -> None:
        self.run_dir = Path(run_dir)
        self._real_run_dir = os.path.realpath(self.run_dir)
        self._cache: dict[str, Any] = {}
        self._cache_size = cache_size

    def artifact_root(self, artifact_dir: str) -> str:
        """Real path of ``artifact_dir`` after checking it stays inside the run."""
        check_relative_path(artifact_dir, "artifact_dir")
        real = os.path.realpath(os.path.join(self._real_run_dir, artifact_dir))
        if not _inside(real, self._real_run_dir):
            raise EvidenceError(f"artifact_dir {artifact_dir!r} resolves outside the run directory")
        return real

    def _load(self, real_file: str, shown: str) -> Any:
        hit = self._cache.get(real_file, _MISSING)
        if hit is _MISSING:
            try:
                hit = json.loads(read_regular_file(real_file).decode("utf-8"))
            except FileNotFoundError:
                hit = EvidenceError(f"evidence file {shown!r} does not exist")
            except IsADirectoryError:
                hit = EvidenceError(f"evidence file {shown!r} is a directory")
            except OSError as exc:
                hit = EvidenceError(f"evidence file {shown!r} cannot be read: {exc.strerror}")
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                hit = EvidenceError(f"evidence file {shown!r} is not valid JSON: {exc}")
            except ValueError:  # Python's limit on the digits of an integer literal (4300 by default)
                hit = EvidenceError(f"evidence file {shown!r} holds an integer literal too long to read")
            except RecursionError:
                hit = EvidenceError(f"evidence file {shown!r} is JSON nested too deeply to read")
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[real_file] = hit
        if isinstance(hit, EvidenceError):
            raise hit
        return hit

    def resolve(self, artifact_dir: str | None, reference: str) -> Any:
        """Return the JSON value ``reference`` points at.

        Raises
        ------
        EvidenceError
            With a one-sentence reason when the reference cannot be followed.
        """
        if artifact_dir is None:
            raise EvidenceError(f"evidence {reference!r} given but artifact_dir is null")
        file, pointer = split_reference(reference)
        check_relative_path(file, "evidence file")
        root = self.artifact_root(artifact_dir)
        real_file = os.path.realpath(os.path.join(root, file))
        if not _inside(real_file, root) or real_file == root:
            raise EvidenceError(f"evidence file {file!r} resolves outside the attempt's artifact directory")
        shown = f"{artifact_dir.rstrip('/')}/{file}"
        document = self._load(real_file, shown)
        return resolve_pointer(document, pointer)
