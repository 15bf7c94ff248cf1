r"""Power planning for paired comparisons of two runs: how many tasks (and repeats)?

Question answered: two agents A and B will be run on the same n tasks; how large
must n be for the paired test of :mod:`capbench_nb.metrics.comparison` (the exact
McNemar test, two-sided, level :math:`\alpha`) to detect a difference
:math:`D = p_B - p_A` in pass@1, pass@k or pass^k with probability (power) P?

The model
---------
Each task gives one binary outcome per run for the metric: :math:`Y = 1` when
attempt 1 succeeded (pass@1), when attempts 1..k all succeeded (pass^k), or
when any of them did (pass@k).  Tasks are a random sample from a population of
tasks, so the pairs :math:`(Y_A, Y_B)` are independent draws from a 2x2 table
with cell probabilities :math:`p_{11}, p_{10}, p_{01}, p_{00}` (A and B, A only,
B only, neither), :math:`p_{10} + p_{01} = \psi` the *discordance* and
:math:`p_{01} - p_{10} = D`.  The marginals :math:`p_A, p_B` (the metric values)
do not fix :math:`\psi`; it comes from one of, in order of precedence:

``discordance``
    :math:`\psi` itself, e.g. observed in a pilot comparison
    (:func:`discordance_from`: ``(a_only + b_only) / n_pairs``).
``rho``
    The phi correlation of :math:`Y_A` and :math:`Y_B`:
    :math:`p_{11} = p_A p_B + \rho\sqrt{p_A(1-p_A)p_B(1-p_B)}`.
the latent-difficulty model (default)
    Run s succeeds on each attempt of task t with probability
    :math:`p_s(t) = F^{-1}_{s}(\Phi(Z_s(t)))`, :math:`F_s` the Beta
    distribution with mean :math:`\mu_s` and concentration :math:`\kappa`
    (``concentration``; :math:`\alpha = \mu\kappa`, :math:`\beta = (1-\mu)\kappa`),
    and :math:`(Z_A, Z_B)` standard bivariate normal with correlation
    ``task_correlation`` (a Gaussian copula: how much the two agents find the
    same tasks hard).  Attempts are independent given the task, and the runs
    are independent given the task, so :math:`P(Y_s = 1 \mid t) = h(p_s(t))`
    with :math:`h(p) = p` (pass@1), :math:`p^k` (pass^k) or
    :math:`1 - (1-p)^k` (pass@k).  :math:`\mu_s` is solved so that
    :math:`E[h(p_s)]` equals the given metric value (Beta moments in closed
    form), and :math:`p_{11} = E[h(p_A)h(p_B)]` by Gauss-Hermite quadrature.
    ``task_correlation = 0`` (the default) makes :math:`Y_A` and :math:`Y_B`
    independent: the most discordant, hence most conservative, case among
    non-negative correlations, and exactly how the project's simulator draws
    two runs with different seeds (:func:`capbench_nb.simulation.writer.build_run`
    draws every task's probability from the run's seed).  With 1, both
    agents rank tasks alike and far fewer tasks are needed; estimate
    :math:`\psi` from a pilot when you can.

Tasks lost to pairing (an attempt that is missing or ineligible in either run)
enter as ``pair_rate``, the probability that a planned task is paired.  Each
planned task is then discordant with probability ``pair_rate`` :math:`\cdot\,\psi`
independently, so the count of discordant pairs among n planned tasks is
:math:`M \sim \mathrm{Binomial}(n, r\psi)`, and given :math:`M = m` the "B only"
count is :math:`\mathrm{Binomial}(m, \pi)`, :math:`\pi = p_{01}/\psi`.  Sample
sizes are *planned tasks*.

Power
-----
``method="exact"`` (default): the unconditional power of the exact
conditional McNemar test,

.. math::

    \text{power}(n) = \sum_m \binom{n}{m}(r\psi)^m (1-r\psi)^{n-m}\,
        \bigl[F_\pi(c_m) + 1 - F_\pi(m - c_m - 1)\bigr],

:math:`c_m = \max\{x : 2F(x; m, 1/2) \le \alpha\}` the critical value
(no rejection when there is none), :math:`F_\pi` the Binomial(m, pi)
distribution function; computed exactly as in Suissa and Shuster (1991).  The
power of an exact test is a saw-tooth in n: :func:`required_tasks` returns the
smallest n whose power reaches the target, and a few larger n may fall a
little short of it.

``method="normal"``: Connor's (1987) normal approximation for the paired
design, with :math:`n_p = r n` paired tasks,

.. math::

    \text{power} = \Phi\!\left(\frac{|D|\sqrt{n_p} - z_{1-\alpha/2}\sqrt{\psi}}{\sqrt{\psi - D^2}}\right),
    \qquad
    n_p = \frac{\bigl(z_{1-\alpha/2}\sqrt{\psi} + z_{P}\sqrt{\psi - D^2}\bigr)^2}{D^2}.

:func:`capbench_nb.metrics.power_simulation.simulate_power` checks either by
simulating the model; :func:`capbench_nb.simulation.power_check.simulate_power_with_simulator`
checks it with the project's simulator, paired by the comparison's own code.

References
----------
R. J. Connor, "Sample size for testing differences in proportions for the
paired-sample design", Biometrics 43 (1987) 207-211.
O. S. Miettinen, "The matched pairs design in the case of all-or-none
responses", Biometrics 24 (1968) 339-352.
S. Suissa, J. J. Shuster, "The 2 x 2 matched-pairs trial: exact unconditional
design and analysis", Biometrics 47 (1991) 361-372.
Q. McNemar, Psychometrika 12 (1947) 153-157.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.special import betaincinv, ndtr, ndtri
from scipy.stats import binom

from capbench_nb.metrics.registry import paired_rates, task_outcome

__all__ = [
    "PairedCells",
    "paired_cells",
    "power",
    "required_tasks",
    "metric_k",
    "check_common",
    "planning_table",
    "discordance_from",
    "planning_from_comparison",
    "beta_mean_for",
    "mcnemar_critical_values",
    "noninferiority_tasks",
]

METRICS = tuple(m.name for m in paired_rates())
#: Default Beta concentration of per-task success probabilities: the simulator's Beta(1.5, 1.0).
DEFAULT_CONCENTRATION = 2.5
_NODES = 96  # Gauss-Hermite nodes per dimension


@dataclass(frozen=True)
class PairedCells:
    """Cell probabilities of the task-level paired table (A and B, A only, B only, neither)."""

    both: float
    a_only: float
    b_only: float
    neither: float

    @property
    def p_a(self) -> float:
        return self.both + self.a_only

    @property
    def p_b(self) -> float:
        return self.both + self.b_only

    @property
    def difference(self) -> float:
        """B minus A."""
        return self.b_only - self.a_only

    @property
    def discordance(self) -> float:
        return self.a_only + self.b_only

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- the model


def metric_k(metric: str, k: int) -> int:
    """The k a metric is counted at (1 for pass@1), after checking the metric name and k; ValueError otherwise."""
    if task_outcome(metric).first == "1":
        return 1
    if type(k) is not int or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return k


def _check_prob(name: str, value: float, *, open_: bool = True) -> float:
    value = float(value)
    ok = 0.0 < value < 1.0 if open_ else 0.0 <= value <= 1.0
    if not ok:
        raise ValueError(f"{name} must lie in {'(0, 1)' if open_ else '[0, 1]'}, got {value!r}")
    return value


def _beta_moment(alpha: float, beta: float, metric: str, k: int) -> float:
    """E[h(p)] for p ~ Beta(alpha, beta): E[p], E[p^k] or 1 - E[(1-p)^k], in closed form (by the metric's
    task outcome: one attempt, all of k, any of k)."""
    outcome = task_outcome(metric)
    if outcome.first == "1":
        return alpha / (alpha + beta)
    if outcome.rule == "all":
        return math.prod((alpha + j) / (alpha + beta + j) for j in range(k))
    return 1.0 - math.prod((beta + j) / (alpha + beta + j) for j in range(k))


def beta_mean_for(value: float, *, metric: str = "pass@1", k: int = 1,
                  concentration: float = DEFAULT_CONCENTRATION) -> float:
    r"""The per-attempt mean success :math:`\mu` whose Beta model gives ``metric`` = ``value``.

    Solves :math:`E[h(p)] = \text{value}` for :math:`p \sim \mathrm{Beta}(\mu\kappa, (1-\mu)\kappa)`
    (the moment is increasing in :math:`\mu`).
    """
    k = metric_k(metric, k)
    value = _check_prob("the metric value", value)
    if concentration <= 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}")
    if task_outcome(metric).first == "1":
        return value

    def gap(mu: float) -> float:
        return _beta_moment(mu * concentration, (1 - mu) * concentration, metric, k) - value

    return float(brentq(gap, 1e-12, 1 - 1e-12, xtol=1e-14, rtol=1e-13, maxiter=500))


def _h(p: np.ndarray, metric: str, k: int) -> np.ndarray:
    outcome = task_outcome(metric)
    if outcome.first == "1":
        return p
    if outcome.rule == "all":
        return p**k
    return 1.0 - (1.0 - p) ** k


def _latent_both(mu_a: float, mu_b: float, *, metric: str, k: int, concentration: float,
                 task_correlation: float) -> float:
    """E[h(p_A) h(p_B)] under the Gaussian-copula Beta model (Gauss-Hermite quadrature)."""
    e_a = _beta_moment(mu_a * concentration, (1 - mu_a) * concentration, metric, k)
    e_b = _beta_moment(mu_b * concentration, (1 - mu_b) * concentration, metric, k)
    r = float(task_correlation)
    if r == 0.0:
        return e_a * e_b
    x, w = np.polynomial.hermite_e.hermegauss(_NODES)
    w = w / math.sqrt(2 * math.pi)
    za = x[:, None]
    zb = r * x[:, None] + math.sqrt(max(0.0, 1 - r * r)) * x[None, :]
    ha = _h(betaincinv(mu_a * concentration, (1 - mu_a) * concentration, ndtr(za)), metric, k)
    hb = _h(betaincinv(mu_b * concentration, (1 - mu_b) * concentration, ndtr(zb)), metric, k)
    # 96 nodes: the marginal moments come out within 1e-5 of the closed forms even for
    # a U-shaped Beta (concentration 0.5) and pass^5; typically within 1e-12.
    return float(np.sum(w[:, None] * w[None, :] * ha * hb))


def paired_cells(p_a: float, p_b: float, *, metric: str = "pass@1", k: int = 1, discordance: float | None = None,
                 rho: float | None = None, task_correlation: float = 0.0,
                 concentration: float = DEFAULT_CONCENTRATION) -> PairedCells:
    """The task-level paired table implied by the metric values and the joint model (module docstring).

    Parameters
    ----------
    p_a, p_b : float
        The metric's value for run A and run B, in (0, 1).
    metric : {"pass@1", "pass@k", "pass^k"}
    k : int
        k of pass@k / pass^k (ignored for pass@1).
    discordance : float, optional
        :math:`\\psi = P(\\text{A only}) + P(\\text{B only})`; needs
        ``|p_b - p_a| <= psi <= min(p_a + p_b, 2 - p_a - p_b)``.
    rho : float, optional
        Phi correlation of the two runs' task outcomes (used when ``discordance`` is None).
    task_correlation : float, default 0
        Correlation of the latent task difficulty in the Beta model, in [0, 1]
        (used when both ``discordance`` and ``rho`` are None).
    concentration : float, default 2.5
        Beta concentration of per-task success probabilities (the simulator's default).

    Raises
    ------
    ValueError
        Probabilities outside (0, 1), or a discordance or rho that no table with these marginals has.
    """
    k = metric_k(metric, k)
    p_a, p_b = _check_prob("p_a", p_a), _check_prob("p_b", p_b)
    lo, hi = max(0.0, p_a + p_b - 1.0), min(p_a, p_b)  # Frechet bounds of p11
    if discordance is not None:
        psi = float(discordance)
        both = (p_a + p_b - psi) / 2
        if not (lo - 1e-12 <= both <= hi + 1e-12):
            raise ValueError(f"discordance {psi!r} is impossible with p_a = {p_a}, p_b = {p_b}: it must lie in "
                             f"[{abs(p_b - p_a):.6g}, {min(p_a + p_b, 2 - p_a - p_b):.6g}]")
    elif rho is not None:
        both = p_a * p_b + float(rho) * math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
        if not (lo - 1e-12 <= both <= hi + 1e-12):
            raise ValueError(f"rho {rho!r} is impossible with p_a = {p_a}, p_b = {p_b}")
    else:
        if not 0.0 <= task_correlation <= 1.0:
            raise ValueError(f"task_correlation must lie in [0, 1], got {task_correlation!r}")
        mu_a = beta_mean_for(p_a, metric=metric, k=k, concentration=concentration)
        mu_b = beta_mean_for(p_b, metric=metric, k=k, concentration=concentration)
        both = _latent_both(mu_a, mu_b, metric=metric, k=k, concentration=concentration,
                            task_correlation=task_correlation)
    both = min(max(both, lo), hi)
    a_only, b_only = p_a - both, p_b - both
    return PairedCells(both=both, a_only=max(a_only, 0.0), b_only=max(b_only, 0.0),
                       neither=max(1.0 - both - a_only - b_only, 0.0))


# --------------------------------------------------------------------------- power


def mcnemar_critical_values(m: Any, alpha: float) -> np.ndarray:
    """For each discordant count m: the largest x with ``2 * F(x; m, 1/2) <= alpha`` (-1 when none).

    The exact McNemar test (:func:`capbench_nb.metrics.stats.mcnemar_exact`) rejects at
    level alpha exactly when ``min(b, c) <= c_m``.
    """
    m = np.asarray(m, dtype="int64")
    x = binom.ppf(alpha / 2, m, 0.5)
    x = np.where(np.isnan(x), -1, x).astype("int64")
    for _ in range(2):  # settle rounding at the boundary: the test's own expression decides
        x = np.where((x >= 0) & (2.0 * binom.cdf(x, m, 0.5) > alpha), x - 1, x)
    x = np.where(2.0 * binom.cdf(x + 1, m, 0.5) <= alpha, x + 1, x)
    return x


def _exact_power(n: int, psi: float, pi: float, alpha: float) -> float:
    """Unconditional power of the exact McNemar test; discordant count ~ Binomial(n, psi)."""
    if n <= 0 or psi <= 0:
        return 0.0
    mean, sd = n * psi, math.sqrt(n * psi * (1 - psi))
    lo, hi = max(0, int(mean - 12 * sd) - 5), min(n, int(mean + 12 * sd) + 5)
    m = np.arange(lo, hi + 1)
    weight = binom.pmf(m, n, psi)
    c = mcnemar_critical_values(m, alpha)
    reject = np.where(c >= 0, binom.cdf(c, m, pi) + binom.sf(m - c - 1, m, pi), 0.0)
    return float(min(1.0, np.sum(weight * reject)))


def _normal_power(n: float, cells: PairedCells, alpha: float, pair_rate: float) -> float:
    d, psi = abs(cells.difference), cells.discordance
    n_pairs = n * pair_rate
    if n_pairs <= 0 or psi <= 0:
        return 0.0
    z = ndtri(1 - alpha / 2)
    spread = math.sqrt(max(psi - d * d, 1e-300))
    return float(ndtr((d * math.sqrt(n_pairs) - z * math.sqrt(psi)) / spread))


def check_common(alpha: float, pair_rate: float, method: str) -> None:
    """Raise ValueError unless ``alpha`` lies in (0, 1), ``pair_rate`` in (0, 1] and ``method`` is exact or normal."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not 0.0 < pair_rate <= 1.0:
        raise ValueError(f"pair_rate must lie in (0, 1], got {pair_rate!r}")
    if method not in ("exact", "normal"):
        raise ValueError(f"method must be 'exact' or 'normal', got {method!r}")


def _power_of(n: int, cells: PairedCells, alpha: float, pair_rate: float, method: str) -> float:
    if method == "normal":
        return _normal_power(n, cells, alpha, pair_rate)
    psi = cells.discordance
    pi = cells.b_only / psi if psi > 0 else 0.5
    return _exact_power(int(n), pair_rate * psi, pi, alpha)


def power(n_tasks: int, p_a: float, p_b: float, *, metric: str = "pass@1", k: int = 1, alpha: float = 0.05,
          discordance: float | None = None, rho: float | None = None, task_correlation: float = 0.0,
          concentration: float = DEFAULT_CONCENTRATION, pair_rate: float = 1.0, method: str = "exact") -> float:
    """Power of the two-sided exact McNemar test with ``n_tasks`` planned tasks.

    Parameters are those of :func:`paired_cells` (the model) and: ``alpha``
    (two-sided level), ``pair_rate`` (probability that a planned task is
    paired, i.e. eligible in both runs), ``method`` (``"exact"`` or
    ``"normal"``, see the module docstring).  With ``p_a == p_b`` this is the
    test's actual size (at most alpha for the exact method).
    """
    check_common(alpha, pair_rate, method)
    if type(n_tasks) is not int or n_tasks < 0:
        raise ValueError(f"n_tasks must be an integer >= 0, got {n_tasks!r}")
    cells = paired_cells(p_a, p_b, metric=metric, k=k, discordance=discordance, rho=rho,
                         task_correlation=task_correlation, concentration=concentration)
    return _power_of(n_tasks, cells, alpha, pair_rate, method)


def required_tasks(p_a: float, p_b: float, *, metric: str = "pass@1", k: int = 1, power: float = 0.8,
                   alpha: float = 0.05, discordance: float | None = None, rho: float | None = None,
                   task_correlation: float = 0.0, concentration: float = DEFAULT_CONCENTRATION,
                   pair_rate: float = 1.0, method: str = "exact", max_tasks: int = 1_000_000) -> int:
    """The number of planned tasks for the paired exact McNemar test to detect ``p_b - p_a`` with ``power``.

    Each task is run ``k`` times (once for pass@1) by both agents.  Parameters
    as in :func:`power`.  For ``method="exact"``: the smallest n whose exact
    power reaches ``power`` (found by bisection, then a downward scan of the
    10% below it, since exact power saw-tooths in n).  For ``"normal"``:
    Connor's (1987) formula, divided by ``pair_rate`` and rounded up.

    Raises
    ------
    ValueError
        ``p_a == p_b`` (nothing to detect), or more than ``max_tasks`` needed.
    """
    check_common(alpha, pair_rate, method)
    target = _check_prob("power", power)
    cells = paired_cells(p_a, p_b, metric=metric, k=k, discordance=discordance, rho=rho,
                         task_correlation=task_correlation, concentration=concentration)
    d, psi = abs(cells.difference), cells.discordance
    if d <= 1e-12:
        raise ValueError("p_a and p_b are equal: there is no difference to detect")
    z_a, z_b = ndtri(1 - alpha / 2), ndtri(target)
    n_pairs = (z_a * math.sqrt(psi) + z_b * math.sqrt(max(psi - d * d, 0.0))) ** 2 / (d * d)
    normal = max(1, math.ceil(n_pairs / pair_rate - 1e-9))
    if method == "normal":
        if normal > max_tasks:
            raise ValueError(f"more than max_tasks = {max_tasks} tasks would be needed ({normal})")
        return normal

    def reaches(n: int) -> bool:
        return _power_of(n, cells, alpha, pair_rate, "exact") >= target

    high = max(2, normal)
    while not reaches(high):
        if high >= max_tasks:
            raise ValueError(f"more than max_tasks = {max_tasks} tasks would be needed")
        high = min(max_tasks, high * 2)
    low = 0  # power(0) = 0 < target
    while high - low > 1:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid
    for n in range(max(1, high - max(50, high // 10)), high):
        if reaches(n):
            return n
    return high


def noninferiority_tasks(discordance: float | None, margin: float, *, alpha: float = 0.05,
                         power: float = 0.8) -> int | None:
    r"""Paired tasks for a one-sided non-inferiority test at margin D to pass with ``power`` when nothing changed.

    The regression gate (spec section 15) passes a metric when the lower limit
    of the :math:`1 - 2\alpha` interval of :math:`\Delta = p_B - p_A` lies above
    :math:`-D`.  With a true difference of 0 and discordance :math:`\psi`
    (:math:`p_{10} + p_{01}`), the paired estimate has variance
    :math:`(\psi - \Delta^2)/n = \psi/n` (Connor 1987), so in the normal
    approximation the lower limit is :math:`\hat\Delta - z_{1-\alpha}\sqrt{\psi/n}`
    and it lies above :math:`-D` with probability
    :math:`\Phi(D\sqrt{n/\psi} - z_{1-\alpha})`.  That reaches ``power`` P at

    .. math::

        n = \left\lceil \frac{(z_{1-\alpha} + z_{P})^2\,\psi}{D^2} \right\rceil .

    Parameters
    ----------
    discordance : float or None
        :math:`\psi`, e.g. an observed ``(a_only + b_only) / n_pairs``.
    margin : float
        D, the largest tolerated drop.
    alpha : float, default 0.05
        One-sided level.
    power : float, default 0.8

    Returns
    -------
    int or None
        None when :math:`\psi` is None or 0 or D is 0 (no finite answer).
        :func:`capbench_nb.metrics.power_simulation.simulate_noninferiority` checks it by simulation.
    """
    check_common(alpha, 1.0, "exact")
    target = _check_prob("power", power)
    if discordance is None or discordance <= 0 or margin <= 0:
        return None
    z = ndtri(1 - alpha) + ndtri(target)
    return int(math.ceil(z * z * float(discordance) / (margin * margin)))


# --------------------------------------------------------------------------- planning helpers


def discordance_from(doc: dict, metric: str = "pass@1") -> float | None:
    """Observed discordance ``(a_only + b_only) / n_pairs`` of a comparison document (None without pairs)."""
    entry = doc["paired"][metric]
    n = entry["n_pairs"]
    return (entry["a_only"] + entry["b_only"]) / n if n else None


def planning_table(mean_a: float, mean_b: float, *, ks: tuple[int, ...] = (1, 2, 3, 5), power: float = 0.8,
                   alpha: float = 0.05, task_correlation: float = 0.0,
                   concentration: float = DEFAULT_CONCENTRATION, pair_rate: float = 1.0) -> pd.DataFrame:
    """Tasks and attempts needed to detect a per-attempt improvement, for pass@1 and pass^k.

    Under the latent-difficulty model with per-attempt mean success
    ``mean_a`` and ``mean_b`` (the Beta means), one row per k in ``ks``:
    the metric (``pass@1`` for k = 1, else ``pass^k``), the two metric values
    it implies, their difference, the discordance, the planned tasks needed
    (:func:`required_tasks`, exact) and the attempts per run (tasks x k).

    Returns
    -------
    DataFrame
        ``metric, k, p_a, p_b, difference, discordance, tasks, attempts_per_run``.
    """
    rows = []
    for k in ks:
        metric = "pass@1" if k == 1 else "pass^k"
        a = _beta_moment(mean_a * concentration, (1 - mean_a) * concentration, metric, k)
        b = _beta_moment(mean_b * concentration, (1 - mean_b) * concentration, metric, k)
        cells = paired_cells(a, b, metric=metric, k=k, task_correlation=task_correlation, concentration=concentration)
        try:
            n = required_tasks(a, b, metric=metric, k=k, power=power, alpha=alpha, task_correlation=task_correlation,
                               concentration=concentration, pair_rate=pair_rate)
        except ValueError:
            n = None
        rows.append({"metric": "pass@1" if k == 1 else f"pass^{k}", "k": k, "p_a": a, "p_b": b,
                     "difference": b - a, "discordance": cells.discordance, "tasks": n,
                     "attempts_per_run": None if n is None else n * k})
    frame = pd.DataFrame(rows, columns=["metric", "k", "p_a", "p_b", "difference", "discordance", "tasks",
                                        "attempts_per_run"])
    frame["tasks"] = pd.array(frame["tasks"].tolist(), dtype="Int64")
    frame["attempts_per_run"] = pd.array(frame["attempts_per_run"].tolist(), dtype="Int64")
    return frame


def planning_from_comparison(doc: dict, *, differences: tuple[float, ...] = (0.05, 0.10, 0.15), power: float = 0.8,
                             alpha: float = 0.05, fallback: float = 0.5) -> pd.DataFrame:
    """Planned tasks needed to detect each difference in pass@1, from a comparison as a pilot.

    The baseline is run A's paired pass@1 (``fallback`` when it is missing, 0 or 1).
    Two answers per difference: with independent runs (``task_correlation = 0``,
    conservative) and with the pilot's observed discordance (null when there is
    none, or when it is smaller than the difference, which no table allows).
    The pilot's pair rate (paired tasks over common tasks) is applied to both.

    Returns
    -------
    DataFrame
        ``baseline, target, difference, discordance_independent, tasks_independent,
        discordance_observed, tasks_observed_discordance, pair_rate``.
    """
    entry = doc["paired"]["pass@1"]
    base = entry["a_value"]
    if base is None or not 0.0 < base < 1.0:
        base = fallback
    common = doc["tasks"]["common"]
    rate = entry["n_pairs"] / common if common and entry["n_pairs"] else 1.0
    observed = discordance_from(doc, "pass@1")
    rows = []
    for d in differences:
        target = base + d if base + d < 1.0 else base - d
        cells = paired_cells(base, target)
        row = {"baseline": base, "target": target, "difference": target - base,
               "discordance_independent": cells.discordance,
               "tasks_independent": required_tasks(base, target, power=power, alpha=alpha, pair_rate=rate),
               "discordance_observed": observed, "tasks_observed_discordance": None, "pair_rate": rate}
        if observed:
            try:
                row["tasks_observed_discordance"] = required_tasks(base, target, power=power, alpha=alpha,
                                                                   discordance=observed, pair_rate=rate)
            except ValueError:
                pass
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["baseline", "target", "difference", "discordance_independent",
                                        "tasks_independent", "discordance_observed", "tasks_observed_discordance",
                                        "pair_rate"])
    for column in ("tasks_independent", "tasks_observed_discordance"):
        frame[column] = pd.array(frame[column].tolist(), dtype="Int64")
    frame["discordance_observed"] = pd.array(frame["discordance_observed"].tolist(), dtype="Float64")
    return frame
