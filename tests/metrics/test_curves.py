"""Reliability curves: pass@j / pass^j from planned prefixes and the unbiased estimators."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capbench_nb as cb
from capbench_nb.metrics.curves import prefix_curve, unbiased_curve

from conftest import TESTS, manifest, outcomes, record, write_run

TAU = TESTS / "data" / "taubench" / "gpt-4o-airline.trials.jsonl"


def load(tmp_path, tasks, records, **kw):
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks, **kw), records))


def test_unbiased_hand_vector(tmp_path):
    # t1: n=4, c=2; t2: n=3 (one ineligible attempt), c=3; t3: n=3, c=0
    run = load(tmp_path, [("t1", 4), ("t2", 4), ("t3", 3)],
               outcomes({"t1": "SASA", "t2": "SESS", "t3": "AAA"}))
    curve = unbiased_curve(run.attempts, plan=run.plan)
    assert curve["j"].tolist() == [1, 2, 3]  # up to the smallest eligible n
    assert (curve["tasks"] == 3).all()
    # j=2: pass@2 = mean(1 - C(2,2)/C(4,2), 1 - 0, 1 - C(3,2)/C(3,2)) = mean(5/6, 1, 0)
    assert curve.loc[1, "pass@j"] == pytest.approx(float((Fraction(5, 6) + 1 + 0) / 3), abs=1e-15)
    # j=2: pass^2 = mean(C(2,2)/C(4,2), C(3,2)/C(3,2), 0) = mean(1/6, 1, 0)
    assert curve.loc[1, "pass^j"] == pytest.approx(float((Fraction(1, 6) + 1) / 3), abs=1e-15)
    # j=3: pass^3 = mean(0, 1, 0)
    assert curve.loc[2, "pass^j"] == pytest.approx(1 / 3, abs=1e-15)


def test_unbiased_ignores_tasks_without_eligible_attempts(tmp_path):
    run = load(tmp_path, [("t1", 2), ("t2", 2), ("t3", 2)], outcomes({"t1": "SA", "t2": "EE"}))
    curve = unbiased_curve(run.attempts, plan=run.plan)
    assert curve["tasks"].tolist() == [1, 1]
    assert curve["pass@j"].tolist() == [0.5, 1.0]


def test_unbiased_empty(tmp_path):
    run = load(tmp_path, [("t1", 2)], outcomes({"t1": "EK"}))
    assert unbiased_curve(run.attempts, plan=run.plan).empty
    doc = cb.compute_metrics(run)
    assert doc["curves"]["unbiased"] == {**doc["curves"]["unbiased"], "tasks": 0, "points": []}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.integers(0, 8)), min_size=1, max_size=6))
def test_unbiased_equals_product_form(tmp_path_factory, tasks):
    # C(c,j)/C(n,j) = prod_{i<j} (c-i)/(n-i)  and  C(n-c,j)/C(n,j) = prod_{i<j} (n-c-i)/(n-i)
    tasks = [(n, min(c, n)) for n, c in tasks]
    records = []
    for t, (n, c) in enumerate(tasks):
        records += [record(f"t{t}", i + 1, "S" if i < c else "A") for i in range(n)]
    tmp = tmp_path_factory.mktemp("prod")
    run = load(tmp, [(f"t{t}", n) for t, (n, _) in enumerate(tasks)], records)
    curve = unbiased_curve(run.attempts, plan=run.plan)
    for row in curve.to_dict("records"):
        j = row["j"]
        hat = [math.prod(Fraction(c - i, n - i) for i in range(j)) for n, c in tasks]
        at = [1 - math.prod(Fraction(n - c - i, n - i) for i in range(j)) for n, c in tasks]
        assert row["pass^j"] == pytest.approx(float(sum(hat) / len(tasks)), abs=1e-12)
        assert row["pass@j"] == pytest.approx(float(sum(at) / len(tasks)), abs=1e-12)


def test_unbiased_equals_prefix_when_every_task_has_exactly_j_eligible(tmp_path):
    run = load(tmp_path, [(t, 3) for t in "abcde"],
               outcomes({"a": "SSS", "b": "SAS", "c": "AAA", "d": "ASS", "e": "SSA"}))
    prefix = prefix_curve(run.attempts, plan=run.plan, k=3)
    unbiased = unbiased_curve(run.attempts, plan=run.plan)
    at3 = prefix[(prefix.j == 3) & (prefix.metric == "pass@j")]["value"].iloc[0]
    hat3 = prefix[(prefix.j == 3) & (prefix.metric == "pass^j")]["value"].iloc[0]
    assert unbiased.loc[2, "pass@j"] == pytest.approx(at3, abs=1e-15)
    assert unbiased.loc[2, "pass^j"] == pytest.approx(hat3, abs=1e-15)


def test_prefix_curve_matches_headline_at_k(tmp_path):
    run = load(tmp_path, [("a", 3), ("b", 3), ("c", 2)], outcomes({"a": "SAS", "b": "SSS", "c": "ES"}))
    doc = cb.compute_metrics(run)
    last = doc["curves"]["planned_prefix"][-1]
    assert last["j"] == doc["k"] == 2
    assert last["pass@j"] == doc["metrics"]["pass@k"]
    assert last["pass^j"] == doc["metrics"]["pass^k"]
    assert doc["curves"]["planned_prefix"][0]["pass@j"] == doc["metrics"]["pass@1"]


def test_tau_bench_gpt4o_airline_reference_values(tmp_path):
    """Real tau-bench trials: our unbiased pass^j equals tau-bench's own numbers."""
    trials = [json.loads(line) for line in TAU.read_text().splitlines()]
    assert len(trials) == 200
    records = [
        record(f"task-{t['task_id']:02d}", t["trial"] + 1, "S" if abs(t["reward"] - 1) < 1e-6 else "A",
               quality_score=t["reward"])
        for t in trials
    ]
    run = load(tmp_path, [(f"task-{i:02d}", 4) for i in range(50)], records)
    curve = unbiased_curve(run.attempts, plan=run.plan)
    assert curve["pass^j"].tolist() == pytest.approx([0.42, 0.2733333333333333, 0.22, 0.2], abs=1e-12)
    assert curve["pass@j"].tolist() == pytest.approx([0.42, 17 / 30, 0.66, 0.72], abs=1e-12)
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["value"] == pytest.approx(0.2, abs=1e-15)
    assert doc["metrics"]["pass@k"]["value"] == pytest.approx(0.72, abs=1e-15)
