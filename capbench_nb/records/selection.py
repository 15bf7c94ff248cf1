"""selection.jsonl, the optional record of a best-of-k selector (spec section 9): reading and checking it.

A run that used a selector (a verifier, reward model or judge that is shown some of a task's
attempts and picks one) records it in ``RUN_DIR/selection.jsonl``, one object per line.  Lines
follow the line rules of results.jsonl (sections 3 and 8: physical 1-based line numbers, blank
lines ignored, no byte-order mark, strict JSON, CRLF accepted, a cut-off last line is
``truncated-line``), parsed by the same :func:`~capbench_nb.records.exact_reader.parse_line`.
Each line's fields are checked as the rows of :data:`~capbench_nb.format.SELECTION_FIELDS` say,
then the rules of section 9 (:class:`SelectionChecker`, which the crash-safe recorder uses too):
a task of the plan, unique in the file; candidates distinct attempt numbers with a record in
results.jsonl; ``selected`` among them or null; ``scores`` keyed by exactly the candidates; one
selector on every line.

:func:`read_selection` raises :class:`~capbench_nb.errors.InvalidRunError` naming the file, the
line and the rule, or with ``strict=False`` lists each invalid line as an anomaly of kind
``invalid_selection_line`` (it then enters no metric).  The file is never modified.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pandas as pd

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.format import (
    MAX_LINE_BYTES, SELECTION, SELECTION_ANOMALIES, SELECTION_FIELDS, SELECTOR_FIELDS, is_safe_number,
)
from capbench_nb.io.files import input_errors, open_input
from capbench_nb.io.jsonparse import short, size_text
from capbench_nb.records.exact_reader import field_checker, json_value, parse_line

__all__ = ["SELECTION", "Selection", "SelectionChecker", "read_selection", "selection_frame", "LINE_COLUMNS",
           "selection_text", "selection_from_text"]

_KIND = SELECTION_ANOMALIES[0]
_CHECKS = tuple((f.name, f.required, field_checker(f)) for f in SELECTION_FIELDS)
_SELECTOR_CHECKS = tuple((f.name.split(".", 1)[1], field_checker(f)) for f in SELECTOR_FIELDS)
#: Columns of :attr:`Selection.lines`: ``line``, then every field but ``selector`` (one per file).
LINE_COLUMNS = ("line",) + tuple(f.name for f in SELECTION_FIELDS if f.name != "selector")
_DTYPES = {"line": "int64", **{f.name: f.pandas_dtype for f in SELECTION_FIELDS if f.pandas_dtype}}


@dataclass(frozen=True)
class Selection:
    """A loaded, checked selection.jsonl.

    Attributes
    ----------
    lines : DataFrame
        The valid lines in file order, one per task: ``line`` (physical, 1-based), ``task_id``,
        ``candidates`` (a tuple of attempt numbers, in file order), ``selected`` (Int64, null for an
        abstention), ``scores`` (``{attempt: score}`` or None), ``selector_ms``,
        ``selector_tokens``, ``selector_cost``, ``selector_cost_source``.
    selector : dict or None
        ``{"name", "version"}`` of the selector, None when no line is valid.
    sha256 : str
        ``"sha256:"`` + hex digest of the file's bytes.
    anomalies : list of dict
        With ``strict=False``, one ``{"kind": "invalid_selection_line", "task_id", "attempt": None,
        "line", "reason", "rule"}`` per invalid line (``task_id`` when it can be read).
    """

    lines: pd.DataFrame = field(repr=False)
    selector: dict | None
    sha256: str = field(repr=False)
    anomalies: list = field(default_factory=list, repr=False)


class SelectionChecker:
    """The rules of section 9 for one line after another: what is valid depends on the lines before.

    Parameters
    ----------
    plan_ids : iterable of str
        The plan's task ids.
    has_record : callable
        ``has_record(task_id, attempt)``: whether results.jsonl holds a record of that attempt.
    """

    def __init__(self, plan_ids: Iterable[str], has_record: Callable[[str, int], bool]) -> None:
        self.plan = set(plan_ids)
        self.has_record = has_record
        self.seen: dict[str, int | None] = {}  # task_id -> line of its valid line
        self.selector: dict | None = None
        self.selector_line: int | None = None

    def check(self, obj: Any, line: int | None = None) -> dict:
        """The values of one parsed line (as :attr:`Selection.lines` holds them), which is then taken
        as valid (its task seen, its selector the file's); :class:`~capbench_nb.errors.Violation` for
        the first broken rule, and nothing is taken."""
        values = self.fields(obj)
        task = values["task_id"]
        if task not in self.plan:
            raise Violation("selection-task-not-in-plan", f"task {short(task)} is not in the plan")
        if task in self.seen:
            first = self.seen[task]
            raise Violation("selection-duplicate-task", f"duplicate task_id {short(task)}"
                    + (f"; first on line {first}" if first is not None else "; it is already recorded"))
        for c in values["candidates"]:
            if not self.has_record(task, c):
                raise Violation("selection-candidate-missing",
                        f"candidate attempt {c} of task {short(task)} has no record in results.jsonl")
        selector = values.pop("selector")
        if self.selector is not None and selector != self.selector:
            where = f" on line {self.selector_line}" if self.selector_line is not None else ""
            raise Violation("selection-selector", f"a second selector {short(selector)}: the file's selector{where} is "
                    f"{short(self.selector)}; one selection file holds one selector")
        if self.selector is None:
            self.selector, self.selector_line = selector, line
        self.seen[task] = line
        return values

    @staticmethod
    def fields(obj: Any) -> dict:
        """The field checks of one line (types, ranges, candidates, selected, scores, cost source) alone."""
        if not isinstance(obj, dict):
            raise Violation("selection-type", f"a selection line must be a JSON object, not {short(obj)}")
        values: dict[str, Any] = {}
        for name, required, check in _CHECKS:
            if required and name not in obj:
                raise Violation("missing-field", f"the required field {name!r} is missing")
            values[name] = value = obj.get(name)
            check(value)
        candidates = values["candidates"]
        if not all(is_safe_number(c, integer=True) and c >= 1 for c in candidates) \
                or len(set(candidates)) != len(candidates):
            raise Violation("selection-candidates",
                    f"candidates must be distinct attempt numbers >= 1 (at most 2**53-1), found {short(candidates)}")
        selector = values["selector"]
        for key, check in _SELECTOR_CHECKS:
            if key not in selector:
                raise Violation("selection-selector", f"selector must have a string {key!r}")
            check(selector[key])
        values["selector"] = {"name": selector["name"], "version": selector["version"]}
        selected = values["selected"]
        if selected is not None and selected not in candidates:
            raise Violation("selection-selected",
                            f"selected {short(selected)} is not one of the candidates {short(candidates)}")
        scores = values["scores"]
        if scores is not None:
            if set(scores) != {str(c) for c in candidates} or len(scores) != len(candidates):
                raise Violation("selection-scores", f"scores must have one key per candidate (its attempt number as a "
                        f"decimal string): keys {short(sorted(scores))}, candidates {short(candidates)}")
            values["scores"] = {int(key): scores[key] for key in scores}
        if values["selector_cost"] is not None and values["selector_cost_source"] is None:
            raise Violation("selection-cost-needs-source",
                    "selector_cost is set but selector_cost_source is null; a cost needs a versioned price source")
        values["candidates"] = tuple(candidates)
        return values


def _read_lines(path: str | os.PathLike, file: str) -> tuple[list[tuple[int, Any]], int | None, str]:
    """Every non-blank line as (line, parsed object or the Violation that refused it), the line that is
    too long to read (None), and the digest of the bytes read."""
    entries: list[tuple[int, Any]] = []
    digest = hashlib.sha256()
    too_long = None
    with input_errors(file, SELECTION, missing_rule="selection-unreadable", missing="selection.jsonl is a link to nothing",
                      unreadable_rule="selection-unreadable"), open_input(path, null_device=False) as fh:
        lineno = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)  # a line that never ends is not read to the end
            if not raw:
                break
            lineno += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                too_long = lineno
                break
            digest.update(raw)
            stripped = raw.strip()
            if stripped:
                try:
                    entries.append((lineno, parse_line(raw, stripped, lineno, file_name=SELECTION)))
                except Violation as exc:
                    entries.append((lineno, exc))
    return entries, too_long, "sha256:" + digest.hexdigest()


def _record_lookup(records: pd.DataFrame, entries: list[tuple[int, Any]]) -> Callable[[str, int], bool]:
    """``has_record(task_id, attempt)`` over the records of the tasks the lines name (any valid record,
    anomalous ones included: the format asks for a record, not a counted attempt)."""
    named = {obj.get("task_id") for _, obj in entries if isinstance(obj, dict)}
    named = [t for t in named if isinstance(t, str)]
    subset = records[records["task_id"].isin(named)] if len(records) and named else records.iloc[:0]
    known = set(zip(subset["task_id"].astype(object), subset["attempt"].astype("int64").tolist()))
    return lambda task_id, attempt: (task_id, attempt) in known


def selection_frame(rows: list[dict], lines: list[int]) -> pd.DataFrame:
    """:attr:`Selection.lines` of checked line values (:meth:`SelectionChecker.check`) and their lines."""
    data: dict[str, Any] = {"line": pd.array(lines, dtype="int64")}
    for name in LINE_COLUMNS[1:]:
        values = [r[name] for r in rows]
        dtype = _DTYPES[name]
        data[name] = pd.Series(values, dtype="object") if dtype == "object" else pd.array(values, dtype=dtype)
    return pd.DataFrame(data, columns=list(LINE_COLUMNS))


def read_selection(path: str | os.PathLike, *, plan: pd.DataFrame, records: pd.DataFrame,
                   strict: bool = True) -> Selection:
    """Read and check selection.jsonl against the run's plan and records (spec section 9).

    Parameters
    ----------
    path : path-like
        The selection file.
    plan : DataFrame
        The run's plan (``task_id``).
    records : DataFrame
        The run's valid records of results.jsonl (``task_id``, ``attempt``).
    strict : bool, default True
        Raise on the first invalid line (True), or list every invalid line as an
        ``invalid_selection_line`` anomaly and go on (False).

    Returns
    -------
    Selection

    Raises
    ------
    InvalidRunError
        The first broken rule, naming the file, the line and the rule (``line-too-long`` and an
        unreadable file in both modes).
    """
    file = str(path)
    entries, too_long, digest = _read_lines(path, file)
    checker = SelectionChecker(plan["task_id"].astype(object), _record_lookup(records, entries))
    rows, lines, anomalies = [], [], []
    for lineno, obj in entries:
        try:
            if isinstance(obj, Violation):
                raise obj
            rows.append(checker.check(obj, lineno))
            lines.append(lineno)
        except Violation as exc:
            if strict:
                raise InvalidRunError(file, exc.rule, exc.reason, line=lineno) from None
            tid = obj.get("task_id") if isinstance(obj, dict) else None
            anomalies.append({"kind": _KIND, "task_id": tid if isinstance(tid, str) else None, "attempt": None,
                              "line": lineno, "reason": exc.reason, "rule": exc.rule})
    if too_long is not None:
        raise InvalidRunError(file, "line-too-long", f"the line is longer than {size_text(MAX_LINE_BYTES)}, the limit "
                              "this toolkit reads; the file is refused as a whole", line=too_long)
    return Selection(lines=selection_frame(rows, lines), selector=checker.selector, sha256=digest, anomalies=anomalies)


def selection_text(selection: Selection) -> str:
    """A checked selection as JSON text (a campaign store's ``selection`` column): the selector, the file's
    digest and the valid lines; ``candidates`` as a list and ``scores`` as ``[attempt, score]`` pairs, so
    that :func:`selection_from_text` gives back the same :attr:`Selection.lines`, types and all.  The
    anomalies are not in it (a run keeps them with its own)."""
    rows = []
    for row in selection.lines.astype(object).to_dict("records"):
        row = {key: json_value(v) for key, v in row.items()}
        row["candidates"] = list(row["candidates"])
        row["scores"] = None if row["scores"] is None else [[k, v] for k, v in row["scores"].items()]
        rows.append(row)
    return json.dumps({"selector": selection.selector, "sha256": selection.sha256, "lines": rows},
                      ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def selection_from_text(text: str) -> Selection:
    """The :class:`Selection` of :func:`selection_text` (no anomalies)."""
    doc = json.loads(text)
    rows = [{**row, "candidates": tuple(row["candidates"]),
             "scores": None if row["scores"] is None else {k: v for k, v in row["scores"]}} for row in doc["lines"]]
    return Selection(lines=selection_frame(rows, [row["line"] for row in rows]), selector=doc["selector"],
                     sha256=doc["sha256"])
