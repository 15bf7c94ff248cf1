"""Slices: metrics per plan label, config key or registered derived dimension."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capbench_nb as cb
from capbench_nb.format import CLASS_KEYS
from capbench_nb.metrics.slices import SMALL_SLICE, metrics_by, register_slice, slices_document, unregister_slice
from capbench_nb.metrics.stats import wilson_interval

from conftest import SAMPLE_RUN, manifest, outcomes, record, write_run

HOSTILE = "<img src=x onerror=alert(1)>"


def load(tmp_path, tasks, records, **kw):
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks, **kw), records))


TASKS = [
    {"task_id": "a1", "repeats": 2, "app": "alpha"},
    {"task_id": "a2", "repeats": 2, "app": "alpha"},
    {"task_id": "b1", "repeats": 2, "app": "beta"},
    {"task_id": "n1", "repeats": 2},  # no label: its own slice, value null
]


def test_slice_by_plan_label_hand_vector(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS", "a2": "AS", "b1": "ES", "n1": "SA"}))
    table = metrics_by(run, "app")
    assert table.index.name == "app"
    assert table.index.tolist() == ["alpha", "beta", None]  # missing value last
    assert table[("slice", "tasks")].tolist() == [2, 1, 1]
    alpha = table.loc["alpha"]
    assert (alpha[("pass@1", "successes")], alpha[("pass@1", "n")], alpha[("pass@1", "coverage")]) == (1, 2, 1.0)
    assert (alpha[("pass^k", "successes")], alpha[("pass^k", "n")]) == (1, 2)
    # a1 SS, a2 AS: pass@1 1/2 with its Wilson interval, pass@k 2/2, pass^k 1/2
    low, high = wilson_interval(1, 2)
    assert (alpha[("pass@1", "value")], alpha[("pass@1", "ci_low")], alpha[("pass@1", "ci_high")]) == (0.5, low, high)
    assert alpha[("pass@k", "value")] == 1.0 and alpha[("pass^k", "value")] == 0.5
    beta = table.loc["beta"]
    assert beta[("pass@1", "n")] == 0 and beta[("pass@1", "value")] is pd.NA and beta[("pass@1", "coverage")] == 0.0
    assert beta[("pass@1", "ci_low")] is pd.NA
    assert (beta[("attempts", "total")], beta[("attempts", "eligible")], beta[("attempts", "environment")]) == (2, 1, 1)
    assert table[("slice", "small")].all() and SMALL_SLICE > 2


def test_slice_rows_add_up_to_the_run(sample_run_dir=SAMPLE_RUN):
    run = cb.load_run(sample_run_dir)
    doc = cb.compute_metrics(run, slices=["app"])
    entries = doc["slices"]["app"]
    assert sum(e["tasks"] for e in entries) == doc["tasks"]["planned"]
    for metric in ("pass@1", "pass@k", "pass^k"):
        assert sum(e[metric]["n"] for e in entries) == doc["metrics"][metric]["n"]
        assert sum(e[metric]["successes"] for e in entries) == doc["metrics"][metric]["successes"]
        assert list(entries[0][metric]) == list(doc["metrics"][metric])  # shaped like the headline
    for key in CLASS_KEYS:
        assert sum(e["attempts"]["by_failure_class"][key] for e in entries) == doc["attempts"]["by_failure_class"][key]
    assert sum(e["attempts"]["total"] for e in entries) == doc["attempts"]["total"]
    assert doc["provenance"]["options"]["slices"] == ["app"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.text("SAEKVUX.", min_size=1, max_size=3)),
                min_size=1, max_size=8))
def test_slices_always_add_up(tmp_path_factory, spec):
    tasks = [{"task_id": f"t{i}", "repeats": 3, "grp": g} for i, (g, _) in enumerate(spec)]
    records = outcomes({f"t{i}": codes for i, (_, codes) in enumerate(spec)})
    run = load(tmp_path_factory.mktemp("s"), tasks, records)
    whole = cb.compute_metrics(run, slices=["grp"])
    table = metrics_by(run, "grp")
    for metric in ("pass@1", "pass@k", "pass^k"):
        assert table[(metric, "n")].sum() == whole["metrics"][metric]["n"]
        assert table[(metric, "successes")].sum() == whole["metrics"][metric]["successes"]
    assert table[("attempts", "total")].sum() == whole["attempts"]["total"]
    assert table[("attempts", "eligible")].sum() == whole["attempts"]["eligible"]
    # the metrics.json block and the table are the same numbers
    for entry, (value, row) in zip(whole["slices"]["grp"], table.iterrows(), strict=True):
        assert entry["value"] == value and entry["tasks"] == row[("slice", "tasks")]
        for metric in ("pass@1", "pass@k", "pass^k"):
            assert entry[metric] == {f: (None if row[(metric, f)] is pd.NA else row[(metric, f)]) for f in entry[metric]}


def test_config_key_is_a_single_slice(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS"}))
    table = metrics_by(run, "model")
    assert table.index.tolist() == ["m"] and table[("slice", "tasks")].tolist() == [4]


def test_registered_derived_slice_needs_no_package_change(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS", "a2": "AA", "b1": "SS", "n1": "SS"}))
    register_slice("letter", lambda r: r.plan["task_id"].str[0])
    try:
        table = metrics_by(run, "letter")
        assert table.index.tolist() == ["a", "b", "n"]
        assert table[("pass@1", "successes")].tolist() == [1, 1, 1]
        doc = cb.compute_metrics(run, slices=["letter"])
        assert [e["value"] for e in doc["slices"]["letter"]] == ["a", "b", "n"]
    finally:
        unregister_slice("letter")


def test_two_dimensions_cross(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS"}))
    table = metrics_by(run, ["app", "judge"])
    assert isinstance(table.index, pd.MultiIndex) and list(table.index.names) == ["app", "judge"]
    assert table.index[:2].tolist() == [("alpha", True), ("beta", True)] and len(table) == 3
    assert table.loc[("alpha", True), ("slice", "tasks")] == 2


def test_the_table_has_metric_statistic_columns(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS", "b1": "SA"}))
    table = metrics_by(run, "app")
    assert list(table.columns.names) == ["metric", "statistic"]
    assert list(table.columns.get_level_values("metric").unique()) == ["slice", "pass@1", "pass@k", "pass^k", "attempts"]
    assert list(table["pass@1"].columns) == ["value", "successes", "n", "ci_low", "ci_high", "coverage"]
    assert list(table["attempts"].columns) == ["total", "eligible", *CLASS_KEYS]
    assert str(table[("pass@1", "value")].dtype) == "Float64" and table[("pass@1", "n")].dtype == "int64"
    values = table.xs("value", axis=1, level="statistic")
    assert list(values.columns) == ["pass@1", "pass@k", "pass^k"] and values.loc["beta", "pass@1"] == 1.0
    assert table.shape == (3, 2 + 3 * 6 + 2 + len(CLASS_KEYS))



def test_unknown_dimension_is_a_clear_error(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS"}))
    with pytest.raises(KeyError, match="unknown slice dimension 'nope'.*plan labels: \\['app'\\]"):
        metrics_by(run, "nope")


def test_slices_document_entries(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS", "b1": "SA"}))
    doc = slices_document(run, ["app"])
    first = doc["app"][0]
    assert list(first) == ["value", "tasks", "small", "pass@1", "pass@k", "pass^k", "attempts"]
    assert first["value"] == "alpha" and first["pass@1"]["n"] == 1
    assert doc["app"][2]["value"] is None
    with pytest.raises(KeyError):
        slices_document(run, ["missing"])
    _ = record  # the helper is shared with other test modules


def test_cb_metrics_by_is_the_same_table_shown_readably(tmp_path):
    from capbench_nb.outputs.documents import SliceTable

    tasks = [*TASKS[:2], {**TASKS[2], "app": HOSTILE}, TASKS[3]]
    run = load(tmp_path, tasks, outcomes({"a1": "SS", "a2": "AS", "b1": "ES", "n1": "SA"}))
    plain, shown = metrics_by(run, "app"), cb.metrics_by(run, by="app")
    assert type(plain) is pd.DataFrame and isinstance(shown, SliceTable)
    pd.testing.assert_frame_equal(pd.DataFrame(shown), plain)  # the P1 table: (metric, statistic) columns
    assert type(shown["pass@1"]) is pd.DataFrame and type(shown.loc["alpha"]) is pd.Series
    # the readable view: one column per rate labelled with k, the rate as the report writes it, small marked
    text = repr(shown)
    assert "pass@k (k = 2)" in text and "50.0% (1/2) [9.5%, 90.5%]" in text and "2 (small)" in text
    assert "(no value)" in text and "n/a (no eligible tasks)" in text  # beta: its one attempt is ineligible
    assert "0.500000" not in text and "ci_low" not in text
    html = shown._repr_html_()
    assert HOSTILE not in html and "&lt;img" in html and "Slices by app" in html and "pass^k (k = 2)" in html
    # tidy: one row per slice and rate, nullable, missing stays missing
    tidy = shown.tidy()
    assert list(tidy.columns) == ["app", "tasks", "small", "metric", "value", "successes", "n", "ci_low", "ci_high",
                                  "coverage"]
    assert len(tidy) == 3 * len(plain) and tidy["metric"].tolist()[:3] == ["pass@1", "pass@k", "pass^k"]
    alpha = tidy[(tidy["app"] == "alpha") & (tidy["metric"] == "pass@1")].iloc[0]
    assert (alpha["successes"], alpha["n"], alpha["value"]) == (1, 2, 0.5)
    beta = tidy[(tidy["app"] == HOSTILE) & (tidy["metric"] == "pass@1")].iloc[0]
    assert beta["n"] == 0 and beta["value"] is pd.NA
    assert tidy["app"].tolist()[-1] is None and str(tidy["n"].dtype) == "Int64"
    two = cb.metrics_by(run, by=["app", "judge"])
    assert list(two.tidy().columns[:2]) == ["app", "judge"] and "judge" in repr(two)
