"""Every rule of the run format, by id: the record invariants as predicates, and the rest.

:data:`INVARIANTS` are the invariants of an attempt record (spec section 3, then section 8) as
``Rule(id, broken, message)``.  ``broken`` takes a record's :class:`Facts` and is written with
``&``, ``^ True`` (not) and comparisons only, so the same predicate runs on the scalars of one
record (the exact reader) and on whole numpy columns (the columnar reader).  :data:`CHECKS` lists
every other rule id a reader or the derivation raises, with the file it concerns; together they
are :data:`RULE_IDS`, the ids ``[rule: ...]`` can show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from capbench_nb.format import limits
from capbench_nb.format.artifact_files import EPISODE
from capbench_nb.format.fields import CLASS_VOCABULARY
from capbench_nb.format.lock import LOCK_CHECKS
from capbench_nb.format.vocabulary import FAILURE_STAGES, INELIGIBLE_CLASSES, MANIFEST

__all__ = ["Facts", "Rule", "INVARIANTS", "ObjectRule", "ARTIFACT_RULES", "MANIFEST_RULES", "Check", "CHECKS", "RULE_IDS", "CLASS_CODES", "STAGE_CODES",
           "INELIGIBLE_CODES", "AGENT_CODE", "facts_of"]

#: Code of each ``failure_class`` value (its position in ``CLASS_VOCABULARY``) and of each stage.
CLASS_CODES = {name: i for i, name in enumerate(CLASS_VOCABULARY)}
STAGE_CODES = {name: i for i, name in enumerate(FAILURE_STAGES)}
#: Indexed by class code: whether the class requires ``agent_eligible`` false.
INELIGIBLE_CODES = np.array([name in INELIGIBLE_CLASSES for name in CLASS_VOCABULARY])
AGENT_CODE = CLASS_CODES["agent"]


class Facts(NamedTuple):
    """What the invariants look at, for one record (scalars) or a chunk of records (arrays)."""

    success: Any  #: bool
    eligible: Any  #: bool: agent_eligible
    class_code: Any  #: int: CLASS_CODES[failure_class]
    stage_code: Any  #: int: STAGE_CODES[failure_stage], -1 for null
    n_evidence: Any  #: int: number of evidence references
    has_cost: Any  #: bool: cost is not null
    has_cost_source: Any  #: bool: cost_source is not null


def facts_of(values: dict) -> Facts:
    """The :class:`Facts` of one checked record, from its field values."""
    stage = values["failure_stage"]
    return Facts(values["success"], values["agent_eligible"], CLASS_CODES[values["failure_class"]],
                 -1 if stage is None else STAGE_CODES[stage], len(values["evidence"]),
                 values["cost"] is not None, values["cost_source"] is not None)


@dataclass(frozen=True)
class Rule:
    """An invariant of a record: ``broken(facts)`` is true where it does not hold.

    ``message`` is a ``str.format`` template over the record's field values.
    """

    id: str
    broken: Callable[[Facts], Any]
    message: str
    description: str


#: Record invariants, in the order they are checked (spec section 3, then section 8).
INVARIANTS = (
    Rule("success-implies-eligible", lambda f: f.success & (f.eligible ^ True),
         "success is true but agent_eligible is false", "success: true implies agent_eligible: true"),
    Rule("success-implies-no-class", lambda f: f.success & (f.class_code != 0),
         'success is true but failure_class is {failure_class!r}, not ""',
         'success: true implies failure_class ""'),
    Rule("failure-needs-class", lambda f: (f.success ^ True) & (f.class_code == 0),
         'success is false but failure_class is ""', 'success: false implies a failure_class other than ""'),
    Rule("class-implies-ineligible", lambda f: INELIGIBLE_CODES[f.class_code] & f.eligible,
         "failure_class {failure_class!r} requires agent_eligible false",
         "failure_class environment, evaluation or skipped implies agent_eligible: false"),
    Rule("agent-implies-eligible", lambda f: (f.class_code == AGENT_CODE) & (f.eligible ^ True),
         "failure_class 'agent' requires agent_eligible true", "failure_class agent implies agent_eligible: true"),
    Rule("stage-needs-evidence", lambda f: (f.stage_code >= 0) & (f.n_evidence == 0),
         "failure_stage {failure_stage!r} is set without any evidence reference",
         "failure_stage non-null implies at least one evidence reference"),
    Rule("cost-needs-source", lambda f: f.has_cost & (f.has_cost_source ^ True),
         "cost is set but cost_source is null; cost needs a versioned price source",
         "cost non-null implies cost_source non-null"),
)


@dataclass(frozen=True)
class ObjectRule(Rule):
    """A rule across the values of one object of a file: ``broken(obj)`` is true where it does not hold.

    ``at`` is the object's ``FILE#POINTER`` (``*``: every item of an array) and ``key`` the key the
    error points at (none: the object itself); ``message`` is a ``str.format`` template over
    ``where`` (the object's pointer) and ``values(obj)`` (when given).  A rule of an object is
    checked after the object's own fields (rows of the file's table); a rule of an array (its
    length) before its items.
    """

    at: str = ""
    key: str = ""
    values: Callable[[Any], dict] | None = None


#: Rules across the values of an artifact object, beyond the rows of :data:`~capbench_nb.format.ARTIFACT`.
ARTIFACT_RULES = (
    ObjectRule("artifact-type",
               lambda e: e.get("type") == "device_action" and e.get("start_ms") is not None
               and e.get("end_ms") is not None and e["end_ms"] < e["start_ms"],
               "{where} ends before it starts", "a device_action event does not end before it starts",
               at=f"{EPISODE}#/events/*", key="end_ms"),
)


def _smallest_repeats(plan: dict) -> int:
    override = plan.get("repeats_override")
    return override if override is not None else min(t["repeats"] for t in plan["tasks"])


#: Rules across the values of the manifest (``records.manifest``), beyond the rows of its tables.
#: ``plan-too-large`` is checked before the per-task checks: their cost grows with the plan.
MANIFEST_RULES = (
    ObjectRule("plan-empty", lambda tasks: not tasks, "the plan has no tasks", "the plan has a task",
               at=f"{MANIFEST}#/plan/tasks"),
    ObjectRule("plan-too-large", lambda tasks: len(tasks) > limits.MAX_PLAN_TASKS,
               "the plan has {count:,} tasks, above {limit:,} (MAX_PLAN_TASKS), the most this toolkit accepts",
               "the plan has at most MAX_PLAN_TASKS tasks", at=f"{MANIFEST}#/plan/tasks",
               values=lambda tasks: {"count": len(tasks), "limit": limits.MAX_PLAN_TASKS}),
    ObjectRule("plan-k", lambda plan: plan.get("k") is not None and plan["k"] != _smallest_repeats(plan),
               "plan.k is {k} but the smallest planned repeats is {smallest}; k must equal it",
               "plan.k is null or the smallest planned repeats", at=f"{MANIFEST}#/plan", key="k",
               values=lambda plan: {"k": plan["k"], "smallest": _smallest_repeats(plan)}),
)


@dataclass(frozen=True)
class Check:
    """A rule id outside :data:`INVARIANTS`: the file it concerns, and what it refuses."""

    id: str
    file: str
    description: str


def _c(file: str, *pairs: tuple[str, str]) -> tuple[Check, ...]:
    return tuple(Check(rule, file, text) for rule, text in pairs)


#: Every other rule id, by the file it concerns.
CHECKS = (
    *_c("run directory", ("run-dir", "the run directory exists and is a directory")),
    *_c("any JSON file",
        ("json", "valid JSON (results.jsonl and manifest.json)"),
        ("json-nan", "no NaN or Infinity token"),
        ("number-too-large", "numbers at most 2**53-1; integer literals Python can read"),
        ("utf-8", "valid UTF-8"),
        ("bom", "no byte-order mark"),
        ("invalid-unicode", "no string holding a lone UTF-16 surrogate")),
    *_c("manifest.json",
        ("manifest-missing", "manifest.json exists"),
        ("manifest-unreadable", "manifest.json is a readable file"),
        ("manifest-too-large", "manifest.json at most MAX_MANIFEST_BYTES"),
        ("manifest-type", "the manifest is an object"),
        ("schema-version", "schema_version is capbench.run/1"),
        ("run-id", "run_id is a non-empty string"),
        ("status", "status is a run status"),
        ("suite", "suite is an object of strings"),
        ("created-at", "created_at is a string or null"),
        ("runner", "runner is an object or null"),
        ("config", "config is an object or null"),
        ("plan", "plan is an object"),
        ("repeats-override", "repeats_override is null or an integer >= 1"),
        ("repeats-too-large", "planned repeats at most MAX_REPEATS"),
        ("plan-tasks", "plan.tasks is a list"),
        ("plan-empty", "the plan has a task"),
        ("plan-too-large", "the plan has at most MAX_PLAN_TASKS tasks"),
        ("task-type", "a plan task is an object"),
        ("task-id", "a plan task's task_id is a non-empty string"),
        ("task-id-duplicate", "task_ids are unique in the plan"),
        ("repeats", "a task's repeats is an integer >= 1"),
        ("plan-k", "plan.k is null or the smallest planned repeats")),
    *_c("results.jsonl",
        ("results-missing", "results.jsonl exists"),
        ("results-unreadable", "results.jsonl is a readable file"),
        ("line-too-long", "a line at most MAX_LINE_BYTES"),
        ("truncated-line", "the last line is not cut off"),
        ("record-type", "a record is an object"),
        ("missing-field", "the required fields are present"),
        ("type", "each field has its JSON type"),
        ("attempt", "attempt is an integer >= 1"),
        ("negative", "numbers are not negative"),
        ("quality-score", "quality_score is in [0, 1]"),
        ("failure-class", "failure_class is in its vocabulary"),
        ("failure-stage", "failure_stage is null or in its vocabulary"),
        ("artifact-dir", "artifact_dir is a relative path without '..'"),
        ("evidence", "every evidence reference resolves inside the attempt's artifact_dir"),
        ("duplicate-attempt", "(task_id, attempt) is unique in the file")),
    *_c("selection.jsonl",
        ("selection-unreadable", "selection.jsonl, when present, is a readable regular file"),
        ("selection-type", "a line is an object"),
        ("selection-candidates", "candidates is a list of distinct integers >= 1"),
        ("selection-selected", "selected is null or one of candidates"),
        ("selection-scores", "scores is null or one number per candidate, keyed by its decimal attempt number"),
        ("selection-selector", "selector is {name, version}, both strings, the same on every line"),
        ("selection-cost-needs-source", "selector_cost non-null implies selector_cost_source non-null"),
        ("selection-task-not-in-plan", "task_id is a task of the plan"),
        ("selection-duplicate-task", "task_id is unique in the file"),
        ("selection-candidate-missing", "every candidate has a record in results.jsonl")),
    *_c("attempt artifacts",
        ("artifact-missing", "attempt.json exists"),
        ("artifact-outside", "an artifact file resolves inside its attempt directory"),
        ("artifact-unreadable", "an artifact file is a readable regular file"),
        ("artifact-json", "an artifact file is valid UTF-8 JSON"),
        ("artifact-type", "each checked artifact value has its JSON type, range and vocabulary")),
    *_c("suite.lock.json", *LOCK_CHECKS),
)

RULE_IDS = tuple(r.id for r in INVARIANTS) + tuple(dict.fromkeys(c.id for c in CHECKS))
