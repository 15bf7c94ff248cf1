"""The columnar fast path of ``read_results`` against the exact streaming path (the reference).

``read_results`` first tries ``columnar_reader.read_results_fast`` (pyarrow's JSON reader with the
schema of the field table, rules checked on whole columns); it only ever *accepts* a file, and
whenever it declines, ``exact_reader.read_results_exact`` (the per-line validating reader)
decides.  So, for every file:

- a file the fast path accepts gives exactly the records DataFrame of the exact path (columns,
  dtypes, categories, values, order) and the same sha256;
- a file it declines, in particular every invalid file, gives the exact path's error (strict) or
  records and anomalies (``strict=False``), because the exact path is what reads it.

Cases: a case per check of every row of the format's field table and per invariant (generated from
``capbench_nb.format``), more values of each kind, hand-picked places where pyarrow is
more lenient than the exact reader (NaN tokens, a BOM, several objects on one line, blank lines,
null containers, invalid UTF-8, ``-0``), chunk boundaries, and one hypothesis test on generated
valid files, mutations of them and number texts (its example budget is the suite's profile,
tests/hypothesis_profiles.py).  The invalid lines (``BAD``) are tested on the fast reader's verdict:
it declines each one, which is all ``read_results`` needs to give the exact reader's answer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    ARTIFACT_DIR, EVIDENCE_CASES, FULL_TELEMETRY, NEGATIVE_CASES, RECORD_INVARIANT_CASES, RECORD_TYPE_CASES, REPO,
    TELEMETRY_TYPE_CASES, TOO_LARGE_CASES, failed_record, full_record, invariant_cases, record_field_cases, third_line,
    with_telemetry, without, write_full_run,
)
from hypothesis_profiles import PROFILE
from hypothesis import given, settings
from hypothesis import strategies as st

import capbench_nb
from capbench_nb import InvalidRunError
from capbench_nb.records import columnar_reader, exact_reader
from capbench_nb.records.run import read_results
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.io.atomic import dumps
from capbench_nb.format import TELEMETRY_FIELDS

RUN_TELEMETRY = dict(FULL_TELEMETRY)

# --------------------------------------------------------------------------- comparison helpers


def outcome(reader, path: Path, strict: bool):
    try:
        records, invalid, digest = reader(path / "results.jsonl", run_dir=path, strict=strict)
    except InvalidRunError as exc:
        return ("error", exc.file, exc.rule, exc.line, exc.message)
    return ("ok", records, invalid, digest)


def assert_frames_identical(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.columns) == list(b.columns)
    for name in a.columns:
        x, y = a[name], b[name]
        assert x.dtype == y.dtype, name
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert x.cat.categories.dtype == y.cat.categories.dtype, name
            assert list(x.cat.categories) == list(y.cat.categories), name
            assert x.cat.codes.dtype == y.cat.codes.dtype, name
            assert np.array_equal(x.cat.codes.to_numpy(), y.cat.codes.to_numpy()), name
        elif isinstance(x.dtype, pd.StringDtype):
            assert x.array._pa_array.type == y.array._pa_array.type, name
        elif x.dtype.kind == "f" or str(x.dtype) == "Float64":
            # bit for bit, signed zeros included
            xv = x.to_numpy(dtype="float64", na_value=np.nan)
            yv = y.to_numpy(dtype="float64", na_value=np.nan)
            assert np.array_equal(xv.view("int64")[~np.isnan(xv)], yv.view("int64")[~np.isnan(yv)]), name


def assert_same_as_exact(path: Path, *, accepted: bool | None = None) -> None:
    """``read_results`` gives what the exact path gives, strict and not; optionally check the fast path's verdict."""
    fast = columnar_reader.read_results_fast(path / "results.jsonl", run_dir=path)
    if accepted is not None:
        assert (fast is not None) == accepted, "fast path accepted" if fast is not None else "fast path declined"
    for strict in (True, False):
        got = outcome(read_results, path, strict)
        want = outcome(exact_reader.read_results_exact, path, strict)
        if strict and want[0] == "error":
            assert fast is None, "the fast path accepted an invalid file"
        assert got[0] == want[0], (got[:1], want)
        if got[0] == "error":
            assert got == want
        else:
            assert_frames_identical(got[1], want[1])
            assert got[2] == want[2]
            assert got[3] == want[3]
    if fast is not None:
        exact = exact_reader.read_results_exact(path / "results.jsonl", run_dir=path, strict=True)
        assert_frames_identical(fast[0], exact[0])
        assert fast[1] == exact[2]


def write(tmp_path: Path, lines, name: str = "run") -> Path:
    return write_full_run(tmp_path, lines, name=name)


# --------------------------------------------------------------------------- invalid input: every kind


def _bad_lines() -> list:
    rec, failed = full_record, failed_record
    cases = [
        ("json", '{"task_id": "t2", "attempt": 1,,}'),
        ("trailing-garbage", json.dumps(rec("t2", 1)) + " {}"),
        ("two-objects", json.dumps(rec("t2", 1)) + json.dumps(rec("t2", 2))),
        ("two-objects-space", json.dumps(rec("t2", 1)) + " " + json.dumps(rec("t2", 2))),
        ("broken-middle", json.dumps(rec("t2", 1))[:40]),
        ("extra-brace", json.dumps(rec("t2", 1)) + "}"),
        ("invalid-utf8", json.dumps(rec("t2", 1)).encode().replace(b'"t2"', b'"t\xff2"') + b"\n"),
        ("surrogate-utf8", json.dumps(rec("t2", 1)).encode().replace(b'"t2"', b'"t\xed\xa0\x802"') + b"\n"),
        ("overlong-utf8", json.dumps(rec("t2", 1)).encode().replace(b'"t2"', b'"t\xc0\xaf2"') + b"\n"),
        ("invalid-utf8-source", json.dumps(rec("t2", 1)).encode().replace(b'"attempt.json#/setup_ms"', b'"\xff"') + b"\n"),
        ("invalid-utf8-evidence", json.dumps(failed("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/x"]))
         .encode().replace(b"#/x", b"#/\xfe") + b"\n"),
        ("invalid-utf8-cost-source", json.dumps(rec("t2", 1, cost_source="p@1")).encode().replace(b'"p@1"', b'"p\xc3"') + b"\n"),
        ("invalid-utf8-artifact-dir", json.dumps(rec("t2", 1, artifact_dir="ab")).encode().replace(b'"ab"', b'"a\x80b"') + b"\n"),
        ("escaped-duplicate-key", json.dumps(rec("t2", 1))[:-1] + ', "task\\u005fid": "t1"}'),
        ("array", "[1, 2]"), ("string", '"a record"'), ("number", "42"), ("null", "null"), ("true", "true"),
        ("empty-object", "{}"),
        ("duplicate-key", json.dumps(rec("t2", 1))[:-1] + ', "task_id": "t1"}'),
        ("duplicate-telemetry-key", json.dumps(rec("t2", 1)).replace('"tool_calls": 4', '"tool_calls": 4, "tool_calls": 5')),
        ("telemetry-null", rec("t2", 1, telemetry=None)),
        ("evidence-null", rec("t2", 1, evidence=None)),
        ("telemetry-source-null", rec("t2", 1, telemetry_source=None)),
        ("evidence-null-item", rec("t2", 1, evidence=[None])),
        ("telemetry-extra", with_telemetry(gpu_ms=5)),
        ("telemetry-source-extra", rec("t2", 1, telemetry_source={"gpu_ms": "x"})),
        ("extra-field", rec("t2", 1, note="x")),
        ("extra-nan", json.dumps(rec("t2", 1, note=float("nan")))),
        ("minus-zero-int-quality", json.dumps(rec("t2", 1)).replace('"quality_score": 0.9', '"quality_score": -0')),
        ("minus-zero-float-quality", json.dumps(rec("t2", 1)).replace('"quality_score": 0.9', '"quality_score": -0.0')),
        ("minus-zero-ms", json.dumps(rec("t2", 1)).replace('"setup_ms": 2310.5', '"setup_ms": -0')),
        ("minus-zero-count", json.dumps(rec("t2", 1)).replace('"tool_calls": 4', '"tool_calls": -0')),
        ("big-exponent", json.dumps(rec("t2", 1)).replace('"setup_ms": 2310.5', '"setup_ms": 1e400')),
        ("int-as-1e0", json.dumps(rec("t2", 1)).replace('"tool_calls": 4', '"tool_calls": 4e0')),
        ("leading-space", " " + json.dumps(rec("t2", 1))),
        ("trailing-space", json.dumps(rec("t2", 1)) + " "),
        ("cr-separated", json.dumps(rec("t2", 1)) + "\r" + json.dumps(rec("t2", 2))),
    ]
    for value in (float("nan"), float("inf"), float("-inf")):
        cases.append((f"nan-quality-{value}", json.dumps(rec("t2", 1, quality_score=value))))
        cases.append((f"nan-telemetry-{value}", json.dumps(with_telemetry(task_wall_ms=value))))
        cases.append((f"nan-cost-{value}", json.dumps(rec("t2", 1, cost=value, cost_source="p@1"))))
    # A case per check of every row of the field table, and per invariant (the format description).
    for case_id, record_doc, _, _ in record_field_cases() + invariant_cases():
        cases.append((f"format-{case_id}", record_doc))
    # More values of each kind than one per row (samples, not rules).
    for field, value in RECORD_TYPE_CASES:
        cases.append((f"type-{field}-{json.dumps(value)}", rec("t2", 1, **{field: value})))
    for cost in ("0.5", True, [0.5], {"usd": 0.5}):
        cases.append((f"cost-{json.dumps(cost)}", rec("t2", 1, cost=cost, cost_source="prices/x@2026-01-01")))
    for name, value in TELEMETRY_TYPE_CASES:
        cases.append((f"telemetry-{name}-{json.dumps(value)}", with_telemetry(**{name: value})))
    for value in (True, False, 1.0, 0, -1, "1", None, [1]):
        cases.append((f"attempt-{json.dumps(value)}", rec("t2", value)))
    for value in (5, True, [], ["setup"], {}):
        cases.append((f"stage-{json.dumps(value)}", failed("t2", 1, failure_stage=value)))
    for name, value in NEGATIVE_CASES + TOO_LARGE_CASES:
        cases.append((f"telemetry-{name}-{value!r}", with_telemetry(**{name: value})))
    cases.append(("negative-cost", rec("t2", 1, cost=-0.5, cost_source="p@1")))
    cases.append(("attempt-2**53", rec("t2", 2**53)))
    cases.append(("cost-2**53", rec("t2", 1, cost=2**53, cost_source="p@1")))
    cases.append(("cost-1e300", rec("t2", 1, cost=1e300, cost_source="p@1")))
    for score in (1.5, -0.1, 2, 1.0000001):
        cases.append((f"quality-{score}", rec("t2", 1, quality_score=score)))
    for fclass in ("crash", "Agent", " agent", "success", "none"):
        cases.append((f"class-{fclass}", failed("t2", 1, failure_class=fclass)))
    for param in RECORD_INVARIANT_CASES:
        cases.append((f"invariant-{param.id}", param.values[0]))
    for stage in ("planning", "Setup", ""):
        cases.append((f"stage-{stage}", failed("t2", 1, failure_stage=stage, artifact_dir=ARTIFACT_DIR,
                                               evidence=["attempt.json#/setup"])))
    for param in EVIDENCE_CASES:
        artifact_dir, evidence = param.values
        cases.append((f"evidence-{param.id}", failed("t2", 1, artifact_dir=artifact_dir, failure_stage="setup",
                                                      failure_class="environment", agent_eligible=False,
                                                      evidence=evidence)))
    cases.append(("evidence-without-stage", rec("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/nope"])))
    for artifact_dir in ("../outside", "attempts/../../outside", "attempts/t1/..", "/tmp", "/", "a\\..\\b", "\\x",
                         "a\x00b"):
        cases.append((f"artifact-dir-{artifact_dir!r}", rec("t2", 1, artifact_dir=artifact_dir)))
    # A lone surrogate escape (json.dumps writes "\udcff" as that escape) in every kind of string: invalid-unicode.
    for where, line in (
        ("task-id", rec("t2\udcff", 1)),
        ("task-id-high", rec("t2\ud800", 1)),
        ("task-id-high-then-ascii-escape", json.dumps(rec("t2", 1)).replace('"t2"', '"t2\\ud83d\\u0041"')),
        ("task-id-reversed-pair", json.dumps(rec("t2", 1)).replace('"t2"', '"t2\\ude00\\ud83d"')),
        ("artifact-dir", rec("t2", 1, artifact_dir="a\udcff")),
        ("cost-source", rec("t2", 1, cost=0.1, cost_source="p\udcff")),
        ("telemetry-source-value", rec("t2", 1, telemetry_source={"task_wall_ms": "x\udcff"})),
        ("telemetry-source-key", rec("t2", 1, telemetry_source={"task_wall_ms\udcff": "x"})),
        ("evidence", failed("t2", 1, artifact_dir=ARTIFACT_DIR, failure_stage="setup", failure_class="environment",
                            agent_eligible=False, evidence=["attempt.json#/setup\udcff"])),
        ("failure-class", failed("t2", 1, failure_class="agent\udcff")),
        ("extra-field-value", rec("t2", 1, note="\udcff")),
        ("extra-field-key", rec("t2", 1, **{"note\udcff": 1})),
    ):
        cases.append((f"lone-surrogate-{where}", json.dumps(line) if isinstance(line, dict) else line))
    # Integer literals longer than Python converts (4300 digits): number-too-large, in any numeric field.
    digits = "1" * 4301
    for field in ('"attempt": 1', '"tool_calls": 4', '"setup_ms": 2310.5', '"quality_score": 0.9'):
        name = field.split(":")[0].strip('"')
        cases.append((f"int-over-4300-digits-{name}", json.dumps(rec("t2", 1)).replace(field, f'"{name}": {digits}')))
    cases.append(("int-over-4300-digits-extra", json.dumps(rec("t2", 1, note=0)).replace('"note": 0', f'"note": -{digits}')))
    return cases


BAD = _bad_lines()


def test_every_bad_line_is_declined_by_the_fast_reader(tmp_path):
    """Each line of BAD, last in a file without blank lines (so only the line itself can make the fast path
    decline): the fast reader declines it, and the exact reader, which then reads the file, refuses it with
    its rule in strict mode and lists it as the one ``invalid_line`` anomaly (line 3) otherwise.  A few of
    the lines are valid after all ("-0", spaces around the object, a duplicate telemetry key, ...): the
    exact reader accepts those, and the fast path may decline them or give exactly the exact records."""
    problems = []
    for i, (name, bad) in enumerate(BAD):
        run = write(tmp_path, [full_record("t1", 1), full_record("t1", 2), bad], name=f"run{i}")
        results = run / "results.jsonl"
        fast = columnar_reader.read_results_fast(results, run_dir=run)
        try:
            exact = exact_reader.read_results_exact(results, run_dir=run, strict=True)
        except InvalidRunError as exc:
            if fast is not None:
                problems.append(f"{name}: the fast path accepted an invalid file ({exc.rule})")
            records, invalid, _ = exact_reader.read_results_exact(results, run_dir=run, strict=False)
            if len(records) != 2 or [(a["line"], a["rule"]) for a in invalid] != [(3, exc.rule)]:
                problems.append(f"{name}: allow-invalid gives {len(records)} records and {invalid}")
            continue
        if fast is not None:
            assert_frames_identical(fast[0], exact[0])
            assert fast[1] == exact[2], name
    assert not problems, "\n".join(problems)


def test_a_declined_file_is_read_by_the_exact_path_in_both_modes(tmp_path):
    """``read_results`` hands every file the fast path declines to the exact reader: the same error, or
    the same records and anomalies (the fast reader is not asked again for strict=False)."""
    chosen = {"json", "extra-field", "telemetry-null", "nan-quality-nan", "duplicate-key", "invalid-utf8"}
    for i, (name, bad) in enumerate(b for b in BAD if b[0] in chosen):
        run = write(tmp_path, third_line(bad), name=f"run{i}")  # the blank line 2 alone makes the fast path decline
        assert_same_as_exact(run, accepted=False)


def test_lone_surrogate_escape_is_left_to_the_exact_path(tmp_path):
    # "\ud800" decodes to a Python string that is not Unicode text: pyarrow refuses it, so the
    # fast path declines, and the exact path names the line (invalid-unicode).
    run = write(tmp_path, [full_record("t1", 1), json.dumps(full_record("\ud800", 1))])
    assert columnar_reader.read_results_fast(run / "results.jsonl", run_dir=run) is None
    with pytest.raises(InvalidRunError) as info:
        read_results(run / "results.jsonl", run_dir=run)
    assert (info.value.rule, info.value.line) == ("invalid-unicode", 2)
    assert info.value.pointer is None and "/task_id" in info.value.message
    records, invalid, _ = read_results(run / "results.jsonl", run_dir=run, strict=False)
    assert len(records) == 1
    assert [(a["line"], a["rule"], a["task_id"], a["attempt"]) for a in invalid] == [(2, "invalid-unicode", None, None)]


_NEW_RULES = [(i, b) for i, b in BAD if i.startswith(("lone-surrogate", "int-over"))]


@pytest.mark.parametrize("name,bad", _NEW_RULES, ids=[i for i, _ in _NEW_RULES])
def test_lone_surrogates_and_overlong_integers_name_their_line(tmp_path, name, bad):
    run = write(tmp_path, third_line(bad))
    with pytest.raises(InvalidRunError) as info:
        read_results(run / "results.jsonl", run_dir=run)
    assert info.value.line == 3
    assert info.value.rule == ("invalid-unicode" if name.startswith("lone") else "number-too-large")


def test_surrogate_pairs_are_text(tmp_path):
    """A surrogate pair escape is one character (an emoji as json.dumps writes it): valid, accepted by both paths."""
    run = write(tmp_path, [json.dumps(full_record("t\U0001f600", 1)),
                           json.dumps(full_record("t1", 1, telemetry_source={"task_wall_ms": "\U0001f600"}))])
    assert "\\ud83d\\ude00" in (run / "results.jsonl").read_text()
    assert_same_as_exact(run, accepted=True)
    assert read_results(run / "results.jsonl", run_dir=run)[0]["task_id"].tolist() == ["t\U0001f600", "t1"]


@pytest.mark.parametrize("limit", [120, 300])
def test_a_line_above_the_length_limit_refuses_the_file(tmp_path, monkeypatch, limit):
    """format.MAX_LINE_BYTES (128 MiB), patched small: a longer line refuses the file in both modes; a line of
    exactly the limit is read."""
    monkeypatch.setattr(exact_reader, "MAX_LINE_BYTES", limit)
    short = json.dumps({"task_id": "t1", "attempt": 1, "success": True, "agent_eligible": True,
                        "failure_class": ""}, separators=(",", ":"))
    exact = short[:-1] + "," + '"n":"' + "x" * (limit - len(short) - 7) + '"}'
    assert len(exact) == limit
    second = short.replace('"attempt":1', '"attempt":2')
    run = write(tmp_path, [exact, second], name="at-limit")
    assert len(read_results(run / "results.jsonl", run_dir=run)[0]) == 2
    for strict in (True, False):
        long = exact[:-2] + 'xx"}'
        run = write(tmp_path, [short, long, short.replace('"attempt":1', '"attempt":3')], name=f"over-{strict}")
        with pytest.raises(InvalidRunError) as info:
            read_results(run / "results.jsonl", run_dir=run, strict=strict)
        assert (info.value.rule, info.value.line) == ("line-too-long", 2)
    # an earlier duplicate is still the first problem of a strict read
    run = write(tmp_path, [short, short, exact[:-2] + 'xx"}'], name="dup-first")
    with pytest.raises(InvalidRunError) as info:
        read_results(run / "results.jsonl", run_dir=run)
    assert (info.value.rule, info.value.line) == ("duplicate-attempt", 2)


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([b"\xef\xbb\xbf" + json.dumps(full_record("t1", 1)).encode() + b"\n", full_record("t1", 2)], id="bom"),
        pytest.param([full_record("t1", 1), "", full_record("t1", 2)], id="blank-line"),
        pytest.param(["", full_record("t1", 1)], id="blank-first-line"),
        pytest.param([full_record("t1", 1), "   ", full_record("t1", 2)], id="whitespace-line"),
        pytest.param([full_record("t1", 1), b"\r\n", full_record("t1", 2)], id="crlf-blank-line"),
        pytest.param([full_record("t1", 1), full_record("t1", 2), ""], id="blank-last-line"),
        pytest.param([json.dumps(full_record("t1", 1))[:40].encode()], id="truncated-only-line"),
        pytest.param([full_record("t1", 1), json.dumps(full_record("t2", 1))[:40].encode()], id="truncated-last-line"),
        pytest.param([full_record("t1", 1), full_record("t1", 1)], id="duplicate"),
        pytest.param([full_record("t1", 1), full_record("t1", 2), full_record("t1", 1), full_record("t1", 2)], id="duplicates"),
        pytest.param([full_record("t1", 1), "{not json", full_record("t1", 1)], id="error-before-duplicate"),
        pytest.param([full_record("t1", 1), "{}", json.dumps(full_record("t1", 2)) + json.dumps(full_record("t1", 3))],
                     id="two-objects-and-an-empty-one"),
        pytest.param([json.dumps(full_record("t1", 1)) + json.dumps(full_record("t1", 2)), ""], id="two-objects-then-blank"),
        pytest.param([], id="empty-file"),
        # an absent container is fine, a null one is not; pyarrow reads both as null
        pytest.param([full_record("t1", 1), without(full_record("t1", 2), "telemetry"),
                      full_record("t2", 1, telemetry=None)], id="telemetry-absent-and-null"),
        pytest.param([without(full_record("t1", 1), "evidence"), full_record("t1", 2, task_id="evidence", evidence=None)],
                     id="evidence-null-with-a-decoy"),
        pytest.param([without(full_record("t1", 1), "evidence"),
                      '{"task_id": "t1", "attempt": 2, "success": true, "agent_eligible": true, "failure_class": "", '
                      '"\\u0065vidence": null}'], id="escaped-null-key"),
    ],
)
def test_line_structure_the_json_reader_would_miss(tmp_path, lines):
    assert_same_as_exact(write(tmp_path, lines), accepted=False)


def test_no_line_that_could_crash_the_json_reader_reaches_it(tmp_path):
    # pyarrow's JSON reader crashes (SIGSEGV) on a first value `null`: the fast path must check the
    # line structure first.  In a subprocess, so that a crash fails this test, not the session.
    runs = [str(write(tmp_path, [first, full_record("t1", 1)], name=f"run{i}"))
            for i, first in enumerate(["null", "[]", "1", '"x"', "true", "{}null", "{} null", " null"])]
    code = textwrap.dedent(f"""
        from capbench_nb.records import columnar_reader
        for run in {runs!r}:
            print(columnar_reader.read_results_fast(run + "/results.jsonl", run_dir=run))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None"] * len(runs)


# --------------------------------------------------------------------------- valid input: accepted, identical


VALID = [
    pytest.param([full_record("t1", 1), failed_record("t1", 2), full_record("t2", 1)], id="plain"),
    pytest.param([json.dumps(full_record("t1", 1)).encode() + b"\r\n", json.dumps(full_record("t1", 2)).encode() + b"\r\n"],
                 id="crlf"),
    pytest.param([full_record("t1", 1), json.dumps(full_record("t1", 2)).encode()], id="no-final-newline"),
    pytest.param([full_record("t1", 1), json.dumps(full_record("t1", 2)).encode() + b"\r"], id="final-cr-no-newline"),
    pytest.param([full_record("t1", 1, telemetry={"tool_calls": 0, "task_wall_ms": 5}, telemetry_source={}),
                  without(full_record("t1", 2), "telemetry")], id="sparse-and-missing-telemetry"),
    pytest.param([full_record("t1", 1, telemetry={n: None for n in TELEMETRY_FIELDS}, telemetry_source={})],
                 id="all-null-telemetry"),
    pytest.param([full_record("t1", 1, telemetry_source={"task_wall_ms": None, "setup_ms": "x"})],
                 id="explicit-null-source"),
    pytest.param([full_record("t1", 1, quality_score=0), full_record("t1", 2, quality_score=1),
                  full_record("t2", 1, quality_score=None)], id="quality-bounds"),
    pytest.param([full_record("t1", 1, cost=0.25, cost_source="p@1"), full_record("t1", 2, cost=None, cost_source="p@2"),
                  full_record("t2", 1, cost=0, cost_source="p@1")], id="cost"),
    pytest.param([full_record("t1", 1, telemetry=dict(RUN_TELEMETRY, tool_calls=2**53 - 1, task_wall_ms=2**53 - 1))],
                 id="2**53-1"),
    pytest.param([full_record("t1", 2**53 - 1)], id="attempt-2**53-1"),
    pytest.param([full_record("t1", 1, telemetry=dict(RUN_TELEMETRY, task_wall_ms=0.1, setup_ms=1e-320,
                                                    device_execution_ms=123456789.123456789))], id="floats"),
    pytest.param([full_record("é\u2028\u00a0😀", 1), full_record("a|b*`<x>", 1), full_record("", 1), full_record("t\x00", 1)],
                 id="unicode-task-ids"),
    pytest.param([json.dumps(full_record("é😀\\\"", 1), ensure_ascii=True)], id="escaped-ascii"),
    pytest.param([json.dumps(full_record("t1", 1), separators=(",", ":")), json.dumps(full_record("t1", 2), indent=None),
                  json.dumps(dict(reversed(list(full_record("t1", 3).items()))))], id="formatting-and-key-order"),
    pytest.param(['{"task_id" :"t1" , "attempt":1,"success" : true,\t"agent_eligible":true,"failure_class":""}'],
                 id="whitespace-inside"),
    pytest.param([json.dumps(full_record("t1", 1)).replace('"task_id"', '"task\\u005fid"')], id="escaped-key"),
    pytest.param([failed_record("t1", 1, artifact_dir=ARTIFACT_DIR, failure_stage="device_execution",
                            evidence=["episode.json#/events/0", "attempt.json#/a~1b", "attempt.json#"]),
                  full_record("t1", 2, artifact_dir=ARTIFACT_DIR, evidence=["./episode.json#/events/0"]),
                  failed_record("t2", 1, artifact_dir=ARTIFACT_DIR + "/", failure_stage="setup",
                            failure_class="environment", agent_eligible=False, evidence=["attempt.json#/setup"])],
                 id="evidence"),
    pytest.param([failed_record("t1", 1, failure_class=c, agent_eligible=e)
                  for c, e in (("unknown", True),)] + [failed_record("t1", 2, failure_class=c, agent_eligible=False)
                                                      for c in ("environment",)] +
                 [failed_record("t2", i + 1, failure_class=c, agent_eligible=False)
                  for i, c in enumerate(("evaluation", "skipped", "unknown"))], id="every-class"),
    pytest.param([full_record("t1", 1, artifact_dir="attempts/..x/1"), full_record("t1", 2, artifact_dir="a/...")],
                 id="dots-that-are-not-dotdot"),
    pytest.param([without(full_record("t1", 1), "evidence"), full_record("t1", 2)], id="evidence-absent"),
    pytest.param([without(without(without(full_record("t1", 1), "evidence"), "telemetry"), "telemetry_source"),
                  without(without(full_record("t1", 2), "evidence"), "telemetry_source")], id="containers-absent"),
    pytest.param([without(full_record("t1", 1), "telemetry"), json.dumps(full_record("é", 1), ensure_ascii=True)],
                 id="absent-and-escapes-elsewhere"),
    pytest.param([{"task_id": "t1", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}],
                 id="required-fields-only"),
]


def _format_valid_cases() -> list:
    """A valid file per boundary of every row of the field table: null, absent, minimum, maximum, and
    each value of a vocabulary (generated from the format description)."""
    from capbench_nb.format import FAILURE_CLASSES, INELIGIBLE_CLASSES, RECORD, RECORD_TELEMETRY

    out = []
    for f in RECORD + RECORD_TELEMETRY:
        values = [("null", None)] if f.nullable else []
        if not f.required:
            values.append(("absent", without))
        values += [("min", f.minimum)] if f.minimum is not None else []
        values += [("max", f.maximum)] if f.maximum is not None else []
        for kind, value in values:
            rec = full_record("t2", 1, cost_source="p@1")
            if f.name.startswith("telemetry."):
                key = f.name.split(".", 1)[1]
                rec["telemetry"] = dict(rec["telemetry"])
                if value is without:
                    del rec["telemetry"][key]
                else:
                    rec["telemetry"][key] = value
            elif value is without:
                rec = without(rec, f.name)
            else:
                rec[f.name] = value
            if rec.get("cost") is None:
                rec["cost_source"] = None
            out.append(pytest.param([full_record("t1", 1), rec], id=f"format-{f.name}-{kind}"))
    for fclass in FAILURE_CLASSES:
        rec = failed_record("t2", 1, failure_class=fclass, agent_eligible=fclass not in INELIGIBLE_CLASSES)
        out.append(pytest.param([full_record("t1", 1), rec], id=f"format-failure_class-{fclass}"))
    for stage in RECORD[[f.name for f in RECORD].index("failure_stage")].vocabulary:
        rec = failed_record("t2", 1, failure_stage=stage, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/setup"])
        out.append(pytest.param([full_record("t1", 1), rec], id=f"format-failure_stage-{stage}"))
    return out


@pytest.mark.parametrize("lines", _format_valid_cases())
def test_each_boundary_of_the_field_table_is_accepted_and_identical(tmp_path, lines):
    assert_same_as_exact(write(tmp_path, lines), accepted=True)


@pytest.mark.parametrize("lines", VALID)
def test_valid_files_are_accepted_and_identical(tmp_path, lines):
    assert_same_as_exact(write(tmp_path, lines), accepted=True)


def test_explicit_null_sources_read_as_absent(tmp_path):
    # pyarrow cannot tell {"x": null} from {}: both paths read a null source as no source
    a = write(tmp_path, [full_record("t1", 1, telemetry_source={"setup_ms": None, "task_wall_ms": "w"})], name="a")
    b = write(tmp_path, [full_record("t1", 1, telemetry_source={"task_wall_ms": "w"})], name="b")
    for reader in (read_results, exact_reader.read_results_exact):
        ra = reader(a / "results.jsonl", run_dir=a)[0]["telemetry_source"].astype(str).tolist()
        rb = reader(b / "results.jsonl", run_dir=b)[0]["telemetry_source"].astype(str).tolist()
        assert ra == rb == ['{"task_wall_ms": "w"}']


@pytest.mark.parametrize("chunk", [2500, 5000, 12000, 1 << 20])
def test_chunk_boundaries(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(columnar_reader, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(columnar_reader, "BLOCK_ROWS", 7)  # the chunks' columns joined into blocks too
    lines = []
    for t in range(12):
        for a in range(1, 4):
            rec = full_record(f"t{t}", a) if (t + a) % 3 else failed_record(f"t{t}", a, cost=0.5 + t, cost_source=f"p@{t % 2}")
            lines.append(rec)
    lines[-1] = json.dumps(lines[-1]).encode()  # and no final newline
    run = write(tmp_path, lines)
    assert_same_as_exact(run, accepted=True)
    # an invalid line after the first chunk still gives the exact error and line
    lines[30] = full_record("t10", 1, agent_eligible=False)
    bad = write(tmp_path, lines, name="bad")
    assert_same_as_exact(bad, accepted=False)


def test_a_line_longer_than_a_chunk_falls_back(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar_reader, "CHUNK_BYTES", 300)
    run = write(tmp_path, [full_record("t1", 1), full_record("t1", 2)])
    assert_same_as_exact(run, accepted=False)


class _CountingFile:
    """A file object from ``open_input`` whose ``read``/``readline`` add the bytes they return to ``counted``."""

    def __init__(self, fh, counted: list) -> None:
        self._fh, self._counted = fh, counted

    def read(self, *args):
        data = self._fh.read(*args)
        self._counted.append(len(data))
        return data

    def readline(self, *args):
        data = self._fh.readline(*args)
        self._counted.append(len(data))
        return data

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)


def test_a_first_line_too_short_for_a_record_fails_after_one_chunk_unparsed(tmp_path, monkeypatch):
    """300,000 ``{}`` lines (10 million took 5 GB in pyarrow's parse): the fast path declines its first
    chunk unparsed (lines shorter than MIN_RECORD_BYTES), and the strict exact path stops at line 1."""
    import pyarrow.json

    chunk = 64 << 10
    monkeypatch.setattr(columnar_reader, "CHUNK_BYTES", chunk)
    run = write(tmp_path, [full_record("t1", 1)])
    (run / "results.jsonl").write_bytes(b"{}\n" * 300_000)
    counted: list[int] = []
    for module in (columnar_reader, exact_reader):
        opener = module.open_input
        monkeypatch.setattr(module, "open_input", lambda path, _open=opener: _CountingFile(_open(path), counted))
    parsed = []
    read_json = pyarrow.json.read_json
    monkeypatch.setattr(pyarrow.json, "read_json", lambda *a, **k: parsed.append(1) or read_json(*a, **k))
    with pytest.raises(InvalidRunError) as info:
        read_results(run / "results.jsonl", run_dir=run)
    assert (info.value.rule, info.value.line) == ("missing-field", 1)
    assert parsed == [] and sum(counted) <= chunk + 3, sum(counted)


def test_the_shortest_valid_record_is_not_too_short_for_the_fast_path(tmp_path):
    """MIN_RECORD_BYTES is a lower bound: a line with only the required keys, compact, is accepted."""
    line = b'{"task_id":"x","attempt":1,"success":true,"agent_eligible":true,"failure_class":""}'
    assert len(line) >= columnar_reader.MIN_RECORD_BYTES
    run = write(tmp_path, [full_record("x", 1)])
    (run / "results.jsonl").write_bytes(line + b"\n")
    assert_same_as_exact(run, accepted=True)


# --------------------------------------------------------------------------- metrics: the same either way


def _sample_runs(tmp_path: Path) -> list[Path]:
    from capbench_nb.records.prices import load_price_table
    from capbench_nb.records.ingest import ingest_run
    from capbench_nb.simulation.writer import simulate_run

    prices = load_price_table(REPO / "data" / "prices-example.json")
    runs = [REPO / "data" / "sample-run"]
    art = simulate_run(tmp_path / "art", tasks=25, repeats=3, seed=5, artifacts=True, reasoning_tokens=True,
                       extra_attempts=2, missing_attempts=2)
    ingest_run(art, prices=prices, progress=False)
    runs.append(art)
    runs.append(simulate_run(tmp_path / "sim", tasks=40, repeats=4, seed=6, price_table=prices, short_tasks=3,
                             empty_tasks=2))
    return runs


def test_metrics_identical_with_and_without_the_fast_path(tmp_path, monkeypatch):
    for run_dir in _sample_runs(tmp_path):
        assert columnar_reader.read_results_fast(run_dir / "results.jsonl", run_dir=run_dir) is not None, run_dir
        fast = dumps(compute_metrics(capbench_nb.load_run(run_dir), slices=("app",)))
        with monkeypatch.context() as m:
            m.setattr(columnar_reader, "read_results_fast", lambda *a, **k: None)
            exact_run = capbench_nb.load_run(run_dir)
            exact = dumps(compute_metrics(exact_run, slices=("app",)))
        assert fast == exact, run_dir
        assert_same_as_exact(run_dir, accepted=True)


# --------------------------------------------------------------------------- hypothesis: random valid files and mutations

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_finite = st.one_of(
    st.integers(0, 2**53 - 1),
    st.floats(0, 2**53 - 1, allow_nan=False, allow_infinity=False).filter(lambda x: not (x == 0 and str(x)[0] == "-")),
    st.sampled_from([0, 0.1, 0.30000000000000004, 1e-320, 5e-324, 2.2250738585072014e-308, 123456.789e3, 1e15]),
)


@st.composite
def _record(draw, task_id: str, attempt: int) -> dict:
    """A record as a file may hold it: optional keys sometimes absent, keys in any order (so built by
    hand, not with ``format.new_record``, which always writes every key in section-3 order)."""
    cls = draw(st.sampled_from(["", "agent", "environment", "evaluation", "skipped", "unknown"]))
    success = cls == ""
    eligible = True if cls in ("", "agent") else draw(st.booleans()) if cls == "unknown" else False
    tele = {}
    for name in TELEMETRY_FIELDS:
        c = draw(st.integers(0, 5))
        if c == 0:
            continue
        if c == 1:
            tele[name] = None
        elif name in ("recovery_attempted", "recovery_succeeded"):
            tele[name] = draw(st.booleans())
        elif name.endswith("_ms"):
            tele[name] = draw(_finite)
        else:
            tele[name] = draw(st.integers(0, 2**53 - 1))
    rec = {"task_id": task_id, "attempt": attempt, "success": success, "agent_eligible": eligible,
           "failure_class": cls}
    optional = {
        "artifact_dir": draw(st.one_of(st.none(), _text.filter(lambda s: not s.startswith(("/", "\\"))
                                                                and ".." not in s.replace("\\", "/").split("/")
                                                                and "\x00" not in s))),
        "failure_stage": None,
        "evidence": [],
        "quality_score": draw(st.one_of(st.none(), st.floats(0, 1).filter(lambda x: str(x)[0] != "-"),
                                        st.sampled_from([0, 1]))),
        "telemetry": tele,
        "telemetry_source": draw(st.dictionaries(st.sampled_from(TELEMETRY_FIELDS), st.one_of(_text, st.none()),
                                                 max_size=5)),
        "cost": None,
        "cost_source": draw(st.one_of(st.none(), _text)),
    }
    if optional["cost_source"] is not None:
        optional["cost"] = draw(st.one_of(st.none(), _finite))
    for key, value in optional.items():
        if draw(st.integers(0, 6)) or (key == "cost_source" and optional["cost"] is not None):  # sometimes absent
            rec[key] = value
    keys = list(rec)
    order = draw(st.permutations(keys))
    return {key: rec[key] for key in order}


@st.composite
def _files(draw) -> list[bytes]:
    tasks = draw(st.lists(_text, min_size=1, max_size=5, unique=True))
    lines = []
    for task in tasks:
        for attempt in draw(st.lists(st.integers(1, 6), max_size=4, unique=True)):
            rec = draw(_record(task, attempt))
            ascii_ = draw(st.booleans())
            compact = draw(st.booleans())
            text = json.dumps(rec, ensure_ascii=ascii_, separators=(",", ":") if compact else None)
            lines.append(text.encode("utf-8") + draw(st.sampled_from([b"\n", b"\r\n"])))
    if lines and draw(st.booleans()):
        lines[-1] = lines[-1].rstrip(b"\r\n")
    return lines


_numbers = st.one_of(
    st.from_regex(r"\A(0|[1-9][0-9]{0,20})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?\Z"),
    st.floats(0, 2**53, allow_nan=False).map(repr),
)


@st.composite
def _number_files(draw) -> tuple[list, bool | None]:
    """Records whose setup_ms and cost are number texts: pyarrow's and Python's decimal-to-double conversions
    must agree bit for bit (or the value is refused: above 2**53 - 1, say, and then the exact path decides).
    pyarrow refuses some extreme exponents, such as 0E310, that Python reads: the fast path then declines,
    which is fine; otherwise it must accept."""
    texts = draw(st.lists(_numbers, min_size=1, max_size=8))
    lines = []
    for i, text in enumerate(texts):
        rec = json.dumps(full_record("t1", i + 1)).replace('"setup_ms": 2310.5', f'"setup_ms": {text}')
        lines.append(rec.replace('"cost": null', f'"cost": {text}').replace('"cost_source": null', '"cost_source": "p"'))
    plain = all(float(text) <= 2**53 - 1 and abs(int(re.split("[eE]", text + "e0")[1])) <= 300 for text in texts)
    return lines, True if plain else None


_MUTATIONS = [b"null", b"{}", b"[]", b"[null]", b"NaN", b"-0", b"-0.0", b"1e999", b'"\\ud800"', b"true", b'"x"',
              b"0.5", b"1.0", b"\xff", b"\xed\xa0\x80", b'"', b"}", b"{", b",", b":", b"]", b"[", b"\n", b"\r", b" ",
              b"\n\n", b'"task_id": "t1"', b'"telemetry": null', b'"extra": 1']


@st.composite
def _mutated_files(draw) -> tuple[list, None]:
    """A valid file with one line overwritten or spliced with bytes that break it, or do not."""
    lines = list(draw(_files().filter(bool)))
    i = draw(st.integers(0, len(lines) - 1))
    line = bytearray(lines[i])
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(line)))
        if draw(st.booleans()):
            line[pos:pos + draw(st.integers(0, 12))] = draw(st.sampled_from(_MUTATIONS))
        else:
            line[pos:pos] = draw(st.sampled_from(_MUTATIONS))
    lines[i] = bytes(line)
    return lines, None


@st.composite
def _valid_files(draw) -> tuple[list, bool | None]:
    lines = draw(_files())
    plain = bool(lines) and not any(b"\\u" in line for line in lines)  # no escape that could spell a key
    return lines, True if plain else None


def assert_readers_agree(path: Path, *, accepted: bool | None) -> None:
    """The two readers on one file: the fast one accepts only what the exact one accepts, and then gives
    exactly its records and sha256 (``read_results`` hands everything else to the exact reader, as the
    example-based tests above check)."""
    fast = columnar_reader.read_results_fast(path / "results.jsonl", run_dir=path)
    if accepted is not None:
        assert (fast is not None) == accepted, "fast path accepted" if fast is not None else "fast path declined"
    try:
        exact = exact_reader.read_results_exact(path / "results.jsonl", run_dir=path, strict=True)
    except InvalidRunError:
        assert fast is None, "the fast path accepted an invalid file"
        return
    if fast is not None:
        assert_frames_identical(fast[0], exact[0])
        assert fast[1] == exact[2]


@settings(PROFILE)
@given(case=st.one_of(_valid_files(), _mutated_files(), _number_files()),
       chunk=st.sampled_from([1 << 20, 700, 1500]))
def test_the_readers_agree_on_generated_files(tmp_path_factory, case, chunk):
    """Random valid files (every field, absent, null or drawn; key order, escapes, compact or not, CRLF, no
    final newline), mutations of them, and number texts; read in chunks of 1 MiB or a few lines."""
    lines, accepted = case
    run = write(tmp_path_factory.mktemp("gen"), lines)
    old = columnar_reader.CHUNK_BYTES
    columnar_reader.CHUNK_BYTES = chunk
    try:
        assert_readers_agree(run, accepted=accepted if chunk == 1 << 20 else None)
    finally:
        columnar_reader.CHUNK_BYTES = old
