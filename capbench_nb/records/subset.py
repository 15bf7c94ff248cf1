"""Reading subset.json for ``suite estimate`` (spec section 13): one line for the first problem.

The values the estimate reads and their rules are data (:mod:`capbench_nb.format.subset`); here the
file is read (a size limit, strict JSON: no NaN, no nesting past the recursion limit) and walked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.limits import MAX_SUBSET_BYTES
from capbench_nb.format.subset import SUBSET_FIELDS, SUBSET_FILE, SUBSET_RULE, SUBSET_SCHEMA
from capbench_nb.io.files import FileTooLarge, input_errors, read_regular_file
from capbench_nb.io.pointer import expand_pattern
from capbench_nb.io.jsonparse import has_json_type, json_type_name, parse_document, short, size_text

__all__ = ["read_subset", "subset_problems"]

def _value_problem(field, where: str, value: Any, seen: dict) -> str | None:
    """What is wrong with one present value of ``field`` (``seen``: the earlier values of a unique field)."""
    if not has_json_type(value, field.json_type):
        return field.type_message.format(where=where, type=json_type_name(value), value=short(value))
    if field.vocabulary and value not in field.vocabulary:
        return f"{where} must be {' or '.join(field.vocabulary)}, not {short(value)}"
    if field.minimum is not None and value < field.minimum:
        return f"{where} must be >= {field.minimum:g}, found {short(value)}"
    if field.maximum is not None and value > field.maximum:
        return f"{where} must be <= {field.maximum:g}, found {short(value)}"
    if field.non_empty and value == "":
        return f"{where} must not be empty"
    for i, item in enumerate(value if field.items else ()):
        if not has_json_type(item, field.items):
            return f"{where}/{i} must be {'an' if field.items[0] in 'aeiou' else 'a'} {field.items}, not {json_type_name(item)}"
    if field.unique_rule and field.items:  # a list of unique items
        first: dict = {}
        for i, item in enumerate(value):
            if item in first:
                return f"{where}/{i} repeats {short(item)} (also at {where}/{first[item]})"
            first[item] = i
    elif field.unique_rule:  # unique over every place of the row
        if value in seen:
            return f"{where} repeats {short(value)} (also at {seen[value]})"
        seen[value] = where
    return None


def _field_problems(doc: Any) -> Iterator[str]:
    """The first problem of a row of :data:`~capbench_nb.format.subset.SUBSET_FIELDS`, rows in order (a later
    row may read what an earlier one refused)."""
    for field in SUBSET_FIELDS:
        seen: dict = {}
        for pointer, value, present in expand_pattern(doc, field.name):
            where = pointer or "the document"
            problem = _value_problem(field, where, value, seen) if present else f"{where} is required"
            if problem:
                yield problem
                return


def _relation_problems(doc: dict) -> Iterator[str]:
    """:data:`capbench_nb.format.subset.SUBSET_RULES`, in their order."""
    tasks, full = doc["tasks"], doc["estimator"]["full_suite"]
    if len(tasks) != doc["size"]:
        yield f"/tasks has {len(tasks)} task_ids, /size says {doc['size']}"
    elif len(full) != doc["full_tasks"] or len(full) <= doc["size"]:
        yield (f"/estimator/full_suite has {len(full)} tasks; it must have /full_tasks ({doc['full_tasks']}) "
               f"tasks, more than /size ({doc['size']})")
    else:
        known = {e["task_id"] for e in full}
        unknown = [t for t in tasks if t not in known]
        if unknown:
            yield f"{len(unknown)} task(s) of /tasks not in /estimator/full_suite, e.g. {short(unknown[0])}"


def subset_problems(doc: Any) -> list[str]:
    """What is wrong with a subset document for ``suite estimate``: the first problem, or none."""
    problems = list(_field_problems(doc))
    if problems:
        return problems[:1]
    return list(_relation_problems(doc))[:1]


def read_subset(path: str | os.PathLike) -> dict:
    """subset.json (a file, or a directory holding one), checked (:func:`subset_problems`).

    Raises
    ------
    InvalidRunError
        Rule ``subset``: unreadable, larger than ``MAX_SUBSET_BYTES``, not strict JSON, or a problem
        of :func:`subset_problems`.
    """
    path = Path(path)
    path = path / SUBSET_FILE if path.is_dir() else path
    file = str(path)
    with input_errors(file, path.name, missing_rule=SUBSET_RULE, missing=f"no subset document at {file}",
                      unreadable_rule=SUBSET_RULE):
        try:
            data = read_regular_file(path, limit=MAX_SUBSET_BYTES)
        except FileTooLarge:
            raise InvalidRunError(file, "subset-too-large", f"larger than {size_text(MAX_SUBSET_BYTES)} "
                                  "(MAX_SUBSET_BYTES); is it a subset.json?") from None
    doc = parse_document(data, file=file, rule=SUBSET_RULE, strict=True)
    problems = subset_problems(doc)
    if problems:
        if isinstance(doc, dict) and doc.get("schema_version") != SUBSET_SCHEMA:
            raise InvalidRunError(file, SUBSET_RULE, f"not a {SUBSET_SCHEMA} document ({problems[0]})")
        raise InvalidRunError(file, SUBSET_RULE, problems[0])
    return doc
