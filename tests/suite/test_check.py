"""A run checked against its lock (spec section 12): each finding kind, drifted attempts, metrics.json's lock."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from capbench_nb.errors import InvalidRunError
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.records.run import load_run
from capbench_nb.suite.check import check_run, lock_document
from capbench_nb.records.lock import check_lock, dumps_lock, make_lock
from conftest import SAMPLE_RUN, attempt_doc, manifest, record, write_attempt, write_run

TASKS = [{"task_id": "t1", "repeats": 2, "app": "settings"}, {"task_id": "t2", "repeats": 2, "app": "clock"}]


def make(tasks=TASKS, k=2, suite=("unit", "1")):
    lock, problems = make_lock({
        "schema_version": "capbench.suite-lock/1", "suite": {"name": suite[0], "version": suite[1]},
        "run_policy": {"k": k},
        "tasks": [{"task_id": t["task_id"], "labels": {"app": t["app"]}} for t in tasks]}, "suite.lock.json")
    assert problems == []
    return lock


def run_of(tmp_path, lock_digest, tasks=TASKS, records=None, attempts=None) -> Path:
    doc = manifest(copy.deepcopy(tasks))
    if lock_digest is not None:
        doc["suite"]["lock"] = lock_digest
    records = records if records is not None else [record(t["task_id"], i) for t in tasks for i in (1, 2)]
    path = write_run(tmp_path / "run", doc, records)
    for rel, attempt in (attempts or {}).items():
        write_attempt(path / rel, attempt)
    return path


def kinds(check):
    return [f.kind for f in check.findings]


def test_a_run_of_its_lock_has_no_finding(tmp_path):
    lock = make()
    check = check_run(load_run(run_of(tmp_path, lock.digest)), lock)
    assert check.findings == () and check.checked and check.drifts == ()
    assert check.document() == {"digest": lock.digest, "checked": True, "drifted_attempts": 0, "drifted_tasks": [],
                                "findings": []}


def test_every_finding_kind_in_order(tmp_path):
    lock = make(tasks=TASKS + [{"task_id": "t3", "repeats": 1, "app": "x"}], k=3, suite=("frozen", "1"))
    tasks = [{**TASKS[0], "app": "other"}, TASKS[1], {"task_id": "t9", "repeats": 3}]
    drifted = attempt_doc(task_id="t1", attempt=1, preflight={"lock": "sha256:old"})
    records = [record("t1", 1, artifact_dir="attempts/t1/1"), record("t1", 2), record("t2", 1)]
    check = check_run(load_run(run_of(tmp_path, "sha256:x", tasks, records, {"attempts/t1/1": drifted})), lock)
    assert kinds(check) == ["lock_digest", "suite_identity", "task_set", "labels", "repeats", "repeats",
                            "drift_counted"]
    details = [f.detail for f in check.findings]
    assert "sha256:x" in details[0] and lock.digest in details[0]
    assert details[1] == "suite name: the run's is 'unit', the lock's 'frozen'"
    assert details[2] == "1 planned task(s) not in the lock: 't9'; 1 locked task(s) not planned: 't3'"
    assert details[3] == "task 't1': labels differ on 'app'"
    assert details[4] == "task 't1' is planned 2 time(s), below the lock's run_policy.k 3"
    assert "line 1" in details[6] and "attempt.json#/preflight/lock" in details[6]
    assert check.document()["drifted_tasks"] == ["t1"] and check.document()["drifted_attempts"] == 1


def test_task_set_names_at_most_ten_of_each_side(tmp_path):
    tasks = [{"task_id": f"r{i:02}", "repeats": 2, "app": "a"} for i in range(12)]
    lock = make(tasks=[{"task_id": f"l{i:02}", "repeats": 2, "app": "a"} for i in range(11)])
    check = check_run(load_run(run_of(tmp_path, lock.digest, tasks, records=[])), lock)
    detail = check.findings[0].detail
    assert "'r09' and 2 more" in detail and "'r10'" not in detail and "'l09' and 1 more" in detail


def drifted_run(tmp_path, lock) -> tuple:
    """A run of ``lock`` whose attempt (t2, 2) drifted (a failed locale probe), recorded as an environment failure."""
    drifted = attempt_doc(task_id="t2", attempt=2, preflight={"lock": lock.digest, "probes": [
        {"name": "locale", "expected": "en-US", "observed": "en-GB"}]})
    records = [record("t1", 1), record("t1", 2), record("t2", 1),
               record("t2", 2, "E", artifact_dir="attempts/t2/2", failure_stage="setup",
                      evidence=["attempt.json#/preflight/probes/0"])]
    return run_of(tmp_path, lock.digest, records=records, attempts={"attempts/t2/2": drifted}), drifted


def test_a_drifted_ineligible_record_is_no_finding_but_counts_as_drifted(tmp_path):
    lock = make()
    check = check_run(load_run(drifted_run(tmp_path, lock)[0]), lock)
    assert check.findings == ()
    assert [(d.task_id, d.attempt, d.evidence) for d in check.drifts] == [("t2", 2, ("attempt.json#/preflight/probes/0",))]


def test_the_run_copy_must_carry_the_named_digest(tmp_path):
    lock = make()
    path = run_of(tmp_path, "sha256:" + "0" * 64)
    (path / "suite.lock.json").write_text(dumps_lock(lock), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:  # the run is invalid (spec 12): load_run says so, for every command
        load_run(path)
    assert info.value.rule == "lock-copy" and info.value.file == str(path / "suite.lock.json")


def test_a_copy_in_a_run_that_names_no_lock_is_invalid(tmp_path):
    lock = make()
    path = run_of(tmp_path, None)
    (path / "suite.lock.json").write_text(dumps_lock(lock), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:  # load_run: for every command, not suite check alone
        load_run(path)
    assert info.value.rule == "lock-copy" and "names suite.lock none" in str(info.value)


def test_metrics_json_lock_block(tmp_path):
    lock = make()
    path = run_of(tmp_path, lock.digest)
    assert compute_metrics(load_run(path))["lock"] == {
        "digest": lock.digest, "checked": False, "drifted_attempts": 0, "drifted_tasks": [], "findings": []}
    (path / "suite.lock.json").write_text(dumps_lock(lock), encoding="utf-8")
    assert lock_document(load_run(path))["checked"] is True


def test_a_run_without_a_lock_says_nothing_about_locks():
    assert "lock" not in compute_metrics(load_run(SAMPLE_RUN))
    assert lock_document(load_run(SAMPLE_RUN)) is None


def test_check_lock_keeps_the_file_name():
    lock = make()
    assert check_lock(dict(lock), "x.json").file == "x.json"


def test_metrics_and_the_lock_section_read_no_file_after_load_run(tmp_path, monkeypatch):
    """The lock copy and the drifted attempts are read by load_run (records), never by metrics or a page:
    with the run's files gone after loading, metrics.json's lock block and the report's section are unchanged."""
    import shutil

    import capbench_nb.outputs.report.lock as section

    lock = make()
    path, drifted = drifted_run(tmp_path, lock)
    (path / "suite.lock.json").write_text(dumps_lock(lock), encoding="utf-8")
    run = load_run(path)
    assert run.lock_copy == lock and [d.preflight for d in run.drifts] == [drifted["preflight"]]
    shown = []
    monkeypatch.setattr(section, "show_html", shown.append)
    before = compute_metrics(run)
    section.show_lock(before, run)
    shutil.rmtree(path)
    assert compute_metrics(run) == before
    section.show_lock(before, run)
    assert shown[0] == shown[1] and "en-GB" in shown[0] and "en-US" in shown[0]
    assert before["lock"]["checked"] is True and before["lock"]["drifted_attempts"] == 1
