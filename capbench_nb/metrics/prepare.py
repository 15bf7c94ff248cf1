"""The preparation kernel every metric goes through: counted rows, plan positions, planned prefixes.

Every metric function takes the tidy attempts DataFrame (one row per attempt,
columns as in :attr:`capbench_nb.records.run.Run.records`) and the plan.
:func:`prepare` turns that pair into a :class:`Prepared`: the *counted* rows
(tasks of the plan, attempts numbered up to the task's planned repeats; spec
section 6), each with its position in the plan, so that a per-task quantity is
one :func:`numpy.bincount` away, in plan order.

The planned prefix of a task for j is its eligible attempts numbered 1..j.
A task is *j-eligible* when that prefix is complete: attempts 1..j all present
and eligible (:func:`k_eligible_mask`, the one statement of the rule; pass@j,
pass^j, the curves, oracle_best_score@k, per-task ``k_eligible``, the paired
comparison and the simulator's expected metrics all read it from here).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import pandas as pd

from capbench_nb.records.run import classify_records

__all__ = [
    "Prepared",
    "prepare",
    "shared_preparation",
    "as_bool",
    "counted_attempts",
    "k_eligible_mask",
    "k_eligible_tasks",
    "prefix_outcomes",
]

_LOCAL = threading.local()


@contextmanager
def shared_preparation():
    """Within this block, metric functions given the *same* attempts and plan objects share one
    preparation pass (plan positions, counted rows, prefix counts) instead of redoing it per call.

    :func:`capbench_nb.metrics.document.compute_metrics` computes every metric inside one such
    block.  The objects must not be modified inside it.
    """
    previous = getattr(_LOCAL, "memo", None)
    _LOCAL.memo = {} if previous is None else previous
    try:
        yield
    finally:
        _LOCAL.memo = previous


def as_bool(series: pd.Series) -> np.ndarray:
    """A boolean column as a numpy bool array, null as False (a null success or eligibility never counts)."""
    return series.to_numpy(dtype="bool", na_value=False)


def k_eligible_mask(prefix_size: np.ndarray, k: int) -> np.ndarray:
    """Per task, from the number of eligible attempts numbered 1..k: are attempts 1..k all present and eligible?

    Attempt numbers are unique within a task and >= 1 in a loaded run, so the prefix is complete
    exactly when it holds k attempts.
    """
    return (prefix_size == k) & (prefix_size > 0)


def _plan_positions(attempts: pd.DataFrame, plan: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(position of each row's task in the plan or -1, whether the row is counted).

    Whether a row counts is the records' rule (:func:`capbench_nb.records.run.classify_records`:
    no anomaly), not restated here; the positions are the plan lookup the arrays are aligned by.
    """
    keep = classify_records(attempts, plan).cat.codes.to_numpy() < 0  # null anomaly: counted
    index = pd.Index(plan["task_id"].astype(object))
    codes, uniques = pd.factorize(attempts["task_id"])  # each distinct task id looked up once
    if len(uniques):
        where = np.asarray(index.get_indexer(uniques), dtype=np.int64)
        pos = np.where(codes >= 0, where[np.maximum(codes, 0)], -1)
    else:
        pos = np.full(len(attempts), -1, dtype=np.int64)
    return pos, keep


class Prepared:
    """The counted attempts of one (attempts, plan) pair as arrays aligned with the plan.

    Attributes
    ----------
    source, plan : DataFrame
        The objects it was prepared from.
    n_tasks : int
        Planned tasks.
    counted : DataFrame
        The rows that enter metrics (``source`` itself when every row does).
    pos : ndarray of int64
        Each counted row's position in the plan.
    attempt : ndarray of int64
        Each counted row's attempt number.
    eligible, success : ndarray of bool
        Each counted row's ``agent_eligible`` and ``success`` (null as False).
    """

    def __init__(self, attempts: pd.DataFrame, plan: pd.DataFrame) -> None:
        self.source, self.plan = attempts, plan
        self.n_tasks = len(plan)
        pos, keep = _plan_positions(attempts, plan)
        self.counted = attempts if keep.all() else attempts[keep]
        self.pos = pos[keep]
        a = self.counted
        self.attempt = a["attempt"].to_numpy(dtype="int64")
        self.eligible = as_bool(a["agent_eligible"])
        self.success = as_bool(a["success"])
        self._prefix: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._cache: dict = {}

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Per planned task, the number of counted rows (where ``mask``)."""
        pos = self.pos if mask is None else self.pos[mask]
        return np.bincount(pos, minlength=self.n_tasks)

    def eligible_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per planned task, over all its eligible counted attempts: their number n and successes c."""
        hit = self._cache.get("eligible_counts")
        if hit is None:
            hit = self._cache["eligible_counts"] = (self.count(self.eligible), self.count(self.eligible & self.success))
        return hit

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
        exactly when r >= j (the :func:`k_eligible_mask` rule, read off the run length), counts for
        pass@j when also s <= j, and for pass^j when u >= j.  That holds when no (task, attempt)
        pair repeats and every attempt is >= 1 (always so for a loaded run); otherwise None (the
        caller counts j by j).
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
        run = np.bincount(pos[in_run], minlength=self.n_tasks)
        s_task, s_att = _first_in_task(pos, att, in_run & won)
        f_task, f_att = _first_in_task(pos, att, in_run & ~won)
        streak = run.copy()
        streak[f_task] = f_att - 1
        n = _at_least(run, k)
        at = _at_most(s_att, k) - _at_most(run[s_task] + 1, k)  # first success <= j <= run
        hat = _at_least(streak, k)
        return n, at, hat

    def k_eligible(self, k: int, *, keep: bool = True) -> np.ndarray:
        """Per planned task: attempts 1..k all present and eligible (:func:`k_eligible_mask`)."""
        size, _ = self.prefix(k, keep=keep)
        return k_eligible_mask(size, k)

    def pass_counts(self, k: int, *, keep: bool = True) -> tuple[int, int, int]:
        """``(n, pass@k successes, pass^k successes)`` over the k-eligible tasks."""
        size, won = self.prefix(k, keep=keep)
        eligible = k_eligible_mask(size, k)
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


def _first_in_task(pos: np.ndarray, att: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tasks with a row in ``mask`` (rows sorted by task, then attempt), and the attempt of the first such row of each."""
    p, a = pos[mask], att[mask]
    head = np.ones(p.size, dtype=bool)
    if p.size > 1:
        head[1:] = p[1:] != p[:-1]
    return p[head], a[head]


def _at_least(values: np.ndarray, k: int) -> np.ndarray:
    """``[#{v >= j} for j = 0..k]``."""
    hist = np.bincount(np.minimum(values, k), minlength=k + 1)
    return hist[::-1].cumsum()[::-1]


def _at_most(values: np.ndarray, k: int) -> np.ndarray:
    """``[#{v <= j} for j = 0..k]``."""
    return np.bincount(np.minimum(values, k + 1), minlength=k + 2)[: k + 1].cumsum()


def prepare(attempts: pd.DataFrame, plan: pd.DataFrame) -> Prepared:
    """The :class:`Prepared` of (attempts, plan): shared inside :func:`shared_preparation`, fresh outside it."""
    memo = getattr(_LOCAL, "memo", None)
    if memo is None:
        return Prepared(attempts, plan)
    key = (id(attempts), id(plan))
    hit = memo.get(key)
    if hit is None or hit.source is not attempts or hit.plan is not plan:
        hit = memo[key] = Prepared(attempts, plan)
    return hit


def counted_attempts(attempts: pd.DataFrame, *, plan: pd.DataFrame) -> pd.DataFrame:
    """The attempts that enter metrics: tasks of ``plan``, numbered up to their planned repeats.

    Returns ``attempts`` itself when nothing needs to go (no copy).
    """
    return prepare(attempts, plan).counted


def k_eligible_tasks(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int) -> np.ndarray:
    """Per planned task, in plan order: are attempts 1..k all present and eligible (k-eligible)?

    Parameters
    ----------
    attempts : DataFrame
        Attempt records (``task_id``, ``attempt``, ``success``, ``agent_eligible``); rows of
        tasks outside ``plan`` and above a task's planned repeats are ignored.
    plan : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task.
    k : int
        The prefix length (1 for pass@1).

    Returns
    -------
    ndarray of bool
        One entry per row of ``plan``.
    """
    return prepare(attempts, plan).k_eligible(int(k))


def prefix_outcomes(attempts: pd.DataFrame, *, plan: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per k-eligible task, in plan order: ``any`` and ``all`` success among attempts 1..k.

    The task-level outcomes of pass@k (``any``) and pass^k (``all``), indexed by task id
    (object dtype); the paired comparison pairs tasks on them.
    """
    p = prepare(attempts, plan)
    k = int(k)
    size, won = p.prefix(k)
    eligible = k_eligible_mask(size, k)
    ids = plan["task_id"].astype(object).to_numpy()[eligible]
    return pd.DataFrame({"any": won[eligible] > 0, "all": won[eligible] == k}, index=pd.Index(ids, dtype=object))
