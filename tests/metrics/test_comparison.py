"""Comparing two runs (capbench_nb.metrics.comparison) and the paired statistics behind it (capbench_nb.metrics.stats).

- exact McNemar p-values against scipy's exact binomial test on the discordant pairs;
- Newcombe's hybrid score interval (method 10) against a step-by-step hand computation,
  its edge cases, and its coverage by simulation (the figures are printed: run with -s);
- every compatibility warning triggered by a minimal pair of runs, none for identical runs;
- paired counts, flips and telemetry deltas hand-computed on small runs (B minus A).

comparison.md, the files written and the notebook: tests/outputs/comparison/test_comparison_files.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import capbench_nb as cb
from capbench_nb.metrics.comparison import COMPARISON_SCHEMA_VERSION, compare_runs, paired_outcomes
from capbench_nb.metrics.compatibility import WARNING_CODES, compatibility_warnings
from capbench_nb.simulation.writer import simulate_run
from capbench_nb.metrics.stats import Z_95, mcnemar_exact, paired_difference_interval

from conftest import SAMPLE_RUN, manifest, outcomes, pick, record, write_run, write_selection
from hypothesis_profiles import PROFILE

# =========================================================================== McNemar


def test_mcnemar_matches_scipy_binomtest_on_a_grid():
    cases = [(b, c) for b in range(41) for c in range(41)] + [(500, 560), (1000, 1100), (3, 2000), (777, 777)]
    worst = 0.0
    for b, c in cases:
        got = mcnemar_exact(b, c)
        if b + c == 0:
            assert got == 1.0
            continue
        want = sps.binomtest(min(b, c), b + c, 0.5).pvalue
        worst = max(worst, abs(got - want) / max(want, 1e-300))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15), (b, c)
    print(f"\nMcNemar exact vs scipy binomtest: {len(cases)} tables, largest relative difference {worst:.2e}")


def test_mcnemar_symmetric_and_in_range():
    for b in range(15):
        for c in range(15):
            p = mcnemar_exact(b, c)
            assert p == mcnemar_exact(c, b)
            assert 0.0 < p <= 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 * 0.5**6)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


# =========================================================================== Newcombe interval


def _hand_newcombe(both, a_only, b_only, neither, z=Z_95):
    """Newcombe (1998) method 10, written out step by step from the formulas (no capbench code)."""
    n = both + a_only + b_only + neither
    x_a, x_b = both + a_only, both + b_only          # successes of A and of B
    p_a, p_b = x_a / n, x_b / n
    theta = p_b - p_a

    def wilson(x):
        p = x / n
        centre = (2 * n * p + z * z) / (2 * (n + z * z))
        half = z * math.sqrt(4 * n * p * (1 - p) + z * z) / (2 * (n + z * z))
        return (0.0 if x == 0 else centre - half), (1.0 if x == n else centre + half)

    l_a, u_a = wilson(x_a)
    l_b, u_b = wilson(x_b)
    # phi with Newcombe's correction (Altman et al. 2000, p. 52)
    margins = [x_b, n - x_b, x_a, n - x_a]
    cross = both * neither - a_only * b_only
    if 0 in margins:
        phi = 0.0
    elif cross > n / 2:
        phi = (cross - n / 2) / math.sqrt(math.prod(margins))
    elif cross >= 0:
        phi = 0.0
    else:
        phi = cross / math.sqrt(math.prod(margins))
    d1, d2 = p_b - l_b, u_a - p_a
    lower = theta - math.sqrt(d1**2 - 2 * phi * d1 * d2 + d2**2)
    e1, e2 = u_b - p_b, p_a - l_a
    upper = theta + math.sqrt(e1**2 - 2 * phi * e1 * e2 + e2**2)
    return lower, upper, phi


@pytest.mark.parametrize(
    "table, phi_case",
    [
        ((59, 16, 6, 80), "cross > n/2: corrected phi"),     # ad - bc = 4624 > 80.5
        ((1, 7, 1, 12), "0 <= cross <= n/2: phi = 0"),        # ad - bc = 5 <= 10.5
        ((3, 9, 2, 1), "cross < 0: plain phi"),               # ad - bc = -15
        ((0, 0, 4, 6), "a zero margin: phi = 0"),             # A never succeeded
        ((20, 3, 11, 6), "cross > n/2"),
    ],
)
def test_newcombe_against_hand_computation(table, phi_case):
    low, high = paired_difference_interval(*table)
    want_low, want_high, phi = _hand_newcombe(*table)
    assert low == pytest.approx(want_low, abs=1e-12)
    assert high == pytest.approx(want_high, abs=1e-12)
    print(f"\n{table} ({phi_case}, phi = {phi:.6f}): [{low:.6f}, {high:.6f}]")


def test_newcombe_worked_numbers():
    # (both, a_only, b_only, neither) = (1, 7, 1, 12): n = 21, p_A = 8/21, p_B = 2/21, theta = -6/21;
    # ad - bc = 12 - 7 = 5 <= n/2, so phi = 0 and the limits are the square-and-add of the Wilson limits.
    low, high = paired_difference_interval(1, 7, 1, 12)
    assert (low, high) == pytest.approx((-0.506920226686, -0.025559124165), abs=1e-11)
    # B minus A: the same table with the runs swapped gives the mirrored interval.
    assert paired_difference_interval(1, 1, 7, 12) == pytest.approx((-high, -low), abs=1e-15)


def test_newcombe_edge_cases():
    assert paired_difference_interval(0, 0, 0, 0) == (None, None)
    # no discordant pair: theta = 0, a symmetric interval of positive width
    low, high = paired_difference_interval(10, 0, 0, 10)
    assert low == pytest.approx(-high) and high > 0
    # all discordant: phi = -1, the limits become l_B - u_A and u_B - l_A
    low, high = paired_difference_interval(0, 3, 7, 0)
    l_a, u_a = cb.wilson_interval(3, 10)
    l_b, u_b = cb.wilson_interval(7, 10)
    assert (low, high) == pytest.approx((l_b - u_a, u_b - l_a), abs=1e-12)
    # every pair a success in both: theta = 0, zero margins, interval stays in [-1, 1]
    low, high = paired_difference_interval(5, 0, 0, 0)
    assert -1 < low < 0 < high < 1
    # everything B only: theta = 1, the upper limit is 1
    low, high = paired_difference_interval(0, 0, 12, 0)
    assert high == 1.0 and 0 < low < 1
    with pytest.raises(ValueError):
        paired_difference_interval(1, -1, 0, 0)


@settings(PROFILE)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_newcombe_contains_estimate_and_mirrors(both, a_only, b_only, neither):
    n = both + a_only + b_only + neither
    low, high = paired_difference_interval(both, a_only, b_only, neither)
    if n == 0:
        assert (low, high) == (None, None)
        return
    theta = (b_only - a_only) / n
    assert -1.0 <= low <= theta <= high <= 1.0
    swapped = paired_difference_interval(both, b_only, a_only, neither)
    assert swapped == pytest.approx((-high, -low), abs=1e-12)


# Known multinomial models (both, a_only, b_only, neither) and numbers of paired tasks.
COVERAGE_MODELS = [
    (30, (0.40, 0.10, 0.20, 0.30)),
    (50, (0.55, 0.05, 0.15, 0.25)),
    (100, (0.30, 0.15, 0.15, 0.40)),
    (40, (0.70, 0.02, 0.08, 0.20)),
]


def _coverage(n, probs, reps, rng):
    tables = rng.multinomial(n, probs, size=reps)
    unique, inverse = np.unique(tables, axis=0, return_inverse=True)
    intervals = np.array([paired_difference_interval(*map(int, t)) for t in unique])
    low, high = intervals[inverse.ravel(), 0], intervals[inverse.ravel(), 1]
    theta = probs[2] - probs[1]
    return float(np.mean((low <= theta) & (theta <= high)))


def test_newcombe_coverage_by_simulation():
    rng = np.random.default_rng(20261128)
    reps = 20_000
    print(f"\nNewcombe method 10, 95% interval: coverage of B minus A over {reps} simulated paired tables")
    figures = []
    for n, probs in COVERAGE_MODELS:
        cov = _coverage(n, probs, reps, rng)
        figures.append(cov)
        se = math.sqrt(cov * (1 - cov) / reps)
        print(f"  n = {n:3d}, cells {probs}, theta = {probs[2] - probs[1]:+.2f}: coverage {cov:.4f} (MC se {se:.4f})")
        assert 0.93 <= cov <= 0.975, (n, probs, cov)
    print(f"  mean coverage {np.mean(figures):.4f}")


# =========================================================================== runs for the comparisons


def _run(tmp_path: Path, name: str, doc: dict, records: list) -> cb.Run:
    return cb.load_run(write_run(tmp_path / name, doc, records))


def _manifest(tasks=(("t1", 2), ("t2", 2), ("t3", 2)), **kw) -> dict:
    return manifest(list(tasks), **kw)


def _with_artifacts(path: Path, records: list, assertions: dict, *, judge_enabled: bool | None = None) -> list:
    """Give each record an artifact directory with an attempt.json naming the task's hard assertions."""
    out = []
    for rec in records:
        rel = f"attempts/{rec['task_id']}/{rec['attempt']}"
        evaluation = {"hard_assertions": [{"name": n, "passed": rec["success"]} for n in assertions[rec["task_id"]]]}
        if judge_enabled is not None:
            evaluation["judge_enabled"] = judge_enabled
        (path / rel).mkdir(parents=True, exist_ok=True)
        (path / rel / "attempt.json").write_text(json.dumps({"task_id": rec["task_id"], "attempt": rec["attempt"],
                                                             "evaluation": evaluation}), encoding="utf-8")
        out.append({**rec, "artifact_dir": rel})
    return out


BASE_OUTCOMES = {"t1": "SA", "t2": "AS", "t3": "SS"}


def _mutate(code: str, doc: dict, recs: list) -> tuple[dict, list]:
    doc = copy.deepcopy(doc)
    if code == "suite":
        doc["suite"]["name"] = "other-suite"
    elif code == "suite_version":
        doc["suite"]["version"] = "2"
    elif code == "task_set":
        doc["plan"]["tasks"].append({"task_id": "t4", "repeats": 2})
    elif code == "k":
        for t in doc["plan"]["tasks"]:
            t["repeats"] = 3
    elif code == "lock":  # spec section 12: B names a lock, A none (tests/suite/test_diff.py: two copies)
        doc["suite"]["lock"] = "sha256:" + "1" * 64
    elif code == "judge":
        doc["config"]["judge"] = False
    elif code == "model":
        doc["config"]["model"] = "m-other"
    elif code == "config":
        doc["config"]["provider"] = "p2"
    elif code == "toolkit_version":
        doc["runner"]["version"] = "1"
    elif code == "evaluation_contract":
        doc["config"]["judge_model"] = "j-2"
    return doc, recs


def test_identical_runs_have_no_warning(tmp_path):
    doc = _manifest()
    a = _run(tmp_path, "a", doc, outcomes(BASE_OUTCOMES))
    b = _run(tmp_path, "b", doc, outcomes(BASE_OUTCOMES))
    assert compatibility_warnings(a, b) == []
    result = compare_runs(a, b)
    assert result["compatibility"] == {"compatible": True, "warnings": [], "unchecked": [
        {"code": "evaluation_contract", "reason": result["compatibility"]["unchecked"][0]["reason"], "tasks_checked": 0}]}
    # without artifact directories the hard assertions cannot be read: said, not passed over
    assert "attempt.json" in result["compatibility"]["unchecked"][0]["reason"]


@pytest.mark.parametrize("code", WARNING_CODES)
def test_each_warning_from_a_minimal_pair(tmp_path, code):
    doc = _manifest()
    recs = outcomes(BASE_OUTCOMES)
    a = _run(tmp_path, "a", doc, recs)
    doc_b, recs_b = _mutate(code, doc, recs)
    b = _run(tmp_path, "b", doc_b, recs_b)
    warnings = compatibility_warnings(a, b)
    assert [w["code"] for w in warnings] == [code]
    assert set(warnings[0]) == {"code", "message", "details"} and warnings[0]["message"]
    # the reverse direction warns the same way
    assert [w["code"] for w in compatibility_warnings(b, a)] == [code]
    result = compare_runs(a, b)
    assert result["compatibility"]["compatible"] is False


def test_task_set_warning_gives_the_overlap(tmp_path):
    a = _run(tmp_path, "a", _manifest([("t1", 1), ("t2", 1), ("t3", 1)]), outcomes({"t1": "S", "t2": "A", "t3": "S"}))
    b = _run(tmp_path, "b", _manifest([("t2", 1), ("t3", 1), ("t4", 1), ("t5", 1)]),
             outcomes({"t2": "S", "t3": "S", "t4": "S", "t5": "A"}))
    (w,) = compatibility_warnings(a, b)
    assert w["code"] == "task_set"
    assert w["details"] == {"a": 3, "b": 4, "common": 2, "only_in_a": 1, "only_in_b": 2}
    assert "2 in common" in w["message"]
    result = compare_runs(a, b)
    assert result["tasks"] == {"common": 2, "only_in_a": ["t1"], "only_in_b": ["t4", "t5"]}
    assert result["paired"]["pass@1"]["n_pairs"] == 2


def test_different_k_compares_at_the_smaller_k(tmp_path):
    a = _run(tmp_path, "a", _manifest([("t1", 2), ("t2", 2)]), outcomes({"t1": "SA", "t2": "SS"}))
    b = _run(tmp_path, "b", _manifest([("t1", 3), ("t2", 3)]), outcomes({"t1": "SSA", "t2": "ASS"}))
    (w,) = compatibility_warnings(a, b)
    assert w["code"] == "k" and w["details"] == {"a": 2, "b": 3, "paired": 2}
    assert "k = 2, the smaller" in w["message"]
    result = compare_runs(a, b)
    assert result["k"] == {"a": 2, "b": 3, "paired": 2}
    assert result["paired"]["pass^k"]["k"] == 2 and result["paired"]["pass@k"]["k"] == 2
    # pass^2: A t1 no, t2 yes; B (attempts 1..2) t1 yes, t2 no
    assert result["flips"]["pass^k"] == {"a_only": ["t2"], "b_only": ["t1"]}


def test_judge_mode_as_enabled_in_the_artifacts(tmp_path):
    doc = _manifest()
    assertions = {"t1": ["x"], "t2": ["y"], "t3": ["z"]}
    recs_a = _with_artifacts(tmp_path / "a", outcomes(BASE_OUTCOMES), assertions, judge_enabled=True)
    recs_b = _with_artifacts(tmp_path / "b", outcomes(BASE_OUTCOMES), assertions, judge_enabled=False)
    a, b = _run(tmp_path, "a", doc, recs_a), _run(tmp_path, "b", doc, recs_b)
    (w,) = compatibility_warnings(a, b)
    assert w["code"] == "judge" and w["details"]["tasks"] == ["t1", "t2", "t3"]
    assert compare_runs(a, b)["compatibility"]["unchecked"] == []


def test_hard_assertions_differ_is_the_evaluation_contract(tmp_path):
    doc = _manifest()
    recs_a = _with_artifacts(tmp_path / "a", outcomes(BASE_OUTCOMES), {"t1": ["x"], "t2": ["y", "w"], "t3": ["z"]})
    recs_b = _with_artifacts(tmp_path / "b", outcomes(BASE_OUTCOMES), {"t1": ["x"], "t2": ["y"], "t3": ["z"]})
    a, b = _run(tmp_path, "a", doc, recs_a), _run(tmp_path, "b", doc, recs_b)
    (w,) = compatibility_warnings(a, b)
    assert w["code"] == "evaluation_contract" and w["details"]["tasks"] == ["t2"]
    assert '["w", "y"]' in w["message"]
    # the same assertions in another order are the same contract
    recs_c = _with_artifacts(tmp_path / "c", outcomes(BASE_OUTCOMES), {"t1": ["x"], "t2": ["w", "y"], "t3": ["z"]})
    assert compatibility_warnings(a, _run(tmp_path, "c", doc, recs_c)) == []


# =========================================================================== paired analysis

# Plan t1..t7, 2 repeats, k = 2.  ("E" environment: ineligible; "." missing)
PAIRED_A = {"t1": "SS", "t2": "AS", "t3": "SA", "t4": "AA", "t5": "ES", "t6": "S.", "t7": "AA"}
PAIRED_B = {"t1": "AS", "t2": "SS", "t3": "SS", "t4": "AA", "t5": "SS", "t6": "SS", "t7": "SS"}


@pytest.fixture
def paired_runs(tmp_path):
    doc = _manifest([(t, 2) for t in PAIRED_A])
    return _run(tmp_path, "a", doc, outcomes(PAIRED_A)), _run(tmp_path, "b", doc, outcomes(PAIRED_B))


def test_paired_counts_by_hand(paired_runs):
    a, b = paired_runs
    doc = compare_runs(a, b)
    p1, pk, ph = doc["paired"]["pass@1"], doc["paired"]["pass@k"], doc["paired"]["pass^k"]
    # pass@1: t5 out (A's attempt 1 ineligible); A wins t1, B wins t2 and t7; t3, t6 both; t4 neither
    assert {key: p1[key] for key in ("n_pairs", "both", "a_only", "b_only", "neither")} == \
        {"n_pairs": 6, "both": 2, "a_only": 1, "b_only": 2, "neither": 1}
    assert p1["difference"] == pytest.approx(1 / 6)              # B minus A: B is better
    assert p1["a_value"] == pytest.approx(3 / 6) and p1["b_value"] == pytest.approx(4 / 6)
    assert p1["mcnemar_p"] == pytest.approx(sps.binomtest(1, 3, 0.5).pvalue)
    assert (p1["ci_low"], p1["ci_high"]) == pytest.approx(paired_difference_interval(2, 1, 2, 1))
    assert p1["ci_low"] < p1["difference"] < p1["ci_high"]
    assert p1["method"].startswith("Newcombe")
    # k = 2: t5 (ineligible) and t6 (attempt 2 missing in A) are not k-eligible in both
    assert {key: pk[key] for key in ("k", "n_pairs", "both", "a_only", "b_only", "neither")} == \
        {"k": 2, "n_pairs": 5, "both": 3, "a_only": 0, "b_only": 1, "neither": 1}
    assert {key: ph[key] for key in ("n_pairs", "both", "a_only", "b_only", "neither")} == \
        {"n_pairs": 5, "both": 0, "a_only": 1, "b_only": 3, "neither": 1}
    assert ph["difference"] == pytest.approx(0.4)
    assert ph["mcnemar_p"] == pytest.approx(sps.binomtest(1, 4, 0.5).pvalue)
    # the reverse comparison flips every sign
    back = compare_runs(b, a)["paired"]["pass^k"]
    assert back["difference"] == pytest.approx(-0.4)
    assert (back["ci_low"], back["ci_high"]) == pytest.approx((-ph["ci_high"], -ph["ci_low"]))


def test_flips(paired_runs):
    a, b = paired_runs
    flips = compare_runs(a, b)["flips"]
    assert flips == {
        "pass@1": {"a_only": ["t1"], "b_only": ["t2", "t7"]},
        "pass@k": {"a_only": [], "b_only": ["t7"]},
        "pass^k": {"a_only": ["t1"], "b_only": ["t2", "t3", "t7"]},
    }


def test_document_keys_and_provenance(paired_runs):
    a, b = paired_runs
    doc = compare_runs(a, b)
    assert list(doc) == ["schema_version", "run_a", "run_b", "compatibility", "tasks", "k", "paired", "flips",
                         "telemetry", "methods", "provenance"]
    assert doc["schema_version"] == COMPARISON_SCHEMA_VERSION
    for entry in doc["paired"].values():
        assert {"n_pairs", "both", "a_only", "b_only", "neither", "difference", "ci_low", "ci_high", "method",
                "mcnemar_p"} <= set(entry)
    for side, run in (("a", a), ("b", b)):
        for name in ("manifest.json", "results.jsonl"):
            digest = "sha256:" + hashlib.sha256((run.path / name).read_bytes()).hexdigest()
            assert doc["provenance"]["inputs"][side][name] == digest
    assert doc["provenance"]["options"] == {"seed": 0, "n_boot": 2000, "confidence": 0.95,
                                            "allow_invalid": {"a": False, "b": False}}
    assert doc["run_a"]["run_id"] == "test-run" and doc["run_a"]["k"] == 2


def test_no_pairs_gives_nulls(tmp_path):
    doc = _manifest([("t1", 1), ("t2", 1)])
    a = _run(tmp_path, "a", doc, outcomes({"t1": "E", "t2": "K"}))
    b = _run(tmp_path, "b", doc, outcomes({"t1": "S", "t2": "S"}))
    p1 = compare_runs(a, b)["paired"]["pass@1"]
    assert p1["n_pairs"] == 0
    assert p1["difference"] is p1["ci_low"] is p1["ci_high"] is p1["mcnemar_p"] is p1["a_value"] is None


def test_paired_outcomes_rejects_unknown_metric(paired_runs):
    a, b = paired_runs
    with pytest.raises(ValueError):
        paired_outcomes(a.records, a.plan, b.records, b.plan, metric="pass@2", k=2)


def test_simulated_runs_paired_as_the_truth_says(tmp_path):
    """Two simulated runs (the project's simulator) paired by compare_runs = pairing their truth by hand."""
    dirs = []
    for seed, alpha in ((11, 1.5), (12, 3.0)):
        d = simulate_run(tmp_path / f"s{seed}", tasks=25, repeats=3, seed=seed, success_alpha=alpha,
                         short_tasks=1, missing_attempts=2, extra_attempts=1)
        dirs.append(d)
    runs = [cb.load_run(d) for d in dirs]
    doc = compare_runs(*runs)

    def by_task(d):
        truth = json.loads((d / "simulation.json").read_text())
        planned = {t["task_id"]: t["planned_repeats"] for t in truth["tasks"]}
        out = {t: {} for t in planned}
        for x in truth["attempts"]:
            if x["attempt"] <= planned[x["task_id"]]:
                out[x["task_id"]][x["attempt"]] = x["record"]
        return out, min(planned.values())

    (ta, ka), (tb, kb) = by_task(dirs[0]), by_task(dirs[1])
    k = min(ka, kb)
    for name in ("pass@1", "pass@k", "pass^k"):
        kk = 1 if name == "pass@1" else k
        cells = {"both": 0, "a_only": 0, "b_only": 0, "neither": 0}
        for t in ta:
            ra, rb = ta[t], tb[t]
            if not all(j in ra and ra[j]["agent_eligible"] and j in rb and rb[j]["agent_eligible"]
                       for j in range(1, kk + 1)):
                continue
            agg = all if name == "pass^k" else any
            x, y = agg(ra[j]["success"] for j in range(1, kk + 1)), agg(rb[j]["success"] for j in range(1, kk + 1))
            cells["both" if x and y else "a_only" if x else "b_only" if y else "neither"] += 1
        got = doc["paired"][name]
        assert {key: got[key] for key in cells} == cells, name
        assert got["n_pairs"] == sum(cells.values())


# =========================================================================== telemetry deltas


def _tele(task, attempt, code, wall, tokens):
    return record(task, attempt, code, telemetry={"task_wall_ms": wall, "total_tokens": tokens})


def test_telemetry_deltas_by_hand_and_deterministic(tmp_path):
    doc = _manifest([("t1", 2), ("t2", 2), ("t3", 2)])
    recs_a = [_tele("t1", 1, "S", 100.0, 10), _tele("t1", 2, "A", 300.0, 30),
              _tele("t2", 1, "S", 200.0, None), _tele("t2", 2, "E", 999.0, 999),
              _tele("t3", 1, "A", 400.0, 40), _tele("t3", 2, "S", 500.0, 50)]
    recs_b = [_tele("t1", 1, "S", 150.0, 15), _tele("t1", 2, "S", 250.0, 25),
              _tele("t2", 1, "A", 260.0, 26), _tele("t2", 2, "S", 10.0, 1),
              _tele("t3", 1, "S", 800.0, 80), _tele("t3", 2, "A", None, 70)]
    a, b = _run(tmp_path, "a", doc, recs_a), _run(tmp_path, "b", doc, recs_b)
    tel = compare_runs(a, b, seed=3)["telemetry"]
    # wall: pairs (t1,1) (t1,2) (t2,1) (t3,1); (t2,2) is ineligible in A, (t3,2) null in B
    wall = tel["task_wall_ms"]
    assert (wall["n_pairs"], wall["n_tasks"]) == (4, 3)
    assert wall["a_median"] == np.median([100, 300, 200, 400])
    assert wall["b_median"] == np.median([150, 250, 260, 800])
    assert wall["difference"] == pytest.approx(wall["b_median"] - wall["a_median"])
    # tokens: (t2,1) is null in A; (t3,2) has both
    tokens = tel["total_tokens"]
    assert (tokens["n_pairs"], tokens["n_tasks"]) == (4, 2)
    assert tokens["a_median"] == np.median([10, 30, 40, 50]) and tokens["b_median"] == np.median([15, 25, 80, 70])
    # an independent implementation of the clustered bootstrap: resample tasks with replacement
    rng = np.random.default_rng(3)
    clusters = [([100.0, 300.0], [150.0, 250.0]), ([200.0], [260.0]), ([400.0], [800.0])]
    deltas = []
    for _ in range(2000):
        pick = rng.integers(0, 3, size=3)
        counts = np.bincount(pick, minlength=3)
        xs = [v for i in range(3) for _ in range(counts[i]) for v in clusters[i][0]]
        ys = [v for i in range(3) for _ in range(counts[i]) for v in clusters[i][1]]
        deltas.append(np.median(ys) - np.median(xs))
    assert (wall["ci_low"], wall["ci_high"]) == pytest.approx(tuple(np.percentile(deltas, [2.5, 97.5])), abs=1e-9)
    # deterministic with the seed
    assert compare_runs(a, b, seed=3)["telemetry"] == tel
    other = compare_runs(a, b, seed=4)["telemetry"]["task_wall_ms"]
    assert other["difference"] == wall["difference"] and "seed = 4" in other["method"]


def test_telemetry_null_without_data(paired_runs):
    a, b = paired_runs  # every telemetry value null
    for entry in compare_runs(a, b)["telemetry"].values():
        assert entry["n_pairs"] == 0 and entry["n_tasks"] == 0
        assert entry["a_median"] is entry["b_median"] is entry["difference"] is entry["ci_low"] is entry["ci_high"] is None


def test_no_bootstrap_with_n_boot_zero(tmp_path):
    doc = _manifest([("t1", 1)])
    a = _run(tmp_path, "a", doc, [_tele("t1", 1, "S", 100.0, 10)])
    b = _run(tmp_path, "b", doc, [_tele("t1", 1, "S", 130.0, 12)])
    wall = compare_runs(a, b, n_boot=0)["telemetry"]["task_wall_ms"]
    assert wall["difference"] == 30.0 and wall["ci_low"] is None
    one = compare_runs(a, b)["telemetry"]["task_wall_ms"]  # one task: every resample is the same
    assert one["ci_low"] == one["ci_high"] == 30.0
    with pytest.raises(ValueError):
        compare_runs(a, b, n_boot=-1)


# =========================================================================== the sample run


def test_sample_run_against_itself():
    run = cb.load_run(SAMPLE_RUN)
    doc = compare_runs(run, run)
    assert doc["compatibility"]["warnings"] == [] and doc["compatibility"]["unchecked"] == []
    for entry in doc["paired"].values():
        assert entry["difference"] == 0.0 and entry["mcnemar_p"] == 1.0 and entry["a_only"] == entry["b_only"] == 0
        assert entry["ci_low"] < 0 < entry["ci_high"]
    assert doc["telemetry"]["task_wall_ms"]["difference"] == 0.0


# =========================================================================== --allow-diff


def test_check_warning_kinds_keeps_order_and_refuses_unknown_kinds():
    from capbench_nb.metrics.compatibility import WARNING_CODES, check_warning_kinds

    assert check_warning_kinds(["model", "config", "model"]) == ("model", "config")
    assert check_warning_kinds([]) == ()
    with pytest.raises(ValueError) as info:
        check_warning_kinds(["model", "modle"])
    message = str(info.value)
    assert '"modle"' in message and "\n" not in message
    assert all(code in message for code in WARNING_CODES)


def test_blocking_warnings_are_those_not_allowed():
    from capbench_nb.metrics.compatibility import blocking_warnings

    warnings = [{"code": "suite_version", "message": "x", "details": {}},
                {"code": "model", "message": "y", "details": {}}]
    assert blocking_warnings(warnings) == warnings
    assert blocking_warnings(warnings, ["model"]) == [warnings[0]]
    assert blocking_warnings(warnings, ["model", "suite_version"]) == []
    with pytest.raises(ValueError):
        blocking_warnings(warnings, ["nope"])


# --------------------------------------------------------------------------- best-of-k with a selector


def test_selected_at_k_is_paired_when_both_runs_have_a_selection(tmp_path):
    plan = manifest([("t1", 2), ("t2", 2), ("t3", 2), ("t4", 2)])
    a = write_run(tmp_path / "a", plan, outcomes({"t1": "AS", "t2": "SS", "t3": "AS", "t4": "SA"}))
    b = write_run(tmp_path / "b", plan, outcomes({"t1": "AS", "t2": "SS", "t3": "AS", "t4": "S."}))
    write_selection(a, [pick("t1", 1, (1, 2)), pick("t2", 1, (1, 2)), pick("t3", 2, (1, 2)), pick("t4", 1, (1, 2))])
    write_selection(b, [pick("t1", 2, (1, 2)), pick("t2", None, (1, 2)), pick("t3", 2, (1, 2))])
    doc = compare_runs(cb.load_run(a), cb.load_run(b))
    # paired: t1-t3 (t4 is not k-eligible in B); A's picks succeed on t2, t3; B's on t1, t3
    e = doc["paired"]["selected@k"]
    assert (e["k"], e["n_pairs"], e["both"], e["a_only"], e["b_only"], e["neither"]) == (2, 3, 1, 1, 1, 0)
    assert e["mcnemar_p"] == 1.0 and doc["flips"]["selected@k"] == {"a_only": ["t2"], "b_only": ["t1"]}
    assert doc["provenance"]["inputs"]["a"]["selection.jsonl"] == cb.load_run(a).hashes["selection.jsonl"]
    assert "selection" in doc["methods"]
    (b / "selection.jsonl").unlink()
    doc = compare_runs(cb.load_run(a), cb.load_run(b))
    assert "selected@k" not in doc["paired"] and "selection" not in doc["methods"]
    assert list(doc["provenance"]["inputs"]["b"]) == ["manifest.json", "results.jsonl"]
