"""``ingest``: derive results.jsonl from a run's attempt directories (spec sections 1 and 4).

Every ``attempts/*/*/`` directory gives one record (:func:`derive_record`);
the records are sorted by task then attempt and written atomically.  An
existing results.jsonl is never overwritten unless asked (``force``), and then
a backup is kept.  The written file is loaded back and validated before
ingest reports success, so what ingest writes is what ``load_run`` accepts.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .derivation import PriceTable, ToolConfig, derive_record, load_tool_config, read_artifacts
from .errors import InvalidRunError
from .evidence import EvidenceResolver, EvidenceError
from .export import write_atomic
from .loading import MANIFEST, RESULTS, load_manifest, read_results
from .schema import TELEMETRY_FIELDS

__all__ = ["IngestReport", "ingest_run", "attempt_directories", "record_line"]


@dataclass(frozen=True)
class IngestReport:
    """What ingest wrote."""

    path: Path
    records: int
    errors: int
    backup: Path | None


def attempt_directories(run_dir: str | os.PathLike) -> list[Path]:
    """The ``attempts/<task>/<attempt>/`` directories of a run, in a stable (byte-sorted) order."""
    root = Path(run_dir) / "attempts"
    if not root.is_dir():
        return []
    found = []
    for task_dir in sorted(root.iterdir(), key=lambda p: os.fsencode(p.name)):
        if task_dir.is_dir():
            found.extend(p for p in sorted(task_dir.iterdir(), key=lambda p: os.fsencode(p.name)) if p.is_dir())
    return found


def record_line(record: dict) -> str:
    """One results.jsonl line: compact JSON in the record's key order, UTF-8 text, no NaN."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(", ", ": ")) + "\n"


def _error_record(directory: Path, run_dir: Path, error: InvalidRunError) -> dict | None:
    """The ``unknown``, ineligible record of an attempt whose artifacts are broken (``--allow-invalid``).

    Its ids come from attempt.json when that file reads, else from the
    directory names (the only other place they exist).  Evidence is kept only
    for references that resolve; here that is attempt.json itself when it parses.
    """
    attempt_doc = None
    try:
        attempt_doc = json.loads((directory / "attempt.json").read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        pass
    task_id = attempt_doc.get("task_id") if isinstance(attempt_doc, dict) else None
    number = attempt_doc.get("attempt") if isinstance(attempt_doc, dict) else None
    source = "attempt.json"
    if not isinstance(task_id, str) or not task_id or type(number) is not int or number < 1:
        task_id, source = directory.parent.name, "directory names"
        number = int(directory.name) if directory.name.isdigit() and int(directory.name) >= 1 else None
        if number is None:
            return None
    artifact_dir = Path(os.path.relpath(directory, run_dir)).as_posix()
    evidence = []
    if isinstance(attempt_doc, dict):
        try:
            EvidenceResolver(run_dir).resolve(artifact_dir, "attempt.json#")
            evidence = ["attempt.json#"]
        except EvidenceError:
            pass
    return {
        "task_id": task_id,
        "attempt": number,
        "artifact_dir": artifact_dir,
        "success": False,
        "agent_eligible": False,
        "failure_class": "unknown",
        "failure_stage": None,
        "evidence": evidence,
        "quality_score": None,
        "telemetry": dict.fromkeys(TELEMETRY_FIELDS),
        "telemetry_source": {},
        "cost": None,
        "cost_source": None,
        "ingest_error": {
            "file": Path(os.path.relpath(error.file, directory)).as_posix(),
            "rule": error.rule,
            "reason": error.message,
            "ids_from": source,
        },
    }


class _Progress:
    """A one-line progress display on a terminal; silent otherwise."""

    def __init__(self, total: int, enabled: bool | None) -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.step = max(1, total // 100)

    def update(self, done: int) -> None:
        if self.enabled and (done % self.step == 0 or done == self.total):
            print(f"\ringest: {done}/{self.total} attempts ({100 * done // max(1, self.total)}%)", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print(file=sys.stderr, flush=True)


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak{n}")
        n += 1
    return candidate


def ingest_run(
    run_dir: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    allow_invalid: bool = False,
    tools: ToolConfig | None = None,
    prices: PriceTable | None = None,
    progress: bool | None = None,
) -> IngestReport:
    """Derive every attempt record of ``run_dir`` and write results.jsonl.

    Parameters
    ----------
    run_dir : path-like
        A run directory with manifest.json and ``attempts/<task>/<attempt>/``.
    out : path-like, optional
        Where to write; default ``RUN_DIR/results.jsonl``.
    force : bool, default False
        Replace an existing file, keeping it as ``<name>.bak`` (``.bak1``, ...).
    allow_invalid : bool, default False
        Turn an attempt with broken artifacts into an ``unknown``, ineligible
        record carrying ``ingest_error`` instead of failing.
    tools : ToolConfig, optional
        Device-action and read-only tool names (package defaults otherwise).
    prices : PriceTable, optional
        Versioned price table; without it cost stays null.
    progress : bool, optional
        Show progress on stderr; default: when stderr is a terminal.

    Raises
    ------
    InvalidRunError
        A broken artifact (file named), two directories claiming the same
        ``(task_id, attempt)``, or an existing output without ``force``.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir / MANIFEST)
    config = manifest.get("config") or {}
    judge_default = config.get("judge") if isinstance(config.get("judge"), bool) else None
    model = config.get("model") if isinstance(config.get("model"), str) else None
    tools = tools or load_tool_config()
    target = Path(out) if out is not None else run_dir / RESULTS
    if target.exists() and not force:
        raise InvalidRunError(str(target), "output-exists", "results.jsonl already exists; use --force to replace it (a backup is kept)")

    directories = attempt_directories(run_dir)
    bar = _Progress(len(directories), progress)
    records: list[dict] = []
    errors = 0
    seen: dict[tuple, Path] = {}
    for done, directory in enumerate(directories, start=1):
        try:
            artifacts = read_artifacts(directory)
            record = derive_record(directory, run_dir=run_dir, judge_default=judge_default, model=model,
                                   tools=tools, prices=prices, artifacts=artifacts)
        except InvalidRunError as exc:
            if not allow_invalid:
                bar.close()
                raise
            record = _error_record(directory, run_dir, exc)
            errors += 1
            if record is None:
                bar.close()
                raise InvalidRunError(str(directory), "artifact-ids",
                                      f"cannot tell which attempt this is: {exc.message}") from None
        key = (record["task_id"], record["attempt"])
        if key in seen:
            bar.close()
            raise InvalidRunError(str(directory / "attempt.json"), "duplicate-attempt",
                                  f"task {record['task_id']!r} attempt {record['attempt']} is also recorded in {seen[key]}")
        seen[key] = directory
        records.append(record)
        bar.update(done)
    bar.close()

    records.sort(key=lambda r: (r["task_id"].encode("utf-8", "surrogatepass"), r["attempt"]))
    text = "".join(record_line(r) for r in records)
    target.parent.mkdir(parents=True, exist_ok=True)
    def check(tmp: Path) -> None:  # what ingest writes, the loader accepts
        try:
            read_results(tmp, run_dir=run_dir, strict=True)
        except InvalidRunError as exc:
            raise InvalidRunError(str(target), exc.rule, f"ingest derived an invalid record: {exc.message}",
                                  line=exc.line) from None

    backup = None
    if target.exists():
        backup = _backup_path(target)
        shutil.copy2(target, backup)
    write_atomic(target, text, check=check)
    return IngestReport(path=target, records=len(records), errors=errors, backup=backup)
