"""The metric registry: every metric of a run by name, with the properties it is known to have.

Each entry is a :class:`Metric`: a function of ``(prepared, k)`` (a
:class:`~capbench_nb.metrics.prepare.Prepared`, so that a caller computing many
metrics prepares once; calling the entry with ``(attempts, plan, k)`` prepares
for it) that returns a :class:`~capbench_nb.metrics.rates.Rate`, a
:class:`~capbench_nb.metrics.rates.ScoreMean`, a
:class:`~capbench_nb.metrics.health.TaskMean`, or a list of them (one per j of
a curve), and a set of property tags from :data:`TAGS`.  The tags are claims
that ``tests/metrics/test_common.py`` checks on every metric that makes them
(in the manner of scikit-learn's ``sklearn/metrics/tests/test_common.py``); a
metric registered without tags is refused.

Each entry also carries what a display needs to show it, as data: its ``label``
(a template with ``{k}``), a one-line ``description``, its format ``kind`` (one
of :data:`KINDS`; the outputs stage maps a kind to its formatter in one place,
``capbench_nb.outputs.html.formatting.FORMATTERS``) and its ``path`` in the
metrics.json document.  So a new metric is one :func:`register` call, and every
display that loops over the registry shows it.

:data:`METRICS` is the headline part (the ``metrics`` object of metrics.json,
in document order); :data:`HEADLINE` the same entries as :class:`Metric` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from capbench_nb.metrics.curves import prefix_rates_of, unbiased_curve_of
from capbench_nb.metrics.health import (
    TaskMean, all_attempts_pass_rate_of, inconsistent_share_of, mean_quality_score_of,
)
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.metrics.rates import Rate, ScoreMean, oracle_best_score_of, pass_rate_of

__all__ = ["TAGS", "KINDS", "TaskOutcome", "Metric", "REGISTRY", "METRICS", "HEADLINE", "register", "metrics_with",
           "headline_rates", "paired_rates", "task_outcome"]

#: Property tags a metric can claim, with what each one means.
TAGS = {
    "order_invariant": "the order of the attempt rows does not change the result",
    "counted_only": "rows of tasks outside the plan and attempts above a task's planned repeats do not change it",
    "ineligible_is_missing": "an ineligible attempt changes the result exactly as a missing one would",
    "ordered_family": "over the same tasks (the k-eligible ones), pass^k <= pass@1 <= pass@k: "
                      "the metric's successes are ordered by its family rank",
    "null_on_empty": "an empty denominator gives null values (and null intervals), never 0 or an error",
    "interval_holds_value": "every non-null value lies in its Wilson interval, inside [0, 1]",
}

#: Format kinds a metric's value can have, with what each one is.
KINDS = {
    "rate": "a proportion in [0, 1], shown as a percentage",
    "score": "a mean quality score, shown with three decimals",
    "count": "a whole number, shown with thousands separators",
    "ms": "a duration in milliseconds",
    "cost": "a provider cost in USD",
}

Result = Rate | ScoreMean | TaskMean | list


@dataclass(frozen=True)
class TaskOutcome:
    """A rate's outcome per task, a yes or no: whether ``any`` or ``all`` of the task's first ``1`` or ``k``
    attempts succeeded (the task in the denominator when those attempts are all present and eligible).

    Comparison, board, gate and power planning pair or model runs task by task through it: a rate
    registered with one takes part in all of them.
    """

    first: str  #: ``"1"`` or ``"k"``: how many leading attempts decide
    rule: str  #: ``"any"`` or ``"all"`` of them succeeded

    def __post_init__(self) -> None:
        if self.first not in ("1", "k") or self.rule not in ("any", "all"):
            raise ValueError(f"a task outcome is over the first '1' or 'k' attempts, 'any' or 'all': got {self!r}")

    def attempts(self, k: int) -> int:
        """How many leading attempts decide at the run's k."""
        return 1 if self.first == "1" else int(k)


@dataclass(frozen=True)
class Metric:
    """One registered metric.

    Attributes
    ----------
    name : str
        Its name (``pass@1``, ``pass^j``, ...).
    function : callable
        ``function(prepared, k)`` returns a Rate, a ScoreMean, a TaskMean or a list of them.
    tags : frozenset of str
        Properties from :data:`TAGS`.
    headline : bool
        Part of the ``metrics`` object of metrics.json.
    rank : int or None
        Position in the ordered family (``ordered_family``): smaller ranks never succeed more.
    label : str
        Its display label, a template with ``{k}`` (``"pass@k (k = {k})"``): :meth:`display`.
    description : str
        What it measures, in one line.
    kind : str
        Its format kind, one of :data:`KINDS`.
    path : tuple of str
        Where its value sits in metrics.json (``("metrics", "pass@1")``); a list there for a curve.
    task_outcome : TaskOutcome or None
        For a rate of yes-or-no task outcomes: which (the paired metrics of compare, board and gate).
    """

    name: str
    function: Callable[[Prepared, int], Result]
    tags: frozenset = field(default_factory=frozenset)
    headline: bool = False
    rank: int | None = None
    label: str = ""
    description: str = ""
    kind: str = "rate"
    path: tuple = ()
    task_outcome: TaskOutcome | None = None

    def __call__(self, attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> Result:
        """The metric of (attempts, plan) at k, prepared here."""
        return self.function(prepare(attempts, plan), k)

    def of(self, prepared: Prepared, k: int) -> Result:
        """The metric of an already prepared run (one preparation shared by every metric)."""
        return self.function(prepared, k)

    def display(self, k: int | None) -> str:
        """The label with the run's k written in: ``pass@k (k = 3)``."""
        return self.label.format(k=k)

    def value_in(self, doc: dict):
        """The metric's entry in a metrics.json document (``path`` followed), None where it is absent."""
        node = doc
        for key in self.path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node


#: Every registered metric by name, in registration order.
REGISTRY: dict[str, Metric] = {}


def register(name: str, function: Callable, *, tags, path, description: str, kind: str = "rate",
             label: str | None = None, headline: bool = False, rank: int | None = None,
             task_outcome: TaskOutcome | None = None) -> Metric:
    """Register ``function(prepared, k)`` under ``name`` with its property ``tags`` (at least one, from :data:`TAGS`),
    its document ``path``, ``description``, format ``kind`` (from :data:`KINDS`) and display ``label``
    (default: the name).

    Raises
    ------
    ValueError
        No tags, an unknown tag, ``ordered_family`` without a ``rank``, an unknown kind or an empty path.
    """
    tags = frozenset(tags)
    if not tags:
        raise ValueError(f"metric {name!r} is registered without property tags")
    unknown = sorted(tags - set(TAGS))
    if unknown:
        raise ValueError(f"metric {name!r} has unknown tags {unknown}; known: {sorted(TAGS)}")
    if ("ordered_family" in tags) != (rank is not None):
        raise ValueError(f"metric {name!r}: a rank goes with the ordered_family tag, and only with it")
    if kind not in KINDS:
        raise ValueError(f"metric {name!r} has unknown kind {kind!r}; known: {sorted(KINDS)}")
    path = tuple(path)
    if not path or not all(isinstance(key, str) for key in path):
        raise ValueError(f"metric {name!r}: path must be a non-empty tuple of metrics.json keys, got {path!r}")
    metric = Metric(name=name, function=function, tags=tags, headline=headline, rank=rank,
                    label=name if label is None else label, description=description, kind=kind, path=path,
                    task_outcome=task_outcome)
    REGISTRY[name] = metric
    return metric


def metrics_with(tag: str) -> list[Metric]:
    """The registered metrics that claim ``tag``."""
    if tag not in TAGS:
        raise KeyError(f"unknown tag {tag!r}")
    return [m for m in REGISTRY.values() if tag in m.tags]


def _unbiased(column: str) -> Callable[[Prepared, int], list]:
    def points(p: Prepared, k: int) -> list:
        curve = unbiased_curve_of(p)
        return [ScoreMean(value=float(v), n=int(n)) for v, n in zip(curve[column], curve["tasks"])]

    points.__doc__ = f"The unbiased {column} curve as one ScoreMean per j."
    return points


_RATE = ("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty", "interval_holds_value")

_SCORE = ("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty")

register("pass@1", lambda p, k: pass_rate_of(p, 1, every=False),
         tags=_RATE + ("ordered_family",), headline=True, rank=1, path=("metrics", "pass@1"),
         task_outcome=TaskOutcome("1", "any"), description="share of tasks whose first attempt succeeded")
register("pass@k", lambda p, k: pass_rate_of(p, k, every=False),
         tags=_RATE + ("ordered_family",), headline=True, rank=2, path=("metrics", "pass@k"),
         task_outcome=TaskOutcome("k", "any"), label="pass@k (k = {k})",
         description="share of k-eligible tasks with a success among attempts 1..k")
register("pass^k", lambda p, k: pass_rate_of(p, k, every=True),
         tags=_RATE + ("ordered_family",), headline=True, rank=0, path=("metrics", "pass^k"),
         task_outcome=TaskOutcome("k", "all"), label="pass^k (k = {k})",
         description="share of k-eligible tasks whose attempts 1..k all succeeded")
register("oracle_best_score@k", lambda p, k: oracle_best_score_of(p, k),
         tags=_SCORE, headline=True, kind="score", path=("metrics", "oracle_best_score@k"),
         label="oracle_best_score@k (diagnostic)",
         description="mean best quality score among attempts 1..k of the k-eligible tasks; an upper bound, "
                     "not a best-of-k system")
register("pass@j", lambda p, k: [at for _, at, _ in prefix_rates_of(p, k)], tags=_RATE,
         path=("curves", "planned_prefix"), label="pass@j (planned prefix)",
         description="pass@j for j = 1..k over the tasks whose attempts 1..j are all present and eligible")
register("pass^j", lambda p, k: [hat for _, _, hat in prefix_rates_of(p, k)], tags=_RATE,
         path=("curves", "planned_prefix"), label="pass^j (planned prefix)",
         description="pass^j for j = 1..k over the tasks whose attempts 1..j are all present and eligible")
register("unbiased pass@j", _unbiased("pass@j"), tags=_SCORE, path=("curves", "unbiased", "points"),
         label="pass@j (unbiased)", description="unbiased pass@j over all eligible attempts (Chen et al. 2021)")
register("unbiased pass^j", _unbiased("pass^j"), tags=_SCORE, path=("curves", "unbiased", "points"),
         label="pass^j (unbiased)", description="unbiased pass^j over all eligible attempts (Yao et al. 2024)")
# Task health (spec section 11): metrics.json's ``health`` block.
register("inconsistent_share", lambda p, k: inconsistent_share_of(p, k), tags=_RATE,
         path=("health", "consistency", "inconsistent_share"), label="inconsistent share",
         description="share of k-eligible tasks with both a success and a failure among attempts 1..k")
register("mean_quality_score", lambda p, k: mean_quality_score_of(p), tags=_SCORE,
         kind="score", path=("health", "mean_quality_score"), label="mean quality score",
         description="mean over tasks of the task's mean quality score over its eligible attempts")
register("all_attempts_pass_rate", lambda p, k: all_attempts_pass_rate_of(p),
         tags=_SCORE, path=("health", "all_attempts_pass_rate"), label="all-attempts pass rate",
         description="mean over tasks of the task's share of successful eligible attempts")

#: The headline metrics (the ``metrics`` object of metrics.json, in this order): name to the entry,
#: callable with (attempts, plan, k).
METRICS = {m.name: m for m in REGISTRY.values() if m.headline}

#: The headline metrics as registry entries, in document order.
HEADLINE: tuple[Metric, ...] = tuple(m for m in REGISTRY.values() if m.headline)


def headline_rates() -> tuple[Metric, ...]:
    """The headline metrics of kind ``rate`` (pass@1, pass@k, pass^k), in document order."""
    return tuple(m for m in HEADLINE if m.kind == "rate")


def paired_rates() -> tuple[Metric, ...]:
    """The headline rates of yes-or-no task outcomes (pass@1, pass@k, pass^k), in document order: the
    metrics that compare, board and gate pair task by task."""
    return tuple(m for m in HEADLINE if m.task_outcome is not None)


def task_outcome(name: str) -> TaskOutcome:
    """The task outcome of the paired rate ``name``; ValueError for any other name."""
    paired = {m.name: m.task_outcome for m in paired_rates()}
    if name not in paired:
        raise ValueError(f"metric must be one of {', '.join(paired)}, got {name!r}")
    return paired[name]
