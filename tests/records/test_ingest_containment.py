"""ingest derives no record from an attempt directory linked from outside the run."""

from __future__ import annotations

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
