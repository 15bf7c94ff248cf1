"""Reading an inspect_ai ``.eval`` archive within limits: its member count, and its members as capped streams.

A zip archive says how many members it has and how large each is, and may lie about both.  The
members are counted in the central directory itself (entry by entry, as ``zipfile`` walks it) before
``zipfile`` builds an object per member, and each member is decompressed as a stream whose bytes are
counted as they come: the archive is refused once the total passes
:data:`~capbench_nb.format.limits.MAX_EVAL_DECOMPRESSED_BYTES`, after reading about that many bytes,
whatever the sizes it declares.  The limits are read when used (tests lower them).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any, BinaryIO, Callable

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import limits
from capbench_nb.io.jsonparse import size_text

__all__ = ["check_member_count", "MemberReader", "file_sha256"]

_EOCD = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_CENTRAL_ENTRY = struct.Struct("<4s6H3L5H2L")


def _central_directory(fh: BinaryIO, size: int) -> tuple[int, int] | None:
    """Where the archive's central directory is (start, size), from its end record; None when unreadable."""
    tail_len = min(size, _EOCD.size + 65535)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or len(tail) - pos < _EOCD.size:
        return None
    end = size - tail_len + pos
    _, _, _, _, _, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
    if cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        if pos < _ZIP64_LOCATOR.size or tail[pos - _ZIP64_LOCATOR.size: pos - 16] != b"PK\x06\x07":
            return None
        _, _, z64_offset, _ = _ZIP64_LOCATOR.unpack_from(tail, pos - _ZIP64_LOCATOR.size)
        fh.seek(z64_offset)
        record = fh.read(56)
        if len(record) < 56 or record[:4] != b"PK\x06\x06":
            return None
        (cd_size,) = struct.unpack_from("<Q", record, 40)
        end = z64_offset
    start = end - cd_size
    return (start, cd_size) if start >= 0 else None


def check_member_count(file: str, fh: BinaryIO, size: int) -> None:
    """Refuse an archive of more than MAX_EVAL_MEMBERS members, counted in its central directory before
    ``zipfile`` builds an object per member (entry by entry, as ``zipfile`` walks it; at most the limit
    plus one entry headers are read)."""
    limit = limits.MAX_EVAL_MEMBERS
    found = _central_directory(fh, size)
    if found is None:
        return  # not a zip archive zipfile reads either: its own error follows
    start, cd_size = found
    fh.seek(start)
    count, offset = 0, 0
    while offset + _CENTRAL_ENTRY.size <= cd_size:
        entry = fh.read(_CENTRAL_ENTRY.size)
        if len(entry) < _CENTRAL_ENTRY.size or entry[:4] != b"PK\x01\x02":
            return  # zipfile refuses what follows
        fields = _CENTRAL_ENTRY.unpack(entry)
        skip = fields[10] + fields[11] + fields[12]
        fh.seek(skip, 1)
        offset += _CENTRAL_ENTRY.size + skip
        count += 1
        if count > limit:
            raise InvalidRunError(file, "eval-too-many-members",
                                  f"the archive has more than {limit} members, the limit of an .eval log "
                                  "(MAX_EVAL_MEMBERS, docs/format-notes.md)")


class MemberReader:
    """Reads members of an open archive as capped streams: at most MAX_EVAL_DECOMPRESSED_BYTES in total."""

    def __init__(self, file: str, archive: Any, parse: Callable[[bytes, str, str], Any]) -> None:
        self.file = file
        self.archive = archive
        self.left = limits.MAX_EVAL_DECOMPRESSED_BYTES
        self._parse = parse

    def _refuse(self, name: str) -> InvalidRunError:
        limit = limits.MAX_EVAL_DECOMPRESSED_BYTES
        return InvalidRunError(self.file, "eval-too-large",
                               f"member {name} inflates past the limit of {size_text(limit)} decompressed for the "
                               "whole archive (MAX_EVAL_DECOMPRESSED_BYTES, docs/format-notes.md)")

    def read(self, info: Any) -> bytes:
        if info.file_size > self.left:  # as declared: refused unread
            raise self._refuse(info.filename)
        chunks, total = [], 0
        try:
            with self.archive.open(info) as stream:
                while True:
                    chunk = stream.read(min(1 << 20, self.left - total + 1))
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > self.left:
                        raise self._refuse(info.filename)
                    chunks.append(chunk)
        except InvalidRunError:
            raise
        except Exception as exc:  # zlib/zstd errors, CRC mismatches, NotImplementedError, truncated archives
            raise InvalidRunError(self.file, "inspect-format",
                                  f"cannot read member {info.filename}: {type(exc).__name__}: {exc}") from None
        self.left -= total
        return b"".join(chunks)

    def parse(self, info: Any) -> Any:
        return self._parse(self.read(info), self.file, info.filename)


def file_sha256(fh: BinaryIO) -> str:
    """The sha256 of an open file, read from its start in 1 MiB chunks."""
    fh.seek(0)
    digest = hashlib.sha256()
    while chunk := fh.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()
