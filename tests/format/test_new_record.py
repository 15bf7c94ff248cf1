"""format.new_record: the one builder of a record dict (section-3 key order, RECORD's defaults and types)."""

from __future__ import annotations

import json

import pytest

from capbench_nb.format import RECORD, RECORD_KEY_ORDER, TELEMETRY_FIELDS, new_record
from capbench_nb.records.exact_reader import record_values


def test_defaults_and_key_order():
    rec = new_record(task_id="t1", attempt=2, success=False, agent_eligible=True, failure_class="agent")
    assert tuple(rec) == RECORD_KEY_ORDER
    assert rec == {"task_id": "t1", "attempt": 2, "artifact_dir": None, "success": False, "agent_eligible": True,
                   "failure_class": "agent", "failure_stage": None, "evidence": [], "quality_score": None,
                   "telemetry": dict.fromkeys(TELEMETRY_FIELDS), "telemetry_source": {}, "cost": None,
                   "cost_source": None}
    record_values(json.loads(json.dumps(rec)), None)  # a valid record, as the reader sees it


def test_the_written_key_order_is_spec_section_3s():
    assert sorted(RECORD_KEY_ORDER) == sorted(f.name for f in RECORD)
    assert RECORD_KEY_ORDER[-4:] == ("telemetry", "telemetry_source", "cost", "cost_source")


def test_mutable_defaults_are_not_shared():
    a = new_record(task_id="t", attempt=1, success=True, agent_eligible=True, failure_class="")
    a["evidence"].append("x")
    a["telemetry"]["tool_calls"] = 3
    b = new_record(task_id="t", attempt=1, success=True, agent_eligible=True, failure_class="")
    assert b["evidence"] == [] and b["telemetry"]["tool_calls"] is None


@pytest.mark.parametrize("values, error", [
    ({"attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}, TypeError),  # task_id missing
    ({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": "", "x": 1}, TypeError),
    ({"task_id": "t", "attempt": 1.0, "success": True, "agent_eligible": True, "failure_class": ""}, ValueError),
    ({"task_id": "t", "attempt": True, "success": True, "agent_eligible": True, "failure_class": ""}, ValueError),
    ({"task_id": "t", "attempt": 1, "success": 1, "agent_eligible": True, "failure_class": ""}, ValueError),
    ({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": "oops"}, ValueError),
    ({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": None, "failure_class": ""}, ValueError),
])
def test_a_value_outside_its_row_is_refused(values, error):
    with pytest.raises(error):
        new_record(**values)
