"""The exact, streaming reader of results.jsonl: line by line, naming the line of every problem.

It is the reference semantics of :func:`~capbench_nb.records.run.read_results`: every error,
anomaly and line number comes from here.  A record's fields are checked as the rows of
:data:`~capbench_nb.format.RECORD` and :data:`~capbench_nb.format.RECORD_TELEMETRY` say (in
:data:`~capbench_nb.format.RECORD_CHECK_ORDER`), then the invariants of
:data:`~capbench_nb.format.INVARIANTS`, then the evidence references.

In the records table, ``telemetry_source`` holds the compact JSON text of the record's non-null
sources (a null source is no source: pyarrow cannot tell ``{"x": null}`` from ``{}``, so neither
reader does).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.format import (
    INVARIANTS, MAX_LINE_BYTES, MAX_SAFE_NUMBER, RECORD, RECORD_CHECK_ORDER, RECORD_COLUMNS, RECORD_DTYPES,
    RECORD_FIELDS, RECORD_TELEMETRY, RESULTS, TELEMETRY_FIELDS, Field, facts_of,
)
from capbench_nb.io.files import check_relative_path, input_errors, open_input
from capbench_nb.io.jsonparse import (
    SURROGATE_ESCAPE, JsonMessages, find_surrogate, is_int, is_number, json_reason, json_type_name, parse_strict,
    short, size_text, surrogate_message,
)
from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.evidence import EvidenceResolver

__all__ = ["RECORD_COLUMNS", "CATEGORIES", "field_checker", "record_values", "validate_record", "canonical_json",
           "parse_line", "read_results_exact"]

#: The fixed categories of a categorical column with a vocabulary (failure_class, failure_stage).
CATEGORIES = {f.name: f.vocabulary for f in RECORD if f.pandas_dtype == "category" and f.vocabulary}

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": is_int,
    "number": is_number,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
_ITEM_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "string or null": lambda v: v is None or isinstance(v, str),
    "integer": is_int,  # (selection.jsonl's candidates and scores)
    "number": is_number,
}


#: The exact Python types a JSON parser gives for each JSON type (the fast test; anything else
#: goes through the full test of :data:`_TYPE_TESTS`).
_PARSED_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                 "object": (dict,), "array": (list,)}


def field_checker(f: Field) -> Callable[[Any], None]:
    """A function raising :class:`~capbench_nb.errors.Violation` for a value ``f`` refuses.

    The tests run in the table's order of concerns: JSON type (and null), items, vocabulary,
    ``minimum``, ``maximum``, relative path; the first refusal raises with the field's rule id and
    message.  ``None`` stands for null (an absent key has been replaced by ``f.default``).
    """
    test = _TYPE_TESTS[f.json_type]
    parsed = _PARSED_TYPES[f.json_type]
    nullable = f.nullable
    items = _ITEM_TESTS[f.items] if f.items else None
    vocabulary = frozenset(f.vocabulary) if f.vocabulary else None
    low, high = f.minimum, f.maximum

    def refuse(rule: str, message: str, value: Any):
        raise Violation(rule, message.format(where=f.name, type=json_type_name(value), value=short(value)))

    def more(value: Any) -> None:  # the checks beyond the JSON type
        if items is not None and not all(map(items, value.values() if f.json_type == "object" else value)):
            refuse(f.type_rule, f.type_message, value)
        if vocabulary is not None and value not in vocabulary:
            refuse(f.vocabulary_rule, f.vocabulary_message, value)
        if low is not None and value < low:
            refuse(f.low_rule, f.low_message, value)
        if high is not None and value > high:
            refuse(f.high_rule, f.high_message, value)
        if f.path_rule is not None:
            try:
                check_relative_path(value, f.name)
            except EvidenceError as exc:
                raise Violation(f.path_rule, str(exc)) from None

    extra = more if (items or vocabulary or low is not None or high is not None or f.path_rule) else None

    def check(value: Any) -> None:
        if type(value) not in parsed:
            if value is None:
                if nullable:
                    return
                refuse(f.type_rule, f.type_message, value)
            if not test(value):
                refuse(f.type_rule, f.type_message, value)
        if extra is not None:
            extra(value)

    return check


_CHECKS = tuple((name, RECORD_FIELDS[name].default, field_checker(RECORD_FIELDS[name])) for name in RECORD_CHECK_ORDER)
_REQUIRED = tuple(f.name for f in RECORD if f.required)
_TELEMETRY_CHECKS = tuple((f.name.split(".", 1)[1], field_checker(f)) for f in RECORD_TELEMETRY)
_COLUMN_NAMES = RECORD_COLUMNS[1:]


def record_values(obj: Any, resolver: EvidenceResolver | None) -> tuple:
    """Validate one parsed record and return its column values (spec sections 3 and 8).

    The values are in the order of ``RECORD_COLUMNS[1:]`` then ``TELEMETRY_FIELDS``; evidence
    references are resolved with ``resolver`` (not at all when it is None).

    Raises
    ------
    Violation
        The first broken rule.
    """
    if not isinstance(obj, dict):
        raise Violation("record-type", f"a record must be a JSON object, not {json_type_name(obj)}")
    for key in _REQUIRED:
        if key not in obj:
            raise Violation("missing-field", f"the required field {key!r} is missing")
    values: dict[str, Any] = {}
    for name, default, check in _CHECKS:  # a required key is present (checked above)
        values[name] = value = obj.get(name, default)
        check(value)
    telemetry = values["telemetry"]
    tele_values = []
    for name, check in _TELEMETRY_CHECKS:
        value = telemetry.get(name)
        if value is not None:
            check(value)
        tele_values.append(value)
    facts = facts_of(values)
    for rule in INVARIANTS:
        if rule.broken(facts):
            raise Violation(rule.id, rule.message.format(**values))
    if resolver is not None:
        for ref in values["evidence"]:
            try:
                resolver.resolve(values["artifact_dir"], ref)
            except EvidenceError as exc:
                raise Violation("evidence", str(exc)) from None
    values["evidence"] = canonical_json(values["evidence"])
    values["telemetry_source"] = canonical_json(
        {key: value for key, value in values["telemetry_source"].items() if value is not None})
    return (*[values[name] for name in _COLUMN_NAMES], *tele_values)


_CANONICAL: dict[tuple, str] = {}


def json_value(value: Any) -> Any:
    """A pandas or NumPy cell as a JSON value: None for None, pd.NA and NaN; a NumPy scalar as its Python value."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def canonical_json(value: list | tuple | dict) -> str:
    """Compact JSON text of a list of strings or a flat dict, memoised (values repeat across attempts)."""
    is_dict = type(value) is dict
    key = (is_dict, tuple(value.items()) if is_dict else tuple(value))
    text = _CANONICAL.get(key)
    if text is None:
        text = json.dumps(value if is_dict else list(value), ensure_ascii=False, sort_keys=True)
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
        found = find_surrogate(record)
        if found is not None:
            raise Violation("invalid-unicode", surrogate_message(*found))
        record_values(record, EvidenceResolver(run_dir))
    except Violation as exc:
        raise InvalidRunError(file, exc.rule, exc.reason, line=line) from None


def _readable_ids(obj: Any) -> tuple[str | None, int | None]:
    if not isinstance(obj, dict):
        return None, None
    tid = obj.get("task_id")
    att = obj.get("attempt")
    return (tid if isinstance(tid, str) else None, att if is_int(att) and 1 <= att <= MAX_SAFE_NUMBER else None)


#: How a line of results.jsonl words a failed parse (the reader adds the line).
_LINE_MESSAGES = JsonMessages(utf8="not valid UTF-8 at byte {start} of the line", utf8_rule="utf-8")


def parse_line(raw: bytes, stripped: bytes, lineno: int, *, file_name: str = RESULTS) -> Any:
    """The parsed object of one non-blank line of a JSON-lines input (results.jsonl, selection.jsonl);
    :class:`Violation` for a line that is no record text (BOM, UTF-8, truncation, strict JSON, surrogates)."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raise Violation("bom", f"the file starts with a byte-order mark; {file_name} must be plain UTF-8")
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not raw.endswith(b"\n") and exc.end == len(stripped):  # cut inside a character
            raise Violation("truncated-line",
                            "the last line is cut off mid-record (no final newline; it ends inside a "
                            "UTF-8 character): the runner probably stopped while writing it") from None
        raise Violation(*json_reason(exc, messages=_LINE_MESSAGES)) from None
    try:
        obj = parse_strict(text)
    except json.JSONDecodeError as exc:
        # Only the final line can lack a newline; too much text is not a truncation.
        if not raw.endswith(b"\n") and exc.msg != "Extra data":
            raise Violation("truncated-line",
                            "the last line is cut off mid-record (no final newline; "
                            f"JSON: {exc.msg}): the runner probably stopped while writing it") from None
        raise Violation(*json_reason(exc, messages=_LINE_MESSAGES)) from None
    except RecursionError as exc:
        raise Violation(*json_reason(exc, messages=_LINE_MESSAGES)) from None
    if "\\u" in text and SURROGATE_ESCAPE.search(text):
        found = find_surrogate(obj)
        if found is not None:  # its ids are no text either: none are kept
            raise Violation("invalid-unicode", surrogate_message(*found))
    return obj


def read_results_exact(
    path: str | os.PathLike, *, run_dir: str | os.PathLike | None = None, strict: bool = True,
    skip_evidence: bool = False,
) -> tuple[pd.DataFrame, list[dict], str]:
    """The streaming, per-line validating reader: the reference semantics of ``read_results``
    (same parameters and returns)."""
    file = str(path)
    resolver = None if skip_evidence else EvidenceResolver(run_dir if run_dir is not None else Path(path).parent)
    columns: list[list] = [[] for _ in range(len(_COLUMN_NAMES) + len(TELEMETRY_FIELDS))]
    appenders = [c.append for c in columns]
    lines: list[int] = []
    invalid: list[dict] = []
    reasons: dict[str, str] = {}  # one string per distinct reason: 10 million invalid lines share a few
    digest = hashlib.sha256()
    with input_errors(file, RESULTS, missing_rule="results-missing", missing="the run has no results.jsonl",
                      unreadable_rule="results-unreadable"), open_input(path) as fh:
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
            obj = None
            try:
                obj = parse_line(raw, stripped, lineno)
                values = record_values(obj, resolver)
            except Violation as exc:
                if strict:
                    _raise_earliest_duplicate(columns, lines, file)
                    raise InvalidRunError(file, exc.rule, exc.reason, line=lineno) from None
                tid, att = _readable_ids(obj)
                reason = reasons.setdefault(exc.reason, exc.reason) if len(reasons) < 4096 else exc.reason
                invalid.append({"kind": "invalid_line", "task_id": tid, "attempt": att, "line": lineno,
                                "reason": reason, "rule": exc.rule})
                continue
            lines.append(lineno)
            for append, value in zip(appenders, values):
                append(value)
    records = _frame(columns, lines)
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


def _frame(columns: list[list], lines: list[int]) -> pd.DataFrame:
    """The records DataFrame of the checked values, each column of its dtype in ``RECORD_DTYPES``."""
    data: dict[str, Any] = {"line": np.asarray(lines, dtype="int64")}
    for name, values in zip(_COLUMN_NAMES + TELEMETRY_FIELDS, columns):
        dtype = RECORD_DTYPES[name]
        if name in CATEGORIES:
            data[name] = pd.Categorical(values, categories=CATEGORIES[name])
        elif dtype == "category":
            data[name] = pd.Categorical(values)
        else:
            data[name] = pd.array(values, dtype=dtype)
    return pd.DataFrame(data)


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
