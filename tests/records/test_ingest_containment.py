"""ingest derives no record from an attempt directory linked from outside the run."""

from __future__ import annotations

import json
import os
import shutil

from conftest import check_error, cli, tree_hashes

def test_ingest_refuses_attempt_directories_linked_from_outside(tmp_path):
    """attempts/<task> a symlink to a folder outside the run: ingest must not derive records from it."""
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "2", "--repeats", "1", "--seed", "5", "--out", run, "--artifacts")
    assert rc == 0, err
    task_dir = min((run / "attempts").iterdir())
    outside = tmp_path / "outside" / task_dir.name
    outside.parent.mkdir()
    shutil.move(str(task_dir), outside)
    os.symlink(outside, task_dir)
    (run / "results.jsonl").unlink(missing_ok=True)
    before = tree_hashes(run)
    rc, _, err = cli("ingest", run)
    assert rc == 2, err
    check_error(err)
    assert not (run / "results.jsonl").exists()
    assert tree_hashes(run) == before


def _run_with_an_attempt_linked_outside(tmp_path, attempt_json: dict):
    """A one-task run whose attempts/t1/1 is a symlink to a folder outside the run."""
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "1", "--repeats", "2", "--seed", "5", "--out", run, "--artifacts")
    assert rc == 0, err
    (run / "results.jsonl").unlink(missing_ok=True)
    task_dir = next((run / "attempts").iterdir())
    shutil.rmtree(task_dir / "1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "attempt.json").write_text(json.dumps(attempt_json))
    os.symlink(outside, task_dir / "1")
    return run, task_dir


def test_ingest_reads_nothing_through_an_attempt_directory_linked_outside(tmp_path):
    """Strict: one line naming the directory, rule ``evidence`` (the loader's rule for an artifact_dir
    outside the run).  --allow-invalid: the attempt is recorded from its directory names with
    ``artifact_dir`` null; the outside attempt.json (which claims attempt 2) is never read."""
    run, task_dir = _run_with_an_attempt_linked_outside(tmp_path, {"task_id": "SECRET", "attempt": 2})
    before = tree_hashes(run)
    rc, out, err = cli("ingest", run)
    assert rc == 2 and out == ""
    check_error(err, rule="evidence")
    assert f"error: {task_dir / '1'}: " in err and "outside the run" in err
    assert not (run / "results.jsonl").exists() and tree_hashes(run) == before

    rc, _, err = cli("ingest", run, "--allow-invalid")
    assert rc == 0, err
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    linked = [r for r in records if r["artifact_dir"] is None]
    assert len(records) == 2 and len(linked) == 1 and "SECRET" not in (run / "results.jsonl").read_text()
    assert linked[0]["attempt"] == 1 and linked[0]["task_id"] == task_dir.name
    assert linked[0]["failure_class"] == "unknown" and linked[0]["evidence"] == []
    assert linked[0]["ingest_error"]["rule"] == "evidence"
    assert linked[0]["ingest_error"]["ids_from"] == "directory names"
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 0, err
