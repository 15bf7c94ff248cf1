"""capbench-nb suite lock / suite check (spec section 12), and metrics/verify on a locked run."""

from __future__ import annotations

import json
import shutil

import pytest

from capbench_nb.records.lock import lock_digest
from conftest import SAMPLE_RUN, cli

SECRET = "s3cr3t-value-never-shown"


def locked_sample(tmp_path):
    """The sample run, named as a run of the lock drafted from its plan, with its lock copy."""
    run = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run)
    assert cli("suite", "lock", "--from-run", run, "--out", tmp_path / "draft.json")[0] == 0
    rc, out, err = cli("suite", "lock", tmp_path / "draft.json", "--out", run / "suite.lock.json")
    assert rc == 0, err
    digest = json.loads((run / "suite.lock.json").read_text())["digest"]
    doc = json.loads((run / "manifest.json").read_text())
    doc["suite"]["lock"] = digest
    (run / "manifest.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return run, digest


def test_suite_lock_writes_the_lock_with_its_digest(tmp_path):
    spec = {"schema_version": "capbench.suite-lock/1", "suite": {"name": "s", "version": "1"},
            "run_policy": {"k": 1}, "tasks": [{"task_id": "t"}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    rc, out, err = cli("suite", "lock", tmp_path / "spec.json", "--out", tmp_path / "lock.json")
    assert rc == 0 and out.strip() == str(tmp_path / "lock.json")
    text = (tmp_path / "lock.json").read_text(encoding="utf-8")
    assert text == json.dumps({**spec, "digest": lock_digest(spec)}, sort_keys=True, indent=2) + "\n"
    assert lock_digest(spec) in err
    # the same lock again is fine; another one over it is refused
    assert cli("suite", "lock", tmp_path / "spec.json", "--out", tmp_path / "lock.json")[0] == 0
    spec["suite"]["version"] = "2"
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    rc, _, err = cli("suite", "lock", tmp_path / "spec.json", "--out", tmp_path / "lock.json")
    assert rc == 2 and "[rule: output-exists]" in err


def test_suite_lock_reads_yaml(tmp_path):
    (tmp_path / "spec.yaml").write_text("schema_version: capbench.suite-lock/1\nsuite: {name: s, version: '1'}\n"
                                        "run_policy: {k: 2}\ntasks:\n  - task_id: t\n    labels: {app: a}\n")
    rc, _, err = cli("suite", "lock", tmp_path / "spec.yaml", "--out", tmp_path / "lock.json")
    assert rc == 0, err
    assert json.loads((tmp_path / "lock.json").read_text())["tasks"] == [{"task_id": "t", "labels": {"app": "a"}}]


def test_suite_lock_prints_every_problem_one_line_each_never_the_secret(tmp_path):
    spec = {"schema_version": "capbench.suite-lock/1", "suite": {"name": "", "version": "1"},
            "accounts": [{"id": "a", "credential": SECRET}], "run_policy": {"k": 0}, "tasks": []}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    rc, out, err = cli("suite", "lock", tmp_path / "spec.json", "--out", tmp_path / "lock.json")
    lines = err.strip().splitlines()
    assert rc == 2 and out == "" and not (tmp_path / "lock.json").exists()
    assert [line.rsplit("[rule: ", 1)[1] for line in lines] == [
        "lock-suite]", "lock-k]", "lock-tasks-empty]", "lock-secret]"]
    assert all(line.startswith("capbench-nb: error: ") for line in lines)
    assert f"{tmp_path / 'spec.json'}#/accounts/0/credential" in lines[3]
    assert SECRET not in err


def test_suite_lock_usage(tmp_path):
    rc, _, err = cli("suite", "lock", "--out", tmp_path / "x.json")
    assert rc == 2 and "[rule: usage]" in err
    rc, _, err = cli("suite", "lock", tmp_path / "absent.json", "--out", tmp_path / "x.json")
    assert rc == 2 and "[rule: lock-unreadable]" in err


def test_suite_check_exit_codes(tmp_path):
    run, digest = locked_sample(tmp_path)
    rc, out, err = cli("suite", "check", run)
    assert (rc, out) == (0, "") and "0 finding(s)" in err
    # another lock: findings, exit 1, one per line
    other = json.loads((run / "suite.lock.json").read_text())
    other["suite"]["version"] = "2027.01"
    other["tasks"] = other["tasks"][1:]
    del other["digest"]
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert cli("suite", "lock", tmp_path / "other.json", "--out", tmp_path / "other.lock.json")[0] == 0
    rc, out, err = cli("suite", "check", run, "--lock", tmp_path / "other.lock.json")
    assert rc == 1
    assert [line.split(":", 1)[0] for line in out.splitlines()] == ["lock_digest", "suite_identity", "task_set"]
    # no lock at hand, or an invalid one: exit 2
    (run / "suite.lock.json").unlink()
    rc, _, err = cli("suite", "check", run)
    assert rc == 2 and "[rule: lock-unreadable]" in err


def test_metrics_and_verify_carry_the_lock_block(tmp_path):
    run, digest = locked_sample(tmp_path)
    assert cli("metrics", run, "--out", tmp_path / "out")[0] == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["lock"] == {"digest": digest, "checked": True, "drifted_attempts": 0, "drifted_tasks": [],
                           "findings": []}
    assert cli("verify", run, "--out", tmp_path / "out")[0] == 0
    doc["lock"]["findings"] = [{"kind": "labels", "detail": "x"}]
    (tmp_path / "out" / "metrics.json").write_text(json.dumps(doc, indent=2) + "\n")
    rc, out, _ = cli("verify", run, "--out", tmp_path / "out")
    assert rc == 1 and "/lock/findings" in out


def test_a_run_copy_with_another_digest_is_invalid(tmp_path):
    run, _ = locked_sample(tmp_path)
    doc = json.loads((run / "manifest.json").read_text())
    doc["suite"]["lock"] = "sha256:" + "0" * 64
    (run / "manifest.json").write_text(json.dumps(doc))
    for argv in (("suite", "check", run), ("metrics", run, "--out", tmp_path / "o")):
        rc, _, err = cli(*argv)
        assert rc == 2 and "[rule: lock-copy]" in err and len(err.strip().splitlines()) == 1


def test_a_copy_in_a_run_that_names_no_lock_is_invalid_for_every_command(tmp_path):
    run, _ = locked_sample(tmp_path)
    doc = json.loads((run / "manifest.json").read_text())
    del doc["suite"]["lock"]  # the manifest lost its lock; the copy stays
    (run / "manifest.json").write_text(json.dumps(doc))
    for argv in (("suite", "check", run), ("metrics", run, "--out", tmp_path / "o"), ("report", run, "--out", tmp_path / "o")):
        rc, _, err = cli(*argv)
        assert rc == 2 and "[rule: lock-copy]" in err and "names suite.lock none" in err, (argv, err)
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
