"""Slices: metrics per plan label, config key or registered derived dimension."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capbench_nb as cb
from capbench_nb.format import CLASS_KEYS
from capbench_nb.metrics.slices import SMALL_SLICE, metrics_by, register_slice, slices_document, unregister_slice

from conftest import SAMPLE_RUN, manifest, outcomes, record, write_run


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
    assert table["app"].tolist() == ["alpha", "beta", None]  # missing value last
    assert table["tasks"].tolist() == [2, 1, 1]
    alpha = table.iloc[0]
    assert (alpha["pass@1_successes"], alpha["pass@1_n"], alpha["pass@1_coverage"]) == (1, 2, 1.0)
    assert (alpha["pass^k_successes"], alpha["pass^k_n"]) == (1, 2)
    beta = table.iloc[1]
    assert beta["pass@1_n"] == 0 and beta["pass@1_value"] is pd.NA and beta["pass@1_coverage"] == 0.0
    assert (beta["attempts"], beta["eligible"], beta["environment"]) == (2, 1, 1)
    assert table["small"].all() and SMALL_SLICE > 2


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
        assert table[f"{metric}_n"].sum() == whole["metrics"][metric]["n"]
        assert table[f"{metric}_successes"].sum() == whole["metrics"][metric]["successes"]
    assert table["attempts"].sum() == whole["attempts"]["total"]
    assert table["eligible"].sum() == whole["attempts"]["eligible"]


def test_config_key_is_a_single_slice(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS"}))
    table = metrics_by(run, "model")
    assert table["model"].tolist() == ["m"] and table["tasks"].tolist() == [4]


def test_registered_derived_slice_needs_no_package_change(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS", "a2": "AA", "b1": "SS", "n1": "SS"}))
    register_slice("letter", lambda r: r.plan["task_id"].str[0])
    try:
        table = metrics_by(run, "letter")
        assert table["letter"].tolist() == ["a", "b", "n"]
        assert table["pass@1_successes"].tolist() == [1, 1, 1]
        doc = cb.compute_metrics(run, slices=["letter"])
        assert [e["value"] for e in doc["slices"]["letter"]] == ["a", "b", "n"]
    finally:
        unregister_slice("letter")


def test_two_dimensions_cross(tmp_path):
    run = load(tmp_path, TASKS, outcomes({"a1": "SS"}))
    table = metrics_by(run, ["app", "judge"])
    assert list(table.columns[:2]) == ["app", "judge"]
    assert len(table) == 3


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
