"""Every rule id of the format description has a case that triggers it, through both readers.

The record cases are generated from the field and rule tables (conftest ``record_field_cases``
and ``invariant_cases``): a case per check of every field row and per invariant.  Each runs
through the columnar reader (which must decline the file) and the exact reader (which must name
the rule, the line and the row's message), strict and not.  The other rule ids (``CHECKS``) have
a hand-made case each; a test fails when an id the readers or the derivation raise is not in the
table, or an id of the table has no case.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO, invariant_cases, manifest, record, record_field_cases, write_run

from capbench_nb import InvalidRunError
from capbench_nb import format as fmt
from capbench_nb.format import CHECKS, INVARIANTS, LOCK_CHECKS, RULE_IDS
from capbench_nb.records import columnar_reader, exact_reader, manifest as manifest_module
from capbench_nb.records.derivation import read_artifacts
from capbench_nb.records.run import load_run, read_results

PLAN = [("t1", 3), ("t2", 3)]
RECORD_CASES = record_field_cases() + invariant_cases()


def _run(tmp_path: Path, lines: list, *, doc: dict | None = None) -> Path:
    return write_run(tmp_path / "run", doc or manifest(PLAN), lines)


@pytest.mark.parametrize("rec, rule, message", [pytest.param(*c[1:], id=c[0]) for c in RECORD_CASES])
def test_each_record_rule_through_both_readers(tmp_path, rec, rule, message):
    run = _run(tmp_path, [record("t1", 1), rec, record("t2", 1)])
    results = run / "results.jsonl"
    assert columnar_reader.read_results_fast(results, run_dir=run) is None
    for reader in (read_results, exact_reader.read_results_exact):
        with pytest.raises(InvalidRunError) as info:
            reader(results, run_dir=run)
        assert (info.value.rule, info.value.line, info.value.message) == (rule, 2, message)
        records, invalid, _ = reader(results, run_dir=run, strict=False)
        assert [(a["rule"], a["line"], a["reason"]) for a in invalid] == [(rule, 2, message)]
        assert records["line"].tolist() == [1, 3]


def test_every_field_check_and_invariant_has_a_case():
    ids = {c[0] for c in RECORD_CASES}
    assert {r.id for r in INVARIANTS} <= ids
    assert len(ids) == len(RECORD_CASES)  # unique case ids


# --------------------------------------------------------------------------- every other rule id


def _results_lines(tmp_path, lines: list[bytes]) -> Path:
    run = _run(tmp_path, [])
    (run / "results.jsonl").write_bytes(b"".join(lines))
    return run


def _line(rec: dict) -> bytes:
    return json.dumps(rec).encode() + b"\n"


GOOD = _line(record("t1", 1))


def _manifest_case(path: str, value):
    """A manifest with the value at ``path`` replaced; the error must point at it."""
    def build(tmp_path):
        doc = manifest(PLAN)
        *parents, last = path.split("/")
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
        return _run(tmp_path, [record("t1", 1)], doc=doc), f"manifest.json#/{path}"
    return build


def _raw_manifest(raw: bytes):
    def build(tmp_path):
        run = _run(tmp_path, [record("t1", 1)])
        (run / "manifest.json").write_bytes(raw)
        return run, "manifest.json#"
    return build


def _results(*lines: bytes, where: str = "results.jsonl:2"):
    def build(tmp_path):
        return _results_lines(tmp_path, list(lines)), where
    return build


def _no_results(tmp_path):
    run = _run(tmp_path, [])
    (run / "results.jsonl").unlink()
    return run, "results.jsonl"


def _results_dir(tmp_path):
    run = _no_results(tmp_path)[0]
    (run / "results.jsonl").mkdir()
    return run, "results.jsonl"


def _manifest_dir(tmp_path):
    run = _run(tmp_path, [record("t1", 1)])
    (run / "manifest.json").unlink()
    (run / "manifest.json").mkdir()
    return run, "manifest.json"


def _no_manifest(tmp_path):
    run = _run(tmp_path, [record("t1", 1)])
    (run / "manifest.json").unlink()
    return run, "manifest.json"


#: A run (or attempt directory) breaking each rule of CHECKS, and where the error must point.
LOAD_CASES = {
    "run-dir": lambda tmp_path: (tmp_path / "nope", ""),
    "json": _results(GOOD, b'{"task_id": }\n'),
    "json-nan": _results(GOOD, _line(record("t1", 2)).replace(b'"cost": null', b'"cost": NaN')),
    "number-too-large": _results(GOOD, _line(record("t1", 2)).replace(b'"cost": null', b'"cost": 1' + b"0" * 5000)),
    "utf-8": _results(GOOD, b'{"task_id": "\xff"}\n'),
    "bom": _results(b"\xef\xbb\xbf" + GOOD, where="results.jsonl:1"),
    "invalid-unicode": _results(GOOD, _line(record("t1", 2)).replace(b'"t1"', b'"\\ud800"')),
    "truncated-line": _results(GOOD, GOOD[:20]),
    "record-type": _results(GOOD, b"[1]\n"),
    "evidence": _results(GOOD, _line(record("t1", 2, artifact_dir="attempts/t1/2", evidence=["a.json#/x"]))),
    "duplicate-attempt": _results(GOOD, GOOD),
    "results-missing": _no_results,
    "results-unreadable": _results_dir,
    "manifest-missing": _no_manifest,
    "manifest-unreadable": _manifest_dir,
    "manifest-type": _raw_manifest(b"[]"),
    "schema-version": _manifest_case("schema_version", "capbench.run/2"),
    "run-id": _manifest_case("run_id", ""),
    "status": _manifest_case("status", "done"),
    "suite": _manifest_case("suite", []),
    "created-at": _manifest_case("created_at", 5),
    "runner": _manifest_case("runner", []),
    "config": _manifest_case("config", "x"),
    "plan": _manifest_case("plan", None),
    "repeats-override": _manifest_case("plan/repeats_override", 0),
    "repeats-too-large": _manifest_case("plan/tasks/0/repeats", 10_001),
    "plan-tasks": _manifest_case("plan/tasks", {}),
    "plan-empty": _manifest_case("plan/tasks", []),
    "task-type": _manifest_case("plan/tasks/0", "t1"),
    "task-id": _manifest_case("plan/tasks/0/task_id", 5),
    "task-id-duplicate": _manifest_case("plan/tasks/1/task_id", "t1"),
    "repeats": _manifest_case("plan/tasks/0/repeats", 0),
    "plan-k": _manifest_case("plan/k", 2),
}


def _attempt_dir(tmp_path: Path, files: dict) -> Path:
    art = tmp_path / "attempts" / "t1" / "1"
    art.mkdir(parents=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (art / name).write_bytes(content)
        else:
            (art / name).write_text(json.dumps(content), encoding="utf-8")
    return art


ATTEMPT = {"task_id": "t1", "attempt": 1}


def _outside(tmp_path):
    art = _attempt_dir(tmp_path, {})
    (tmp_path / "secret.json").write_text(json.dumps(ATTEMPT), encoding="utf-8")
    (art / "attempt.json").symlink_to(tmp_path / "secret.json")
    return art


def _directory(tmp_path):
    art = _attempt_dir(tmp_path, {})
    (art / "attempt.json").mkdir()
    return art


#: Attempt directories breaking each artifact rule of CHECKS.
ARTIFACT_CASES = {
    "artifact-missing": lambda tmp_path: _attempt_dir(tmp_path, {}),
    "artifact-outside": _outside,
    "artifact-unreadable": _directory,
    "artifact-json": lambda tmp_path: _attempt_dir(tmp_path, {"attempt.json": b"{"}),
    "artifact-type": lambda tmp_path: _attempt_dir(tmp_path, {"attempt.json": {"task_id": "t1", "attempt": 0}}),
}


def test_every_rule_id_has_a_case():
    covered = {c[2] for c in RECORD_CASES} | set(LOAD_CASES) | set(ARTIFACT_CASES) | {"line-too-long",
                                                                                      "manifest-too-large"}
    covered.add("plan-too-large")  # tests/test_damaged_inputs.py, with the limit patched
    covered |= set(SELECTION_CASES) | {"selection-unreadable"}
    covered |= {rule for rule, _ in LOCK_CHECKS}  # tests/suite/test_lock.py: test_every_lock_rule_has_a_case
    assert set(RULE_IDS) == covered


@pytest.mark.parametrize("rule", sorted(LOAD_CASES))
def test_each_load_rule(tmp_path, rule):
    run, where = LOAD_CASES[rule](tmp_path)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == rule
    assert info.value.location == (f"{run}/{where}" if where else str(run))


def test_line_too_long(tmp_path, monkeypatch):
    # the real limit (128 MiB) is above the fast path's chunk; so patched, both small
    monkeypatch.setattr(exact_reader, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(columnar_reader, "CHUNK_BYTES", 1000)
    run = _results_lines(tmp_path, [GOOD, _line(record("t1", 2, cost_source="x" * 1000))])
    for strict in (True, False):
        with pytest.raises(InvalidRunError) as info:
            load_run(run, strict=strict)
        assert (info.value.rule, info.value.line) == ("line-too-long", 2)


def test_manifest_too_large(tmp_path, monkeypatch):
    run = _run(tmp_path, [record("t1", 1)])
    monkeypatch.setattr(manifest_module, "MAX_MANIFEST_BYTES", 100)
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert info.value.rule == "manifest-too-large"


@pytest.mark.parametrize("rule", sorted(ARTIFACT_CASES))
def test_each_artifact_rule(tmp_path, rule):
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(ARTIFACT_CASES[rule](tmp_path))
    assert info.value.rule == rule


# --------------------------------------------------------------------------- the ids in the code

_RAISED = [
    re.compile(r'(?:Violation|InvalidRunError)\(\s*(?:[\w.]+(?:\([\w.]*\))?,\s*)?"([a-z0-9-]+)"'),
    re.compile(r'\bbad\(\s*(?:f?"[^"]*"|[a-z_]+),\s*"([a-z0-9-]+)"'),
    re.compile(r'\brule=\s*"([a-z0-9-]+)"'),
    re.compile(r'\b\w+_rule=\s*"([a-z0-9-]+)"'),  # io.files.input_errors(missing_rule=..., unreadable_rule=...)
    re.compile(r'_fail\([^()]*(?:\([^()]*\)[^()]*)*,\s*"([a-z0-9-]+)"\)'),
]
_READERS = ["run.py", "manifest.py", "exact_reader.py", "columnar_reader.py", "artifacts.py", "derivation.py",
            "selection.py"]


def test_every_rule_id_the_readers_and_derivation_raise_is_in_the_table():
    found = set()
    for name in _READERS:
        text = (REPO / "capbench_nb" / "records" / name).read_text(encoding="utf-8")
        for pattern in _RAISED:
            found.update(pattern.findall(text))
    # the checks driven by the tables raise the tables' rule ids
    for f in fmt.ARTIFACT + fmt.MANIFEST_FIELDS + fmt.PLAN_FIELDS + fmt.PLAN_TASK:
        found.update(r for r in (f.type_rule, f.low_rule, f.high_rule, f.vocabulary_rule) if r)
    found.update(r.id for r in fmt.ARTIFACT_RULES)
    assert {"run-dir", "manifest-missing", "record-type", "artifact-missing", "number-too-large"} <= found
    assert found - set(RULE_IDS) == set()


def test_checks_have_unique_ids_and_a_description():
    ids = [c.id for c in CHECKS] + [r.id for r in INVARIANTS]
    assert len(ids) == len(set(ids))
    assert all(c.description and c.file for c in CHECKS)


# --------------------------------------------------------------------------- selection.jsonl (spec section 9)

_SELECTOR = {"name": "verifier", "version": "1"}


def _pick(task_id="t1", candidates=(1, 2), selected=1, **fields) -> dict:
    return {"task_id": task_id, "candidates": list(candidates), "selected": selected, "selector": _SELECTOR, **fields}


#: A selection.jsonl whose line 2 breaks each selection rule (line 1 is valid: t2 shown its attempt 1).
SELECTION_CASES = {
    "selection-type": b"[1]\n",
    "selection-candidates": _line(_pick(candidates=[1, 1])),
    "selection-selected": _line(_pick(selected=3)),
    "selection-scores": _line(_pick(scores={"1": 0.5, "02": 0.4})),
    "selection-selector": _line(_pick(selector={"name": "verifier", "version": "2"})),
    "selection-cost-needs-source": _line(_pick(selector_cost=0.01)),
    "selection-task-not-in-plan": _line(_pick(task_id="t9")),
    "selection-duplicate-task": _line(_pick("t2", [1])),
    "selection-candidate-missing": _line(_pick(candidates=[1, 3], selected=3)),
}


def _selection_run(tmp_path, second: bytes) -> Path:
    run = _run(tmp_path, [record("t1", 1), record("t1", 2, "A"), record("t2", 1)])
    (run / "selection.jsonl").write_bytes(_line(_pick("t2", [1])) + second)
    return run


@pytest.mark.parametrize("rule", sorted(SELECTION_CASES))
def test_each_selection_rule_strict_and_with_allow_invalid(tmp_path, rule):
    run = _selection_run(tmp_path, SELECTION_CASES[rule])
    with pytest.raises(InvalidRunError) as info:
        load_run(run)
    assert (info.value.rule, info.value.location) == (rule, f"{run}/selection.jsonl:2")
    loaded = load_run(run, strict=False)
    assert loaded.anomalies[["kind", "line", "rule"]].values.tolist() == [["invalid_selection_line", 2, rule]]
    assert loaded.selection.lines["line"].tolist() == [1] and loaded.selection.selector == _SELECTOR


def test_an_unreadable_selection_file(tmp_path):
    run = _run(tmp_path, [record("t1", 1)])
    (run / "selection.jsonl").mkdir()
    for strict in (True, False):
        with pytest.raises(InvalidRunError) as info:
            load_run(run, strict=strict)
        assert (info.value.rule, info.value.location) == ("selection-unreadable", f"{run}/selection.jsonl")
