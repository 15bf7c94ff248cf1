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
from capbench_nb.io.pointer import EvidenceError, resolve_pointer, split_reference

__all__ = ["EvidenceResolver"]

_MISSING = object()


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
        if not inside(real, self._real_run_dir):
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
        if not inside(real_file, root) or real_file == root:
            raise EvidenceError(f"evidence file {file!r} resolves outside the attempt's artifact directory")
        shown = f"{artifact_dir.rstrip('/')}/{file}"
        document = self._load(real_file, shown)
        return resolve_pointer(document, pointer)
