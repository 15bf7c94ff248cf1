"""Reading selection.jsonl (records.selection, spec section 9): the line rules of results.jsonl, the rules
of section 9, strict and with allow-invalid, and its place in the loaded run."""

from __future__ import annotations

import hashlib
import json

import pytest

import capbench_nb as cb
from capbench_nb.outputs.summary import summary_markdown
from capbench_nb.records import selection as selection_module
from conftest import SELECTOR, manifest, pick, record, write_run, write_selection


@pytest.fixture
def run_dir(tmp_path):
    records = [record("t1", 1, "A"), record("t1", 2), record("t2", 1), record("t2", 2, "A"), record("t2", 3)]
    return write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]), records)  # t2 attempt 3: above repeats


def _lines(run_dir, raw: bytes):
    (run_dir / "selection.jsonl").write_bytes(raw)
    return run_dir


GOOD = json.dumps(pick("t1", 2, (1, 2), scores=[0.2, 0.8])).encode()


def test_a_valid_file_is_read_into_the_run(run_dir):
    write_selection(run_dir, [pick("t1", 2, (1, 2), scores=[0.2, 0.8], selector_ms=12.5, selector_tokens=40),
                              pick("t2", None, (1, 2, 3))])  # a candidate above the planned repeats has a record
    run = cb.load_run(run_dir)
    lines = run.selection.lines
    assert lines["task_id"].tolist() == ["t1", "t2"] and lines["line"].tolist() == [1, 2]
    assert lines["candidates"].tolist() == [(1, 2), (1, 2, 3)]
    assert lines["selected"].tolist()[0] == 2 and lines["selected"].isna().tolist() == [False, True]
    assert lines["scores"].tolist() == [{1: 0.2, 2: 0.8}, None]
    assert str(lines["selector_ms"].dtype) == "Float64" and str(lines["selector_tokens"].dtype) == "Int64"
    assert run.selection.selector == SELECTOR and run.anomalies["kind"].tolist() == ["above_planned_repeats"]
    digest = "sha256:" + hashlib.sha256((run_dir / "selection.jsonl").read_bytes()).hexdigest()
    assert run.hashes["selection.jsonl"] == run.selection.sha256 == digest


def test_without_the_file_the_run_has_no_selection(run_dir):
    run = cb.load_run(run_dir)
    assert run.selection is None and "selection.jsonl" not in run.hashes


def test_an_empty_file_is_a_selection_without_lines(run_dir):
    run = cb.load_run(_lines(run_dir, b"\n\n"))
    assert run.selection.lines.empty and run.selection.selector is None


@pytest.mark.parametrize("raw, rule, line", [
    (b"\n\r\n" + GOOD + b"\r\n" + b'{"task_id": "t2", "candidates": [1], "selected": NaN}\n', "json-nan", 4),
    (b"\xef\xbb\xbf" + GOOD + b"\n", "bom", 1),
    (GOOD + b"\n" + GOOD[:30], "truncated-line", 2),
    (GOOD + b"\n" + b'{"task_id": "\\ud800"}\n', "invalid-unicode", 2),
    (GOOD + b"\n" + b'{"task_id": "t2", "candidates": [1]}\n', "missing-field", 2),
    (b'{"task_id": "t1", "candidates": [1.0], "selected": null, "selector": {}}\n', "selection-candidates", 1),
    (b'{"task_id": "t1", "candidates": [1], "selected": true, "selector": {}}\n', "selection-selected", 1),
    (b'{"task_id": "t1", "candidates": [1], "selected": 1, "selector": {"name": "v", "version": 1}}\n',
     "selection-selector", 1),
    (json.dumps(pick("t1", 1, (1,), selector_ms=-1)).encode() + b"\n", "negative", 1),
    (json.dumps(pick("t1", 1, (1,), selector_tokens=1.5)).encode() + b"\n", "type", 1),
    (json.dumps(pick("t1", 1, (1,), scores={"1": "high"})).encode() + b"\n", "selection-scores", 1),
    (json.dumps(pick("t1", 1, (0,))).encode() + b"\n", "selection-candidates", 1),
])
def test_line_rules_as_results_jsonl_and_field_rules(run_dir, raw, rule, line):
    with pytest.raises(cb.InvalidRunError) as info:
        cb.load_run(_lines(run_dir, raw))
    assert (info.value.rule, info.value.line) == (rule, line)
    assert info.value.file == str(run_dir / "selection.jsonl")


def test_allow_invalid_lists_every_invalid_line_and_keeps_the_rest(run_dir):
    write_selection(run_dir, [pick("t9", 1, (1,)), pick("t1", 3, (1, 2)), "{", pick("t1", 1, (1, 2)),
                              pick("t1", 2, (1, 2)), pick("t2", 1, (1, 4))])
    run = cb.load_run(run_dir, strict=False)
    sel = run.anomalies[run.anomalies["kind"] == "invalid_selection_line"]
    assert sel[["line", "rule"]].values.tolist() == [
        [1, "selection-task-not-in-plan"], [2, "selection-selected"], [3, "json"], [5, "selection-duplicate-task"],
        [6, "selection-candidate-missing"]]
    assert sel["task_id"].tolist()[:2] == ["t9", "t1"] and sel["task_id"].isna().tolist()[2]
    assert run.selection.lines["line"].tolist() == [4]
    doc = cb.compute_metrics(run)
    assert doc["anomaly_counts"]["invalid_selection_line"] == 5
    assert doc["anomalies"][-1]["reason"].endswith("[rule: selection-candidate-missing]")
    text = summary_markdown(doc)
    assert "5 invalid lines of selection.jsonl skipped with --allow-invalid" in text and "t9, selection.jsonl line 1" in text


def test_the_first_valid_line_names_the_selector(run_dir):
    other = {"name": "verifier", "version": "2"}
    write_selection(run_dir, [pick("t9", 1, (1,), selector=other), pick("t1", 1, (1, 2)),
                              pick("t2", 1, (1,), selector=other)])
    run = cb.load_run(run_dir, strict=False)
    assert run.selection.selector == SELECTOR
    assert run.anomalies["rule"].tolist() == ["above-planned-repeats", "selection-task-not-in-plan", "selection-selector"]


def test_a_dangling_link_is_an_error_not_an_absent_file(run_dir):
    (run_dir / "selection.jsonl").symlink_to(run_dir / "nowhere.jsonl")
    with pytest.raises(cb.InvalidRunError) as info:
        cb.load_run(run_dir)
    assert info.value.rule == "selection-unreadable"


def test_a_line_too_long_refuses_the_file_in_both_modes(run_dir, monkeypatch):
    monkeypatch.setattr(selection_module, "MAX_LINE_BYTES", 200)
    _lines(run_dir, GOOD + b"\n" + b'{"task_id": "' + b"x" * 300 + b'"}\n')
    for strict in (True, False):
        with pytest.raises(cb.InvalidRunError) as info:
            cb.load_run(run_dir, strict=strict)
        assert (info.value.rule, info.value.line) == ("line-too-long", 2)


def test_an_invalid_results_line_is_no_record_for_a_candidate(run_dir):
    with open(run_dir / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"task_id": "t1"}\n')
    write_selection(run_dir, [pick("t1", 1, (1, 2))])
    run = cb.load_run(run_dir, strict=False)
    assert run.anomalies["kind"].tolist() == ["above_planned_repeats", "invalid_line"]  # results.jsonl's, then ours
    assert run.selection.lines["task_id"].tolist() == ["t1"]
