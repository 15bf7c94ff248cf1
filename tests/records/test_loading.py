"""Validation of a run directory: spec sections 2, 3 and 8 (run-format.md).

Every invalid input must raise ``InvalidRunError`` naming the file, the
physical 1-based line (blank lines included) and a specific rule id; with
``strict=False`` invalid lines are skipped and listed as ``invalid_line``
anomalies instead.

Layout used by most cases: line 1 is a valid record, line 2 is blank, line 3
is the record under test, so every expected line number also checks that blank
lines are counted.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pandas as pd
import pytest

import capbench_nb
from conftest import ARTIFACT_DIR, ATTEMPT_JSON, EVIDENCE_CASES, NEGATIVE_CASES, TELEMETRY_TYPE_CASES
from conftest import FULL_TELEMETRY as _TELEMETRY
from conftest import RECORD_INVARIANT_CASES as INVARIANT_CASES
from conftest import RECORD_TYPE_CASES as TYPE_CASES
from conftest import TOO_LARGE_CASES, third_line, with_telemetry, without
from conftest import failed_record as failed
from conftest import full_manifest as manifest
from conftest import full_record as record
from conftest import write_full_run as write_run

from capbench_nb import InvalidRunError, load_run

# --------------------------------------------------------------------------- helpers

#: Spec section 5, in its order (written out here, not taken from the package under test).
TELEMETRY_FIELDS = (
    "task_wall_ms", "setup_ms", "tool_calls", "device_actions", "llm_calls",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens",
    "reasoning_tokens", "time_to_first_token_ms", "device_execution_ms",
    "screenshot_capture_ms", "tool_errors", "replan_count",
    "recovery_attempted", "recovery_succeeded",
)


def invalid(tmp_path: Path, lines, **kw) -> InvalidRunError:
    run = write_run(tmp_path, lines, **kw)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    return info.value


def assert_results_error(err: InvalidRunError, tmp_path: Path, rule: str, line: int) -> None:
    assert (err.rule, err.line) == (rule, line), str(err)
    assert err.file == str(tmp_path / "run" / "results.jsonl")
    assert err.pointer is None
    assert err.message
    assert f"results.jsonl:{line}" in str(err) and f"[rule: {rule}]" in str(err)


# --------------------------------------------------------------------------- the valid baseline


def test_valid_run_loads_every_field(tmp_path):
    run = load_run(write_run(tmp_path, [record("t1", 1), "", failed("t1", 2), record("t2", 1)]))
    assert list(run.attempts["line"]) == [1, 3, 4]
    assert list(run.attempts["task_id"]) == ["t1", "t1", "t2"]
    assert list(run.attempts["attempt"]) == [1, 2, 1]
    assert list(run.attempts["success"]) == [True, False, True]
    assert run.attempts["tool_calls"].tolist() == [4, 4, 4]
    assert run.k == 3
    assert run.anomalies.empty
    assert run.run_id == "run-1"


def test_blank_and_whitespace_lines_are_ignored_but_counted(tmp_path):
    lines = ["", "   ", record("t1", 1), "\t", b"\r\n", record("t1", 2), ""]
    run = load_run(write_run(tmp_path, lines))
    assert list(run.attempts["line"]) == [3, 6]


def test_crlf_line_endings_are_accepted(tmp_path):
    lines = [json.dumps(record("t1", 1)).encode() + b"\r\n", json.dumps(record("t1", 2)).encode() + b"\r\n"]
    run = load_run(write_run(tmp_path, lines))
    assert list(run.attempts["line"]) == [1, 2]


def test_valid_last_line_without_trailing_newline_is_fine(tmp_path):
    lines = [record("t1", 1), json.dumps(record("t1", 2)).encode()]  # no final newline
    run = load_run(write_run(tmp_path, lines))
    assert list(run.attempts["line"]) == [1, 2]


def test_empty_results_file_is_a_valid_run_without_attempts(tmp_path):
    run = load_run(write_run(tmp_path, []))
    assert run.attempts.empty and run.anomalies.empty


def test_unknown_extra_fields_are_accepted(tmp_path):
    tele = dict(_TELEMETRY, gpu_ms=12, vendor_note="x")
    rec = record("t1", 1, telemetry=tele, runner_extra={"nested": [1, 2]}, note="hello")
    run = load_run(write_run(tmp_path, [rec]))
    assert len(run.attempts) == 1 and run.attempts["task_wall_ms"].iat[0] == 48210


def test_missing_telemetry_key_reads_as_null_not_zero(tmp_path):
    sparse = record("t1", 1, telemetry={"tool_calls": 0, "task_wall_ms": 5}, telemetry_source={})
    no_telemetry = without(record("t1", 2), "telemetry")
    run = load_run(write_run(tmp_path, [sparse, no_telemetry]))
    a = run.attempts
    assert a["setup_ms"].iat[0] is pd.NA
    assert a["input_tokens"].iat[0] is pd.NA
    assert a["recovery_attempted"].iat[0] is pd.NA
    assert a["tool_calls"].iat[0] == 0 and a["tool_calls"].iat[0] is not pd.NA  # an explicit 0 stays 0
    assert a["task_wall_ms"].iat[0] == 5
    for name in TELEMETRY_FIELDS:
        assert a[name].iat[1] is pd.NA, name
    assert int(a["setup_ms"].isna().sum()) == 2


def test_explicit_null_telemetry_stays_null(tmp_path):
    rec = record("t1", 1, telemetry={name: None for name in TELEMETRY_FIELDS}, telemetry_source={})
    run = load_run(write_run(tmp_path, [rec]))
    assert all(run.attempts[name].iat[0] is pd.NA for name in TELEMETRY_FIELDS)


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"quality_score": 0}, id="quality-0"),
        pytest.param({"quality_score": 1}, id="quality-1"),
        pytest.param({"quality_score": None}, id="quality-null"),
        pytest.param({"cost": 0.25, "cost_source": "prices/openai@2026-10-01"}, id="cost-with-source"),
        pytest.param({"cost": None, "cost_source": "prices/openai@2026-10-01"}, id="source-without-cost"),
        pytest.param({"telemetry": dict(_TELEMETRY, tool_calls=2**53 - 1)}, id="count-at-2**53-1"),
        pytest.param({"telemetry": dict(_TELEMETRY, task_wall_ms=0.5)}, id="fractional-ms"),
        pytest.param({"quality_score": 0.0, "cost": 0, "cost_source": "p@1"}, id="zeros"),
    ],
)
def test_boundary_values_are_valid(tmp_path, overrides):
    run = load_run(write_run(tmp_path, [record("t1", 1, **overrides)]))
    assert len(run.records) == 1


def test_attempt_at_2_53_minus_1_is_valid(tmp_path):
    run = load_run(write_run(tmp_path, [record("t1", 2**53 - 1)]))
    assert run.records["attempt"].tolist() == [2**53 - 1]
    assert list(run.anomalies["kind"]) == ["above_planned_repeats"]


@pytest.mark.parametrize(
    "rec",
    [
        pytest.param(failed(failure_class="unknown", agent_eligible=True), id="unknown-eligible"),
        pytest.param(failed(failure_class="unknown", agent_eligible=False), id="unknown-ineligible"),
        pytest.param(failed(failure_class="environment", agent_eligible=False), id="environment"),
        pytest.param(failed(failure_class="evaluation", agent_eligible=False, quality_score=None), id="evaluation"),
        pytest.param(failed(failure_class="skipped", agent_eligible=False), id="skipped"),
        pytest.param(failed(failure_stage="device_execution", artifact_dir=ARTIFACT_DIR,
                            evidence=["episode.json#/events/0"]), id="stage-with-evidence"),
    ],
)
def test_valid_class_combinations(tmp_path, rec):
    run = load_run(write_run(tmp_path, [rec]))
    assert len(run.records) == 1


# --------------------------------------------------------------------------- syntax-level rules


def test_invalid_json_line(tmp_path):
    err = invalid(tmp_path, third_line('{"task_id": "t2", "attempt": 1,,}'))
    assert_results_error(err, tmp_path, "json", 3)


def test_trailing_garbage_after_object_is_invalid_json(tmp_path):
    err = invalid(tmp_path, third_line(json.dumps(record("t2", 1)) + " {}"))
    assert_results_error(err, tmp_path, "json", 3)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("where", ["quality_score", "telemetry", "extra-field"])
def test_json_nan_and_infinity_tokens(tmp_path, value, where):
    if where == "quality_score":
        rec = record("t2", 1, quality_score=value)
    elif where == "telemetry":
        rec = with_telemetry(task_wall_ms=value)
    else:
        rec = record("t2", 1, unknown_extra=value)  # even in a field the toolkit ignores
    text = json.dumps(rec)  # Python writes NaN / Infinity / -Infinity tokens
    assert any(tok in text for tok in ("NaN", "Infinity"))
    err = invalid(tmp_path, third_line(text))
    assert_results_error(err, tmp_path, "json-nan", 3)


def test_truncated_final_line_without_newline(tmp_path):
    cut = json.dumps(record("t2", 1))[:40].encode()  # no newline: the runner stopped mid-write
    err = invalid(tmp_path, [record("t1", 1), "", cut])
    assert_results_error(err, tmp_path, "truncated-line", 3)


def test_broken_line_in_the_middle_is_json_not_truncated(tmp_path):
    cut = json.dumps(record("t2", 1))[:40]
    err = invalid(tmp_path, [record("t1", 1), "", cut, record("t1", 2)])
    assert_results_error(err, tmp_path, "json", 3)


def test_broken_last_line_with_newline_is_json_not_truncated(tmp_path):
    cut = json.dumps(record("t2", 1))[:40]
    err = invalid(tmp_path, [record("t1", 1), "", cut])  # str items end with "\n"
    assert_results_error(err, tmp_path, "json", 3)


def test_final_line_cut_inside_a_utf8_character_is_truncated(tmp_path):
    text = json.dumps(record("t2", 1, note="état"), ensure_ascii=False).encode("utf-8")
    cut = text[: text.index("é".encode()) + 1]  # first byte of a two-byte character
    err = invalid(tmp_path, [record("t1", 1), "", cut])
    assert_results_error(err, tmp_path, "truncated-line", 3)


def test_final_line_with_extra_data_is_json_not_truncated(tmp_path):
    err = invalid(tmp_path, [record("t1", 1), "", json.dumps(record("t2", 1)).encode() + b"}"])
    assert_results_error(err, tmp_path, "json", 3)


def test_byte_order_mark_at_start(tmp_path):
    err = invalid(tmp_path, [b"\xef\xbb\xbf" + json.dumps(record("t1", 1)).encode() + b"\n", record("t1", 2)])
    assert_results_error(err, tmp_path, "bom", 1)


def test_invalid_utf8(tmp_path):
    bad = json.dumps(record("t2", 1)).encode().replace(b'"t2"', b'"t\xff2"') + b"\n"
    err = invalid(tmp_path, [record("t1", 1), "", bad])
    assert_results_error(err, tmp_path, "utf-8", 3)


@pytest.mark.parametrize("text", ["[1, 2]", '"a record"', "42", "null", "true"], ids=["array", "string", "number", "null", "bool"])
def test_record_must_be_an_object(tmp_path, text):
    err = invalid(tmp_path, third_line(text))
    assert_results_error(err, tmp_path, "record-type", 3)


# --------------------------------------------------------------------------- field rules


@pytest.mark.parametrize("field", ["task_id", "attempt", "success", "agent_eligible", "failure_class"])
def test_missing_required_field(tmp_path, field):
    err = invalid(tmp_path, third_line(without(record("t2", 1), field)))
    assert_results_error(err, tmp_path, "missing-field", 3)
    assert field in err.message


@pytest.mark.parametrize(
    "field",
    ["artifact_dir", "failure_stage", "evidence", "quality_score", "telemetry", "telemetry_source", "cost", "cost_source"],
)
def test_optional_fields_may_be_absent(tmp_path, field):
    run = load_run(write_run(tmp_path, [without(record("t1", 1), field)]))
    assert len(run.records) == 1




@pytest.mark.parametrize("field,value", TYPE_CASES, ids=[f"{f}={json.dumps(v)}" for f, v in TYPE_CASES])
def test_wrong_json_type(tmp_path, field, value):
    err = invalid(tmp_path, third_line(record("t2", 1, **{field: value})))
    assert_results_error(err, tmp_path, "type", 3)


@pytest.mark.parametrize(
    "cost",
    ["0.5", True, [0.5], {"usd": 0.5}],
    ids=["string", "bool", "list", "object"],
)
def test_cost_of_wrong_type(tmp_path, cost):
    err = invalid(tmp_path, third_line(record("t2", 1, cost=cost, cost_source="prices/x@2026-01-01")))
    assert_results_error(err, tmp_path, "type", 3)




@pytest.mark.parametrize(
    "name,value", TELEMETRY_TYPE_CASES, ids=[f"{n}={json.dumps(v)}" for n, v in TELEMETRY_TYPE_CASES]
)
def test_wrong_telemetry_type(tmp_path, name, value):
    err = invalid(tmp_path, third_line(with_telemetry(**{name: value})))
    assert_results_error(err, tmp_path, "type", 3)
    assert name in err.message


@pytest.mark.parametrize(
    "value", [True, False, 1.0, 0, -1, "1", None, [1]],
    ids=["true", "false", "1.0", "0", "-1", "string", "null", "list"],
)
def test_attempt_must_be_an_integer_at_least_1(tmp_path, value):
    err = invalid(tmp_path, third_line(record("t2", value)))
    assert_results_error(err, tmp_path, "attempt", 3)


@pytest.mark.parametrize("value", [5, True], ids=["number", "bool"])
def test_failure_stage_of_wrong_type_is_a_type_error(tmp_path, value):
    err = invalid(tmp_path, third_line(failed("t2", 1, failure_stage=value)))
    assert_results_error(err, tmp_path, "type", 3)


@pytest.mark.parametrize("value", [[], ["setup"], {}], ids=["empty-array", "array", "object"])
def test_failure_stage_array_or_object_is_invalid_input_not_a_crash(tmp_path, value):
    err = invalid(tmp_path, third_line(failed("t2", 1, failure_stage=value)))
    assert err.line == 3 and err.rule in ("type", "failure-stage")




@pytest.mark.parametrize("name,value", NEGATIVE_CASES, ids=[f"{n}={v}" for n, v in NEGATIVE_CASES])
def test_negative_telemetry(tmp_path, name, value):
    err = invalid(tmp_path, third_line(with_telemetry(**{name: value})))
    assert_results_error(err, tmp_path, "negative", 3)


def test_negative_cost(tmp_path):
    err = invalid(tmp_path, third_line(record("t2", 1, cost=-0.5, cost_source="prices/x@2026-01-01")))
    assert_results_error(err, tmp_path, "negative", 3)




@pytest.mark.parametrize("name,value", TOO_LARGE_CASES, ids=[f"{n}={v!r}" for n, v in TOO_LARGE_CASES])
def test_telemetry_numbers_above_2_53_minus_1(tmp_path, name, value):
    err = invalid(tmp_path, third_line(with_telemetry(**{name: value})))
    assert_results_error(err, tmp_path, "number-too-large", 3)


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"attempt": 2**53}, id="attempt"),
        pytest.param({"cost": 2**53, "cost_source": "prices/x@2026-01-01"}, id="cost-int"),
        pytest.param({"cost": 1e300, "cost_source": "prices/x@2026-01-01"}, id="cost-float"),
    ],
)
def test_record_numbers_above_2_53_minus_1(tmp_path, overrides):
    err = invalid(tmp_path, third_line(record("t2", 1, **overrides)))
    assert_results_error(err, tmp_path, "number-too-large", 3)


@pytest.mark.parametrize("score", [1.5, -0.1, 2, 1.0000001], ids=["1.5", "-0.1", "2", "just-above-1"])
def test_quality_score_outside_0_1(tmp_path, score):
    err = invalid(tmp_path, third_line(record("t2", 1, quality_score=score)))
    assert_results_error(err, tmp_path, "quality-score", 3)


@pytest.mark.parametrize("fclass", ["crash", "Agent", "AGENT", " agent", "success", "none"])
def test_unknown_failure_class(tmp_path, fclass):
    err = invalid(tmp_path, third_line(failed("t2", 1, failure_class=fclass)))
    assert_results_error(err, tmp_path, "failure-class", 3)


@pytest.mark.parametrize("stage", ["planning", "grounding", "Setup", ""])
def test_unknown_failure_stage(tmp_path, stage):
    rec = failed("t2", 1, failure_stage=stage, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/setup"])
    err = invalid(tmp_path, third_line(rec))
    assert_results_error(err, tmp_path, "failure-stage", 3)


# --------------------------------------------------------------------------- invariants



@pytest.mark.parametrize("rec,rule", INVARIANT_CASES)
def test_invariants(tmp_path, rec, rule):
    err = invalid(tmp_path, third_line(rec))
    assert_results_error(err, tmp_path, rule, 3)


# --------------------------------------------------------------------------- duplicates


def test_duplicate_attempt_is_reported_on_the_later_line(tmp_path):
    lines = [record("t1", 1), "", record("t1", 2), record("t2", 1), failed("t1", 1)]
    err = invalid(tmp_path, lines)
    assert_results_error(err, tmp_path, "duplicate-attempt", 5)
    assert "line 1" in err.message


def test_same_attempt_number_in_different_tasks_is_not_a_duplicate(tmp_path):
    run = load_run(write_run(tmp_path, [record("t1", 1), record("t2", 1)]))
    assert len(run.attempts) == 2


def test_strict_duplicate_before_another_error_is_the_one_reported(tmp_path):
    lines = [record("t1", 1), "", record("t1", 1), "{not json"]
    err = invalid(tmp_path, lines)
    assert_results_error(err, tmp_path, "duplicate-attempt", 3)


def test_strict_duplicate_before_an_invariant_error_is_the_one_reported(tmp_path):
    lines = [record("t1", 1), record("t1", 1), record("t2", 1, agent_eligible=False)]
    err = invalid(tmp_path, lines)
    assert_results_error(err, tmp_path, "duplicate-attempt", 2)


def test_strict_error_before_a_duplicate_is_the_one_reported(tmp_path):
    lines = [record("t1", 1), "", "{not json", record("t1", 1)]
    err = invalid(tmp_path, lines)
    assert_results_error(err, tmp_path, "json", 3)


def test_strict_earliest_of_several_duplicates_is_reported(tmp_path):
    lines = [record("t1", 1), record("t1", 2), "", record("t1", 2), record("t1", 1)]
    err = invalid(tmp_path, lines)
    assert_results_error(err, tmp_path, "duplicate-attempt", 4)


# --------------------------------------------------------------------------- evidence


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param("attempt.json#/setup", id="object"),
        pytest.param("attempt.json#/setup/status", id="nested"),
        pytest.param("attempt.json#/list/0", id="index-0"),
        pytest.param("attempt.json#/list/1", id="last-index"),
        pytest.param("attempt.json#/a~1b", id="tilde-1-is-slash"),
        pytest.param("attempt.json#/m~0n", id="tilde-0-is-tilde"),
        pytest.param("attempt.json#/~01", id="tilde-01-is-literal-tilde-1"),
        pytest.param("attempt.json#/a b", id="space-as-written"),
        pytest.param("attempt.json#/x#y", id="hash-in-pointer"),
        pytest.param("attempt.json#/", id="empty-key"),
        pytest.param("attempt.json#", id="whole-document"),
        pytest.param("./episode.json#/events/0", id="dot-slash-file"),
    ],
)
def test_evidence_references_that_resolve(tmp_path, ref):
    rec = failed("t1", 1, artifact_dir=ARTIFACT_DIR, failure_stage="device_execution", evidence=[ref])
    run = load_run(write_run(tmp_path, [rec]))
    assert len(run.attempts) == 1


def test_rfc6901_escapes_resolve_to_the_right_values():
    from capbench_nb.io.pointer import resolve_pointer

    assert resolve_pointer(ATTEMPT_JSON, "/a~1b") == "slash"
    assert resolve_pointer(ATTEMPT_JSON, "/m~0n") == "tilde"
    assert resolve_pointer(ATTEMPT_JSON, "/~01") == "tilde-one"  # ~01 is "~1", not "/"
    assert resolve_pointer(ATTEMPT_JSON, "/list/1") == 20
    assert resolve_pointer(ATTEMPT_JSON, "") == ATTEMPT_JSON




@pytest.mark.parametrize("artifact_dir,evidence", EVIDENCE_CASES)
def test_evidence_that_does_not_resolve(tmp_path, artifact_dir, evidence):
    rec = failed("t2", 1, artifact_dir=artifact_dir, failure_stage="setup", failure_class="environment",
                 agent_eligible=False, evidence=evidence)
    err = invalid(tmp_path, third_line(rec))
    assert_results_error(err, tmp_path, "evidence", 3)


@pytest.mark.parametrize(
    "rec",
    [
        pytest.param(record("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/nope"]), id="success"),
        pytest.param(failed("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["missing.json#"]), id="agent-failure"),
        pytest.param(record("t2", 1, artifact_dir=None, evidence=["attempt.json#/setup"]), id="null-artifact-dir"),
    ],
)
def test_evidence_must_resolve_even_without_a_stage(tmp_path, rec):
    assert rec["failure_stage"] is None
    err = invalid(tmp_path, third_line(rec))
    assert_results_error(err, tmp_path, "evidence", 3)


@pytest.mark.parametrize(
    "artifact_dir",
    ["../outside", "attempts/../../outside", "attempts/t1/..", "/tmp", "/"],
    ids=["dotdot", "dotdot-nested", "dotdot-trailing", "absolute", "root"],
)
def test_artifact_dir_must_stay_inside_the_run(tmp_path, artifact_dir):
    # rejected lexically, with or without evidence
    err = invalid(tmp_path, third_line(record("t2", 1, artifact_dir=artifact_dir)))
    assert_results_error(err, tmp_path, "artifact-dir", 3)


def test_symlink_inside_artifact_dir_pointing_outside_the_run(tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps({"x": 1}))
    run = write_run(tmp_path, third_line(failed("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["leak.json#/x"])))
    os.symlink(outside, run / ARTIFACT_DIR / "leak.json")
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert_results_error(info.value, tmp_path, "evidence", 3)


def test_symlink_inside_artifact_dir_pointing_elsewhere_in_the_run(tmp_path):
    # inside the run but outside the attempt's artifact_dir: still refused (real paths)
    run = write_run(tmp_path, third_line(failed("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["m.json#/run_id"])))
    os.symlink(run / "manifest.json", run / ARTIFACT_DIR / "m.json")
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert_results_error(info.value, tmp_path, "evidence", 3)


def test_symlink_staying_inside_the_artifact_dir_resolves(tmp_path):
    run = write_run(tmp_path, [failed("t1", 1, artifact_dir=ARTIFACT_DIR, evidence=["alias.json#/setup/status"])])
    os.symlink("attempt.json", run / ARTIFACT_DIR / "alias.json")
    assert len(load_run(run).attempts) == 1


def test_symlinked_artifact_dir_escaping_the_run(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "attempt.json").write_text(json.dumps(ATTEMPT_JSON))
    run = write_run(tmp_path, third_line(failed("t2", 1, artifact_dir="attempts/escape", evidence=["attempt.json#/setup"])))
    os.symlink(elsewhere, run / "attempts" / "escape")
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert_results_error(info.value, tmp_path, "evidence", 3)


def test_deeply_nested_evidence_file_is_invalid_input_not_a_crash(tmp_path):
    run = write_run(tmp_path, third_line(failed("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["deep.json#"])))
    (run / ARTIFACT_DIR / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert_results_error(info.value, tmp_path, "evidence", 3)


# --------------------------------------------------------------------------- strict=False


def test_allow_invalid_lists_every_invalid_line_and_keeps_the_valid_ones(tmp_path):
    lines = [
        record("t1", 1),                                     # 1 valid
        "{not json",                                         # 2 json
        "",                                                  # 3 blank
        record("t1", 2, agent_eligible=False),               # 4 invariant
        record("t2", 1),                                     # 5 valid
        record("t2", 0),                                     # 6 attempt unreadable
        record(5, 2),                                        # 7 task_id unreadable
        failed("t1", 1),                                     # 8 duplicate of line 1
        with_telemetry(tool_calls=-3),                       # 9 negative (t2, 1 ... but invalid, no dup)
        record("t2", 2, failure_class="bogus"),              # 10 failure-class
        json.dumps(record("t1", 3))[:30].encode(),           # 11 truncated, no newline
    ]
    run = load_run(write_run(tmp_path, lines), strict=False)
    assert list(run.records["line"]) == [1, 5]
    assert list(run.attempts["task_id"]) == ["t1", "t2"]
    assert run.attempts["success"].tolist() == [True, True]  # line 1 kept, not the later duplicate

    got = run.anomalies
    assert set(got["kind"]) == {"invalid_line"}
    rows = list(zip(got["line"], got["rule"], got["task_id"].astype(object), got["attempt"].astype(object)))
    na = pd.NA
    expected = [
        (2, "json", na, na),
        (4, "success-implies-eligible", "t1", 2),
        (6, "attempt", "t2", na),
        (7, "type", na, 2),
        (8, "duplicate-attempt", "t1", 1),
        (9, "negative", "t2", 1),
        (10, "failure-class", "t2", 2),
        (11, "truncated-line", na, na),
    ]
    assert len(rows) == len(expected)
    for (line, rule, tid, att), (eline, erule, etid, eatt) in zip(rows, expected):
        assert (line, rule) == (eline, erule)
        assert (tid is na) if etid is na else tid == etid, (line, tid)
        assert (att is na) if eatt is na else att == eatt, (line, att)
    assert all(isinstance(r, str) and r and "\n" not in r for r in got["reason"])
    truncated = got[got["line"] == 11]["reason"].iat[0]
    assert "last line" in truncated


def test_allow_invalid_duplicate_lists_the_later_line(tmp_path):
    lines = [record("t1", 1), "", failed("t1", 1), failed("t1", 1, quality_score=0.5)]
    run = load_run(write_run(tmp_path, lines), strict=False)
    assert list(run.records["line"]) == [1]
    assert run.records["success"].tolist() == [True]
    assert list(run.anomalies["line"]) == [3, 4]
    assert set(run.anomalies["rule"]) == {"duplicate-attempt"}
    assert run.anomalies["task_id"].tolist() == ["t1", "t1"]
    assert run.anomalies["attempt"].tolist() == [1, 1]
    assert "line 1" in run.anomalies["reason"].iat[0]


def test_allow_invalid_anomalies_are_in_file_order_with_plan_anomalies(tmp_path):
    lines = [
        record("t1", 4),          # 1 above planned repeats (3)
        "{bad",                   # 2 invalid
        record("zzz", 1),         # 3 not in plan
        record("t1", 1),          # 4 valid
        record("t1", 1),          # 5 duplicate
    ]
    run = load_run(write_run(tmp_path, lines), strict=False)
    assert list(run.anomalies["line"]) == [1, 2, 3, 5]
    assert list(run.anomalies["kind"]) == ["above_planned_repeats", "invalid_line", "task_not_in_plan", "invalid_line"]
    assert list(run.attempts["line"]) == [4]


def test_allow_invalid_with_every_line_invalid(tmp_path):
    run = load_run(write_run(tmp_path, ["{bad", "", "[]", record("t1", 0)]), strict=False)
    assert run.records.empty
    assert list(run.anomalies["line"]) == [1, 3, 4]
    assert list(run.anomalies["rule"]) == ["json", "record-type", "attempt"]


def test_allow_invalid_still_validates_the_manifest(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)], manifest_doc=dict(manifest(), status="done"))
    with pytest.raises(InvalidRunError) as info:
        load_run(run, strict=False)
    assert info.value.rule == "status"


@pytest.mark.parametrize(
    "bad,rule",
    [
        pytest.param(b"\xef\xbb\xbf" + json.dumps(record("t2", 1)).encode() + b"\n", "bom", id="bom"),
        pytest.param(json.dumps(record("t2", 1, quality_score=float("nan"))).encode() + b"\n", "json-nan", id="nan"),
        pytest.param(b'{"task_id": "t\xff"}\n', "utf-8", id="utf-8"),
    ],
)
def test_allow_invalid_skips_syntax_errors_with_null_ids(tmp_path, bad, rule):
    lines = [bad, record("t1", 1)]
    run = load_run(write_run(tmp_path, lines), strict=False)
    assert list(run.records["line"]) == [2]
    row = run.anomalies.iloc[0]
    assert (row["kind"], row["line"], row["rule"]) == ("invalid_line", 1, rule)
    assert row["task_id"] is pd.NA and row["attempt"] is pd.NA


# --------------------------------------------------------------------------- manifest


def _manifest_with(mutate) -> dict:
    doc = copy.deepcopy(manifest())
    mutate(doc)
    return doc


def _set(path: str, value):
    def mutate(doc):
        *parents, last = path.split("/")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return mutate


def _delete(path: str):
    def mutate(doc):
        *parents, last = path.split("/")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        del node[int(last) if isinstance(node, list) else last]
    return mutate


def _append_task(task):
    return lambda doc: doc["plan"]["tasks"].append(task)


MANIFEST_CASES = [
    pytest.param(_set("schema_version", "capbench.run/2"), "schema-version", "/schema_version", id="schema-version"),
    pytest.param(_delete("schema_version"), "schema-version", "/schema_version", id="schema-version-missing"),
    pytest.param(_delete("run_id"), "run-id", "/run_id", id="run-id-missing"),
    pytest.param(_set("run_id", ""), "run-id", "/run_id", id="run-id-empty"),
    pytest.param(_set("run_id", 7), "run-id", "/run_id", id="run-id-number"),
    pytest.param(_set("status", "done"), "status", "/status", id="status-bad"),
    pytest.param(_delete("status"), "status", "/status", id="status-missing"),
    pytest.param(_delete("plan"), "plan", "/plan", id="plan-missing"),
    pytest.param(_set("plan", []), "plan", "/plan", id="plan-not-object"),
    pytest.param(_set("plan/tasks", []), "plan-empty", "/plan/tasks", id="plan-empty"),
    pytest.param(_set("plan/tasks", "t1"), "plan-tasks", "/plan/tasks", id="tasks-string"),
    pytest.param(_set("plan/tasks", {"t1": 3}), "plan-tasks", "/plan/tasks", id="tasks-object"),
    pytest.param(_delete("plan/tasks"), "plan-tasks", "/plan/tasks", id="tasks-missing"),
    pytest.param(_set("plan/tasks/1", "t2"), "task-type", "/plan/tasks/1", id="task-not-object"),
    pytest.param(_delete("plan/tasks/1/task_id"), "task-id", "/plan/tasks/1/task_id", id="task-id-missing"),
    pytest.param(_set("plan/tasks/1/task_id", ""), "task-id", "/plan/tasks/1/task_id", id="task-id-empty"),
    pytest.param(_set("plan/tasks/1/task_id", 2), "task-id", "/plan/tasks/1/task_id", id="task-id-number"),
    pytest.param(_set("plan/tasks/1/task_id", None), "task-id", "/plan/tasks/1/task_id", id="task-id-null"),
    pytest.param(_append_task({"task_id": "t1", "repeats": 3}), "task-id-duplicate", "/plan/tasks/2/task_id",
                 id="task-id-duplicate"),
    pytest.param(_set("plan/tasks/0/repeats", 0), "repeats", "/plan/tasks/0/repeats", id="repeats-0"),
    pytest.param(_set("plan/tasks/0/repeats", -1), "repeats", "/plan/tasks/0/repeats", id="repeats-negative"),
    pytest.param(_delete("plan/tasks/1/repeats"), "repeats", "/plan/tasks/1/repeats", id="repeats-missing"),
    pytest.param(_set("plan/tasks/1/repeats", "3"), "repeats", "/plan/tasks/1/repeats", id="repeats-string"),
    pytest.param(_set("plan/tasks/1/repeats", 3.0), "repeats", "/plan/tasks/1/repeats", id="repeats-float"),
    pytest.param(_set("plan/tasks/1/repeats", True), "repeats", "/plan/tasks/1/repeats", id="repeats-bool"),
    pytest.param(_set("plan/tasks/1/repeats", None), "repeats", "/plan/tasks/1/repeats", id="repeats-null"),
    pytest.param(_set("plan/repeats_override", 0), "repeats-override", "/plan/repeats_override", id="override-0"),
    pytest.param(_set("plan/repeats_override", -2), "repeats-override", "/plan/repeats_override",
                 id="override-negative"),
    pytest.param(_set("plan/repeats_override", 2.0), "repeats-override", "/plan/repeats_override", id="override-float"),
    pytest.param(_set("plan/repeats_override", "2"), "repeats-override", "/plan/repeats_override",
                 id="override-string"),
    pytest.param(_set("plan/k", 2), "plan-k", "/plan/k", id="k-below-min"),
    pytest.param(_set("plan/k", 4), "plan-k", "/plan/k", id="k-above-min"),
    pytest.param(_set("plan/k", "3"), "plan-k", "/plan/k", id="k-string"),
    pytest.param(_set("plan/k", 3.5), "plan-k", "/plan/k", id="k-float"),
    pytest.param(lambda d: d["plan"].update(repeats_override=2, k=3), "plan-k", "/plan/k", id="k-not-override"),
]


@pytest.mark.parametrize("mutate,rule,pointer", MANIFEST_CASES)
def test_invalid_manifest(tmp_path, mutate, rule, pointer):
    run = write_run(tmp_path, [record("t1", 1)], manifest_doc=_manifest_with(mutate))
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    err = info.value
    assert (err.rule, err.pointer) == (rule, pointer), str(err)
    assert err.file == str(run / "manifest.json")
    assert err.line is None
    assert f"manifest.json#{pointer}" in str(err) and f"[rule: {rule}]" in str(err)


@pytest.mark.parametrize("text", ["[]", '"run"', "3", "null"], ids=["array", "string", "number", "null"])
def test_manifest_not_an_object(tmp_path, text):
    run = write_run(tmp_path, [record("t1", 1)], manifest_text=text)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert (info.value.rule, info.value.pointer) == ("manifest-type", "")
    assert info.value.file == str(run / "manifest.json")


def test_manifest_invalid_json_gives_its_line(tmp_path):
    text = '{\n  "schema_version": "capbench.run/1",\n  "run_id": oops\n}\n'
    run = write_run(tmp_path, [record("t1", 1)], manifest_text=text)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    err = info.value
    assert (err.rule, err.line, err.file) == ("json", 3, str(run / "manifest.json"))
    assert "manifest.json:3" in str(err)


def test_manifest_nan_is_invalid(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)], manifest_text=json.dumps(manifest()).replace('"k": 3', '"k": NaN'))
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "json-nan"


def test_manifest_bom_and_bad_utf8(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)])
    text = (run / "manifest.json").read_bytes()
    (run / "manifest.json").write_bytes(b"\xef\xbb\xbf" + text)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "bom"
    (run / "manifest.json").write_bytes(text.replace(b"run-1", b"run-\xff"))
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "utf-8"


def test_deeply_nested_manifest_is_invalid_input_not_a_crash(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)], manifest_text="[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "json"


def test_manifest_missing(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)])
    (run / "manifest.json").unlink()
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert (info.value.rule, info.value.file) == ("manifest-missing", str(run / "manifest.json"))


def test_manifest_is_a_directory(tmp_path):
    run = write_run(tmp_path, [record("t1", 1)])
    (run / "manifest.json").unlink()
    (run / "manifest.json").mkdir()
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert (info.value.rule, info.value.file) == ("manifest-unreadable", str(run / "manifest.json"))


def test_results_missing(tmp_path):
    run = write_run(tmp_path, [])
    (run / "results.jsonl").unlink()
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert (info.value.rule, info.value.file) == ("results-missing", str(run / "results.jsonl"))


def test_run_dir_missing(tmp_path):
    with pytest.raises(InvalidRunError) as info:
        load_run(tmp_path / "nope")
    assert (info.value.rule, info.value.file) == ("run-dir", str(tmp_path / "nope"))


def test_run_dir_is_a_file(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("not a run")
    with pytest.raises(InvalidRunError) as info:
        load_run(path)
    assert (info.value.rule, info.value.file) == ("run-dir", str(path))


def test_manifest_is_checked_before_results(tmp_path):
    run = write_run(tmp_path, ["{bad"], manifest_doc=_manifest_with(_set("plan/tasks", [])))
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "plan-empty"


@pytest.mark.parametrize("k", [None, "absent"], ids=["k-null", "k-absent"])
def test_plan_k_null_or_absent_is_computed_as_the_smallest_planned_repeats(tmp_path, k):
    doc = manifest(tasks=(("t1", 3), ("t2", 2), ("t3", 5)))
    if k == "absent":
        del doc["plan"]["k"]
    else:
        doc["plan"]["k"] = None
    run = load_run(write_run(tmp_path, [record("t1", 1)], manifest_doc=doc))
    assert run.k == 2
    assert run.plan["planned_repeats"].tolist() == [3, 2, 5]


@pytest.mark.parametrize("k", [None, 4], ids=["k-null", "k-equals-override"])
def test_repeats_override_sets_every_planned_repeats_and_k(tmp_path, k):
    doc = manifest(tasks=(("t1", 3), ("t2", 1), ("t3", 5)), repeats_override=4, k=k)
    run = load_run(write_run(tmp_path, [record("t1", 4), record("t2", 4), record("t3", 5)], manifest_doc=doc))
    assert run.k == 4
    assert run.plan["task_id"].tolist() == ["t1", "t2", "t3"]
    assert run.plan["planned_repeats"].tolist() == [4, 4, 4]
    # t2's attempt 4 is within the override; t3's attempt 5 is above it
    assert list(run.anomalies["kind"]) == ["above_planned_repeats"]
    assert list(run.anomalies["line"]) == [3]


def test_plan_k_equal_to_the_minimum_is_accepted(tmp_path):
    doc = manifest(tasks=(("t1", 3), ("t2", 2)), k=2)
    run = load_run(write_run(tmp_path, [record("t1", 1)], manifest_doc=doc))
    assert run.k == 2


def test_plan_task_labels_become_plan_columns(tmp_path):
    run = load_run(write_run(tmp_path, [record("t1", 1)]))
    assert list(run.plan.columns[:2]) == ["task_id", "planned_repeats"]
    assert run.plan["app"].tolist() == ["settings", "settings"]


def test_error_is_a_value_error_and_picklable(tmp_path):
    import pickle

    err = invalid(tmp_path, third_line("{bad"))
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.line, again.rule, again.message) == (err.file, err.line, err.rule, err.message)
    assert capbench_nb.InvalidRunError is InvalidRunError
