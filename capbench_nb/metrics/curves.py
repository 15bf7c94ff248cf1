"""Reliability curves: pass@j and pass^j for j = 1..k from planned prefixes, and the unbiased estimators."""

from __future__ import annotations

import math

import pandas as pd

from capbench_nb.metrics.inputs import metric_inputs
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.metrics.rates import Rate
from capbench_nb.records.run import Run

__all__ = ["prefix_curve", "prefix_rates", "unbiased_curve", "eligible_counts", "prefix_rates_of", "unbiased_curve_of"]


def prefix_curve(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
                 confidence: float = 0.95) -> pd.DataFrame:
    """pass@j and pass^j for j = 1..k from planned prefixes, each as in :func:`pass_at_k`.

    Each j has its own denominator: the tasks whose attempts 1..j are all
    present and eligible.  Takes a run (k defaulting to ``run.k``) or an attempts table with
    ``plan=`` and ``k=``.

    Returns
    -------
    DataFrame
        One row per j: ``j``, ``metric`` (``"pass@j"`` or ``"pass^j"``) and the
        :class:`Rate` fields.
    """
    attempts, plan, k = metric_inputs(attempts, plan, k, function="prefix_curve", needs_k=True)
    rows = []
    for j, at, hat in prefix_rates(attempts, plan=plan, k=k, confidence=confidence):
        rows.append({"j": j, "metric": "pass@j", **at.to_dict()})
        rows.append({"j": j, "metric": "pass^j", **hat.to_dict()})
    return pd.DataFrame(rows, columns=["j", "metric", "value", "successes", "n", "ci_low", "ci_high", "coverage"])


def prefix_rates(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
                 confidence: float = 0.95) -> list[tuple[int, Rate, Rate]]:
    """``[(j, pass@j, pass^j)]`` for j = 1..k: the values of :func:`prefix_curve`, as :class:`Rate` objects."""
    attempts, plan, k = metric_inputs(attempts, plan, k, function="prefix_rates", needs_k=True)
    return prefix_rates_of(prepare(attempts, plan), k, confidence=confidence)


def prefix_rates_of(p: Prepared, k: int, *, confidence: float = 0.95) -> list[tuple[int, Rate, Rate]]:
    """:func:`prefix_rates` of an already prepared run."""
    plan = p.plan
    counts = None if p.prefixes(k) else p.all_pass_counts(k)
    if counts is not None:  # many tasks times a large k: no prefix table per j
        n, at, hat = counts
        return [(j, Rate.of(int(at[j]), int(n[j]), len(plan), confidence, metric=f"pass@{j}"),
                 Rate.of(int(hat[j]), int(n[j]), len(plan), confidence, metric=f"pass^{j}"))
                for j in range(1, int(k) + 1)]
    out = []
    for j in range(1, int(k) + 1):
        n, at, hat = p.pass_counts(j, keep=j == k)  # (a curve over a huge k keeps no table per j)
        out.append((j, Rate.of(at, n, len(plan), confidence, metric=f"pass@{j}"),
                    Rate.of(hat, n, len(plan), confidence, metric=f"pass^{j}")))
    return out


def eligible_counts(attempts: pd.DataFrame, plan: pd.DataFrame) -> pd.DataFrame:
    """Per planned task with at least one eligible attempt: n eligible attempts and c successes."""
    return _eligible_counts_of(prepare(attempts, plan))


def _eligible_counts_of(p: Prepared) -> pd.DataFrame:
    n, c = p.eligible_counts()
    some = n > 0
    return pd.DataFrame({"n": n[some], "c": c[some]})


def unbiased_curve(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None,
                   max_j: int | None = None) -> pd.DataFrame:
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
    attempts : Run or DataFrame
        A loaded run, or an attempts table with ``plan=``.
    max_j : int, optional
        Cap on j (default: the smallest eligible n).

    Returns
    -------
    DataFrame
        ``j``, ``pass@j``, ``pass^j``, ``tasks`` (number of tasks averaged).
        Empty when no task has an eligible attempt.
    """
    attempts, plan, _ = metric_inputs(attempts, plan, function="unbiased_curve")
    return unbiased_curve_of(prepare(attempts, plan), max_j=max_j)


def unbiased_curve_of(p: Prepared, *, max_j: int | None = None) -> pd.DataFrame:
    """:func:`unbiased_curve` of an already prepared run."""
    counts = _eligible_counts_of(p)
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
