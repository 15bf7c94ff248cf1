"""records.views: the readable attempts table, evidence look-up, and the escaped HTML helpers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.format import CLASS_KEYS, TELEMETRY_FIELDS
from capbench_nb.records.views import (
    NO_STAGE, OUTCOME_CODES, PROVENANCE_COLUMNS, attempt_evidence, attempt_outcomes, attempts_view, clip,
    eligibility_by_outcome, escape_text, html_card, outcome_codes, outcomes_by_stage, run_summary, task_outcome_codes,
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


# --------------------------------------------------------------------------- outcome views (issue 22)


def _run(tmp_path, spec, stages=None):
    recs = outcomes(spec)
    for rec in recs:
        stage = (stages or {}).get((rec["task_id"], rec["attempt"]))
        if stage:
            rec["failure_stage"] = stage
            rec["evidence"] = ["attempt.json#"]
    tasks = [(t, len(codes)) for t, codes in spec.items()]
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks), recs), skip_evidence=True)


def test_attempt_outcomes_and_codes_one_per_counted_attempt(tmp_path):
    run = _run(tmp_path, {"t1": "SAEVKUX"})
    assert attempt_outcomes(run.attempts).tolist() == ["success", "agent", "environment", "evaluation", "skipped",
                                                      "unknown", "unknown"]
    assert "".join(outcome_codes(run.attempts).tolist()) == "SAEVKUX"
    assert attempts_view(run)["outcome"].astype(str).tolist() == attempt_outcomes(run.attempts).tolist()
    assert outcome_codes(run.attempts.iloc[:0]).tolist() == [] and set(OUTCOME_CODES.values()) >= set("SAEVKUX.")


def test_task_outcome_codes_fill_missing_attempts_and_follow_the_given_order(tmp_path):
    run = _run(tmp_path, {"t1": "S.A", "t2": ".X", "t3": "E"})
    assert task_outcome_codes(run) == ["S.A", ".X", "E"]
    assert task_outcome_codes(run, ["t3", "t1"]) == ["E", "S.A"]


def test_outcomes_by_stage_and_eligibility_by_outcome_count_by_hand(tmp_path):
    # hand count: t1 = S A E U X; stages: A at evaluation, E at setup, X at setup
    run = _run(tmp_path, {"t1": "SAEUX"}, stages={("t1", 2): "evaluation", ("t1", 3): "setup", ("t1", 5): "setup"})
    table = outcomes_by_stage(run)
    assert list(table.index) == ["setup", "evaluation", "device_execution", NO_STAGE]
    assert list(table.columns) == [*CLASS_KEYS, "total"] and str(table.dtypes.iloc[0]) == "Int64"
    assert table.loc["setup", "environment"] == 1 and table.loc["setup", "unknown"] == 1 and table.loc["setup", "total"] == 2
    assert table.loc["evaluation", "agent"] == 1 and table.loc["evaluation", "total"] == 1
    assert table.loc["device_execution", "total"] == 0
    assert table.loc[NO_STAGE, "success"] == 1 and table.loc[NO_STAGE, "unknown"] == 1 and table.loc[NO_STAGE, "total"] == 2
    assert int(table["total"].sum()) == 5
    split = eligibility_by_outcome(run)
    assert split.loc["unknown"].tolist() == [1, 1]
    assert split.loc["success"].tolist() == [1, 0] and split.loc["environment"].tolist() == [0, 1]
    assert int(split.to_numpy().sum()) == 5


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
