"""The representative subset (spec section 13): apportionment, the Rasch fit, determinism, leave-one-run-out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics.subset import estimate_run, run_outcomes, select_subset, subset_estimate, task_counts
from capbench_nb.metrics.subset_model import apportion, choose_tasks, estimate_full, fit_rasch
from capbench_nb.records.run import load_run
from capbench_nb.simulation.writer import simulate_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("subset-runs")
    return [load_run(_sim(root, seed)) for seed in (1, 2, 3, 4)]


def _sim(root, seed):
    path = root / f"r{seed}"
    simulate_run(path, tasks=30, repeats=3, seed=seed)
    return path


# ----------------------------------------------------------------------------- apportionment, by hand

def test_one_each_then_largest_remainder():
    # 1 each; the remaining 2 by quotas 2*6/10 = 1.2, 2*3/10 = 0.6, 2*1/10 = 0.2: floors 1, 0, 0; the one
    # left goes to the largest remainder, b's 0.6
    assert apportion({"a": 6, "b": 3, "c": 1}, 5) == {"a": 2, "b": 2, "c": 1}


def test_a_full_value_gives_way():
    # b has 1 task, already given: the remaining 2 go to a
    assert apportion({"a": 10, "b": 1}, 4) == {"a": 3, "b": 1}
    # 1 each, the remaining 4 by 4*2/10 = 0.8 and 4*8/10 = 3.2: floors 0, 3, then a's remainder 0.8
    assert apportion({"a": 2, "b": 8}, 6) == {"a": 2, "b": 4}


def test_ties_fewer_than_values_and_everything():
    assert apportion({"a": 2, "b": 2}, 3) == {"a": 2, "b": 1}  # equal remainders and counts: the earlier value
    assert apportion({"a": 5, "b": 3, "c": 2}, 2) == {"a": 1, "b": 1, "c": 0}  # N below the values: the largest
    assert apportion({"a": 5, "b": 3, "c": 2}, 10) == {"a": 5, "b": 3, "c": 2}
    with pytest.raises(ValueError):
        apportion({"a": 2}, 3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=12), st.data())
def test_apportionment_properties(sizes, data):
    counts = {f"v{i}": n for i, n in enumerate(sizes)}
    size = data.draw(st.integers(1, sum(sizes)))
    out = apportion(counts, size)
    assert sum(out.values()) == size
    assert all(0 <= out[v] <= counts[v] for v in counts)
    if size >= len(counts):
        assert all(out[v] >= 1 for v in counts)


# ----------------------------------------------------------------------------- the model

def test_rasch_fit_is_stationary_and_orders_tasks():
    n = np.full((3, 4), 3.0)
    s = np.array([[3, 2, 1, 0], [3, 3, 1, 0], [2, 1, 0, 0]], dtype=float)
    theta, b = fit_rasch(n, s)
    p = expit(theta[:, None] - b[None, :])
    g = n * p - s  # the penalised score must vanish: sum over tasks + theta/4, minus sum over runs + b/4
    assert np.allclose(g.sum(axis=1) + theta / 4, 0, atol=1e-5)
    assert np.allclose(-g.sum(axis=0) + b / 4, 0, atol=1e-5)
    assert list(np.argsort(b)) == [0, 1, 2, 3]  # more successes, lower difficulty
    assert theta[1] > theta[0] > theta[2]


def test_systematic_choice_spans_each_stratum():
    b = np.arange(10, dtype=float)
    strata = ["x"] * 6 + ["y"] * 4
    chosen = choose_tasks(b, strata, {"x": 3, "y": 2}, np.random.default_rng(0))
    assert len(chosen) == 5 and len(set(chosen)) == 5
    xs = [i for i in chosen if i < 6]
    assert len(xs) == 3 and xs[0] < 2 and 2 <= xs[1] < 4 and xs[2] >= 4  # one per third of x's difficulty order
    assert sum(i >= 6 for i in chosen) == 2


def test_estimate_tracks_ability_and_calibrates_per_stratum():
    b = np.zeros(20)
    strata = ["a"] * 10 + ["b"] * 10
    obs = [0, 1, 2, 10, 11, 12]
    n = np.full(6, 3.0)
    low = estimate_full(b, strata, obs, n, np.array([0, 1, 0, 1, 0, 0.0]), theta_mean=0, theta_sd=1, sigma_e=0)
    high = estimate_full(b, strata, obs, n, np.array([3, 3, 2, 3, 3, 2.0]), theta_mean=0, theta_sd=1, sigma_e=0)
    assert low[0] < 0.5 < high[0]
    assert low[1] <= low[0] <= low[2]
    # a profile (strong on a, weak on b) observed 3 + 3 while a has 15 tasks and b 5: per-stratum abilities
    # weigh a by its 15, one global ability by the 3 observed
    strata = ["a"] * 15 + ["b"] * 5
    obs = [0, 1, 2, 15, 16, 17]
    s = np.array([3, 3, 2, 0, 0, 1.0])
    one = estimate_full(b, strata, obs, n, s, theta_mean=0, theta_sd=1, sigma_e=0, tau=0)
    per = estimate_full(b, strata, obs, n, s, theta_mean=0, theta_sd=1, sigma_e=0)
    assert one[0] == pytest.approx(0.5, abs=0.03) and per[0] > one[0] + 0.1


# ----------------------------------------------------------------------------- the document

def test_same_inputs_same_bytes_and_section_13_keys(runs):
    a = select_subset(runs, size=10, strata="app", seed=3)
    b = select_subset(runs, size=10, strata="app", seed=3)
    assert dumps(a) == dumps(b)
    assert a["schema_version"] == "capbench.subset/1" and a["size"] == 10 and len(a["tasks"]) == 10
    order = [str(t) for t in runs[0].plan["task_id"]]
    assert a["tasks"] == sorted(a["tasks"], key=order.index)
    assert a["full_tasks"] == 30 and sum(a["strata"]["app"].values()) == 10
    apps = dict(zip(order, runs[0].plan["app"]))
    assert all(v >= 1 for v in a["strata"]["app"].values())
    assert {v: sum(apps[t] == v for t in a["tasks"]) for v in a["strata"]["app"]} == a["strata"]["app"]
    assert [e["run_id"] for e in a["from_runs"]] == [r.run_id for r in runs]
    assert a["method"]["name"] == "stratified-rasch" and a["method"]["seed"] == 3
    plain = select_subset(runs, size=10, seed=3)
    assert plain["strata"] == {} and plain["method"]["name"] == "global-rasch" and plain["estimator"]["tau"] == 0


def test_leave_one_run_out_is_the_selection_on_the_others(runs):
    doc = select_subset(runs, size=10, strata="app", seed=0)
    loo = doc["validation"]["leave_one_run_out"]
    assert [e["run"] for e in loo["runs"]] == [0, 1, 2, 3]
    for left in (0, 2):
        others = select_subset([r for i, r in enumerate(runs) if i != left], size=10, strata="app", seed=0)
        n, s, _, _ = task_counts(runs[left], others["tasks"], 3)
        again = subset_estimate(others["estimator"], others["tasks"], n, s)
        entry = loo["runs"][left]
        assert (entry["estimate"], entry["ci_low"], entry["ci_high"]) == (again["value"], again["ci_low"], again["ci_high"])
    truth = run_outcomes(runs).full_pass1()
    assert [e["full_suite"] for e in loo["runs"]] == [round(t, 6) for t in truth]
    assert np.mean([abs(e["estimate"] - e["full_suite"]) for e in loo["runs"]]) == pytest.approx(loo["mae"], abs=1e-5)
    assert doc["validation"]["random_subsets"]["count"] == 100


def test_estimate_document_counts_only_subset_tasks(runs):
    doc = select_subset(runs, size=10, strata="app", seed=0)
    est = estimate_run(runs[1], doc)
    att = runs[1].attempts
    first = att[(att["attempt"] == 1) & att["task_id"].isin(doc["tasks"]) & att["agent_eligible"].astype(bool)]
    rate = est["pass@1"]["subset"]
    assert rate["n"] == len(first) and rate["successes"] == int(first["success"].astype(bool).sum())
    assert rate["coverage"] == pytest.approx(len(first) / 10)
    full = est["pass@1"]["full_suite"]
    assert full["method"] == "stratified-rasch" and 0 <= full["ci_low"] <= full["value"] <= full["ci_high"] <= 1


def test_estimate_refuses_a_subset_document_with_a_repeated_task(runs):
    doc = select_subset(runs, size=10, strata="app", seed=0)
    doc = {**doc, "tasks": doc["tasks"][:9] + doc["tasks"][:1]}  # 10 task_ids, 9 tasks: counted twice before
    with pytest.raises(InvalidRunError) as info:
        estimate_run(runs[1], doc)
    assert info.value.rule == "subset" and "/tasks/9 repeats" in str(info.value)
