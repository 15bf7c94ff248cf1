"""Building an attempt record (spec section 3) from the table :data:`~capbench_nb.format.RECORD`.

:func:`new_record` is the one place a record dict is made: the derivation, ingest's stand-in
record of a broken attempt, the importers and the simulator's derived records all call it, so a
record has its keys in the order of :data:`RECORD_KEY_ORDER` (the order results.jsonl has always
been written in) and the table's defaults for what its caller leaves out.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.format.fields import RECORD, RECORD_FIELDS
from capbench_nb.format.telemetry import TELEMETRY_FIELDS

__all__ = ["RECORD_KEY_ORDER", "new_record"]

#: The order of a written record's keys: spec section 3's table (``cost`` and ``cost_source``
#: after ``telemetry_source``, unlike the columns of ``Run.records``).
RECORD_KEY_ORDER = ("task_id", "attempt", "artifact_dir", "success", "agent_eligible", "failure_class",
                    "failure_stage", "evidence", "quality_score", "telemetry", "telemetry_source", "cost",
                    "cost_source")
assert sorted(RECORD_KEY_ORDER) == sorted(f.name for f in RECORD)

#: The JSON type tests of :func:`new_record` (a bool is no number).
_IS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
#: (name, required, nullable, JSON type test, vocabulary, default factory) of each key, in key order.
_BUILD = tuple(
    (f.name, f.required, f.nullable, _IS[f.json_type], frozenset(f.vocabulary) if f.vocabulary else None,
     # telemetry: every field present, null (section 3), rather than the reader's default of an absent key
     (lambda: dict.fromkeys(TELEMETRY_FIELDS)) if f.name == "telemetry"
     else (lambda d=f.default: d.copy()) if isinstance(f.default, (list, dict)) else (lambda d=f.default: d))
    for f in (RECORD_FIELDS[name] for name in RECORD_KEY_ORDER)
)


def new_record(**values: Any) -> dict:
    """A record of spec section 3, its keys in :data:`RECORD_KEY_ORDER`.

    Every field of :data:`~capbench_nb.format.RECORD` not given takes its default: null for a
    nullable field, ``[]`` for ``evidence``, ``{}`` for ``telemetry_source`` and every telemetry
    field null for ``telemetry``.  The values are checked against their rows (JSON type,
    nullability, vocabulary); the invariants and ranges are the readers' (``validate_record``).

    Raises
    ------
    TypeError
        A key that is no field of the record, or a required field left out.
    ValueError
        A value of the wrong JSON type, or outside its vocabulary.
    """
    unknown = values.keys() - RECORD_FIELDS.keys()
    if unknown:
        raise TypeError(f"new_record: {', '.join(sorted(unknown))} is no field of a record")
    record = {}
    for name, required, nullable, test, vocabulary, default in _BUILD:
        if name in values:
            value = values[name]
        elif required:
            raise TypeError(f"new_record: the required field {name!r} is missing")
        else:
            value = default()
        if value is None:
            if not nullable:
                raise ValueError(f"new_record: {name} must not be null")
        elif not test(value) or (vocabulary is not None and value not in vocabulary):
            raise ValueError(f"new_record: {name} = {value!r} does not fit its row of RECORD")
        record[name] = value
    return record
