"""simulate --lock --drift: a run of a frozen suite with drifted attempts, whose truth the toolkit recovers."""

from __future__ import annotations

import json

import pytest

from capbench_nb.records.ingest import ingest_run
from capbench_nb.records.run import load_run
from capbench_nb.simulation.drift import preflight_documents
from capbench_nb.simulation.writer import build_run, simulate_run
from capbench_nb.suite.check import check_run
from capbench_nb.suite.draft import draft_from_run
from capbench_nb.records.lock import make_lock
from conftest import read_jsonl

ARGS = {"tasks": 12, "repeats": 3, "seed": 7}


@pytest.fixture
def lock(tmp_path):
    simulate_run(tmp_path / "draft-of", **ARGS)
    spec = draft_from_run(tmp_path / "draft-of")
    spec["device_state"] = {"locale": "en-US", "network": "offline", "wifi": True}
    made, problems = make_lock(spec, "spec")
    assert problems == []
    return made


@pytest.mark.parametrize("artifacts", [True, False])
def test_the_records_are_the_truth_drifted_ones_included(tmp_path, lock, artifacts):
    run = simulate_run(tmp_path / "run", artifacts=artifacts, lock=lock, drift=0.25, **ARGS)
    if artifacts:
        ingest_run(run)
    truth = json.loads((run / "simulation.json").read_text())
    records = read_jsonl(run / "results.jsonl")
    assert records == [entry["record"] for entry in truth["attempts"]]
    drifted = truth["lock"]["drifted"]
    assert drifted and truth["lock"]["digest"] == lock.digest
    assert [[r["task_id"], r["attempt"]] for r in records
            if r["failure_class"] == "environment" and (not artifacts or "preflight" in r["evidence"][0])] == drifted
    check = check_run(load_run(run, skip_evidence=not artifacts), lock)
    assert check.findings == ()
    assert len(check.drifts) == (len(drifted) if artifacts else 0)  # without attempts/ nothing shows drift


def test_without_drift_nothing_but_the_preflight_changes(tmp_path, lock):
    plain = simulate_run(tmp_path / "plain", artifacts=True, **ARGS)
    locked = simulate_run(tmp_path / "locked", artifacts=True, lock=lock, drift=0.0, **ARGS)
    for path in sorted((plain / "attempts").rglob("attempt.json")):
        a = json.loads(path.read_text())
        b = json.loads((locked / path.relative_to(plain)).read_text())
        assert b.pop("preflight") == {"lock": lock.digest, "probes": [
            {"name": n, "expected": v, "observed": v} for n, v in lock["device_state"].items()]}
        assert a == b
    manifest = json.loads((locked / "manifest.json").read_text())
    assert manifest["suite"]["lock"] == lock.digest
    assert (locked / "suite.lock.json").exists() and not (plain / "suite.lock.json").exists()


def test_drift_draws_are_seeded_and_bounded(lock):
    attempts = build_run(**ARGS).attempts
    assert preflight_documents(attempts, lock, 0.5, 1) == preflight_documents(attempts, lock, 0.5, 1)
    assert all(e is None for _, e in preflight_documents(attempts, lock, 0.0, 1).values())
    assert all(e is not None for _, e in preflight_documents(attempts, lock, 1.0, 1).values())
    with pytest.raises(ValueError):
        preflight_documents(attempts, lock, 1.5, 1)
