"""The bundled locked sample (data/locked-run, scripts/make_locked_run.py): the script's output byte for byte,
a lock with AndroidWorld-style pins that its run meets; two runs of one lock compare with no warning, a run
of a moved lock with the `lock` warning (`--allow-diff lock`); and every bad lock or preflight is one line,
exit 2, with nothing written and nothing under RUN_DIR changed (issue 25)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

from conftest import REPO, cli, tree_hashes

LOCKED_RUN = REPO / "data" / "locked-run"
SECRET = "tok-3f9a-never-printed"


def _script():
    spec = importlib.util.spec_from_file_location("make_locked_run", REPO / "scripts" / "make_locked_run.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_bundled_locked_run_is_the_scripts_output_and_meets_its_lock(tmp_path):
    assert _script().main(["make_locked_run.py", str(tmp_path / "run")]) == 0
    assert tree_hashes(tmp_path / "run") == tree_hashes(LOCKED_RUN), "regenerate: python scripts/make_locked_run.py"
    lock = json.loads((LOCKED_RUN / "suite.lock.json").read_text())
    assert json.loads((LOCKED_RUN / "manifest.json").read_text())["suite"]["lock"] == lock["digest"]
    assert lock["platform"]["device"] == "pixel_6" and lock["platform"]["system_image"]["api"] == 33
    assert lock["device_state"]["network"] == "offline" and lock["device_state"]["datetime"].endswith("Z")
    assert len(lock["apps"]) == 5 and all(a["version_code"] > 0 and a["apk_sha256"] for a in lock["apps"])
    assert len(lock["tasks"]) == 12 and all(isinstance(t["seed"], int) for t in lock["tasks"])
    rc, out, err = cli("suite", "check", LOCKED_RUN)
    assert (rc, out) == (0, "") and "0 finding(s); 6 drifted attempt(s) in 6 task(s)" in err
    records = [json.loads(line) for line in (LOCKED_RUN / "results.jsonl").read_text().splitlines()]
    drifted = [r for r in records if any(e.startswith("attempt.json#/preflight") for e in r["evidence"])]
    assert len(drifted) == 6 and all((r["failure_class"], r["agent_eligible"], r["failure_stage"])
                                     == ("environment", False, "setup") for r in drifted)


def _run_of(tmp_path, name: str, lock_file, seed: int):
    run = tmp_path / name
    assert cli("simulate", "--tasks", 12, "--repeats", 3, "--seed", seed, "--artifacts", "--lock", lock_file,
               "--drift", 0.1, "--out", run)[0] == 0
    assert cli("ingest", run)[0] == 0
    return run


def test_two_runs_of_one_lock_compare_cleanly_and_a_moved_lock_warns(tmp_path):
    from capbench_nb.metrics.compatibility import blocking_warnings, compatibility_warnings
    from capbench_nb.records.run import load_run

    sample = load_run(LOCKED_RUN)
    same = _run_of(tmp_path, "same", LOCKED_RUN / "suite.lock.json", seed=5)
    assert compatibility_warnings(sample, load_run(same)) == []  # no suite warning, no lock warning
    # the suite moves to a new clock app: a new lock, and its runs differ from the old ones in that one pin
    spec = json.loads((LOCKED_RUN / "suite.lock.json").read_text())
    del spec["digest"]
    next(a for a in spec["apps"] if a["package"] == "com.google.android.deskclock")["version_code"] = 71104
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert cli("suite", "lock", tmp_path / "spec.json", "--out", tmp_path / "new.lock.json")[0] == 0
    moved = _run_of(tmp_path, "moved", tmp_path / "new.lock.json", seed=5)
    warnings = compatibility_warnings(sample, load_run(moved))
    assert [w["code"] for w in warnings] == ["lock"] and blocking_warnings(warnings, ()) == warnings  # --strict: 1
    assert warnings[0]["details"]["paths"] == ["/apps/com.google.android.deskclock/version_code"]
    rc, _, err = cli("compare", LOCKED_RUN, moved, "--out", tmp_path / "c", "--strict", "--allow-diff", "lock",
                     "--skip-evidence")
    assert rc == 0 and "warning: [lock] (allowed by --allow-diff)" in err and "/version_code" in err
    doc = json.loads((tmp_path / "c" / "comparison.json").read_text())
    assert doc["compatibility"]["warnings"] == json.loads(json.dumps(warnings))


def _lock_spec() -> dict:
    spec = json.loads((LOCKED_RUN / "suite.lock.json").read_text())
    del spec["digest"]
    return spec


def _bad_lock(tmp_path, case: str):
    """(argv, rule) for a bad lock given to ``suite lock SPEC`` or ``suite check RUN --lock``."""
    spec, path = _lock_spec(), tmp_path / "bad.json"
    if case == "not-json":
        path.write_text("{apps: [unclosed\n")
        return ("suite", "lock", path), "lock-json"
    if case == "schema":
        spec["schema_version"] = "capbench.suite-lock/2"
    elif case == "missing":
        del spec["run_policy"]
    elif case == "task-twice":
        spec["tasks"].append(spec["tasks"][0])
    elif case == "package-twice":
        spec["apps"].append(spec["apps"][0])
    elif case == "secret":
        spec["accounts"][0]["credential"] = SECRET
    elif case == "digest":
        lock = json.loads((LOCKED_RUN / "suite.lock.json").read_text())
        lock["device_state"]["locale"] = "en-GB"  # edited after locking: the digest no longer matches
        path.write_text(json.dumps(lock))
        return ("suite", "check", "RUN", "--lock", path), "lock-digest-mismatch"
    elif case == "huge":
        with open(path, "wb") as fh:  # sparse: 100 MiB and one byte, never read
            fh.truncate((100 << 20) + 1)
        return ("suite", "check", "RUN", "--lock", path), "lock-too-large"
    path.write_text(json.dumps(spec))
    rules = {"schema": "lock-schema-version", "missing": "lock-run-policy", "task-twice": "lock-task-id-duplicate",
             "package-twice": "lock-app-duplicate", "secret": "lock-secret"}
    return ("suite", "lock", path), rules[case]


@pytest.mark.parametrize("case", ["not-json", "schema", "missing", "task-twice", "package-twice", "secret", "digest",
                                  "huge"])
def test_a_bad_lock_is_one_line_exit_2_nothing_written(tmp_path, case):
    run = tmp_path / "run"
    shutil.copytree(LOCKED_RUN, run)
    before = tree_hashes(run)
    argv, rule = _bad_lock(tmp_path, case)
    argv = tuple(run if a == "RUN" else a for a in argv)
    out = tmp_path / "out.json"
    rc, stdout, err = cli(*argv, *(("--out", out) if argv[1] == "lock" else ()))
    assert rc == 2 and stdout == "" and len(err.strip().splitlines()) == 1 and f"[rule: {rule}]" in err, err
    assert "Traceback" not in err and SECRET not in err and not out.exists()
    assert tree_hashes(run) == before


@pytest.mark.parametrize("case", ["lock-copy", "preflight-type", "probe-name"])
def test_a_bad_run_of_a_lock_is_one_line_exit_2_and_the_run_unchanged(tmp_path, case):
    run = tmp_path / "run"
    shutil.copytree(LOCKED_RUN, run)
    attempt = run / "attempts" / "clock.alarm.create" / "1" / "attempt.json"
    if case == "lock-copy":
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["suite"]["lock"] = "sha256:" + "0" * 64
        (run / "manifest.json").write_text(json.dumps(manifest))
        commands, rule = [("suite", "check", run), ("metrics", run, "--out", tmp_path / "m"),
                          ("report", run, "--out", tmp_path / "r")], "lock-copy"
    else:
        doc = json.loads(attempt.read_text())
        if case == "preflight-type":
            doc["preflight"] = ["locale", "en-US"]
        else:
            del doc["preflight"]["probes"][0]["name"]
        attempt.write_text(json.dumps(doc))
        commands, rule = [("ingest", run, "--force")], None  # --force: results.jsonl is there, and stays
    before = tree_hashes(run)
    for argv in commands:
        rc, stdout, err = cli(*argv)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert rule is None or f"[rule: {rule}]" in err
        assert case == "lock-copy" or "attempt.json" in err and "/preflight" in err, err
        assert tree_hashes(run) == before
    assert not any(os.path.exists(tmp_path / name) for name in ("m", "r"))


def test_the_lock_is_seen_in_the_comparison_and_the_board(tmp_path):
    """A run of a lock names it at every step: comparison.json/md and the run card, board.json/md and the first
    screen; a run without one has no lock key (its documents are as before)."""
    from capbench_nb.metrics.board import board
    from capbench_nb.metrics.comparison import compare_runs
    from capbench_nb.outputs.board.files import board_markdown
    from capbench_nb.outputs.board.page import header_html
    from capbench_nb.outputs.comparison.files import comparison_markdown
    from capbench_nb.records.run import load_run

    digest = json.loads((LOCKED_RUN / "suite.lock.json").read_text())["digest"]
    sample, same = load_run(LOCKED_RUN), load_run(_run_of(tmp_path, "same", LOCKED_RUN / "suite.lock.json", seed=5))
    doc = compare_runs(sample, same, n_boot=50)
    assert doc["run_a"]["suite"] == doc["run_b"]["suite"] == {"name": "mobile-core-sim", "version": "2026.11",
                                                                  "lock": digest}
    assert f"mobile-core-sim 2026.11 (lock {digest})" in comparison_markdown(doc)
    b = board([sample, same], resamples=20)
    assert [r["suite"]["lock"] for r in b["runs"]] == [digest, digest]
    assert f"Suite lock: {digest} (every run)." in board_markdown(b)
    assert f"suite lock: <b>{digest} (every run)</b>" in header_html(b)
    plain = load_run(REPO / "data" / "sample-run")
    assert "lock" not in compare_runs(plain, plain, n_boot=50)["run_a"]["suite"]
