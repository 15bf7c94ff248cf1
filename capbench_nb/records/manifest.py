"""manifest.json: read, validate, and the plan as a table (spec sections 2 and 8)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import (
    MANIFEST, MAX_MANIFEST_BYTES, MAX_PLAN_TASKS, MAX_REPEATS, RUN_SCHEMA_VERSION, RUN_STATUSES,
)
from capbench_nb.io.files import input_errors, open_input
from capbench_nb.io.jsonparse import (
    SURROGATE_ESCAPE, JsonMessages, find_surrogate, is_int, json_error, json_type_name, parse_document, short,
    size_text, surrogate_message,
)

__all__ = ["MANIFEST", "load_manifest", "read_manifest", "validate_manifest", "plan_frame", "fixed_k", "manifest_lock"]


def _manifest_error(file: str, pointer: str, rule: str, message: str) -> InvalidRunError:
    return InvalidRunError(file, rule, message, pointer=pointer)


def load_manifest(path: str | os.PathLike) -> dict:
    """Read and validate ``manifest.json`` (spec sections 2 and 8).

    Parameters
    ----------
    path : path-like
        The manifest file.

    Returns
    -------
    dict
        The parsed manifest, unchanged.

    Raises
    ------
    InvalidRunError
        Naming the rule broken and a JSON pointer to the offending value.
    """
    return read_manifest(path)[0]


def _read_manifest_bytes(path: str | os.PathLike, file: str) -> bytes:
    """The bytes of manifest.json: at most MAX_MANIFEST_BYTES, never blocking on a FIFO."""
    too_large = InvalidRunError(
        file, "manifest-too-large",
        f"manifest.json is larger than {size_text(MAX_MANIFEST_BYTES)} (MAX_MANIFEST_BYTES), the most this "
        "toolkit reads; is it a manifest?")
    with input_errors(file, MANIFEST, missing_rule="manifest-missing", missing="the run has no manifest.json",
                      unreadable_rule="manifest-unreadable"), open_input(path) as fh:
        if os.fstat(fh.fileno()).st_size > MAX_MANIFEST_BYTES:
            raise too_large
        raw = fh.read(MAX_MANIFEST_BYTES + 1)  # a device such as /dev/zero never ends
    if len(raw) > MAX_MANIFEST_BYTES:
        raise too_large
    return raw


#: How manifest.json words a failed parse (the line of a byte that is not UTF-8 included).
_JSON_MESSAGES = JsonMessages(utf8_line=True, utf8_rule="utf-8")


def read_manifest(path: str | os.PathLike) -> tuple[dict, bytes]:
    """:func:`load_manifest`, and the bytes it parsed (their sha256 goes into the provenance)."""
    file = str(path)
    raw = _read_manifest_bytes(path, file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json_error(exc, file=file, messages=_JSON_MESSAGES) from None
    if text.startswith("\ufeff"):
        raise InvalidRunError(file, "bom", "the file starts with a byte-order mark; JSON in UTF-8 must not", line=1)
    manifest = parse_document(text, file=file, messages=_JSON_MESSAGES, strict=True)
    _validate_manifest(manifest, file=file, unicode=bool(SURROGATE_ESCAPE.search(text)))
    return manifest, raw


def validate_manifest(manifest: Any, *, file: str = MANIFEST) -> None:
    """Check a parsed manifest against spec sections 2 and 8; raise on the first problem.

    Beyond the format: every string (key or value) must be Unicode text (no lone surrogate,
    ``invalid-unicode``), planned repeats at most :data:`~capbench_nb.format.MAX_REPEATS`
    (``repeats-too-large``) and at most :data:`~capbench_nb.format.MAX_PLAN_TASKS` tasks
    (``plan-too-large``).
    """
    _validate_manifest(manifest, file=file, unicode=True)


def _validate_manifest(manifest: Any, *, file: str, unicode: bool) -> None:
    """:func:`validate_manifest`; ``unicode=False`` skips the surrogate walk (the text holds no
    surrogate escape, so no string can hold a surrogate)."""

    def bad(pointer: str, rule: str, message: str):
        raise _manifest_error(file, pointer, rule, message)

    if unicode:
        found = find_surrogate(manifest)
        if found is not None:
            bad(found[0], "invalid-unicode", surrogate_message(found[0], found[1]))
    if not isinstance(manifest, dict):
        bad("", "manifest-type", f"the manifest must be a JSON object, not {json_type_name(manifest)}")
    if manifest.get("schema_version") != RUN_SCHEMA_VERSION:
        bad(
            "/schema_version",
            "schema-version",
            f"schema_version must be {RUN_SCHEMA_VERSION!r}, found {short(manifest.get('schema_version'))}",
        )
    run_id = manifest.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        bad("/run_id", "run-id", f"run_id must be a non-empty string, found {short(run_id)}")
    status = manifest.get("status")
    if status not in RUN_STATUSES:
        bad("/status", "status", f"status must be one of {', '.join(RUN_STATUSES)}; found {short(status)}")
    if "suite" in manifest:
        suite = manifest["suite"]
        if not isinstance(suite, dict):
            bad("/suite", "suite", f"suite must be an object with name and version, not {json_type_name(suite)}")
        for key in ("name", "version"):
            if key in suite and not isinstance(suite[key], str):
                bad(f"/suite/{key}", "suite", f"suite.{key} must be a string, not {json_type_name(suite[key])}")
    if "created_at" in manifest and not isinstance(manifest["created_at"], (str, type(None))):
        bad("/created_at", "created-at", "created_at must be a string (ISO 8601 time)")
    for key in ("runner", "config"):
        if key in manifest and not isinstance(manifest[key], (dict, type(None))):
            bad(f"/{key}", key, f"{key} must be an object, not {json_type_name(manifest[key])}")
    plan = manifest.get("plan")
    if not isinstance(plan, dict):
        bad("/plan", "plan", f"plan must be an object, found {short(plan)}")
    override = plan.get("repeats_override")
    if override is not None and (not is_int(override) or override < 1):
        bad("/plan/repeats_override", "repeats-override", f"repeats_override must be null or an integer >= 1, found {short(override)}")
    if override is not None and override > MAX_REPEATS:
        bad("/plan/repeats_override", "repeats-too-large",
            f"repeats_override is {short(override)}, above {MAX_REPEATS}, the most planned attempts of a task this toolkit accepts")
    tasks = plan.get("tasks")
    if not isinstance(tasks, list):
        bad("/plan/tasks", "plan-tasks", f"plan.tasks must be a list of tasks, found {short(tasks)}")
    if not tasks:
        bad("/plan/tasks", "plan-empty", "the plan has no tasks")
    if len(tasks) > MAX_PLAN_TASKS:  # before the per-task checks: their cost grows with the plan
        bad("/plan/tasks", "plan-too-large",
            f"the plan has {len(tasks):,} tasks, above {MAX_PLAN_TASKS:,} (MAX_PLAN_TASKS), the most this toolkit accepts")
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        where = f"/plan/tasks/{i}"
        if not isinstance(task, dict):
            bad(where, "task-type", f"a plan task must be an object, not {json_type_name(task)}")
        tid = task.get("task_id")
        if not isinstance(tid, str) or not tid:
            bad(f"{where}/task_id", "task-id", f"task_id must be a non-empty string, found {short(tid)}")
        if tid in seen:
            bad(f"{where}/task_id", "task-id-duplicate", f"task_id {short(tid)} is already planned at /plan/tasks/{seen[tid]}")
        seen[tid] = i
        repeats = task.get("repeats")
        if override is None or "repeats" in task:
            if not is_int(repeats) or repeats < 1:
                bad(f"{where}/repeats", "repeats", f"repeats of task {short(tid)} must be an integer >= 1, found {short(repeats)}")
            if repeats > MAX_REPEATS:
                bad(f"{where}/repeats", "repeats-too-large",
                    f"repeats of task {short(tid)} is {short(repeats)}, above {MAX_REPEATS}, the most planned "
                    "attempts of a task this toolkit accepts")
    k = plan.get("k")
    if k is not None:
        smallest = override if override is not None else min(t["repeats"] for t in tasks)
        if not is_int(k):
            bad("/plan/k", "plan-k", f"plan.k must be an integer or null, found {short(k)}")
        if k != smallest:
            bad("/plan/k", "plan-k", f"plan.k is {k} but the smallest planned repeats is {smallest}; k must equal it")


def plan_frame(manifest: dict) -> pd.DataFrame:
    """The plan as a DataFrame: ``task_id``, ``planned_repeats``, then label columns.

    Labels are every key of a plan task other than ``task_id`` and ``repeats``;
    a task without a label has it null.
    """
    plan = manifest["plan"]
    override = plan.get("repeats_override")
    tasks = plan["tasks"]
    labels: list[str] = []
    for task in tasks:
        for key in task:
            if key not in ("task_id", "repeats") and key not in labels:
                labels.append(key)
    # A label may not shadow a column of ours.
    column = {key: f"label:{key}" if key == "planned_repeats" else key for key in labels}
    frame = pd.DataFrame(
        {
            "task_id": pd.array([t["task_id"] for t in tasks], dtype="string"),
            "planned_repeats": np.array(
                [override if override is not None else t["repeats"] for t in tasks], dtype="int64"
            ),
        }
    )
    for key in labels:
        values = [t.get(key) for t in tasks]
        if all(v is None or isinstance(v, str) for v in values):
            frame[column[key]] = pd.array(values, dtype="string")
        else:
            frame[column[key]] = pd.Series(values, dtype="object")
    return frame


def manifest_lock(manifest: dict) -> str | None:
    """The digest of the lock a run names (``suite.lock``, spec section 12), or None."""
    suite = manifest.get("suite")
    lock = suite.get("lock") if isinstance(suite, dict) else None
    return lock if isinstance(lock, str) else None


def fixed_k(manifest: dict) -> int:
    """The run's fixed k: ``plan.k`` when present, else the smallest planned repeats.

    Never derived from the attempts that happened to finish (spec section 2).
    """
    plan = manifest["plan"]
    if plan.get("k") is not None:
        return int(plan["k"])
    override = plan.get("repeats_override")
    if override is not None:
        return int(override)
    return int(min(t["repeats"] for t in plan["tasks"]))

