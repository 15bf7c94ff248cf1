"""records.views: the readable attempts table, evidence look-up, and the escaped HTML helpers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.format import CLASS_KEYS, TELEMETRY_FIELDS
from capbench_nb.records.views import (
    PROVENANCE_COLUMNS, attempt_evidence, attempts_view, clip, escape_text, html_card, run_summary,
)

from conftest import SAMPLE_RUN, manifest, outcomes, record, write_run


def test_the_view_has_an_outcome_column_evidence_lists_and_no_provenance():
    run = cb.load_run(SAMPLE_RUN)
    view = attempts_view(run)
    a = run.attempts
    assert list(view.columns) == ["task_id", "attempt", "outcome", "agent_eligible", "failure_stage", "evidence",
                                  "quality_score", "cost", *TELEMETRY_FIELDS]
    assert not set(PROVENANCE_COLUMNS) & set(view.columns)
    assert view.index.equals(a.index) and len(view) == len(a)
    assert list(view["outcome"].cat.categories) == list(CLASS_KEYS)
    expected = [("success" if s else c) for s, c in zip(a["success"], a["failure_class"].astype(object))]
    assert view["outcome"].astype(object).tolist() == expected
    assert "" not in view["outcome"].astype(object).tolist()
    assert view["evidence"].map(type).eq(list).all()
    assert view["evidence"].tolist() == [json.loads(text) for text in a["evidence"].astype(object)]
    row = view[(view["task_id"] == "settings.display.brightness") & (view["attempt"] == 2)].iloc[0]
    assert row["evidence"] == ["episode.json#/events/4"] and row["outcome"] == "agent"
    assert row["failure_stage"] == "device_execution"


def test_provenance_columns_on_request_telemetry_source_as_a_dict():
    run = cb.load_run(SAMPLE_RUN)
    view = attempts_view(run, provenance=True)
    assert list(view.columns[-4:]) == list(PROVENANCE_COLUMNS)
    first = view.iloc[0]
    assert first["line"] == 1 and first["artifact_dir"] == "attempts/browser.search.query/1"
    assert first["telemetry_source"] == json.loads(run.attempts["telemetry_source"].iloc[0])
    assert isinstance(first["telemetry_source"], dict) and first["cost_source"] == "prices/p1@2026-10-01"


def test_rows_do_not_share_their_lists_and_the_run_is_unchanged():
    run = cb.load_run(SAMPLE_RUN)
    before = run.attempts.copy()
    view = attempts_view(run)
    view["evidence"].iloc[0].append("changed")
    assert view["evidence"].iloc[1] == []  # both were '[]': each row has its own list
    pd.testing.assert_frame_equal(run.attempts, before)


def test_the_view_of_an_exactly_read_run_matches_the_fast_one(tmp_path):
    # an anomaly sends nothing to the exact reader, but strict=False with an invalid line does
    records = outcomes({"t1": "SA", "t2": "E"}) + ["{not json"]
    run = cb.load_run(write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]), records), strict=False)
    view = attempts_view(run, provenance=True)
    assert view["outcome"].astype(object).tolist() == ["success", "agent", "environment"]
    assert view["evidence"].tolist() == [[], [], []] and view["telemetry_source"].tolist() == [{}, {}, {}]


def test_evidence_of_an_attempt_resolves_every_reference():
    run = cb.load_run(SAMPLE_RUN)
    assert attempt_evidence(run, "settings.display.brightness", 2) == {
        "episode.json#/events/4": {"type": "device_action", "name": "swipe", "call_id": "c5", "start_ms": 10112,
                                   "end_ms": 15651, "status": "error", "error": "device offline"}}
    assert attempt_evidence(run, "browser.search.query", 1) == {}
    with pytest.raises(KeyError, match="no counted attempt 4 of task 'settings.display.dark_mode'"):
        attempt_evidence(run, "settings.display.dark_mode", 4)  # above the planned repeats: not counted


def test_clip_escape_and_card():
    assert clip("abc", 5) == "abc" and clip("abcdefgh", 5) == "abcd\u2026" and len(clip("x" * 999)) == 48
    assert escape_text("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;"
    card = html_card("<t>", [("<k>", "<v>")], note="<code>ok</code>")
    assert "&lt;t&gt;" in card and "&lt;k&gt;" in card and "&lt;v&gt;" in card and "<code>ok</code>" in card
    assert "<t>" not in card and "<k>" not in card and "<v>" not in card


def test_summary_of_a_run_without_status_or_suite(tmp_path):
    doc = manifest([("t1", 1)])
    del doc["suite"]
    run = cb.load_run(write_run(tmp_path / "run", doc, [record("t1", 1)]))
    assert run_summary(run) == "Run('test-run', suite none, completed, 1 task x 1, 1 attempt, k=1)"


def test_the_error_of_an_imported_errored_epoch_is_its_evidence(tmp_path):
    from capbench_nb.records.importers import import_inspect

    from conftest import TESTS

    import_inspect(TESTS / "data" / "inspect" / "mock_pass_k_with_error.json", tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    view = attempts_view(run)
    errored = view[view["evidence"].str.len() > 0]
    assert errored[["task_id", "attempt", "outcome"]].values.tolist() == [["t5", 3, "unknown"]]
    error = attempt_evidence(run, "t5", 3)["record.json#/error"]
    assert error["message"] == "RuntimeError('deliberate failure for sample t5 epoch 3')"


def test_evaluation_contracts_of_the_sample_run():
    """The facts the run comparison's evaluation warning compares, read by records (metrics opens no artifact).

    By hand from data/sample-run: clock.alarm.create's first eligible attempt's attempt.json has
    hard assertions alarm_exists_0645 and alarm_label_gym and judge_enabled true;
    settings.bluetooth.off has only skipped (ineligible) attempts, so no contract; a task outside
    the ones asked for is not read.
    """
    run = cb.load_run(SAMPLE_RUN)
    contracts = run.evaluation_contracts(["clock.alarm.create", "settings.bluetooth.off"])
    assert contracts == {"clock.alarm.create": (("alarm_exists_0645", "alarm_label_gym"), True)}
    every = run.evaluation_contracts(list(run.plan["task_id"].astype(object)))
    assert "settings.bluetooth.off" not in every and len(every) == 11
    assert all(names == tuple(sorted(names)) and isinstance(judge, bool) for names, judge in every.values())
