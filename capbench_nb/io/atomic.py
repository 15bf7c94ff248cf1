"""Writing files so that a reader sees the old file or the new one, never a part of either."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

__all__ = [
    "dumps", "json_pieces", "write_atomic", "write_synced", "create_synced", "copy_atomic", "file_mode",
    "current_umask", "fsync_file", "fsync_directory",
]


def dumps(document: dict) -> str:
    """Canonical JSON text: 2-space indent, ASCII only, no NaN, newline at the end.

    ASCII escapes keep the bytes stable and valid whatever characters task ids hold.  The text is
    ``json.dumps``'s, joined from :func:`json_pieces`.
    """
    return "".join(json_pieces(document))


def json_pieces(document: dict) -> Iterator[str]:
    """:func:`dumps`'s text in consecutive pieces, for :func:`write_atomic` to write as they come.

    The (pure Python) indenting encoder yields a piece per key, value and bracket; ``json.dumps``
    would hold all of them at once, several times the text's size (9 GB for a metrics.json of 10
    million anomalies), so they are joined a batch at a time.
    """
    pieces = json.JSONEncoder(indent=2, ensure_ascii=True, allow_nan=False).iterencode(document)
    while batch := list(itertools.islice(pieces, 1 << 16)):
        yield "".join(batch)
    yield "\n"


def write_atomic(path: str | os.PathLike, text: str | Iterable[str], *,
                 check: Callable[[Path], None] | None = None) -> Path:
    """Write ``text`` (a string, or strings written one after the other, such as :func:`json_pieces`)
    to ``path`` so that readers see the old file or the new one, never a part.

    The text goes to a temporary file in the same directory, is flushed and
    fsynced, optionally passed to ``check`` (which may raise to abandon the
    write), then renamed over ``path``.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, file_mode(path))  # mkstemp makes 0600; give what open() would have
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text) if isinstance(text, str) else fh.writelines(text)
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check(Path(tmp))
        os.replace(tmp, path)
        fsync_directory(path.parent)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_synced(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` in place and fsync it: for a file in a
    staging folder, which is published (renamed) as a whole afterwards."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def create_synced(path: str | os.PathLike, data: bytes) -> None:
    """Create ``path`` (``FileExistsError`` when it exists) holding ``data``, fsynced, and make its
    directory entry durable: a copy saved before the original is cut."""
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    fsync_directory(Path(path).parent)


def copy_atomic(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Copy ``src`` to the new file ``dst`` (mode and times kept) so that ``dst`` is complete or absent.

    The bytes go to a temporary file beside ``dst``, are fsynced, and only then take the name
    ``dst`` (a hard link, which never replaces an existing file: FileExistsError).  A full disk or an
    interrupt midway leaves no ``dst`` and no temporary file.
    """
    dst = Path(dst)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as source:
            shutil.copyfileobj(source, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        shutil.copystat(src, tmp)
        try:
            os.link(tmp, dst)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links
            if os.path.lexists(dst):
                raise FileExistsError(17, os.strerror(17), str(dst)) from None
            os.rename(tmp, dst)
        fsync_directory(dst.parent)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return dst


def current_umask() -> int:
    """The process's umask (read by setting it, then restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_mode(path: Path) -> int:
    """The mode of the file being replaced, or what ``open()`` gives a new file under the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def fsync_file(path: str | os.PathLike) -> None:
    """Make a file's content durable (it was written by someone else, or copied)."""
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def fsync_directory(directory: Path) -> None:
    """Make a rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
