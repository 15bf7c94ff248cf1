"""The regression gate's decisions (spec section 15): capbench_nb.metrics.gate and power.noninferiority_tasks."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

import capbench_nb as cb
from capbench_nb import gate
from capbench_nb.metrics.gate import (
    EXIT_CODES,
    check_gate_options,
    gate_document,
    metric_decision,
    overall_decision,
)
from capbench_nb.outputs.gate.result import Gate
from capbench_nb.metrics.power import noninferiority_tasks
from capbench_nb.metrics.power_simulation import simulate_noninferiority
from capbench_nb.records.run import load_run
from conftest import manifest, outcomes, write_run


# --------------------------------------------------------------------------- a reference Newcombe interval


def newcombe_reference(both: int, a_only: int, b_only: int, neither: int, confidence: float):
    """Newcombe (1998) method 10 written out independently: Wilson limits from statsmodels
    (``proportion_confint(x, n, alpha=1 - confidence, method="wilson")``) and the phi rule of
    Altman et al. (2000), p. 52."""
    n = both + a_only + b_only + neither
    pa, pb = (both + a_only) / n, (both + b_only) / n
    la, ua = proportion_confint(both + a_only, n, alpha=1 - confidence, method="wilson")
    lb, ub = proportion_confint(both + b_only, n, alpha=1 - confidence, method="wilson")
    margins = [both + b_only, a_only + neither, both + a_only, b_only + neither]
    a = both * neither - a_only * b_only
    if min(margins) == 0:
        phi = 0.0
    elif a > n / 2:
        phi = (a - n / 2) / math.sqrt(math.prod(margins))
    elif a >= 0:
        phi = 0.0
    else:
        phi = a / math.sqrt(math.prod(margins))
    d = pb - pa
    low = d - math.sqrt(max(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2))
    high = d + math.sqrt(max(0.0, (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2))
    return low, high


def paired_runs(tmp_path, table: dict, *, k=1, name="x", model_b="m", selection=None):
    """Two runs whose attempt-1 outcomes give the paired table ``{"both": n, "a_only": n, ...}``."""
    codes = {"both": ("S", "S"), "a_only": ("S", "A"), "b_only": ("A", "S"), "neither": ("A", "A")}
    spec_a, spec_b, tasks = {}, {}, []
    for cell, count in table.items():
        for i in range(count):
            t = f"{cell}-{i:03d}"
            tasks.append((t, k))
            spec_a[t] = codes[cell][0] * k
            spec_b[t] = codes[cell][1] * k
    doc_a, doc_b = manifest(tasks, k=k), manifest(tasks, k=k)
    doc_a["run_id"], doc_b["run_id"] = "base", "cand"
    doc_b["config"]["model"] = model_b
    a = write_run(tmp_path / f"{name}-a", doc_a, outcomes(spec_a))
    b = write_run(tmp_path / f"{name}-b", doc_b, outcomes(spec_b))
    return a, b


# --------------------------------------------------------------------------- the decision table


@pytest.mark.parametrize("low, high, margin, expected", [
    (-0.01, 0.05, 0.02, "pass"),
    (0.01, 0.05, 0.02, "pass"),
    (-0.02, 0.05, 0.02, "inconclusive"),   # ci_low = -D is not above -D
    (-0.05, 0.0, 0.02, "inconclusive"),    # ci_high = 0 is not below 0
    (-0.05, -1e-12, 0.02, "fail"),
    (-0.2, -0.1, 0.02, "fail"),
    (-0.2, 0.1, 0.02, "inconclusive"),
    (1e-9, 0.1, 0.0, "pass"),              # D = 0: any interval above 0 passes
    (-1e-9, 0.1, 0.0, "inconclusive"),
    (None, None, 0.02, "inconclusive"),    # n = 0
])
def test_metric_decision_table(low, high, margin, expected):
    assert metric_decision(low, high, margin) == expected


def test_overall_decision_worst_and_incompatible():
    assert overall_decision(["pass", "pass"], []) == "pass"
    assert overall_decision(["pass", "inconclusive"], []) == "inconclusive"
    assert overall_decision(["inconclusive", "fail", "pass"], []) == "fail"
    assert overall_decision(["pass"], [{"code": "model"}]) == "incompatible"
    assert EXIT_CODES == {"pass": 0, "fail": 1, "inconclusive": 4, "incompatible": 5}


@settings(max_examples=200, deadline=None)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(0, 0.99))
def test_decision_is_the_spec_table(x, y, margin):
    low, high = min(x, y), max(x, y)
    got = metric_decision(low, high, margin)
    if low > -margin:
        assert got == "pass"
    elif high < 0:
        assert got == "fail"
    else:
        assert got == "inconclusive" and low <= -margin and high >= 0


# --------------------------------------------------------------------------- the document on real runs


@pytest.mark.parametrize("table", [
    {"both": 20, "a_only": 1, "b_only": 2, "neither": 17},
    {"both": 30, "a_only": 8, "b_only": 0, "neither": 12},
    {"both": 5, "a_only": 3, "b_only": 3, "neither": 4},
    {"both": 40, "a_only": 0, "b_only": 0, "neither": 0},
])
def test_interval_delta_and_values_match_the_reference(tmp_path, table):
    a, b = paired_runs(tmp_path, table)
    doc = gate_document(load_run(a), load_run(b), margin=0.02, alpha=0.05)
    e = doc["metrics"][0]
    n = sum(table.values())
    low, high = newcombe_reference(table["both"], table["a_only"], table["b_only"], table["neither"], 0.9)
    assert e["metric"] == "pass@1" and e["n"] == n
    assert abs(e["ci_low"] - low) <= 1e-9 and abs(e["ci_high"] - high) <= 1e-9
    assert e["baseline"] == (table["both"] + table["a_only"]) / n
    assert e["candidate"] == (table["both"] + table["b_only"]) / n
    assert e["delta"] == (table["b_only"] - table["a_only"]) / n
    assert e["decision"] == metric_decision(low, high, 0.02)


def test_a_clear_regression_fails_with_its_tasks_in_plan_order(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 30, "a_only": 12, "b_only": 0, "neither": 8})
    result = gate(a, b)
    e = result.document["metrics"][0]
    assert result.decision == "fail" and result.exit_code == 1
    assert e["decision"] == "fail" and e["ci_high"] < 0 and e["needed_tasks"] is None
    assert [r["task_id"] for r in e["regressions"]] == [f"a_only-{i:03d}" for i in range(12)]
    first = e["regressions"][0]
    assert first["baseline"] == [{"attempt": 1, "success": True, "failure_class": "", "eligible": True}]
    assert first["candidate"] == [{"attempt": 1, "success": False, "failure_class": "agent", "eligible": True}]


def test_inconclusive_gives_needed_tasks_by_the_formula(tmp_path):
    table = {"both": 10, "a_only": 2, "b_only": 2, "neither": 6}
    a, b = paired_runs(tmp_path, table)
    for margin, alpha in ((0.02, 0.05), (0.1, 0.1), (0.05, 0.025)):
        e = gate(a, b, margin=margin, alpha=alpha).document["metrics"][0]
        assert e["decision"] == "inconclusive"
        psi = 4 / 20
        # scipy.stats.norm.ppf for the quantiles
        assert e["needed_tasks"] == math.ceil((norm.ppf(1 - alpha) + norm.ppf(0.8)) ** 2 * psi / margin**2)


def test_needed_tasks_null_when_no_discordance_or_no_margin(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 3, "a_only": 0, "b_only": 0, "neither": 2})
    e = gate(a, b, margin=0.02).document["metrics"][0]
    assert e["decision"] == "inconclusive" and e["needed_tasks"] is None  # psi = 0
    a, b = paired_runs(tmp_path, {"both": 3, "a_only": 1, "b_only": 1, "neither": 2}, name="y")
    e = gate(a, b, margin=0.0).document["metrics"][0]
    assert e["decision"] == "inconclusive" and e["needed_tasks"] is None  # D = 0


def test_no_paired_task_is_inconclusive_with_nulls(tmp_path):
    tasks = [("t1", 1), ("t2", 1)]
    a = write_run(tmp_path / "a", manifest(tasks, k=1), outcomes({"t1": "E", "t2": "S"}))
    b = write_run(tmp_path / "b", manifest(tasks, k=1), outcomes({"t1": "S", "t2": "K"}))
    doc = gate(a, b).document
    e = doc["metrics"][0]
    assert e["n"] == 0 and e["decision"] == "inconclusive" and doc["decision"] == "inconclusive"
    assert [e[key] for key in ("baseline", "candidate", "delta", "ci_low", "ci_high", "needed_tasks")] == [None] * 6


def test_incompatible_keeps_each_metric_decision_and_allow_diff_lifts_it(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 30, "a_only": 12, "b_only": 0, "neither": 8}, model_b="other")
    doc = gate(a, b).document
    assert doc["decision"] == "incompatible" and [w["code"] for w in doc["warnings"]] == ["model"]
    assert doc["metrics"][0]["decision"] == "fail"
    allowed = gate(a, b, allow_diff=["model"]).document
    assert allowed["decision"] == "fail" and allowed["warnings"] == []
    assert [w["code"] for w in allowed["allowed_warnings"]] == ["model"]


def test_the_same_directory_twice_passes_trivially_and_says_so(tmp_path):
    a, _ = paired_runs(tmp_path, {"both": 3, "a_only": 1, "b_only": 1, "neither": 2})
    result = gate(a, a, metrics=["pass@1", "pass@k", "pass^k"])
    assert result.decision == "pass" and result.document["same_run"] is True
    assert all(e["decision"] == "pass" and e["delta"] == 0 for e in result.document["metrics"])
    assert "passes trivially" in repr(result) and "passes trivially" in result._repr_html_()
    copy = gate(a, load_run(a))  # a loaded run beside its path: the same directory
    assert copy.document["same_run"] is True
    (tmp_path / "link").symlink_to(a, target_is_directory=True)  # cb.gate compares real paths
    assert gate(a, tmp_path / "link").document["same_run"] is True
    # gate_document reads no file: two loads of one path are the same run, a link to it is not known as one
    assert gate_document(load_run(a), load_run(a))["same_run"] is True
    assert gate_document(load_run(a), load_run(tmp_path / "link"))["same_run"] is False


def test_pass_at_k_and_pass_hat_k_pair_at_the_smaller_k(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 6, "a_only": 2, "neither": 2}, k=2)
    doc = gate(a, b, metrics=["pass^k", "pass@k"], margin=0.5).document
    assert [e["metric"] for e in doc["metrics"]] == ["pass^k", "pass@k"]
    assert all(e["k"] == 2 and e["n"] == 10 for e in doc["metrics"])
    hat = doc["metrics"][0]
    assert [o["attempt"] for o in hat["regressions"][0]["baseline"]] == [1, 2]


def test_selected_at_k_needs_a_selection_file(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 3, "neither": 2})
    with pytest.raises(ValueError, match="selection.jsonl"):
        gate(a, b, metrics=["selected@k"])


def test_selected_at_k_on_simulated_runs_matches_compare(tmp_path):
    from capbench_nb.simulation.writer import simulate_run

    a = simulate_run(tmp_path / "s1", tasks=30, repeats=3, seed=1, selector_accuracy=0.8)
    b = simulate_run(tmp_path / "s2", tasks=30, repeats=3, seed=2, selector_accuracy=0.8)
    ra, rb = load_run(a), load_run(b)
    doc = gate_document(ra, rb, metrics=["selected@k"], margin=0.1)
    paired = cb.compare_runs(ra, rb, n_boot=0, confidence=0.9)["paired"]["selected@k"]
    e = doc["metrics"][0]
    assert (e["n"], e["delta"], e["ci_low"], e["ci_high"]) == (paired["n_pairs"], paired["difference"],
                                                               paired["ci_low"], paired["ci_high"])
    for r in e["regressions"]:
        assert "baseline_selected" in r and "candidate_selected" in r


@pytest.mark.parametrize("options, message", [
    ({"margin": 1.0}, "margin"), ({"margin": -0.01}, "margin"), ({"margin": float("nan")}, "margin"),
    ({"margin": "0.1"}, "margin"), ({"margin": True}, "margin"),
    ({"alpha": 0.0}, "alpha"), ({"alpha": 0.5}, "alpha"), ({"alpha": float("inf")}, "alpha"),
    ({"metrics": ["pass@2"]}, "unknown metric"), ({"allow_diff": ["nope"]}, "warning kind"),
])
def test_bad_options_raise_one_sentence(options, message):
    with pytest.raises(ValueError, match=message):
        check_gate_options(**options)


def test_options_defaults_and_repeats():
    assert check_gate_options() == (("pass@1",), 0.02, 0.05, ())
    assert check_gate_options(metrics=["pass^k", "pass@1", "pass^k"], margin=0, alpha=0.1)[:3] == (
        ("pass^k", "pass@1"), 0.0, 0.1)


def test_the_document_is_byte_stable_and_names_no_path(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 9, "a_only": 3, "b_only": 1, "neither": 7})
    one = json.dumps(gate(a, b).document, sort_keys=False)
    two = json.dumps(gate(str(a), str(b)).document, sort_keys=False)
    assert one == two and str(tmp_path) not in one
    doc = json.loads(one)
    assert list(doc)[:6] == ["schema_version", "decision", "margin", "alpha", "warnings", "metrics"]
    assert doc["schema_version"] == "capbench.gate/1"


def test_gate_object_views(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 30, "a_only": 12, "b_only": 0, "neither": 8})
    result = cb.gate(a, b, metric="pass@1")
    assert isinstance(result, Gate)
    table = result.table()
    assert list(table["metric"]) == ["pass@1"] and list(table["decision"]) == ["fail"]
    assert str(table["n"].dtype) == "Int64" and str(table["ci_low"].dtype) == "Float64"
    html = result._repr_html_()
    assert "<table>" in html and "fail" in html and repr(result).startswith("<gate fail: pass@1 fail")


def test_gate_view_escapes_run_ids(tmp_path):
    a, b = paired_runs(tmp_path, {"both": 5, "a_only": 1, "neither": 2})
    doc = json.loads((b / "manifest.json").read_text())
    doc["run_id"] = "<script>alert(1)</script>"
    (b / "manifest.json").write_text(json.dumps(doc))
    html = gate(a, b)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["SS", "SA", "AS", "AA", "EA", "SK"]), min_size=1, max_size=25),
       st.sampled_from([0.0, 0.02, 0.1, 0.3]), st.sampled_from([0.01, 0.05, 0.2]))
def test_gate_agrees_with_compare_on_any_table(tmp_path_factory, cells, margin, alpha):
    """Property: the gate's numbers are compare's at confidence 1 - 2 alpha, and its decision is the table's."""
    root = tmp_path_factory.mktemp("prop")
    tasks = [(f"t{i:02d}", 1) for i in range(len(cells))]
    a = write_run(root / "a", manifest(tasks, k=1), outcomes({t: c[0] for (t, _), c in zip(tasks, cells)}))
    b = write_run(root / "b", manifest(tasks, k=1), outcomes({t: c[1] for (t, _), c in zip(tasks, cells)}))
    ra, rb = load_run(a), load_run(b)
    e = gate_document(ra, rb, margin=margin, alpha=alpha, same_run=False)["metrics"][0]
    p = cb.compare_runs(ra, rb, n_boot=0, confidence=1 - 2 * alpha)["paired"]["pass@1"]
    assert (e["n"], e["baseline"], e["candidate"], e["delta"], e["ci_low"], e["ci_high"]) == (
        p["n_pairs"], p["a_value"], p["b_value"], p["difference"], p["ci_low"], p["ci_high"])
    assert e["decision"] == metric_decision(e["ci_low"], e["ci_high"], margin)
    assert len(e["regressions"]) == p["a_only"]
    assert (e["needed_tasks"] is None) == (e["decision"] != "inconclusive" or not (p["a_only"] + p["b_only"])
                                           or margin == 0 or not p["n_pairs"])


# --------------------------------------------------------------------------- needed_tasks against the simulation


@pytest.mark.parametrize("psi, margin, alpha", [(0.2, 0.05, 0.05), (0.3, 0.1, 0.05), (0.1, 0.03, 0.1)])
def test_needed_tasks_gives_power_near_0_8_in_simulation(psi, margin, alpha):
    n = noninferiority_tasks(psi, margin, alpha=alpha)
    # the formula, with scipy's quantiles
    assert n == math.ceil((norm.ppf(1 - alpha) + norm.ppf(0.8)) ** 2 * psi / margin**2)
    sim = simulate_noninferiority(n, psi, margin, alpha=alpha, n_sim=4000, seed=7)
    assert abs(sim.power - 0.8) <= 4 * sim.se + 0.01, sim
    # half the tasks: clearly short of the target
    assert simulate_noninferiority(max(1, n // 2), psi, margin, alpha=alpha, n_sim=4000, seed=7).power < 0.7


def test_noninferiority_tasks_edges():
    assert noninferiority_tasks(None, 0.02) is None
    assert noninferiority_tasks(0.0, 0.02) is None
    assert noninferiority_tasks(0.2, 0.0) is None
    with pytest.raises(ValueError):
        noninferiority_tasks(0.2, 0.02, alpha=1.5)
