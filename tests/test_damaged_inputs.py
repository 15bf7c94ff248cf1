"""Fuzz suite: damaged run directories through the command line (corpus, truncation, hypothesis).

Every way a run can be damaged must give a clear answer and lose nothing:

* exit code 2 with exactly one line on stderr naming the file, the physical
  line (results.jsonl) or JSON pointer (manifest.json), and ``[rule: ...]``;
  never a traceback, and no metrics.json written;
* with ``--allow-invalid``, exit 0 and every non-blank line of results.jsonl
  either counted or listed under ``anomalies`` (none dropped silently);
* the input bytes unchanged afterwards (sha256 of every file).

Inputs: the hand-made damaged runs of ``tests/corpus/`` (expectations in
``tests/corpus/EXPECTED.json``), truncation at every byte boundary, random
byte flips, random lines and random JSON values (hypothesis), wrong types,
missing keys, huge numbers, NaN/Infinity, negative durations, duplicated and
reordered lines, line endings, special files (FIFOs, endless files),
unreadable files.

Most cases call ``capbench_nb.cli.main`` in-process; the few that need a
process of their own (dropped privileges, memory limits) use a subprocess.
``CAPBENCH_FUZZ=long`` scales the hypothesis examples up (a few minutes more);
the default keeps this file well under a minute.  Known bugs are
``xfail(strict=True)`` with the reason; docs/damaged-inputs.md lists every
class tried with its outcome.
"""

from __future__ import annotations

import copy
import ctypes
import hashlib
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import LONG, check_error, cli, comparable, compact, read_doc, tree_hashes, write
from conftest import Hang as _Hang
from conftest import deadline as _deadline
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.io.atomic import dumps
from capbench_nb.records.run import load_run
from capbench_nb.format import (
    MAX_REPEATS,
    TELEMETRY_BOOL_FIELDS,
    TELEMETRY_COUNT_FIELDS,
    TELEMETRY_FIELDS,
    TELEMETRY_MS_FIELDS,
)

# --------------------------------------------------------------------------- configuration


def examples(default: int, long: int) -> int:
    return long if LONG else default


FUZZ = settings(
    max_examples=examples(40, 1000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text(encoding="utf-8"))["cases"]

# --------------------------------------------------------------------------- helpers


def error_line_number(err: str, path: Path) -> int | None:
    m = re.search(re.escape(str(path)) + r":(\d+): ", err)
    return int(m.group(1)) if m else None


def nonblank_lines(data: bytes) -> list[int]:
    """1-based numbers of the physical lines the loader does not skip as blank."""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    return [i for i, raw in enumerate(parts, start=1) if raw.strip()]


def run_metrics(run: Path, out: Path, *extra) -> tuple[int, str, str]:
    """``metrics RUN --out OUT`` with OUT emptied first, checking the inputs are unchanged."""
    if (out / "metrics.json").exists():
        (out / "metrics.json").unlink()
    before = tree_hashes(run)
    rc, stdout, stderr = cli("metrics", run, "--out", out, *extra)
    assert tree_hashes(run) == before, "the run directory changed"
    if rc != 0:
        assert not (out / "metrics.json").exists(), "metrics.json written for a rejected input"
        assert stdout == ""
    return rc, stdout, stderr


def assert_accounted(doc: dict, data: bytes) -> None:
    """Nothing lost: every non-blank line is a counted attempt or an anomaly, anomalies in file order."""
    lines = nonblank_lines(data)
    anomalies = doc["anomalies"]
    assert doc["attempts"]["total"] + len(anomalies) == len(lines), (doc["attempts"], anomalies, lines)
    assert [a["line"] for a in anomalies] == sorted(a["line"] for a in anomalies)
    assert {a["line"] for a in anomalies} <= set(lines)
    counts = doc["anomaly_counts"]
    assert sum(counts.values()) == len(anomalies)
    for a in anomalies:
        if a["kind"] == "invalid_line":
            assert re.search(r"\[rule: [a-z0-9-]+\]$", a["reason"]), a


def first_invalid(doc: dict) -> dict | None:
    return next((a for a in doc["anomalies"] if a["kind"] == "invalid_line"), None)


def rule_of(anomaly: dict) -> str:
    return re.search(r"\[rule: ([a-z0-9-]+)\]$", anomaly["reason"]).group(1)


def strict_and_lenient(run: Path, out: Path, data: bytes) -> tuple[int, str, dict]:
    """Run strict and --allow-invalid on the same bytes and check they tell the same story.

    Strict exits 0 exactly when the lenient run lists no invalid line; when it
    exits 2 it names the first invalid line and its rule (file order, duplicates
    included); when it exits 0 both documents agree.  Returns (strict rc,
    strict stderr, lenient document).
    """
    results = run / "results.jsonl"
    rc, _, err = run_metrics(run, out)
    assert rc in (0, 2), (rc, err)
    strict_doc = read_doc(out) if rc == 0 else None
    if rc == 2:
        rule = check_error(err)
        line = error_line_number(err, results)
    rc2, _, err2 = run_metrics(run, out, "--allow-invalid")
    assert rc2 == 0, err2
    assert "Traceback" not in err2
    doc = read_doc(out)
    assert_accounted(doc, data)
    bad = first_invalid(doc)
    if rc == 0:
        assert bad is None, bad
        assert comparable(strict_doc) == comparable(doc)
        assert err == ""
    else:
        assert bad is not None, f"strict mode rejected the file ({err.strip()}) but --allow-invalid lists no invalid line"
        assert line == bad["line"] and rule == rule_of(bad), (err, bad)
        assert len(err2.splitlines()) == 1 and "warning" in err2
    return rc, err, doc


# --------------------------------------------------------------------------- the corpus


@pytest.fixture(scope="module")
def corpus_copy(tmp_path_factory) -> Path:
    """The corpus copied to a temporary folder (symlinks kept as symlinks): commands run on the copy."""
    dest = tmp_path_factory.mktemp("corpus") / "corpus"
    shutil.copytree(CORPUS, dest, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def reference_out(corpus_copy, tmp_path_factory) -> Path:
    """metrics.json of the clean reference case (for verify, and for metric comparisons)."""
    out = tmp_path_factory.mktemp("reference-out")
    rc, _, err = cli("metrics", corpus_copy / "reference", "--out", out)
    assert rc == 0, err
    return out


def _corpus_params():
    for name in sorted(EXPECTED):
        exp = EXPECTED[name]
        marks = [pytest.mark.xfail(strict=True, reason=exp["xfail"])] if exp.get("xfail") else []
        yield pytest.param(name, id=name, marks=marks)


def test_corpus_matches_its_expectations_file():
    folders = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    assert folders == sorted(EXPECTED), set(folders) ^ set(EXPECTED)
    for name, exp in EXPECTED.items():
        assert exp.get("description"), name
        assert exp["rc"] in (0, 2) or sorted(exp["rc"]) == [0, 2], name


def _outside_hashes(corpus: Path) -> dict:
    """What a case may reach for outside its folder: the reference run and the secret file."""
    return {**tree_hashes(corpus / "reference"),
            "outside.json": hashlib.sha256((corpus / "outside.json").read_bytes()).hexdigest()}


@pytest.mark.parametrize("name", list(_corpus_params()))
def test_corpus_case(corpus_copy, reference_out, tmp_path, name):
    exp = EXPECTED[name]
    run = corpus_copy / name
    outside = _outside_hashes(corpus_copy)
    before = tree_hashes(run)
    out = tmp_path / "out"
    secret = "CORPUS-SECRET"

    rc, stdout, err = cli("metrics", run, "--out", out)
    expected_rc = exp["rc"] if isinstance(exp["rc"], list) else [exp["rc"]]
    assert rc in expected_rc, (rc, err)
    assert secret not in err
    if rc == 2:
        check_error(err, run, exp["where"], exp["rule"])
        assert stdout == "" and not (out / "metrics.json").exists()
        # Every command that reads a run refuses it the same way, before writing anything.
        for argv in (["metrics", run], ["verify", run, "--out", reference_out],
                     ["report", run, "--out", tmp_path / "report"],
                     ["compare", corpus_copy / "reference", run, "--out", tmp_path / "compare"]):
            rc_cmd, _, err_cmd = cli(*argv)
            assert rc_cmd == 2, (argv[0], err_cmd)
            assert check_error(err_cmd) == check_error(err), (argv[0], err_cmd)
            assert secret not in err_cmd
        assert not (run / "metrics.json").exists() and not (run / "summary.md").exists()
        assert not (tmp_path / "report").exists() and not (tmp_path / "compare").exists()
    else:
        assert err == ""
        doc = read_doc(out)
        if "attempts" in exp:
            assert doc["attempts"]["total"] == exp["attempts"]
        if exp.get("same_metrics_as_reference"):
            assert comparable(doc) == comparable(read_doc(reference_out))
        assert secret not in (out / "metrics.json").read_text()

    allow = exp["allow_invalid"]
    rc, _, err = cli("metrics", run, "--out", out, "--allow-invalid")
    assert rc == allow["rc"], err
    assert secret not in err
    if rc == 2:
        check_error(err, run, exp["where"], exp["rule"])
    else:
        doc = read_doc(out)
        text = (out / "metrics.json").read_text()
        assert secret not in text
        if "invalid_lines" in allow:
            assert [a["line"] for a in doc["anomalies"] if a["kind"] == "invalid_line"] == allow["invalid_lines"]
            assert doc["anomaly_counts"]["invalid_line"] == len(allow["invalid_lines"])
        if "attempts" in allow:
            assert doc["attempts"]["total"] == allow["attempts"]
        if allow.get("same_metrics_as_reference"):
            assert comparable(doc) == comparable(read_doc(reference_out))
        if (run / "results.jsonl").is_file():
            assert_accounted(doc, (run / "results.jsonl").read_bytes())
    assert tree_hashes(run) == before, "the damaged run changed"
    assert _outside_hashes(corpus_copy) == outside


# --------------------------------------------------------------------------- truncation at every byte

TASK_U = "tâche-é"  # two-byte UTF-8 characters: cuts fall inside them too
TRUNC_MANIFEST = {
    "schema_version": "capbench.run/1", "run_id": "trunc", "status": "partial",
    "config": {"judge": True},
    "plan": {"k": 2, "tasks": [{"task_id": "t1", "repeats": 2}, {"task_id": TASK_U, "repeats": 2}]},
}
TRUNC_RECORDS = [
    {"task_id": "t1", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": "",
     "telemetry": {"task_wall_ms": 1200, "input_tokens": 10}},
    {"task_id": "t1", "attempt": 2, "success": False, "agent_eligible": True, "failure_class": "agent",
     "quality_score": 0.25},
    None,  # a blank line
    {"task_id": TASK_U, "attempt": 1, "success": False, "agent_eligible": False, "failure_class": "environment"},
    {"task_id": TASK_U, "attempt": 2, "success": True, "agent_eligible": True, "failure_class": "",
     "cost": 0.5, "cost_source": "p@1"},
]


def _trunc_file() -> bytes:
    lines = [b"" if r is None else compact(r) for r in TRUNC_RECORDS]
    # The first line ends in CRLF, so cuts between CR and LF are tried as well.
    return lines[0] + b"\r\n" + b"\n".join(lines[1:]) + b"\n"


def test_truncation_at_every_byte_boundary(tmp_path):
    """Cut results.jsonl after every byte: a cut inside a record is ``truncated-line`` on that line (exit 2,
    or listed with --allow-invalid); a cut at a line boundary (or just before a newline) is a shorter,
    valid run whose metrics are those of the records kept."""
    full = _trunc_file()
    assert 300 < len(full) < 700
    full_lines = full.split(b"\n")
    run = write(tmp_path / "run", TRUNC_MANIFEST, b"")
    ref = write(tmp_path / "ref", TRUNC_MANIFEST, b"")
    out = tmp_path / "out"
    references: dict[bytes, dict] = {}

    def reference(kept: bytes, allow: bool) -> dict:
        key = (kept, allow)
        if key not in references:
            (ref / "results.jsonl").write_bytes(kept)
            references[key] = compute_metrics(load_run(ref, strict=not allow))
        return references[key]

    outcomes = {"valid": 0, "truncated": 0}
    lenient_every = 1 if LONG else 5  # --allow-invalid on every 5th cut by default (each run computes metrics)
    for n in range(len(full) + 1):
        data = full[:n]
        (run / "results.jsonl").write_bytes(data)
        *complete, fragment = data.split(b"\n")
        kept = b"".join(line + b"\n" for line in complete)
        whole = full_lines[len(complete)].strip() if len(complete) < len(full_lines) else b""
        if fragment.strip() in (b"", whole):  # at a boundary, or the last record lacks only its newline
            kept += fragment.strip() + b"\n" if fragment.strip() else b""
            rc, _, err = run_metrics(run, out)
            assert rc == 0, (n, err)
            assert comparable(read_doc(out)) == comparable(json.loads(dumps(reference(kept, False)))), n
            outcomes["valid"] += 1
            continue
        line = len(complete) + 1
        rc, _, err = run_metrics(run, out)
        assert rc == 2, (n, data[-20:])
        check_error(err, run, f"results.jsonl:{line}", "truncated-line")
        outcomes["truncated"] += 1
        if n % lenient_every:
            continue
        rc, _, err = run_metrics(run, out, "--allow-invalid")
        assert rc == 0, (n, err)
        doc = read_doc(out)
        assert [(a["kind"], a["line"], rule_of(a)) for a in doc["anomalies"]] == [("invalid_line", line, "truncated-line")]
        assert comparable(doc) == comparable(json.loads(dumps(reference(kept, True)))), n
    assert outcomes["valid"] >= 8 and outcomes["truncated"] > 250, outcomes


# --------------------------------------------------------------------------- hypothesis: flips, lines, values

FLIP_MANIFEST = {
    "schema_version": "capbench.run/1", "run_id": "flip", "status": "completed",
    "suite": {"name": "s", "version": "1"}, "config": {"judge": True, "model": "m"},
    "plan": {"repeats_override": None, "k": 2,
             "tasks": [{"task_id": "t1", "repeats": 2, "app": "a"}, {"task_id": "t2", "repeats": 3, "app": "b"}]},
}
FLIP_RECORDS = [
    {"task_id": "t1", "attempt": 1, "artifact_dir": "attempts/t1/1", "success": False, "agent_eligible": False,
     "failure_class": "environment", "failure_stage": "setup", "evidence": ["attempt.json#/setup"],
     "quality_score": None, "telemetry": {"setup_ms": 2310, "task_wall_ms": None}, "telemetry_source": {"setup_ms": "attempt.json#/setup/duration_ms"},
     "cost": None, "cost_source": None},
    {"task_id": "t1", "attempt": 2, "success": True, "agent_eligible": True, "failure_class": "", "quality_score": 0.75,
     "telemetry": {"task_wall_ms": 48210.5, "input_tokens": 9100, "recovery_attempted": True}},
    {"task_id": "t2", "attempt": 1, "success": False, "agent_eligible": True, "failure_class": "agent",
     "cost": 0.01, "cost_source": "prices/x@2026-10-01"},
    {"task_id": "t2", "attempt": 2, "success": True, "agent_eligible": True, "failure_class": ""},
]


def _flip_run(root: Path) -> Path:
    run = write(root, FLIP_MANIFEST, b"".join(compact(r) + b"\n" for r in FLIP_RECORDS))
    art = run / "attempts" / "t1" / "1"
    art.mkdir(parents=True, exist_ok=True)
    (art / "attempt.json").write_text(json.dumps({"setup": {"status": "failed", "duration_ms": 2310}}))
    return run


FLIP_BYTES = b"".join(compact(r) + b"\n" for r in FLIP_RECORDS)
MANIFEST_BYTES = json.dumps(FLIP_MANIFEST, indent=2).encode()


def _flip(data: bytes, flips) -> bytes:
    buf = bytearray(data)
    for pos, value in flips:
        buf[pos % len(buf)] = value
    return bytes(buf)


@pytest.fixture
def flip_dirs(tmp_path):
    return _flip_run(tmp_path / "run"), tmp_path / "out"


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(FLIP_BYTES) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_byte_flips_in_results(flip_dirs, flips):
    run, out = flip_dirs
    data = _flip(FLIP_BYTES, flips)
    (run / "results.jsonl").write_bytes(data)
    strict_and_lenient(run, out, data)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(MANIFEST_BYTES) - 1), st.integers(0, 255)), min_size=1, max_size=3))
def test_byte_flips_in_the_manifest(flip_dirs, flips):
    run, out = flip_dirs
    (run / "manifest.json").write_bytes(_flip(MANIFEST_BYTES, flips))
    for extra in ((), ("--allow-invalid",)):
        rc, _, err = run_metrics(run, out, *extra)
        assert rc in (0, 2), err
        if rc == 2:
            check_error(err)
            assert f"{run}/manifest.json" in err
        else:
            assert_accounted(read_doc(out), FLIP_BYTES)


_LINE_POOL = [compact(r) for r in FLIP_RECORDS] + [
    b"", b"   ", b"\r", b"{", b"}", b"null", b"[]", b"{}", b'"t1"', b"NaN", b"1e999",
    compact({"task_id": "t9", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}),
    compact({"task_id": "t1", "attempt": 7, "success": True, "agent_eligible": True, "failure_class": ""}),
    compact({"task_id": "t2", "attempt": 3, "success": False, "agent_eligible": True, "failure_class": ""}),
    b"\xef\xbb\xbf" + compact(FLIP_RECORDS[3]),
]


@FUZZ
@given(lines=st.lists(st.one_of(st.sampled_from(_LINE_POOL), st.binary(max_size=30).map(lambda b: b.replace(b"\n", b""))),
                      max_size=12),
       final_newline=st.booleans())
def test_random_lines_are_counted_or_listed(flip_dirs, lines, final_newline):
    """Valid records (duplicates included), plan anomalies, blank lines and arbitrary bytes, in any order."""
    run, out = flip_dirs
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    (run / "results.jsonl").write_bytes(data)
    strict_and_lenient(run, out, data)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20) | st.just([]) | st.just({}),
    lambda children: st.lists(children, min_size=1, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, min_size=1, max_size=4),
    max_leaves=12,
)
_FIELDS = [k for k in FLIP_RECORDS[0] if k != "telemetry"] + [f"telemetry.{t}" for t in TELEMETRY_FIELDS] + ["extra"]


@FUZZ
@given(index=st.integers(0, len(FLIP_RECORDS) - 1), field=st.sampled_from(_FIELDS), value=_json_values)
def test_any_json_value_in_any_field(flip_dirs, index, field, value):
    """One field of one record replaced by an arbitrary JSON value (NaN and Infinity tokens included)."""
    run, out = flip_dirs
    records = copy.deepcopy(FLIP_RECORDS)
    rec = records[index]
    if field.startswith("telemetry."):
        rec.setdefault("telemetry", {})[field.split(".", 1)[1]] = value
    else:
        rec[field] = value
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)
    (run / "results.jsonl").write_bytes(data)
    rc, err, _ = strict_and_lenient(run, out, data)
    if rc == 2:
        assert f"results.jsonl:{index + 1}:" in err


_FLIP_REFERENCE: dict[str, dict] = {}


def _flip_reference(run: Path) -> dict:
    """comparable() metrics of the clean flip run (computed once per run directory)."""
    key = str(run)
    if key not in _FLIP_REFERENCE:
        (run / "results.jsonl").write_bytes(FLIP_BYTES)
        _FLIP_REFERENCE[key] = comparable(json.loads(dumps(compute_metrics(load_run(run)))))
    return _FLIP_REFERENCE[key]


@FUZZ
@given(order=st.permutations(range(len(FLIP_RECORDS))), crlf=st.lists(st.booleans(), min_size=4, max_size=4),
       blank=st.integers(0, 4))
def test_reordered_lines_crlf_and_blank_lines_give_the_same_metrics(flip_dirs, order, crlf, blank):
    run, out = flip_dirs
    reference = _flip_reference(run)
    lines = [compact(FLIP_RECORDS[i]) + (b"\r\n" if c else b"\n") for i, c in zip(order, crlf)]
    lines.insert(blank, b"  \r\n")
    data = b"".join(lines)
    (run / "results.jsonl").write_bytes(data)
    rc, _, err = run_metrics(run, out)
    assert rc == 0, err
    assert comparable(read_doc(out)) == reference
    (run / "results.jsonl").write_bytes(FLIP_BYTES)


@FUZZ
@given(which=st.integers(0, len(FLIP_RECORDS) - 1), where=st.integers(0, len(FLIP_RECORDS)))
def test_duplicated_line_is_rejected_on_the_later_line(flip_dirs, which, where):
    run, out = flip_dirs
    reference = _flip_reference(run)
    lines = [compact(r) for r in FLIP_RECORDS]
    lines.insert(where, lines[which])
    data = b"\n".join(lines) + b"\n"
    (run / "results.jsonl").write_bytes(data)
    later = max(where, which + (where <= which)) + 1  # the physical line of the second copy
    rc, _, err = run_metrics(run, out)
    assert rc == 2
    check_error(err, run, f"results.jsonl:{later}", "duplicate-attempt")
    rc, _, err = run_metrics(run, out, "--allow-invalid")
    assert rc == 0
    doc = read_doc(out)
    assert [(a["line"], rule_of(a)) for a in doc["anomalies"]] == [(later, "duplicate-attempt")]
    assert comparable(doc) == reference  # the first copy counts, exactly once
    (run / "results.jsonl").write_bytes(FLIP_BYTES)


# --------------------------------------------------------------------------- wrong types, missing keys

BASE = {
    "task_id": "t1", "attempt": 2, "artifact_dir": None, "success": True, "agent_eligible": True,
    "failure_class": "", "failure_stage": None, "evidence": [], "quality_score": 0.5,
    "telemetry": {name: (True if name in TELEMETRY_BOOL_FIELDS else 3 if name in TELEMETRY_COUNT_FIELDS else 12.5)
                  for name in TELEMETRY_FIELDS},
    "telemetry_source": {"task_wall_ms": "attempt.json#/agent/task_wall_ms"},
    "cost": None, "cost_source": None,
}
FIRST = {"task_id": "t1", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}
SIMPLE_MANIFEST = {"schema_version": "capbench.run/1", "run_id": "types", "status": "completed",
                   "plan": {"tasks": [{"task_id": "t1", "repeats": 2}]}}

SAMPLES = {"null": None, "bool": True, "int": 1, "float": 1.5, "string": "x", "list": [], "list-of-int": [1],
           "object": {}, "object-of-int": {"a": 1}}
#: The JSON types each field accepts (section 3 of the format; docs/format-notes.md).
ACCEPTS = {
    "task_id": {"string"}, "attempt": {"int"}, "artifact_dir": {"string", "null"}, "success": {"bool"},
    "agent_eligible": {"bool"}, "failure_class": {"string"}, "failure_stage": {"string", "null"},
    "evidence": {"list"}, "quality_score": {"int", "float", "null"}, "telemetry": {"object", "object-of-int"},
    "telemetry_source": {"object"}, "cost": {"int", "float", "null"}, "cost_source": {"string", "null"},
}
for _name in TELEMETRY_FIELDS:
    ACCEPTS[f"telemetry.{_name}"] = ({"bool", "null"} if _name in TELEMETRY_BOOL_FIELDS
                                     else {"int", "null"} if _name in TELEMETRY_COUNT_FIELDS
                                     else {"int", "float", "null"})


def _with(field: str, value, rec: dict | None = None) -> dict:
    rec = copy.deepcopy(rec if rec is not None else BASE)
    if field.startswith("telemetry."):
        rec["telemetry"][field.split(".", 1)[1]] = value
    else:
        rec[field] = value
    return rec


def _one_bad_record(tmp_path, rec, *, rule=None, mention=None) -> None:
    """Line 1 valid, line 2 ``rec``: exit 2 naming line 2; with --allow-invalid line 2 is listed, line 1 counted."""
    raw = rec if isinstance(rec, bytes) else json.dumps(rec).encode()
    data = compact(FIRST) + b"\n" + raw + b"\n"
    run = write(tmp_path / "run", SIMPLE_MANIFEST, data)
    out = tmp_path / "out"
    rc, _, err = run_metrics(run, out)
    assert rc == 2, f"accepted: {raw[:200]!r}"
    check_error(err, run, "results.jsonl:2", rule)
    if mention:
        assert mention in err, err
    rc, _, err = run_metrics(run, out, "--allow-invalid")
    assert rc == 0, err
    doc = read_doc(out)
    assert doc["attempts"]["total"] == 1
    assert [a["line"] for a in doc["anomalies"]] == [2]
    assert_accounted(doc, data)


@pytest.mark.parametrize("field", sorted(ACCEPTS))
def test_wrong_json_type_for_every_field(tmp_path, field):
    rejected = 0
    for kind, value in SAMPLES.items():
        if kind in ACCEPTS[field]:
            continue
        name = field.split(".")[-1]
        _one_bad_record(tmp_path / kind, _with(field, value), rule=["type", "attempt"], mention=name)
        rejected += 1
    assert rejected >= 4


@pytest.mark.parametrize("field", sorted(BASE))
def test_missing_key(tmp_path, field):
    rec = copy.deepcopy(BASE)
    del rec[field]
    if field in ("task_id", "attempt", "success", "agent_eligible", "failure_class"):
        _one_bad_record(tmp_path, rec, rule="missing-field", mention=field)
        return
    run = write(tmp_path / "run", SIMPLE_MANIFEST, compact(FIRST) + b"\n" + compact(rec) + b"\n")
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    doc = read_doc(tmp_path / "out")
    assert doc["attempts"]["total"] == 2
    if field == "telemetry":  # every telemetry field reads as null, never 0
        assert doc["telemetry"]["tool_calls"]["nulls"] == 2 and doc["telemetry"]["tool_calls"]["sum"] is None


@pytest.mark.parametrize("name", TELEMETRY_FIELDS)
def test_missing_telemetry_key_reads_as_null(tmp_path, name):
    rec = copy.deepcopy(BASE)
    del rec["telemetry"][name]
    run = write(tmp_path / "run", SIMPLE_MANIFEST, compact(rec) + b"\n")
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    agg = read_doc(tmp_path / "out")["telemetry"][name]
    assert agg["n"] == 0 and agg["nulls"] == 1


# --------------------------------------------------------------------------- numbers

ALL_NUMERIC = ["attempt", "quality_score", "cost"] + [f"telemetry.{t}" for t in TELEMETRY_MS_FIELDS + TELEMETRY_COUNT_FIELDS]
#: By default one field of each kind (the wrong-type matrix covers every field); every field with CAPBENCH_FUZZ=long.
NUMERIC = ALL_NUMERIC if LONG else ["attempt", "quality_score", "cost", "telemetry.task_wall_ms", "telemetry.total_tokens"]


def _raw_with(field: str, token: str) -> bytes:
    """BASE with ``field`` set to a raw JSON token (NaN, 1e400, ...) that json.dumps cannot write."""
    rec = _with(field, "@@TOKEN@@")
    if field == "cost":
        rec["cost_source"] = "prices/x@1"
    return json.dumps(rec).replace('"@@TOKEN@@"', token).encode()


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", NUMERIC)
def test_nan_and_infinity_tokens(tmp_path, field, token):
    _one_bad_record(tmp_path, _raw_with(field, token), rule="json-nan", mention=token)


HUGE = [
    "9007199254740992",  # 2**53
    "1" + "0" * 400,  # 10**400, an exact integer (under the 4300-digit limit)
    "1e400",  # parses to inf
    "-1e400",
    "1.7976931348623157e308",  # the largest double
    "-1",
    "-0.0",  # negative zero is zero
    "1e-400",  # underflows to 0.0
]


def _expected_rule(field: str, token: str) -> str | None:
    """The rule a record with ``field`` = ``token`` breaks (docs/format-notes.md, Numbers), or None: accepted."""
    is_float = any(c in token for c in ".eE")
    value = float(token) if is_float else int(token)
    if field == "attempt":
        return "number-too-large" if not is_float and value >= 1 else "attempt"
    if field == "quality_score":
        return None if 0 <= value <= 1 else "quality-score"
    if is_float and field.split(".")[-1] in TELEMETRY_COUNT_FIELDS:
        return "type"
    if value < 0:
        return "negative"
    if value > 2**53 - 1:
        return "number-too-large"
    return None


def _huge_params():
    for field in NUMERIC:
        for token in HUGE:
            yield pytest.param(field, token, id=f"{field}-{token[:24]}")


@pytest.mark.parametrize("field,token", list(_huge_params()))
def test_huge_tiny_and_negative_numbers(tmp_path, field, token):
    rule = _expected_rule(field, token)
    if rule is None:
        run = write(tmp_path / "run", SIMPLE_MANIFEST, compact(FIRST) + b"\n" + _raw_with(field, token) + b"\n")
        rc, _, err = run_metrics(run, tmp_path / "out")
        assert rc == 0, err
        assert read_doc(tmp_path / "out")["attempts"]["total"] == 2
        return
    _one_bad_record(tmp_path, _raw_with(field, token), rule=rule)


@pytest.mark.parametrize("field", NUMERIC + ["manifest-repeats"])
def test_integer_literal_over_4300_digits(tmp_path, field):
    digits = "1" * 4301
    if field == "manifest-repeats":
        text = json.dumps(SIMPLE_MANIFEST).replace('"repeats": 2', f'"repeats": {digits}').encode()
        run = write(tmp_path / "run", text, compact(FIRST) + b"\n")
        rc, _, err = run_metrics(run, tmp_path / "out")
        assert rc == 2
        check_error(err)
        return
    _one_bad_record(tmp_path, _raw_with(field, digits))


@pytest.mark.parametrize("name", TELEMETRY_MS_FIELDS)
@pytest.mark.parametrize("value", [-1, -0.001, -1e-300, -48210.5])
def test_negative_durations(tmp_path, name, value):
    _one_bad_record(tmp_path, _with(f"telemetry.{name}", value), rule="negative", mention=name)


def test_negative_cost(tmp_path):
    _one_bad_record(tmp_path, _with("cost", -0.5, _with("cost_source", "p@1")), rule="negative")


@pytest.mark.parametrize("repeats", [2**63, 2**64 + 1])
def test_manifest_repeats_beyond_int64(tmp_path, repeats):
    doc = copy.deepcopy(SIMPLE_MANIFEST)
    doc["plan"]["tasks"][0]["repeats"] = repeats
    run = write(tmp_path / "run", doc, compact(FIRST) + b"\n")
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 2
    check_error(err, run, "manifest.json#/plan/tasks/0/repeats")


def _limited(gib: float):
    def preexec():
        limit = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return preexec


def test_plan_with_a_million_repeats_finishes_in_bounded_memory(tmp_path):
    doc = copy.deepcopy(SIMPLE_MANIFEST)
    doc["plan"]["tasks"][0]["repeats"] = 1_000_000
    run = write(tmp_path / "run", doc, compact(FIRST) + b"\n")
    proc = subprocess.run([sys.executable, "-m", "capbench_nb.cli", "metrics", str(run), "--out", str(tmp_path / "out")],
                          check=False, capture_output=True, text=True, timeout=120, preexec_fn=_limited(2))
    assert proc.returncode in (0, 2), proc.stderr[-500:]
    if proc.returncode == 2:
        check_error(proc.stderr)
    else:
        assert (tmp_path / "out" / "metrics.json").stat().st_size < 50_000_000


@pytest.mark.parametrize("where,value,rc", [
    ("repeats", MAX_REPEATS, 0), ("repeats", MAX_REPEATS + 1, 2),
    ("repeats_override", MAX_REPEATS, 0), ("repeats_override", MAX_REPEATS + 1, 2), ("repeats_override", 2**64, 2),
])
def test_planned_repeats_limit(tmp_path, where, value, rc):
    """schema.MAX_REPEATS (docs/format-notes.md): at the limit, a run; above it, repeats-too-large on its pointer."""
    doc = copy.deepcopy(SIMPLE_MANIFEST)
    if where == "repeats":
        doc["plan"]["tasks"][0]["repeats"] = value
        pointer = "/plan/tasks/0/repeats"
    else:
        doc["plan"]["repeats_override"] = value
        pointer = "/plan/repeats_override"
    run = write(tmp_path / "run", doc, compact(FIRST) + b"\n")
    got, _, err = run_metrics(run, tmp_path / "out")
    assert got == rc, err
    if rc == 2:
        check_error(err, run, f"manifest.json#{pointer}", "repeats-too-large")
    else:
        doc = read_doc(tmp_path / "out")
        assert doc["k"] == MAX_REPEATS and len(doc["curves"]["planned_prefix"]) == MAX_REPEATS


def test_curves_over_many_tasks_and_a_large_k_equal_the_counts_j_by_j():
    """With many tasks times a large k, the planned-prefix curve is counted in one pass (no table per j):
    the same numbers as counting each j, on random runs with gaps, ineligible attempts and extra attempts."""
    import random

    import numpy as np
    import pandas as pd

    from capbench_nb.metrics.curves import prefix_rates
    from capbench_nb.metrics.prepare import Prepared as _Prepared

    rnd = random.Random(8)
    for trial in range(60):
        n_tasks, k = rnd.randint(1, 40), rnd.choice([1, 2, 3, 7, 30])
        rows = []
        for t in range(n_tasks):
            for a in range(1, k + 3):
                if rnd.random() < 0.15:
                    continue
                eligible = rnd.random() < 0.85
                success = eligible and rnd.random() < 0.6
                rows.append((f"t{t}", a, success, eligible))
        rnd.shuffle(rows)
        attempts = pd.DataFrame(rows, columns=["task_id", "attempt", "success", "agent_eligible"]).astype(
            {"task_id": "string", "attempt": "Int64", "success": "boolean", "agent_eligible": "boolean"})
        plan = pd.DataFrame({"task_id": pd.array([f"t{t}" for t in range(n_tasks)], dtype="string"),
                             "planned_repeats": np.array([k + rnd.randint(0, 2) for _ in range(n_tasks)], dtype="int64")})
        counts = _Prepared(attempts, plan).all_pass_counts(k)
        each = _Prepared(attempts, plan)
        assert [(int(counts[0][j]), int(counts[1][j]), int(counts[2][j])) for j in range(1, k + 1)] == [
            each.pass_counts(j) for j in range(1, k + 1)], trial
        rates = prefix_rates(attempts, plan=plan, k=k)
        assert [(at.successes, hat.successes, at.n) for _, at, hat in rates] == [
            each.pass_counts(j)[1:] + each.pass_counts(j)[:1] for j in range(1, k + 1)], trial


@pytest.mark.parametrize("field", ["task_id", "artifact_dir", "cost_source", "telemetry_source", "plan-task", "plan-label"])
def test_lone_surrogate_escapes_in_strings(tmp_path, field):
    manifest_doc = copy.deepcopy(SIMPLE_MANIFEST)
    rec = dict(FIRST)
    if field == "plan-task":
        manifest_doc["plan"]["tasks"].append({"task_id": "t\udcff", "repeats": 2})
    elif field == "plan-label":
        manifest_doc["plan"]["tasks"][0]["app"] = "a\udcff"
    elif field == "telemetry_source":
        rec["telemetry_source"] = {"task_wall_ms": "x\udcff"}
    elif field == "cost_source":
        rec.update(cost=0.1, cost_source="p\udcff")
    else:
        rec[field] = "t\udcff"
    text = json.dumps(manifest_doc).encode()  # ensure_ascii: the surrogate is written as the escape \udcff
    data = json.dumps(rec).encode() + b"\n"
    run = write(tmp_path / "run", text, data)
    for extra in ((), ("--allow-invalid",)):
        rc, _, err = run_metrics(run, tmp_path / "out", *extra)
        assert rc in (0, 2), err
        if rc == 2:
            check_error(err)
        elif not field.startswith("plan"):
            assert_accounted(read_doc(tmp_path / "out"), data)


def test_duplicate_json_keys_last_value_wins(tmp_path):
    """The format is silent on duplicate keys; the loader keeps the last (Python's json).  Documented in
    docs/damaged-inputs.md as an open question: a reader that keeps the first would count another task."""
    raw = b'{"task_id":"t9","task_id":"t1","attempt":1,"success":true,"agent_eligible":true,"failure_class":""}\n'
    run = write(tmp_path / "run", SIMPLE_MANIFEST, raw)
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    doc = read_doc(tmp_path / "out")
    assert doc["attempts"]["total"] == 1 and doc["anomalies"] == []


# --------------------------------------------------------------------------- special files


@pytest.mark.parametrize("which", ["results.jsonl", "manifest.json", "evidence"])
def test_fifo_in_place_of_a_file_does_not_hang(tmp_path, which):
    run = _flip_run(tmp_path / "run")
    target = run / "attempts" / "t1" / "1" / "attempt.json" if which == "evidence" else run / which
    target.unlink()
    os.mkfifo(target)
    try:
        with _deadline(1.5):  # an in-process metrics run on this input takes ~0.03 s
            rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    except _Hang as exc:
        pytest.fail(f"capbench-nb metrics hung on a FIFO {which}: {exc}")
    assert rc == 2
    check_error(err)


def test_endless_file_is_refused_with_a_clear_message(tmp_path):
    procs = {}
    for which in ("results.jsonl", "manifest.json"):  # both at once, each under a 1 GiB address-space limit
        run = _flip_run(tmp_path / which / "run")
        (run / which).unlink()
        os.symlink("/dev/zero", run / which)
        procs[which] = subprocess.Popen(
            [sys.executable, "-m", "capbench_nb.cli", "metrics", str(run), "--out", str(tmp_path / which / "out")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_limited(1.0))
    outcomes = {which: (proc.wait(timeout=120), proc.communicate()[1]) for which, proc in procs.items()}
    for which, (rc, err) in outcomes.items():
        assert rc == 2, (which, err[-300:])
        check_error(err)


def test_manifest_above_the_size_limit_is_refused(tmp_path, monkeypatch):
    """schema.MAX_MANIFEST_BYTES (64 MiB), patched small: a larger manifest is refused before it is parsed."""
    import capbench_nb.records.manifest

    run = _flip_run(tmp_path / "run")
    size = (run / "manifest.json").stat().st_size
    monkeypatch.setattr(capbench_nb.records.manifest, "MAX_MANIFEST_BYTES", size)
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    monkeypatch.setattr(capbench_nb.records.manifest, "MAX_MANIFEST_BYTES", size - 1)
    for extra in ((), ("--allow-invalid",)):
        rc, _, err = run_metrics(run, tmp_path / "out", *extra)
        assert rc == 2
        check_error(err, run, "manifest.json", "manifest-too-large")
        assert "half a million" not in err  # the byte limit cannot know the number of tasks


def test_manifest_above_the_task_limit_is_refused_with_the_count_found(tmp_path, monkeypatch):
    """format.MAX_PLAN_TASKS (1,000,000), patched to 1: the two-task plan is refused on /plan/tasks,
    naming the limit and the real number of tasks; at the limit it is a run."""
    import capbench_nb.format.limits  # (read by the plan-too-large rule of format.MANIFEST_RULES)

    run = _flip_run(tmp_path / "run")
    monkeypatch.setattr(capbench_nb.format.limits, "MAX_PLAN_TASKS", 2)
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    monkeypatch.setattr(capbench_nb.format.limits, "MAX_PLAN_TASKS", 1)
    for extra in ((), ("--allow-invalid",)):
        rc, _, err = run_metrics(run, tmp_path / "out", *extra)
        assert rc == 2
        check_error(err, run, "manifest.json#/plan/tasks", "plan-too-large")
        assert "the plan has 2 tasks, above 1 (MAX_PLAN_TASKS)" in err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_verify_refuses_a_metrics_json_that_is_not_a_regular_file(tmp_path, kind):
    run = _flip_run(tmp_path / "run")
    out = tmp_path / "out"
    out.mkdir()
    if kind == "fifo":
        os.mkfifo(out / "metrics.json")
    else:
        os.symlink("/dev/zero", out / "metrics.json")
    try:
        with _deadline(5):
            rc, _, err = cli("verify", run, "--out", out)
    except _Hang as exc:
        pytest.fail(f"verify hung on a {kind} metrics.json: {exc}")
    assert rc == 2
    check_error(err, rule="metrics-unreadable")
    assert "not a regular file" in err


def test_evidence_file_with_an_overlong_integer_is_an_evidence_error(tmp_path):
    run = _flip_run(tmp_path / "run")
    (run / "attempts" / "t1" / "1" / "attempt.json").write_text('{"setup": {"status": "failed"}, "n": ' + "7" * 5000 + "}")
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 2
    check_error(err, run, "results.jsonl:1", "evidence")
    rc, _, err = run_metrics(run, tmp_path / "out", "--allow-invalid")
    assert rc == 0, err
    assert [(a["line"], rule_of(a)) for a in read_doc(tmp_path / "out")["anomalies"]] == [(1, "evidence")]


@pytest.mark.parametrize("pointer", ["/run_id", "/suite/name", "/config/model", "/plan/tasks/1/task_id",
                                     "/plan/tasks/0/app", "/config/k\udcffey"])
def test_lone_surrogate_anywhere_in_the_manifest_names_its_pointer(tmp_path, pointer):
    doc = copy.deepcopy(FLIP_MANIFEST)
    *parents, last = [int(p) if p.isdigit() else p for p in pointer.split("/")[1:]]
    node = doc
    for p in parents:
        node = node[p]
    if "\udcff" in str(last):
        node[last] = "value"
    else:
        node[last] = node[last] + "\udcff"
    run = write(tmp_path / "run", doc, FLIP_BYTES)
    rc, _, err = run_metrics(run, tmp_path / "out", "--slice", "model")
    assert rc == 2
    check_error(err, rule="invalid-unicode")
    shown = pointer.encode("ascii", "backslashreplace").decode()  # the surrogate of a key is shown as its escape
    assert f"{run}/manifest.json#{shown}: " in err


def test_results_symlink_to_dev_null_is_an_empty_run(tmp_path):
    run = _flip_run(tmp_path / "run")
    (run / "results.jsonl").unlink()
    os.symlink("/dev/null", run / "results.jsonl")
    rc, _, err = run_metrics(run, tmp_path / "out")
    assert rc == 0, err
    assert read_doc(tmp_path / "out")["attempts"]["total"] == 0


# --------------------------------------------------------------------------- unreadable files

_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _PR_CAPBSET_DROP = 1, 2, 24


def _without_root_file_access():
    """preexec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so that after exec even
    root obeys file permissions (root otherwise reads a chmod 000 file)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(97)


#: Runs several ``capbench-nb`` commands in one process (imports are paid once); argv lists on stdin as JSON.
_BATCH = r"""
import contextlib, io, json, sys, traceback
from capbench_nb.cli import main
results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
        except BaseException:
            rc, err = "crash", io.StringIO(traceback.format_exc())
    results.append({"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()})
json.dump(results, sys.stdout)
"""


def run_unprivileged(commands: list[list]) -> list[dict]:
    """Run ``capbench-nb`` commands in one process that cannot bypass file permissions (skip when impossible)."""
    cmd = [sys.executable, "-c", _BATCH]
    kwargs = {}
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("running as root, and dropping capabilities needs Linux")
        kwargs["preexec_fn"] = _without_root_file_access
    proc = subprocess.run(cmd, input=json.dumps([[str(a) for a in argv] for argv in commands]),
                          check=False, capture_output=True, text=True, timeout=120, **kwargs)
    if proc.returncode == 97:
        pytest.skip("running as root without CAP_SETPCAP: cannot drop CAP_DAC_OVERRIDE, so chmod 000 reads fine")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


UNREADABLE = {  # what is made unreadable -> rule
    "results.jsonl": "results-unreadable",
    "manifest.json": "manifest-unreadable",
    "evidence": "evidence",
    "artifact-dir": "evidence",
    "run-dir": "manifest-unreadable",
}


@pytest.fixture(scope="module")
def unreadable_outcomes(tmp_path_factory) -> dict:
    """Every UNREADABLE case (strict and --allow-invalid), plus an unwritable output directory, in one process."""
    root = tmp_path_factory.mktemp("unreadable")
    cases, commands, restore = {}, [], []
    for which in UNREADABLE:
        run = _flip_run(root / which / "run")
        target = {"results.jsonl": run / "results.jsonl", "manifest.json": run / "manifest.json",
                  "evidence": run / "attempts" / "t1" / "1" / "attempt.json",
                  "artifact-dir": run / "attempts" / "t1", "run-dir": run}[which]
        before = tree_hashes(run)
        restore.append((target, target.stat().st_mode))
        out = root / which / "out"
        cases[which] = {"run": run, "out": out, "before": before, "first": len(commands)}
        commands += [["metrics", run, "--out", out], ["metrics", run, "--out", out, "--allow-invalid"]]
    run = _flip_run(root / "unwritable" / "run")
    out = root / "unwritable" / "out"
    out.mkdir()
    restore.append((out, out.stat().st_mode))
    cases["unwritable-out"] = {"run": run, "out": out, "first": len(commands)}
    commands.append(["metrics", run, "--out", out])
    for target, _ in restore:
        target.chmod(0o500 if target == out else 0)
    try:
        results = run_unprivileged(commands)
    finally:
        for target, mode in restore:
            target.chmod(stat.S_IMODE(mode))
    for case in cases.values():
        case["strict"] = results[case["first"]]
        case["lenient"] = results[case["first"] + 1] if case["first"] + 1 < len(results) else None
    return cases


@pytest.mark.parametrize("which", list(UNREADABLE))
def test_unreadable_files(unreadable_outcomes, which):
    case = unreadable_outcomes[which]
    strict = case["strict"]
    assert strict["rc"] == 2, strict["stderr"]
    check_error(strict["stderr"], rule=UNREADABLE[which])
    assert any(text in strict["stderr"] for text in ("Permission denied", "cannot be read", "cannot read")), strict
    lenient = case["lenient"]
    if which in ("evidence", "artifact-dir"):  # one record's evidence: an invalid line, listed
        assert lenient["rc"] == 0, lenient["stderr"]
        doc = read_doc(case["out"])
        assert [(a["line"], rule_of(a)) for a in doc["anomalies"]] == [(1, "evidence")]
        assert doc["attempts"]["total"] == len(FLIP_RECORDS) - 1
    else:  # the whole file: nothing to count
        assert lenient["rc"] == 2 and lenient["stderr"] == strict["stderr"]
        assert not (case["out"] / "metrics.json").exists()
    assert tree_hashes(case["run"]) == case["before"]


def test_unwritable_output_directory_is_exit_2_on_one_line(unreadable_outcomes):
    case = unreadable_outcomes["unwritable-out"]
    result = case["strict"]
    assert result["rc"] == 2
    assert "Traceback" not in result["stderr"] and len(result["stderr"].splitlines()) == 1
    assert str(case["out"]) in result["stderr"] and "Permission denied" in result["stderr"]
    assert result["stderr"].rstrip().endswith("[rule: os-error]")
    assert list(case["out"].iterdir()) == []


# --------------------------------------------------------------------------- damaged metrics.json given to verify


@pytest.mark.parametrize("content", [
    pytest.param(b"", id="empty"),
    pytest.param(b"\xff\xfe{}", id="not-utf8"),
    pytest.param(b'{"schema_version": ', id="truncated"),
    pytest.param(b"[" * 100_000, id="deeply-nested"),
    pytest.param(b"1" * 5000, id="5000-digit-integer"),
])
def test_verify_on_a_damaged_metrics_json(tmp_path, content):
    run = _flip_run(tmp_path / "run")
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_bytes(content)
    rc, _, err = cli("verify", run, "--out", out)
    assert rc == 2
    check_error(err, rule=["json", "metrics-unreadable"])
    assert (out / "metrics.json").read_bytes() == content
