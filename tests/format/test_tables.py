"""The readers, the derivation and the reference page agree with the format description.

The columnar reader's pyarrow schema and both readers' pandas dtypes are those of the field
table; the artifact type checks refuse a wrong value at every row of ``ARTIFACT`` (at that
pointer); the telemetry sources are the ones ``extract_telemetry`` writes; the tuples other
modules import are derived from the tables; docs/format-reference.md is what the generator renders.
"""

from __future__ import annotations

import copy
import json

import pandas as pd
import pyarrow as pa
import pytest
from conftest import REPO, WRONG_TYPE, manifest, record, write_run

import capbench_nb.format as fmt
from capbench_nb import InvalidRunError
from capbench_nb.format import (
    ALL_ATTEMPTS_TELEMETRY, ARTIFACT, MAX_SAFE_NUMBER, RECORD, RECORD_CHECK_ORDER, RECORD_COLUMNS, RECORD_DTYPES,
    RECORD_TELEMETRY, TELEMETRY, TELEMETRY_BOOL_FIELDS, TELEMETRY_COUNT_FIELDS, TELEMETRY_FIELDS,
    TELEMETRY_MS_FIELDS,
)
from capbench_nb.format import reference
from capbench_nb.records import columnar_reader, exact_reader
from capbench_nb.records.artifacts import check_attempt, check_episode, check_history
from capbench_nb.records.telemetry_extract import extract_telemetry

# --------------------------------------------------------------------------- the generated page


def test_the_reference_page_is_what_the_generator_renders():
    page = REPO / reference.PAGE
    assert page.read_text(encoding="utf-8") == reference.render(), (
        "docs/format-reference.md is stale: run python -m capbench_nb.format.reference --write")


def test_the_page_names_every_field_and_rule():
    text = reference.render()
    for f in RECORD + RECORD_TELEMETRY + ARTIFACT + fmt.MANIFEST_FIELDS:
        assert f"`{f.name}`" in text, f.name
    for rule in fmt.RULE_IDS:
        assert f"`{rule}`" in text, rule


def test_reference_main_prints_the_page(capsys):
    assert reference.main([]) == 0
    assert capsys.readouterr().out == reference.render()
    assert reference.main(["--bogus"]) == 2


# --------------------------------------------------------------------------- tuples derived from the tables


def test_telemetry_tuples_come_from_the_table():
    assert TELEMETRY_FIELDS == tuple(t.name for t in TELEMETRY)
    assert len(TELEMETRY_FIELDS) == 17
    kinds = {t.name: t.kind for t in TELEMETRY}
    assert TELEMETRY_MS_FIELDS == tuple(n for n in TELEMETRY_FIELDS if kinds[n] == "ms")
    assert TELEMETRY_BOOL_FIELDS == ("recovery_attempted", "recovery_succeeded")
    assert TELEMETRY_COUNT_FIELDS == tuple(n for n in TELEMETRY_FIELDS if kinds[n] == "count")
    assert ALL_ATTEMPTS_TELEMETRY == ("setup_ms",)
    assert {t.scope for t in TELEMETRY} == {"eligible", "all"}
    assert [f.name for f in RECORD_TELEMETRY] == [f"telemetry.{n}" for n in TELEMETRY_FIELDS]


def test_record_columns_and_check_order_come_from_the_table():
    assert RECORD_COLUMNS == ("line", "task_id", "attempt", "artifact_dir", "success", "agent_eligible",
                              "failure_class", "failure_stage", "evidence", "quality_score", "cost", "cost_source",
                              "telemetry_source")
    assert sorted(RECORD_CHECK_ORDER) == sorted(f.name for f in RECORD)
    assert exact_reader.RECORD_COLUMNS is RECORD_COLUMNS
    assert set(RECORD_DTYPES) == set(RECORD_COLUMNS) | set(TELEMETRY_FIELDS)


def test_failure_class_codes_follow_the_vocabulary():
    assert fmt.CLASS_VOCABULARY == ("",) + fmt.FAILURE_CLASSES
    assert [fmt.CLASS_CODES[c] for c in fmt.CLASS_VOCABULARY] == list(range(len(fmt.CLASS_VOCABULARY)))
    assert [bool(fmt.INELIGIBLE_CODES[fmt.CLASS_CODES[c]]) for c in fmt.CLASS_VOCABULARY] == [
        c in fmt.INELIGIBLE_CLASSES for c in fmt.CLASS_VOCABULARY]


@pytest.mark.parametrize("value, integer, ok", [
    (0, True, True), (MAX_SAFE_NUMBER, True, True), (MAX_SAFE_NUMBER + 1, True, False), (-1, True, False),
    (1.0, True, False), (True, True, False), (0.5, False, True), (float(MAX_SAFE_NUMBER), False, True),
    (2.0 ** 53, False, False), (float("nan"), False, False), (float("inf"), False, False), ("1", False, False),
    (-0.0, False, True), (None, False, False),
])
def test_the_number_rule(value, integer, ok):
    assert fmt.is_safe_number(value, integer) is ok


# --------------------------------------------------------------------------- the readers' types


def test_the_columnar_schema_is_the_field_table():
    schema = columnar_reader.arrow_schema()
    assert schema.names == [f.name for f in RECORD]
    simple = {"large_string": pa.large_string(), "string": pa.string(), "int64": pa.int64(),
              "float64": pa.float64(), "bool": pa.bool_(), "list<string>": pa.list_(pa.string())}
    for f in RECORD:
        got = schema.field(f.name).type
        if f.name == "telemetry":
            assert [(c.name, c.type) for c in got] == [
                (t.name.split(".", 1)[1], simple[t.arrow_type]) for t in RECORD_TELEMETRY]
        elif f.name == "telemetry_source":
            assert [(c.name, c.type) for c in got] == [(n, pa.string()) for n in TELEMETRY_FIELDS]
        else:
            assert got == simple[f.arrow_type], f.name


def _full_run(tmp_path):
    tele = {t.name: (True if t.kind == "bool" else 3 if t.kind == "count" else 1.5) for t in TELEMETRY}
    recs = [record("t1", 1, telemetry=tele, quality_score=0.5, cost=0.25, cost_source="p@1"),
            record("t1", 2, "A"), record("t2", 1, "E")]
    return write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]), recs)


def test_both_readers_give_the_dtypes_of_the_table(tmp_path):
    run = _full_run(tmp_path)
    fast = columnar_reader.read_results_fast(run / "results.jsonl", run_dir=run)
    assert fast is not None
    exact = exact_reader.read_results_exact(run / "results.jsonl", run_dir=run)[0]
    for frame in (fast[0], exact):
        assert tuple(frame.columns) == RECORD_COLUMNS + TELEMETRY_FIELDS
        assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == RECORD_DTYPES
        for name, categories in exact_reader.CATEGORIES.items():
            assert tuple(frame[name].cat.categories) == categories
    pd.testing.assert_frame_equal(fast[0], exact, check_exact=True)


# --------------------------------------------------------------------------- the artifact checks

_DOCS = {
    "attempt.json": {
        "task_id": "t1", "attempt": 2,
        "setup": {"status": "ok", "duration_ms": 2310, "error": None},
        "provider": {"available": True, "error": None},
        "skip": None,
        "agent": {"status": "completed", "task_wall_ms": 48210},
        "recovery": {"attempted": True, "succeeded": True},
        "screenshots": [{"capture_ms": 112}],
        "evaluation": {"judge_enabled": True, "hard_assertions": [{"name": "a", "passed": True}],
                       "judge": {"status": "ok", "verdict": "pass", "score": 0.9, "error": None},
                       "quality_score": 0.9},
        "preflight": {"lock": "sha256:" + "0" * 64, "probes": [{"name": "locale", "expected": "en-US",
                                                              "observed": "en-US"}]},
    },
    "episode.json": {
        "run_metrics": {"input_tokens": 9100, "output_tokens": 840, "total_tokens": 9940,
                        "cached_input_tokens": 6000, "reasoning_tokens": 10, "time_to_first_token_ms": 640},
        "events": [{"type": "device_action", "name": "tap", "start_ms": 1210, "end_ms": 1530, "status": "ok"},
                   {"type": "tool_error", "call_id": "c3"}, {"type": "replan", "t_ms": 20400}],
    },
    "history.json": {"messages": [
        {"role": "assistant", "content": "", "usage": {"input_tokens": 3000, "output_tokens": 120},
         "tool_calls": [{"id": "c1", "name": "tap", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]},
}
_CHECKERS = {"attempt.json": check_attempt, "episode.json": check_episode, "history.json": check_history}


def _bad_values(f):
    """(value, rule) pairs that break an ARTIFACT row."""
    out = [(WRONG_TYPE[f.json_type], f.type_rule)]
    if not f.nullable:
        out.append((None, f.type_rule))
    if f.vocabulary:
        out.append(("nope", f.type_rule))
    if f.minimum is not None:
        out.append((f.minimum - 1, f.type_rule))
    if f.maximum is not None:
        above = (MAX_SAFE_NUMBER + 1 if f.json_type == "integer" else 2.0 ** 53) if f.maximum == MAX_SAFE_NUMBER \
            else f.maximum + 0.5
        out.append((above, f.high_rule or f.type_rule))
    return out


def _put(doc, pointer: str, value):
    tokens = pointer.replace("*", "0").split("/")[1:]
    if not tokens:
        return value
    node = doc
    for tok in tokens[:-1]:
        node = node[int(tok)] if isinstance(node, list) else node[tok]
    node[int(tokens[-1]) if isinstance(node, list) else tokens[-1]] = value
    return doc


@pytest.mark.parametrize("file", sorted(_DOCS))
def test_the_sample_artifacts_pass(file):
    _CHECKERS[file](copy.deepcopy(_DOCS[file]), file)


@pytest.mark.parametrize("row", ARTIFACT, ids=[f.name for f in ARTIFACT])
def test_each_artifact_row_is_checked_at_its_pointer(row):
    file, pointer = row.name.split("#", 1)
    for value, rule in _bad_values(row):
        doc = _put(copy.deepcopy(_DOCS[file]), pointer, value)
        with pytest.raises(InvalidRunError) as info:
            _CHECKERS[file](doc, file)
        assert (info.value.rule, info.value.pointer) == (rule, pointer.replace("*", "0")), value


def test_every_artifact_row_is_a_checked_file():
    assert {f.name.split("#", 1)[0] for f in ARTIFACT} == set(_CHECKERS)


def test_the_telemetry_sources_are_those_the_derivation_writes():
    docs = copy.deepcopy(_DOCS)
    telemetry, sources = extract_telemetry(docs["attempt.json"], docs["episode.json"], docs["history.json"])
    assert list(telemetry) == list(TELEMETRY_FIELDS)
    assert sources == {t.name: t.source for t in TELEMETRY}
    for t in TELEMETRY:
        assert t.source.split("#", 1)[0] in _DOCS
        json.dumps(telemetry[t.name])  # a JSON value of its kind
        assert type(telemetry[t.name]) in ({"bool": (bool,), "count": (int,), "ms": (int, float)}[t.kind])


# --------------------------------------------------------------------------- the manifest checks


def _manifest_bad_values(f):
    out = [(WRONG_TYPE[f.json_type], f.type_rule)]
    if not f.nullable and f.required:
        out.append((None, f.type_rule))
    if f.vocabulary:
        out.append(("nope", f.vocabulary_rule))
    if f.minimum is not None:
        out.append((f.minimum - 1, f.low_rule))
    if f.maximum is not None:
        out.append((f.maximum + 1, f.high_rule))
    return out


_MANIFEST_ROWS = ([("", f) for f in fmt.MANIFEST_FIELDS] + [("plan/", f) for f in fmt.PLAN_FIELDS]
                  + [("plan/tasks/0/", f) for f in fmt.PLAN_TASK])


@pytest.mark.parametrize("prefix, row", _MANIFEST_ROWS, ids=[p + f.name for p, f in _MANIFEST_ROWS])
def test_each_manifest_row_is_checked_with_its_rule(prefix, row):
    from capbench_nb.records.manifest import validate_manifest

    for value, rule in _manifest_bad_values(row):
        doc = manifest([("t1", 2), ("t2", 3)])
        node = doc
        for key in prefix.strip("/").split("/") if prefix else []:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[row.name] = value
        with pytest.raises(InvalidRunError) as info:
            validate_manifest(doc)
        assert (info.value.rule, info.value.pointer) == (rule, f"/{prefix}{row.name}"), value


def test_telemetry_fields_are_those_of_spec_section_5_in_its_order():
    assert TELEMETRY_FIELDS == (
        "task_wall_ms", "setup_ms", "tool_calls", "device_actions", "llm_calls", "input_tokens", "output_tokens",
        "total_tokens", "cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms", "device_execution_ms",
        "screenshot_capture_ms", "tool_errors", "replan_count", "recovery_attempted", "recovery_succeeded",
    )


def test_every_limit_is_in_the_limits_table_with_its_value():
    from capbench_nb.format import limits

    named = {name for name in limits.__all__ if name.startswith("MAX_")}
    table = {name: value for name, value, _, _ in limits.LIMITS}
    assert set(table) == named
    assert all(table[name] == getattr(limits, name) for name in named)
