"""A run's lock facts, read once by ``load_run`` (spec section 12): its lock copy and its drifted attempts.

Metrics (the ``lock`` block of metrics.json, the ``lock`` warning of compare) and pages (the report's
'Suite lock' section) take these from the loaded :class:`~capbench_nb.records.run.Run`; none of them
reads the run's files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import ATTEMPT
from capbench_nb.format.lock import LOCK_FILE
from capbench_nb.io.jsonparse import parse_document
from capbench_nb.records.lock import Lock, load_lock
from capbench_nb.records.manifest import manifest_lock
from capbench_nb.records.outcome import preflight_drift

__all__ = ["Drift", "read_lock_copy", "read_drifts"]


@dataclass(frozen=True)
class Drift:
    """A counted attempt whose attempt.json shows drift, with the drift's evidence (spec section 12).

    ``preflight`` is the attempt.json's ``preflight`` object (what the report shows as expected vs
    observed), None when it is not an object.
    """

    task_id: str
    attempt: int
    line: int
    eligible: bool
    evidence: tuple[str, ...]
    artifact_dir: str | None
    preflight: dict | None = field(default=None, compare=False, repr=False)


def read_lock_copy(run_dir: str | os.PathLike, manifest: dict) -> Lock | None:
    """The run's copy of its lock (``RUN_DIR/suite.lock.json``), None when it has none.

    Raises
    ------
    InvalidRunError
        An invalid copy; or a copy whose digest is not the manifest's ``suite.lock`` (``lock-copy``:
        the run is invalid, spec section 12).
    """
    copy = Path(run_dir) / LOCK_FILE
    if not copy.exists():
        return None
    lock = load_lock(copy)
    named = manifest_lock(manifest)
    if lock.digest != named:
        raise InvalidRunError(str(copy), "lock-copy", f"the run's lock copy has digest {lock.digest}, but its "
                              f"manifest names suite.lock {named if named is not None else 'none'}", pointer="/digest")
    return lock


def _attempt_doc(run_dir: Path, artifact_dir) -> dict | None:
    """The attempt.json of a record, or None when it cannot be read (a run shared without attempts/)."""
    if not isinstance(artifact_dir, str):
        return None
    file = run_dir / artifact_dir / ATTEMPT
    try:
        doc = parse_document(file.read_bytes(), file=str(file), rule="artifact-json")
    except (OSError, InvalidRunError):
        return None
    return doc if isinstance(doc, dict) else None


def read_drifts(run_dir: str | os.PathLike, records: pd.DataFrame, manifest: dict) -> tuple[Drift, ...]:
    """The counted attempts (``anomaly`` null) whose attempt.json shows drift against the manifest's
    ``suite.lock``, in file order.  An attempt.json that cannot be read shows none."""
    lock = manifest_lock(manifest)
    counted = records[records["anomaly"].isna()]
    out = []
    for task_id, attempt, line, eligible, artifact_dir in zip(
            counted["task_id"], counted["attempt"], counted["line"], counted["agent_eligible"],
            counted["artifact_dir"]):
        artifact_dir = artifact_dir if isinstance(artifact_dir, str) else None  # pd.NA: no artifact directory
        doc = _attempt_doc(Path(run_dir), artifact_dir)
        evidence = preflight_drift(doc, lock) if doc is not None else ()
        if evidence:
            preflight = doc.get("preflight")
            out.append(Drift(str(task_id), int(attempt), int(line), bool(eligible), evidence, artifact_dir,
                             preflight if isinstance(preflight, dict) else None))
    return tuple(out)
