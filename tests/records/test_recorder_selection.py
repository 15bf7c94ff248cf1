"""RunRecorder.record_selection: a best-of-k selector's picks, checked with the loader's rules and
appended crash-safe like attempts (spec section 9)."""

from __future__ import annotations

import pytest

import capbench_nb as cb
from capbench_nb.records.recorder import RunRecorder
from conftest import SELECTOR, manifest, record

PLAN = manifest([("t1", 2), ("t2", 2)])


def _recorded(tmp_path):
    rec = RunRecorder(tmp_path / "run", PLAN).open()
    for r in (record("t1", 1, "A"), record("t1", 2), record("t2", 1)):
        rec.record(r)
    return rec


def test_lines_the_loader_accepts_and_identical_re_records(tmp_path):
    rec = _recorded(tmp_path)
    assert rec.record_selection("t1", [1, 2], 2, selector=SELECTOR, scores={1: 0.1, 2: 0.9}, selector_ms=30,
                                selector_tokens=120, selector_cost=0.001, selector_cost_source="prices/x@1")
    assert rec.record_selection("t1", [1, 2], 2, selector=SELECTOR, scores={"1": 0.1, "2": 0.9}, selector_ms=30,
                                selector_tokens=120, selector_cost=0.001, selector_cost_source="prices/x@1") is False
    rec.close(status="completed")
    run = cb.load_run(tmp_path / "run")
    assert run.selection.lines["scores"].tolist() == [{1: 0.1, 2: 0.9}]
    assert cb.compute_metrics(run)["selection"]["metrics"]["selected@k"]["successes"] == 1


@pytest.mark.parametrize("args, kwargs, rule", [
    (("t2", [1, 2], 1), {}, "selection-candidate-missing"),  # attempt 2 of t2 is not recorded yet
    (("t1", [1, 2], 3), {}, "selection-selected"),
    (("t9", [1], 1), {}, "selection-task-not-in-plan"),
    (("t1", [1, 2], 1), {"scores": {1: 0.5}}, "selection-scores"),
    (("t1", [1, 2], 1), {"selector_cost": 0.5}, "selection-cost-needs-source"),
    (("t1", [1, 2], 1), {"selector_ms": float("nan")}, "selection-json"),
])
def test_a_line_breaking_a_rule_is_not_written(tmp_path, args, kwargs, rule):
    rec = _recorded(tmp_path)
    with pytest.raises(cb.InvalidRunError) as info:
        rec.record_selection(*args, selector=SELECTOR, **kwargs)
    assert info.value.rule == rule and info.value.file == str(tmp_path / "run" / "selection.jsonl")
    assert not (tmp_path / "run" / "selection.jsonl").exists()
    rec.close()


def test_one_line_and_one_selector_per_run_across_a_resume(tmp_path):
    rec = _recorded(tmp_path)
    rec.record_selection("t1", [1, 2], 1, selector=SELECTOR)
    rec.close()
    with RunRecorder(tmp_path / "run", PLAN) as rec:
        with pytest.raises(cb.InvalidRunError) as info:
            rec.record_selection("t1", [1, 2], 2, selector=SELECTOR)
        assert info.value.rule == "selection-duplicate-task"
        with pytest.raises(cb.InvalidRunError) as info:
            rec.record_selection("t2", [1], 1, selector={"name": "verifier", "version": "2"})
        assert info.value.rule == "selection-selector"
        assert rec.record_selection("t1", [1, 2], 1, selector=SELECTOR) is False  # already there, identical
        assert rec.record_selection("t2", [1], None, selector=SELECTOR)
    assert cb.load_run(tmp_path / "run").selection.lines["task_id"].tolist() == ["t1", "t2"]


def test_a_line_cut_by_a_crash_moves_to_a_side_file(tmp_path):
    rec = _recorded(tmp_path)
    rec.record_selection("t1", [1, 2], 1, selector=SELECTOR)
    rec.close()
    path = tmp_path / "run" / "selection.jsonl"
    whole = path.read_bytes()
    with open(path, "ab") as fh:
        fh.write(b'{"task_id": "t2", "candid')  # the runner died mid-write
    with RunRecorder(tmp_path / "run", PLAN) as rec:
        assert rec.record_selection("t2", [1], 1, selector=SELECTOR)
    assert (tmp_path / "run" / "selection.jsonl.truncated").read_bytes() == b'{"task_id": "t2", "candid'
    assert path.read_bytes().startswith(whole) and cb.load_run(tmp_path / "run").selection.lines.shape[0] == 2


def test_other_damage_is_refused_on_open(tmp_path):
    rec = _recorded(tmp_path)
    rec.close()
    (tmp_path / "run" / "selection.jsonl").write_text('{"task_id": "t1"}\n', encoding="utf-8")
    with pytest.raises(cb.InvalidRunError) as info:
        RunRecorder(tmp_path / "run", PLAN).open()
    assert info.value.rule == "missing-field"
    (tmp_path / "run" / "selection.jsonl").unlink()
    RunRecorder(tmp_path / "run", PLAN).open().close()  # the refused open released its lock: no run-locked
