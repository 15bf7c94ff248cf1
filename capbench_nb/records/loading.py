"""Loading and validation of a run directory (spec sections 1-3 and 8).

``load_run`` reads ``manifest.json`` and ``results.jsonl`` once, checks every
rule of the run format, and returns a :class:`Run`.  A broken rule raises
:class:`~capbench_nb.errors.InvalidRunError` naming the file, the physical line
and the rule; with ``strict=False`` invalid lines are skipped and listed under
``Run.anomalies`` instead, never dropped silently.

results.jsonl is read by a columnar fast path (pyarrow's JSON reader, rules
checked on whole columns) that only accepts valid files, and otherwise by the
exact streaming reader, line by line into typed columns, which is the reference
for every error, anomaly and line number (see ``_read_results_fast``).

In the records table, ``telemetry_source`` holds the compact JSON text of the
record's non-null sources (a null source is no source: pyarrow cannot tell
``{"x": null}`` from ``{}``, so neither reader does).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.io.files import sha256_file
from capbench_nb.io.jsonparse import (
    SURROGATE_ESCAPE, ascii_escaped, find_surrogate, is_int, is_number, json_type_name, locate_refused_token,
    max_int_digits, parse_strict, reject_constant, short, size_text, surrogate_message,
)
from capbench_nb.io.pointer import escape_token
from capbench_nb.io.pointer import EvidenceError, parse_pointer
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.io.files import inside as _inside, check_relative_path, open_input, read_regular_file
from capbench_nb.format import (
    FAILURE_CLASSES,
    FAILURE_STAGES,
    INELIGIBLE_CLASSES,
    MAX_LINE_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_REPEATS,
    MAX_SAFE_NUMBER,
    RUN_SCHEMA_VERSION,
    RUN_STATUSES,
    TELEMETRY_BOOL_FIELDS,
    TELEMETRY_COUNT_FIELDS,
    TELEMETRY_FIELDS,
    TELEMETRY_MS_FIELDS,
)

__all__ = [
    "Run",
    "load_run",
    "load_manifest",
    "validate_manifest",
    "validate_record",
    "plan_frame",
    "fixed_k",
    "read_results",
    "sha256_file",
]

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"

_CLASSES = frozenset(("",) + FAILURE_CLASSES)
_STAGES = frozenset(FAILURE_STAGES)
_INELIGIBLE = frozenset(INELIGIBLE_CLASSES)
_COUNT = frozenset(TELEMETRY_COUNT_FIELDS)
_MS = frozenset(TELEMETRY_MS_FIELDS)
_BOOL = frozenset(TELEMETRY_BOOL_FIELDS)
_KNOWN = frozenset(
    (
        "task_id", "attempt", "artifact_dir", "success", "agent_eligible", "failure_class",
        "failure_stage", "evidence", "quality_score", "telemetry", "telemetry_source",
        "cost", "cost_source",
    )
)

#: Columns of the attempts DataFrame, before the telemetry columns.
RECORD_COLUMNS = (
    "line", "task_id", "attempt", "artifact_dir", "success", "agent_eligible",
    "failure_class", "failure_stage", "evidence", "quality_score",
    "cost", "cost_source", "telemetry_source",
)


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
        invalid lines.
    hashes : dict
        ``{"manifest.json": "sha256:...", "results.jsonl": "sha256:..."}``.
    strict : bool
        Whether invalid lines raised (True) or were listed as anomalies.
    """

    path: Path
    manifest: dict
    plan: pd.DataFrame
    k: int
    records: pd.DataFrame = field(repr=False)
    anomalies: pd.DataFrame = field(repr=False)
    hashes: dict = field(repr=False)
    strict: bool = True

    @property
    def attempts(self) -> pd.DataFrame:
        """The records that enter metrics and counts: planned tasks, within planned repeats."""
        if not self.records["anomaly"].notna().any():
            return self.records
        return self.records[self.records["anomaly"].isna()]

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    @property
    def judge(self) -> bool | None:
        """``config.judge`` of the manifest (False: a ``--no-judge`` run), or None."""
        value = (self.manifest.get("config") or {}).get("judge")
        return value if isinstance(value, bool) else None


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- manifest


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
    return _load_manifest(path)[0]


def _read_manifest_bytes(path: str | os.PathLike, file: str) -> bytes:
    """The bytes of manifest.json: at most MAX_MANIFEST_BYTES, never blocking on a FIFO."""
    too_large = InvalidRunError(
        file, "manifest-too-large",
        f"manifest.json is larger than {size_text(MAX_MANIFEST_BYTES)}, the limit this toolkit reads "
        "(a plan of about half a million tasks); is it a manifest?")
    try:
        with open_input(path) as fh:
            if os.fstat(fh.fileno()).st_size > MAX_MANIFEST_BYTES:
                raise too_large
            raw = fh.read(MAX_MANIFEST_BYTES + 1)  # a device such as /dev/zero never ends
    except FileNotFoundError:
        raise InvalidRunError(file, "manifest-missing", "the run has no manifest.json") from None
    except IsADirectoryError:
        raise InvalidRunError(file, "manifest-unreadable", "manifest.json is a directory, not a file") from None
    except OSError as exc:
        raise InvalidRunError(file, "manifest-unreadable", f"cannot read manifest.json: {exc.strerror}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise too_large
    return raw


def _load_manifest(path: str | os.PathLike) -> tuple[dict, bytes]:
    """:func:`load_manifest`, and the bytes it parsed (their sha256 goes into the provenance)."""
    file = str(path)
    raw = _read_manifest_bytes(path, file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InvalidRunError(file, "utf-8", f"not valid UTF-8 at byte {exc.start}", line=line) from None
    if text.startswith("\ufeff"):
        raise InvalidRunError(file, "bom", "the file starts with a byte-order mark; JSON in UTF-8 must not", line=1)
    try:
        manifest = parse_strict(text)
    except json.JSONDecodeError as exc:
        raise InvalidRunError(file, "json", f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except Violation as exc:
        found = locate_refused_token(text)
        pointer = found[0] if found is not None else None
        raise InvalidRunError(file, exc.rule, exc.reason, pointer=pointer) from None
    except RecursionError:
        raise InvalidRunError(file, "json", "JSON nested too deeply") from None
    _validate_manifest(manifest, file=file, unicode=bool(SURROGATE_ESCAPE.search(text)))
    return manifest, raw


def validate_manifest(manifest: Any, *, file: str = MANIFEST) -> None:
    """Check a parsed manifest against spec sections 2 and 8; raise on the first problem.

    Beyond the format: every string (key or value) must be Unicode text (no lone surrogate,
    ``invalid-unicode``), and planned repeats at most :data:`~capbench_nb.schema.MAX_REPEATS`
    (``repeats-too-large``).
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


# --------------------------------------------------------------------------- records


def _check_number(value: Any, where: str, *, integer: bool) -> None:
    if integer:
        if not is_int(value):
            raise Violation("type", f"{where} must be an integer or null, not {json_type_name(value)} {short(value)}")
    elif not is_number(value):
        raise Violation("type", f"{where} must be a number or null, not {json_type_name(value)} {short(value)}")
    if value < 0:
        raise Violation("negative", f"{where} must not be negative, found {short(value)}")
    if value > MAX_SAFE_NUMBER:
        raise Violation("number-too-large", f"{where} is {short(value)}, above 2**53-1, the largest exactly representable value")


def _record_values(obj: Any, resolver: EvidenceResolver) -> tuple:
    """Validate one parsed record and return its column values (spec section 3)."""
    if not isinstance(obj, dict):
        raise Violation("record-type", f"a record must be a JSON object, not {json_type_name(obj)}")
    for key in ("task_id", "attempt", "success", "agent_eligible", "failure_class"):
        if key not in obj:
            raise Violation("missing-field", f"the required field {key!r} is missing")
    task_id = obj["task_id"]
    if not isinstance(task_id, str):
        raise Violation("type", f"task_id must be a string, not {json_type_name(task_id)}")
    attempt = obj["attempt"]
    if not is_int(attempt) or attempt < 1:
        raise Violation("attempt", f"attempt must be an integer >= 1, found {short(attempt)}")
    if attempt > MAX_SAFE_NUMBER:
        raise Violation("number-too-large", f"attempt {attempt} is above 2**53-1")
    success = obj["success"]
    if type(success) is not bool:
        raise Violation("type", f"success must be true or false, not {json_type_name(success)}")
    eligible = obj["agent_eligible"]
    if type(eligible) is not bool:
        raise Violation("type", f"agent_eligible must be true or false, not {json_type_name(eligible)}")
    fclass = obj["failure_class"]
    if not isinstance(fclass, str):
        raise Violation("type", f"failure_class must be a string, not {json_type_name(fclass)}")
    if fclass not in _CLASSES:
        raise Violation("failure-class", f"failure_class {short(fclass)} is not one of \"\", {', '.join(FAILURE_CLASSES)}")
    stage = obj.get("failure_stage")
    if stage is not None and not isinstance(stage, str):
        raise Violation("type", f"failure_stage must be a string or null, not {json_type_name(stage)}")
    if stage is not None and stage not in _STAGES:
        raise Violation("failure-stage", f"failure_stage {short(stage)} is not null or one of {', '.join(FAILURE_STAGES)}")
    evidence = obj.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise Violation("type", "evidence must be a list of strings")
    artifact_dir = obj.get("artifact_dir")
    if artifact_dir is not None:
        if not isinstance(artifact_dir, str):
            raise Violation("type", f"artifact_dir must be a string or null, not {json_type_name(artifact_dir)}")
        try:
            check_relative_path(artifact_dir, "artifact_dir")
        except EvidenceError as exc:
            raise Violation("artifact-dir", str(exc)) from None
    quality = obj.get("quality_score")
    if quality is not None:
        if not is_number(quality):
            raise Violation("type", f"quality_score must be a number or null, not {json_type_name(quality)}")
        if not 0 <= quality <= 1:
            raise Violation("quality-score", f"quality_score {short(quality)} is outside [0, 1]")
    cost = obj.get("cost")
    if cost is not None:
        _check_number(cost, "cost", integer=False)
    cost_source = obj.get("cost_source")
    if cost_source is not None and not isinstance(cost_source, str):
        raise Violation("type", f"cost_source must be a string or null, not {json_type_name(cost_source)}")
    telemetry = obj.get("telemetry", {})
    if not isinstance(telemetry, dict):
        raise Violation("type", f"telemetry must be an object, not {json_type_name(telemetry)}")
    tele_values = []
    for name in TELEMETRY_FIELDS:
        value = telemetry.get(name)
        if value is not None:
            if name in _BOOL:
                if type(value) is not bool:
                    raise Violation("type", f"telemetry.{name} must be true, false or null, not {json_type_name(value)}")
            else:
                _check_number(value, f"telemetry.{name}", integer=name in _COUNT)
        tele_values.append(value)
    source = obj.get("telemetry_source", {})
    if not isinstance(source, dict) or not all(isinstance(v, (str, type(None))) for v in source.values()):
        raise Violation("type", "telemetry_source must be an object whose values are strings")

    # Invariants (spec section 3, in its order; then section 8).
    if success and not eligible:
        raise Violation("success-implies-eligible", "success is true but agent_eligible is false")
    if success and fclass != "":
        raise Violation("success-implies-no-class", f"success is true but failure_class is {short(fclass)}, not \"\"")
    if not success and fclass == "":
        raise Violation("failure-needs-class", "success is false but failure_class is \"\"")
    if fclass in _INELIGIBLE and eligible:
        raise Violation("class-implies-ineligible", f"failure_class {fclass!r} requires agent_eligible false")
    if fclass == "agent" and not eligible:
        raise Violation("agent-implies-eligible", "failure_class 'agent' requires agent_eligible true")
    if stage is not None and not evidence:
        raise Violation("stage-needs-evidence", f"failure_stage {stage!r} is set without any evidence reference")
    if cost is not None and cost_source is None:
        raise Violation("cost-needs-source", "cost is set but cost_source is null; cost needs a versioned price source")
    for ref in evidence:
        try:
            resolver.resolve(artifact_dir, ref)
        except EvidenceError as exc:
            raise Violation("evidence", str(exc)) from None

    return (
        task_id,
        attempt,
        artifact_dir,
        success,
        eligible,
        fclass,
        stage,
        _canonical(evidence),
        quality,
        cost,
        cost_source,
        _canonical({key: value for key, value in source.items() if value is not None}),
        *tele_values,
    )


_CANONICAL: dict[tuple, str] = {}


def _canonical(value: list | dict) -> str:
    """Compact JSON text of a list of strings or a flat dict, memoised (values repeat across attempts)."""
    key = (type(value) is dict, tuple(value.items()) if type(value) is dict else tuple(value))
    text = _CANONICAL.get(key)
    if text is None:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        if len(_CANONICAL) < 4096:
            _CANONICAL[key] = text
    return text


def validate_record(record: Any, *, run_dir: str | os.PathLike, file: str = RESULTS, line: int | None = None) -> None:
    """Check one parsed attempt record against spec sections 3 and 8.

    The same rules ``load_run`` applies to each line (except uniqueness,
    which needs the whole file), evidence resolution included.

    Raises
    ------
    InvalidRunError
        Naming ``file``, ``line`` and the rule broken.
    """
    try:
        _check_unicode(record)
        _record_values(record, EvidenceResolver(run_dir))
    except Violation as exc:
        raise InvalidRunError(file, exc.rule, exc.reason, line=line) from None


def _check_unicode(obj: Any) -> None:
    """Refuse a record holding a string that is not Unicode text (a lone surrogate escape)."""
    found = find_surrogate(obj)
    if found is not None:
        raise Violation("invalid-unicode", surrogate_message(*found))


def _readable_ids(obj: Any) -> tuple[str | None, int | None]:
    if not isinstance(obj, dict):
        return None, None
    tid = obj.get("task_id")
    att = obj.get("attempt")
    return (tid if isinstance(tid, str) else None, att if is_int(att) and 1 <= att <= MAX_SAFE_NUMBER else None)


_RECORD_DTYPES = {
    "task_id": "string",
    "attempt": "Int64",
    "artifact_dir": "string",
    "success": "boolean",
    "agent_eligible": "boolean",
    "failure_class": "category",
    "failure_stage": "category",
    "evidence": "category",
    "quality_score": "Float64",
    "cost": "Float64",
    "cost_source": "category",
    "telemetry_source": "category",
}


_CATEGORIES = {"failure_class": ("",) + FAILURE_CLASSES, "failure_stage": FAILURE_STAGES}


def _telemetry_dtype(name: str) -> str:
    if name in _BOOL:
        return "boolean"
    if name in _COUNT:
        return "Int64"
    return "Float64"


# --------------------------------------------------------------------------- the columnar fast path
#
# A valid results.jsonl is parsed by pyarrow's JSON reader with the explicit schema of a
# section-3 record, and every rule of sections 3 and 8 is then checked on whole columns.  The
# fast path only ever *accepts* a file: whenever anything is off (a rule broken, a duplicate, and
# also whatever pyarrow is more lenient about than the exact reader: NaN tokens, a byte-order
# mark, several objects on one line, blank lines, ``"telemetry": null``, fields beyond section 3,
# a negative zero that could have been written ``-0``), it declines and the exact streaming path
# reads the file, so errors, anomalies and their lines are exactly those of the exact path.
#
# The file is read in chunks that end at a newline.  A worker thread reads, hashes and parses
# chunk i+1 (pyarrow and hashlib release the GIL) while the calling thread checks chunk i.

_FAST_CHUNK = 16 << 20
_ARROW: dict[str, Any] = {}


class _Fallback(Exception):
    """The fast path declines the file: the exact path decides."""


def _arrow() -> dict:
    """pyarrow, the record schema and the vocabularies (imported on first use)."""
    if not _ARROW:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj

        def tele_type(name: str):
            return pa.bool_() if name in _BOOL else pa.int64() if name in _COUNT else pa.float64()

        schema = pa.schema([
            ("task_id", pa.large_string()),  # the storage of pandas' string dtype: no cast later
            ("attempt", pa.int64()),
            ("artifact_dir", pa.large_string()),
            ("success", pa.bool_()),
            ("agent_eligible", pa.bool_()),
            ("failure_class", pa.string()),
            ("failure_stage", pa.string()),
            ("evidence", pa.list_(pa.string())),
            ("quality_score", pa.float64()),
            ("telemetry", pa.struct([(name, tele_type(name)) for name in TELEMETRY_FIELDS])),
            ("telemetry_source", pa.struct([(name, pa.string()) for name in TELEMETRY_FIELDS])),
            ("cost", pa.float64()),
            ("cost_source", pa.string()),
        ])
        _ARROW.update(
            pa=pa, pc=pc, pj=pj, schema=schema,
            parse=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
            classes=pa.array(_CATEGORIES["failure_class"], pa.string()),
            stages=pa.array(_CATEGORIES["failure_stage"], pa.string()),
        )
    return _ARROW


class _ChunkReader:
    """Reads results.jsonl in chunks ending at a newline; checks the line structure, parses.

    Runs in one worker thread, chunk after chunk; each chunk goes to ``hasher`` (one more thread,
    so the hash sees the bytes in order) while the next is parsed.
    """

    def __init__(self, fh, hasher) -> None:
        self.fh = fh
        self.hasher = hasher
        self.offset = 0
        self.lines = 0
        self.digest = hashlib.sha256()

    def next(self):
        """The next chunk's table, or None at the end of the file."""
        ar = _arrow()
        self.fh.seek(self.offset)
        block = self.fh.read(_FAST_CHUNK)
        if not block:
            return None
        if len(block) == _FAST_CHUNK:  # more follows: stop at the last newline
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                raise _Fallback("a line longer than a chunk")
        else:
            cut = len(block)
        view = memoryview(block)[:cut]
        self.offset += cut
        self.hasher.submit(self.digest.update, view)
        data = np.frombuffer(view, dtype=np.uint8)
        newlines = np.flatnonzero(data == 0x0A)
        # One JSON object per line and no blank line: every line starts with "{" and ends with "}"
        # (before an optional "\r").  Then no value can span two lines, and a line holding two
        # objects shows as more rows than lines.  (This also keeps a leading BOM, and a first line
        # that is not an object, away from the JSON reader.)
        if data[0] != 0x7B:
            raise _Fallback("a line does not start with '{'")
        ends = newlines
        if newlines.size and newlines[-1] == data.size - 1:
            starts = newlines[:-1] + 1
        else:  # the file's last line has no newline
            starts = newlines + 1
            ends = np.append(newlines, data.size)
        if not (data[starts] == 0x7B).all():
            raise _Fallback("a line does not start with '{'")
        before = data[ends - 1]
        if not (before == 0x7D).all():
            cr = before == 0x0D
            if not ((before == 0x7D) | cr).all() or not (data[ends[cr] - 2] == 0x7D).all():
                raise _Fallback("a line does not end with '}'")
        plain = data.max() < 0x80
        table = ar["pj"].read_json(
            ar["pa"].BufferReader(ar["pa"].py_buffer(view)),
            read_options=ar["pj"].ReadOptions(use_threads=False, block_size=max(cut + 1, 1 << 20)),
            parse_options=ar["parse"],
        )
        if table.num_rows != ends.size:
            raise _Fallback("rows and lines differ")
        if not plain:  # pyarrow copies the bytes of strings as they are: refuse invalid UTF-8
            table.validate(full=True)
        self.lines += ends.size
        return table, _Lines(block, cut, np.append(0, starts), ends)


class _Lines:
    """One chunk: ``block[:size]``, and where each of its lines starts and ends."""

    def __init__(self, block: bytes, size: int, starts: np.ndarray, ends: np.ndarray) -> None:
        self.block, self.size, self.starts, self.ends = block, size, starts, ends

    def count(self, text: bytes) -> int:
        return self.block.count(text, 0, self.size)

    def holds(self, text: bytes, i: int | None = None) -> bool:
        if i is None:
            return self.block.find(text, 0, self.size) >= 0
        return self.block.find(text, int(self.starts[i]), int(self.ends[i])) >= 0


class _Columns:
    """The checked columns of every accepted chunk, assembled into the records DataFrame."""

    def __init__(self, resolver: EvidenceResolver) -> None:
        self.resolver = resolver
        self.parts: dict[str, list] = {}
        self.texts: dict[str, dict[str, int]] = {"evidence": {}, "telemetry_source": {}, "cost_source": {}}
        self.evidence_text: dict[tuple, str] = {}

    def add(self, name: str, value) -> None:
        self.parts.setdefault(name, []).append(value)

    def text_ids(self, name: str, texts: list[str]) -> np.ndarray:
        ids = self.texts[name]
        return np.array([ids.setdefault(t, len(ids)) for t in texts], dtype=np.int64)

    # ---- one chunk

    def check(self, table, lines: _Lines) -> None:
        ar = _arrow()
        pc = ar["pc"]
        if not table.schema.equals(ar["schema"]):
            raise _Fallback("schema")
        col = {name: table.column(name).combine_chunks() for name in table.column_names}
        n = table.num_rows
        for name in ("task_id", "attempt", "success", "agent_eligible", "failure_class"):
            if col[name].null_count:  # required
                raise _Fallback(f"null {name}")
        for name in ("telemetry", "telemetry_source", "evidence"):
            if col[name].null_count:
                self._absent(name, col[name], lines)

        attempt = col["attempt"].to_numpy()
        if not ((attempt >= 1) & (attempt <= MAX_SAFE_NUMBER)).all():
            raise _Fallback("attempt")
        success = col["success"].to_numpy(zero_copy_only=False)
        eligible = col["agent_eligible"].to_numpy(zero_copy_only=False)
        fclass = pc.index_in(col["failure_class"], value_set=ar["classes"])
        if fclass.null_count:
            raise _Fallback("failure_class")
        fclass = fclass.to_numpy(zero_copy_only=False).astype(np.int8)
        stage_in = col["failure_stage"]
        stage = pc.index_in(stage_in, value_set=ar["stages"])
        if stage.null_count != stage_in.null_count:
            raise _Fallback("failure_stage")
        stage = pc.fill_null(stage, -1).to_numpy().astype(np.int8)

        quality, quality_null = self._numbers(col["quality_score"], upper=1.0)
        cost, cost_null = self._numbers(col["cost"])
        source_null = col["cost_source"].is_null().to_numpy(zero_copy_only=False)

        evidence = col["evidence"]
        if pc.list_flatten(evidence).null_count:
            raise _Fallback("null evidence reference")
        n_evidence = pc.fill_null(pc.list_value_length(evidence), 0).to_numpy()

        # Invariants of section 3, then section 8 (a broken one: the exact path names it).
        bad = success & ~eligible
        bad |= success & (fclass != 0)
        bad |= ~success & (fclass == 0)
        bad |= ((fclass == 2) | (fclass == 3) | (fclass == 4)) & eligible
        bad |= (fclass == 1) & ~eligible
        bad |= (stage >= 0) & (n_evidence == 0)
        bad |= ~cost_null & source_null
        if bad.any():
            raise _Fallback("invariant")

        artifact_dir = col["artifact_dir"]
        self._check_artifact_dirs(artifact_dir)

        tele = col["telemetry"]
        for name in TELEMETRY_FIELDS:
            child = tele.field(name) if not tele.null_count else pc.struct_field(tele, name)
            if name in _BOOL:
                mask = child.is_null().to_numpy(zero_copy_only=False)
                values = pc.fill_null(child, False).to_numpy(zero_copy_only=False)
            elif name in _COUNT:
                mask = child.is_null().to_numpy(zero_copy_only=False)
                values = pc.fill_null(child, 0).to_numpy()
                if not ((values >= 0) & (values <= MAX_SAFE_NUMBER)).all():
                    raise _Fallback(name)
            else:
                values, mask = self._numbers(child)
            self.add(name, (values, mask))

        # Evidence: every reference of every record must resolve (spec section 8).
        rows = np.flatnonzero(n_evidence)
        evidence_ids = np.full(n, -1, dtype=np.int64)
        if rows.size < n:
            evidence_ids[:] = self.text_ids("evidence", ["[]"])[0]
        if rows.size:
            texts = []
            for adir, refs in zip(artifact_dir.take(rows).to_pylist(), evidence.take(rows).to_pylist()):
                if adir is None:
                    raise _Fallback("evidence without artifact_dir")
                for ref in refs:
                    if not self.resolver.resolves(adir, ref):
                        raise _Fallback("evidence")
                key = tuple(refs)
                text = self.evidence_text.get(key)
                if text is None:
                    text = self.evidence_text[key] = _canonical(refs)
                texts.append(text)
            evidence_ids[rows] = self.text_ids("evidence", texts)

        self.add("task_id", col["task_id"])
        self.add("attempt", attempt)
        self.add("artifact_dir", artifact_dir)
        self.add("success", success)
        self.add("agent_eligible", eligible)
        self.add("failure_class", fclass)
        self.add("failure_stage", stage)
        self.add("evidence", evidence_ids)
        self.add("quality_score", (quality, quality_null))
        self.add("cost", (cost, cost_null))
        self.add("cost_source", self._dictionary_ids("cost_source", col["cost_source"]))
        self.add("telemetry_source", self._source_ids(col["telemetry_source"], n))

    @staticmethod
    def _absent(name: str, array, lines: _Lines) -> None:
        """Accept null ``name`` values only where the key is surely absent (it may be), not null (invalid).

        pyarrow reads both as null.  The chunk must hold the text ``"name"`` exactly once per
        non-null row (the key itself: then no null row holds it), and a null row no ``\\u`` escape
        (which could spell the key).
        """
        key = b'"' + name.encode() + b'"'
        if lines.count(key) != len(array) - array.null_count:
            raise _Fallback(f"null {name}")
        if lines.holds(b"\\u"):
            for i in np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)):
                if lines.holds(b"\\u", i):
                    raise _Fallback(f"null {name}")

    @staticmethod
    def _numbers(array, *, upper: float = float(MAX_SAFE_NUMBER)) -> tuple[np.ndarray, np.ndarray]:
        """Values (nulls as 0.0) and null mask of a float64 column; declines NaN, infinities,
        negatives, values above ``upper``, and -0.0 (the exact reader reads ``-0`` as 0)."""
        pc = _arrow()["pc"]
        mask = array.is_null().to_numpy(zero_copy_only=False)
        values = pc.fill_null(array, 0.0).to_numpy()
        if not ((values >= 0.0) & (values <= upper)).all() or np.signbit(values).any():
            raise _Fallback("number")
        return values, mask

    @staticmethod
    def _check_artifact_dirs(array) -> None:
        """The lexical rule of :func:`~capbench_nb.evidence.check_relative_path`, on a whole column."""
        pc = _arrow()["pc"]
        if os.name != "posix":  # other path rules: the exact check, value by value
            for value in array.drop_null().to_pylist():
                try:
                    check_relative_path(value, "artifact_dir")
                except EvidenceError:
                    raise _Fallback("artifact_dir") from None
            return
        valid = array.drop_null()
        if not len(valid):
            return
        if (pc.any(pc.starts_with(valid, "/")).as_py() or pc.any(pc.starts_with(valid, "\\")).as_py()
                or pc.any(pc.match_substring(valid, "\x00")).as_py()):
            raise _Fallback("artifact_dir")
        if pc.any(pc.match_substring(valid, "..")).as_py() and pc.any(
                pc.match_substring_regex(valid, r"(^|[/\\])\.\.($|[/\\])")).as_py():
            raise _Fallback("artifact_dir")

    def _dictionary_ids(self, name: str, array) -> np.ndarray:
        """Chunk-wide ids of a string column's values (-1 for null)."""
        pc = _arrow()["pc"]
        encoded = pc.dictionary_encode(array)
        ids = self.text_ids(name, encoded.dictionary.to_pylist())
        index = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
        return np.where(index >= 0, ids[np.maximum(index, 0)] if ids.size else -1, -1)

    def _source_ids(self, struct, n: int) -> np.ndarray:
        """Ids of the canonical text of each record's telemetry_source (its non-null entries)."""
        pc = _arrow()["pc"]
        key = np.zeros(n, dtype=np.int64)
        span = 1
        indices, values = [], []
        for name in TELEMETRY_FIELDS:
            child = struct.field(name) if not struct.null_count else pc.struct_field(struct, name)
            encoded = pc.dictionary_encode(child)
            index = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64) + 1  # 0: null
            size = len(encoded.dictionary) + 1
            if span * size >= 2**62:  # renumber the combinations seen so far
                _, key = np.unique(key, return_inverse=True)
                span = int(key.max()) + 1
            key = key * size + index
            span *= size
            indices.append(index)
            values.append(encoded.dictionary.to_pylist())
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        texts = []
        for row in first:
            source = {name: values[i][indices[i][row] - 1]
                      for i, name in enumerate(TELEMETRY_FIELDS) if indices[i][row]}
            texts.append(_canonical(source))
        return self.text_ids("telemetry_source", texts)[inverse.reshape(-1)]

    # ---- the DataFrame

    def frame(self, lines: int) -> pd.DataFrame:
        pa = _arrow()["pa"]
        parts = self.parts

        def cat(name: str) -> np.ndarray:
            return np.concatenate(parts[name])

        def masked(name: str, dtype: str):
            values = np.concatenate([v for v, _ in parts[name]])
            mask = np.concatenate([m for _, m in parts[name]])
            if dtype == "Float64":
                return pd.arrays.FloatingArray(values, mask)
            if dtype == "Int64":
                return pd.arrays.IntegerArray(values, mask)
            return pd.arrays.BooleanArray(values, mask)

        def strings(name: str):  # what pd.array(values, dtype="string") gives
            array = pa.chunked_array(parts[name]).combine_chunks()
            dtype = pd.StringDtype()
            if dtype.storage == "pyarrow":
                return pd.arrays.ArrowStringArray(array)
            return pd.array(array.to_numpy(zero_copy_only=False), dtype=dtype)  # pandas 2: Python storage

        def categorical(name: str, codes: np.ndarray) -> pd.Categorical:
            texts = list(self.texts[name])
            # the categories the exact path infers from its values (None included when there is one)
            categories = pd.Categorical(texts + [None] * bool((codes < 0).any())).categories
            position = np.asarray(categories.get_indexer(texts), dtype=np.int64)
            codes = np.where(codes >= 0, position[np.maximum(codes, 0)] if position.size else -1, -1)
            return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories))

        def fixed(name: str) -> pd.Categorical:
            dtype = pd.CategoricalDtype(pd.Categorical([], categories=_CATEGORIES[name]).categories)
            return pd.Categorical.from_codes(cat(name), dtype=dtype)

        attempt = cat("attempt")
        data: dict[str, Any] = {
            "line": np.arange(1, lines + 1, dtype="int64"),
            "task_id": strings("task_id"),
            "attempt": pd.arrays.IntegerArray(attempt, np.zeros(attempt.size, dtype=bool)),
            "artifact_dir": strings("artifact_dir"),
            "success": pd.arrays.BooleanArray(cat("success"), np.zeros(attempt.size, dtype=bool)),
            "agent_eligible": pd.arrays.BooleanArray(cat("agent_eligible"), np.zeros(attempt.size, dtype=bool)),
            "failure_class": fixed("failure_class"),
            "failure_stage": fixed("failure_stage"),
            "evidence": categorical("evidence", cat("evidence")),
            "quality_score": masked("quality_score", "Float64"),
            "cost": masked("cost", "Float64"),
            "cost_source": categorical("cost_source", cat("cost_source")),
            "telemetry_source": categorical("telemetry_source", cat("telemetry_source")),
        }
        for name in TELEMETRY_FIELDS:
            data[name] = masked(name, _telemetry_dtype(name))
        records = pd.DataFrame(data, copy=False)  # the arrays are ours alone
        # (task_id, attempt) unique; a duplicate is the exact path's to report
        codes, uniques = pd.factorize(records["task_id"])
        top = int(attempt.max()) + 1
        if len(uniques) * top < 2**62:
            duplicated = pd.Series(codes.astype(np.int64) * top + attempt).duplicated().any()
        else:
            duplicated = records.duplicated(["task_id", "attempt"]).any()
        if duplicated:
            raise _Fallback("duplicate")
        return records


def _read_results_fast(path: str | os.PathLike, *, run_dir: str | os.PathLike | None) -> tuple[pd.DataFrame, str] | None:
    """``(records, sha256)`` when the fast path accepts the file (see above), else None."""
    try:
        fh = open_input(path)
    except OSError:
        return None  # the exact path names the problem
    from concurrent.futures import ThreadPoolExecutor

    resolver = _MemoResolver(run_dir if run_dir is not None else Path(path).parent)
    columns = _Columns(resolver)
    ar = _arrow()
    try:
        with fh, ThreadPoolExecutor(max_workers=1) as hasher, ThreadPoolExecutor(max_workers=1) as pool:
            reader = _ChunkReader(fh, hasher)
            pending = pool.submit(reader.next)
            chunks = 0
            while True:
                item = pending.result()
                if item is None:
                    break
                pending = pool.submit(reader.next)  # read and parse ahead
                columns.check(*item)
                chunks += 1
            if not chunks:
                return None  # an empty file: nothing to gain
            records = columns.frame(reader.lines)
    except (_Fallback, ar["pa"].ArrowException, OSError, ValueError, EvidenceError):
        return None
    return records, "sha256:" + reader.digest.hexdigest()  # the hasher has finished (left its with)


class _MemoResolver(EvidenceResolver):
    """Whether evidence references resolve, as :meth:`EvidenceResolver.resolve` decides, for one load.

    Only success matters here: any failure sends the file to the exact path, whose own resolver
    gives the reason.  So nothing is formatted, and what repeats is remembered: real paths of
    directories (``os.path.realpath`` costs one ``lstat`` per component; a path below a resolved
    directory costs one, as ``realpath(p/name) == realpath(realpath(p)/name)``), artifact roots,
    checked file names, parsed pointers, and the last file read.
    """

    def __init__(self, run_dir) -> None:
        super().__init__(run_dir)
        self._real: dict[str, str] = {}
        self._roots: dict[str, str | None] = {}
        self._names: dict[str, bool] = {}
        self._pointers: dict[str, list | None] = {}
        self._last_file: str | None = None
        self._last_doc: Any = None

    def _realpath(self, path: str) -> str:
        hit = self._real.get(path)
        if hit is not None:
            return hit
        parent, name = os.path.split(path)
        if not name or name in (".", "..") or not parent or parent == path or not os.path.isabs(path):
            real = os.path.realpath(path)
        else:
            candidate = os.path.join(self._realpath(parent), name)
            try:
                link = stat.S_ISLNK(os.lstat(candidate).st_mode)
            except OSError:
                link = False
            real = os.path.realpath(candidate) if link else candidate
        self._real[path] = real
        return real

    def _root(self, artifact_dir: str) -> str | None:
        """:meth:`artifact_root`, or None where it raises."""
        if artifact_dir not in self._roots:
            try:
                check_relative_path(artifact_dir, "artifact_dir")
                real = self._realpath(os.path.join(self._real_run_dir, artifact_dir))
                self._roots[artifact_dir] = real if _inside(real, self._real_run_dir) else None
            except EvidenceError:
                self._roots[artifact_dir] = None
        return self._roots[artifact_dir]

    def _document(self, real_file: str) -> Any:
        """The file's JSON as :meth:`EvidenceResolver._load` reads it; raises on any failure."""
        if real_file == self._last_file:
            return self._last_doc
        doc = json.loads(read_regular_file(real_file).decode("utf-8"))  # a FIFO: refused, not waited for
        self._last_file, self._last_doc = real_file, doc
        return doc

    def resolves(self, artifact_dir: str | None, reference: str) -> bool:
        """True where :meth:`EvidenceResolver.resolve` returns, False where it raises."""
        if artifact_dir is None:
            return False
        file, sep, pointer = reference.partition("#")
        if not sep or not file:
            return False
        ok = self._names.get(file)
        if ok is None:
            try:
                check_relative_path(file, "evidence file")
                ok = True
            except EvidenceError:
                ok = False
            self._names[file] = ok
        if not ok:
            return False
        root = self._root(artifact_dir)
        if root is None:
            return False
        real_file = self._realpath(os.path.join(root, file))
        if not _inside(real_file, root) or real_file == root:
            return False
        if pointer in self._pointers:
            tokens = self._pointers[pointer]
        else:
            try:
                tokens = parse_pointer(pointer)
            except EvidenceError:
                tokens = None
            self._pointers[pointer] = tokens
        if tokens is None:
            return False
        try:
            node = self._document(real_file)
        except Exception:  # unreadable, not UTF-8, not JSON, nested too deeply, ...
            return False
        for tok in tokens:  # resolve_pointer's rules, without its messages
            if isinstance(node, dict):
                if tok not in node:
                    return False
                node = node[tok]
            elif isinstance(node, list):
                if not tok.isdigit() or not tok.isascii() or (tok != "0" and tok.startswith("0")):
                    return False
                idx = int(tok)
                if idx >= len(node):
                    return False
                node = node[idx]
            else:
                return False
        return True


def read_results(
    path: str | os.PathLike, *, run_dir: str | os.PathLike | None = None, strict: bool = True
) -> tuple[pd.DataFrame, list[dict], str]:
    """Read and validate ``results.jsonl``.

    A valid file is read by the columnar fast path (:func:`_read_results_fast`);
    any file it does not accept, and so every file with an invalid line, is
    read by the exact streaming path (:func:`_read_results_exact`), which names
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
    fast = _read_results_fast(path, run_dir=run_dir)
    if fast is not None:
        records, digest = fast
        return records, [], digest
    return _read_results_exact(path, run_dir=run_dir, strict=strict)


def _read_results_exact(
    path: str | os.PathLike, *, run_dir: str | os.PathLike | None = None, strict: bool = True
) -> tuple[pd.DataFrame, list[dict], str]:
    """The streaming, per-line validating reader: the reference semantics of :func:`read_results`."""
    file = str(path)
    resolver = EvidenceResolver(run_dir if run_dir is not None else Path(path).parent)
    n_cols = len(RECORD_COLUMNS) - 1 + len(TELEMETRY_FIELDS)
    columns: list[list] = [[] for _ in range(n_cols)]
    appenders = [c.append for c in columns]
    lines: list[int] = []
    invalid: list[dict] = []

    def fail(lineno: int, rule: str, reason: str, obj: Any = None) -> None:
        if strict:
            _raise_earliest_duplicate(columns, lines, file)
            raise InvalidRunError(file, rule, reason, line=lineno)
        tid, att = _readable_ids(obj)
        invalid.append({"kind": "invalid_line", "task_id": tid, "attempt": att, "line": lineno,
                        "reason": reason, "rule": rule})

    try:
        fh = open_input(path)
    except FileNotFoundError:
        raise InvalidRunError(file, "results-missing", "the run has no results.jsonl") from None
    except IsADirectoryError:
        raise InvalidRunError(file, "results-unreadable", "results.jsonl is a directory, not a file") from None
    except OSError as exc:
        raise InvalidRunError(file, "results-unreadable", f"cannot read results.jsonl: {exc.strerror}") from None
    digest = hashlib.sha256()
    with fh:
        try:
            lineno = 0
            readline = fh.readline
            while True:
                raw = readline(MAX_LINE_BYTES + 1)  # a line that never ends is not read to the end
                if not raw:
                    break
                lineno += 1
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    if strict:
                        _raise_earliest_duplicate(columns, lines, file)
                    raise InvalidRunError(
                        file, "line-too-long",
                        f"the line is longer than {size_text(MAX_LINE_BYTES)}, the limit this toolkit reads (a record "
                        "is a few hundred bytes); the file is refused as a whole", line=lineno)
                digest.update(raw)
                stripped = raw.strip()
                if not stripped:
                    continue
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    fail(lineno, "bom", "the file starts with a byte-order mark; results.jsonl must be plain UTF-8")
                    continue
                try:
                    text = stripped.decode("utf-8")
                except UnicodeDecodeError as exc:
                    if not raw.endswith(b"\n") and exc.end == len(stripped):  # cut inside a character
                        fail(lineno, "truncated-line",
                             "the last line is cut off mid-record (no final newline; it ends inside a "
                             "UTF-8 character): the runner probably stopped while writing it")
                    else:
                        fail(lineno, "utf-8", f"not valid UTF-8 at byte {exc.start} of the line")
                    continue
                try:
                    obj = parse_strict(text)
                except json.JSONDecodeError as exc:
                    # Only the final line can lack a newline; too much text is not a truncation.
                    if not raw.endswith(b"\n") and exc.msg != "Extra data":
                        fail(lineno, "truncated-line",
                             "the last line is cut off mid-record (no final newline; "
                             f"JSON: {exc.msg}): the runner probably stopped while writing it")
                    else:
                        fail(lineno, "json", f"not valid JSON: {exc.msg} (column {exc.colno})")
                    continue
                except Violation as exc:
                    fail(lineno, exc.rule, exc.reason)
                    continue
                except RecursionError:
                    fail(lineno, "json", "JSON nested too deeply")
                    continue
                if "\\u" in text and SURROGATE_ESCAPE.search(text):
                    found = find_surrogate(obj)
                    if found is not None:  # its ids are no text either: none are kept
                        fail(lineno, "invalid-unicode", surrogate_message(*found))
                        continue
                try:
                    values = _record_values(obj, resolver)
                except Violation as exc:
                    fail(lineno, exc.rule, exc.reason, obj)
                    continue
                lines.append(lineno)
                for append, value in zip(appenders, values):
                    append(value)
        except OSError as exc:
            raise InvalidRunError(file, "results-unreadable", f"cannot read results.jsonl: {exc.strerror}") from None

    names = list(RECORD_COLUMNS[1:]) + list(TELEMETRY_FIELDS)
    data: dict[str, Any] = {"line": np.asarray(lines, dtype="int64")}
    for name, values in zip(names, columns):
        dtype = _RECORD_DTYPES.get(name) or _telemetry_dtype(name)
        if name in _CATEGORIES:
            data[name] = pd.Categorical(values, categories=_CATEGORIES[name])
        elif dtype == "category":
            data[name] = pd.Categorical(values)
        else:
            data[name] = pd.array(values, dtype=dtype)
    records = pd.DataFrame(data)
    if not records.empty:
        dup = records.duplicated(["task_id", "attempt"], keep="first").to_numpy()
        if dup.any():
            if strict:
                _raise_earliest_duplicate(columns, lines, file)
            for i in np.flatnonzero(dup):
                invalid.append(_duplicate_anomaly(records, int(i)))
            records = records[~dup].reset_index(drop=True)
            invalid.sort(key=lambda a: a["line"])
    return records, invalid, "sha256:" + digest.hexdigest()


def _duplicate_anomaly(records: pd.DataFrame, i: int) -> dict:
    tid = records["task_id"].iat[i]
    att = int(records["attempt"].iat[i])
    first = records[(records["task_id"] == tid) & (records["attempt"] == att)]["line"].iat[0]
    return {"kind": "invalid_line", "task_id": tid, "attempt": att, "line": int(records["line"].iat[i]),
            "reason": f"duplicate (task_id, attempt) ({short(tid)}, {att}); first recorded on line {first}",
            "rule": "duplicate-attempt"}


def _raise_earliest_duplicate(columns: list[list], lines: list[int], file: str) -> None:
    """In strict mode, a duplicate on an earlier line is the first error of the file."""
    seen: dict[tuple, int] = {}
    for tid, att, lineno in zip(columns[0], columns[1], lines):
        key = (tid, att)
        if key in seen:
            raise InvalidRunError(
                file,
                "duplicate-attempt",
                f"duplicate (task_id, attempt) ({short(tid)}, {att}); first recorded on line {seen[key]}",
                line=lineno,
            )
        seen[key] = lineno


# --------------------------------------------------------------------------- run


def _classify(records: pd.DataFrame, plan: pd.DataFrame) -> pd.Series:
    planned = plan["planned_repeats"].to_numpy(dtype="float64")
    codes, uniques = pd.factorize(records["task_id"])  # each distinct task id looked up once
    where = np.asarray(pd.Index(plan["task_id"].astype(object)).get_indexer(uniques), dtype=np.int64)
    pos = np.where(codes >= 0, where[np.maximum(codes, 0)], -1) if len(uniques) else np.full(len(codes), -1)
    limit = np.where(pos >= 0, planned[np.maximum(pos, 0)] if len(planned) else np.nan, np.nan)
    anomaly = np.where(
        pos < 0,
        "task_not_in_plan",
        np.where(records["attempt"].to_numpy(dtype="float64") > limit, "above_planned_repeats", None),
    )
    return pd.Series(pd.Categorical(anomaly, categories=["above_planned_repeats", "task_not_in_plan"]),
                     index=records.index, name="anomaly")


def _anomaly_frame(records: pd.DataFrame, plan: pd.DataFrame, invalid: list[dict]) -> pd.DataFrame:
    planned = dict(zip(plan["task_id"].astype(object), plan["planned_repeats"].astype(int)))
    rows = list(invalid)
    flagged = records[records["anomaly"].notna()]
    for kind, tid, att, lineno in zip(flagged["anomaly"], flagged["task_id"], flagged["attempt"], flagged["line"]):
        if kind == "task_not_in_plan":
            reason = f"task {short(tid)} is not in the plan"
        else:
            reason = f"attempt {int(att)} is above the task's planned repeats ({planned[tid]})"
        rows.append({"kind": kind, "task_id": tid, "attempt": int(att), "line": int(lineno),
                     "reason": reason, "rule": kind.replace("_", "-")})
    rows.sort(key=lambda a: a["line"])
    frame = pd.DataFrame(rows, columns=["kind", "task_id", "attempt", "line", "reason", "rule"])
    return frame.astype({"kind": "string", "task_id": "string", "attempt": "Int64", "line": "int64",
                         "reason": "string", "rule": "string"})


def load_run(path: str | os.PathLike, *, strict: bool = True) -> Run:
    """Load and validate a run directory.

    Parameters
    ----------
    path : path-like
        The run directory, holding ``manifest.json`` and ``results.jsonl``.
    strict : bool, default True
        With ``False``, invalid lines of results.jsonl are listed in
        ``Run.anomalies`` (kind ``invalid_line``) and enter no metric or count,
        instead of raising.  The manifest is always validated strictly.

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
    manifest, manifest_bytes = _load_manifest(manifest_path)
    plan = plan_frame(manifest)
    records, invalid, results_hash = read_results(results_path, run_dir=run_dir, strict=strict)
    records["anomaly"] = _classify(records, plan)
    anomalies = _anomaly_frame(records, plan, invalid)
    hashes = {MANIFEST: "sha256:" + hashlib.sha256(manifest_bytes).hexdigest(), RESULTS: results_hash}
    return Run(
        path=run_dir,
        manifest=manifest,
        plan=plan,
        k=fixed_k(manifest),
        records=records,
        anomalies=anomalies,
        hashes=hashes,
        strict=strict,
    )
