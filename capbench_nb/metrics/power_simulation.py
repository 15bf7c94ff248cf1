"""Power of the paired exact McNemar test by simulation, to check :func:`capbench_nb.metrics.power.power`.

Replicates of the planning model of :mod:`capbench_nb.metrics.power` are drawn
and each is tested with the exact McNemar test; the rejection rate is the
simulated power.  The same check with the project's simulator as the source of
the two runs is :mod:`capbench_nb.simulation.power_check`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import betaincinv, ndtr

from capbench_nb.metrics.stats import paired_difference_interval
from capbench_nb.metrics.power import (
    DEFAULT_CONCENTRATION,
    beta_mean_for,
    check_common,
    mcnemar_critical_values,
    metric_k,
    paired_cells,
)

__all__ = ["SimulatedPower", "simulate_power", "simulated_power", "check_replicates", "simulate_noninferiority"]


@dataclass(frozen=True)
class SimulatedPower:
    """Power estimated by simulation: the rejection rate, its Monte Carlo standard error, and what was simulated."""

    power: float
    se: float
    n_sim: int
    n_tasks: int
    mean_pairs: float
    mean_discordant: float

    def to_dict(self) -> dict:
        return asdict(self)



def _reject(b: np.ndarray, c: np.ndarray, alpha: float) -> np.ndarray:
    m = b + c
    crit = mcnemar_critical_values(m, alpha)
    return (m > 0) & (np.minimum(b, c) <= crit)


def _simulate_model(n: int, p_a: float, p_b: float, *, metric: str, k: int, alpha: float, discordance, rho,
                    task_correlation: float, concentration: float, pair_rate: float, n_sim: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if discordance is not None or rho is not None:
        cells = paired_cells(p_a, p_b, metric=metric, k=k, discordance=discordance, rho=rho)
        probs = np.array([cells.both, cells.a_only, cells.b_only, cells.neither]) * pair_rate
        probs = np.append(probs, max(0.0, 1.0 - probs.sum()))
        counts = rng.multinomial(n, probs / probs.sum(), size=n_sim)
        return counts[:, 1], counts[:, 2], counts[:, :4].sum(axis=1)
    mu_a = beta_mean_for(p_a, metric=metric, k=k, concentration=concentration)
    mu_b = beta_mean_for(p_b, metric=metric, k=k, concentration=concentration)
    b_out, c_out, pairs = np.empty(n_sim, "int64"), np.empty(n_sim, "int64"), np.empty(n_sim, "int64")
    chunk = max(1, 400_000 // max(1, n * k))
    r = float(task_correlation)
    for start in range(0, n_sim, chunk):
        size = min(chunk, n_sim - start)
        za = rng.standard_normal((size, n))
        zb = r * za + math.sqrt(max(0.0, 1 - r * r)) * rng.standard_normal((size, n))
        pa = betaincinv(mu_a * concentration, (1 - mu_a) * concentration, ndtr(za))
        pb = betaincinv(mu_b * concentration, (1 - mu_b) * concentration, ndtr(zb))
        # k attempts per task and run, independent given the task
        ya = rng.random((size, n, k)) < pa[..., None]
        yb = rng.random((size, n, k)) < pb[..., None]
        if metric == "pass^k":
            ya, yb = ya.all(axis=2), yb.all(axis=2)
        else:  # pass@1 (k = 1) and pass@k
            ya, yb = ya.any(axis=2), yb.any(axis=2)
        paired = rng.random((size, n)) < pair_rate
        b_out[start:start + size] = (ya & ~yb & paired).sum(axis=1)
        c_out[start:start + size] = (~ya & yb & paired).sum(axis=1)
        pairs[start:start + size] = paired.sum(axis=1)
    return b_out, c_out, pairs


def simulated_power(b: np.ndarray, c: np.ndarray, pairs: np.ndarray, *, alpha: float, n_tasks: int) -> SimulatedPower:
    """The :class:`SimulatedPower` of simulated replicates: per replicate the discordant counts ``b``
    (A only) and ``c`` (B only) and the number of paired tasks, each tested with the exact McNemar
    test at level ``alpha``."""
    rejected = _reject(b, c, alpha)
    rate = float(rejected.mean())
    n_sim = len(rejected)
    return SimulatedPower(power=rate, se=math.sqrt(rate * (1 - rate) / n_sim), n_sim=n_sim, n_tasks=n_tasks,
                          mean_pairs=float(pairs.mean()), mean_discordant=float((b + c).mean()))


def check_replicates(n_tasks: int, n_sim: int, alpha: float) -> None:
    """Raise ValueError unless ``n_tasks`` and ``n_sim`` are integers >= 1 and ``alpha`` lies in (0, 1)."""
    if type(n_tasks) is not int or n_tasks < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {n_tasks!r}")
    if type(n_sim) is not int or n_sim < 1:
        raise ValueError(f"n_sim must be an integer >= 1, got {n_sim!r}")
    check_common(alpha, 1.0, "exact")


def simulate_power(n_tasks: int, p_a: float, p_b: float, *, metric: str = "pass@1", k: int = 1,
                   alpha: float = 0.05, discordance: float | None = None, rho: float | None = None,
                   task_correlation: float = 0.0, concentration: float = DEFAULT_CONCENTRATION,
                   pair_rate: float = 1.0, n_sim: int = 2000, seed: int = 0) -> SimulatedPower:
    """Power of the exact McNemar test by simulating the module's model, to check :func:`power`.

    With ``discordance`` or ``rho``, multinomial paired tables (unpaired tasks
    a fifth cell); otherwise per-task success probabilities from the
    Gaussian-copula Beta model, k Bernoulli attempts per task and run, and
    pairing with probability ``pair_rate``.  Every replicate is tested with the
    exact McNemar test at level ``alpha``.  The same check with the project's
    simulator as the source of the two runs is
    :func:`capbench_nb.simulation.power_check.simulate_power_with_simulator`.

    Returns
    -------
    SimulatedPower
        ``power`` (rejection rate), ``se`` (its binomial standard error),
        ``n_sim``, ``n_tasks``, ``mean_pairs`` and ``mean_discordant``.
    """
    k = metric_k(metric, k)
    check_replicates(n_tasks, n_sim, alpha)
    check_common(alpha, pair_rate, "exact")
    rng = np.random.default_rng(seed)
    b, c, pairs = _simulate_model(n_tasks, p_a, p_b, metric=metric, k=k, alpha=alpha, discordance=discordance,
                                  rho=rho, task_correlation=task_correlation, concentration=concentration,
                                  pair_rate=pair_rate, n_sim=n_sim, rng=rng)
    return simulated_power(b, c, pairs, alpha=alpha, n_tasks=n_tasks)


def simulate_noninferiority(n_tasks: int, discordance: float, margin: float, *, alpha: float = 0.05,
                            p: float = 0.5, n_sim: int = 2000, seed: int = 0) -> SimulatedPower:
    """How often the regression gate's test passes a metric that did not change, by simulation.

    Checks :func:`capbench_nb.metrics.power.noninferiority_tasks`: ``n_sim``
    paired tables of ``n_tasks`` tasks are drawn from the multinomial with a
    true difference of 0 (both runs at ``p``, A only = B only =
    ``discordance / 2``), and each is tested as the gate does (spec section
    15): Newcombe's interval at confidence ``1 - 2 alpha``, a pass when its
    lower limit lies above ``-margin``.  ``power`` is the share of passes.
    """
    check_replicates(n_tasks, n_sim, alpha)
    psi = float(discordance)
    if not 0.0 < psi <= 2 * min(p, 1 - p):
        raise ValueError(f"discordance must lie in (0, {2 * min(p, 1 - p):g}] with p = {p!r}, got {discordance!r}")
    probs = np.array([p - psi / 2, psi / 2, psi / 2, 1 - p - psi / 2])
    counts = np.random.default_rng(seed).multinomial(n_tasks, probs / probs.sum(), size=n_sim)
    tables, inverse = np.unique(counts, axis=0, return_inverse=True)
    lows = np.array([paired_difference_interval(*map(int, t), confidence=1 - 2 * alpha)[0] for t in tables])
    passed = lows[np.asarray(inverse).reshape(-1)] > -margin
    rate = float(passed.mean())
    return SimulatedPower(power=rate, se=math.sqrt(rate * (1 - rate) / n_sim), n_sim=n_sim, n_tasks=n_tasks,
                          mean_pairs=float(n_tasks), mean_discordant=float(counts[:, 1:3].sum(axis=1).mean()))
