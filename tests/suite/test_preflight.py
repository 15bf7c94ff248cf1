"""Preflight (spec section 12): drift, derivation rule 1b, the artifact check, ingest and the recorder."""

from __future__ import annotations

import copy
import json

import pytest

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.lock import PREFLIGHT
from capbench_nb.records.artifacts import check_attempt
from capbench_nb.records.ingest import ingest_run
from capbench_nb.records.outcome import classify, json_equal, preflight_drift
from capbench_nb.records.recorder import RunRecorder
from conftest import attempt_doc, ingest_attempt_doc, ingest_manifest_doc, put_attempt, read_jsonl

LOCK = "sha256:" + "a" * 64


def probe(name, expected, observed):
    return {"name": name, "expected": expected, "observed": observed}


@pytest.mark.parametrize("a, b, equal", [
    (1, 1.0, True), (True, 1, False), (False, 0, False), (None, None, True), ("en-US", "en-GB", False),
    ({"a": [1, 2]}, {"a": [1, 2.0]}, True), ({"a": 1}, {"a": 1, "b": None}, False), ([1], [1, 1], False),
    ("1", 1, False), (-0.0, 0, True),
])
def test_json_equality(a, b, equal):
    assert json_equal(a, b) is equal and json_equal(b, a) is equal


def test_drift_evidence_is_the_lock_then_each_failed_probe_in_order():
    doc = {"preflight": {"lock": "sha256:other", "probes": [
        probe("locale", "en-US", "en-GB"), probe("api", 33, 33.0), probe("network", "offline", None),
        probe("wifi", False, 0)]}}
    assert preflight_drift(doc, LOCK) == ("attempt.json#/preflight/lock", "attempt.json#/preflight/probes/0",
                                         "attempt.json#/preflight/probes/2", "attempt.json#/preflight/probes/3")


def test_no_drift():
    assert preflight_drift({}, LOCK) == ()
    assert preflight_drift({"preflight": None}, LOCK) == ()
    assert preflight_drift({"preflight": {"lock": LOCK, "probes": [probe("x", 1, 1)]}}, LOCK) == ()
    # no lock key: only the probes decide
    assert preflight_drift({"preflight": {"probes": []}}, None) == ()
    # a preflight naming a lock when the manifest names none has drifted
    assert preflight_drift({"preflight": {"lock": LOCK}}, None) == ("attempt.json#/preflight/lock",)


def test_rule_1b_after_skip_before_setup():
    drifted = attempt_doc(preflight={"lock": LOCK, "probes": [probe("locale", "en-US", "en-GB")]})
    out = classify(drifted, lock=LOCK)
    assert (out.success, out.agent_eligible, out.failure_class, out.failure_stage, out.evidence, out.quality_score) \
        == (False, False, "environment", "setup", ("attempt.json#/preflight/probes/0",), None)
    assert classify({**drifted, "skip": {"reason": "x"}}, lock=LOCK).failure_class == "skipped"
    failed_setup = {**drifted, "setup": {"status": "failed"}}
    assert classify(failed_setup, lock=LOCK).evidence == ("attempt.json#/preflight/probes/0",)
    clean = attempt_doc(preflight={"lock": LOCK, "probes": [probe("locale", "en-US", "en-US")]})
    assert classify(clean, lock=LOCK).success is True


@pytest.mark.parametrize("row", PREFLIGHT, ids=[f.name for f in PREFLIGHT])
def test_each_preflight_row_is_checked_at_its_pointer(row):
    pointer = row.name.split("#", 1)[1]
    wrong = {"object": [], "string": 5, "array": {}}[row.json_type]
    doc = attempt_doc(preflight={"lock": LOCK, "probes": []})
    if pointer == "/preflight":
        doc["preflight"] = wrong
    elif "/*/" in pointer:
        doc["preflight"]["probes"] = [{pointer.rsplit("/", 1)[1]: wrong}]
        pointer = pointer.replace("*", "0")
    else:
        doc["preflight"][pointer.rsplit("/", 1)[1]] = wrong
    with pytest.raises(InvalidRunError) as info:
        check_attempt(doc, "attempt.json")
    assert (info.value.rule, info.value.pointer) == ("artifact-type", pointer)
    check_attempt(attempt_doc(preflight=None), "attempt.json")
    with pytest.raises(InvalidRunError) as info:
        check_attempt(attempt_doc(preflight={"probes": ["x"]}), "attempt.json")
    assert info.value.pointer == "/preflight/probes/0"


@pytest.mark.parametrize("probes, says", [([{"expected": 1, "observed": 1}], "is missing: a required string"),
                                          ([{"name": None, "expected": 1, "observed": 2}], "must be a string")])
def test_a_probe_without_a_name_is_refused_at_its_pointer(probes, says):
    with pytest.raises(InvalidRunError) as info:
        check_attempt(attempt_doc(preflight={"lock": LOCK, "probes": probes}), "attempt.json")
    assert (info.value.rule, info.value.pointer) == ("artifact-type", "/preflight/probes/0/name")
    assert f"/preflight/probes/0/name {says}" in str(info.value)  # a key left out is missing, not a null


def _lock_manifest():
    doc = ingest_manifest_doc([("t1", 2)])
    doc["suite"]["lock"] = LOCK
    return doc


def test_ingest_derives_a_drifted_attempt_with_evidence_that_resolves(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps(_lock_manifest()), encoding="utf-8")
    first = ingest_attempt_doc("t1", 1)
    first["preflight"] = {"lock": LOCK, "probes": [probe("locale", "en-US", "en-US"), probe("tz", "UTC", "CET")]}
    second = ingest_attempt_doc("t1", 2)
    second["preflight"] = {"lock": "sha256:" + "b" * 64, "probes": []}
    put_attempt(run, "t1/1", first)
    put_attempt(run, "t1/2", second)
    ingest_run(run)
    records = read_jsonl(run / "results.jsonl")
    assert [(r["failure_class"], r["agent_eligible"], r["failure_stage"], r["evidence"]) for r in records] == [
        ("environment", False, "setup", ["attempt.json#/preflight/probes/1"]),
        ("environment", False, "setup", ["attempt.json#/preflight/lock"])]


def test_the_recorder_records_a_preflight_with_an_attempt(tmp_path):
    run = tmp_path / "run"
    put_attempt(run, "t1/1", ingest_attempt_doc("t1", 1))
    put_attempt(run, "t1/2", ingest_attempt_doc("t1", 2))
    clean = {"lock": LOCK, "probes": [probe("locale", "en-US", "en-US")]}
    drifted = {"lock": LOCK, "probes": [probe("locale", "en-US", "fr-FR")]}
    with RunRecorder(run, _lock_manifest()) as rec:
        assert rec.record_attempt("attempts/t1/1", preflight=clean)
        assert rec.record_attempt("attempts/t1/2", preflight=drifted)
        assert not rec.record_attempt("attempts/t1/2", preflight=drifted)  # the same again: nothing new
        with pytest.raises(InvalidRunError) as info:
            rec.record_attempt("attempts/t1/2", preflight=clean)
        assert info.value.pointer == "/preflight"
    assert json.loads((run / "attempts/t1/2/attempt.json").read_text())["preflight"] == drifted
    records = read_jsonl(run / "results.jsonl")
    assert [r["failure_class"] for r in records] == ["", "environment"]
    assert records[1]["evidence"] == ["attempt.json#/preflight/probes/0"]
