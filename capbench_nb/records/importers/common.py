"""What every importer shares: artifact naming, record skeletons, and writing a run directory safely.

An importer turns another tool's results into an ordinary run (spec section 1):
``manifest.json``, ``results.jsonl`` and one ``attempts/<task>/<attempt>/``
directory per attempt holding ``record.json``, the imported source record, so
that evidence such as ``record.json#/error`` resolves.  The run is assembled in
a temporary directory next to the output, validated by the loader (manifest,
every record, every evidence reference), and only then renamed into place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator
from urllib.parse import quote

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import limits, new_record
from capbench_nb.io.atomic import current_umask, dumps, write_atomic
from capbench_nb.io import interrupts, publish
from capbench_nb.io.files import inside, open_input
from capbench_nb.io.jsonparse import json_type_name, size_text
from capbench_nb.io.pointer import escape_token
from capbench_nb.records.ingest import record_line
from capbench_nb.records.manifest import validate_manifest
from capbench_nb.records.run import MANIFEST, RESULTS, read_results

__all__ = [
    "ImportReport",
    "ImportedAttempt",
    "RECORD_FILE",
    "SUCCESS_TOLERANCE",
    "artifact_dir",
    "base_record",
    "describe",
    "finite_or_text",
    "guarded",
    "open_source",
    "pointer",
    "read_limited",
    "read_source_bytes",
    "sha256_hex",
    "too_large",
    "unit_score",
    "with_notes",
    "write_imported_run",
]

#: The per-attempt copy of the imported source record.
RECORD_FILE = "record.json"
#: A numeric score or reward counts as a success when it is within this of 1.
SUCCESS_TOLERANCE = 1e-6
_MAX_DIR_NAME = 120
#: Ends every cut directory name: ``%`` followed by no hex digit is never in a percent-encoded id,
#: so a cut name cannot equal the name of another (uncut) id.
_CUT_MARK = "%~"


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote."""

    path: Path
    tasks: int
    attempts: int
    ineligible: int
    replaced: bool = False
    #: What the import decided for the user to know (files skipped, retried logs, epochs), one line each.
    notes: tuple[str, ...] = ()


def with_notes(report: ImportReport, notes: list[str] | tuple[str, ...]) -> ImportReport:
    """``report`` with ``notes`` added (the CLI prints each on stderr)."""
    return dataclasses.replace(report, notes=report.notes + tuple(notes)) if notes else report


@dataclass
class ImportedAttempt:
    """One attempt: its results.jsonl record and the source record kept as record.json."""

    record: dict
    source: Any = field(repr=False)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex sha256 of ``data`` (it names a source file in the manifest's ``import.sources``)."""
    return hashlib.sha256(data).hexdigest()


def readable_run_id(tool: str, parts: list[Any], digest: str) -> str:
    """A default run id that says what the run is: ``tool-part-part-...-hash8``, e.g.
    ``tau2-bench-gpt-4.1-airline-2025-06-12-60c5b8d3``.

    Each non-empty part (model, domain, date) is kept to letters, digits, ``.`` and ``_`` (anything else
    becomes ``-``) and to 40 characters; the first 8 hex digits of ``digest`` (the sources' sha256) keep
    two runs of one model and domain apart.
    """
    words = [tool]
    for part in parts:
        word = re.sub(r"[^A-Za-z0-9._]+", "-", str(part)).strip("-.")[:40].strip("-.") if part is not None else ""
        if word:
            words.append(word)
    return "-".join(words + [digest[:8]])


def describe(value: Any) -> str:
    """A source value as an error message quotes it: JSON text (anything else ``str()``), cut at 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # nested too deeply to print: say what it is
        text = json_type_name(value)
    return text if len(text) <= 60 else text[:57] + "..."


def open_source(path: str | os.PathLike, what: str) -> BinaryIO:
    """An input file opened for reading (a regular file, never blocking), or a one-line InvalidRunError."""
    file = str(path)
    try:
        return open_input(path, null_device=False)
    except FileNotFoundError:
        raise InvalidRunError(file, "import-missing", f"no such {what}") from None
    except IsADirectoryError:
        raise InvalidRunError(file, "import-unreadable", f"a directory, not a {what}") from None
    except OSError as exc:  # NotARegularFile says what the file is instead
        raise InvalidRunError(file, "import-unreadable", f"cannot read the {what}: {exc.strerror or exc}") from None


def too_large(file: str, what: str, size: int, limit: int, name: str,
              rule: str = "import-too-large") -> InvalidRunError:
    """The error of an input above one of the limits of :mod:`capbench_nb.format.limits` (named in it)."""
    return InvalidRunError(file, rule, f"the {what} is {size} bytes, above the limit of {size_text(limit)} "
                                       f"({name}, docs/format-notes.md)")


def read_limited(fh: BinaryIO, file: str, what: str, limit: int | None = None) -> bytes:
    """The rest of an open input file, at most ``limit`` bytes (default
    :data:`~capbench_nb.format.limits.MAX_IMPORT_LOG_BYTES`): a larger file is refused from its size,
    unread; one that grows while read is cut at ``limit + 1`` bytes and refused too."""
    limit = limits.MAX_IMPORT_LOG_BYTES if limit is None else limit
    try:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise too_large(file, what, size, limit, "MAX_IMPORT_LOG_BYTES")
        data = fh.read(limit + 1)
    except OSError as exc:
        raise InvalidRunError(file, "import-unreadable", f"cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_large(file, what, len(data), limit, "MAX_IMPORT_LOG_BYTES")
    return data


def read_source_bytes(path: str | os.PathLike, what: str, limit: int | None = None) -> bytes:
    """The bytes of an input file (:func:`open_source`, :func:`read_limited`), or a one-line InvalidRunError."""
    with open_source(path, what) as fh:
        return read_limited(fh, str(path), what, limit)


#: What a mapping raises on a source value it did not expect (a bug of ours: the fuzz tests must never see it).
_UNEXPECTED = (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, RecursionError)


@contextlib.contextmanager
def guarded(file: str, what: str) -> Iterator[None]:
    """Turn an exception a mapping did not foresee into one InvalidRunError line (rule ``import-unsupported``).

    The importers check every value they read; this is the net under those checks, so that no input,
    however hostile, gets a traceback.  ``tests/records/test_importers_damaged.py`` fails if any of its
    inputs reaches it.  InvalidRunError, OSError and interrupts pass through unchanged.
    """
    try:
        yield
    except InvalidRunError:
        raise
    except RecursionError:
        raise InvalidRunError(file, "json", f"the {what} is nested too deeply to copy") from None
    except _UNEXPECTED as exc:
        raise InvalidRunError(file, "import-unsupported", f"cannot import this {what}: {type(exc).__name__}: "
                              f"{exc} (please report this)") from None


def dir_name(task_id: str) -> str:
    """A file-system-safe, injective directory name for a task id.

    Percent-encoding of every byte outside ``A-Za-z0-9_.-~`` (so ``/`` and
    ``%`` are escaped); ``.`` and ``..`` are encoded too; a name longer than
    120 characters is cut to 102 and ends with ``%~`` and 16 hex digits of
    the sha256 of the whole id.  No uncut name holds ``%~`` (every ``%`` of a
    percent-encoding is followed by two hex digits), so a cut name never
    equals another id's name: the mapping stays injective (up to a 64-bit
    hash collision between two ids longer than 120 encoded characters).
    Ids must be Unicode text (no lone surrogate): the importers refuse others first.
    """
    name = quote(task_id, safe="")
    if name in (".", ".."):
        name = name.replace(".", "%2E")
    if len(name) > _MAX_DIR_NAME:
        suffix = _CUT_MARK + sha256_hex(task_id.encode("utf-8"))[:16]
        name = name[: _MAX_DIR_NAME - len(suffix)] + suffix
    return name


def artifact_dir(task_id: str, attempt: int) -> str:
    """``attempts/<task>/<attempt>``, relative to the run directory."""
    return f"attempts/{dir_name(task_id)}/{attempt}"


def pointer(*tokens: str | int) -> str:
    """An RFC 6901 JSON pointer from reference tokens (``~`` and ``/`` escaped)."""
    return "".join("/" + escape_token(str(t)) for t in tokens)


def finite_or_text(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its JSON-ish name (``"NaN"``, ``"Infinity"``).

    Artifacts are written as strict JSON; a source that held bare ``NaN``
    tokens keeps them as strings, so pointers into them still resolve.
    """
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: finite_or_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_or_text(v) for v in value]
    return value


def unit_score(value: float) -> float | None:
    """``value`` as a quality_score in [0, 1]: clipped when within the tolerance of that range, else None."""
    if not math.isfinite(value) or value < -SUCCESS_TOLERANCE or value > 1 + SUCCESS_TOLERANCE:
        return None
    return float(min(1.0, max(0.0, value)))


def base_record(task_id: str, attempt: int) -> dict:
    """A record skeleton in the section-3 key order: null telemetry, no cost."""
    return new_record(task_id=task_id, attempt=attempt, artifact_dir=artifact_dir(task_id, attempt),
                      success=False, agent_eligible=True, failure_class="agent")


def _sort_key(record: dict) -> tuple:
    return (record["task_id"].encode("utf-8", "surrogatepass"), record["attempt"])


def _check_output(out: Path, force: bool, sources: tuple = ()) -> bool:
    """Whether ``out`` holds a run that will be replaced; refuse what must not be touched (``sources``
    inside a run that would be replaced among it)."""
    if not out.exists():
        return False
    if not out.is_dir():
        raise InvalidRunError(str(out), "output-exists", "the output exists and is not a directory")
    if not any(out.iterdir()):
        return False
    if not force:
        raise InvalidRunError(str(out), "output-exists",
                              "the output directory is not empty; use --force to replace a previous import")
    if not (out / MANIFEST).is_file():
        raise InvalidRunError(str(out), "output-exists",
                              "the output directory is not empty and holds no run (no manifest.json); "
                              "--force only replaces a run directory")
    real_out = os.path.realpath(out)
    for source in sources:
        if inside(os.path.realpath(source), real_out):
            raise InvalidRunError(str(source), "import-source-in-output",
                                  f"the input is inside {out}, the run directory --force would replace (and delete); "
                                  "move or copy it out first")
    return True


def _discard(path: Path) -> None:
    """Remove a staging folder or a replaced run; a symlink (an ``--out`` that was one) goes, its target stays."""
    if os.path.islink(path):
        with contextlib.suppress(OSError):
            os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def write_imported_run(out: str | os.PathLike, manifest: dict, attempts: list[ImportedAttempt], *,
                       force: bool = False, sources: tuple | list = ()) -> ImportReport:
    """Write a complete run directory at ``out`` from a manifest and imported attempts.

    The same inputs give the same bytes: records sorted by task (UTF-8 bytes)
    then attempt, canonical JSON, nothing from the clock.  Everything is
    written into a staging folder beside ``out`` (locked while the import runs),
    validated as ``load_run`` would (evidence included), then put in place:
    renamed to ``out``, or exchanged with it in one step
    (:func:`~capbench_nb.io.publish.replace_directory`), so that ``out`` never
    goes missing.  An existing ``out`` must be empty, or (with ``force``) a run
    directory, which is replaced; the input files ``sources`` must not be inside
    it then.  First, what killed imports left beside ``out`` is cleaned up, and a
    run a kill left moved aside is put back (:func:`~capbench_nb.io.publish.recover`).
    A signal during the switch is held until it is done.

    Raises
    ------
    InvalidRunError
        An output that must not be replaced, or (a bug) an invalid import.
    """
    out = Path(out)
    validate_manifest(manifest, file=str(out / MANIFEST))
    publish.recover(out)
    replace = _check_output(out, force, tuple(sources))
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = held = old = None
    try:
        with interrupts.deferred():  # the staging folder exists only once the clean-up below owns it
            tmp = Path(tempfile.mkdtemp(dir=parent, prefix=publish.sibling_prefix(out) + "import-",
                                        suffix=publish.PARTIAL))
            held = publish.lock(tmp)
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp made it 0700
        records = []
        for item in sorted(attempts, key=lambda a: _sort_key(a.record)):
            rec = item.record
            target = tmp / rec["artifact_dir"]
            target.mkdir(parents=True, exist_ok=False)
            (target / RECORD_FILE).write_text(dumps(finite_or_text(item.source)), encoding="utf-8", newline="\n")
            records.append(rec)
        write_atomic(tmp / MANIFEST, dumps(manifest))

        def check(path: Path) -> None:  # what an importer writes, the loader accepts
            try:
                read_results(path, run_dir=tmp, strict=True)
            except InvalidRunError as exc:
                raise InvalidRunError(str(out / RESULTS), exc.rule, f"the import produced an invalid record: {exc.message}",
                                      line=exc.line) from None

        write_atomic(tmp / RESULTS, "".join(record_line(r) for r in records), check=check)
        interrupts.pause_point("import")
        with interrupts.deferred():
            if os.path.lexists(out):
                old = publish.replace_directory(tmp, out)
            else:
                os.rename(tmp, out)
    finally:
        if held is not None:
            os.close(held)
        for path in (tmp, old):  # the staging folder, or after a switch the previous run
            if path is not None:
                _discard(path)
    ineligible = sum(1 for r in records if not r["agent_eligible"])
    tasks = len(manifest["plan"]["tasks"])
    return ImportReport(path=out, tasks=tasks, attempts=len(records), ineligible=ineligible, replaced=replace)
