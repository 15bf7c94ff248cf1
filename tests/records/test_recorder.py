"""RunRecorder: durable, resumable results.jsonl writing for runners (capbench_nb.records.recorder).

What a recorder writes must always be a run that ``load_run`` accepts in
strict mode; a crash may leave at most a truncated final line, which the next
recorder moves aside without losing a byte; resuming records every planned
attempt exactly once.  The crash tests kill a real subprocess
(tests/recorder_writer.py) with SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capbench_nb import InvalidRunError, load_run
from capbench_nb.records.derivation import derive_record
from capbench_nb.records.ingest import attempt_directories, ingest_run, record_line
from capbench_nb.records.run import read_results
from capbench_nb.records.recorder import RunRecorder
from conftest import REPO, SAMPLE_RUN, manifest, record
from recorder_writer import make_record, planned

WRITER = Path(__file__).resolve().parent / "recorder_writer.py"
PLAN = manifest([("t1", 3), ("t2", 3), ("t3", 2)], status="partial")


def results_bytes(run_dir: Path) -> bytes:
    return (run_dir / "results.jsonl").read_bytes()


def ids(run) -> list[tuple[str, int]]:
    return list(zip(run.records["task_id"], run.records["attempt"].astype(int)))


def write_attempt(run_dir: Path, task_id: str, attempt: int, outcome: str = "success") -> Path:
    """Hand-made artifacts of one attempt: ``success``, ``device_error`` or ``setup_failed``."""
    directory = run_dir / "attempts" / task_id / str(attempt)
    directory.mkdir(parents=True)
    doc = {
        "task_id": task_id, "attempt": attempt,
        "setup": {"status": "failed" if outcome == "setup_failed" else "ok", "duration_ms": 1500, "error": None},
        "provider": {"available": True, "error": None},
        "skip": None,
        "agent": {"status": "not_started" if outcome == "setup_failed" else "completed",
                  "task_wall_ms": None if outcome == "setup_failed" else 20000},
        "recovery": None,
        "screenshots": [{"capture_ms": 100}],
        "evaluation": {"judge_enabled": True,
                       "hard_assertions": [{"name": "done", "passed": outcome == "success"}],
                       "judge": {"status": "ok", "verdict": "pass", "score": 0.8, "error": None},
                       "quality_score": 0.8},
    }
    (directory / "attempt.json").write_text(json.dumps(doc), encoding="utf-8")
    if outcome != "setup_failed":
        episode = {"run_metrics": {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100},
                   "events": [{"type": "device_action", "name": "tap", "call_id": "c1", "start_ms": 10,
                               "end_ms": 30, "status": "error" if outcome == "device_error" else "ok"}]}
        (directory / "episode.json").write_text(json.dumps(episode), encoding="utf-8")
    return directory


# --------------------------------------------------------------------------- basic


def test_records_dicts_and_artifacts_into_a_valid_run(tmp_path):
    run_dir = tmp_path / "run"
    write_attempt(run_dir, "t2", 1, "success")
    write_attempt(run_dir, "t2", 2, "device_error")
    absolute = write_attempt(run_dir, "t3", 1, "setup_failed")
    with RunRecorder(run_dir, PLAN) as rec:
        assert rec.record(record("t1", 1, "S", telemetry={"task_wall_ms": 5}))
        assert rec.record(record("t1", 2, "E", extra={"kept": True}))
        assert rec.record_attempt("attempts/t2/1")  # relative to the run directory
        assert rec.record_attempt(Path("attempts/t2/2"))
        assert rec.record_attempt(absolute)
        assert set(rec.recorded) == {("t1", 1), ("t1", 2), ("t2", 1), ("t2", 2), ("t3", 1)}
        assert rec.has("t2", 2) and not rec.has("t2", 3)

    run = load_run(run_dir)  # strict
    assert ids(run) == [("t1", 1), ("t1", 2), ("t2", 1), ("t2", 2), ("t3", 1)]
    assert run.anomalies.empty
    rows = run.records.set_index(["task_id", "attempt"])
    assert bool(rows.loc[("t2", 1), "success"]) and rows.loc[("t2", 1), "artifact_dir"] == "attempts/t2/1"
    assert rows.loc[("t2", 2), "failure_class"] == "agent"
    assert rows.loc[("t2", 2), "failure_stage"] == "device_execution"
    assert json.loads(rows.loc[("t2", 2), "evidence"]) == ["episode.json#/events/0"]
    assert rows.loc[("t3", 1), "failure_class"] == "environment"
    assert rows.loc[("t3", 1), "failure_stage"] == "setup"
    assert rows.loc[("t1", 1), "task_wall_ms"] == 5

    lines = results_bytes(run_dir).decode("utf-8").splitlines(keepends=True)
    assert lines[0] == record_line(record("t1", 1, "S", telemetry={"task_wall_ms": 5}))  # ingest's line format
    assert json.loads(lines[1])["extra"] == {"kept": True}  # unknown fields are kept
    derived = derive_record(run_dir / "attempts/t2/2", run_dir=run_dir, judge_default=True, model="m")
    assert lines[3] == record_line(derived)
    assert json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")) == PLAN  # status left as given


def test_recorder_output_equals_ingest_on_the_sample_run(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run_dir, ignore=shutil.ignore_patterns("results.jsonl"))
    doc = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    with RunRecorder(run_dir, doc) as rec:
        for directory in attempt_directories(run_dir):
            assert rec.record_attempt(directory)
    ingest_run(run_dir, out=tmp_path / "ingested.jsonl")
    recorded = results_bytes(run_dir).decode("utf-8").splitlines()
    assert len(recorded) == len(attempt_directories(run_dir)) > 0
    assert sorted(recorded) == sorted((tmp_path / "ingested.jsonl").read_text(encoding="utf-8").splitlines())
    load_run(run_dir)


def test_empty_run_is_loadable_and_close_can_set_status(tmp_path):
    run_dir = tmp_path / "new" / "run"  # created
    with RunRecorder(run_dir, PLAN) as rec:
        assert load_run(run_dir).records.empty  # loadable while in progress
        rec.close(status="completed")
    assert load_run(run_dir).manifest == {**PLAN, "status": "completed"}
    with pytest.raises(InvalidRunError) as info:
        with RunRecorder(run_dir, PLAN) as rec:
            rec.close(status="done")
    assert info.value.rule == "status"
    assert load_run(run_dir).manifest["status"] == "partial"  # reopening wrote the given manifest; "done" was refused


def test_exit_by_exception_keeps_what_was_recorded(tmp_path):
    with pytest.raises(KeyError):
        with RunRecorder(tmp_path, PLAN) as rec:
            rec.record(record("t1", 1))
            raise KeyError("runner bug")
    run = load_run(tmp_path)
    assert ids(run) == [("t1", 1)] and run.manifest["status"] == "partial"
    with pytest.raises(RuntimeError):
        rec.record(record("t1", 2))


# --------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize(
    "bad, rule",
    [
        (record("t1", 1, "S", agent_eligible=False), "success-implies-eligible"),
        (record("t1", 1, "A", failure_class=""), "failure-needs-class"),
        (record("t1", 0), "attempt"),
        (record("t1", 1, quality_score=float("nan")), "record-json"),
        (record("t1", 1, cost=0.1), "cost-needs-source"),
        (record("t1", 1, artifact_dir="../elsewhere"), "artifact-dir"),
        (record("t1", 1, "A", failure_stage="device_execution", artifact_dir="attempts/t1/1",
                evidence=["episode.json#/events/9"]), "evidence"),
        (record("t1", 1, extra={1, 2}), "record-json"),
        ({"task_id": "t1", "attempt": 1}, "missing-field"),
        (["t1", 1], "record-type"),
    ],
)
def test_invalid_record_raises_and_writes_nothing(tmp_path, bad, rule):
    write_attempt(tmp_path, "t1", 1, "device_error")
    with RunRecorder(tmp_path, PLAN) as rec:
        rec.record(record("t2", 1))
        before = results_bytes(tmp_path)
        with pytest.raises(InvalidRunError) as info:
            rec.record(bad)
        assert info.value.rule == rule
        assert info.value.file.endswith("results.jsonl")
        assert results_bytes(tmp_path) == before
        assert set(rec.recorded) == {("t2", 1)}
        assert rec.record(record("t2", 2))  # the recorder goes on
    assert ids(load_run(tmp_path)) == [("t2", 1), ("t2", 2)]


def test_broken_artifacts_raise_and_write_nothing(tmp_path):
    (tmp_path / "attempts" / "t1" / "1").mkdir(parents=True)
    with RunRecorder(tmp_path, PLAN) as rec:
        with pytest.raises(InvalidRunError) as info:
            rec.record_attempt("attempts/t1/1")
    assert info.value.rule == "artifact-missing"
    assert results_bytes(tmp_path) == b""


def test_non_finite_artifact_values_raise_and_write_nothing(tmp_path):
    directory = write_attempt(tmp_path, "t1", 1)
    text = (directory / "attempt.json").read_text(encoding="utf-8")
    (directory / "attempt.json").write_text(text.replace('"task_wall_ms": 20000', '"task_wall_ms": NaN'))
    with RunRecorder(tmp_path, PLAN) as rec:
        with pytest.raises(InvalidRunError) as info:
            rec.record_attempt(directory)
    assert info.value.rule in ("record-json", "artifact-type")  # the latter once derivation rejects NaN
    assert results_bytes(tmp_path) == b""


def test_unopenable_results_file_is_an_invalid_run(tmp_path):
    (tmp_path / "results.jsonl").mkdir()
    with pytest.raises(InvalidRunError) as info:
        RunRecorder(tmp_path, PLAN).open()
    assert info.value.rule == "results-unreadable"


def test_invalid_manifest_raises_before_touching_the_disk(tmp_path):
    bad = {**PLAN, "plan": {**PLAN["plan"], "k": 3}}  # the smallest planned repeats is 2
    with pytest.raises(InvalidRunError) as info:
        RunRecorder(tmp_path / "run", bad).open()
    assert info.value.rule == "plan-k" and info.value.pointer == "/plan/k"
    with pytest.raises(InvalidRunError) as info:
        RunRecorder(tmp_path / "run", {**PLAN, "config": {"temperature": float("inf")}}).open()
    assert info.value.rule == "manifest-json"
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- resume


def test_resume_skips_identical_rerecords_and_refuses_conflicts(tmp_path):
    write_attempt(tmp_path, "t2", 1, "success")
    with RunRecorder(tmp_path, PLAN) as rec:
        rec.record(record("t1", 1))
        rec.record_attempt("attempts/t2/1")

    resumed = {**PLAN, "status": "completed", "plan": {**PLAN["plan"], "k": None}}  # k null reads as absent
    with RunRecorder(tmp_path, resumed) as rec:
        assert set(rec.recorded) == {("t1", 1), ("t2", 1)}
        before = results_bytes(tmp_path)
        assert rec.record(record("t1", 1)) is False
        assert rec.record(dict(reversed(record("t1", 1).items()))) is False  # key order does not matter
        assert rec.record_attempt("attempts/t2/1") is False
        with pytest.raises(InvalidRunError) as info:
            rec.record(record("t1", 1, "A"))
        assert info.value.rule == "duplicate-attempt"
        assert results_bytes(tmp_path) == before
        assert rec.record(record("t1", 2, "A"))
        assert rec.record(record("t1", 2, "A")) is False  # also within one session

    run = load_run(tmp_path)
    assert ids(run) == [("t1", 1), ("t2", 1), ("t1", 2)]
    assert run.manifest["status"] == "completed"  # the given manifest replaces the stored one


@pytest.mark.parametrize(
    "change",
    [
        {"run_id": "another-run"},
        {"plan": {**PLAN["plan"], "tasks": PLAN["plan"]["tasks"][:2]}},
        {"plan": {**PLAN["plan"], "repeats_override": 2}},
    ],
)
def test_resume_with_another_manifest_is_refused(tmp_path, change):
    with RunRecorder(tmp_path, PLAN) as rec:
        rec.record(record("t1", 1))
    manifest_before = (tmp_path / "manifest.json").read_bytes()
    results_before = results_bytes(tmp_path)
    with pytest.raises(InvalidRunError) as info:
        RunRecorder(tmp_path, {**PLAN, **change}).open()
    assert info.value.rule == "manifest-mismatch"
    assert (tmp_path / "manifest.json").read_bytes() == manifest_before
    assert results_bytes(tmp_path) == results_before


@pytest.mark.skipif(sys.platform == "win32", reason="advisory locks are POSIX only")
def test_a_second_recorder_on_an_open_run_is_refused(tmp_path):
    with RunRecorder(tmp_path, PLAN) as rec:
        with pytest.raises(InvalidRunError) as info:
            RunRecorder(tmp_path, PLAN).open()
        assert info.value.rule == "run-locked"
        assert rec.record(record("t1", 1))
    with RunRecorder(tmp_path, PLAN) as rec:  # released on close
        assert rec.has("t1", 1)


# --------------------------------------------------------------------------- repair


def crash_mid_line(run_dir: Path, fragment: bytes) -> bytes:
    """Simulate a crash while writing: a fragment of a line without its newline."""
    with open(run_dir / "results.jsonl", "ab") as fh:
        fh.write(fragment)
    with pytest.raises(InvalidRunError) as info:
        load_run(run_dir)
    assert info.value.rule == "truncated-line"
    return fragment


def test_truncated_final_line_is_moved_aside_and_the_run_resumes(tmp_path):
    with RunRecorder(tmp_path, PLAN) as rec:
        for attempt in (1, 2):
            rec.record(record("t1", attempt))
    complete = results_bytes(tmp_path)
    line = record_line(record("t1", 3, extra="é")).encode("utf-8")
    first = crash_mid_line(tmp_path, line[:40])

    with RunRecorder(tmp_path, PLAN) as rec:
        assert results_bytes(tmp_path) == complete
        assert (tmp_path / "results.jsonl.truncated").read_bytes() == first
        assert set(rec.recorded) == {("t1", 1), ("t1", 2)}
        assert rec.record(record("t1", 3, extra="é"))
    complete = results_bytes(tmp_path)
    cut = line.index("é".encode("utf-8")) + 1  # inside a two-byte character
    second = crash_mid_line(tmp_path, record_line(record("t2", 1, extra="é")).encode("utf-8")[:cut])

    with RunRecorder(tmp_path, PLAN) as rec:  # a second crash: a second side file
        assert results_bytes(tmp_path) == complete
        assert (tmp_path / "results.jsonl.truncated").read_bytes() == first
        assert (tmp_path / "results.jsonl.truncated1").read_bytes() == second
        assert rec.record(record("t2", 1))
    assert ids(load_run(tmp_path)) == [("t1", 1), ("t1", 2), ("t1", 3), ("t2", 1)]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps(record("t1", 1)), encoding="utf-8")
    with RunRecorder(tmp_path, PLAN) as rec:
        assert rec.has("t1", 1)
        assert rec.record(record("t1", 2))
    assert not list(tmp_path.glob("*.truncated*"))
    assert ids(load_run(tmp_path)) == [("t1", 1), ("t1", 2)]


@pytest.mark.parametrize(
    "content, rule, line",
    [
        ('{"task_id": "t1", "attempt": 1\n{"task_id"', "json", 1),  # a bad line before the last
        ("not json\n", "json", 1),  # an invalid last line that has its newline is not a truncation
        (json.dumps(record("t1", 1)) + " {", "json", 1),  # too much text is not a truncation
        (json.dumps(record("t1", 1, "S", agent_eligible=False)) + "\n", "success-implies-eligible", 1),
        ((json.dumps(record("t1", 1)) + "\n") * 2 + '{"task', "duplicate-attempt", 2),
    ],
)
def test_corruption_is_not_repaired(tmp_path, content, rule, line):
    (tmp_path / "results.jsonl").write_text(content, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        RunRecorder(tmp_path, PLAN).open()
    assert (info.value.rule, info.value.line) == (rule, line)
    assert (tmp_path / "results.jsonl").read_text(encoding="utf-8") == content
    assert not list(tmp_path.glob("*.truncated*"))
    assert not (tmp_path / "manifest.json").exists()  # a refused open writes nothing


# --------------------------------------------------------------------------- durability


def test_one_fsync_per_line_after_the_whole_line(tmp_path, monkeypatch):
    with RunRecorder(tmp_path, PLAN) as rec:
        synced = []
        real_fsync = os.fsync

        def fsync(fd):
            synced.append((fd, results_bytes(tmp_path).endswith(b"\n")))
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        for attempt in (1, 2, 3):
            rec.record(record("t1", attempt))
        rec.record(record("t1", 3))  # already recorded: nothing written, nothing synced
        assert synced == [(rec._fh.fileno(), True)] * 3


def test_short_writes_are_completed(tmp_path):
    class Trickle:  # a file whose write() stores at most 7 bytes, as os.write may
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            return self.fh.write(data[:7])

        def fileno(self):
            return self.fh.fileno()

        def close(self):
            self.fh.close()

    with RunRecorder(tmp_path, PLAN) as rec:
        rec._fh = Trickle(rec._fh)
        rec.record(record("t1", 1))
        rec.record(record("t1", 2))
    assert ids(load_run(tmp_path)) == [("t1", 1), ("t1", 2)]


def test_a_failed_fsync_removes_the_line_and_closes(tmp_path, monkeypatch):
    rec = RunRecorder(tmp_path, PLAN).open()
    rec.record(record("t1", 1))

    def broken(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        rec.record(record("t1", 2))
    monkeypatch.undo()
    assert ids(load_run(tmp_path)) == [("t1", 1)]
    with pytest.raises(RuntimeError):
        rec.record(record("t1", 3))
    with RunRecorder(tmp_path, PLAN) as rec:  # reopen and go on
        assert rec.record(record("t1", 2))


# --------------------------------------------------------------------------- real crashes


def start_writer(run_dir: Path, delay: float, pad: int, die_after: int | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    args = [sys.executable, str(WRITER), str(run_dir), str(delay), str(pad)]
    if die_after is not None:
        args.append(str(die_after))
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def check_crashed_file_then_resume(run_dir: Path, doc: dict, pad: int, *, expect_truncated: bool | None) -> None:
    """(a) the loader sees a valid file or one truncated final line; (b) resume; (c) all once."""
    before = results_bytes(run_dir)
    complete_lines = before.count(b"\n")
    try:
        read_results(run_dir / "results.jsonl", strict=True)
        truncated = False
    except InvalidRunError as exc:  # nothing but a truncated final line
        assert (exc.rule, exc.line) == ("truncated-line", complete_lines + 1), exc
        truncated = True
    if expect_truncated is not None:
        assert truncated is expect_truncated
    records, invalid, _ = read_results(run_dir / "results.jsonl", strict=False)
    assert len(records) == complete_lines and len(invalid) == int(truncated)

    todo = planned(doc)
    with RunRecorder(run_dir, doc) as rec:
        side = run_dir / "results.jsonl.truncated"
        if truncated:  # nothing lost: the cut-off bytes are in the side file
            assert results_bytes(run_dir) + side.read_bytes() == before
        else:
            assert results_bytes(run_dir) == before and not side.exists()
        assert len(rec.recorded) == complete_lines
        written = [rec.record(make_record(task_id, attempt, pad)) for task_id, attempt in todo]
    assert written.count(False) == complete_lines  # identical re-records of the done ones

    run = load_run(run_dir)
    assert sorted(ids(run)) == sorted(todo)  # every planned attempt exactly once
    assert run.anomalies.empty


def wait_for_lines(proc: subprocess.Popen, path: Path, lines: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_bytes().count(b"\n") >= lines):
        if proc.poll() is not None:
            pytest.fail(f"the writer exited early ({proc.returncode}): {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the writer wrote too little in time")
        time.sleep(0.005)


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_sigkill_at_a_random_point_then_resume(tmp_path):
    doc = manifest([(f"task-{i}", 4) for i in range(10)], status="partial")
    RunRecorder(tmp_path, doc).open().close()
    proc = start_writer(tmp_path, delay=0.01, pad=2000)
    try:
        wait_for_lines(proc, tmp_path / "results.jsonl", 5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    check_crashed_file_then_resume(tmp_path, doc, 2000, expect_truncated=None)


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_sigkill_in_the_middle_of_a_line_then_resume(tmp_path):
    doc = manifest([(f"task-{i}", 3) for i in range(6)], status="partial")
    RunRecorder(tmp_path, doc).open().close()
    proc = start_writer(tmp_path, delay=0, pad=3001, die_after=7)  # dies halfway through line 8
    try:
        proc.wait(timeout=15)
    finally:
        proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert results_bytes(tmp_path).count(b"\n") == 7
    check_crashed_file_then_resume(tmp_path, doc, 3001, expect_truncated=True)
