"""A board of many runs (capbench_nb.metrics.board, spec section 10), on hand-computed boards.

- common ground: common tasks in the first run's order, the tasks left out, the common k;
- values with Wilson intervals and coverage over the common tasks; pairs (n, a_only, b_only) against
  a direct tabulation and McNemar's p against statsmodels; Holm against statsmodels' multipletests;
- groups: Holm changing a decision, a run joining a later group, a run with little evidence joining
  the first, ties keeping input order; ranks and the bootstrap rank interval (its definition, its
  seed);
- cost per attempt, a dominated run, an unpriced run (named, never on the cost axis);
- a simulation with known success probabilities: runs of equal truth share a group in >= 95% of
  seeds and the family-wise error stays at or under alpha.
- selected@k (spec section 9 on the common tasks): values, outcomes, pairs and p against scipy on
  hand-made selection files; null with its reason (no selection file, another k) and a family of its
  own; refused as the board's metric unless every run has one; absent from a board without selection.

board.md, board.html and the command line: tests/outputs/board/test_board_files.py and test_board_page.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics.board import BOARD_SCHEMA_VERSION, board, frontier_flags
from capbench_nb.metrics.board_stats import board_groups, board_ranks, holm_adjust, pair_tests, rank_intervals
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.metrics.stats import wilson_interval

from conftest import SELECTOR, manifest, outcomes, record, selection_board, write_run


def make(root, name, spec, *, k=None, model="m", cost=None, costs=None):
    """A run ``name`` from ``{"t1": "SA", ...}`` (codes of conftest.outcomes); every record costs ``cost``
    (None: unpriced) unless ``costs`` names the cost of some (task, attempt)."""
    tasks = [(t, max(len(c), 1)) for t, c in spec.items()]
    doc = manifest(tasks, k=k)
    doc["run_id"] = name
    doc["config"]["model"] = model
    records = []
    for rec in outcomes(spec):
        value = (costs or {}).get((rec["task_id"], rec["attempt"]), cost)
        if value is not None:
            rec.update(cost=value, cost_source="prices/test@1")
        records.append(rec)
    return cb.load_run(write_run(root / name, doc, records))


def runs_of(root, columns: dict[str, str], **kw):
    """One run per column: ``{"A": "SSAS", ...}``, task i of every run has attempt 1 = the column's i-th code."""
    return [make(root, name, {f"t{i}": code for i, code in enumerate(codes)}, **kw) for name, codes in columns.items()]


def pairs_of(doc, metric="pass@1"):
    return {(p["a"], p["b"]): p for p in doc["pairs"] if p["metric"] == metric}


# =========================================================================== common ground and values


def test_common_ground_values_and_the_document(tmp_path):
    a = make(tmp_path, "a", {"t1": "SS", "t2": "AS", "t3": "SA", "x": "SS"})
    b = make(tmp_path, "b", {"t3": "SSS", "t2": "EAS", "t1": "AAA", "y": "S.."})
    doc = board([a, b], resamples=50)
    assert doc["schema_version"] == BOARD_SCHEMA_VERSION and doc["metric"] == "pass@1" and doc["alpha"] == 0.05
    # planned in every run, in the first run's order; the rest sorted; the smallest k
    assert doc["common"] == {"k": 2, "tasks": 3, "not_common": ["x", "y"], "task_ids": ["t1", "t2", "t3"]}
    ra, rb = doc["runs"]
    # a: t1 SS, t2 AS, t3 SA -> pass@1 2/3, pass@2 3/3, pass^2 1/3
    assert [ra["values"][m]["successes"] for m in ("pass@1", "pass@k", "pass^k")] == [2, 3, 1]
    low, high = wilson_interval(2, 3)
    assert ra["values"]["pass@1"] == {"value": 2 / 3, "successes": 2, "n": 3, "ci_low": low, "ci_high": high,
                                      "coverage": 1.0}
    # b at k = 2 (its own k is 3): t1 AA, t2 EA (attempt 1 ineligible: out of pass@1 and of pass@2), t3 SS
    assert rb["k"] == 3
    assert rb["values"]["pass@1"]["n"] == 2 and rb["values"]["pass@1"]["coverage"] == 2 / 3
    assert [rb["values"][m]["successes"] for m in ("pass@1", "pass@k", "pass^k")] == [1, 1, 1]
    assert rb["outcomes"] == {"pass@1": "0.1", "pass@k": "0.1", "pass^k": "0.1"}
    assert ra["outcomes"] == {"pass@1": "101", "pass@k": "111", "pass^k": "100"}
    assert [p["pass^j"]["successes"] for p in ra["curve"]] == [2, 1] and [p["j"] for p in rb["curve"]] == [1, 2]
    # pairs: pass@1 on t1 and t3 (t2 ineligible in b): t1 a only, t3 both
    p = pairs_of(doc)[(0, 1)]
    assert (p["n"], p["a_only"], p["b_only"], p["difference"], p["p"]) == (2, 1, 0, 0.5, 1.0)
    assert [w["code"] for w in doc["compatibility"]["warnings"]] == ["task_set", "k"]
    assert doc["compatibility"]["warnings"][0]["runs"] == [0, 1]
    assert doc["provenance"]["inputs"] == [a.hashes, b.hashes]
    assert doc["provenance"]["allow_invalid"] == [False, False] and doc["provenance"]["evidence_checked"] == [True, True]
    # the same runs and seed give the same bytes; paths load like runs
    assert dumps(cb.board([tmp_path / "a", tmp_path / "b"], resamples=50)) == dumps(doc)
    with pytest.raises(TypeError, match="loaded runs"):  # the metrics function reads no directory
        board([tmp_path / "a", tmp_path / "b"], resamples=50)


def test_options_and_too_few_runs_are_refused_in_one_sentence(tmp_path):
    a = make(tmp_path, "a", {"t1": "S"})
    for kwargs, text in (({}, "a board compares at least 2 runs, got 1"),
                         ({"metric": "pass@2"}, "unknown board metric 'pass@2'"),
                         ({"alpha": 0.0}, "alpha must be a number in (0, 1)"),
                         ({"seed": -1}, "seed must be an integer from 0 to 9,007,199,254,740,991 (MAX_SAFE_NUMBER)"),
                         ({"seed": 2**53}, "seed must be an integer from 0 to 9,007,199,254,740,991"),
                         ({"resamples": 1.5}, "resamples must be an integer from 0 to 1,000,000 (MAX_RESAMPLES)"),
                         ({"resamples": 10**12}, "resamples must be an integer from 0 to 1,000,000 (MAX_RESAMPLES)")):
        with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
            board([a] if not kwargs else [a, a], **kwargs)


# =========================================================================== pairs and Holm, independently


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(".01"), min_size=6, max_size=6), min_size=3, max_size=4))
def test_pairs_match_a_direct_tabulation_and_statsmodels(columns):
    eligible = np.array([[c != "." for c in col] for col in columns])
    success = np.array([[c == "1" for c in col] for col in columns])
    for t in pair_tests(eligible, success):
        both = eligible[t["a"]] & eligible[t["b"]]
        x, y = success[t["a"]][both], success[t["b"]][both]
        assert (t["n"], t["a_only"], t["b_only"]) == (both.sum(), (x & ~y).sum(), (~x & y).sum())
        table = [[(x & y).sum(), (x & ~y).sum()], [(~x & y).sum(), (~x & ~y).sum()]]
        expected = 1.0 if t["a_only"] + t["b_only"] == 0 else sm_mcnemar(table, exact=True).pvalue
        assert t["p"] == pytest.approx(expected, rel=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30))
def test_holm_matches_statsmodels(p):
    assert holm_adjust(p) == pytest.approx(multipletests(p, method="holm")[1], rel=1e-12, abs=1e-15)


def test_holm_by_hand_and_ties_are_order_free():
    # sorted 0.01, 0.02, 0.04 over m = 3: 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.04) = 0.04
    assert holm_adjust([0.04, 0.01, 0.02]).tolist() == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjust([0.02, 0.02, 0.5]).tolist() == pytest.approx([0.06, 0.06, 0.5])
    assert holm_adjust([]).tolist() == []


# =========================================================================== groups and ranks


@pytest.mark.parametrize("discordant, groups", [(6, [[0, 1, 2]]), (7, [[0], [1, 2]])])
def test_holm_changes_the_decision(tmp_path, discordant, groups):
    # A succeeds on all 12 tasks, B and C on the last 12 - d.  A vs B and A vs C: d A-only tasks, raw
    # p = 2 / 2^d (0.031 for d = 6: below 0.05), B vs C: p = 1.  Holm over 3 pairs: 3 * 2 / 2^d =
    # 0.094 for d = 6 (not separable: one group), 0.047 for d = 7 (separable).
    runs = runs_of(tmp_path, {"A": "S" * 12, "B": "A" * discordant + "S" * (12 - discordant),
                              "C": "A" * discordant + "S" * (12 - discordant)})
    doc = board(runs, resamples=0)
    p = pairs_of(doc)
    assert p[(0, 1)]["p"] == 2 / 2 ** discordant < 0.05
    assert p[(0, 1)]["p_holm"] == p[(0, 2)]["p_holm"] == pytest.approx(3 * 2 / 2 ** discordant)
    assert p[(1, 2)]["p_holm"] == 1.0
    assert doc["groups"] == groups
    assert [r["group"] for r in doc["runs"]] == [1] + [len(groups)] * 2
    assert [r["rank"] for r in doc["runs"]] == [1, 2, 2] and [r["rank_interval"] for r in doc["runs"]] == [None] * 3


def test_a_run_joins_a_later_group_and_one_with_little_evidence_joins_the_first(tmp_path):
    # 20 tasks.  A: all succeed.  B: the first 10.  C: the first 9.  D: eligible on two tasks only
    # (one success), so nothing separates it from A although its value is the lowest.
    runs = runs_of(tmp_path, {"A": "S" * 20, "B": "S" * 10 + "A" * 10, "C": "S" * 9 + "A" * 11,
                              "D": "SA" + "E" * 18})
    doc = board(runs, resamples=0)
    assert [r["values"]["pass@1"]["value"] for r in doc["runs"]] == [1.0, 0.5, 0.45, 0.5]
    # board order A, B, D (0.5 ties B: input order), C.  A vs B: 10 A-only; A vs C: 11; A vs D: 1.
    p = pairs_of(doc)
    assert (p[(0, 3)]["n"], p[(0, 3)]["a_only"], p[(0, 3)]["p"]) == (2, 1, 1.0)
    assert p[(0, 1)]["p_holm"] < 0.05 and p[(0, 2)]["p_holm"] < 0.05 and p[(1, 2)]["p_holm"] == 1.0
    assert doc["groups"] == [[0, 3], [1, 2]]  # D joins A's group; C joins B's, the second
    assert [r["rank"] for r in doc["runs"]] == [1, 2, 4, 2]


def test_ties_keep_input_order(tmp_path):
    columns = {"P": "SSAS", "Q": "SASS", "R": "AAAS"}
    doc = board(runs_of(tmp_path, columns), resamples=0)
    assert [r["rank"] for r in doc["runs"]] == [1, 1, 3]
    assert doc["groups"][0][:2] == [0, 1]  # P anchors: first in input order among the tied
    swapped = board(runs_of(tmp_path / "swapped", {"Q": columns["Q"], "P": columns["P"], "R": columns["R"]}),
                    resamples=0)
    assert swapped["groups"][0][:2] == [0, 1] and swapped["runs"][0]["run_id"] == "Q"
    assert board_groups([0.5, None, 0.5, 0.7], np.zeros((4, 4)), 0.05) == [[3], [0], [2], [1]]  # null last
    assert board_ranks([0.5, None, 0.5, 0.7]) == [2, None, 2, 1]


def test_rank_interval_follows_its_definition_and_its_seed():
    rng = np.random.default_rng(3)
    eligible = rng.random((4, 9)) < 0.8
    success = eligible & (rng.random((4, 9)) < np.array([[0.9], [0.6], [0.5], [0.2]]))
    got = rank_intervals(eligible, success, resamples=300, seed=11)
    # the definition, one resample at a time: resample b is the b-th integers(0, T, size=T) call
    draw = np.random.default_rng(11)
    ranks = []
    for _ in range(300):
        idx = draw.integers(0, 9, size=9)
        e, s = eligible[:, idx], success[:, idx]
        value = [s[r].sum() / e[r].sum() if e[r].sum() else -np.inf for r in range(4)]
        ranks.append([1 + sum(v > value[r] for v in value) for r in range(4)])
    low, high = np.percentile(np.array(ranks, dtype=float), [2.5, 97.5], axis=0)
    assert got == [[int(np.floor(lo)), int(np.ceil(hi))] for lo, hi in zip(low, high)]
    assert rank_intervals(eligible, success, resamples=300, seed=11) == got
    # one run succeeding everywhere, the other nowhere: no resample can swap them
    assert rank_intervals(np.ones((2, 5), bool), np.array([[1] * 5, [0] * 5], bool), resamples=50, seed=0) == [[1, 1],
                                                                                                           [2, 2]]
    assert rank_intervals(np.ones((2, 0), bool), np.ones((2, 0), bool), resamples=50, seed=0) == [None, None]


def test_rank_intervals_in_the_document_use_the_board_metric(tmp_path):
    runs = runs_of(tmp_path, {"A": "SSSSSSSS", "B": "AAAAAAAA"})
    doc = board(runs, resamples=200, seed=5)
    assert [r["rank_interval"] for r in doc["runs"]] == [[1, 1], [2, 2]]
    assert doc["seed"] == 5 and doc["resamples"] == 200


# =========================================================================== cost and the frontier


def test_a_dominated_run_and_the_frontier(tmp_path):
    # values 0.25, 0.75, 0.5, 0.75; costs 0.01, 0.02, 0.03, 0.02: C is dominated by B (cheaper and better),
    # B and D tie on both (neither dominates the other), A is the cheapest.
    specs = {"A": ("SAAA", 0.01), "B": ("SSSA", 0.02), "C": ("SSAA", 0.03), "D": ("ASSS", 0.02)}
    runs = [make(tmp_path, name, {f"t{i}": c for i, c in enumerate(codes)}, cost=cost)
            for name, (codes, cost) in specs.items()]
    doc = board(runs, resamples=0)
    assert [r["cost_per_attempt"] for r in doc["runs"]] == pytest.approx([0.01, 0.02, 0.03, 0.02])
    assert [r["frontier"] for r in doc["runs"]] == [True, True, False, True]
    assert doc["frontier"] == [0, 1, 3] and doc["unpriced"] == []
    assert frontier_flags([0.5, 0.5], [0.1, 0.2]) == [True, False]  # as good and cheaper dominates


def test_an_unpriced_run_is_named_and_never_placed(tmp_path):
    # B: one eligible attempt without a cost -> unpriced.  C: its uncosted attempts are ineligible (t2 attempt
    # 2, E) or above the common k = 2 (attempt 3 and later), so it stays priced: (0.02 + 0.04 + 0.02) / 3.
    a = make(tmp_path, "A", {"t1": "SS", "t2": "SS"}, cost=0.05)
    b = make(tmp_path, "B", {"t1": "SS", "t2": "SS"}, costs={("t1", 1): 0.01, ("t1", 2): 0.01, ("t2", 1): 0.01})
    c = make(tmp_path, "C", {"t1": "SSA", "t2": "AESS"},
             costs={("t1", 1): 0.02, ("t1", 2): 0.04, ("t2", 1): 0.02})
    doc = board([a, b, c], resamples=0)
    entries = doc["runs"]
    assert [e["values"]["pass@1"]["value"] for e in entries] == [1.0, 1.0, 0.5]
    assert entries[1]["cost_per_attempt"] is None and entries[1]["frontier"] is None and entries[1]["cost_attempts"] == 4
    assert doc["unpriced"] == [1]
    assert entries[2]["cost_attempts"] == 3 and entries[2]["cost_per_attempt"] == pytest.approx((0.02 + 0.04 + 0.02) / 3)
    # B, as good as A and cheaper, would dominate it if it counted as free; unpriced, it is left out instead
    assert [e["frontier"] for e in entries] == [True, None, True]
    assert doc["frontier"] == [2, 0]  # cheapest first


# =========================================================================== simulation: groups and family-wise error


def test_equal_truth_shares_a_group_and_the_family_wise_error_stays_under_alpha():
    """300 seeds of 5 runs on 150 tasks: true pass@1 0.6, 0.6, 0.6, 0.85, 0.85, with a task difficulty
    shared by all runs (paired outcomes).  A pair of equal truth declared separable is a false positive."""
    seeds, n_tasks, alpha = 300, 150, 0.05
    logit = np.log(np.array([0.6, 0.6, 0.6, 0.85, 0.85]) / (1 - np.array([0.6, 0.6, 0.6, 0.85, 0.85])))
    rng = np.random.default_rng(2026)
    difficulty = rng.normal(0.0, 1.0, size=(seeds, 1, n_tasks))
    chance = 1 / (1 + np.exp(-(logit[None, :, None] + difficulty)))
    success = rng.random((seeds, 5, n_tasks)) < chance
    eligible = np.ones((5, n_tasks), dtype=bool)
    null_pairs = {(0, 1), (0, 2), (1, 2), (3, 4)}
    together = errors = 0
    for s in range(seeds):
        tests = pair_tests(eligible, success[s])
        adjusted = holm_adjust([t["p"] for t in tests])
        errors += any(p < alpha for t, p in zip(tests, adjusted) if (t["a"], t["b"]) in null_pairs)
        matrix = np.ones((5, 5))
        for t, p in zip(tests, adjusted):
            matrix[t["a"], t["b"]] = matrix[t["b"], t["a"]] = p
        groups = [set(g) for g in board_groups((success[s].mean(axis=1)).tolist(), matrix, alpha)]
        together += {0, 1, 2} in groups and {3, 4} in groups
    print(f"\nequal truth in one group: {together / seeds:.3f}; family-wise error: {errors / seeds:.3f}")
    assert errors / seeds <= alpha
    assert together / seeds >= 0.95


def test_a_run_without_a_value(tmp_path):
    runs = runs_of(tmp_path, {"A": "EE", "B": "SA"})  # A has no eligible task: value, rank and interval null
    doc = board(runs, resamples=20)
    json.loads(dumps(doc))
    assert doc["runs"][0]["values"]["pass@1"]["value"] is None and doc["runs"][0]["rank"] is None
    assert doc["runs"][0]["rank_interval"] is None and doc["runs"][1]["rank_interval"] == [1, 1]
    # no paired task: p = 1 (section 9), so by section 10's rule A joins B's group, listed last
    assert pairs_of(doc)[(0, 1)]["n"] == 0 and doc["groups"] == [[1, 0]]


# =========================================================================== selected@k (spec section 9 on the board)


def test_selected_at_k_values_pairs_and_p(tmp_path):
    """conftest.SELECTION_BOARD, hand-computed: A 1/6 on the common tasks (2/7 on its own plan), B 5/8; paired
    on the 6 tasks entering in both, A only t1, B only t2-t5: p = binomtest(1, 5, 1/2)."""
    a, b = (cb.load_run(p) for p in selection_board(tmp_path, "AB"))
    doc = board([a, b], resamples=50)
    assert doc["common"]["k"] == 3 and doc["common"]["not_common"] == ["x"]
    ra, rb = doc["runs"]
    low, high = wilson_interval(1, 6)
    assert ra["values"]["selected@k"] == {"value": 1 / 6, "successes": 1, "n": 6, "ci_low": low, "ci_high": high,
                                          "coverage": 6 / 8}
    assert selection_metrics(a).rates["selected@k"].successes == 2  # x counts on its own plan, not on the board
    assert rb["values"]["selected@k"] == {**selection_metrics(b).rates["selected@k"].to_dict(), "coverage": 1.0}
    assert (rb["values"]["selected@k"]["successes"], rb["values"]["selected@k"]["n"]) == (5, 8)
    assert ra["outcomes"]["selected@k"] == "10000..0" and rb["outcomes"]["selected@k"] == "01111100"
    assert ra["selection"] == rb["selection"] == {"selector": SELECTOR, "reason": None}
    (pair,) = [p for p in doc["pairs"] if p["metric"] == "selected@k"]
    assert doc["pairs"][-1] is pair  # after the three metrics of section 10
    assert (pair["a"], pair["b"], pair["n"], pair["a_only"], pair["b_only"]) == (0, 1, 6, 1, 4)
    assert pair["p"] == pytest.approx(binomtest(1, 5, 0.5).pvalue, rel=1e-12) and pair["p"] == pytest.approx(0.375)
    assert pair["p_holm"] == pair["p"] and pair["difference"] == pytest.approx(-3 / 6)
    assert "selection" in doc["methods"]
    # the board's metric: groups, ranks and rank intervals by selected@k
    by = board([a, b], metric="selected@k", resamples=50)
    assert by["metric"] == "selected@k" and [r["rank"] for r in by["runs"]] == [2, 1] and by["groups"] == [[1, 0]]


def test_a_run_without_selected_at_k_is_null_with_its_reason(tmp_path):
    """C has no selection.jsonl, D's k (4) is not the common k (3): null, reason stated, paired with no run;
    the selected@k family is the pairs of A, B and A again (Holm over those 3 only)."""
    a, b, c, d = (cb.load_run(p) for p in selection_board(tmp_path))
    doc = board([a, b, c, d, a], resamples=0)
    runs = doc["runs"]
    assert [r["values"]["selected@k"] is None for r in runs] == [False, False, True, True, False]
    assert runs[2]["selection"] == {"selector": None, "reason": "the run has no selection.jsonl"}
    assert runs[3]["selection"]["selector"] == SELECTOR
    assert runs[3]["selection"]["reason"].startswith("its k = 4 is not the common k = 3")
    assert runs[2]["outcomes"]["selected@k"] is None and runs[3]["values"]["pass@1"]["n"] == 8
    chosen = [p for p in doc["pairs"] if p["metric"] == "selected@k"]
    assert [(p["a"], p["b"]) for p in chosen] == [(0, 1), (0, 4), (1, 4)]
    assert [p["p"] for p in chosen] == pytest.approx([0.375, 1.0, 0.375])
    assert [p["p_holm"] for p in chosen] == pytest.approx(holm_adjust([p["p"] for p in chosen]).tolist())
    assert len([p for p in doc["pairs"] if p["metric"] == "pass@1"]) == 10
    for runs_given in ([a, c], [a, d], [a, b, c]):
        with pytest.raises(ValueError, match="the board metric selected@k needs a selected@k for every run, but #"):
            board(runs_given, metric="selected@k")
    # a single run with one: a value, no pair
    alone = board([a, c], resamples=0)
    assert alone["runs"][0]["values"]["selected@k"]["n"] == 6
    assert not [p for p in alone["pairs"] if p["metric"] == "selected@k"]


def test_a_board_without_selection_has_no_trace_of_it(tmp_path):
    """No selection file in any run: the keys and bytes a board had before selected@k existed."""
    paths = selection_board(tmp_path, "C")
    doc = cb.board([paths[0], paths[0]], resamples=20)
    assert "selected@k" not in dumps(doc) and "selection" not in dumps(doc)
    assert list(doc["runs"][0]) == ["run_id", "suite", "model", "k", "tasks_planned", "values", "rank",
                                    "rank_interval", "group", "cost_per_attempt", "cost_attempts", "frontier",
                                    "curve", "outcomes"]
    assert list(doc["methods"]) == ["common", "value", "test", "groups", "rank", "cost"]
    assert sorted({p["metric"] for p in doc["pairs"]}) == ["pass@1", "pass@k", "pass^k"]
