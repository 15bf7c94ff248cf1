"""What every importer shares: artifact naming, record skeletons, and writing a run directory safely.

An importer turns another tool's results into an ordinary run (spec section 1):
``manifest.json``, ``results.jsonl`` and one ``attempts/<task>/<attempt>/``
directory per attempt holding ``record.json``, the imported source record, so
that evidence such as ``record.json#/error`` resolves.  The run is assembled in
a temporary directory next to the output, validated by the loader (manifest,
every record, every evidence reference), and only then renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.atomic import current_umask, dumps, write_atomic
from capbench_nb.io.pointer import escape_token
from capbench_nb.records.ingest import record_line
from capbench_nb.records.manifest import validate_manifest
from capbench_nb.records.run import MANIFEST, RESULTS, read_results
from capbench_nb.format import TELEMETRY_FIELDS

__all__ = [
    "ImportReport",
    "ImportedAttempt",
    "RECORD_FILE",
    "SUCCESS_TOLERANCE",
    "artifact_dir",
    "base_record",
    "describe",
    "finite_or_text",
    "pointer",
    "read_source_bytes",
    "sha256_hex",
    "unit_score",
    "write_imported_run",
]

#: The per-attempt copy of the imported source record.
RECORD_FILE = "record.json"
#: A numeric score or reward counts as a success when it is within this of 1.
SUCCESS_TOLERANCE = 1e-6
_MAX_DIR_NAME = 120


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote."""

    path: Path
    tasks: int
    attempts: int
    ineligible: int
    replaced: bool = False


@dataclass
class ImportedAttempt:
    """One attempt: its results.jsonl record and the source record kept as record.json."""

    record: dict
    source: Any = field(repr=False)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex sha256 of ``data`` (it names a source file in the manifest's ``import.sources``)."""
    return hashlib.sha256(data).hexdigest()


def describe(value: Any) -> str:
    """A source value as an error message quotes it: JSON text (anything else ``str()``), cut at 60 characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read_source_bytes(path: str | os.PathLike, what: str) -> bytes:
    """The bytes of an input file, or a one-line InvalidRunError."""
    file = str(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InvalidRunError(file, "import-missing", f"no such {what}") from None
    except IsADirectoryError:
        raise InvalidRunError(file, "import-unreadable", f"a directory, not a {what}") from None
    except OSError as exc:
        raise InvalidRunError(file, "import-unreadable", f"cannot read the {what}: {exc.strerror}") from None


def dir_name(task_id: str) -> str:
    """A file-system-safe, injective directory name for a task id.

    Percent-encoding of every byte outside ``A-Za-z0-9_.-~`` (so ``/`` and
    ``%`` are escaped); ``.`` and ``..`` are encoded too; a name longer than
    120 characters is cut and suffixed with a hash of the whole id.
    """
    name = quote(task_id, safe="")
    if name in (".", ".."):
        name = name.replace(".", "%2E")
    if len(name) > _MAX_DIR_NAME:
        name = name[: _MAX_DIR_NAME - 17] + "~" + sha256_hex(task_id.encode("utf-8", "surrogatepass"))[:16]
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
    return {
        "task_id": task_id,
        "attempt": attempt,
        "artifact_dir": artifact_dir(task_id, attempt),
        "success": False,
        "agent_eligible": True,
        "failure_class": "agent",
        "failure_stage": None,
        "evidence": [],
        "quality_score": None,
        "telemetry": dict.fromkeys(TELEMETRY_FIELDS),
        "telemetry_source": {},
        "cost": None,
        "cost_source": None,
    }


def _sort_key(record: dict) -> tuple:
    return (record["task_id"].encode("utf-8", "surrogatepass"), record["attempt"])


def _check_output(out: Path, force: bool) -> bool:
    """Whether ``out`` holds a run that will be replaced; refuse what must not be touched."""
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
    return True


def write_imported_run(out: str | os.PathLike, manifest: dict, attempts: list[ImportedAttempt], *,
                       force: bool = False) -> ImportReport:
    """Write a complete run directory at ``out`` from a manifest and imported attempts.

    The same inputs give the same bytes: records sorted by task (UTF-8 bytes)
    then attempt, canonical JSON, nothing from the clock.  Everything is
    written into a temporary sibling directory, validated as ``load_run``
    would (evidence included), then renamed to ``out``.  An existing ``out``
    must be empty, or (with ``force``) a run directory, which is replaced.

    Raises
    ------
    InvalidRunError
        An output that must not be replaced, or (a bug) an invalid import.
    """
    out = Path(out)
    validate_manifest(manifest, file=str(out / MANIFEST))
    replace = _check_output(out, force)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.import-"))
    try:
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
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.replaced-"))
            os.rmdir(old)
            os.rename(out, old)
            os.rename(tmp, out)
            if old.is_symlink():  # --out named a symlink: the link goes, its target stays
                old.unlink()
            else:
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    ineligible = sum(1 for r in records if not r["agent_eligible"])
    tasks = len(manifest["plan"]["tasks"])
    return ImportReport(path=out, tasks=tasks, attempts=len(records), ineligible=ineligible, replaced=replace)
