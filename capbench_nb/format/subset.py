"""subset.json as ``suite estimate`` reads it (spec section 13), as data.

:data:`SUBSET_FIELDS` is the table of every value of a subset document that ``suite estimate`` uses,
by JSON pointer (``*``: every item of a list); :mod:`capbench_nb.records.subset` checks a document by
walking it, and docs/format-notes.md states the rules.  :data:`SUBSET_RULES` are the rules that relate
two values (a task list that matches the size, tasks the full suite has).  Every problem is rule
``subset``; the message says which value and why.
"""

from __future__ import annotations

from capbench_nb.format.fields import Field
from capbench_nb.format.limits import MAX_SAFE_NUMBER

__all__ = ["SUBSET_FILE", "SUBSET_SCHEMA", "ESTIMATE_SCHEMA", "SUBSET_RULE", "MAX_DRAWS", "MAX_LOGIT", "SUBSET_FIELDS", "SUBSET_RULES"]

#: The subset document's file name in the output directory of ``suite select``.
SUBSET_FILE = "subset.json"
SUBSET_SCHEMA = "capbench.subset/1"
ESTIMATE_SCHEMA = "capbench.estimate/1"
#: The rule id of every problem of a subset document or of a selection's inputs.
SUBSET_RULE = "subset"
#: The most Monte Carlo draws an estimate makes: it holds draws x full-suite tasks numbers (100,000 draws of a
#: 116-task suite: 93 MB); ``suite select`` writes 4,000.
MAX_DRAWS = 100_000
#: The largest magnitude of a logit-scale value (an ability, a difficulty, a spread).  The logistic is 1 to
#: within 1e-16 at 37; a value beyond 100 is no fitted Rasch parameter but an edit.
MAX_LOGIT = 100.0


def _f(pointer: str, json_type: str, description: str, **kw) -> Field:
    return Field(pointer, json_type, required=True, type_rule=SUBSET_RULE, description=description, **kw)


#: The values ``suite estimate`` reads, parents before children.  Other keys (``method``, ``validation``,
#: ``chosen``, ...) are what ``suite select`` reports; the estimate does not read them.
SUBSET_FIELDS = (
    _f("", "object", "the document"),
    _f("/schema_version", "string", "the subset format version", vocabulary=(SUBSET_SCHEMA,)),
    _f("/size", "integer", "N, the number of chosen tasks", minimum=1, maximum=MAX_SAFE_NUMBER),
    _f("/tasks", "array", "the chosen task_ids: N of them, each once, each a task of the full suite",
       items="string", unique_rule=SUBSET_RULE),
    _f("/full_tasks", "integer", "the number of common tasks: the full suite's", minimum=2, maximum=MAX_SAFE_NUMBER),
    _f("/estimator", "object", "what suite estimate needs"),
    _f("/estimator/name", "string", "the method's name, copied to estimate.json", non_empty=True),
    _f("/estimator/tau", "number", "the per-stratum deviation's prior sd (0: one ability)", minimum=0,
       maximum=MAX_LOGIT),
    _f("/estimator/draws", "integer", "Monte Carlo draws of the interval", minimum=1, maximum=MAX_DRAWS),
    _f("/estimator/seed", "integer", "seed of the draws", minimum=0, maximum=MAX_SAFE_NUMBER),
    _f("/estimator/theta_mean", "number", "the input runs' mean ability", minimum=-MAX_LOGIT, maximum=MAX_LOGIT),
    _f("/estimator/theta_sd", "number", "the input runs' ability sd", minimum=0, maximum=MAX_LOGIT),
    _f("/estimator/sigma_e", "number", "the task-level residual sd", minimum=0, maximum=MAX_LOGIT),
    _f("/estimator/full_suite", "array", "every common task, once", items="object"),
    _f("/estimator/full_suite/*/task_id", "string", "the task", unique_rule=SUBSET_RULE),
    _f("/estimator/full_suite/*/stratum", "string", "its stratum value"),
    _f("/estimator/full_suite/*/difficulty", "number", "its fitted difficulty", minimum=-MAX_LOGIT, maximum=MAX_LOGIT),
)

#: The rules between values, in the order they are checked: (name, what the document must satisfy).
SUBSET_RULES = (
    ("size", "/tasks has /size task_ids"),
    ("full-suite", "/estimator/full_suite has /full_tasks tasks, more than /size"),
    ("known-tasks", "every task of /tasks is a task of /estimator/full_suite"),
)
