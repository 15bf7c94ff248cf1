"""A loaded run: ``load_run``, ``read_results`` and the classification of each record (spec sections 1-3, 8).

``load_run`` reads ``manifest.json`` and ``results.jsonl`` once, checks every
rule of the run format, and returns a :class:`Run`.  A broken rule raises
:class:`~capbench_nb.errors.InvalidRunError` naming the file, the physical line
and the rule; with ``strict=False`` invalid lines are skipped and listed under
``Run.anomalies`` instead, never dropped silently.

results.jsonl is read by the columnar fast path
(:mod:`~capbench_nb.records.columnar_reader`) that only accepts valid files, and otherwise by the
exact streaming reader (:mod:`~capbench_nb.records.exact_reader`), which is the reference for
every error, anomaly and line number.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import MANIFEST, RECORD_ANOMALIES, RESULTS, SELECTION
from capbench_nb.io.files import sha256_file
from capbench_nb.io.jsonparse import short
from capbench_nb.records import columnar_reader
from capbench_nb.records.drift import Drift, read_drifts, read_lock_copy
from capbench_nb.records.exact_reader import read_results_exact
from capbench_nb.records.lock import Lock
from capbench_nb.records.manifest import fixed_k, manifest_lock, plan_frame, read_manifest
from capbench_nb.records.selection import Selection, read_selection
from capbench_nb.records.views import attempt_evidence, attempts_view, evaluation_contracts, run_html, run_summary

__all__ = ["MANIFEST", "RESULTS", "Run", "load_run", "read_results", "classify_records", "sha256_file"]


@dataclass(frozen=True)
class Run:
    """A loaded, validated run.

    Attributes
    ----------
    path : Path
        The run directory.
    manifest : dict
        ``manifest.json`` as parsed.
    plan : DataFrame
        One row per planned task in plan order: ``task_id``, ``planned_repeats``
        (``repeats_override`` when set, else the task's ``repeats``), and every
        other key of the plan task as a label column (slice dimensions).
    k : int
        The run's fixed k: ``plan.k``, or the smallest planned repeats.
    records : DataFrame
        Every valid record of results.jsonl in file order, one row per attempt,
        with ``line`` (physical, 1-based), the section-3 fields, one nullable
        column per telemetry field, and ``anomaly`` (null for records that count,
        else ``above_planned_repeats`` or ``task_not_in_plan``).
    anomalies : DataFrame
        ``kind, task_id, attempt, line, reason`` in file order: records outside
        the plan or above the planned repeats, and (with ``strict=False``)
        invalid lines; then (kind ``invalid_selection_line``) the invalid lines of
        selection.jsonl, numbered in that file.
    hashes : dict
        ``{"manifest.json": "sha256:...", "results.jsonl": "sha256:..."}``, and
        ``"selection.jsonl"`` when the run has one.
    strict : bool
        Whether invalid lines raised (True) or were listed as anomalies.
    evidence_checked : bool
        Whether every evidence reference was resolved (False with ``skip_evidence``).
    selection : Selection or None
        The checked ``selection.jsonl`` of a best-of-k selector (spec section 9,
        :class:`~capbench_nb.records.selection.Selection`), None when the run has none.
    lock_copy : Lock or None
        For a run whose manifest names a lock (``suite.lock``, spec section 12): its copy
        ``suite.lock.json``, checked against that digest; None without a copy or a named lock.
    drifts : tuple of Drift
        For a run whose manifest names a lock: the counted attempts whose attempt.json shows drift,
        in file order (:func:`capbench_nb.records.drift.read_drifts`); empty otherwise.

    Notes
    -----
    ``repr(run)`` is one short line (id, suite, status, plan, attempts, k, anomalies) and
    Jupyter shows a small card (:func:`~capbench_nb.records.views.run_html`).  For reading the
    attempts use :meth:`attempts_view`; the metric functions take the run itself
    (``cb.pass_at_1(run)``) or ``run.attempts`` with ``plan=run.plan``.
    """

    path: Path
    manifest: dict
    plan: pd.DataFrame
    k: int
    records: pd.DataFrame = field(repr=False)
    anomalies: pd.DataFrame = field(repr=False)
    hashes: dict = field(repr=False)
    strict: bool = True
    evidence_checked: bool = True
    selection: Selection | None = field(default=None, repr=False)
    lock_copy: Lock | None = field(default=None, repr=False)
    drifts: tuple[Drift, ...] = field(default=(), repr=False)

    @property
    def attempts(self) -> pd.DataFrame:
        """The records that enter metrics and counts: planned tasks, within planned repeats."""
        if not self.records["anomaly"].notna().any():
            return self.records
        return self.records[self.records["anomaly"].isna()]

    def attempts_view(self, *, provenance: bool = False) -> pd.DataFrame:
        """The counted attempts for reading: an ``outcome`` column, evidence as lists, provenance out.

        See :func:`capbench_nb.records.views.attempts_view` for the columns; ``provenance=True``
        adds ``line``, ``artifact_dir``, ``telemetry_source`` (a dict) and ``cost_source``.
        """
        return attempts_view(self, provenance=provenance)

    def evaluation_contracts(self, tasks) -> dict[str, tuple[tuple[str, ...], bool]]:
        """Per task of ``tasks``: (sorted hard-assertion names, judge enabled) of its first evaluated
        attempt (:func:`capbench_nb.records.views.evaluation_contracts`)."""
        return evaluation_contracts(self, tasks)

    def evidence(self, task_id: str, attempt: int) -> dict:
        """``{reference: the JSON value it points at}`` for one attempt's evidence, in record order.

        Raises ``KeyError`` when the run has no such counted attempt
        (:func:`capbench_nb.records.views.attempt_evidence`).
        """
        return attempt_evidence(self, task_id, attempt)

    def __repr__(self) -> str:
        return run_summary(self)

    def _repr_html_(self) -> str:
        return run_html(self)

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    @property
    def judge(self) -> bool | None:
        """``config.judge`` of the manifest (False: a ``--no-judge`` run), or None."""
        value = (self.manifest.get("config") or {}).get("judge")
        return value if isinstance(value, bool) else None



def read_results(
    path: str | os.PathLike, *, run_dir: str | os.PathLike | None = None, strict: bool = True,
    skip_evidence: bool = False,
) -> tuple[pd.DataFrame, list[dict], str]:
    """Read and validate ``results.jsonl``.

    A valid file is read by the columnar fast path (:func:`~capbench_nb.records.columnar_reader.read_results_fast`);
    any file it does not accept, and so every file with an invalid line, is
    read by the exact streaming path (:func:`~capbench_nb.records.exact_reader.read_results_exact`), which names
    the first broken rule and its line (or lists every invalid line).  Both
    give the same records for every file the fast path accepts.

    Parameters
    ----------
    path : path-like
        The results file.
    run_dir : path-like, optional
        Directory that ``artifact_dir`` values are relative to; defaults to the
        file's directory.
    strict : bool, default True
        Raise on the first invalid line (True), or skip invalid lines and
        return them as ``invalid_line`` anomalies (False).
    skip_evidence : bool, default False
        Do not resolve evidence references (spec section 8, ``--skip-evidence``: a run shared
        without its attempts/).  Every other rule is checked as usual.

    Returns
    -------
    records : DataFrame
        Valid records in file order (see :class:`Run`), without ``anomaly``.
    invalid : list of dict
        ``{"kind": "invalid_line", "task_id", "attempt", "line", "reason", "rule"}``
        per skipped line (always empty when ``strict``).
    sha256 : str
        ``"sha256:"`` + hex digest of the bytes read.
    """

    fast = columnar_reader.read_results_fast(path, run_dir=run_dir, skip_evidence=skip_evidence)  # looked up here: a test may replace it
    if fast is not None:
        records, digest = fast
        return records, [], digest
    return read_results_exact(path, run_dir=run_dir, strict=strict, skip_evidence=skip_evidence)


def classify_records(records: pd.DataFrame, plan: pd.DataFrame) -> pd.Series:
    """Whether each record counts (null), or is ``above_planned_repeats`` or ``task_not_in_plan``.

    The one statement of the rule (spec section 8): a record counts when its task is in the plan
    and its attempt is at most the task's planned repeats.
    """
    planned = plan["planned_repeats"].to_numpy(dtype="float64")
    codes, uniques = pd.factorize(records["task_id"])  # each distinct task id looked up once
    where = np.asarray(pd.Index(plan["task_id"].astype(object)).get_indexer(uniques), dtype=np.int64)
    pos = np.where(codes >= 0, where[np.maximum(codes, 0)], -1) if len(uniques) else np.full(len(codes), -1)
    limit = np.where(pos >= 0, planned[np.maximum(pos, 0)] if len(planned) else np.nan, np.nan)
    above, outside = RECORD_ANOMALIES
    anomaly = np.where(
        pos < 0,
        outside,
        np.where(records["attempt"].to_numpy(dtype="float64") > limit, above, None),
    )
    return pd.Series(pd.Categorical(anomaly, categories=list(RECORD_ANOMALIES)), index=records.index, name="anomaly")


def _anomaly_frame(records: pd.DataFrame, plan: pd.DataFrame, invalid: list[dict], after: list = ()) -> pd.DataFrame:
    """The anomalies of results.jsonl in file order, then ``after`` (another file's: selection.jsonl)."""
    planned = dict(zip(plan["task_id"].astype(object), plan["planned_repeats"].astype(int)))
    rows = list(invalid)
    flagged = records[records["anomaly"].notna()]
    for kind, tid, att, lineno in zip(flagged["anomaly"], flagged["task_id"], flagged["attempt"], flagged["line"]):
        if kind == RECORD_ANOMALIES[1]:
            reason = f"task {short(tid)} is not in the plan"
        else:
            reason = f"attempt {int(att)} is above the task's planned repeats ({planned[tid]})"
        rows.append({"kind": kind, "task_id": tid, "attempt": int(att), "line": int(lineno),
                     "reason": reason, "rule": kind.replace("_", "-")})
    rows.sort(key=lambda a: a["line"])
    rows.extend(after)
    frame = pd.DataFrame(rows, columns=["kind", "task_id", "attempt", "line", "reason", "rule"])
    return frame.astype({"kind": "string", "task_id": "string", "attempt": "Int64", "line": "int64",
                         "reason": "string", "rule": "string"})


def load_run(path: str | os.PathLike, *, strict: bool = True, skip_evidence: bool = False) -> Run:
    """Load and validate a run directory.

    Parameters
    ----------
    path : path-like
        The run directory, holding ``manifest.json`` and ``results.jsonl``, and
        optionally ``selection.jsonl`` (spec section 9, :attr:`Run.selection`).
    strict : bool, default True
        With ``False``, invalid lines of results.jsonl are listed in
        ``Run.anomalies`` (kind ``invalid_line``) and enter no metric or count,
        instead of raising; so are those of selection.jsonl (kind
        ``invalid_selection_line``).  The manifest is always validated strictly.
    skip_evidence : bool, default False
        Read a run shared without its attempts/: evidence references are not resolved (spec
        section 8, ``--skip-evidence``) and ``Run.evidence_checked`` is False, which
        metrics.json states as ``provenance.evidence_checked``.

    Returns
    -------
    Run

    Raises
    ------
    InvalidRunError
        The first rule broken, with file, line (for results.jsonl) and rule.
    """
    run_dir = Path(path)
    if not run_dir.exists():
        raise InvalidRunError(str(run_dir), "run-dir", "the run directory does not exist")
    if not run_dir.is_dir():
        raise InvalidRunError(str(run_dir), "run-dir", "not a directory; give the run directory")
    manifest_path = run_dir / MANIFEST
    results_path = run_dir / RESULTS
    manifest, manifest_bytes = read_manifest(manifest_path)
    plan = plan_frame(manifest)
    records, invalid, results_hash = read_results(results_path, run_dir=run_dir, strict=strict,
                                                  skip_evidence=skip_evidence)
    records["anomaly"] = classify_records(records, plan)
    hashes = {MANIFEST: "sha256:" + hashlib.sha256(manifest_bytes).hexdigest(), RESULTS: results_hash}
    selection = None
    if os.path.lexists(run_dir / SELECTION):  # optional (spec section 9); a dangling link is an error, not absence
        selection = read_selection(run_dir / SELECTION, plan=plan, records=records, strict=strict)
        hashes[SELECTION] = selection.sha256
    anomalies = _anomaly_frame(records, plan, invalid, selection.anomalies if selection is not None else ())
    locked = manifest_lock(manifest) is not None
    return Run(
        path=run_dir,
        manifest=manifest,
        plan=plan,
        k=fixed_k(manifest),
        records=records,
        anomalies=anomalies,
        hashes=hashes,
        strict=strict,
        evidence_checked=not skip_evidence,
        selection=selection,
        lock_copy=read_lock_copy(run_dir, manifest),  # a copy in a run naming no lock is invalid too (spec 12)
        drifts=read_drifts(run_dir, records, manifest) if locked else (),
    )
