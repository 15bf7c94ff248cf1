"""A run checked against its lock (spec section 12): findings, drifted attempts, metrics.json's ``lock``.

- :func:`lock_at_hand`: the lock a check uses: the one named, else the run's copy
  ``RUN_DIR/suite.lock.json`` (whose digest must be the manifest's ``suite.lock``: ``lock-copy``), else None;
- :func:`drifted_attempts`: the counted attempts whose attempt.json shows drift (``load_run`` reads them for a
  run that names a lock: :attr:`~capbench_nb.records.run.Run.drifts`);
- :func:`check_run`: a :class:`LockCheck` (findings of every kind, in :data:`~capbench_nb.format.FINDING_KINDS`
  order); :meth:`LockCheck.document` is the ``lock`` block of metrics.json.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from capbench_nb.format.lock import FINDING_KINDS, LOCK_DETAIL_NAMES
from capbench_nb.records.drift import Drift, read_drifts, read_lock_copy
from capbench_nb.records.lock import Lock, load_lock
from capbench_nb.records.manifest import manifest_lock
from capbench_nb.records.outcome import json_equal
from capbench_nb.records.run import Run
from capbench_nb.suite.draft import plan_labels

__all__ = ["Finding", "LockCheck", "lock_at_hand", "drifted_attempts", "check_run", "lock_document"]


@dataclass(frozen=True)
class Finding:
    """One finding of ``suite check``: its ``kind`` (one of ``FINDING_KINDS``) and a one-line ``detail``."""

    kind: str
    detail: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "detail": self.detail}

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class LockCheck:
    """A run checked against its lock.

    Attributes
    ----------
    digest : str or None
        The manifest's ``suite.lock``.
    checked : bool
        Whether a lock was at hand (only then are the lock's own findings looked for).
    drifts : tuple of Drift
        The drifted counted attempts, in file order.
    drifted_tasks : tuple of str
        The tasks with a drifted attempt, in plan order.
    findings : tuple of Finding
    lock : Lock or None
    """

    digest: str | None
    checked: bool
    drifts: tuple[Drift, ...]
    drifted_tasks: tuple[str, ...]
    findings: tuple[Finding, ...]
    lock: Lock | None = None

    def document(self) -> dict:
        """The ``lock`` block of metrics.json (spec section 12)."""
        return {"digest": self.digest, "checked": self.checked, "drifted_attempts": len(self.drifts),
                "drifted_tasks": list(self.drifted_tasks), "findings": [f.to_dict() for f in self.findings]}


def lock_at_hand(run: Run, lock_path: str | os.PathLike | None = None) -> Lock | None:
    """The lock to check a run against (``suite check``): ``lock_path``, else the run's copy, else None.

    ``load_run`` reads and checks the run's copy (:attr:`Run.lock_copy`; a copy in a run that names no lock is
    invalid, ``lock-copy``); a run made otherwise (a store's, a test's) has its copy read here.

    Raises
    ------
    InvalidRunError
        An invalid lock; or the run's copy when its digest is not the manifest's ``suite.lock``.
    """
    if lock_path is not None:
        return load_lock(lock_path)
    if manifest_lock(run.manifest) is not None:
        return run.lock_copy
    return read_lock_copy(run.path, run.manifest)


def drifted_attempts(run: Run) -> tuple[Drift, ...]:
    """The run's drifted counted attempts: :attr:`Run.drifts` when it names a lock (read by ``load_run``),
    else read here against no lock (``suite check`` of a run that names none)."""
    if manifest_lock(run.manifest) is not None:
        return run.drifts
    return read_drifts(run.path, run.records, run.manifest)


def _names(items: list[str]) -> str:
    shown = ", ".join(repr(x) for x in items[:LOCK_DETAIL_NAMES])
    more = len(items) - LOCK_DETAIL_NAMES
    return (shown + (f" and {more} more" if more > 0 else "")) or "none"


def _lock_findings(run: Run, lock: Lock) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {kind: [] for kind in FINDING_KINDS}
    named = manifest_lock(run.manifest)
    if named != lock.digest:
        found["lock_digest"].append(Finding("lock_digest", f"the manifest names suite.lock "
                                            f"{named if named is not None else 'none'}, the lock's digest is {lock.digest}"))
    suite = run.manifest.get("suite") if isinstance(run.manifest.get("suite"), dict) else {}
    for key in ("name", "version"):
        if suite.get(key) != lock["suite"][key]:
            found["suite_identity"].append(Finding("suite_identity", f"suite {key}: the run's is {suite.get(key)!r}, "
                                                   f"the lock's {lock['suite'][key]!r}"))
    tasks = run.manifest["plan"]["tasks"]
    locked = {t["task_id"]: t for t in lock["tasks"]}
    planned = [t["task_id"] for t in tasks]
    only_run = [t for t in planned if t not in locked]
    only_lock = [t for t in locked if t not in set(planned)]
    if only_run or only_lock:
        found["task_set"].append(Finding("task_set", f"{len(only_run)} planned task(s) not in the lock: "
                                         f"{_names(only_run)}; {len(only_lock)} locked task(s) not planned: "
                                         f"{_names(only_lock)}"))
    override = run.manifest["plan"].get("repeats_override")
    k = lock["run_policy"]["k"]
    for task in tasks:
        if task["task_id"] in locked:
            mine, theirs = plan_labels(task), locked[task["task_id"]].get("labels") or {}
            if not json_equal(mine, theirs):
                keys = sorted(key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key))
                found["labels"].append(Finding("labels", f"task {task['task_id']!r}: labels differ on "
                                               f"{', '.join(repr(key) for key in keys)}"))
        repeats = override if override is not None else task["repeats"]
        if repeats < k:
            found["repeats"].append(Finding("repeats", f"task {task['task_id']!r} is planned {repeats} time(s), "
                                            f"below the lock's run_policy.k {k}"))
    return found


def check_run(run: Run, lock: Lock | None) -> LockCheck:
    """Check ``run`` against ``lock`` (None: only its drifted attempts are looked at).

    Findings come in :data:`~capbench_nb.format.FINDING_KINDS` order, within a kind in plan (or file)
    order: ``lock_digest``, ``suite_identity``, ``task_set`` (up to ``LOCK_DETAIL_NAMES`` task_ids of
    each side), ``labels`` and ``repeats`` (one per task), ``drift_counted`` (one per agent-eligible
    record whose attempt.json shows drift: the runner's record stands, the finding says so).
    """
    drifts = drifted_attempts(run)
    found = _lock_findings(run, lock) if lock is not None else {kind: [] for kind in FINDING_KINDS}
    for d in drifts:
        if d.eligible:
            found["drift_counted"].append(Finding(
                "drift_counted", f"results.jsonl line {d.line}: ({d.task_id!r}, {d.attempt}) is agent-eligible but "
                f"its attempt.json shows drift ({', '.join(d.evidence)}); the record stands"))
    drifted = {d.task_id for d in drifts}
    tasks = tuple(t for t in run.plan["task_id"].tolist() if t in drifted)
    return LockCheck(manifest_lock(run.manifest), lock is not None, drifts, tasks,
                     tuple(f for kind in FINDING_KINDS for f in found[kind]), lock)


def lock_document(run: Run) -> dict | None:
    """metrics.json's ``lock`` block for a run that names a lock (the run's copy checked when it has one),
    else None: a run without a lock says nothing about locks."""
    if manifest_lock(run.manifest) is None:
        return None
    return check_run(run, run.lock_copy).document()
