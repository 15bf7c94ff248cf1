"""Error messages that quote run data (a field's value, a task id) stay one clean line: escaped, shortened."""

from __future__ import annotations

import json

import pytest

from conftest import check_error, cli, compact, write

LONG_TEXT = "L" * 10_000

# --------------------------------------------------------------------------- hostile error messages


@pytest.mark.parametrize("record,rule", [
    ({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True,
      "failure_class": "\x1b[2J\x1b[H<script>\u202e" + LONG_TEXT}, "failure-class"),
    ({"task_id": "t", "attempt": "\n\r\u2028" + LONG_TEXT, "success": True, "agent_eligible": True,
      "failure_class": ""}, "attempt"),
    pytest.param({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": "",
                  "artifact_dir": "../\x1b]0;title\x07" + LONG_TEXT}, "artifact-dir", id="artifact-dir"),
    pytest.param({"task_id": "t", "attempt": 1, "success": False, "agent_eligible": True, "failure_class": "agent",
                  "artifact_dir": ".", "evidence": ["manifest.json#/" + LONG_TEXT]}, "evidence", id="evidence"),
], ids=["failure-class", "attempt", "artifact-dir", "evidence"])
def test_error_messages_quoting_run_data_stay_one_clean_line(tmp_path, record, rule):
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                    "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}}
    run = write(tmp_path / "run", manifest_doc, json.dumps(record).encode() + b"\n")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2
    check_error(err, run, "results.jsonl:1", rule)  # one line, no raw control or bidi character
    assert len(err) < 1200


def test_duplicate_hostile_task_id_error_is_escaped(tmp_path):
    tid = "dup\x1b[31m\u202e\n<script>"
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                    "plan": {"tasks": [{"task_id": tid, "repeats": 2}]}}
    rec = {"task_id": tid, "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}
    run = write(tmp_path / "run", manifest_doc, compact(rec) + b"\n" + compact(rec) + b"\n")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2
    check_error(err, run, "results.jsonl:2", "duplicate-attempt")
