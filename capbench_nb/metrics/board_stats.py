"""The board's statistics over outcome matrices (spec section 10): pair tests, Holm, groups, ranks.

Pure functions of arrays (runs x common tasks), used by :func:`capbench_nb.metrics.board.board`:
:func:`pair_tests` (exact McNemar per pair), :func:`holm_adjust`, :func:`board_groups`,
:func:`board_ranks` and :func:`rank_intervals` (a paired bootstrap of the common tasks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from capbench_nb.metrics.stats import mcnemar_exact

__all__ = ["pair_tests", "holm_adjust", "board_groups", "board_ranks", "rank_intervals"]

#: Bootstrap resamples held in memory at once, as resamples x common tasks cells.
_CHUNK_CELLS = 1 << 22


# =========================================================================== pairs and Holm


def pair_tests(eligible: np.ndarray, success: np.ndarray) -> list[dict]:
    r"""Every pair a < b of runs on one metric: paired tasks, discordant counts and McNemar's p.

    Parameters
    ----------
    eligible, success : bool arrays of shape (N, T)
        Per run and task: in the metric's denominator; succeeded (False outside it).

    Returns
    -------
    list of dict
        ``{"a", "b", "n", "a_only", "b_only", "p"}`` for (0, 1), (0, 2), ..., (N-2, N-1).  Over the
        tasks in both denominators, ``a_only`` = a succeeded and b did not, ``b_only`` the reverse;
        ``p = min(1, 2 P(X <= min(a_only, b_only)))``, :math:`X \sim \mathrm{Binomial}(a\_only +
        b\_only, 1/2)`, and 1 when there is no discordant task (spec sections 9 and 10).
    """
    e = np.asarray(eligible, dtype=np.float64)
    s = np.asarray(success, dtype=bool) & np.asarray(eligible, dtype=bool)
    won = s.astype(np.float64)
    lost = e - won
    both = e @ e.T  # integer counts: exact in float64 far beyond any task count
    only = won @ lost.T  # [a, b]: a succeeded, b failed (and both in the denominator)
    out = []
    for a in range(e.shape[0]):
        for b in range(a + 1, e.shape[0]):
            a_only, b_only = int(only[a, b]), int(only[b, a])
            out.append({"a": a, "b": b, "n": int(both[a, b]), "a_only": a_only, "b_only": b_only,
                        "p": mcnemar_exact(a_only, b_only)})
    return out


def holm_adjust(p: Sequence[float]) -> np.ndarray:
    r"""Holm's step-down adjusted p-values, in the input order.

    With the m p-values sorted ascending :math:`p_{(1)} \le \dots \le p_{(m)}`,

    .. math:: \tilde p_{(i)} = \max_{j \le i} \min\bigl(1, (m - j + 1)\, p_{(j)}\bigr).

    Tied p-values get the same adjusted value whatever their order.  Equal to
    ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]``.

    References
    ----------
    S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6
    (1979) 65-70.
    """
    values = np.asarray(p, dtype=np.float64)
    m = values.size
    if m == 0:
        return values
    order = np.argsort(values, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


# =========================================================================== groups and ranks


def _board_order(values: Sequence[float | None]) -> list[int]:
    """Input positions by board value, highest first; null last; equal values keep input order."""
    return sorted(range(len(values)), key=lambda i: (values[i] is None, -(values[i] or 0.0), i))


def board_groups(values: Sequence[float | None], p_holm: np.ndarray, alpha: float) -> list[list[int]]:
    """Section 10's groups: each anchored by the best run not yet grouped, joined by those not separable from it.

    Parameters
    ----------
    values : sequence of float or None
        Board values per run (input order).
    p_holm : array of shape (N, N)
        Holm-adjusted p of each pair (symmetric; the diagonal is not read).
    alpha : float
        A run joins the anchor's group when its adjusted p against the anchor is >= alpha.

    Returns
    -------
    list of list of int
        Input positions, group 1 first; within a group the anchor first, then board order.
    """
    order = _board_order(values)
    placed: set[int] = set()
    groups = []
    for anchor in order:
        if anchor in placed:
            continue
        group = [anchor] + [r for r in order if r not in placed and r != anchor and p_holm[anchor, r] >= alpha]
        placed.update(group)
        groups.append(group)
    return groups


def board_ranks(values: Sequence[float | None]) -> list[int | None]:
    """Rank = 1 + the number of runs with a strictly higher board value; None for a run without one."""
    known = [v for v in values if v is not None]
    return [None if v is None else 1 + sum(1 for w in known if w > v) for v in values]


def rank_intervals(eligible: np.ndarray, success: np.ndarray, *, resamples: int,
                   seed: int) -> list[list[int] | None]:
    """Each run's 95% rank interval from a paired bootstrap of the common tasks.

    Resample b is ``numpy.random.default_rng(seed).integers(0, T, size=T)``, the b-th such call: T
    task indices drawn with replacement (a task drawn twice counts twice), the same for every run.
    In each resample every run's value is its successes over its denominator on the drawn tasks
    (a run whose denominator is empty there ranks below every run with a value) and its rank is 1 +
    the number of runs with a strictly higher value.  The interval is the 2.5th and 97.5th
    percentiles of the B ranks (numpy's linear interpolation), rounded outwards (floor, ceiling).

    Parameters
    ----------
    eligible, success : bool arrays of shape (N, T)
        The board metric's denominator and successes per run and common task.
    resamples : int
        B; 0 gives no interval.
    seed : int

    Returns
    -------
    list
        ``[low, high]`` per run, or None for every run when ``resamples == 0`` or there is no common
        task.
    """
    e = np.asarray(eligible, dtype=np.float64)
    n_runs, n_tasks = e.shape
    if resamples == 0 or n_tasks == 0:
        return [None] * n_runs
    from scipy.stats import rankdata

    won = (np.asarray(success, dtype=bool) & np.asarray(eligible, dtype=bool)).astype(np.float64)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n_tasks)
    ranks = np.empty((resamples, n_runs), dtype=np.float64)
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        weights = np.empty((rows, n_tasks), dtype=np.float64)
        for i in range(rows):
            weights[i] = np.bincount(rng.integers(0, n_tasks, size=n_tasks), minlength=n_tasks)
        numerator, denominator = weights @ won.T, weights @ e.T  # exact integer sums
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(denominator > 0, numerator / denominator, -np.inf)
        ranks[start:start + rows] = rankdata(-value, method="min", axis=1)
    low, high = np.percentile(ranks, [2.5, 97.5], axis=0)
    return [[int(math.floor(lo)), int(math.ceil(hi))] for lo, hi in zip(low, high)]
