"""The numbers behind a representative subset (spec section 13): apportionment, a Rasch fit, the choice, the estimate.

Pure functions of arrays, so that ``benchmarks/subset_quality.py`` and :mod:`capbench_nb.metrics.subset`
share one code path.  The method, ``stratified-rasch``:

1. *Fit*: a Rasch model (one-parameter logistic IRT; Rasch 1960, and the 2PL of Birnbaum 1968 with
   every discrimination 1) pooled over the training runs, on every eligible attempt 1..k:
   ``P(success | run r, task t) = sigmoid(theta_r - b_t)``, fitted by penalised maximum likelihood
   (ridge priors ``theta ~ N(0, 2^2)``, ``b ~ N(0, 2^2)``, so that a task every run passed or failed
   keeps a finite difficulty) by Newton's method.
2. *Choose*: within each stratum, the tasks sorted by difficulty are sampled systematically (one
   seeded random start ``u``, then every ``m / c``-th task: positions ``floor((j + u) m / c)``), so
   the subset spans each stratum's difficulty range (stratified systematic sampling, Cochran 1977,
   ch. 8; the difficulty-spread idea of tinyBenchmarks' anchors, Polo et al. 2024).
3. *Estimate*: a new run's ability is fitted per stratum, ``theta_s = theta_g + delta_s`` with
   ``delta_s ~ N(0, tau^2)`` shrunk towards its global ability (a random-effects calibration, so a
   scaffold strong on some apps and weak on others is not forced onto one ability); the full-suite
   pass@1 is the mean over every full-suite task of ``sigmoid(theta_s(t) - b_t + e_t)``, with the
   abilities drawn from their Laplace (normal) posterior and ``e_t ~ N(0, sigma_e^2)`` the task-level
   residual the training fit left (a chosen task's own attempts update that prior by a conjugate Beta
   step); the 2.5 and 97.5 percentiles of the draws are the 95% interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import expit

__all__ = ["PRIOR_SD", "TAU", "DRAWS", "apportion", "fit_rasch", "residual_sd", "choose_tasks", "information",
           "estimate_full", "plain_mean"]

#: The ridge prior's standard deviation (logits) for run abilities and task difficulties.
PRIOR_SD = 2.0
#: The prior standard deviation of a run's per-stratum deviation from its global ability (logits).
TAU = 1.0
#: Monte Carlo draws of the estimate's interval.
DRAWS = 4000


def apportion(counts: Mapping[str, int], size: int) -> dict[str, int]:
    """Spec section 13's strata counts: one task per value first, the rest by largest remainder.

    Parameters
    ----------
    counts : mapping
        Each stratum value and its number of tasks, in a stable order (ties are broken by it).
    size : int
        The subset size N.

    Returns
    -------
    dict
        Each value and its chosen count, summing to ``size``.  When ``size`` >= the number of values,
        every value first gets one task; the remaining ``R`` tasks go by the largest-remainder
        (Hamilton) method to the quotas ``R * count_v / total``: ``floor`` of each quota, then one more
        to the largest remainders (ties: the larger count, then the earlier value).  No value gets
        more tasks than it has: a value's excess goes, by the same rule, to the values with room.
        With ``size`` below the number of values, the ``size`` largest values get one each.
    """
    values = list(counts)
    total = sum(counts.values())
    if not 0 < size <= total:
        raise ValueError(f"size {size} outside 1..{total}")
    if size < len(values):
        order = sorted(range(len(values)), key=lambda i: (-counts[values[i]], i))[:size]
        return {v: int(i in order) for i, v in enumerate(values)}
    out = {v: 1 for v in values}
    while (left := size - sum(out.values())) > 0:
        room = [v for v in values if out[v] < counts[v]]
        weight = sum(counts[v] for v in room)
        quota = {v: left * counts[v] / weight for v in room}
        add = {v: min(math.floor(quota[v]), counts[v] - out[v]) for v in room}
        rest = left - sum(add.values())
        ranked = sorted(room, key=lambda v: (-(quota[v] - math.floor(quota[v])), -counts[v], values.index(v)))
        for v in ranked:
            if rest == 0:
                break
            if out[v] + add[v] < counts[v]:
                add[v] += 1
                rest -= 1
        for v in room:
            out[v] += add[v]
    return out


def fit_rasch(n: np.ndarray, s: np.ndarray, *, prior_sd: float = PRIOR_SD) -> tuple[np.ndarray, np.ndarray]:
    """Penalised maximum-likelihood Rasch fit: ``(theta, b)`` for runs x tasks counts.

    ``n[r, t]`` eligible attempts and ``s[r, t]`` successes; the log-likelihood
    ``sum s log p + (n - s) log(1 - p)`` with ``p = sigmoid(theta_r - b_t)`` minus
    ``(sum theta^2 + sum b^2) / (2 prior_sd^2)`` is strictly concave, and is maximised by Newton's
    method with step halving from zero (deterministic; a few iterations on (R + T) parameters).
    """
    n = np.asarray(n, dtype=float)
    s = np.asarray(s, dtype=float)
    runs, tasks = n.shape
    scale = 1.0 / prior_sd ** 2

    def nll(x):
        eta = x[:runs, None] - x[None, runs:]
        return -(s * eta - n * np.logaddexp(0.0, eta)).sum() + 0.5 * scale * (x @ x)

    x = np.zeros(runs + tasks)
    for _ in range(200):
        eta = x[:runs, None] - x[None, runs:]
        p = expit(eta)
        g = n * p - s
        w = n * p * (1 - p)
        grad = np.concatenate([g.sum(axis=1), -g.sum(axis=0)]) + scale * x
        hess = np.zeros((runs + tasks, runs + tasks))
        hess[:runs, :runs] = np.diag(w.sum(axis=1))
        hess[runs:, runs:] = np.diag(w.sum(axis=0))
        hess[:runs, runs:] = -w
        hess[runs:, :runs] = -w.T
        hess += scale * np.eye(runs + tasks)
        step = np.linalg.solve(hess, grad)
        t, before = 1.0, nll(x)
        while nll(x - t * step) > before + 1e-12 and t > 1e-8:
            t /= 2
        x = x - t * step
        if np.abs(t * step).max() < 1e-10:
            break
    return x[:runs].copy(), x[runs:].copy()


def residual_sd(n: np.ndarray, s: np.ndarray, *, prior_sd: float = PRIOR_SD) -> float:
    """The task-level residual (logits) a new run meets, ``sigma_e``: a cross-fitted moment estimate.

    Each training run r in turn is left out: the difficulties are fitted on the others
    (:func:`fit_rasch`), r's one ability on its own counts given them, and its cells' excess variance on
    the probability scale is the mean over cells with ``n >= 1`` of ``(s/n - p)^2 - p(1 - p)/n``.  The
    mean over the runs, floored at 0 and divided by the mean ``p(1 - p)`` (the logistic's slope), is in
    logits; it carries both the run x task interaction and the error of the fitted difficulties.
    """
    n = np.asarray(n, dtype=float)
    s = np.asarray(s, dtype=float)
    excess, slope = [], []
    for r in range(n.shape[0]):
        rows = [q for q in range(n.shape[0]) if q != r]
        _, b = fit_rasch(n[rows], s[rows], prior_sd=prior_sd)
        groups = np.zeros(len(b), dtype=np.int64)
        mode, _ = _fit_agent(b, groups, n[r], s[r], 1, 0.0, prior_sd, 1e-6)
        p = expit(mode[0] + mode[1] - b)
        cell = n[r] > 0
        excess.append(((s[r][cell] / n[r][cell] - p[cell]) ** 2 - p[cell] * (1 - p[cell]) / n[r][cell]).mean())
        slope.append((p[cell] * (1 - p[cell])).mean())
    return float(math.sqrt(max(float(np.mean(excess)), 0.0)) / max(float(np.mean(slope)), 1e-6))


def choose_tasks(b: np.ndarray, strata: Sequence[str], quotas: Mapping[str, int], rng: np.random.Generator,
                 *, weights: np.ndarray | None = None) -> list[int]:
    """Indices of the chosen tasks (ascending): per stratum, systematic sampling over difficulty order.

    Within a value with quota ``c``, the tasks sorted by ``(b, index)`` are laid end to end with lengths
    ``weights`` (default 1 each; :func:`information` gives the Fisher information), and the tasks under
    the points ``(j + u) W / c``, j = 0..c-1, are taken, ``W`` the total length and one ``u ~ U[0, 1)`` per
    value from ``rng`` (drawn in the order of ``quotas``).  A task hit twice gives way to the nearest task
    not yet taken in difficulty order (the later one on a tie).
    """
    w = np.ones(len(b)) if weights is None else np.asarray(weights, dtype=float)
    chosen: list[int] = []
    for value, c in quotas.items():
        members = sorted((i for i, v in enumerate(strata) if v == value), key=lambda i: (float(b[i]), i))
        u = float(rng.random())
        if not c:
            continue
        ends = np.cumsum(w[members])
        taken: list[int] = []
        for j in range(c):
            at = min(int(np.searchsorted(ends, (j + u) * ends[-1] / c, side="right")), len(members) - 1)
            free = [q for q in range(len(members)) if q not in taken]
            taken.append(min(free, key=lambda q: (abs(q - at), -q)))
        chosen += [members[q] for q in taken]
    return sorted(chosen)


def information(theta: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each task's Rasch Fisher information averaged over the training abilities, ``mean_r p(1 - p)``."""
    p = expit(np.asarray(theta)[:, None] - np.asarray(b)[None, :])
    return (p * (1 - p)).mean(axis=0)


def _fit_agent(b: np.ndarray, groups: np.ndarray, n: np.ndarray, s: np.ndarray, n_groups: int,
               center: float, spread: float, tau: float, sigma_e: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """MAP of ``(theta_g, delta_1..delta_S)`` and its covariance, by Newton's method (the problem is convex).

    The covariance is the inverse Hessian with each task's binomial weight ``n p (1 - p)`` divided by
    its overdispersion ``phi_t = 1 + (n_t - 1) p (1 - p) sigma_e^2`` (the variance of a binomial whose
    logit carries a task-level residual of sd ``sigma_e``, to first order; McCullagh and Nelder 1989, 4.5).
    """
    x = np.zeros(1 + n_groups)
    x[0] = center
    prior = np.array([1.0 / spread ** 2] + [1.0 / tau ** 2] * n_groups)
    mean = np.zeros_like(x)
    mean[0] = center
    design = np.zeros((len(b), 1 + n_groups))
    design[:, 0] = 1.0
    design[np.arange(len(b)), 1 + groups] = 1.0

    def nll(v):
        eta = design @ v - b
        return -(s * eta - n * np.logaddexp(0.0, eta)).sum() + 0.5 * (prior * (v - mean) ** 2).sum()

    hess = np.diag(prior)
    for _ in range(100):
        p = expit(design @ x - b)
        grad = design.T @ (n * p - s) + prior * (x - mean)
        hess = design.T @ (design * (n * p * (1 - p))[:, None]) + np.diag(prior)
        step = np.linalg.solve(hess, grad)
        t, before = 1.0, nll(x)
        while nll(x - t * step) > before + 1e-12 and t > 1e-6:
            t /= 2
        x = x - t * step
        if np.abs(t * step).max() < 1e-10:
            break
    p = expit(design @ x - b)
    weight = n * p * (1 - p) / (1 + np.maximum(n - 1, 0) * p * (1 - p) * sigma_e ** 2)
    return x, np.linalg.inv(design.T @ (design * weight[:, None]) + np.diag(prior))


def estimate_full(b: np.ndarray, strata: Sequence[str], observed: Sequence[int], n: np.ndarray, s: np.ndarray, *,
                  theta_mean: float, theta_sd: float, sigma_e: float, tau: float = TAU, draws: int = DRAWS,
                  seed: int = 0) -> tuple[float, float, float]:
    """The estimated full-suite expected pass@1 ``(value, ci_low, ci_high)`` of one run.

    Parameters
    ----------
    b, strata : every full-suite task's difficulty and stratum value.
    observed : the indices of the tasks the run has (the subset), with ``n`` eligible attempts and
        ``s`` successes each.
    theta_mean, theta_sd : the training runs' abilities; the global ability's prior is
        ``N(theta_mean, (2 max(theta_sd, 1))^2)``.
    sigma_e : the task-level residual (:func:`residual_sd`).
    tau : the per-stratum deviation's prior sd; 0 fits one ability (the ``global-rasch`` variant).

    Returns
    -------
    (value, ci_low, ci_high)
        The mean over ``draws`` posterior draws of ``mean_t p_t`` over every full-suite task, and its
        2.5 and 97.5 percentiles: ``p_t = sigmoid(theta_g + delta_s(t) - b_t + e_t)`` for a task not
        observed, ``p_t ~ Beta(m kappa + s_t, (1 - m) kappa + n_t - s_t)`` for an observed one, with
        ``m = sigmoid(theta_g + delta_s(t) - b_t)`` and ``kappa = 1 / (m (1 - m) sigma_e^2) - 1`` (the
        Beta with the residual's variance to first order).
    """
    b = np.asarray(b, dtype=float)
    values = list(dict.fromkeys(strata)) if tau > 0 else ["*"]
    index = {v: i for i, v in enumerate(values)}
    groups_all = np.array([index[v] for v in strata] if tau > 0 else [0] * len(b), dtype=np.int64)
    obs = np.asarray(observed, dtype=np.int64)
    mode, cov = _fit_agent(b[obs], groups_all[obs], np.asarray(n, float), np.asarray(s, float), len(values),
                           theta_mean, 2.0 * max(theta_sd, 1.0), tau if tau > 0 else 1e-6, sigma_e)
    rng = np.random.default_rng(seed)
    params = rng.multivariate_normal(mode, cov, size=draws, method="cholesky")
    ability = params[:, [0]] + params[:, 1:][:, groups_all]
    noise = rng.normal(0.0, sigma_e, size=(draws, len(b))) if sigma_e > 0 else 0.0
    p = expit(ability - b[None, :] + noise)
    if sigma_e > 0 and len(obs):  # a chosen task's own attempts: its p given the model's prior and its counts
        m = np.clip(expit(ability[:, obs] - b[None, obs]), 1e-6, 1 - 1e-6)
        kappa = np.maximum(1.0 / (m * (1 - m) * sigma_e ** 2) - 1.0, 1e-3)
        p[:, obs] = rng.beta(m * kappa + np.asarray(s, float)[None, :],
                             (1 - m) * kappa + (np.asarray(n, float) - np.asarray(s, float))[None, :])
    totals = p.mean(axis=1)
    low, high = np.quantile(totals, [0.025, 0.975])
    return float(totals.mean()), float(low), float(high)


def plain_mean(n: np.ndarray, s: np.ndarray) -> float | None:
    """Successes over eligible attempts, pooled over the given tasks (None with no attempt)."""
    total = float(np.sum(n))
    return None if total == 0 else float(np.sum(s)) / total
