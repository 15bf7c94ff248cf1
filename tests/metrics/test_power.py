"""Power planning (capbench_nb.metrics.power): exact power by enumeration, monotonicity, and simulation checks.

The figures (required tasks, analytic power, simulated power) are printed: run with -s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from capbench_nb.metrics import power as pw
from capbench_nb.metrics.power_simulation import simulate_power
from capbench_nb.metrics.stats import mcnemar_exact

# --------------------------------------------------------------------------- exact machinery


def test_critical_values_agree_with_the_test():
    for alpha in (0.01, 0.05, 0.1):
        crit = pw.mcnemar_critical_values(np.arange(0, 80), alpha)
        for m in range(80):
            for b in range(m + 1):
                assert (min(b, m - b) <= crit[m] and m > 0) == (mcnemar_exact(b, m - b) <= alpha), (alpha, m, b)


@pytest.mark.parametrize("n, cells", [(8, (0.3, 0.1, 0.25, 0.35)), (12, (0.2, 0.3, 0.1, 0.4)), (10, (0.5, 0.0, 0.3, 0.2))])
def test_exact_power_equals_enumeration(n, cells):
    """power(n) = P(exact McNemar rejects), summing the multinomial over every table."""
    both, a_only, b_only, neither = cells
    probs = np.array(cells)
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            rest = n - b - c
            # both + neither = rest: their split does not matter for the test
            p = math.comb(n, b) * math.comb(n - b, c) * a_only**b * b_only**c * (both + neither) ** rest
            if b + c and mcnemar_exact(b, c) <= 0.05:
                total += p
    p_a, p_b = both + a_only, both + b_only
    got = pw.power(n, p_a, p_b, discordance=a_only + b_only)
    assert got == pytest.approx(total, abs=1e-12)
    assert probs.sum() == pytest.approx(1.0)


def test_power_with_pair_rate_is_thinning():
    # pair_rate r: discordant counts ~ Binomial(n, r * psi) -- compare with the mixture over the paired count
    n, r, p_a, p_b, psi = 30, 0.7, 0.4, 0.6, 0.35
    mixture = sum(math.comb(n, j) * r**j * (1 - r) ** (n - j) * pw.power(j, p_a, p_b, discordance=psi)
                  for j in range(n + 1))
    assert pw.power(n, p_a, p_b, discordance=psi, pair_rate=r) == pytest.approx(mixture, abs=1e-12)


def test_size_under_the_null_is_at_most_alpha():
    for n in (10, 40, 150):
        for p in (0.2, 0.5, 0.8):
            assert pw.power(n, p, p) <= 0.05 + 1e-12


def test_normal_method_is_connors_formula():
    p_a, p_b, psi = 0.5, 0.65, 0.3
    d = p_b - p_a
    z_a, z_b = ndtri(0.975), ndtri(0.8)
    n_pairs = (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - d * d)) ** 2 / d**2
    assert pw.required_tasks(p_a, p_b, discordance=psi, method="normal") == math.ceil(n_pairs)
    assert pw.required_tasks(p_a, p_b, discordance=psi, method="normal", pair_rate=0.5) == math.ceil(n_pairs / 0.5)
    n = 120
    assert pw.power(n, p_a, p_b, discordance=psi, method="normal") == pytest.approx(
        ndtr((d * math.sqrt(n) - z_a * math.sqrt(psi)) / math.sqrt(psi - d * d)))


# --------------------------------------------------------------------------- the model


def test_paired_cells_parametrisations():
    cells = pw.paired_cells(0.5, 0.7, discordance=0.3)
    assert (cells.both, cells.a_only, cells.b_only, cells.neither) == pytest.approx((0.45, 0.05, 0.25, 0.25))
    assert cells.difference == pytest.approx(0.2) and cells.discordance == pytest.approx(0.3)
    independent = pw.paired_cells(0.5, 0.7)  # task_correlation 0: independent outcomes
    assert independent.both == pytest.approx(0.35)
    assert pw.paired_cells(0.5, 0.7, rho=0.0).both == pytest.approx(0.35)
    # stronger shared difficulty, fewer discordant tasks
    psis = [pw.paired_cells(0.5, 0.7, task_correlation=r).discordance for r in (0.0, 0.3, 0.6, 1.0)]
    assert psis == sorted(psis, reverse=True)
    for metric, k in (("pass^k", 3), ("pass@k", 3), ("pass@1", 1)):
        cells = pw.paired_cells(0.3, 0.45, metric=metric, k=k, task_correlation=0.5)
        assert cells.p_a == pytest.approx(0.3) and cells.p_b == pytest.approx(0.45)
        assert min(cells.both, cells.a_only, cells.b_only, cells.neither) >= 0
    with pytest.raises(ValueError):
        pw.paired_cells(0.5, 0.7, discordance=0.1)  # below |D|
    with pytest.raises(ValueError):
        pw.paired_cells(0.5, 1.0)
    with pytest.raises(ValueError):
        pw.paired_cells(0.5, 0.7, metric="pass@2")


def test_beta_mean_round_trip():
    for metric, k in (("pass^k", 2), ("pass^k", 5), ("pass@k", 3)):
        for value in (0.1, 0.4, 0.8):
            mu = pw.beta_mean_for(value, metric=metric, k=k, concentration=2.5)
            a, b = mu * 2.5, (1 - mu) * 2.5
            assert pw._beta_moment(a, b, metric, k) == pytest.approx(value, abs=1e-10)


# --------------------------------------------------------------------------- required tasks


def test_required_tasks_monotone_in_effect_size_and_power():
    rows = []
    for metric, k, p_a in (("pass@1", 1, 0.5), ("pass^k", 3, 0.3)):
        by_d = [pw.required_tasks(p_a, p_a + d, metric=metric, k=k) for d in (0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3)]
        assert by_d == sorted(by_d, reverse=True) and len(set(by_d)) == len(by_d)
        by_power = [pw.required_tasks(p_a, p_a + 0.1, metric=metric, k=k, power=p) for p in (0.5, 0.7, 0.8, 0.9, 0.95)]
        assert by_power == sorted(by_power) and len(set(by_power)) == len(by_power)
        rows.append((metric, k, by_d, by_power))
        # fewer tasks with correlated difficulty, more with pairing losses
        base = pw.required_tasks(p_a, p_a + 0.1, metric=metric, k=k)
        assert pw.required_tasks(p_a, p_a + 0.1, metric=metric, k=k, task_correlation=0.7) < base
        assert pw.required_tasks(p_a, p_a + 0.1, metric=metric, k=k, pair_rate=0.8) > base
        # the direction of the difference does not matter
        assert pw.required_tasks(p_a + 0.1, p_a, metric=metric, k=k) == base
    print()
    for metric, k, by_d, by_power in rows:
        print(f"{metric} (k={k}): tasks for D = .04...30: {by_d}; for power .5...95 at D = .1: {by_power}")


def test_required_tasks_is_the_smallest_reaching_the_target():
    for p_a, p_b, kw in ((0.5, 0.7, {}), (0.3, 0.8, {}), (0.6, 0.7, {"discordance": 0.2}), (0.2, 0.35, {"pair_rate": 0.8})):
        n = pw.required_tasks(p_a, p_b, **kw)
        assert pw.power(n, p_a, p_b, **kw) >= 0.8
        assert all(pw.power(m, p_a, p_b, **kw) < 0.8 for m in range(max(1, n - 30), n))
        normal = pw.required_tasks(p_a, p_b, method="normal", **kw)
        assert abs(n - normal) <= max(6, 0.12 * n), (n, normal)  # exact test costs a little more
    with pytest.raises(ValueError):
        pw.required_tasks(0.5, 0.5)
    with pytest.raises(ValueError):
        pw.required_tasks(0.5, 0.501, max_tasks=1000)


# --------------------------------------------------------------------------- against simulation


@pytest.mark.parametrize("metric, k, p_a, p_b, kw", [
    ("pass@1", 1, 0.5, 0.65, {}),
    ("pass@1", 1, 0.5, 0.65, {"task_correlation": 0.6}),
    ("pass^k", 3, 0.3, 0.45, {}),
    ("pass^k", 3, 0.3, 0.45, {"task_correlation": 0.6, "pair_rate": 0.85}),
    ("pass@1", 1, 0.6, 0.7, {"discordance": 0.25}),
])
def test_power_against_direct_simulation(metric, k, p_a, p_b, kw):
    n = pw.required_tasks(p_a, p_b, metric=metric, k=k, **kw)
    analytic = pw.power(n, p_a, p_b, metric=metric, k=k, **kw)
    sim = simulate_power(n, p_a, p_b, metric=metric, k=k, n_sim=3000, seed=17, **kw)
    print(f"\n{metric} k={k} {p_a}->{p_b} {kw}: n = {n} tasks, exact power {analytic:.4f}, "
          f"simulated {sim.power:.4f} +/- {sim.se:.4f} (mean pairs {sim.mean_pairs:.1f})")
    assert abs(sim.power - 0.8) < 0.04
    assert abs(sim.power - analytic) < max(3.5 * sim.se, 0.02)


def test_simulate_power_has_one_engine_the_model():
    """The simulator-driven check lives in capbench_nb.simulation.power_check (a later stage)."""
    with pytest.raises(TypeError):
        simulate_power(10, 0.5, 0.6, engine="other")
    assert not hasattr(pw, "simulator_pair_rate") and not hasattr(pw, "simulate_power")


def test_planning_helpers():
    table = pw.planning_table(0.6, 0.7, ks=(1, 3))
    assert list(table["metric"]) == ["pass@1", "pass^3"]
    assert table.loc[0, "tasks"] == pw.required_tasks(0.6, 0.7)
    assert table.loc[1, "attempts_per_run"] == 3 * table.loc[1, "tasks"]
    doc = {"tasks": {"common": 10}, "paired": {"pass@1": {"n_pairs": 8, "a_value": 0.5, "a_only": 1, "b_only": 3}}}
    assert pw.discordance_from(doc) == 0.5
    plan = pw.planning_from_comparison(doc, differences=(0.1,))
    assert plan.loc[0, "pair_rate"] == 0.8
    assert plan.loc[0, "tasks_observed_discordance"] == pw.required_tasks(0.5, 0.6, discordance=0.5, pair_rate=0.8)
    assert plan.loc[0, "tasks_independent"] == pw.required_tasks(0.5, 0.6, pair_rate=0.8)
