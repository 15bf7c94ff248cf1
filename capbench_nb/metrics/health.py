"""Task health and structured intervals (spec section 11): which tasks are unreliable, and why.

Three questions about a run's tasks, each answered per planned task and for the run:

- *Is the agent consistent there?*  Per k-eligible task over attempts 1..k: ``stable_pass`` (all
  succeeded), ``stable_fail`` (none did) or ``inconsistent``; the run's inconsistent share is a
  rate with its Wilson interval (:func:`inconsistent_share`).
- *Does the suite fail there?*  Per planned task, its counted attempts that are not
  agent-eligible, by class; a *quarantine candidate* is a task whose environment plus evaluation
  attempts are at least ``quarantine_threshold`` (default one half) of its counted attempts
  (:func:`task_health`).  Such failures are the environment's or the judge's, not the agent's
  (the Agentic Benchmark Checklist, arXiv:2507.02825, on tasks that fail for infrastructure reasons).
- *How precise is a mean over tasks?*  ``mean_quality_score`` and ``all_attempts_pass_rate``
  with the standard error sd/sqrt(n), and for tasks that come in groups (apps) the
  cluster-robust standard error of Miller (2024), "Adding Error Bars to Evals",
  arXiv:2411.00640 (:func:`clustered_se`, :func:`clustered_mean_se`).

Every function takes a loaded run or the attempts table with ``plan=`` (and ``k=`` where it needs
one), and sees only counted attempts (tasks of the plan, within their planned repeats).
:func:`health_document` is the ``health`` object of metrics.json.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from capbench_nb.metrics.inputs import metric_inputs
from capbench_nb.metrics.options import QUARANTINE_THRESHOLD
from capbench_nb.metrics.prepare import Prepared, k_eligible_mask, prepare
from capbench_nb.metrics.rates import Rate
from capbench_nb.metrics.slices import slice_values
from capbench_nb.metrics.stats import t_interval
from capbench_nb.records.run import Run

__all__ = [
    "CONSISTENCY",
    "INELIGIBLE_KEYS",
    "SUITE_CLASSES",
    "QUARANTINE_THRESHOLD",
    "TaskMean",
    "ClusteredError",
    "check_quarantine_threshold",
    "task_health",
    "inconsistent_share",
    "mean_quality_score",
    "all_attempts_pass_rate",
    "clustered_mean_se",
    "clustered_se",
    "clustered_caveat",
    "APPROXIMATE_MARGIN",
    "APPROXIMATE_GROUPS",
    "APPROXIMATE_TASKS_PER_GROUP",
    "health_document",
    "task_health_of",
    "inconsistent_share_of",
    "mean_quality_score_of",
    "all_attempts_pass_rate_of",
]

#: The consistency of a k-eligible task over attempts 1..k, in document order.
CONSISTENCY = ("stable_pass", "stable_fail", "inconsistent")
#: The classes of attempts that are not agent-eligible (``unknown``: only those marked ineligible).
INELIGIBLE_KEYS = ("environment", "evaluation", "skipped", "unknown")
#: The classes that make a task a quarantine candidate: the suite's failures, not the agent's.
SUITE_CLASSES = ("environment", "evaluation")
#: The clustered t interval is *approximate* when the value lies within this of 0 or 1: there the
#: mean over few groups is skewed and the interval covered 84-91% in benchmarks/coverage.py
#: (docs/coverage.md), against 92-95% near 0.5.
APPROXIMATE_MARGIN = 0.2
#: ... or when there are fewer than this many groups (92-94% near 0.5 with G = 4) ...
APPROXIMATE_GROUPS = 8
#: ... or when the groups hold fewer than this many tasks on average (T / G): 92-93% near 0.5 there.
APPROXIMATE_TASKS_PER_GROUP = 4


def _fraction(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


@dataclass(frozen=True)
class TaskMean:
    """A mean over tasks with its standard error (``mean_quality_score``, ``all_attempts_pass_rate``).

    Attributes
    ----------
    value : float or None
        The mean of the per-task values; None when no task has one.
    n : int
        Tasks with a value.
    se : float or None
        sd / sqrt(n), sample sd (ddof 1); None when n < 2.

    Shown as ``TaskMean(all_attempts_pass_rate = 0.615 (se 0.092), 12 tasks)``; the name is not a field.
    """

    value: float | None
    n: int
    se: float | None

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def metric(self) -> str | None:
        """The display name, or None for a mean built by hand."""
        return self.__dict__.get("_metric")

    def __repr__(self) -> str:
        head = f"{self.metric} = " if self.metric else ""
        se = "" if self.se is None else f" (se {_fraction(self.se)})"
        return f"TaskMean({head}{_fraction(self.value)}{se}, {self.n} tasks)"


def _named(mean: TaskMean, name: str) -> TaskMean:
    object.__setattr__(mean, "_metric", name)  # frozen: set once, at construction; not a field
    return mean


@dataclass(frozen=True)
class ClusteredError:
    """The cluster-robust standard error of ``all_attempts_pass_rate`` for one grouping of the tasks,
    and its t interval (spec section 11).

    Attributes
    ----------
    se : float or None
        :func:`clustered_mean_se` (with the CR1 factor G/(G-1)) over the tasks with an eligible
        attempt; None when there are fewer than 2 groups: one group says nothing.
    groups : int
        Distinct groups G among those tasks (tasks without a value form one group of their own).
    df : int or None
        G - 1, the degrees of freedom of the interval; None when there is no task (G = 0).
    ci_low, ci_high : float or None
        value +- t_{0.975, G-1} * se, clipped to [0, 1] (:func:`capbench_nb.metrics.stats.t_interval`);
        None when ``se`` is None.
    """

    se: float | None
    groups: int
    df: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_quarantine_threshold(value) -> float:
    """``value`` as a float when it is a real number in (0, 1], else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"the quarantine threshold must be a number in (0, 1], got {value!r}")
    value = float(value)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"the quarantine threshold must lie in (0, 1], got {value!r}")
    return value


def _class_counts(p: Prepared) -> dict[str, np.ndarray]:
    """Per planned task, its counted attempts that are not agent-eligible, by class."""
    fclass = p.counted["failure_class"].astype(object).to_numpy()
    out = {}
    for name in INELIGIBLE_KEYS:
        out[name] = p.count(~p.eligible & (fclass == name))
    return out


def _consistency_codes(p: Prepared, k: int) -> np.ndarray:
    """Per planned task: 0 stable_pass, 1 stable_fail, 2 inconsistent, -1 not k-eligible."""
    size, won = p.prefix(k)
    eligible = k_eligible_mask(size, k)
    codes = np.full(p.n_tasks, 2, dtype=np.int64)
    codes[won == k] = 0
    codes[won == 0] = 1
    codes[~eligible] = -1
    return codes


def task_health(data: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
                quarantine_threshold: float = QUARANTINE_THRESHOLD) -> pd.DataFrame:
    r"""Per planned task, in plan order: consistency over attempts 1..k, ineligibility by class, quarantine.

    A task is a *quarantine candidate* when

    .. math:: \frac{e_t + v_t}{m_t} \ge \theta

    with :math:`m_t` its counted attempts (within planned repeats), :math:`e_t` and :math:`v_t`
    those of class environment and evaluation, and :math:`\theta` the threshold (spec section 11).
    A task without counted attempts is never a candidate (nothing failed there).

    Parameters
    ----------
    data : Run or DataFrame
        A loaded run, or attempt records with ``plan=`` and ``k=``.
    plan : DataFrame, optional
        With an attempts table only.
    k : int, optional
        The run's fixed k (default ``run.k`` with a run).
    quarantine_threshold : float, default 0.5
        In (0, 1].

    Returns
    -------
    DataFrame
        ``task_id`` (string), ``counted`` and ``environment``, ``evaluation``, ``skipped``,
        ``unknown`` (int64; ineligible attempts by class), ``consistency`` (string: one of
        :data:`CONSISTENCY`, null when the task is not k-eligible) and ``quarantine`` (bool).
    """
    attempts, plan, k = metric_inputs(data, plan, k, function="task_health", needs_k=True)
    return task_health_of(prepare(attempts, plan), k, quarantine_threshold=quarantine_threshold)


def task_health_of(p: Prepared, k: int, *, quarantine_threshold: float = QUARANTINE_THRESHOLD) -> pd.DataFrame:
    """:func:`task_health` of an already prepared run."""
    threshold = check_quarantine_threshold(quarantine_threshold)
    plan = p.plan
    counted = p.count()
    classes = _class_counts(p)
    suite = sum(classes[c] for c in SUITE_CLASSES)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(counted > 0, suite / np.maximum(counted, 1), 0.0)
    codes = _consistency_codes(p, int(k))
    words = np.array(CONSISTENCY + (None,), dtype=object)[codes]  # -1 picks the None at the end
    out = pd.DataFrame({"task_id": pd.array(plan["task_id"].astype(object).to_numpy(), dtype="string"),
                        "counted": counted.astype("int64")})
    for name in INELIGIBLE_KEYS:
        out[name] = classes[name].astype("int64")
    out["consistency"] = pd.array(words, dtype="string")
    out["quarantine"] = (counted > 0) & (share >= threshold)
    return out


def inconsistent_share(data: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
                       confidence: float = 0.95) -> Rate:
    r"""The share of k-eligible tasks whose attempts 1..k neither all succeeded nor all failed.

    .. math:: \frac{|\{t \text{ k-eligible} : 0 < s_t < k\}|}{|\{t \text{ k-eligible}\}|}

    with :math:`s_t` the successes among attempts 1..k; its 95% Wilson interval and coverage
    over the planned tasks as in spec section 7 (section 11).  With k = 1 it is 0.

    Returns
    -------
    Rate
        Named ``inconsistent_share``.
    """
    attempts, plan, k = metric_inputs(data, plan, k, function="inconsistent_share", needs_k=True)
    return inconsistent_share_of(prepare(attempts, plan), k, confidence=confidence)


def inconsistent_share_of(p: Prepared, k: int, *, confidence: float = 0.95) -> Rate:
    """:func:`inconsistent_share` of an already prepared run."""
    codes = _consistency_codes(p, int(k))
    return Rate.of(int((codes == 2).sum()), int((codes >= 0).sum()), p.n_tasks, confidence,
                   metric="inconsistent_share")


def _mean_and_se(values: np.ndarray) -> tuple[float | None, float | None]:
    """The mean of ``values`` and sd/sqrt(n) (sample sd, ddof 1): None, None when empty; se None when n < 2."""
    n = len(values)
    if not n:
        return None, None
    mean = math.fsum(values.tolist()) / n
    if n < 2:
        return mean, None
    dev = values - mean
    return mean, math.sqrt(math.fsum((dev * dev).tolist()) / (n - 1)) / math.sqrt(n)


def _over_tasks(per_task: np.ndarray, name: str) -> TaskMean:
    """The :class:`TaskMean` of per-task values (NaN: the task has none), named ``name``."""
    values = per_task[~np.isnan(per_task)]
    value, se = _mean_and_se(values)
    return _named(TaskMean(value=value, n=len(values), se=se), name)


def _task_quality(p: Prepared) -> np.ndarray:
    """Per planned task, the mean non-null quality score over its eligible counted attempts (NaN if none)."""
    q = p.counted["quality_score"].to_numpy(dtype="float64", na_value=np.nan)
    m = p.eligible & ~np.isnan(q)
    pos, num, q = p.pos[m], p.attempt[m], q[m]
    order = np.lexsort((num, pos))  # a fixed summation order: the same bits whatever the row order
    sums = np.bincount(pos[order], weights=q[order], minlength=p.n_tasks)
    counts = np.bincount(pos, minlength=p.n_tasks)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def mean_quality_score(data: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None) -> TaskMean:
    r"""The mean over tasks of each task's mean quality score, with its standard error.

    Per task :math:`q_t` is the mean of the non-null ``quality_score`` over its eligible attempts
    within planned repeats; over the :math:`n` tasks that have one,

    .. math:: \bar q = \frac{1}{n}\sum_t q_t, \qquad
              \mathrm{se} = \frac{s}{\sqrt n}, \quad s^2 = \frac{1}{n-1}\sum_t (q_t - \bar q)^2

    (spec section 11); se is None when n < 2.

    Returns
    -------
    TaskMean
        Named ``mean_quality_score``.
    """
    attempts, plan, _ = metric_inputs(data, plan, function="mean_quality_score")
    return mean_quality_score_of(prepare(attempts, plan))


def mean_quality_score_of(p: Prepared) -> TaskMean:
    """:func:`mean_quality_score` of an already prepared run."""
    return _over_tasks(_task_quality(p), "mean_quality_score")


def _task_pass_shares(p: Prepared) -> np.ndarray:
    """Per planned task, successes over eligible counted attempts (NaN without an eligible attempt)."""
    n, c = p.eligible_counts()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, c / np.maximum(n, 1), np.nan)


def all_attempts_pass_rate(data: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None) -> TaskMean:
    r"""The mean over tasks of each task's success share over all its eligible planned attempts.

    Per task with :math:`n_t \ge 1` eligible attempts within planned repeats, :math:`c_t` of them
    successes, :math:`x_t = c_t / n_t`; over those :math:`T` tasks

    .. math:: \bar x = \frac{1}{T}\sum_t x_t, \qquad \mathrm{se} = \frac{s}{\sqrt T}

    with the sample sd :math:`s` (ddof 1; se None when T < 2).  :math:`\bar x` is the unbiased
    pass@1 (Chen et al. 2021 with j = 1; spec section 11).  For tasks in groups, see
    :func:`clustered_se`.

    Returns
    -------
    TaskMean
        Named ``all_attempts_pass_rate``.
    """
    attempts, plan, _ = metric_inputs(data, plan, function="all_attempts_pass_rate")
    return all_attempts_pass_rate_of(prepare(attempts, plan))


def all_attempts_pass_rate_of(p: Prepared) -> TaskMean:
    """:func:`all_attempts_pass_rate` of an already prepared run."""
    return _over_tasks(_task_pass_shares(p), "all_attempts_pass_rate")


def clustered_mean_se(values, groups) -> tuple[np.ndarray | float, int]:
    r"""The cluster-robust standard error of a mean over tasks (CR1), and the number of groups.

    .. math:: \mathrm{SE}^2 = \frac{G}{G-1} \cdot \frac{1}{T^2} \sum_{g} \Big(\sum_{t \in g} (x_t - \bar x)\Big)^2

    Miller (2024), "Adding Error Bars to Evals", arXiv:2411.00640, eq. for clustered questions,
    with the usual small-sample factor G/(G-1); spec section 11.  It is the cluster-robust
    (sandwich) standard error of the intercept of an OLS regression of x on a constant as
    statsmodels computes it by default (``cov_type="cluster"``, whose correction
    G/(G-1) * (N-1)/(N-K) is G/(G-1) for K = 1) and as Stata's ``regress, vce(cluster)`` does.  With
    every task its own group it is the plain sd/sqrt(T); with one group it is NaN (one group says
    nothing: the uncorrected sum is exactly 0 there).

    Parameters
    ----------
    values : array_like, shape (..., T)
        Per-task values; leading axes are independent samples (vectorised, e.g. over seeds).
    groups : array_like of int, shape (T,)
        Each task's group code (any integers; equal codes, one group).

    Returns
    -------
    (se, groups)
        ``se`` a float for 1-D ``values`` (an array over the leading axes otherwise), NaN when there
        are fewer than 2 groups; ``groups`` the number of distinct codes (0 for T = 0).
    """
    x = np.asarray(values, dtype="float64")
    codes = np.asarray(groups)
    if codes.shape != x.shape[-1:]:
        raise ValueError(f"groups has shape {codes.shape}, values {x.shape}: one group code per task")
    t = x.shape[-1]
    if t == 0:
        return (float("nan") if x.ndim == 1 else np.full(x.shape[:-1], np.nan)), 0
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_codes[1:] != sorted_codes[:-1]]))
    g = len(starts)
    if g < 2:  # one group says nothing (spec section 11): no standard error, not 0
        se = np.full(x.shape[:-1], np.nan)
    else:
        dev = x - x.mean(axis=-1, keepdims=True)
        sums = np.add.reduceat(dev[..., order], starts, axis=-1)
        se = np.sqrt(g / (g - 1) * (sums * sums).sum(axis=-1)) / t
    return (float(se) if x.ndim == 1 else se), int(g)


def _group_codes(values: Iterable) -> np.ndarray:
    """One integer code per value: equal values share one (as slices group them), and every missing
    value (null, NaN) one of its own."""
    values = list(values)
    array = np.empty(len(values), dtype=object)
    array[:] = values  # element by element: list values stay objects, not a second axis
    try:
        codes, uniques = pd.factorize(array, use_na_sentinel=True)
    except TypeError:  # unhashable values (lists, objects): equal JSON texts share a group
        keys = [None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))
                else json.dumps(v, sort_keys=True, default=str) for v in values]
        codes, uniques = pd.factorize(np.array(keys, dtype=object), use_na_sentinel=True)
    return np.where(codes < 0, len(uniques), codes).astype(np.int64)


def clustered_se(data: Run | pd.DataFrame, by: str | Sequence, *, plan: pd.DataFrame | None = None) -> ClusteredError:
    """The cluster-robust standard error of :func:`all_attempts_pass_rate` with tasks grouped by ``by``.

    Parameters
    ----------
    data : Run or DataFrame
        A loaded run, or attempt records with ``plan=``.
    by : str or sequence
        With a run, a dimension resolved exactly as ``--slice`` (a plan label, a config key, or a
        registered slice: :func:`capbench_nb.metrics.slices.slice_values`); or one value per
        planned task, in plan order.  A config key gives one group for the whole run.  Tasks
        without a value form one group together.

    Returns
    -------
    ClusteredError
        Over the tasks with an eligible attempt (:func:`clustered_mean_se`), with the t interval
        around their mean.
    """
    if isinstance(by, str):
        if not isinstance(data, Run):
            raise TypeError("clustered_se(attempts, by=NAME) resolves a dimension from a run: pass the run, "
                            "or one value per planned task")
        keys = slice_values(data, by).tolist()
    else:
        keys = list(by)
    attempts, plan, _ = metric_inputs(data, plan, function="clustered_se")
    if len(keys) != len(plan):
        raise ValueError(f"clustered_se: {len(keys)} group values for {len(plan)} planned tasks")
    shares = _task_pass_shares(prepare(attempts, plan))
    return _clustered(shares, keys, _over_tasks(shares, "all_attempts_pass_rate").value)


def _clustered(shares: np.ndarray, keys: list, value: float | None) -> ClusteredError:
    """:class:`ClusteredError` of per-task shares (NaN: no eligible attempt, left out) grouped by ``keys``,
    its interval around ``value`` (the run's all_attempts_pass_rate)."""
    have = ~np.isnan(shares)
    se, groups = clustered_mean_se(shares[have], _group_codes(keys)[have])
    se = None if math.isnan(se) else float(se)
    low, high = t_interval(value, se, groups - 1)
    return ClusteredError(se=se, groups=groups, df=groups - 1 if groups else None, ci_low=low, ci_high=high)


def clustered_caveat(value: float | None, error: ClusteredError, tasks: int) -> str | None:
    """Why the clustered t interval of ``value`` is only approximate, or None when the coverage study
    found it to hold (``approximate`` of metrics.json; docs/coverage.md).

    From benchmarks/coverage.py: the interval covers less than 93% when ``value`` is within
    :data:`APPROXIMATE_MARGIN` of 0 or 1 (84-91%), and near 0.5 in some cells with fewer than
    :data:`APPROXIMATE_GROUPS` groups or fewer than :data:`APPROXIMATE_TASKS_PER_GROUP` tasks per
    group on average (92-94%).  The reasons that hold, joined by ``"; "``.  None without an interval
    (one group says nothing: no interval to qualify).

    Parameters
    ----------
    value : float or None
        The run's all_attempts_pass_rate.
    error : ClusteredError
    tasks : int
        The tasks the value is over (its ``n``).
    """
    if value is None or error.ci_low is None or error.groups < 2:
        return None
    reasons = []
    if value < APPROXIMATE_MARGIN or value > 1.0 - APPROXIMATE_MARGIN:
        reasons.append(f"the value is within {APPROXIMATE_MARGIN:g} of 0 or 1")
    if error.groups < APPROXIMATE_GROUPS:
        reasons.append(f"fewer than {APPROXIMATE_GROUPS} groups")
    if tasks < APPROXIMATE_TASKS_PER_GROUP * error.groups:
        reasons.append(f"fewer than {APPROXIMATE_TASKS_PER_GROUP} tasks per group")
    return "; ".join(reasons) or None


def health_document(run: Run, *, quarantine_threshold: float = QUARANTINE_THRESHOLD,
                    clusters: Iterable[str] = (), prepared: Prepared | None = None) -> dict:
    """The ``health`` object of metrics.json (spec section 11).

    Keys: ``consistency`` (``stable_pass``, ``stable_fail``, ``inconsistent`` and
    ``inconsistent_share``, a rate as in section 7), ``quarantine_threshold``, ``quarantine``
    (task ids in plan order), ``per_task`` (plan order: ``task_id``, ``counted``, ``ineligible``
    {environment, evaluation, skipped, unknown}, ``consistency``, ``quarantine``),
    ``mean_quality_score`` {value, n, se} and ``all_attempts_pass_rate`` {value, n, se,
    ``clustered``: {dimension: {se, groups, df, ci_low, ci_high}} for each of ``clusters``, in the order given,
    and with at least one dimension ``clustered_approximate``: {dimension: :func:`clustered_caveat`}}.

    ``prepared`` is the run's :class:`Prepared` when the caller has made it (one preparation for the
    whole document); else it is made here.

    Raises
    ------
    UnknownSliceError
        A cluster dimension the run does not have.
    """
    plan, k = run.plan, run.k
    p = prepare(run.records, plan) if prepared is None else prepared
    table = task_health_of(p, k, quarantine_threshold=quarantine_threshold)
    ids = plan["task_id"].astype(object).tolist()
    words = table["consistency"].astype(object).where(table["consistency"].notna(), None).tolist()
    flags = table["quarantine"].tolist()
    per_task = [{"task_id": t, "counted": n, "ineligible": {"environment": e, "evaluation": v, "skipped": s, "unknown": u},
                 "consistency": w, "quarantine": q}
                for t, n, e, v, s, u, w, q in zip(ids, *(table[c].tolist() for c in ("counted", *INELIGIBLE_KEYS)),
                                                  words, flags)]
    share = inconsistent_share_of(p, k)
    rate = all_attempts_pass_rate_of(p).to_dict()
    shares = _task_pass_shares(p)
    errors = {dim: _clustered(shares, slice_values(run, dim).tolist(), rate["value"]) for dim in dict.fromkeys(clusters)}
    rate["clustered"] = {dim: e.to_dict() for dim, e in errors.items()}
    if errors:  # only with --cluster: a run without one keeps its bytes
        rate["clustered_approximate"] = {dim: clustered_caveat(rate["value"], e, rate["n"]) for dim, e in errors.items()}
    consistency = {word: words.count(word) for word in CONSISTENCY}
    consistency["inconsistent_share"] = share.to_dict()
    return {
        "consistency": consistency,
        "quarantine_threshold": check_quarantine_threshold(quarantine_threshold),
        "quarantine": [t for t, q in zip(ids, flags) if q],
        "per_task": per_task,
        "mean_quality_score": mean_quality_score_of(p).to_dict(),
        "all_attempts_pass_rate": rate,
    }
