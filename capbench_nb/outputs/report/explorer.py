"""The explorer of report.html: every planned task, its attempts and their evidence, as page data.

:func:`page_data` gathers what the explorer shows from the metrics document (``per_task``: counts,
first success, cost to first success, oracle score; ``health.per_task``: consistency,
ineligibility, quarantine; never recomputed), from the loaded run (each counted attempt's stage,
quality score and telemetry) and from the records views (each planned attempt's outcome code:
:func:`capbench_nb.records.views.task_outcome_codes`; each attempt's evidence values, error
message and artifact files, read within the size limits below:
:func:`capbench_nb.records.details.attempt_details`).  Rendering reads no file.
:func:`explorer_html` renders it as one JSON data island (``<script type="application/json">``,
with ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes) followed by the page's own small
inline script (``page_assets/explorer.js``), which reads the island with ``JSON.parse`` and inserts
every run-supplied string as text, never as markup.  Nothing is loaded from the network.

Size policy
-----------
report.html carries every planned task and every counted attempt, with these limits:

- every planned task is in the task table, with its outcome code for each planned attempt
  (``S`` success, ``A`` agent, ``E`` environment, ``V`` evaluation, ``K`` skipped, ``U`` unknown
  and eligible, ``X`` unknown and not eligible, ``.`` no record), none cut;
- up to :data:`FULL_DETAIL_ATTEMPTS` counted attempts, every attempt has its details (stage,
  quality score, cost, telemetry, evidence references, artifact files); in a larger run the
  details of successful attempts are summarised (the attempt grid still shows each one as a
  success), while every failed or ineligible attempt keeps all of its details;
- the artifacts of at most :data:`RESOLVE_BUDGET` attempts are read (failed and ineligible
  attempts first, in plan order): for those, each evidence reference is resolved inline to the
  JSON value its pointer names (shown up to :data:`VALUE_CHARS` characters), the error message of
  an errored or crashed attempt is shown, and artifact files are linked only when they exist;
  beyond the budget the references and files are named and linked unchecked;
- artifact links are relative to the folder the report is read from (``report_dir``), so they
  keep working when the run and the report are moved together; without a ``report_dir`` they are
  relative to the working directory.

Measured with ``benchmarks/report_size.py``: a 100,000-attempt run gives a report of about
10 MB that is interactive in headless Chromium in well under 3 s.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from capbench_nb.format import CLASS_KEYS, FAILURE_STAGES, TELEMETRY
from capbench_nb.metrics.health import CONSISTENCY, INELIGIBLE_KEYS
from capbench_nb.outputs.html.assets import json_island, page_asset
from capbench_nb.outputs.html.escaping import plain_label
from capbench_nb.records.details import ERROR_CHARS, FULL_DETAIL_ATTEMPTS, RESOLVE_BUDGET, VALUE_CHARS, attempt_details
from capbench_nb.records.views import task_outcome_codes

__all__ = [
    "ERROR_CHARS",
    "FULL_DETAIL_ATTEMPTS",
    "RESOLVE_BUDGET",
    "VALUE_CHARS",
    "page_data",
    "explorer_html",
    "Explorer",
]




def _numbers(column: pd.Series) -> list:
    """A numeric or boolean column as JSON-ready values: integral numbers as ints, booleans as 1/0, nulls as None."""
    if pd.api.types.is_bool_dtype(column.dtype):
        values = column.to_numpy(dtype="float64", na_value=np.nan)
    else:
        values = column.to_numpy(dtype="float64", na_value=np.nan)
    missing = np.isnan(values)
    if not missing.all() and np.all(np.mod(values[~missing], 1) == 0) and np.all(np.abs(values[~missing]) < 2**53):
        out = np.where(missing, 0, values).astype(np.int64).tolist()
    else:
        out = [round(v, 6) for v in np.where(missing, 0, values).tolist()]
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out


def _link_base(run_dir: Path, report_dir: str | os.PathLike | None) -> str:
    """The run directory as a percent-encoded path relative to where the report is read from."""
    start = os.path.abspath(report_dir) if report_dir is not None else os.getcwd()
    rel = posixpath.normpath(os.path.relpath(os.path.abspath(run_dir), start).replace(os.sep, "/"))
    # quote() leaves only unreserved characters and "/": no scheme, query or fragment can appear.
    return "" if rel == "." else quote(rel, safe="/") + "/"


def _aligned(entries: Any, ids: list[str]) -> list[Mapping]:
    """The document's per-task entries in plan order (``{}`` for a task the list lacks)."""
    entries = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    by_id = {e.get("task_id"): e for e in entries}
    return [entries[i] if i < len(entries) and entries[i].get("task_id") == t else by_id.get(t, {})
            for i, t in enumerate(ids)]


def _health_columns(doc: Mapping, ids: list[str]) -> dict:
    """The explorer's suite-health columns from the document's ``health.per_task`` (null without one):
    ``consistency`` an index into :data:`CONSISTENCY` (null: not k-eligible), ``ineligible`` the
    counts by class of :data:`INELIGIBLE_KEYS`, ``quarantine`` 1 or 0."""
    health = doc.get("health") if isinstance(doc.get("health"), Mapping) else {}
    rows = _aligned(health.get("per_task"), ids)
    words = {w: i for i, w in enumerate(CONSISTENCY)}

    def ineligible(e):
        by = e.get("ineligible")
        return [by.get(c) for c in INELIGIBLE_KEYS] if isinstance(by, Mapping) else None

    return {
        "consistency": [words.get(e.get("consistency")) for e in rows],
        "ineligible": [ineligible(e) for e in rows],
        "quarantine": [None if e.get("quarantine") is None else int(bool(e.get("quarantine"))) for e in rows],
    }


def _task_table(doc: Mapping, run, codes_by_task: list[str]) -> dict:
    plan = run.plan
    ids = [str(t) for t in plan["task_id"].astype(object)]
    rows = _aligned(doc.get("per_task"), ids)

    def cost(e, key):
        c = e.get("cost_to_first_success")
        return c.get(key) if isinstance(c, Mapping) else None

    labels = []
    for name in plan.columns:
        if name in ("task_id", "planned_repeats"):
            continue
        values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else str(v)
                  for v in plan[name].astype(object)]
        distinct = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(distinct)}
        labels.append({"name": str(name), "values": distinct, "codes": [index.get(v) for v in values]})
    return {
        "id": ids,
        "labels": labels,
        "planned": [int(p) for p in plan["planned_repeats"]],
        "outcomes": codes_by_task,
        "attempts": [e.get("attempts") for e in rows],
        "eligible": [e.get("eligible") for e in rows],
        "successes": [e.get("successes") for e in rows],
        "k_eligible": [None if e.get("k_eligible") is None else int(bool(e.get("k_eligible"))) for e in rows],
        "first_success": [e.get("first_success_attempt") for e in rows],
        "wall_to_first": [cost(e, "task_wall_ms") for e in rows],
        "tokens_to_first": [cost(e, "total_tokens") for e in rows],
        "cost_to_first": [cost(e, "cost") for e in rows],
        "oracle": [e.get("oracle_best_score") for e in rows],
        **_health_columns(doc, ids),
    }


def _intern(table: list, index: dict, key, value) -> int:
    """The position of ``key`` in ``table`` (by ``index``), ``value`` appended when it is new."""
    i = index.setdefault(key, len(table))
    if i == len(table):
        table.append(value)
    return i


def _directories_and_files(details, ids: list, dpos, dnums: list) -> tuple[list, list, list, list, list]:
    """Per detailed attempt, its artifact directory and its file set, each stored once.

    Returns ``(dir_values, dirs, files, file_sets, file_of)``: ``dirs[r]`` is None, -1 for the conventional
    ``attempts/<task>/<attempt>`` or an index into ``dir_values``; ``file_of[r]`` None or an index into
    ``file_sets``, lists of indices into ``files`` (``-1 - i`` for a file looked for and missing).
    """
    adirs = details.rows["artifact_dir"].astype(object).to_numpy()
    files: list[str] = []
    file_index: dict[str, int] = {}
    file_sets: list[list[int]] = []
    set_index: dict[tuple, int] = {}
    dir_values: list[str] = []
    dir_index: dict[str, int] = {}
    dirs, file_of = [], []
    for r in range(len(adirs)):
        adir = adirs[r] if isinstance(adirs[r], str) else None
        if adir is None:
            dirs.append(None)
        elif adir == f"attempts/{ids[dpos[r]]}/{dnums[r]}":
            dirs.append(-1)  # the conventional directory, rebuilt by the script
        else:
            dirs.append(_intern(dir_values, dir_index, adir, adir))
        named = details.files[r]
        if named is None:
            file_of.append(None)
            continue
        entry = []
        for f, exists in named:
            i = _intern(files, file_index, f, f)
            entry.append(i if exists is not False else -1 - i)
        file_of.append(_intern(file_sets, set_index, tuple(entry), entry))
    return dir_values, dirs, files, file_sets, file_of


def page_data(doc: Mapping, run, *, report_dir: str | os.PathLike | None = None,
              full_detail: int = FULL_DETAIL_ATTEMPTS, resolve_budget: int = RESOLVE_BUDGET) -> dict:
    """The explorer's page data of a run: every planned task and every counted attempt.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``per_task``, ``k``).
    run : Run
        The loaded run (attempt outcomes, stages, telemetry, evidence, artifact directories).
    report_dir : path-like, optional
        The folder report.html is read from: artifact links are relative to it.
    full_detail, resolve_budget : int
        The size policy's limits (see the module docstring).

    Returns
    -------
    dict
        ``tasks`` (one entry per planned task, columns as lists), ``attempts`` (the detailed
        attempts in plan then attempt order, columns as lists: task ``i``'s rows are
        ``start[i]:start[i+1]``; ``code`` and ``stage`` one character per row; ``dir`` null,
        -1 for the conventional ``attempts/<task>/<attempt>`` or an index into ``dirs``;
        ``files`` an index into ``file_sets``, lists of indices into ``files``, negative
        ``-1-i`` when the file was looked for and is missing; ``evidence`` and ``errors`` keyed
        by row), the vocabularies (``classes``, ``stages``, ``telemetry`` with units) and
        ``policy`` (what was summarised or left unresolved).
    """
    details = attempt_details(run, full_detail=full_detail, resolve_budget=resolve_budget)
    tasks = _task_table(doc, run, task_outcome_codes(run))
    d, dpos, dcodes = details.rows, details.task_position, details.codes
    ids = tasks["id"]
    stage_index = {s: i for i, s in enumerate(FAILURE_STAGES)}
    stages = [stage_index.get(s) if isinstance(s, str) else None for s in d["failure_stage"].astype(object)]
    dnums = d["attempt"].to_numpy(dtype="int64").tolist()
    dir_values, dirs, files, file_sets, file_of = _directories_and_files(details, ids, dpos, dnums)
    starts = np.searchsorted(dpos, np.arange(len(ids) + 1)).tolist() if len(ids) else [0]
    telemetry = [[t.name, t.unit, t.kind] for t in TELEMETRY]
    return {
        "version": 1,
        "k": int(doc.get("k") or run.k),
        "classes": list(CLASS_KEYS),
        "stages": list(FAILURE_STAGES),
        "telemetry": telemetry,
        "files": files,
        "file_sets": file_sets,
        "dirs": dir_values,
        "link_base": _link_base(run.path, report_dir),
        "tasks": tasks,
        "attempts": {
            "start": starts,
            "attempt": dnums,
            "code": "".join(dcodes.tolist()),
            "stage": "".join("." if st is None else str(st) for st in stages),
            "quality": _numbers(d["quality_score"]),
            "cost": _numbers(d["cost"]),
            "telemetry": [_numbers(d[t.name]) for t in TELEMETRY],
            "dir": dirs,
            "evidence": details.evidence,
            "errors": details.errors,
            "files": file_of,
        },
        "policy": {
            "attempts": details.attempts,
            "detailed": int(len(d)),
            "successes_summarised": details.summarised,
            "full_detail": details.full_detail,
            "resolved": details.resolved,
            "resolve_budget": details.resolve_budget,
        },
    }


def explorer_html(doc: Mapping, run, *, report_dir: str | os.PathLike | None = None,
                  element_id: str = "cb-explorer", **limits) -> str:
    """The explorer as one HTML block: its style, a container, the JSON data island and the script.

    ``element_id`` names the container (the island is ``ELEMENT_ID-data``); it must be a plain
    identifier (letters, digits, ``-`` and ``_``), never run data.
    """
    if not element_id.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"element_id must be a plain identifier, got {element_id!r}")
    return (
        f"<style>{page_asset('explorer.css')}</style>"
        f'<div class="cbx" id="{element_id}" data-island="{element_id}-data">'
        '<p class="cbx-loading">The task explorer needs JavaScript.</p></div>'
        f"{json_island(page_data(doc, run, report_dir=report_dir, **limits), element_id + '-data')}"
        f"<script>{page_asset('explorer.js')}</script>"
    )


class Explorer:
    """The explorer of one run for Jupyter (``cb.explore(run)``): :func:`explorer_html` as its HTML view."""

    def __init__(self, doc: Mapping, run) -> None:
        self.doc, self.run = doc, run

    def __repr__(self) -> str:
        n = len(self.doc.get("per_task") or [])
        return f"<explorer of {plain_label(self.doc.get('run_id'), 40)}: {n:,} planned tasks>"

    def _repr_html_(self) -> str:
        return explorer_html(self.doc, self.run)
