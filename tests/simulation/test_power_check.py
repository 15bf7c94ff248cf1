"""Power planning checked against the project's simulator (capbench_nb.simulation.power_check)."""

from __future__ import annotations

import pytest

from capbench_nb.metrics import power as pw
from capbench_nb.simulation.power_check import simulate_power_with_simulator, simulator_pair_rate


@pytest.mark.parametrize("metric, k, p_a, p_b, n_sim", [("pass@1", 1, 0.3, 0.8, 400), ("pass^k", 2, 0.25, 0.7, 250)])
def test_power_against_the_project_simulator(metric, k, p_a, p_b, n_sim):
    """The project's simulator (two runs, different seeds, default harness failures) paired by compare's code."""
    rate = simulator_pair_rate(metric=metric, k=k)
    n = pw.required_tasks(p_a, p_b, metric=metric, k=k, pair_rate=rate)
    analytic = pw.power(n, p_a, p_b, metric=metric, k=k, pair_rate=rate)
    sim = simulate_power_with_simulator(n, p_a, p_b, metric=metric, k=k, n_sim=n_sim, seed=1000)
    print(f"\nsimulator, {metric} k={k} {p_a}->{p_b}: pair rate {rate:.4f}, n = {n} tasks, exact power "
          f"{analytic:.4f}, simulated {sim.power:.4f} +/- {sim.se:.4f} "
          f"(mean pairs {sim.mean_pairs:.2f}, expected {n * rate:.2f})")
    assert abs(sim.mean_pairs - n * rate) < 0.05 * n * rate
    assert abs(sim.power - analytic) < max(3 * sim.se, 0.03)
    assert abs(sim.power - 0.8) < 0.08


def test_simulator_engine_refuses_correlated_models():
    # the simulator draws the two runs' task probabilities independently: no correlation can be asked for
    with pytest.raises(TypeError):
        simulate_power_with_simulator(10, 0.5, 0.6, task_correlation=0.5)
    with pytest.raises(TypeError):
        simulate_power_with_simulator(10, 0.5, 0.6, discordance=0.2)
    with pytest.raises(ValueError):
        simulate_power_with_simulator(0, 0.5, 0.6)
    with pytest.raises(ValueError):
        simulator_pair_rate(missing_attempts=2)
