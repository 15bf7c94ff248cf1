"""Best-of-k with a selector (metrics.selection, spec section 9): every quantity against hand-computed values."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

import capbench_nb as cb
from capbench_nb.metrics.selection import selection_metrics, top_of_j_curve
from capbench_nb.records.selection import selection_frame
from conftest import SELECTOR, manifest, pick, record, write_run, write_selection
from hypothesis_profiles import PROFILE

K = 3


def _attempt(task, n, code, wall, tokens, cost):
    tel = {"task_wall_ms": wall, "total_tokens": tokens}
    return record(task, n, code, telemetry=tel, cost=cost, cost_source=None if cost is None else "prices/x@1")


def _task(task, codes, walls, tokens, costs=(0.01, 0.01, 0.01)):
    return [_attempt(task, i + 1, c, w, t, p) for i, (c, w, t, p) in enumerate(zip(codes, walls, tokens, costs))]


def _cost(ms, tokens, cost):
    return {"selector_ms": ms, "selector_tokens": tokens, "selector_cost": cost,
            "selector_cost_source": None if cost is None else "prices/x@1"}


@pytest.fixture
def hand(tmp_path):
    """Ten planned tasks at k = 3: five enter (t1-t5), two are shown other candidates (t6, t9), two are not
    k-eligible (t7, t8), one has no selection line (t10)."""
    plan = [(f"t{i}", 3) for i in range(1, 9)] + [("t9", 4), ("t10", 3)]
    records = (
        _task("t1", "ASA", (10, 20, 30), (100, 100, 100))
        + _task("t2", "AAS", (10, 10, 10), (100, 100, 100))
        + _task("t3", "SSS", (5, 5, 5), (50, 50, None))
        + _task("t4", "SAA", (100, 1, 1), (10, 10, 10))
        + _task("t5", "ASS", (1, 2, 3), (1, 1, 1))
        + _task("t6", "ASS", (1, 1, 1), (1, 1, 1))
        + _task("t7", "SE", (1, 1), (1, 1))
        + _task("t8", "SEA", (1, 1, 1), (1, 1, 1))
        + _task("t9", "AAAS", (1, 1, 1, 1), (1, 1, 1, 1), (None,) * 4)
        + _task("t10", "SSA", (1, 1, 1), (1, 1, 1))
    )
    run = write_run(tmp_path / "run", manifest(plan, k=K), records)
    write_selection(run, [
        pick("t1", 2, scores=[0.1, 0.9, 0.5], **_cost(5, 7, 0.002)),
        pick("t2", None, **_cost(None, 7, 0.002)),                          # abstained: no success
        pick("t3", 1, scores=[0.5, 0.5, 0.5], **_cost(1, 1, None)),         # all tied
        pick("t4", 3, scores=[0.2, 0.2, 0.7], **_cost(4, 5, 0.003)),        # missed the success of attempt 1
        pick("t5", 3, (3, 2, 1), scores=[0.9, 0.1, 0.8], **_cost(0, 0, 0.0)),  # 1..k in another order
        pick("t6", 2, (1, 2), scores=[0.4, 0.6]),                           # k-eligible, other candidates
        pick("t7", 1, (1,)),                                                # not k-eligible
        pick("t8", 3, scores=[0.1, 0.2, 0.3]),                              # not k-eligible; attempt 2 ineligible
        pick("t9", 4, (1, 2, 3, 4), scores=[0.1, 0.2, 0.3, 0.4]),           # beyond k
    ])
    return cb.load_run(run)


def _rate(successes, n, planned=10):
    low, high = proportion_confint(successes, n, alpha=0.05, method="wilson")
    return {"value": successes / n, "successes": successes, "n": n, "ci_low": pytest.approx(low, abs=1e-12),
            "ci_high": pytest.approx(high, abs=1e-12), "coverage": n / planned}


def test_every_quantity_of_a_hand_computed_run(hand):
    doc = selection_metrics(hand).to_dict()
    assert list(doc) == ["selector", "k", "entering", "metrics", "gap", "gap_closed", "abstentions",
                         "other_candidates", "mcnemar", "cost", "curve", "per_task", "single_attempt"]
    assert doc["selector"] == SELECTOR and doc["k"] == K and doc["entering"] == 5
    # t1-t5: picks succeed on t1, t3, t5; attempt 1 on t3, t4; some attempt on all five
    assert doc["metrics"] == {"selected@k": _rate(3, 5), "pass@1": _rate(2, 5), "pass@k": _rate(5, 5),
                              "selection_accuracy": _rate(3, 5)}
    assert doc["gap"] == pytest.approx(2 / 5) and doc["gap_closed"] == pytest.approx(1 / 3)
    assert (doc["abstentions"], doc["other_candidates"]) == (1, 2)
    assert doc["mcnemar"] == {"b": 2, "c": 1, "p": binomtest(1, 3, 0.5).pvalue}
    assert doc["per_task"] == [
        {"task_id": "t1", "selected": 2, "selected_success": True, "any_success": True},
        {"task_id": "t2", "selected": None, "selected_success": False, "any_success": True},
        {"task_id": "t3", "selected": 1, "selected_success": True, "any_success": True},
        {"task_id": "t4", "selected": 3, "selected_success": False, "any_success": True},
        {"task_id": "t5", "selected": 3, "selected_success": True, "any_success": True},
    ]


def _agg(values, *, integer=False):
    kept = [v for v in values if v is not None]
    arr = np.array(kept, dtype=float)
    out = {"n": len(kept), "nulls": len(values) - len(kept), "sum": pytest.approx(sum(kept)),
           "mean": pytest.approx(arr.mean()), "median": pytest.approx(float(np.median(arr))),
           "p90": pytest.approx(float(np.percentile(arr, 90))), "min": min(kept), "max": max(kept)}
    if integer:
        out["sum"] = sum(kept)
    return out


def test_cost_of_the_best_of_k_system_and_of_one_attempt(hand):
    doc = selection_metrics(hand).to_dict()
    # per entering task t1..t5: sums over attempts 1..3 plus the selector; null when any addend is
    assert doc["cost"]["cost"] == _agg([0.032, 0.032, None, 0.033, 0.03])
    assert doc["cost"]["wall_ms_sequential"] == _agg([65, None, 16, 106, 6])
    assert doc["cost"]["wall_ms_parallel"] == _agg([35, None, 6, 104, 3])
    assert doc["cost"]["total_tokens"] == _agg([307, 307, None, 35, 3], integer=True)
    assert doc["cost"]["wall_ms_parallel"]["median"] == 20.5 and doc["cost"]["total_tokens"]["sum"] == 652
    assert doc["single_attempt"]["cost"] == _agg([0.01] * 5)
    assert doc["single_attempt"]["task_wall_ms"] == _agg([10, 10, 5, 100, 1])
    assert doc["single_attempt"]["total_tokens"] == _agg([100, 100, 50, 10, 1], integer=True)


def test_the_curve_from_scores_by_hand(hand):
    # tasks with scores and every candidate eligible: t1, t3, t4, t5, t6 (2 candidates), t9 (4); not t8
    per_task = [(Fraction(1, 3), Fraction(2, 3)), (1, 1), (Fraction(1, 3), Fraction(1, 6)),
                (Fraction(2, 3), Fraction(2, 3)), (Fraction(1, 2), 1), (Fraction(1, 4), Fraction(1, 2))]
    want = [{"j": j, "value": float(sum(Fraction(v[j - 1]) for v in per_task) / 6), "n": 6} for j in (1, 2)]
    assert selection_metrics(hand).to_dict()["curve"] == want
    assert want[0]["value"] == 37 / 72 and want[1]["value"] == pytest.approx(2 / 3)


def test_the_table_form_is_the_run_form(hand):
    table = selection_metrics(hand.attempts, plan=hand.plan, k=hand.k, selection=hand.selection.lines,
                              selector=hand.selection.selector)
    assert table.to_dict() == selection_metrics(hand).to_dict()
    assert "selected@3 = 0.600" in repr(table) and "5 entering tasks" in repr(table)


def test_no_entering_task_gives_nulls_and_p_one(tmp_path):
    run = write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]), [record("t1", 1), record("t1", 2, "E"),
                                                                        record("t2", 1)])
    write_selection(run, [pick("t1", 1, (1, 2))])
    doc = selection_metrics(cb.load_run(run)).to_dict()
    empty = {"value": None, "successes": 0, "n": 0, "ci_low": None, "ci_high": None, "coverage": 0.0}
    assert doc["entering"] == 0 and doc["metrics"] == dict.fromkeys(doc["metrics"], empty)
    assert (doc["gap"], doc["gap_closed"], doc["mcnemar"]) == (None, None, {"b": 0, "c": 0, "p": 1.0})
    assert doc["curve"] == [] and doc["per_task"] == []
    assert doc["cost"]["cost"] == {"n": 0, "nulls": 0, "sum": None, "mean": None, "median": None, "p90": None,
                                   "min": None, "max": None}


def test_gap_closed_is_null_when_pass_at_k_equals_pass_at_1(tmp_path):
    run = write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]),
                    [record("t1", 1), record("t1", 2, "A"), record("t2", 1, "A"), record("t2", 2, "A")])
    write_selection(run, [pick("t1", 2, (1, 2)), pick("t2", 1, (1, 2))])
    doc = selection_metrics(cb.load_run(run)).to_dict()
    assert doc["gap_closed"] is None and doc["gap"] == 0.5 and doc["mcnemar"] == {"b": 0, "c": 1, "p": 1.0}


def test_a_run_without_selection(tmp_path):
    run = cb.load_run(write_run(tmp_path / "run", manifest([("t1", 1)]), [record("t1", 1)]))
    with pytest.raises(ValueError, match="no selection.jsonl"):
        selection_metrics(run)
    doc = cb.compute_metrics(run)
    assert "selection" not in doc and list(doc["anomaly_counts"]) == ["above_planned_repeats", "task_not_in_plan",
                                                                      "invalid_line"]
    assert list(doc["provenance"]["inputs"]) == ["manifest.json", "results.jsonl"]


def test_the_document_holds_the_block_and_the_hash(hand):
    doc = cb.compute_metrics(hand)
    assert doc["selection"] == json.loads(json.dumps(selection_metrics(hand).to_dict()))
    assert list(doc).index("selection") == list(doc).index("provenance") - 1
    assert doc["provenance"]["inputs"]["selection.jsonl"] == hand.hashes["selection.jsonl"]
    assert doc["anomaly_counts"]["invalid_selection_line"] == 0
    from capbench_nb.io.atomic import dumps
    assert dumps(doc) == dumps(cb.compute_metrics(cb.load_run(hand.path)))  # byte-identical


# --------------------------------------------------------------------------- against independent computations


def _brute_force(scores, ys) -> list[Fraction]:
    """Every j-subset, the top-scored member(s) picked uniformly: the exact mean success."""
    n, out = len(scores), []
    for j in range(1, n + 1):
        total, subsets = Fraction(0), 0
        for subset in itertools.combinations(range(n), j):
            top = max(scores[i] for i in subset)
            best = [i for i in subset if scores[i] == top]
            total += Fraction(sum(ys[i] for i in best), len(best))
            subsets += 1
        out.append(total / subsets)
    return out


@settings(PROFILE)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=7))
def test_the_curve_is_the_brute_force_over_every_subset(candidates):
    scores = [s / 4 for s, _ in candidates]  # few distinct scores: many ties
    ys = [y for _, y in candidates]
    assert top_of_j_curve(scores, ys, exact=True) == _brute_force(scores, ys)


_TASK = st.tuples(st.lists(st.booleans(), min_size=2, max_size=2), st.sampled_from([None, 1, 2]),
                  st.booleans())  # outcomes of attempts 1, 2; the pick; whether attempt 2 is eligible


@settings(max_examples=40, deadline=None)
@given(st.lists(_TASK, min_size=1, max_size=12))
def test_rates_and_mcnemar_against_a_direct_count(tasks):
    rows, lines = [], []
    for i, (won, selected, eligible) in enumerate(tasks):
        rows += [{"task_id": f"t{i}", "attempt": 1, "success": won[0], "agent_eligible": True},
                 {"task_id": f"t{i}", "attempt": 2, "success": won[1] and eligible, "agent_eligible": eligible}]
        lines.append({"task_id": f"t{i}", "candidates": (1, 2), "selected": selected, "scores": None,
                      "selector_ms": None, "selector_tokens": None, "selector_cost": None,
                      "selector_cost_source": None})
    attempts = pd.DataFrame(rows).assign(cost=pd.array([None] * len(rows), dtype="Float64"),
                                         task_wall_ms=pd.array([None] * len(rows), dtype="Float64"),
                                         total_tokens=pd.array([None] * len(rows), dtype="Int64"))
    plan = pd.DataFrame({"task_id": [f"t{i}" for i in range(len(tasks))], "planned_repeats": 2})
    got = selection_metrics(attempts, plan=plan, k=2, selection=selection_frame(lines, list(range(1, len(lines) + 1))))
    enter = [(won, s) for won, s, eligible in tasks if eligible]
    picked = [s is not None and won[s - 1] for won, s in enter]
    b = sum(p and not won[0] for p, (won, _) in zip(picked, enter))
    c = sum(won[0] and not p for p, (won, _) in zip(picked, enter))
    assert got.entering == len(enter) and got.rates["selected@k"].successes == sum(picked)
    assert got.rates["pass@k"].successes == sum(any(won) for won, _ in enter)
    assert got.rates["selection_accuracy"].n == sum(any(won) for won, _ in enter)
    assert got.mcnemar == {"b": b, "c": c, "p": binomtest(min(b, c), b + c, 0.5).pvalue if b + c else 1.0}
    assert got.abstentions == sum(s is None for _, s in enter)


def test_compute_metrics_of_a_run_with_a_selector_prepares_once(hand, monkeypatch):
    from capbench_nb.metrics.prepare import Prepared

    run = hand
    want = cb.compute_metrics(run)
    made, original = [], Prepared.__init__
    monkeypatch.setattr(Prepared, "__init__", lambda self, a, p: (made.append(1), original(self, a, p))[1])
    assert cb.compute_metrics(run) == want and "selection" in want
    assert len(made) == 1
