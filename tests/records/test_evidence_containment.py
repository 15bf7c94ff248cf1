"""Evidence and artifact_dir cannot read outside the run: ``..``, absolute paths, symlinks (direct, chained, higher up)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import check_error, cli, compact, tree_hashes, write

# --------------------------------------------------------------------------- reading outside the run


SECRET = "HARDENING-SECRET-OUTSIDE-THE-RUN"


@pytest.fixture
def outside_secret(tmp_path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "attempt.json").write_text(json.dumps({"setup": SECRET, "events": [SECRET]}))
    (secret / "episode.json").write_text(json.dumps({"events": [{"type": "x", "secret": SECRET}]}))
    return secret


def _escape_case(tmp_path: Path, secret: Path, case: str) -> tuple[Path, dict]:
    run = tmp_path / "run"
    art = run / "attempts" / "t" / "1"
    art.mkdir(parents=True)
    (art / "attempt.json").write_text(json.dumps({"setup": "inside"}))
    rec = {"task_id": "t", "attempt": 1, "success": False, "agent_eligible": True, "failure_class": "agent",
           "artifact_dir": "attempts/t/1", "evidence": ["attempt.json#/setup"]}
    if case == "artifact-dir-dotdot":
        rec["artifact_dir"] = f"../{secret.name}"
    elif case == "artifact-dir-absolute":
        rec["artifact_dir"] = str(secret)
    elif case == "artifact-dir-symlink":
        os.symlink(secret, run / "attempts" / "link")
        rec["artifact_dir"] = "attempts/link"
    elif case == "artifact-dir-parent-symlink":  # a symlinked directory higher up the path
        os.symlink(secret.parent, run / "attempts" / "up")
        rec["artifact_dir"] = f"attempts/up/{secret.name}"
    elif case == "evidence-dotdot":
        rec["evidence"] = [f"../../../../{secret.name}/attempt.json#/setup"]
    elif case == "evidence-absolute":
        rec["evidence"] = [f"{secret}/attempt.json#/setup"]
    elif case == "evidence-symlink":
        (art / "attempt.json").unlink()
        os.symlink(secret / "attempt.json", art / "attempt.json")
    elif case == "evidence-symlink-chain":  # inside -> inside -> outside
        (art / "attempt.json").unlink()
        os.symlink(secret / "attempt.json", run / "hop")
        os.symlink("../../../hop", art / "attempt.json")
    elif case == "evidence-backslash-dotdot":
        rec["evidence"] = [f"..\\..\\..\\..\\{secret.name}\\attempt.json#/setup"]
    elif case == "artifact-dir-is-run-dir":  # allowed: "." is inside the run
        rec["artifact_dir"] = "."
        rec["evidence"] = ["manifest.json#/run_id"]
    write(run, {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}}, compact(rec) + b"\n")
    return run, rec


@pytest.mark.parametrize("case", [
    "artifact-dir-dotdot", "artifact-dir-absolute", "artifact-dir-symlink", "artifact-dir-parent-symlink",
    "evidence-dotdot", "evidence-absolute", "evidence-symlink", "evidence-symlink-chain", "evidence-backslash-dotdot",
])
def test_evidence_and_artifact_dir_cannot_read_outside_the_run(tmp_path, outside_secret, case):
    run, _ = _escape_case(tmp_path, outside_secret, case)
    before = tree_hashes(run)
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2, f"{case}: accepted a reference outside the run"
    check_error(err, run, "results.jsonl:1", ["artifact-dir", "evidence"])
    assert SECRET not in err
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out", "--allow-invalid")
    assert rc == 0
    text = (tmp_path / "out" / "metrics.json").read_text()
    assert SECRET not in text and SECRET not in err
    assert [a["line"] for a in json.loads(text)["anomalies"]] == [1]
    assert tree_hashes(run) == before


def test_artifact_dir_dot_is_the_run_directory_itself(tmp_path, outside_secret):
    run, _ = _escape_case(tmp_path, outside_secret, "artifact-dir-is-run-dir")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 0, err
