"""The preparation kernel (capbench_nb.metrics.prepare): counted rows, plan positions, k-eligibility."""

from __future__ import annotations

import numpy as np
import pandas as pd

import capbench_nb as cb
from capbench_nb.metrics.prepare import (
    Prepared,
    counted_attempts,
    k_eligible_mask,
    k_eligible_tasks,
    prefix_outcomes,
    prepare,
    shared_preparation,
)
from capbench_nb.records.run import classify_records

from conftest import manifest, outcomes, record, write_run

# t1: complete; t2: attempt 2 ineligible; t3: attempt 2 missing; t4: never ran; t5: all failed
SPEC = {"t1": "SSA", "t2": "SES", "t3": "S.S", "t5": "AAA"}


def _run(tmp_path, spec=SPEC, extra=()):
    tasks = [(t, 3) for t in ("t1", "t2", "t3", "t4", "t5")]
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks), outcomes(spec) + list(extra)))


def test_k_eligible_tasks_in_plan_order(tmp_path):
    run = _run(tmp_path)
    assert k_eligible_tasks(run.records, plan=run.plan, k=1).tolist() == [True, True, True, False, True]
    assert k_eligible_tasks(run.records, plan=run.plan, k=2).tolist() == [True, False, False, False, True]
    assert k_eligible_tasks(run.records, plan=run.plan, k=3).tolist() == [True, False, False, False, True]
    # the same rule as per_task's k_eligible and pass@k's denominator
    table = cb.per_task(run.records, plan=run.plan, k=3)
    assert table["k_eligible"].tolist() == k_eligible_tasks(run.records, plan=run.plan, k=3).tolist()
    assert cb.pass_at_k(run.records, plan=run.plan, k=3).n == 2


def test_k_eligible_mask():
    assert k_eligible_mask(np.array([0, 1, 2, 3]), 2).tolist() == [False, False, True, False]
    assert k_eligible_mask(np.array([0, 1]), 1).tolist() == [False, True]


def test_counted_rows_follow_the_records_rule(tmp_path):
    extra = [record("t1", 4, "S"), record("stranger", 1, "S")]
    run = _run(tmp_path, extra=extra)
    counted = counted_attempts(run.records, plan=run.plan)
    assert len(counted) == len(run.records) - 2
    assert (classify_records(counted, run.plan).isna()).all()
    assert counted["anomaly"].isna().all()
    # nothing to drop: the same object, no copy
    assert counted_attempts(counted, plan=run.plan) is counted


def test_positions_and_counts(tmp_path):
    run = _run(tmp_path)
    p = Prepared(run.records, run.plan)
    assert p.n_tasks == 5
    assert p.count().tolist() == [3, 3, 2, 0, 3]
    assert p.count(p.eligible).tolist() == [3, 2, 2, 0, 3]
    assert p.count(p.success).tolist() == [2, 2, 2, 0, 0]
    size, won = p.prefix(2)
    assert size.tolist() == [2, 1, 1, 0, 2] and won.tolist() == [2, 1, 1, 0, 0]
    assert p.pass_counts(2) == (2, 1, 1)


def test_prefix_outcomes(tmp_path):
    run = _run(tmp_path)
    out = prefix_outcomes(run.records, plan=run.plan, k=3)
    assert list(out.index) == ["t1", "t5"]
    assert out["any"].tolist() == [True, False] and out["all"].tolist() == [False, False]
    one = prefix_outcomes(run.records, plan=run.plan, k=1)
    assert list(one.index) == ["t1", "t2", "t3", "t5"] and one["all"].tolist() == [True, True, True, False]


def test_plain_frames_work_too():
    """Frames not from load_run (object columns, no anomaly column): the same rule."""
    attempts = pd.DataFrame({"task_id": ["a", "a", "b", "zz"], "attempt": [1, 2, 1, 1],
                             "success": [True, False, True, True], "agent_eligible": [True, True, True, True]})
    plan = pd.DataFrame({"task_id": ["a", "b"], "planned_repeats": [2, 1]})
    assert k_eligible_tasks(attempts, plan=plan, k=1).tolist() == [True, True]
    assert k_eligible_tasks(attempts, plan=plan, k=2).tolist() == [True, False]
    assert len(counted_attempts(attempts, plan=plan)) == 3


def test_shared_preparation_shares_one_pass(tmp_path):
    run = _run(tmp_path)
    assert prepare(run.records, run.plan) is not prepare(run.records, run.plan)
    with shared_preparation():
        first = prepare(run.records, run.plan)
        assert prepare(run.records, run.plan) is first
        assert prepare(run.records.copy(), run.plan) is not first
    assert prepare(run.records, run.plan) is not first
