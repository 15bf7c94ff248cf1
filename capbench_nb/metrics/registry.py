"""The metric registry: every metric of a run by name, with the properties it is known to have.

Each entry is a :class:`Metric`: a function of ``(attempts, plan, k)`` that
returns a :class:`~capbench_nb.metrics.rates.Rate`, a
:class:`~capbench_nb.metrics.rates.ScoreMean`, a
:class:`~capbench_nb.metrics.health.TaskMean`, or a list of them (one per j of
a curve), and a set of property tags from :data:`TAGS`.  The tags are claims
that ``tests/metrics/test_common.py`` checks on every metric that makes them
(in the manner of scikit-learn's ``sklearn/metrics/tests/test_common.py``); a
metric registered without tags is refused.

:data:`METRICS` is the headline part (the ``metrics`` object of metrics.json,
in document order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from capbench_nb.metrics.curves import prefix_rates, unbiased_curve
from capbench_nb.metrics.health import TaskMean, all_attempts_pass_rate, inconsistent_share, mean_quality_score
from capbench_nb.metrics.rates import Rate, ScoreMean, oracle_best_score_at_k, pass_at_1, pass_at_k, pass_hat_k

__all__ = ["TAGS", "Metric", "REGISTRY", "METRICS", "register", "metrics_with"]

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

Result = Rate | ScoreMean | TaskMean | list


@dataclass(frozen=True)
class Metric:
    """One registered metric.

    Attributes
    ----------
    name : str
        Its name (``pass@1``, ``pass^j``, ...).
    function : callable
        ``function(attempts, plan, k)`` returns a Rate, a ScoreMean, a TaskMean or a list of them.
    tags : frozenset of str
        Properties from :data:`TAGS`.
    headline : bool
        Part of the ``metrics`` object of metrics.json.
    rank : int or None
        Position in the ordered family (``ordered_family``): smaller ranks never succeed more.
    """

    name: str
    function: Callable[[pd.DataFrame, pd.DataFrame, int], Result]
    tags: frozenset = field(default_factory=frozenset)
    headline: bool = False
    rank: int | None = None

    def __call__(self, attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> Result:
        return self.function(attempts, plan, k)


#: Every registered metric by name, in registration order.
REGISTRY: dict[str, Metric] = {}


def register(name: str, function: Callable, *, tags, headline: bool = False, rank: int | None = None) -> Metric:
    """Register a metric under ``name`` with its property ``tags`` (at least one, each from :data:`TAGS`).

    Raises
    ------
    ValueError
        No tags, an unknown tag, or ``ordered_family`` without a ``rank``.
    """
    tags = frozenset(tags)
    if not tags:
        raise ValueError(f"metric {name!r} is registered without property tags")
    unknown = sorted(tags - set(TAGS))
    if unknown:
        raise ValueError(f"metric {name!r} has unknown tags {unknown}; known: {sorted(TAGS)}")
    if ("ordered_family" in tags) != (rank is not None):
        raise ValueError(f"metric {name!r}: a rank goes with the ordered_family tag, and only with it")
    metric = Metric(name=name, function=function, tags=tags, headline=headline, rank=rank)
    REGISTRY[name] = metric
    return metric


def metrics_with(tag: str) -> list[Metric]:
    """The registered metrics that claim ``tag``."""
    if tag not in TAGS:
        raise KeyError(f"unknown tag {tag!r}")
    return [m for m in REGISTRY.values() if tag in m.tags]


def _unbiased(column: str) -> Callable[[pd.DataFrame, pd.DataFrame, int], list]:
    def points(attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> list:
        curve = unbiased_curve(attempts, plan=plan)
        return [ScoreMean(value=float(v), n=int(n)) for v, n in zip(curve[column], curve["tasks"])]

    points.__doc__ = f"The unbiased {column} curve as one ScoreMean per j."
    return points


_RATE = ("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty", "interval_holds_value")

register("pass@1", lambda attempts, plan, k: pass_at_1(attempts, plan=plan),
         tags=_RATE + ("ordered_family",), headline=True, rank=1)
register("pass@k", lambda attempts, plan, k: pass_at_k(attempts, plan=plan, k=k),
         tags=_RATE + ("ordered_family",), headline=True, rank=2)
register("pass^k", lambda attempts, plan, k: pass_hat_k(attempts, plan=plan, k=k),
         tags=_RATE + ("ordered_family",), headline=True, rank=0)
register("oracle_best_score@k", lambda attempts, plan, k: oracle_best_score_at_k(attempts, plan=plan, k=k),
         tags=("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty"), headline=True)
register("pass@j", lambda attempts, plan, k: [at for _, at, _ in prefix_rates(attempts, plan=plan, k=k)], tags=_RATE)
register("pass^j", lambda attempts, plan, k: [hat for _, _, hat in prefix_rates(attempts, plan=plan, k=k)], tags=_RATE)
register("unbiased pass@j", _unbiased("pass@j"),
         tags=("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty"))
register("unbiased pass^j", _unbiased("pass^j"),
         tags=("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty"))
# Task health (spec section 11): metrics.json's ``health`` block.
register("inconsistent_share", lambda attempts, plan, k: inconsistent_share(attempts, plan=plan, k=k), tags=_RATE)
register("mean_quality_score", lambda attempts, plan, k: mean_quality_score(attempts, plan=plan),
         tags=("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty"))
register("all_attempts_pass_rate", lambda attempts, plan, k: all_attempts_pass_rate(attempts, plan=plan),
         tags=("order_invariant", "counted_only", "ineligible_is_missing", "null_on_empty"))

#: The headline metrics (the ``metrics`` object of metrics.json, in this order): name to function of (attempts, plan, k).
METRICS = {m.name: m.function for m in REGISTRY.values() if m.headline}
