"""The attempt-details view (capbench_nb.records.details): what each counted attempt's artifacts say,
read once within the size limits, for the pages to render without reading files."""

from __future__ import annotations

import json

import capbench_nb as cb
from capbench_nb.records.details import ERROR_CHARS, attempt_details, clip_text, evidence_texts

from conftest import manifest, record, write_run


def _run(tmp_path, records, tasks):
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks), records))


def test_evidence_values_errors_and_files_of_each_attempt(tmp_path):
    adir = tmp_path / "run" / "attempts" / "t1" / "2"
    adir.mkdir(parents=True)
    event = {"type": "device_action", "status": "error", "error": "tap missed the button"}
    (adir / "episode.json").write_text(json.dumps({"events": [{"type": "observe"}, event]}), encoding="utf-8")
    records = [record("t1", 1, "S"),
               record("t1", 2, "A", artifact_dir="attempts/t1/2", failure_stage="device_execution",
                      evidence=["episode.json#/events/1"], telemetry_source={"task_wall_ms": "gone.json#/x"})]
    d = attempt_details(_run(tmp_path, records, [("t1", 2)]))
    assert "".join(d.codes.tolist()) == "SA" and d.task_position.tolist() == [0, 0]
    assert d.rows["attempt"].tolist() == [1, 2] and d.attempts == 2 and d.resolved == 2 and not d.summarised
    [[ref, value, problem]] = d.evidence[1]
    assert ref == "episode.json#/events/1" and problem is None and json.loads(value) == event
    assert d.errors == {1: "tap missed the button (episode.json#/events/1)"}
    assert d.files == [None, [("episode.json", True), ("gone.json", False)]]


def test_the_size_limits_summarise_successes_and_leave_files_unread_beyond_the_budget(tmp_path):
    records = [record("t1", 1, "S"), record("t1", 2, "A", artifact_dir="attempts/t1/2", evidence=["a.json#/x"]),
               record("t2", 1, "A", artifact_dir="attempts/t2/1", evidence=["b.json#/y"])]
    for adir, name, key in (("attempts/t1/2", "a.json", "x"), ("attempts/t2/1", "b.json", "y")):
        (tmp_path / "run" / adir).mkdir(parents=True)
        (tmp_path / "run" / adir / name).write_text(json.dumps({key: 7}), encoding="utf-8")
    run = _run(tmp_path, records, [("t1", 2), ("t2", 1)])
    d = attempt_details(run, full_detail=2, resolve_budget=1)
    assert d.summarised and d.attempts == 3 and len(d.rows) == 2  # the success is summarised
    assert "".join(d.codes.tolist()) == "AA" and d.resolved == 1
    assert d.evidence[0] == [["a.json#/x", "7", None]]  # read
    assert d.evidence[1] == [["b.json#/y", None, None]]  # beyond the budget: named, unread
    assert d.files == [[("a.json", True)], [("b.json", None)]]
    (tmp_path / "run" / "attempts/t1/2/a.json").unlink()  # an artifact gone since loading: said so, not raised
    [[ref, value, problem]] = attempt_details(run, full_detail=2, resolve_budget=1).evidence[0]
    assert ref == "a.json#/x" and value is None and problem


def test_error_messages_are_clipped():
    text = "x" * (ERROR_CHARS + 5)
    assert clip_text(text, ERROR_CHARS) == "x" * ERROR_CHARS + "… (5 more characters)"
    assert clip_text("short", ERROR_CHARS) == "short"


def test_evidence_texts_of_chosen_attempts_in_order_within_a_budget(tmp_path):
    records = [record("t1", 1, "A", artifact_dir="attempts/t1/1", evidence=["a.json#/x", "a.json#/z"]),
               record("t2", 1, "A", artifact_dir="attempts/t2/1", evidence=["b.json#/y"]),
               record("t2", 2, "S")]
    for adir, name, doc in (("attempts/t1/1", "a.json", {"x": {"b": 2, "a": "é"}, "z": 0}), ("attempts/t2/1", "b.json", {"y": 7})):
        (tmp_path / "run" / adir).mkdir(parents=True)
        (tmp_path / "run" / adir / name).write_text(json.dumps(doc), encoding="utf-8")
    run = _run(tmp_path, records, [("t1", 1), ("t2", 2)])
    found, used = evidence_texts(run, [("t2", 1), ("t1", 1), ("t9", 1), ("t2", 2)], budget=2, text=str.upper)
    assert used == 2 and list(found) == [("t2", 1), ("t1", 1), ("t2", 2)]  # t9: not a counted attempt, skipped
    assert found[("t2", 1)] == [["b.json#/y", "7", None]]
    [first, second] = found[("t1", 1)]
    assert first == ["a.json#/x", '{"A": "É", "B": 2}', None]  # the JSON text (keys sorted), through `text`
    assert second == ["a.json#/z", None, None]  # beyond the budget: named, unread
    assert found[("t2", 2)] == []
    (tmp_path / "run" / "attempts/t1/1/a.json").unlink()  # gone since loading: said so, not raised
    found, used = evidence_texts(run, [("t1", 1)], budget=5)
    assert used == 2 and all(value is None and why for _, value, why in found[("t1", 1)])
