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
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from capbench_nb.format import ALL_ATTEMPTS_TELEMETRY, CLASS_KEYS, TELEMETRY_FIELDS
from capbench_nb.metrics.stats import wilson_interval, wilson_interval_array

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
    "prefix_curve",
    "prefix_rates",
    "unbiased_curve",
    "shared_preparation",
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


_LOCAL = threading.local()


@contextmanager
def shared_preparation():
    """Within this block, metric functions given the *same* attempts and plan objects share one
    preparation pass (plan positions, counted rows, prefix counts) instead of redoing it per call.

    :func:`capbench_nb.export.compute_metrics` computes every metric inside one such block.
    The objects must not be modified inside it.
    """
    previous = getattr(_LOCAL, "memo", None)
    _LOCAL.memo = {} if previous is None else previous
    try:
        yield
    finally:
        _LOCAL.memo = previous


def _bool(series: pd.Series) -> np.ndarray:
    return series.to_numpy(dtype="bool", na_value=False)


class _Prepared:
    """The counted attempts of one (attempts, plan) pair as arrays aligned with the plan.

    ``pos`` is each counted row's position in the plan, so per-task quantities are one
    ``np.bincount`` (or one groupby on integer keys) away, in plan order.
    """

    def __init__(self, attempts: pd.DataFrame, plan: pd.DataFrame) -> None:
        self.source, self.plan = attempts, plan
        self.n_tasks = len(plan)
        planned = plan["planned_repeats"].to_numpy(dtype="int64")
        index = pd.Index(plan["task_id"].astype(object))
        codes, uniques = pd.factorize(attempts["task_id"])
        if len(uniques):
            where = np.asarray(index.get_indexer(uniques), dtype=np.int64)
            pos = np.where(codes >= 0, where[np.maximum(codes, 0)], -1)
        else:
            pos = np.full(len(attempts), -1, dtype=np.int64)
        limit = np.where(pos >= 0, planned[np.maximum(pos, 0)].astype("float64") if len(planned) else np.nan, np.nan)
        keep = attempts["attempt"].to_numpy(dtype="float64") <= limit  # NaN limit (not planned) is False
        self.counted = attempts if keep.all() else attempts[keep]
        self.pos = pos[keep]
        a = self.counted
        self.attempt = a["attempt"].to_numpy(dtype="int64")
        self.eligible = _bool(a["agent_eligible"])
        self.success = _bool(a["success"])
        self._prefix: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._cache: dict = {}

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Per planned task, the number of counted rows (where ``mask``)."""
        pos = self.pos if mask is None else self.pos[mask]
        return np.bincount(pos, minlength=self.n_tasks)

    def prefix(self, k: int, *, keep: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Per planned task, over eligible attempts numbered <= k: their number and their successes."""
        hit = self._prefix.get(k)
        if hit is None:
            m = self.eligible & (self.attempt <= k)
            hit = (self.count(m), self.count(m & self.success))
            if keep:
                self._prefix[k] = hit
        return hit

    def prefixes(self, k: int) -> bool:
        """:meth:`prefix` for every j = 1..k at once (a task x attempt histogram), when it is small.

        Returns whether every j is now known."""
        k = int(k)
        if k < 1 or all(j in self._prefix for j in range(1, k + 1)):
            return True
        width = k + 2  # bucket 0: attempts <= 0, 1..k, k+1: above k
        if self.n_tasks * width > max(4 * len(self.pos), 1 << 20):
            return False  # prefix(j) one by one, or all_pass_counts, instead
        e = self.eligible
        bucket = np.clip(self.attempt[e], 0, k + 1)
        cell = self.pos[e] * width + bucket
        size = np.bincount(cell, minlength=self.n_tasks * width).reshape(self.n_tasks, width).cumsum(axis=1)
        won = np.bincount(cell[self.success[e]], minlength=self.n_tasks * width).reshape(self.n_tasks, width).cumsum(axis=1)
        for j in range(1, k + 1):
            self._prefix.setdefault(j, (np.ascontiguousarray(size[:, j]), np.ascontiguousarray(won[:, j])))
        return True

    def all_pass_counts(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`pass_counts` for every j = 1..k, as three arrays indexed by j (index 0 unused), in
        O(rows + tasks + k) time and memory instead of O(k x (rows + tasks)).

        Per task: r, the length of the run of present and eligible attempts 1, 2, ...; s, its first
        success in that run; u, the length of its run of successes.  Then the task is j-eligible
        exactly when r >= j, counts for pass@j when also s <= j, and for pass^j when u >= j.  That
        holds when no (task, attempt) pair repeats and every attempt is >= 1 (always so for a loaded
        run); otherwise None (the caller counts j by j).
        """
        k = int(k)
        e = self.eligible
        pos, att, won = self.pos[e], self.attempt[e], self.success[e]
        if att.size and int(att.min()) < 1:
            return None
        order = np.lexsort((att, pos))
        pos, att, won = pos[order], att[order], won[order]
        first = np.ones(pos.size, dtype=bool)
        if pos.size > 1:
            same_task = pos[1:] == pos[:-1]
            if (same_task & (att[1:] == att[:-1])).any():
                return None
            first[1:] = ~same_task
        index = np.arange(pos.size)
        rank = index - np.maximum.accumulate(np.where(first, index, 0)) + 1  # 1-based within the task
        in_run = att == rank  # attempts 1..rank all present and eligible (a prefix of each task's rows)
        n_tasks = self.n_tasks
        run = np.bincount(pos[in_run], minlength=n_tasks)

        def first_in_task(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Tasks with a row in ``mask``, and the attempt of the first such row of each."""
            p, a = pos[mask], att[mask]
            head = np.ones(p.size, dtype=bool)
            if p.size > 1:
                head[1:] = p[1:] != p[:-1]
            return p[head], a[head]

        s_task, s_att = first_in_task(in_run & won)
        f_task, f_att = first_in_task(in_run & ~won)
        streak = run.copy()
        streak[f_task] = f_att - 1

        def at_least(values: np.ndarray) -> np.ndarray:  # [#{v >= j} for j = 0..k]
            hist = np.bincount(np.minimum(values, k), minlength=k + 1)
            return hist[::-1].cumsum()[::-1]

        def at_most(values: np.ndarray) -> np.ndarray:  # [#{v <= j} for j = 0..k]
            return np.bincount(np.minimum(values, k + 1), minlength=k + 2)[: k + 1].cumsum()

        n = at_least(run)
        at = at_most(s_att) - at_most(run[s_task] + 1)  # first success <= j <= run
        hat = at_least(streak)
        return n, at, hat

    def k_eligible(self, k: int) -> np.ndarray:
        """Per planned task: attempts 1..k all present and eligible."""
        size, _ = self.prefix(k)
        return (size == k) & (size > 0)

    def pass_counts(self, k: int, *, keep: bool = True) -> tuple[int, int, int]:
        """``(n, pass@k successes, pass^k successes)`` over the k-eligible tasks."""
        size, won = self.prefix(k, keep=keep)
        eligible = (size == k) & (size > 0)
        return int(eligible.sum()), int((eligible & (won > 0)).sum()), int((eligible & (won == k)).sum())

    def oracle(self, k: int) -> np.ndarray:
        """Per planned task: the largest non-null quality score among attempts 1..k (NaN if none)."""
        key = ("oracle", k)
        if key not in self._cache:
            m = self.attempt <= k
            scores = pd.DataFrame({"t": self.pos[m], "q": self.counted["quality_score"].to_numpy(dtype="float64", na_value=np.nan)[m]})
            best = scores.groupby("t", sort=False)["q"].max()
            self._cache[key] = best.reindex(pd.RangeIndex(self.n_tasks)).to_numpy(dtype="float64")
        return self._cache[key]


def _prepare(attempts: pd.DataFrame, plan: pd.DataFrame) -> _Prepared:
    memo = getattr(_LOCAL, "memo", None)
    if memo is None:
        return _Prepared(attempts, plan)
    key = (id(attempts), id(plan))
    hit = memo.get(key)
    if hit is None or hit.source is not attempts or hit.plan is not plan:
        hit = memo[key] = _Prepared(attempts, plan)
    return hit


def counted_attempts(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> pd.DataFrame:
    """The attempts that enter metrics: tasks of ``plan``, numbered up to their planned repeats.

    Returns ``attempts`` itself when nothing needs to go (no copy).
    """
    return _prepare(attempts, plan).counted


def _prefix_table(attempts: pd.DataFrame, plan: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per planned task with an eligible attempt 1..k (in order of appearance): eligible count and successes."""
    a = counted_attempts(attempts, plan=plan)
    mask = (a["attempt"].to_numpy(dtype="int64") <= k) & _bool(a["agent_eligible"])
    sub = a.loc[mask, ["task_id", "success"]]
    grouped = pd.DataFrame(
        {"task_id": sub["task_id"].astype(object).to_numpy(), "success": _bool(sub["success"]).astype("int64")}
    ).groupby("task_id", sort=False)["success"].agg(["size", "sum"])
    return grouped


def _pass_rate(attempts: pd.DataFrame, plan: pd.DataFrame, k: int, confidence: float, *, every: bool) -> Rate:
    n, at, hat = _prepare(attempts, plan).pass_counts(k)
    return _rate(hat if every else at, n, len(plan), confidence)


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
    return _pass_rate(attempts, plan, k, confidence, every=False)


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
    return _pass_rate(attempts, plan, k, confidence, every=True)


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
    p = _prepare(attempts, plan)
    best = p.oracle(k)[p.k_eligible(k)]
    best = best[~np.isnan(best)]
    n = len(best)
    return ScoreMean(value=math.fsum(best) / n if n else None, n=n)


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
    p = _prepare(attempts, plan)
    a, pos, num, eligible, success = p.counted, p.pos, p.attempt, p.eligible, p.success
    tasks = pd.RangeIndex(p.n_tasks)
    never = np.iinfo("int64").max
    first = np.full(p.n_tasks, never, dtype="int64")
    np.minimum.at(first, pos[success], num[success])
    first = np.where(first < never, first.astype("float64"), np.nan)

    out = pd.DataFrame(
        {
            "task_id": plan["task_id"].to_numpy(),
            "planned_repeats": plan["planned_repeats"].to_numpy(dtype="int64"),
            "attempts": p.count(),
            "eligible": p.count(eligible),
            "successes": p.count(success),
        }
    )
    out["task_id"] = out["task_id"].astype("string")
    out["k_eligible"] = p.k_eligible(k)
    low, high = wilson_interval_array(out["successes"], out["eligible"], confidence=confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = out["successes"].to_numpy() / out["eligible"].to_numpy()
    out["success_rate"] = pd.array(np.where(out["eligible"] > 0, rate, np.nan), dtype="Float64")
    out["success_ci_low"] = pd.array(low, dtype="Float64")
    out["success_ci_high"] = pd.array(high, dtype="Float64")
    out["first_success_attempt"] = pd.array(first, dtype="Int64")

    # Cost to first success: eligible attempts numbered up to the first success.
    first_of = first[pos]
    upto = eligible & (num <= first_of)
    for name, dtype in (("task_wall_ms", "Float64"), ("total_tokens", "Int64"), ("cost", "Float64")):
        column = a[name][upto]
        frame = pd.DataFrame(
            {
                "t": pos[upto],
                "attempt": num[upto],
                "v": column.to_numpy(dtype="float64" if dtype == "Float64" else "int64", na_value=0),
                "null": column.isna().to_numpy(),
            }
        ).sort_values(["t", "attempt"], kind="stable")  # a fixed order keeps float sums reproducible
        g = frame.groupby("t", sort=False)
        sums = g["v"].sum().astype("object").where(~g["null"].any(), None).reindex(tasks)
        out[f"cost_to_first_success_{name}"] = pd.array(sums.to_numpy(dtype="object"), dtype=dtype)

    oracle = np.where(p.k_eligible(k), p.oracle(k), np.nan)
    out["oracle_best_score"] = pd.array(oracle, dtype="Float64")

    for name in ("task_wall_ms", "total_tokens"):
        vals = pd.DataFrame({"t": pos[eligible], "v": a[name].to_numpy(dtype="float64", na_value=np.nan)[eligible]})
        med = vals.dropna().groupby("t", sort=False)["v"].median().reindex(tasks)
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
    p = _prepare(attempts, plan)
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


def telemetry_aggregate(values: pd.Series) -> dict:
    """Aggregate one telemetry column, nulls kept apart (spec sections 6 and 8).

    Numeric: ``{"n", "nulls", "sum", "mean", "median", "p90", "min", "max"}``,
    every statistic None when ``n == 0``.  Median and p90 interpolate linearly
    between order statistics (numpy's default).  Sums are exact for integers
    and correctly rounded for floats (:func:`math.fsum`), so they do not depend
    on row order.  Boolean: ``{"n", "nulls", "true"}``.
    """
    return _aggregate(values, None)


def _exact_sum(arr: np.ndarray) -> float:
    """``math.fsum(arr)``; when every value is a non-negative whole number and every partial sum stays
    below 2**53, a plain float sum is exact, hence the same correctly rounded value, and faster."""
    if len(arr) and (arr >= 0).all() and float(arr.max()) * len(arr) < 2.0**53 and not np.signbit(arr).any() \
            and (arr == np.floor(arr)).all():
        return float(arr.sum())
    return math.fsum(arr)


def telemetry_aggregates(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> dict:
    """Aggregates of every telemetry field over eligible attempts (``setup_ms``: all attempts).

    Returns
    -------
    dict
        Field name (spec section 5 order) to :func:`telemetry_aggregate`.
    """
    p = _prepare(attempts, plan)
    return {name: _aggregate(p.counted[name], None if name in ALL_ATTEMPTS_TELEMETRY else p.eligible)
            for name in TELEMETRY_FIELDS}


def _aggregate(values: pd.Series, rows: np.ndarray | None) -> dict:
    """:func:`telemetry_aggregate` of ``values[rows]``, without building the subset Series."""
    if rows is None:
        rows = np.ones(len(values), dtype=bool)
    null = values.isna().to_numpy()
    total = int(rows.sum())
    keep = rows & ~null
    n = int(keep.sum())
    if pd.api.types.is_bool_dtype(values.dtype):
        return {"n": n, "nulls": total - n, "true": int(values.to_numpy(dtype="bool", na_value=False)[keep].sum()) if n else None}
    if n == 0:
        return {"n": 0, "nulls": total, "sum": None, "mean": None, "median": None, "p90": None, "min": None, "max": None}
    integer = pd.api.types.is_integer_dtype(values.dtype)
    if integer:
        arr = values.to_numpy(dtype="int64", na_value=0)[keep]
        if float(np.abs(arr).max()) * n < 2.0**62:
            exact = int(arr.sum())
        else:  # would overflow int64: add as Python integers
            exact = sum(int(v) for v in arr)
        mean = exact / n
        lo, hi = int(arr.min()), int(arr.max())
    else:
        arr = values.to_numpy(dtype="float64", na_value=0.0)[keep]
        exact = _exact_sum(arr)
        mean = exact / n
        lo, hi = float(arr.min()), float(arr.max())
    median, p90 = np.percentile(arr, [50, 90])
    return {"n": n, "nulls": total - n, "sum": exact, "mean": mean, "median": float(median), "p90": float(p90), "min": lo, "max": hi}


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
    for j, at, hat in prefix_rates(attempts, plan=plan, k=k, confidence=confidence):
        rows.append({"j": j, "metric": "pass@j", **at.to_dict()})
        rows.append({"j": j, "metric": "pass^j", **hat.to_dict()})
    return pd.DataFrame(rows, columns=["j", "metric", "value", "successes", "n", "ci_low", "ci_high", "coverage"])


def prefix_rates(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int, confidence: float = 0.95) -> list[tuple[int, Rate, Rate]]:
    """``[(j, pass@j, pass^j)]`` for j = 1..k: the values of :func:`prefix_curve`, as :class:`Rate` objects."""
    p = _prepare(attempts, plan)
    counts = None if p.prefixes(k) else p.all_pass_counts(k)
    if counts is not None:  # many tasks times a large k: no prefix table per j
        n, at, hat = counts
        return [(j, _rate(int(at[j]), int(n[j]), len(plan), confidence), _rate(int(hat[j]), int(n[j]), len(plan), confidence))
                for j in range(1, int(k) + 1)]
    out = []
    for j in range(1, int(k) + 1):
        n, at, hat = p.pass_counts(j, keep=j == k)  # (a curve over a huge k keeps no table per j)
        out.append((j, _rate(at, n, len(plan), confidence), _rate(hat, n, len(plan), confidence)))
    return out


def _eligible_counts(attempts: pd.DataFrame, plan: pd.DataFrame) -> pd.DataFrame:
    """Per planned task with at least one eligible attempt: n eligible attempts and c successes."""
    p = _prepare(attempts, plan)
    n = p.count(p.eligible)
    c = p.count(p.eligible & p.success)
    some = n > 0
    return pd.DataFrame({"n": n[some], "c": c[some]})


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
    # Few distinct (n, c) pairs even for many tasks: compute each once, exactly.  The binomial
    # coefficients are exact integers carried from j - 1 to j (C(m, j) = C(m, j-1) * (m-j+1) / j,
    # an exact division), the same integers math.comb gives, in O(digits) per step instead of
    # from scratch: a task with thousands of eligible attempts takes milliseconds, not seconds.
    pairs = [(int(n), int(c), int(weight)) for (n, c), weight in counts.groupby(["n", "c"]).size().items()]
    combs = [[1, 1, 1] for _ in pairs]  # C(n, j), C(n - c, j), C(c, j) at j = 0
    tasks = int(len(counts))
    rows = []
    for j in range(1, top + 1):
        at, hat = [], []
        for (n, c, weight), comb in zip(pairs, combs):
            comb[0] = comb[0] * (n - j + 1) // j
            comb[1] = comb[1] * max(n - c - j + 1, 0) // j
            comb[2] = comb[2] * max(c - j + 1, 0) // j
            total = comb[0]
            at.extend([1.0 - comb[1] / total] * weight)
            hat.extend([comb[2] / total] * weight)
        rows.append({"j": j, "pass@j": math.fsum(at) / tasks, "pass^j": math.fsum(hat) / tasks, "tasks": tasks})
    return pd.DataFrame(rows, columns=columns)
