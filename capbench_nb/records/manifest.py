"""manifest.json: read, validate, and the plan as a table (spec sections 2 and 8)."""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np
import pandas as pd

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import (
    MANIFEST, MANIFEST_DOCUMENT, MANIFEST_FIELDS, MANIFEST_NESTED, MANIFEST_RULES, MAX_MANIFEST_BYTES, Field,
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
    if unicode:
        found = find_surrogate(manifest)
        if found is not None:
            raise _manifest_error(file, found[0], "invalid-unicode", surrogate_message(found[0], found[1]))
    _Walk(manifest, file).value(MANIFEST_DOCUMENT, manifest, "", "", None)


class _Shown(dict):
    """The values a message template may name: shortened, ``null`` for an absent key."""

    def __missing__(self, key: str) -> str:
        return "null"


#: The rules of MANIFEST_RULES by the pointer of the object (or array) they look at.
_RULES: dict[str, list] = {}
for _rule in MANIFEST_RULES:
    _RULES.setdefault(_rule.at.partition("#")[2], []).append(_rule)


class _Walk:
    """The checks of :data:`~capbench_nb.format.MANIFEST_FIELDS` and the tables below it
    (:data:`~capbench_nb.format.MANIFEST_NESTED`), then :data:`~capbench_nb.format.MANIFEST_RULES`,
    depth first in the tables' order; the first refusal raises."""

    def __init__(self, manifest: Any, file: str) -> None:
        self.manifest, self.file = manifest, file

    def fail(self, pointer: str, rule: str, message: str, value: Any, siblings: Any = None) -> None:
        shown = _Shown({key: short(v) for key, v in siblings.items()} if isinstance(siblings, dict) else {})
        shown.update(where=pointer, type=json_type_name(value), value=short(value))
        raise _manifest_error(self.file, pointer, rule, message.format_map(shown))

    def value(self, f: Field, value: Any, pointer: str, table: str, siblings: Any) -> None:
        """Check one value against its row, then what lies below it."""
        if value is None:
            if f.nullable:
                return
            self.fail(pointer, f.type_rule, f.type_message, value, siblings)
        if not _TYPE_TESTS[f.json_type](value) or (f.non_empty and not value):
            self.fail(pointer, f.type_rule, f.type_message, value, siblings)
        if f.vocabulary is not None and value not in f.vocabulary:
            self.fail(pointer, f.vocabulary_rule, f.vocabulary_message, value, siblings)
        if f.minimum is not None and value < f.minimum:
            self.fail(pointer, f.low_rule, f.low_message, value, siblings)
        if f.maximum is not None and value > f.maximum:
            self.fail(pointer, f.high_rule, f.high_message, value, siblings)
        if f.json_type == "array" and f.items:
            self.rules(table, value, pointer)
            self.items(f, value, pointer, f"{table}/*")
        elif f.json_type == "object":
            self.fields(MANIFEST_NESTED.get(table, MANIFEST_FIELDS if f is MANIFEST_DOCUMENT else ()), value, pointer,
                        table)
            self.rules(table, value, pointer)

    def fields(self, fields: tuple, obj: dict, pointer: str, table: str) -> None:
        for f in fields:
            if f.name not in obj and not (f.required and not self.optional(f)):
                continue
            self.value(f, obj.get(f.name), f"{pointer}/{f.name}", f"{table}/{f.name}", obj)

    def optional(self, f: Field) -> bool:
        """Whether the required field ``f`` is optional here (its ``optional_with`` is not null)."""
        if f.optional_with is None:
            return False
        node = self.manifest
        for key in f.optional_with.split("/")[1:]:
            node = node.get(key) if isinstance(node, dict) else None
        return node is not None

    def items(self, f: Field, items: list, pointer: str, table: str) -> None:
        test = _TYPE_TESTS[f.items]
        # per row: its name, whether an absent key is checked, its table, the values seen (unique rows)
        rows = [(g, g.name, g.required and not self.optional(g), f"{table}/{g.name}", {} if g.unique_rule else None,
                 _accepts(g)) for g in MANIFEST_NESTED.get(table, ())]
        for i, item in enumerate(items):
            if not test(item):
                self.fail(f"{pointer}/{i}", f.items_rule or f.type_rule, f.items_message or f.type_message, item)
            for g, name, required, sub, seen, accepts in rows:
                if name not in item and not required:
                    continue
                value = item.get(name)
                if accepts is None or not accepts(value):  # (the fast test of a plain value, else the full one)
                    self.value(g, value, f"{pointer}/{i}/{name}", sub, item)
                if seen is not None:
                    if value in seen:
                        self.fail(f"{pointer}/{i}/{name}", g.unique_rule, g.unique_message.replace(
                            "{first}", f"{pointer}/{seen[value]}"), value, item)
                    seen[value] = i

    def rules(self, table: str, obj: Any, pointer: str) -> None:
        for rule in _RULES.get(table, ()):
            if rule.broken(obj):
                where = f"{pointer}/{rule.key}" if rule.key else pointer
                raise _manifest_error(self.file, where, rule.id,
                                      rule.message.format(where=pointer, **(rule.values(obj) if rule.values else {})))


def _accepts(f: Field) -> Callable[[Any], bool] | None:
    """A fast test accepting only values ``f`` accepts, with nothing below them (None: use the full check)."""
    if f.json_type in ("object", "array") or f.vocabulary is not None:
        return None
    kind = {"string": str, "integer": int, "number": float, "boolean": bool}[f.json_type]
    low = -math.inf if f.minimum is None else f.minimum
    high = math.inf if f.maximum is None else f.maximum
    if kind is str:
        return (lambda v: type(v) is str and v != "") if f.non_empty else (lambda v: type(v) is str)
    if kind is int:
        return lambda v: type(v) is int and low <= v <= high
    return None


_TYPE_TESTS = {
    "string": lambda v: isinstance(v, str),
    "integer": is_int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


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

