"""Hand-computed test vectors for every metric of spec section 6."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.metrics.stats import wilson_interval

from conftest import manifest, outcomes, record, write_run


def load(tmp_path, tasks, records, **kw):
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks, **kw), records))


def rate(value, successes, n, planned):
    low, high = wilson_interval(successes, n)
    return cb.Rate(value, successes, n, low, high, n / planned)


# ---------------------------------------------------------------- headline rates


def test_basic_vector(tmp_path):
    # t1 SSS: pass@1 yes, k-eligible, pass@k yes, pass^k yes
    # t2 ASA: pass@1 no,  k-eligible, pass@k yes, pass^k no
    # t3 AAA: pass@1 no,  k-eligible, pass@k no,  pass^k no
    # t4 ESS: attempt 1 ineligible: out of pass@1 and of the k-eligible tasks
    run = load(tmp_path, [(t, 3) for t in ("t1", "t2", "t3", "t4")],
               outcomes({"t1": "SSS", "t2": "ASA", "t3": "AAA", "t4": "ESS"}))
    assert run.k == 3
    a, p = run.attempts, run.plan
    assert cb.pass_at_1(a, plan=p) == rate(1 / 3, 1, 3, 4)
    assert cb.pass_at_k(a, plan=p, k=3) == rate(2 / 3, 2, 3, 4)
    assert cb.pass_hat_k(a, plan=p, k=3) == rate(1 / 3, 1, 3, 4)
    counts = cb.attempt_counts(a, plan=p)
    assert counts == {
        "total": 12,
        "eligible": 11,
        "by_failure_class": {"success": 6, "agent": 5, "environment": 1, "evaluation": 0, "skipped": 0, "unknown": 0},
    }


def test_empty_denominators_give_null_not_zero(tmp_path):
    run = load(tmp_path, [("t1", 2), ("t2", 2)], outcomes({"t1": "ES", "t2": "KS"}))
    for metric in (cb.pass_at_1(run.attempts, plan=run.plan),
                   cb.pass_at_k(run.attempts, plan=run.plan, k=2),
                   cb.pass_hat_k(run.attempts, plan=run.plan, k=2)):
        assert metric.value is None and metric.ci_low is None and metric.ci_high is None
        assert metric.n == 0 and metric.successes == 0
        assert metric.coverage == 0.0
    assert cb.oracle_best_score_at_k(run.attempts, plan=run.plan, k=2) == cb.ScoreMean(None, 0)


def test_run_without_any_record(tmp_path):
    run = load(tmp_path, [("t1", 2)], [])
    doc = cb.compute_metrics(run)
    assert doc["tasks"] == {"planned": 1, "observed": 0}
    assert doc["attempts"]["total"] == 0
    assert doc["metrics"]["pass@1"]["value"] is None
    assert doc["per_task"][0]["attempts"] == 0 and doc["per_task"][0]["first_success_attempt"] is None
    assert doc["telemetry"]["task_wall_ms"]["sum"] is None


def test_all_success_and_no_success_tasks(tmp_path):
    run = load(tmp_path, [("win", 3), ("lose", 3)], outcomes({"win": "SSS", "lose": "AAA"}))
    a, p = run.attempts, run.plan
    assert cb.pass_at_1(a, plan=p) == rate(0.5, 1, 2, 2)
    assert cb.pass_at_k(a, plan=p, k=3) == rate(0.5, 1, 2, 2)
    assert cb.pass_hat_k(a, plan=p, k=3) == rate(0.5, 1, 2, 2)
    all_win = load(tmp_path / "w", [("a", 2), ("b", 2)], outcomes({"a": "SS", "b": "SS"}))
    r = cb.pass_hat_k(all_win.attempts, plan=all_win.plan, k=2)
    assert (r.value, r.ci_high) == (1.0, 1.0)
    all_lose = load(tmp_path / "l", [("a", 2), ("b", 2)], outcomes({"a": "AA", "b": "AA"}))
    r = cb.pass_at_k(all_lose.attempts, plan=all_lose.plan, k=2)
    assert (r.value, r.ci_low) == (0.0, 0.0)


def test_k_is_fixed_by_the_plan_not_by_finished_attempts(tmp_path):
    # Planned repeats 2 and 4: k = 2 even though t2 finished four attempts and
    # t1 finished only one.  t2's attempts 3 and 4 count as attempts, not in pass@k.
    run = load(tmp_path, [("t1", 2), ("t2", 4)], outcomes({"t1": "S", "t2": "SSAA"}))
    assert run.k == 2
    a, p = run.attempts, run.plan
    assert cb.pass_at_k(a, plan=p, k=run.k) == rate(1.0, 1, 1, 2)  # only t2 is 2-eligible
    assert cb.pass_hat_k(a, plan=p, k=run.k) == rate(1.0, 1, 1, 2)
    assert cb.attempt_counts(a, plan=p)["total"] == 5


def test_repeats_override(tmp_path):
    # --repeats 1 overrides every task's repeats: k = 1, attempts 2.. are anomalies.
    run = load(tmp_path, [("t1", 3), ("t2", 3)], outcomes({"t1": "AS", "t2": "SA"}), repeats_override=1)
    assert run.k == 1
    assert list(run.plan["planned_repeats"]) == [1, 1]
    a, p = run.attempts, run.plan
    assert cb.pass_at_k(a, plan=p, k=1) == cb.pass_at_1(a, plan=p) == rate(0.5, 1, 2, 2)
    assert cb.pass_hat_k(a, plan=p, k=1) == rate(0.5, 1, 2, 2)
    assert list(run.anomalies["kind"]) == ["above_planned_repeats", "above_planned_repeats"]
    assert cb.attempt_counts(a, plan=p)["total"] == 2


def test_plan_k_present_equal_to_min_is_used(tmp_path):
    run = load(tmp_path, [("t1", 2), ("t2", 3)], outcomes({"t1": "SS"}), k=2)
    assert run.k == 2


def test_partial_run_missing_attempt_breaks_k_eligibility(tmp_path):
    # t1 lacks attempt 2: not 3-eligible although attempt 3 succeeded.
    run = load(tmp_path, [("t1", 3), ("t2", 3)], outcomes({"t1": "A.S", "t2": "AAS"}), status="partial")
    a, p = run.attempts, run.plan
    assert cb.pass_at_k(a, plan=p, k=3) == rate(1.0, 1, 1, 2)
    assert cb.pass_at_1(a, plan=p) == rate(0.0, 0, 2, 2)


def test_ineligible_first_attempt_and_unknown_classes(tmp_path):
    # U: unknown but eligible -> a failure that counts; X: unknown, not eligible -> out.
    run = load(tmp_path, [(t, 2) for t in ("u", "x", "e", "v", "k")],
               outcomes({"u": "US", "x": "XS", "e": "ES", "v": "VS", "k": "KS"}))
    a, p = run.attempts, run.plan
    assert cb.pass_at_1(a, plan=p) == rate(0.0, 0, 1, 5)
    assert cb.pass_at_k(a, plan=p, k=2) == rate(1.0, 1, 1, 5)
    assert cb.pass_hat_k(a, plan=p, k=2) == rate(0.0, 0, 1, 5)
    by_class = cb.attempt_counts(a, plan=p)["by_failure_class"]
    assert by_class == {"success": 5, "agent": 0, "environment": 1, "evaluation": 1, "skipped": 1, "unknown": 2}


def test_ineligible_attempt_after_k_does_not_matter(tmp_path):
    run = load(tmp_path, [("t1", 3), ("t2", 2)], outcomes({"t1": "SSE", "t2": "SS"}))
    assert run.k == 2
    assert cb.pass_hat_k(run.attempts, plan=run.plan, k=2) == rate(1.0, 2, 2, 2)


def test_anomalous_records_enter_no_metric(tmp_path):
    records = outcomes({"t1": "AA"}) + [record("t1", 3, "S"), record("ghost", 1, "S")]
    run = load(tmp_path, [("t1", 2)], records)
    assert list(run.anomalies["kind"]) == ["above_planned_repeats", "task_not_in_plan"]
    assert list(run.anomalies["line"]) == [3, 4]
    # Passing every record (anomalies included) gives the same numbers: metrics filter themselves.
    for frame in (run.attempts, run.records):
        assert cb.pass_at_k(frame, plan=run.plan, k=2) == rate(0.0, 0, 1, 1)
        assert cb.attempt_counts(frame, plan=run.plan)["total"] == 2
    doc = cb.compute_metrics(run)
    assert doc["tasks"]["observed"] == 1
    assert doc["anomaly_counts"] == {"above_planned_repeats": 1, "task_not_in_plan": 1, "invalid_line": 0}
    assert doc["per_task"][0]["first_success_attempt"] is None


def test_prefix_j_below_k(tmp_path):
    run = load(tmp_path, [("t1", 3), ("t2", 3)], outcomes({"t1": "SAS", "t2": "ASS"}))
    a, p = run.attempts, run.plan
    assert cb.pass_at_k(a, plan=p, k=1) == cb.pass_at_1(a, plan=p)
    assert cb.pass_hat_k(a, plan=p, k=2) == rate(0.0, 0, 2, 2)
    assert cb.pass_at_k(a, plan=p, k=2) == rate(1.0, 2, 2, 2)


# ---------------------------------------------------------------- oracle, first success, cost


def test_oracle_best_score(tmp_path):
    records = [
        record("t1", 1, "A", quality_score=0.2), record("t1", 2, "S", quality_score=0.9),
        record("t1", 3, "S", quality_score=1.0),                   # attempt 3 is beyond k = 2
        record("t2", 1, "A", quality_score=None), record("t2", 2, "A", quality_score=0.4),
        record("t3", 1, "A"), record("t3", 2, "A"),                # k-eligible, no score: null
        record("t4", 1, "E"), record("t4", 2, "S", quality_score=0.99),  # not k-eligible
    ]
    run = load(tmp_path, [("t1", 3), ("t2", 2), ("t3", 2), ("t4", 2)], records)
    assert run.k == 2
    result = cb.oracle_best_score_at_k(run.attempts, plan=run.plan, k=2)
    assert result.n == 2
    assert result.value == pytest.approx((0.9 + 0.4) / 2, abs=1e-15)
    table = cb.per_task(run.attempts, plan=run.plan, k=2).set_index("task_id")
    assert table.loc["t1", "oracle_best_score"] == 0.9
    assert table.loc["t2", "oracle_best_score"] == 0.4
    assert table["oracle_best_score"].isna().tolist() == [False, False, True, True]


def test_first_success_and_cost_to_first_success(tmp_path):
    def tel(wall, tokens):
        return {"task_wall_ms": wall, "total_tokens": tokens}

    records = [
        # environment failure before the success: not the agent's cost
        record("t1", 1, "E", telemetry=tel(None, None)),
        record("t1", 2, "A", telemetry=tel(1000, 300), cost=0.5, cost_source="prices/x@1"),
        record("t1", 3, "S", telemetry=tel(2500, 700), cost=0.25, cost_source="prices/x@1"),
        # a null addend makes the sum null (tokens), the others stay
        record("t2", 1, "A", telemetry=tel(400, None)),
        record("t2", 2, "S", telemetry=tel(600, 50)),
        # no success: null
        record("t3", 1, "A", telemetry=tel(1, 1)),
        # success above planned repeats does not count
        record("t4", 1, "A", telemetry=tel(1, 1)),
        record("t4", 2, "S", telemetry=tel(1, 1)),
    ]
    run = load(tmp_path, [("t1", 3), ("t2", 3), ("t3", 3), ("t4", 1)], records)
    table = cb.per_task(run.attempts, plan=run.plan, k=run.k).set_index("task_id")
    assert table["first_success_attempt"].tolist() == [3, 2, pd.NA, pd.NA]
    assert table.loc["t1", "cost_to_first_success_task_wall_ms"] == 3500.0
    assert table.loc["t1", "cost_to_first_success_total_tokens"] == 1000
    assert table.loc["t1", "cost_to_first_success_cost"] == 0.75
    assert table.loc["t2", "cost_to_first_success_task_wall_ms"] == 1000.0
    assert pd.isna(table.loc["t2", "cost_to_first_success_total_tokens"])
    assert pd.isna(table.loc["t2", "cost_to_first_success_cost"])  # cost null on both attempts
    doc = cb.compute_metrics(run)
    entries = {e["task_id"]: e for e in doc["per_task"]}
    assert entries["t1"]["cost_to_first_success"] == {"task_wall_ms": 3500.0, "total_tokens": 1000, "cost": 0.75}
    assert entries["t2"]["cost_to_first_success"] == {"task_wall_ms": 1000.0, "total_tokens": None, "cost": None}
    assert entries["t3"]["cost_to_first_success"] is None
    assert entries["t4"]["cost_to_first_success"] is None and entries["t4"]["first_success_attempt"] is None


def test_per_task_counts_and_plan_order(tmp_path):
    records = outcomes({"b": "SAE", "a": "S"})
    run = load(tmp_path, [("b", 3), ("c", 3), ("a", 3)], records)
    table = cb.per_task(run.attempts, plan=run.plan, k=3)
    assert table["task_id"].tolist() == ["b", "c", "a"]  # plan order, task without attempts included
    assert table[["attempts", "eligible", "successes"]].values.tolist() == [[3, 2, 1], [0, 0, 0], [1, 1, 1]]
    assert table["success_rate"].tolist()[0] == 0.5
    assert pd.isna(table["success_rate"].tolist()[1])
    low, high = wilson_interval(1, 2)
    assert (table["success_ci_low"][0], table["success_ci_high"][0]) == (low, high)


# ---------------------------------------------------------------- the run form and the displays


def test_a_loaded_run_gives_the_same_numbers_as_its_table(tmp_path):
    # Planned repeats 3, 3, 2: k = 2.  t1 SAS, t2 AAS, t3 EA (attempt 1 ineligible), t4 SS + an
    # anomaly above its planned repeats.
    records = outcomes({"t1": "SAS", "t2": "AAS", "t3": "EA", "t4": "SS"}) + [record("t4", 3, "A")]
    for r in records:
        r["quality_score"] = 0.5 if r["success"] else 0.1
    run = load(tmp_path, [("t1", 3), ("t2", 3), ("t3", 2), ("t4", 2)], records)
    a, p, k = run.attempts, run.plan, run.k
    assert k == 2
    # by hand: pass@1 over t1, t2, t4 = 2/3; 2-eligible t1, t2, t4: pass@2 2/3, pass^2 1/3
    assert cb.pass_at_1(run) == cb.pass_at_1(a, plan=p) == rate(2 / 3, 2, 3, 4)
    assert cb.pass_at_k(run) == cb.pass_at_k(a, plan=p, k=k) == rate(2 / 3, 2, 3, 4)
    assert cb.pass_hat_k(run) == cb.pass_hat_k(a, plan=p, k=k) == rate(1 / 3, 1, 3, 4)
    assert cb.pass_at_k(run, k=3) == cb.pass_at_k(a, plan=p, k=3)  # an explicit k wins over run.k
    oracle = cb.oracle_best_score_at_k(run)
    assert oracle == cb.oracle_best_score_at_k(a, plan=p, k=k) == cb.ScoreMean(pytest.approx((0.5 + 0.1 + 0.5) / 3), 3)
    pd.testing.assert_frame_equal(cb.per_task(run), cb.per_task(a, plan=p, k=k))
    assert cb.attempt_counts(run) == cb.attempt_counts(a, plan=p)
    assert cb.attempt_counts(run)["total"] == 10  # 3 + 3 + 2 + 2: the anomaly is not counted
    assert cb.telemetry_aggregates(run) == cb.telemetry_aggregates(a, plan=p)
    pd.testing.assert_frame_equal(cb.prefix_curve(run), cb.prefix_curve(a, plan=p, k=k))
    pd.testing.assert_frame_equal(cb.unbiased_curve(run), cb.unbiased_curve(a, plan=p))
    doc = cb.compute_metrics(run)["metrics"]
    assert cb.pass_hat_k(run).to_dict() == doc["pass^k"] and cb.pass_at_1(run).to_dict() == doc["pass@1"]


def test_the_run_form_refuses_a_plan_and_the_table_form_needs_one(tmp_path):
    run = load(tmp_path, [("t1", 2)], outcomes({"t1": "SA"}))
    with pytest.raises(TypeError, match=r"pass_at_1\(run\) takes the plan from the run"):
        cb.pass_at_1(run, plan=run.plan)
    with pytest.raises(TypeError, match=r"per_task\(run\) takes the plan"):
        cb.per_task(run, plan=run.plan, k=2)
    with pytest.raises(TypeError, match=r"pass_hat_k\(attempts\) needs plan="):
        cb.pass_hat_k(run.attempts, k=2)
    with pytest.raises(TypeError, match=r"pass_at_k\(attempts, plan=...\) needs k="):
        cb.pass_at_k(run.attempts, plan=run.plan)
    with pytest.raises(TypeError, match="not list"):
        cb.attempt_counts([], plan=run.plan)


def test_rate_repr_is_short_and_names_the_metric(tmp_path):
    run = load(tmp_path, [(f"t{i}", 2) for i in range(13)],
               outcomes({f"t{i}": "SS" if i < 8 else "AA" for i in range(13)}))
    r = cb.pass_at_1(run)
    low, high = wilson_interval(8, 13)
    assert repr(r) == f"Rate(pass@1 = 0.615 [{low:.3f}, {high:.3f}], 8/13 tasks, coverage 100%)"
    assert repr(cb.pass_hat_k(run)).startswith("Rate(pass^2 = 0.615 ")
    assert repr(cb.oracle_best_score_at_k(run)) == "ScoreMean(oracle_best_score@2 = n/a, 0 tasks)"
    assert len(repr(r)) < 200
    # the name is for display only: equality and to_dict see the fields
    assert r == rate(8 / 13, 8, 13, 13) and r.metric == "pass@1" and rate(0.5, 1, 2, 2).metric is None
    assert r.to_dict() == {"value": 8 / 13, "successes": 8, "n": 13, "ci_low": low, "ci_high": high, "coverage": 1.0}
    assert repr(rate(0.5, 1, 2, 3)).startswith("Rate(0.500 [") and "coverage 66.7%" in repr(rate(0.5, 1, 2, 3))
    assert r.labelled("mine") == r and repr(r.labelled("mine")).startswith("Rate(mine = 0.615")
    # float() and .ci, as a notebook reaches for them
    assert float(r) == 8 / 13 and r.ci == (low, high) and f"{float(r):.1%}" == "61.5%"


def test_an_undefined_rate_is_nan_as_a_float(tmp_path):
    empty = cb.pass_at_1(load(tmp_path, [("t1", 2)], outcomes({"t1": "ES"})))
    assert math.isnan(float(empty)) and empty.ci == (None, None) and empty.value is None


def test_rate_repr_of_an_empty_denominator_and_its_html(tmp_path):
    run = load(tmp_path, [("t1", 2)], outcomes({"t1": "ES"}))
    empty = cb.pass_at_1(run)
    assert repr(empty) == "Rate(pass@1 = n/a, 0/0 tasks, coverage 0%)"
    assert "n/a" in empty._repr_html_() and "CI" not in empty._repr_html_()
    page = cb.pass_at_k(load(tmp_path / "b", [("t1", 2), ("t2", 2)], outcomes({"t1": "AS", "t2": "AA"})))._repr_html_()
    low, high = wilson_interval(1, 2)
    assert "<b>pass@2</b> = 0.500" in page and f"95% CI [{low:.3f}, {high:.3f}]" in page and "1/2 tasks" in page
    assert "<b>mine&lt;script&gt;</b>" in cb.pass_at_1(run).labelled("mine<script>")._repr_html_()
    assert "90% CI" in cb.pass_at_k(load(tmp_path / "c", [("t1", 1)], outcomes({"t1": "S"})), confidence=0.9)._repr_html_()
