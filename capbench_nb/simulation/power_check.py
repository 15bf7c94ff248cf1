"""Power planning checked against the project's simulator (:mod:`capbench_nb.metrics.power`, simulated).

:func:`capbench_nb.metrics.power_simulation.simulate_power` simulates the planning model
itself; here the two runs of every replicate come from the simulator
(:func:`capbench_nb.simulation.writer.build_run`), A and B with different seeds
and Beta shapes that give the requested metric values, and their tasks are
paired by the comparison's own code
(:func:`capbench_nb.metrics.comparison.paired_outcomes`).  Pairing losses are
the simulator's harness failures: :func:`simulator_pair_rate` is their rate,
the ``pair_rate`` to plan with.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.metrics.comparison import paired_outcomes
from capbench_nb.metrics.power import DEFAULT_CONCENTRATION, beta_mean_for, metric_k
from capbench_nb.metrics.power_simulation import SimulatedPower, check_replicates, simulated_power
from capbench_nb.simulation.options import SimulationOptions
from capbench_nb.simulation.writer import build_run

__all__ = ["simulator_pair_rate", "simulate_power_with_simulator"]


def simulator_pair_rate(*, metric: str = "pass@1", k: int = 1, **options: Any) -> float:
    """Probability that a task is paired when both runs come from the project's simulator with ``options``.

    In :func:`capbench_nb.simulation.writer.build_run` a task is skipped with
    probability ``skip_rate``, and each attempt independently meets a
    harness failure (setup, provider, not started, crash, judge error when
    the judge is on) with probability the sum of those rates; with different
    seeds the two runs are independent, so the pair rate is the square of
    :math:`(1 - \\text{skip}) (1 - \\text{harness})^{k}` (k = 1 for pass@1).
    Plan-shape options (missing, empty, short tasks) are not modelled.
    """
    k = metric_k(metric, k)
    opt = SimulationOptions(**options)
    if opt.short_tasks or opt.missing_attempts or opt.empty_tasks:
        raise ValueError("simulator_pair_rate does not model short_tasks, missing_attempts or empty_tasks")
    harness = (opt.setup_failure_rate + opt.provider_unavailable_rate + opt.not_started_rate + opt.crash_rate
               + (opt.judge_error_rate if opt.judge else 0.0))
    per_run = (1.0 - opt.skip_rate) * max(0.0, 1.0 - harness) ** k
    return per_run * per_run


def _frames(run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(records, plan) of a simulated run, from its truth."""
    plan = pd.DataFrame({"task_id": [t["task_id"] for t in run.truth["tasks"]],
                         "planned_repeats": [t["planned_repeats"] for t in run.truth["tasks"]]})
    recs = [x["record"] for x in run.truth["attempts"]]
    records = pd.DataFrame({"task_id": [r["task_id"] for r in recs], "attempt": [r["attempt"] for r in recs],
                            "success": [r["success"] for r in recs],
                            "agent_eligible": [r["agent_eligible"] for r in recs]})
    return records, plan


def _replicates(n: int, p_a: float, p_b: float, *, metric: str, k: int, concentration: float,
                n_sim: int, seed: int, options: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per replicate: A-only and B-only counts and paired tasks of two simulated runs."""
    repeats = 1 if metric == "pass@1" else k
    shape = {}
    for name, value in (("a", p_a), ("b", p_b)):
        mu = beta_mean_for(value, metric=metric, k=k, concentration=concentration)
        shape[name] = {"success_alpha": mu * concentration, "success_beta": (1 - mu) * concentration}

    b_out, c_out, pairs = np.empty(n_sim, "int64"), np.empty(n_sim, "int64"), np.empty(n_sim, "int64")
    for i in range(n_sim):
        run_a = build_run(tasks=n, repeats=repeats, seed=seed + 2 * i, **{**options, **shape["a"]})
        run_b = build_run(tasks=n, repeats=repeats, seed=seed + 2 * i + 1, **{**options, **shape["b"]})
        records_a, plan_a = _frames(run_a)
        records_b, plan_b = _frames(run_b)
        _, ya, yb = paired_outcomes(records_a, plan_a, records_b, plan_b, metric=metric,
                                    k=1 if metric == "pass@1" else k)
        b_out[i], c_out[i], pairs[i] = int((ya & ~yb).sum()), int((~ya & yb).sum()), len(ya)
    return b_out, c_out, pairs


def simulate_power_with_simulator(n_tasks: int, p_a: float, p_b: float, *, metric: str = "pass@1", k: int = 1,
                                  alpha: float = 0.05, concentration: float = DEFAULT_CONCENTRATION,
                                  n_sim: int = 2000, seed: int = 0,
                                  simulator_options: dict | None = None) -> SimulatedPower:
    """Power of the exact McNemar test with the project's simulator as the source of both runs.

    Each replicate runs :func:`~capbench_nb.simulation.writer.build_run` twice,
    A and B with seeds ``seed + 2i`` and ``seed + 2i + 1`` and Beta shapes
    giving ``p_a`` and ``p_b`` (the simulator draws the two runs' task
    probabilities independently: the planning model with
    ``task_correlation = 0``), pairs the tasks with the comparison's own code
    and tests the pair with the exact McNemar test at level ``alpha``.
    ``simulator_options`` go to ``build_run``.

    Returns
    -------
    SimulatedPower
        As :func:`capbench_nb.metrics.power_simulation.simulate_power`.
    """
    k = metric_k(metric, k)
    check_replicates(n_tasks, n_sim, alpha)
    b, c, pairs = _replicates(n_tasks, p_a, p_b, metric=metric, k=k, concentration=concentration,
                              n_sim=n_sim, seed=seed, options=dict(simulator_options or {}))
    return simulated_power(b, c, pairs, alpha=alpha, n_tasks=n_tasks)
