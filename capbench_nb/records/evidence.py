"""Evidence references ``FILE#JSON_POINTER`` (RFC 6901) into an attempt's artifacts.

One resolver serves validation (every reference in results.jsonl must resolve)
and, later, record derivation.  A reference may only read inside the attempt's
artifact directory, which itself must lie inside the run directory; both are
checked on real paths, so symlinks cannot escape.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from capbench_nb.io.files import check_relative_path, inside, read_regular_file
from capbench_nb.io.jsonparse import JsonMessages, json_reason
from capbench_nb.io.pointer import EvidenceError, resolve_pointer, split_reference

__all__ = ["EvidenceResolver", "read_evidence_file"]

_MISSING = object()

#: How an evidence file words a failed parse (``{file}`` is its name as shown).
_JSON_MESSAGES = JsonMessages(
    syntax="evidence file {file!r} is not valid JSON: {exc}",
    utf8="evidence file {file!r} is not valid JSON: {exc}",
    too_long="evidence file {file!r} holds an integer literal too long to read",
    nested="evidence file {file!r} is JSON nested too deeply to read",
)


def read_evidence_file(real_file: str) -> Any:
    """The JSON document of an evidence file (parsed as the standard library does, NaN accepted).

    Raises
    ------
    OSError
        Unreadable, missing, or not a regular file (a FIFO is refused, not waited for).
    ValueError, RecursionError
        Not UTF-8, not JSON, an integer literal too long to read, nested too deeply.
    """
    return json.loads(read_regular_file(real_file).decode("utf-8"))


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

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path)``: every containment check is made on real paths (a subclass
        may remember them)."""
        return os.path.realpath(path)

    def artifact_root(self, artifact_dir: str) -> str:
        """Real path of ``artifact_dir`` after checking it stays inside the run."""
        check_relative_path(artifact_dir, "artifact_dir")
        real = self.realpath(os.path.join(self._real_run_dir, artifact_dir))
        if not inside(real, self._real_run_dir):
            raise EvidenceError(f"artifact_dir {artifact_dir!r} resolves outside the run directory")
        return real

    def locate(self, artifact_dir: str | None, reference: str) -> tuple[str, str, str]:
        """The file part of a reference: ``(real path of the file, its name as shown, pointer)``.

        Raises
        ------
        EvidenceError
            When the reference is malformed or its file lies outside the attempt's artifact
            directory (or that directory outside the run).
        """
        if artifact_dir is None:
            raise EvidenceError(f"evidence {reference!r} given but artifact_dir is null")
        file, pointer = split_reference(reference)
        check_relative_path(file, "evidence file")
        root = self.artifact_root(artifact_dir)
        real_file = self.realpath(os.path.join(root, file))
        if not inside(real_file, root) or real_file == root:
            raise EvidenceError(f"evidence file {file!r} resolves outside the attempt's artifact directory")
        return real_file, f"{artifact_dir.rstrip('/')}/{file}", pointer

    def _load(self, real_file: str, shown: str) -> Any:
        hit = self._cache.get(real_file, _MISSING)
        if hit is _MISSING:
            try:
                hit = read_evidence_file(real_file)
            except FileNotFoundError:
                hit = EvidenceError(f"evidence file {shown!r} does not exist")
            except IsADirectoryError:
                hit = EvidenceError(f"evidence file {shown!r} is a directory")
            except OSError as exc:
                hit = EvidenceError(f"evidence file {shown!r} cannot be read: {exc.strerror}")
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, too long an integer, too deep
                hit = EvidenceError(json_reason(exc, file=shown, messages=_JSON_MESSAGES)[1])
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
        real_file, shown, pointer = self.locate(artifact_dir, reference)
        document = self._load(real_file, shown)
        return resolve_pointer(document, pointer)
