"""The fields of the run format as data (spec sections 2-4): one :class:`Field` per field.

``RECORD`` (with ``RECORD_TELEMETRY``) drives both results readers: the exact reader checks each
field as its row says (type, nullability, range, vocabulary, rule ids and messages), and the
columnar reader builds its pyarrow schema and pandas dtypes from the same rows.  ``MANIFEST``,
``PLAN_TASK`` and ``ARTIFACT`` state the other files' fields for ``validate_manifest``, the artifact
type checks (``records.artifacts``, compiled from ``ARTIFACT`` and ``rules.ARTIFACT_RULES``: a new
artifact key is one more row) and the reference page; tests hold each to its table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capbench_nb.format.artifact_files import ATTEMPT, EPISODE, HISTORY, TOKEN_FIELDS
from capbench_nb.format.limits import MAX_REPEATS, MAX_SAFE_NUMBER
from capbench_nb.format.telemetry import TELEMETRY
from capbench_nb.format.vocabulary import (
    AGENT_STATUSES, FAILURE_CLASSES, FAILURE_STAGES, JUDGE_STATUSES, JUDGE_VERDICTS, RUN_SCHEMA_VERSION,
    RUN_STATUSES, SETUP_STATUSES,
)

__all__ = [
    "Field", "RECORD", "RECORD_TELEMETRY", "RECORD_FIELDS", "RECORD_CHECK_ORDER", "RECORD_COLUMNS",
    "RECORD_DTYPES", "CLASS_VOCABULARY", "MANIFEST_DOCUMENT", "MANIFEST_FIELDS", "SUITE_FIELDS", "PLAN_FIELDS", "PLAN_TASK",
    "MANIFEST_NESTED", "ARTIFACT",
    "SELECTION_FIELDS", "SELECTOR_FIELDS",
]

_EXPECTED = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
             "object": "an object", "array": "a list"}


@dataclass(frozen=True)
class Field:
    """One field of a run-format file.

    Attributes
    ----------
    name : str
        The key (``telemetry.x`` for a telemetry field; a JSON pointer for an artifact field).
    json_type : {"string", "integer", "number", "boolean", "object", "array"}
    required : bool
        The key must be present (``missing-field`` otherwise).
    nullable : bool
        ``null`` is a valid value (an absent optional key reads as ``default``).
    minimum, maximum : float, optional
        Inclusive range of a number.
    vocabulary : tuple of str, optional
        The values a string may take.
    items : str, optional
        JSON type of the items of an array, or of the values of an object.
    default : object
        The value of an absent optional key.
    pandas_dtype, arrow_type : str, optional
        Column types of the records table and of the columnar reader's schema (None: no column).
    type_rule, type_message : str
        Rule id and message of a wrong JSON type.  Messages are ``str.format`` templates over
        ``where`` (the field's name), ``type`` (the JSON type found) and ``value`` (it, shortened).
    low_rule, low_message, high_rule, high_message : str
        Rule ids and messages of a value below ``minimum`` / above ``maximum``.
    vocabulary_rule, vocabulary_message : str
        Rule id and message of a string outside ``vocabulary``.
    path_rule : str, optional
        Rule id when the value must be a relative path that stays inside the run.
    non_empty : bool
        A string must not be ``""`` (refused with ``type_rule`` and ``type_message``).
    items_rule, items_message : str
        Rule id and message of an item of an array that is not of type ``items`` (``where`` is the
        item's pointer); empty: ``type_rule``, ``type_message``.
    unique_rule, unique_message : str
        Rule id and message of a value already found in the same field of an earlier item of the
        array (``first``: that item's pointer); empty: no such rule.
    optional_with : str, optional
        A JSON pointer into the document: a required field is optional where the value there is
        not null (``repeats`` with ``plan.repeats_override``).
    only_if : (str, object), optional
        ``(key, value)``: the row applies only to an object whose ``key`` is ``value`` (an artifact
        row below ``*``).
    description : str
    """

    name: str
    json_type: str
    required: bool = False
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    vocabulary: tuple | None = None
    items: str | None = None
    default: Any = None
    pandas_dtype: str | None = None
    arrow_type: str | None = None
    type_rule: str = "type"
    type_message: str = ""
    low_rule: str = ""
    low_message: str = ""
    high_rule: str = ""
    high_message: str = ""
    vocabulary_rule: str = ""
    vocabulary_message: str = ""
    path_rule: str | None = None
    non_empty: bool = False
    items_rule: str = ""
    items_message: str = ""
    unique_rule: str = ""
    unique_message: str = ""
    optional_with: str | None = None
    only_if: tuple[str, Any] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not self.type_message:
            expected = _EXPECTED[self.json_type]
            if self.nullable:
                expected = "true, false or null" if self.json_type == "boolean" else expected + " or null"
            object.__setattr__(self, "type_message", f"{{where}} must be {expected}, not {{type}}")

    @property
    def type_text(self) -> str:
        """The JSON type as the reference page writes it."""
        text = self.json_type + (f" of {self.items}" if self.items else "")
        return text + " or null" if self.nullable else text


def _number(name: str, *, integer: bool, pandas: str | None, arrow: str | None, description: str) -> Field:
    """A non-negative number (or integer) of a record, at most 2**53-1, or null."""
    kind = "integer" if integer else "number"
    return Field(
        name, kind, nullable=True, minimum=0, maximum=MAX_SAFE_NUMBER, pandas_dtype=pandas, arrow_type=arrow,
        type_message=f"{{where}} must be {'an integer' if integer else 'a number'} or null, not {{type}} {{value}}",
        low_rule="negative", low_message="{where} must not be negative, found {value}",
        high_rule="number-too-large",
        high_message="{where} is {value}, above 2**53-1, the largest exactly representable value",
        description=description,
    )


#: The values of ``failure_class``: ``""`` (a success), then every failure class.  A class's code
#: in the readers is its position here.
CLASS_VOCABULARY = ("",) + FAILURE_CLASSES

#: The fields of an attempt record (spec section 3), in the column order of ``Run.records``
#: (``telemetry`` has no column of its own: each of its fields has one, after these).
RECORD = (
    Field("task_id", "string", required=True, pandas_dtype="string", arrow_type="large_string",
          description="a task of the plan"),
    Field("attempt", "integer", required=True, minimum=1, maximum=MAX_SAFE_NUMBER, pandas_dtype="Int64",
          arrow_type="int64", type_rule="attempt", type_message="attempt must be an integer >= 1, found {value}",
          low_rule="attempt", low_message="attempt must be an integer >= 1, found {value}",
          high_rule="number-too-large", high_message="attempt {value} is above 2**53-1",
          description="attempt number within the task"),
    Field("artifact_dir", "string", nullable=True, pandas_dtype="string", arrow_type="large_string",
          path_rule="artifact-dir", description="relative to the run directory; must stay inside it"),
    Field("success", "boolean", required=True, pandas_dtype="boolean", arrow_type="bool",
          description="the enabled evaluation contract passed"),
    Field("agent_eligible", "boolean", required=True, pandas_dtype="boolean", arrow_type="bool",
          description="the attempt can fairly enter the agent's success denominator"),
    Field("failure_class", "string", required=True, vocabulary=CLASS_VOCABULARY, pandas_dtype="category",
          arrow_type="string", vocabulary_rule="failure-class",
          vocabulary_message=f"failure_class {{value}} is not one of \"\", {', '.join(FAILURE_CLASSES)}",
          description='"" on success, else the failure class'),
    Field("failure_stage", "string", nullable=True, vocabulary=FAILURE_STAGES, pandas_dtype="category",
          arrow_type="string", vocabulary_rule="failure-stage",
          vocabulary_message=f"failure_stage {{value}} is not null or one of {', '.join(FAILURE_STAGES)}",
          description="set only with evidence"),
    Field("evidence", "array", items="string", default=[], pandas_dtype="category", arrow_type="list<string>",
          type_message="evidence must be a list of strings",
          description="references FILE#JSON_POINTER (RFC 6901) into the attempt's artifact_dir; every one must "
                      "resolve (column: their compact JSON text)"),
    Field("quality_score", "number", nullable=True, minimum=0, maximum=1, pandas_dtype="Float64",
          arrow_type="float64", low_rule="quality-score", low_message="quality_score {value} is outside [0, 1]",
          high_rule="quality-score", high_message="quality_score {value} is outside [0, 1]",
          description="reproducible score; null when the evaluation is invalid"),
    _number("cost", integer=False, pandas="Float64", arrow="float64",
            description="provider cost; null unless cost_source is set"),
    Field("cost_source", "string", nullable=True, pandas_dtype="category", arrow_type="string",
          description="a versioned price source"),
    Field("telemetry", "object", default={}, arrow_type="struct<telemetry>",
          description="section 5: one column per telemetry field; a missing key reads as null"),
    Field("telemetry_source", "object", items="string or null", default={}, pandas_dtype="category",
          arrow_type="struct<string>", type_message="telemetry_source must be an object whose values are strings",
          description="for each non-null telemetry field, its source (column: compact JSON text of the non-null "
                      "entries)"),
)

#: The fields of a record's ``telemetry`` object (spec section 5), from :data:`~capbench_nb.format.TELEMETRY`.
RECORD_TELEMETRY = tuple(
    Field(f"telemetry.{t.name}", "boolean", nullable=True, pandas_dtype=t.pandas_dtype, arrow_type=t.arrow_type,
          description=t.description)
    if t.kind == "bool" else
    _number(f"telemetry.{t.name}", integer=t.kind == "count", pandas=t.pandas_dtype, arrow=t.arrow_type,
            description=t.description)
    for t in TELEMETRY
)

RECORD_FIELDS = {f.name: f for f in RECORD}

#: The order the readers check a record's fields in, which decides the rule reported for a
#: record that breaks several (kept as it always was: artifact_dir after evidence).
RECORD_CHECK_ORDER = ("task_id", "attempt", "success", "agent_eligible", "failure_class", "failure_stage",
                      "evidence", "artifact_dir", "quality_score", "cost", "cost_source", "telemetry",
                      "telemetry_source")

#: Columns of the records DataFrame, before the telemetry columns.
RECORD_COLUMNS = ("line",) + tuple(f.name for f in RECORD if f.pandas_dtype)

#: pandas dtype of every column of the records DataFrame (``anomaly`` aside).
RECORD_DTYPES = {"line": "int64", **{f.name: f.pandas_dtype for f in RECORD if f.pandas_dtype},
                 **{f.name.split(".", 1)[1]: f.pandas_dtype for f in RECORD_TELEMETRY}}

_SCHEMA_MESSAGE = f"schema_version must be {RUN_SCHEMA_VERSION!r}, found {{value}}"
_STATUS_MESSAGE = f"status must be one of {', '.join(RUN_STATUSES)}; found {{value}}"

#: The manifest document itself.  The messages of the manifest tables are ``str.format`` templates
#: over ``where``, ``type``, ``value`` (shortened) and the other values of the object (shortened).
MANIFEST_DOCUMENT = Field("", "object", required=True, type_rule="manifest-type",
                          type_message="the manifest must be a JSON object, not {type}", description="the document")

#: manifest.json (spec section 2), with the rule a wrong value breaks, in the order
#: ``records.manifest`` checks them (an absent key that is not required is not checked).
MANIFEST_FIELDS = (
    Field("schema_version", "string", required=True, vocabulary=(RUN_SCHEMA_VERSION,), type_rule="schema-version",
          vocabulary_rule="schema-version", type_message=_SCHEMA_MESSAGE, vocabulary_message=_SCHEMA_MESSAGE,
          description="the run format version"),
    Field("run_id", "string", required=True, non_empty=True, type_rule="run-id",
          type_message="run_id must be a non-empty string, found {value}", description="a non-empty string"),
    Field("status", "string", required=True, vocabulary=RUN_STATUSES, type_rule="status",
          vocabulary_rule="status", type_message=_STATUS_MESSAGE, vocabulary_message=_STATUS_MESSAGE,
          description="how the run ended"),
    Field("suite", "object", type_rule="suite", type_message="suite must be an object with name and version, not {type}",
          description="name and version, both strings"),
    Field("created_at", "string", nullable=True, type_rule="created-at",
          type_message="created_at must be a string (ISO 8601 time)", description="ISO 8601 time"),
    Field("runner", "object", nullable=True, type_rule="runner", type_message="runner must be an object, not {type}",
          description="free-form"),
    Field("config", "object", nullable=True, type_rule="config", type_message="config must be an object, not {type}",
          description="free-form; judge: false means --no-judge; keys are slice dimensions"),
    Field("plan", "object", required=True, type_rule="plan", type_message="plan must be an object, found {value}",
          description="repeats_override, tasks, k"),
)

#: ``manifest.suite``.
SUITE_FIELDS = (
    Field("name", "string", type_rule="suite", type_message="suite.name must be a string, not {type}"),
    Field("version", "string", type_rule="suite", type_message="suite.version must be a string, not {type}"),
)

_REPEATS_ABOVE = f"above {MAX_REPEATS}, the most planned attempts of a task this toolkit accepts"

#: ``manifest.plan``, in the order they are checked (``k`` after the tasks: it must equal their
#: smallest planned repeats, ``rules.MANIFEST_RULES``).
PLAN_FIELDS = (
    Field("repeats_override", "integer", nullable=True, minimum=1, maximum=MAX_REPEATS,
          type_rule="repeats-override", low_rule="repeats-override", high_rule="repeats-too-large",
          type_message="repeats_override must be null or an integer >= 1, found {value}",
          low_message="repeats_override must be null or an integer >= 1, found {value}",
          high_message="repeats_override is {value}, " + _REPEATS_ABOVE,
          description="--repeats N: every task's planned repeats"),
    Field("tasks", "array", required=True, items="object", type_rule="plan-tasks",
          type_message="plan.tasks must be a list of tasks, found {value}", items_rule="task-type",
          items_message="a plan task must be an object, not {type}",
          description="the planned tasks, non-empty (plan-empty)"),
    Field("k", "integer", nullable=True, type_rule="plan-k", type_message="plan.k must be an integer or null, found {value}",
          description="the run's fixed k; must equal the smallest planned repeats"),
)

#: One task of ``manifest.plan.tasks``; any other key is a label (a slice dimension).
PLAN_TASK = (
    Field("task_id", "string", required=True, non_empty=True, type_rule="task-id",
          type_message="task_id must be a non-empty string, found {value}", unique_rule="task-id-duplicate",
          unique_message="task_id {value} is already planned at {first}",
          description="non-empty and unique in the plan (task-id-duplicate)"),
    Field("repeats", "integer", required=True, minimum=1, maximum=MAX_REPEATS, type_rule="repeats",
          low_rule="repeats", high_rule="repeats-too-large", optional_with="/plan/repeats_override",
          type_message="repeats of task {task_id} must be an integer >= 1, found {value}",
          low_message="repeats of task {task_id} must be an integer >= 1, found {value}",
          high_message="repeats of task {task_id} is {value}, " + _REPEATS_ABOVE,
          description="planned repeats (not required with repeats_override)"),
)

#: The tables of the objects below the manifest, by their pointer (``*``: every item of an array).
MANIFEST_NESTED = {"/suite": SUITE_FIELDS, "/plan": PLAN_FIELDS, "/plan/tasks/*": PLAN_TASK}

#: One line of the optional selection.jsonl (spec section 9), in the order its fields are checked
#: (``records.selection``); an absent optional key reads as null, any other key is kept and ignored.
SELECTION_FIELDS = (
    Field("task_id", "string", required=True, pandas_dtype="string",
          description="a task of the plan (selection-task-not-in-plan), unique in the file (selection-duplicate-task)"),
    Field("candidates", "array", required=True, items="integer", pandas_dtype="object",
          type_rule="selection-candidates", type_message="candidates must be a list of integers, not {value}",
          description="the attempt numbers the selector was shown: distinct integers in [1, 2**53-1], each with a "
                      "record in results.jsonl (selection-candidate-missing)"),
    Field("selected", "integer", required=True, nullable=True, pandas_dtype="Int64", type_rule="selection-selected",
          type_message="selected must be an attempt number or null, not {type} {value}",
          description="the attempt it picked, one of candidates; null when it abstained (the key is required)"),
    Field("scores", "object", nullable=True, items="number", pandas_dtype="object", type_rule="selection-scores",
          type_message="scores must be null or an object of numbers, not {value}",
          description="optional: attempt number as a decimal string -> the selector's score, one key per candidate"),
    Field("selector", "object", required=True, type_rule="selection-selector",
          description='{"name": string, "version": string}, the same on every line'),
    _number("selector_ms", integer=False, pandas="Float64", arrow=None, description="the selector's wall time"),
    _number("selector_tokens", integer=True, pandas="Int64", arrow=None, description="tokens the selector used"),
    _number("selector_cost", integer=False, pandas="Float64", arrow=None,
            description="null unless selector_cost_source is set (selection-cost-needs-source)"),
    Field("selector_cost_source", "string", nullable=True, pandas_dtype="string",
          description="a versioned price source"),
)

#: The ``selector`` object of a selection line.
SELECTOR_FIELDS = (
    Field("selector.name", "string", required=True, type_rule="selection-selector", description="the selector"),
    Field("selector.version", "string", required=True, type_rule="selection-selector", description="its version"),
)


def _artifact_message(pointer: str, json_type: str, kw: dict) -> str:
    """The message of a value that breaks an artifact row: ``{where} must be ...``."""
    if pointer == "":
        return "the document must be an object"
    null = " or null" if kw.get("nullable") else ""
    if kw.get("vocabulary"):
        return "{where} must be one of " + ", ".join(kw["vocabulary"])
    if json_type in ("number", "integer") and kw.get("maximum") == MAX_SAFE_NUMBER:
        return f"{{where}} must be a non-negative {json_type}{null}"
    if json_type in ("number", "integer") and kw.get("maximum") is not None:
        return f"{{where}} must be a {json_type} in [{kw['minimum']:g}, {kw['maximum']:g}]{null}"
    if json_type == "integer" and kw.get("minimum") is not None:
        return f"{{where}} must be an integer >= {kw['minimum']:g}{null}"
    if json_type == "string":  # (null or not: the message never said "or null")
        return "{where} must be a non-empty string" if kw.get("non_empty") else "{where} must be a string"
    text = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "object": "an object", "array": "a list"}[json_type]
    return f"{{where}} must be {text}{null if json_type in ('object', 'boolean') else ''}"


def _a(file, pointer, json_type, **kw) -> Field:
    """A row of :data:`ARTIFACT`: rule ``artifact-type`` (``number-too-large`` above 2**53-1)."""
    message = _artifact_message(pointer, json_type, kw)
    if kw.get("items"):
        kw["items_message"] = "{where} must be " + {"object": "an object"}[kw["items"]]
    if kw.get("maximum") == MAX_SAFE_NUMBER:
        kw["high_message"] = "{where} is {value}, above 2**53-1, the largest exactly representable value"
    return Field(f"{file}#{pointer}", json_type, type_rule="artifact-type", type_message=message,
                 low_rule="artifact-type", low_message=message, vocabulary_rule="artifact-type",
                 vocabulary_message=message, **{"high_rule": "artifact-type", "high_message": message, **kw})


_SAFE = {"minimum": 0, "maximum": MAX_SAFE_NUMBER, "high_rule": "number-too-large"}

#: The values the artifact type checks look at (spec section 4), by ``FILE#POINTER``; ``*``
#: stands for every index of an array.  ``records.artifacts`` checks exactly these.
ARTIFACT = (
    _a(ATTEMPT, "", "object", required=True, description="the document"),
    _a(ATTEMPT, "/task_id", "string", required=True, non_empty=True, description="non-empty"),
    _a(ATTEMPT, "/attempt", "integer", required=True, minimum=1, description=">= 1"),
    _a(ATTEMPT, "/setup", "object", nullable=True),
    _a(ATTEMPT, "/setup/status", "string", nullable=True, vocabulary=SETUP_STATUSES),
    _a(ATTEMPT, "/setup/duration_ms", "number", nullable=True, **_SAFE),
    _a(ATTEMPT, "/provider", "object", nullable=True),
    _a(ATTEMPT, "/provider/available", "boolean", nullable=True),
    _a(ATTEMPT, "/skip", "object", nullable=True),
    _a(ATTEMPT, "/agent", "object", nullable=True),
    _a(ATTEMPT, "/agent/status", "string", nullable=True, vocabulary=AGENT_STATUSES),
    _a(ATTEMPT, "/agent/task_wall_ms", "number", nullable=True, **_SAFE),
    _a(ATTEMPT, "/recovery", "object", nullable=True),
    _a(ATTEMPT, "/recovery/attempted", "boolean", nullable=True),
    _a(ATTEMPT, "/recovery/succeeded", "boolean", nullable=True),
    _a(ATTEMPT, "/screenshots", "array", nullable=True, items="object"),
    _a(ATTEMPT, "/screenshots/*/capture_ms", "number", nullable=True, **_SAFE),
    _a(ATTEMPT, "/evaluation", "object", nullable=True),
    _a(ATTEMPT, "/evaluation/judge_enabled", "boolean", nullable=True),
    _a(ATTEMPT, "/evaluation/hard_assertions", "array", nullable=True, items="object"),
    _a(ATTEMPT, "/evaluation/hard_assertions/*/passed", "boolean", required=True),
    _a(ATTEMPT, "/evaluation/judge", "object", nullable=True),
    _a(ATTEMPT, "/evaluation/judge/status", "string", nullable=True, vocabulary=JUDGE_STATUSES),
    _a(ATTEMPT, "/evaluation/judge/verdict", "string", nullable=True, vocabulary=JUDGE_VERDICTS),
    _a(ATTEMPT, "/evaluation/quality_score", "number", nullable=True, minimum=0, maximum=1),
    # the runner's optional device probe before the attempt (spec section 12; derivation rule 1b)
    _a(ATTEMPT, "/preflight", "object", nullable=True, description="the runner's device probe before the attempt"),
    _a(ATTEMPT, "/preflight/lock", "string", nullable=True,
       description="the digest of the lock the runner probed against"),
    _a(ATTEMPT, "/preflight/probes", "array", nullable=True, items="object",
       description="name, expected, observed; fails when observed != expected (JSON equality)"),
    _a(ATTEMPT, "/preflight/probes/*/name", "string", required=True,
       description="what the probe checked, e.g. locale (a device_state pin); names its evidence line"),
    _a(EPISODE, "", "object", required=True, description="the document"),
    _a(EPISODE, "/run_metrics", "object", nullable=True),
    *(_a(EPISODE, f"/run_metrics/{t.name}", t.json_type, nullable=True, **_SAFE)
      for t in TELEMETRY if t.source == f"{EPISODE}#/run_metrics/{t.name}"),
    _a(EPISODE, "/events", "array", nullable=True, items="object"),
    _a(EPISODE, "/events/*/type", "string", nullable=True),
    _a(EPISODE, "/events/*/start_ms", "number", nullable=True, only_if=("type", "device_action"),
       description="of a device_action event", **_SAFE),
    _a(EPISODE, "/events/*/end_ms", "number", nullable=True, only_if=("type", "device_action"),
       description="of a device_action event; not before start_ms", **_SAFE),
    _a(HISTORY, "", "object", required=True, description="the document"),
    _a(HISTORY, "/messages", "array", nullable=True, items="object"),
    _a(HISTORY, "/messages/*/usage", "object", nullable=True),
    *(_a(HISTORY, f"/messages/*/usage/{key}", "integer", nullable=True, **_SAFE) for key in TOKEN_FIELDS),
    _a(HISTORY, "/messages/*/tool_calls", "array", nullable=True, items="object"),
    _a(HISTORY, "/messages/*/tool_calls/*/name", "string", nullable=True),
)
