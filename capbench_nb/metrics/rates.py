"""Capability metrics of a run (spec section 6): pass@1, pass@k, pass^k, oracle_best_score@k, per task.

Every function takes either a loaded run (``pass_at_k(run)``: its attempts, its plan and,
unless given, its fixed k) or the tidy attempts DataFrame (one row per attempt, columns as in
:attr:`capbench_nb.records.run.Run.records`) with the plan (and k) as keyword-only arguments;
the run form unpacks to the table form (:func:`~capbench_nb.metrics.inputs.metric_inputs`).
Records of tasks outside the plan and attempts above a task's planned repeats are ignored
here whatever the caller passes: they enter no metric (spec section 6;
:mod:`capbench_nb.metrics.prepare`).  Empty denominators give ``None``, never 0 and never an
error.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from capbench_nb.format import CLASS_KEYS
from capbench_nb.metrics.inputs import metric_inputs
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.metrics.stats import wilson_interval, wilson_interval_array
from capbench_nb.records.run import Run
from capbench_nb.records.views import escape_text

__all__ = [
    "Rate",
    "ScoreMean",
    "pass_at_1",
    "pass_at_k",
    "pass_hat_k",
    "oracle_best_score_at_k",
    "per_task",
    "attempt_counts",
    "pass_rate_of",
    "oracle_best_score_of",
    "per_task_of",
    "attempt_counts_of",
]


def _fraction(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _percent(x: float | None) -> str:
    """A share as a percentage: whole when it is whole, else one decimal (never 100% unless all)."""
    if x is None:
        return "n/a"
    p = x * 100
    if abs(p - round(p)) < 1e-9:
        return f"{round(p)}%"
    return "99.9%" if f"{p:.1f}" == "100.0" else f"{p:.1f}%"


def _label(obj) -> str | None:
    return obj.__dict__.get("_metric")


def _with_label(obj, metric: str | None, confidence: float | None = None):
    """``obj`` with a display name (and interval level): not a field, so equality and ``to_dict`` ignore it."""
    if metric is not None:
        object.__setattr__(obj, "_metric", metric)  # frozen dataclass: set once, at construction
    if confidence is not None:
        object.__setattr__(obj, "_confidence", confidence)
    return obj


@dataclass(frozen=True)
class Rate:
    """A success rate over tasks with its Wilson interval and coverage.

    Attributes
    ----------
    value : float or None
        ``successes / n``; None when ``n == 0``.
    successes, n : int
        Numerator and denominator (tasks).
    ci_low, ci_high : float or None
        Wilson score interval (None when ``n == 0``).
    coverage : float or None
        ``n`` over the number of planned tasks (None for an empty plan).

    Notes
    -----
    ``float(rate)`` is the value (NaN when undefined) and ``rate.ci`` the interval as a tuple.
    A rate returned by a metric function knows its name (:attr:`metric`, e.g. ``"pass@3"``) for
    display only: ``repr`` gives ``Rate(pass@1 = 0.615 [0.355, 0.823], 8/13 tasks, coverage
    100%)`` and Jupyter an HTML line.  The name is not a field: equality, hashing and
    :meth:`to_dict` see the six fields alone.
    """

    value: float | None
    successes: int
    n: int
    ci_low: float | None
    ci_high: float | None
    coverage: float | None

    def to_dict(self) -> dict:
        return asdict(self)

    def __float__(self) -> float:
        """``float(rate)``: the value, NaN when the rate is undefined (``n == 0``)."""
        return math.nan if self.value is None else float(self.value)

    @property
    def ci(self) -> tuple[float | None, float | None]:
        """The Wilson interval as ``(ci_low, ci_high)`` (both None when ``n == 0``)."""
        return self.ci_low, self.ci_high

    @classmethod
    def of(cls, successes: int, n: int, planned: int, confidence: float = 0.95, *, metric: str | None = None) -> "Rate":
        """The rate ``successes / n`` over ``n`` tasks of ``planned``, with its Wilson interval.

        ``metric`` names it in its ``repr`` and HTML view (``"pass@1"``).
        """
        low, high = wilson_interval(successes, n, confidence=confidence)
        rate = cls(
            value=successes / n if n else None,
            successes=int(successes),
            n=int(n),
            ci_low=low,
            ci_high=high,
            coverage=n / planned if planned else None,
        )
        return _with_label(rate, metric, confidence)

    @property
    def metric(self) -> str | None:
        """The metric's display name (``"pass@1"``, ``"pass^3"``), or None for a rate built by hand."""
        return _label(self)

    def labelled(self, metric: str) -> "Rate":
        """The same rate shown as ``metric`` (equal to this one: the name is not a field)."""
        return _with_label(replace(self), metric, self.__dict__.get("_confidence"))

    def _interval(self) -> str:
        return "" if self.ci_low is None else f" [{_fraction(self.ci_low)}, {_fraction(self.ci_high)}]"

    def __repr__(self) -> str:
        head = f"{self.metric} = " if self.metric else ""
        return (f"Rate({head}{_fraction(self.value)}{self._interval()}, {self.successes}/{self.n} tasks, "
                f"coverage {_percent(self.coverage)})")

    def _repr_html_(self) -> str:
        level = self.__dict__.get("_confidence", 0.95)
        name = f"<b>{escape_text(self.metric)}</b> = " if self.metric else ""
        interval = (f" <span title=\"{_percent(level)} Wilson interval\">{_percent(level)} CI"
                    f"{escape_text(self._interval())}</span>") if self.ci_low is not None else ""
        return (f"<span class=\"capbench-rate\">{name}{_fraction(self.value)}{interval} &middot; "
                f"{self.successes}/{self.n} tasks &middot; coverage {_percent(self.coverage)}</span>")


@dataclass(frozen=True)
class ScoreMean:
    """A mean over tasks without an interval (diagnostics such as oracle_best_score@k).

    Shown as ``ScoreMean(oracle_best_score@3 = 0.712, 10 tasks)``; the name is not a field.
    """

    value: float | None
    n: int

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def metric(self) -> str | None:
        """The metric's display name, or None for a mean built by hand."""
        return _label(self)

    def __repr__(self) -> str:
        head = f"{self.metric} = " if self.metric else ""
        return f"ScoreMean({head}{_fraction(self.value)}, {self.n} tasks)"

    def _repr_html_(self) -> str:
        name = f"<b>{escape_text(self.metric)}</b> = " if self.metric else ""
        return f"<span class=\"capbench-score\">{name}{_fraction(self.value)} &middot; mean over {self.n} tasks</span>"


def pass_rate_of(p: Prepared, k: int, *, every: bool, confidence: float = 0.95) -> Rate:
    """pass@k (``every`` False) or pass^k (``every`` True) of an already prepared run: the kernel of
    :func:`pass_at_k` and :func:`pass_hat_k`, for a caller that prepared once (``compute_metrics``)."""
    n, at, hat = p.pass_counts(k)
    return Rate.of(hat if every else at, n, p.n_tasks, confidence, metric=f"pass^{k}" if every else f"pass@{k}")


def pass_at_1(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, confidence: float = 0.95) -> Rate:
    r"""pass@1: the share of tasks whose first attempt succeeded.

    .. math:: \text{pass@1} = \frac{|\{t : a_{t,1} \text{ present, eligible, succeeded}\}|}
                                   {|\{t : a_{t,1} \text{ present and eligible}\}|}

    Ineligible first attempts (environment, evaluation, skipped, ineligible
    unknown) leave the task out of the denominator, exactly as a missing one.

    Parameters
    ----------
    attempts : Run or DataFrame
        A loaded run, or attempt records (``task_id``, ``attempt``, ``success``, ``agent_eligible``).
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task; with an attempts table only.
    confidence : float, default 0.95
        Level of the Wilson interval (Wilson 1927).

    Returns
    -------
    Rate

    Raises
    ------
    TypeError
        A run together with ``plan=``, or an attempts table without it.

    Examples
    --------
    >>> cb.pass_at_1(run)                                # doctest: +SKIP
    Rate(pass@1 = 0.615 [0.355, 0.823], 8/13 tasks, coverage 100%)
    """
    attempts, plan, _ = metric_inputs(attempts, plan, function="pass_at_1")
    return pass_at_k(attempts, plan=plan, k=1, confidence=confidence)


def pass_at_k(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
              confidence: float = 0.95) -> Rate:
    r"""pass@k over k-eligible tasks: at least one success among attempts 1..k.

    A task is *k-eligible* when its attempts 1..k are all present and eligible.

    .. math:: \text{pass@}k = \frac{|\{t \text{ k-eligible} : \exists j \le k,\ a_{t,j} \text{ succeeded}\}|}
                                   {|\{t \text{ k-eligible}\}|}

    This is the planned-prefix form with a fixed k from the plan, not the
    unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models
    Trained on Code", arXiv:2107.03374, which it equals when every task has
    exactly k eligible attempts.

    Parameters
    ----------
    attempts : Run or DataFrame
        A loaded run, or attempt records (``task_id``, ``attempt``, ``success``, ``agent_eligible``).
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task; with an attempts table only.
    k : int
        The run's fixed k (:func:`capbench_nb.records.manifest.fixed_k`), or any j <= k
        for a prefix curve; defaults to ``run.k`` with a run, required with a table.
    confidence : float, default 0.95
        Level of the Wilson interval.

    Returns
    -------
    Rate
    """
    attempts, plan, k = metric_inputs(attempts, plan, k, function="pass_at_k", needs_k=True)
    return pass_rate_of(prepare(attempts, plan), k, every=False, confidence=confidence)


def pass_hat_k(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
               confidence: float = 0.95) -> Rate:
    r"""pass^k over k-eligible tasks: attempts 1..k all succeeded.

    .. math:: \text{pass}^k = \frac{|\{t \text{ k-eligible} : \forall j \le k,\ a_{t,j} \text{ succeeded}\}|}
                                   {|\{t \text{ k-eligible}\}|}

    The planned-prefix form of the reliability metric of Yao et al. (2024),
    "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
    Domains", arXiv:2406.12045.  ``pass^k <= pass@k`` always.

    Parameters
    ----------
    attempts : Run or DataFrame
        A loaded run, or attempt records (``task_id``, ``attempt``, ``success``, ``agent_eligible``).
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task; with an attempts table only.
    k : int
        The run's fixed k, or any j <= k; defaults to ``run.k`` with a run.
    confidence : float, default 0.95
        Level of the Wilson interval.

    Returns
    -------
    Rate
    """
    attempts, plan, k = metric_inputs(attempts, plan, k, function="pass_hat_k", needs_k=True)
    return pass_rate_of(prepare(attempts, plan), k, every=True, confidence=confidence)


def oracle_best_score_at_k(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None,
                           k: int | None = None) -> ScoreMean:
    r"""oracle_best_score@k, a diagnostic: mean best quality score among attempts 1..k.

    Per k-eligible task :math:`t`, :math:`b_t = \max_{j \le k} q_{t,j}` over
    non-null quality scores (null if none); the run value is the mean of the
    non-null :math:`b_t`.  It is an oracle upper bound, not a best-of-k system:
    no verifier picks the candidate, and its latency and cost are not counted.
    Takes a run (k defaulting to ``run.k``) or an attempts table with ``plan=`` and ``k=``.

    Returns
    -------
    ScoreMean
        ``value`` None when no k-eligible task has a score.
    """
    attempts, plan, k = metric_inputs(attempts, plan, k, function="oracle_best_score_at_k", needs_k=True)
    return oracle_best_score_of(prepare(attempts, plan), k)


def oracle_best_score_of(p: Prepared, k: int) -> ScoreMean:
    """:func:`oracle_best_score_at_k` of an already prepared run."""
    best = p.oracle(k)[p.k_eligible(k)]
    best = best[~np.isnan(best)]
    n = len(best)
    return _with_label(ScoreMean(value=math.fsum(best) / n if n else None, n=n), f"oracle_best_score@{k}")


def per_task(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
             confidence: float = 0.95) -> pd.DataFrame:
    """Per-task statistics, one row per planned task in plan order.

    Takes a run (k defaulting to ``run.k``) or an attempts table with ``plan=`` and ``k=``.

    Columns
    -------
    task_id, planned_repeats
        From the plan.
    attempts, eligible, successes : int
        Over the task's attempts numbered up to its planned repeats.
    k_eligible : bool
        Attempts 1..k all present and eligible.
    success_rate, success_ci_low, success_ci_high : Float64
        ``successes / eligible`` with its Wilson interval; null without
        eligible attempts.
    first_success_attempt : Int64
        Smallest successful attempt number among the planned attempts.
    cost_to_first_success_task_wall_ms, ..._total_tokens, ..._cost : Float64/Int64
        Sums over eligible attempts numbered up to the first success; null
        when the task has no success or any addend is null.
    oracle_best_score : Float64
        Best non-null quality score among attempts 1..k of a k-eligible task.
    median_task_wall_ms, median_total_tokens : Float64
        Over the task's eligible attempts (non-null values).
    """
    attempts, plan, k = metric_inputs(attempts, plan, k, function="per_task", needs_k=True)
    return per_task_of(prepare(attempts, plan), k, confidence=confidence)


def _group_median(pos: np.ndarray, values: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """Per task 0..n-1, the median of ``values`` where ``mask`` and not NaN (NaN if none): the middle value,
    or the mean ``(a + b) / 2`` of the two middle ones, as pandas' grouped median computes it."""
    keep = mask & ~np.isnan(values)
    t, v = pos[keep], values[keep]
    order = np.lexsort((v, t))
    t, v = t[order], v[order]
    size = np.bincount(t, minlength=n)
    start = np.cumsum(size) - size
    has = size > 0
    low, high = (start + (size - 1) // 2)[has], (start + size // 2)[has]
    out = np.full(n, np.nan)
    out[has] = np.where(low == high, v[low], (v[low] + v[high]) / 2)
    return out


def per_task_of(p: Prepared, k: int, *, confidence: float = 0.95) -> pd.DataFrame:
    """:func:`per_task` of an already prepared run."""
    plan = p.plan
    a, pos, num, eligible, success = p.counted, p.pos, p.attempt, p.eligible, p.success
    never = np.iinfo("int64").max
    first = np.full(p.n_tasks, never, dtype="int64")
    np.minimum.at(first, pos[success], num[success])
    first = np.where(first < never, first.astype("float64"), np.nan)
    n_eligible, successes = p.count(eligible), p.count(success)
    k_eligible = p.k_eligible(k)
    low, high = wilson_interval_array(successes, n_eligible, confidence=confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = successes / n_eligible
    out = {
        "task_id": pd.array(plan["task_id"].to_numpy(), dtype="string"),
        "planned_repeats": plan["planned_repeats"].to_numpy(dtype="int64"),
        "attempts": p.count(),
        "eligible": n_eligible,
        "successes": successes,
        "k_eligible": k_eligible,
        "success_rate": pd.array(np.where(n_eligible > 0, rate, np.nan), dtype="Float64"),
        "success_ci_low": pd.array(low, dtype="Float64"),
        "success_ci_high": pd.array(high, dtype="Float64"),
        "first_success_attempt": pd.array(first, dtype="Int64"),
    }

    # Cost to first success: eligible attempts numbered up to the first success, summed in (task, attempt)
    # order (a fixed order keeps float sums reproducible), null when any addend is null.
    upto = np.flatnonzero(eligible & (num <= first[pos]))
    upto = upto[np.lexsort((num[upto], pos[upto]))]
    costs = (("task_wall_ms", "Float64"), ("total_tokens", "Int64"), ("cost", "Float64"))
    t = pos[upto]
    values, nulls = {}, {}
    for name, dtype in costs:
        column = a[name].iloc[upto]
        values[name] = column.to_numpy(dtype="float64" if dtype == "Float64" else "int64", na_value=0)
        nulls[name] = np.bincount(t[column.isna().to_numpy()], minlength=p.n_tasks) > 0
    sums = pd.DataFrame(values).groupby(t, sort=True).sum()  # pandas' compensated (Kahan) sum per task
    for name, dtype in costs:
        total = np.full(p.n_tasks, None, dtype="object")
        total[sums.index.to_numpy()] = sums[name].to_numpy(dtype="object")
        total[nulls[name]] = None
        out[f"cost_to_first_success_{name}"] = pd.array(total, dtype=dtype)

    out["oracle_best_score"] = pd.array(np.where(k_eligible, p.oracle(k), np.nan), dtype="Float64")
    for name in ("task_wall_ms", "total_tokens"):
        values = a[name].to_numpy(dtype="float64", na_value=np.nan)
        out[f"median_{name}"] = pd.array(_group_median(pos, values, eligible, p.n_tasks), dtype="Float64")
    return pd.DataFrame(out)


def attempt_counts(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None) -> dict:
    """Counts of counted attempts: total, eligible, and by failure class.

    Takes a run, or an attempts table with ``plan=``.

    Returns
    -------
    dict
        ``{"total", "eligible", "by_failure_class": {"success", "agent",
        "environment", "evaluation", "skipped", "unknown"}}``; every class key
        is always present.
    """
    attempts, plan, _ = metric_inputs(attempts, plan, function="attempt_counts")
    return attempt_counts_of(prepare(attempts, plan))


def attempt_counts_of(p: Prepared) -> dict:
    """:func:`attempt_counts` of an already prepared run."""
    a, success = p.counted, p.success
    column = a["failure_class"]
    by_class = {"success": int(success.sum())}
    if isinstance(column.dtype, pd.CategoricalDtype):  # one pass over the codes
        codes = column.cat.codes.to_numpy()
        tally = np.bincount(codes[~success & (codes >= 0)], minlength=len(column.cat.categories))
        where = {value: i for i, value in enumerate(column.cat.categories)}
        for key in CLASS_KEYS[1:]:
            by_class[key] = int(tally[where[key]]) if key in where else 0
    else:
        classes = column.astype(object).to_numpy()
        for key in CLASS_KEYS[1:]:
            by_class[key] = int(((classes == key) & ~success).sum())
    return {"total": int(len(a)), "eligible": int(p.eligible.sum()), "by_failure_class": by_class}
