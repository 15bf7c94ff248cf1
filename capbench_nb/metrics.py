"""Capability metrics of a run (spec section 6), as pure functions.

Every function takes the tidy attempts DataFrame first (one row per attempt,
columns as in :attr:`capbench_nb.loading.Run.records`) and the plan as a
keyword-only argument.  Records of tasks outside the plan and attempts above a
task's planned repeats are ignored here whatever the caller passes: they enter
no metric (spec section 6).  Empty denominators give ``None``, never 0 and
never an error.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .schema import ALL_ATTEMPTS_TELEMETRY, CLASS_KEYS, TELEMETRY_FIELDS
from .stats import wilson_interval, wilson_interval_array

__all__ = [
    "Rate",
    "ScoreMean",
    "counted_attempts",
    "pass_at_1",
    "pass_at_k",
    "pass_hat_k",
    "oracle_best_score_at_k",
    "per_task",
    "attempt_counts",
    "telemetry_aggregate",
    "telemetry_aggregates",
    "METRICS",
]


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
    """

    value: float | None
    successes: int
    n: int
    ci_low: float | None
    ci_high: float | None
    coverage: float | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ScoreMean:
    """A mean over tasks without an interval (diagnostics such as oracle_best_score@k)."""

    value: float | None
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def _rate(successes: int, n: int, planned: int, confidence: float) -> Rate:
    low, high = wilson_interval(successes, n, confidence=confidence)
    return Rate(
        value=successes / n if n else None,
        successes=int(successes),
        n=int(n),
        ci_low=low,
        ci_high=high,
        coverage=n / planned if planned else None,
    )


def _planned(plan: pd.DataFrame) -> pd.Series:
    """``planned_repeats`` indexed by task_id (object index, for fast lookups)."""
    return pd.Series(plan["planned_repeats"].to_numpy(dtype="int64"), index=pd.Index(plan["task_id"].astype(object)))


def counted_attempts(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> pd.DataFrame:
    """The attempts that enter metrics: tasks of ``plan``, numbered up to their planned repeats.

    Returns ``attempts`` itself when nothing needs to go (no copy).
    """
    limit = attempts["task_id"].astype(object).map(_planned(plan)).to_numpy(dtype="float64")
    keep = attempts["attempt"].to_numpy(dtype="float64") <= limit  # NaN limit (not planned) is False
    return attempts if keep.all() else attempts[keep]


def _bool(series: pd.Series) -> np.ndarray:
    return series.to_numpy(dtype="bool", na_value=False)


def _prefix_table(attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per planned task, over eligible attempts 1..k: eligible count and successes."""
    a = counted_attempts(attempts, plan=plan)
    mask = (a["attempt"].to_numpy(dtype="int64") <= k) & _bool(a["agent_eligible"])
    sub = a.loc[mask, ["task_id", "success"]]
    grouped = pd.DataFrame(
        {"task_id": sub["task_id"].astype(object).to_numpy(), "success": _bool(sub["success"]).astype("int64")}
    ).groupby("task_id", sort=False)["success"].agg(["size", "sum"])
    return grouped


def pass_at_1(attempts: pd.DataFrame, *, plan: pd.DataFrame, confidence: float = 0.95) -> Rate:
    r"""pass@1: the share of tasks whose first attempt succeeded.

    .. math:: \text{pass@1} = \frac{|\{t : a_{t,1} \text{ present, eligible, succeeded}\}|}
                                   {|\{t : a_{t,1} \text{ present and eligible}\}|}

    Ineligible first attempts (environment, evaluation, skipped, ineligible
    unknown) leave the task out of the denominator, exactly as a missing one.

    Parameters
    ----------
    attempts : DataFrame
        Attempt records (``task_id``, ``attempt``, ``success``, ``agent_eligible``).
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task.
    confidence : float, default 0.95
        Level of the Wilson interval (Wilson 1927).

    Returns
    -------
    Rate
    """
    return pass_at_k(attempts, plan=plan, k=1, confidence=confidence)


def pass_at_k(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int, confidence: float = 0.95) -> Rate:
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
    attempts : DataFrame
        Attempt records.
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task.
    k : int
        The run's fixed k (:func:`capbench_nb.loading.fixed_k`), or any j <= k
        for a prefix curve.
    confidence : float, default 0.95
        Level of the Wilson interval.

    Returns
    -------
    Rate
    """
    table = _prefix_table(attempts, plan, k)
    eligible = table[table["size"] == k]
    return _rate(int((eligible["sum"] > 0).sum()), len(eligible), len(plan), confidence)


def pass_hat_k(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int, confidence: float = 0.95) -> Rate:
    r"""pass^k over k-eligible tasks: attempts 1..k all succeeded.

    .. math:: \text{pass}^k = \frac{|\{t \text{ k-eligible} : \forall j \le k,\ a_{t,j} \text{ succeeded}\}|}
                                   {|\{t \text{ k-eligible}\}|}

    The planned-prefix form of the reliability metric of Yao et al. (2024),
    "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
    Domains", arXiv:2406.12045.  ``pass^k <= pass@k`` always.

    Parameters
    ----------
    attempts : DataFrame
        Attempt records.
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task.
    k : int
        The run's fixed k, or any j <= k.
    confidence : float, default 0.95
        Level of the Wilson interval.

    Returns
    -------
    Rate
    """
    table = _prefix_table(attempts, plan, k)
    eligible = table[table["size"] == k]
    return _rate(int((eligible["sum"] == k).sum()), len(eligible), len(plan), confidence)


def _k_eligible_tasks(attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> pd.Index:
    table = _prefix_table(attempts, plan, k)
    return table.index[table["size"].to_numpy() == k]


def _oracle_per_task(attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> pd.Series:
    """Largest non-null quality_score among attempts 1..k, per k-eligible task (NaN if none)."""
    tasks = _k_eligible_tasks(attempts, plan, k)
    a = counted_attempts(attempts, plan=plan)
    a = a[(a["attempt"].to_numpy(dtype="int64") <= k)]
    scores = pd.DataFrame(
        {"task_id": a["task_id"].astype(object).to_numpy(), "q": a["quality_score"].to_numpy(dtype="float64", na_value=np.nan)}
    )
    best = scores.groupby("task_id", sort=False)["q"].max()
    return best.reindex(tasks)


def oracle_best_score_at_k(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int) -> ScoreMean:
    r"""oracle_best_score@k, a diagnostic: mean best quality score among attempts 1..k.

    Per k-eligible task :math:`t`, :math:`b_t = \max_{j \le k} q_{t,j}` over
    non-null quality scores (null if none); the run value is the mean of the
    non-null :math:`b_t`.  It is an oracle upper bound, not a best-of-k system:
    no verifier picks the candidate, and its latency and cost are not counted.

    Returns
    -------
    ScoreMean
        ``value`` None when no k-eligible task has a score.
    """
    best = _oracle_per_task(attempts, plan, k).dropna()
    n = len(best)
    return ScoreMean(value=math.fsum(best.to_numpy()) / n if n else None, n=n)


def per_task(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int, confidence: float = 0.95) -> pd.DataFrame:
    """Per-task statistics, one row per planned task in plan order.

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
    a = counted_attempts(attempts, plan=plan)
    order = pd.Index(plan["task_id"].astype(object))
    tid = a["task_id"].astype(object).to_numpy()
    eligible = _bool(a["agent_eligible"])
    success = _bool(a["success"])
    num = a["attempt"].to_numpy(dtype="int64")
    base = pd.DataFrame({"task_id": tid, "eligible": eligible.astype("int64"), "success": success.astype("int64")})
    g = base.groupby("task_id", sort=False)
    counts = pd.DataFrame({"attempts": g.size(), "eligible": g["eligible"].sum(), "successes": g["success"].sum()})
    counts = counts.reindex(order, fill_value=0)

    first = pd.Series(np.where(success, num, np.iinfo("int64").max), index=tid).groupby(level=0, sort=False).min()
    first = first[first < np.iinfo("int64").max].reindex(order)

    out = pd.DataFrame(
        {
            "task_id": plan["task_id"].to_numpy(),
            "planned_repeats": plan["planned_repeats"].to_numpy(dtype="int64"),
            "attempts": counts["attempts"].to_numpy(dtype="int64"),
            "eligible": counts["eligible"].to_numpy(dtype="int64"),
            "successes": counts["successes"].to_numpy(dtype="int64"),
        }
    )
    out["task_id"] = out["task_id"].astype("string")
    out["k_eligible"] = order.isin(_k_eligible_tasks(attempts, plan, k))
    low, high = wilson_interval_array(out["successes"], out["eligible"], confidence=confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = out["successes"].to_numpy() / out["eligible"].to_numpy()
    out["success_rate"] = pd.array(np.where(out["eligible"] > 0, rate, np.nan), dtype="Float64")
    out["success_ci_low"] = pd.array(low, dtype="Float64")
    out["success_ci_high"] = pd.array(high, dtype="Float64")
    out["first_success_attempt"] = pd.array(first.to_numpy(dtype="float64"), dtype="Int64")

    # Cost to first success: eligible attempts numbered up to the first success.
    first_of = pd.Series(tid).map(first).to_numpy(dtype="float64")
    upto = eligible & (num <= first_of)
    for name, dtype in (("task_wall_ms", "Float64"), ("total_tokens", "Int64"), ("cost", "Float64")):
        column = a[name][upto]
        frame = pd.DataFrame(
            {
                "task_id": tid[upto],
                "attempt": num[upto],
                "v": column.to_numpy(dtype="float64" if dtype == "Float64" else "int64", na_value=0),
                "null": column.isna().to_numpy(),
            }
        ).sort_values(["task_id", "attempt"], kind="stable")  # a fixed order keeps float sums reproducible
        g = frame.groupby("task_id", sort=False)
        sums = g["v"].sum().astype("object").where(~g["null"].any(), None).reindex(order)
        out[f"cost_to_first_success_{name}"] = pd.array(sums.to_numpy(dtype="object"), dtype=dtype)

    oracle = _oracle_per_task(attempts, plan, k).reindex(order)
    out["oracle_best_score"] = pd.array(oracle.to_numpy(dtype="float64"), dtype="Float64")

    for name in ("task_wall_ms", "total_tokens"):
        vals = pd.DataFrame({"task_id": tid[eligible], "v": a[name][eligible].to_numpy(dtype="float64", na_value=np.nan)})
        med = vals.dropna().groupby("task_id", sort=False)["v"].median().reindex(order)
        out[f"median_{name}"] = pd.array(med.to_numpy(dtype="float64"), dtype="Float64")
    return out


def attempt_counts(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> dict:
    """Counts of counted attempts: total, eligible, and by failure class.

    Returns
    -------
    dict
        ``{"total", "eligible", "by_failure_class": {"success", "agent",
        "environment", "evaluation", "skipped", "unknown"}}``; every class key
        is always present.
    """
    a = counted_attempts(attempts, plan=plan)
    success = _bool(a["success"])
    classes = a["failure_class"].astype(object).to_numpy()
    by_class = {"success": int(success.sum())}
    for key in CLASS_KEYS[1:]:
        by_class[key] = int(((classes == key) & ~success).sum())
    return {"total": int(len(a)), "eligible": int(_bool(a["agent_eligible"]).sum()), "by_failure_class": by_class}


def telemetry_aggregate(values: pd.Series) -> dict:
    """Aggregate one telemetry column, nulls kept apart (spec sections 6 and 8).

    Numeric: ``{"n", "nulls", "sum", "mean", "median", "p90", "min", "max"}``,
    every statistic None when ``n == 0``.  Median and p90 interpolate linearly
    between order statistics (numpy's default).  Sums are exact for integers
    and correctly rounded for floats (:func:`math.fsum`), so they do not depend
    on row order.  Boolean: ``{"n", "nulls", "true"}``.
    """
    total = len(values)
    present = values.dropna()
    n = len(present)
    if pd.api.types.is_bool_dtype(values.dtype):
        return {"n": n, "nulls": total - n, "true": int(present.to_numpy(dtype="bool").sum()) if n else None}
    if n == 0:
        return {"n": 0, "nulls": total, "sum": None, "mean": None, "median": None, "p90": None, "min": None, "max": None}
    integer = pd.api.types.is_integer_dtype(values.dtype)
    if integer:
        arr = present.to_numpy(dtype="int64")
        if float(np.abs(arr).max()) * n < 2.0**62:
            exact = int(arr.sum())
        else:  # would overflow int64: add as Python integers
            exact = sum(int(v) for v in arr)
        mean = exact / n
        lo, hi = int(arr.min()), int(arr.max())
    else:
        arr = present.to_numpy(dtype="float64")
        exact = math.fsum(arr)
        mean = exact / n
        lo, hi = float(arr.min()), float(arr.max())
    median, p90 = np.percentile(arr, [50, 90])
    return {"n": n, "nulls": total - n, "sum": exact, "mean": mean, "median": float(median), "p90": float(p90), "min": lo, "max": hi}


def telemetry_aggregates(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> dict:
    """Aggregates of every telemetry field over eligible attempts (``setup_ms``: all attempts).

    Returns
    -------
    dict
        Field name (spec section 5 order) to :func:`telemetry_aggregate`.
    """
    a = counted_attempts(attempts, plan=plan)
    eligible = a[_bool(a["agent_eligible"])]
    return {name: telemetry_aggregate((a if name in ALL_ATTEMPTS_TELEMETRY else eligible)[name]) for name in TELEMETRY_FIELDS}


#: The headline metric registry: name to a function of (attempts, plan, k).
METRICS = {
    "pass@1": lambda attempts, plan, k: pass_at_1(attempts, plan=plan),
    "pass@k": lambda attempts, plan, k: pass_at_k(attempts, plan=plan, k=k),
    "pass^k": lambda attempts, plan, k: pass_hat_k(attempts, plan=plan, k=k),
    "oracle_best_score@k": lambda attempts, plan, k: oracle_best_score_at_k(attempts, plan=plan, k=k),
}


# --------------------------------------------------------------------------- reliability curves


def prefix_curve(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int, confidence: float = 0.95) -> pd.DataFrame:
    """pass@j and pass^j for j = 1..k from planned prefixes, each as in :func:`pass_at_k`.

    Each j has its own denominator: the tasks whose attempts 1..j are all
    present and eligible.

    Returns
    -------
    DataFrame
        One row per j: ``j``, ``metric`` (``"pass@j"`` or ``"pass^j"``) and the
        :class:`Rate` fields.
    """
    rows = []
    for j in range(1, int(k) + 1):
        for name, fn in (("pass@j", pass_at_k), ("pass^j", pass_hat_k)):
            rows.append({"j": j, "metric": name, **fn(attempts, plan=plan, k=j, confidence=confidence).to_dict()})
    return pd.DataFrame(rows, columns=["j", "metric", "value", "successes", "n", "ci_low", "ci_high", "coverage"])


def _eligible_counts(attempts: pd.DataFrame, plan: pd.DataFrame) -> pd.DataFrame:
    """Per planned task with at least one eligible attempt: n eligible attempts and c successes."""
    a = counted_attempts(attempts, plan=plan)
    eligible = _bool(a["agent_eligible"])
    frame = pd.DataFrame(
        {"task_id": a["task_id"].astype(object).to_numpy()[eligible], "c": _bool(a["success"])[eligible].astype("int64")}
    )
    return frame.groupby("task_id", sort=False)["c"].agg(n="size", c="sum")


def unbiased_curve(attempts: pd.DataFrame, *, plan: pd.DataFrame, max_j: int | None = None) -> pd.DataFrame:
    r"""Unbiased pass@j and pass^j over all eligible attempts of each task.

    For a task with :math:`n` eligible attempts of which :math:`c` succeeded,

    .. math::

        \widehat{\text{pass@}j} = 1 - \binom{n-c}{j}\Big/\binom{n}{j}
        \qquad
        \widehat{\text{pass}^j} = \binom{c}{j}\Big/\binom{n}{j}

    (Chen et al. 2021, "Evaluating Large Language Models Trained on Code",
    arXiv:2107.03374; Yao et al. 2024, tau-bench, arXiv:2406.12045), averaged
    over the tasks with at least one eligible attempt, for j = 1 up to the
    smallest such n.  A different estimator from the planned-prefix headline:
    it uses every eligible attempt, including those after k, and has no
    Wilson interval.

    Parameters
    ----------
    max_j : int, optional
        Cap on j (default: the smallest eligible n).

    Returns
    -------
    DataFrame
        ``j``, ``pass@j``, ``pass^j``, ``tasks`` (number of tasks averaged).
        Empty when no task has an eligible attempt.
    """
    counts = _eligible_counts(attempts, plan)
    columns = ["j", "pass@j", "pass^j", "tasks"]
    if counts.empty:
        return pd.DataFrame(columns=columns)
    top = int(counts["n"].min())
    if max_j is not None:
        top = min(top, int(max_j))
    # Few distinct (n, c) pairs even for many tasks: compute each once, exactly.
    pairs = counts.groupby(["n", "c"]).size()
    tasks = int(len(counts))
    rows = []
    for j in range(1, top + 1):
        at, hat = [], []
        for (n, c), weight in pairs.items():
            total = math.comb(int(n), j)
            at.extend([1.0 - math.comb(int(n - c), j) / total] * int(weight))
            hat.extend([math.comb(int(c), j) / total] * int(weight))
        rows.append({"j": j, "pass@j": math.fsum(at) / tasks, "pass^j": math.fsum(hat) / tasks, "tasks": tasks})
    return pd.DataFrame(rows, columns=columns)
