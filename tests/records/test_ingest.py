"""``ingest``: results.jsonl derived from a run's attempt directories (spec sections 1, 4 and 8).

Small hand-made runs (manifest.json + attempts/<dir>/<dir>/) through
``ingest_run`` and the ``capbench-nb ingest`` command, and the sample run in
data/sample-run re-derived from its artifacts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import INGEST_EPISODE as EPISODE
from conftest import INGEST_HISTORY as HISTORY
from conftest import REPO
from conftest import ingest_attempt_doc as attempt_doc
from conftest import ingest_manifest_doc as manifest_doc
from conftest import make_artifact_run as make_run
from conftest import put_attempt as put
from conftest import read_jsonl as read_lines
from conftest import simple_artifact_run as simple_run

from capbench_nb import InvalidRunError, load_run
from capbench_nb.cli import main
from capbench_nb.records.prices import load_price_table
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.ingest import attempt_directories, ingest_run
from capbench_nb.format import TELEMETRY_FIELDS

SAMPLE_RUN = REPO / "data" / "sample-run"

# --------------------------------------------------------------------------- helpers


def snapshot(root: Path) -> dict:
    """Every file and directory under ``root`` with its bytes and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[p.relative_to(root).as_posix()] = (p.read_bytes() if p.is_file() else None, st.st_mtime_ns)
    return out


# --------------------------------------------------------------------------- ingest_run


def test_ingest_writes_one_record_per_attempt_dir(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "attempts" / "README.txt").write_text("not a task dir")
    (run / "attempts" / "t1" / "notes.txt").write_text("not an attempt dir")
    report = ingest_run(run, progress=False)
    assert report.path == run / "results.jsonl"
    assert (report.records, report.errors, report.backup) == (3, 0, None)
    recs = read_lines(run / "results.jsonl")
    assert [(r["task_id"], r["attempt"], r["failure_class"]) for r in recs] == [
        ("t1", 1, ""), ("t1", 2, "agent"), ("t2", 1, "environment")]
    assert recs[1]["failure_stage"] == "device_execution" and recs[1]["evidence"] == ["episode.json#/events/1"]
    assert recs[2]["failure_stage"] == "setup" and recs[2]["evidence"] == ["attempt.json#/setup"]
    assert [r["artifact_dir"] for r in recs] == ["attempts/t1/1", "attempts/t1/2", "attempts/t2/1"]
    for r in recs:
        assert list(r["telemetry"]) == list(TELEMETRY_FIELDS)
        assert (r["cost"], r["cost_source"]) == (None, None)  # no price table named


def test_ingest_output_format(tmp_path):
    run = simple_run(tmp_path / "run")
    ingest_run(run, progress=False)
    raw = (run / "results.jsonl").read_bytes()
    assert raw.endswith(b"\n") and b"\r" not in raw and b"\n\n" not in raw
    assert raw.count(b"\n") == 3
    raw.decode("utf-8")


def test_records_sorted_by_task_then_attempt_regardless_of_directories(tmp_path):
    # Directory names disagree with the ids in every way: ids come from attempt.json.
    run = make_run(tmp_path / "run", {
        "zz/1": ("a.task", 10, "S"),
        "zz/2": ("a.task", 2, "A"),
        "aa/9": ("b.task", 1, "S"),
        "mm/x": ("a.task", 1, "S"),
        "mm/y": ("B.task", 1, "S"),
        "00/0": ("a.task", 3, "K"),
    }, tasks=[("b.task", 10), ("a.task", 10), ("B.task", 10)])
    ingest_run(run, progress=False)
    keys = [(r["task_id"], r["attempt"]) for r in read_lines(run / "results.jsonl")]
    assert keys == [("B.task", 1), ("a.task", 1), ("a.task", 2), ("a.task", 3), ("a.task", 10), ("b.task", 1)]
    recs = {(r["task_id"], r["attempt"]): r for r in read_lines(run / "results.jsonl")}
    assert recs[("a.task", 10)]["artifact_dir"] == "attempts/zz/1"
    assert recs[("b.task", 1)]["artifact_dir"] == "attempts/aa/9"


def test_ids_from_attempt_json_with_any_characters(tmp_path):
    task = "weird/ta|sk *`<b>`* ü"
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps(manifest_doc([(task, 3)])), encoding="utf-8")
    put(run, "dir-name/1", attempt_doc(task, 3, "S"))
    ingest_run(run, progress=False)
    (rec,) = read_lines(run / "results.jsonl")
    assert (rec["task_id"], rec["attempt"], rec["artifact_dir"]) == (task, 3, "attempts/dir-name/1")
    assert "ü" in (run / "results.jsonl").read_text(encoding="utf-8")


def test_attempt_directories_byte_order(tmp_path):
    run = make_run(tmp_path / "run", {"b/2": ("b", 2, "S"), "b/10": ("b", 10, "S"), "a/1": ("a", 1, "S")})
    assert [p.relative_to(run / "attempts").as_posix() for p in attempt_directories(run)] == ["a/1", "b/10", "b/2"]


def test_empty_attempts_gives_empty_results(tmp_path):
    run = make_run(tmp_path / "run", {}, tasks=[("t", 1)])
    report = ingest_run(run, progress=False)
    assert report.records == 0 and (run / "results.jsonl").read_bytes() == b""
    assert len(load_run(run).records) == 0


def test_refuses_to_overwrite_existing_results(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "results.jsonl").write_bytes(b"old bytes\n")
    before = snapshot(run)
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.rule == "output-exists"
    assert info.value.file == str(run / "results.jsonl")
    assert snapshot(run) == before


def test_force_keeps_a_backup_of_the_old_bytes(tmp_path):
    run = simple_run(tmp_path / "run")
    old = b'{"old": "results"}\n\xe2\x9c\x93\n'
    (run / "results.jsonl").write_bytes(old)
    report = ingest_run(run, force=True, progress=False)
    assert report.backup == run / "results.jsonl.bak"
    assert (run / "results.jsonl.bak").read_bytes() == old
    assert len(read_lines(run / "results.jsonl")) == 3
    first = (run / "results.jsonl").read_bytes()
    # a second forced ingest keeps the first backup and adds another
    report2 = ingest_run(run, force=True, progress=False)
    assert report2.backup is not None and report2.backup != report.backup
    assert report2.backup.name.startswith("results.jsonl.bak")
    assert report2.backup.read_bytes() == first
    assert (run / "results.jsonl.bak").read_bytes() == old


def test_force_without_existing_file_makes_no_backup(tmp_path):
    run = simple_run(tmp_path / "run")
    report = ingest_run(run, force=True, progress=False)
    assert report.backup is None
    assert not list(run.glob("results.jsonl.bak*"))


@contextlib.contextmanager
def nearly_full_disk(path: Path):
    """``path``: a 1 MiB tmpfs (root only), or None where mounting is not permitted."""
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], capture_output=True).returncode:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


@pytest.mark.parametrize("full_at", ["backup", "results"])
def test_force_on_a_full_disk_leaves_no_backup_and_the_file_as_it_was(tmp_path, monkeypatch, capsys, full_at):
    """The disk fills while the backup is copied (a real 1 MiB tmpfs holding a 600 KB results.jsonl, or
    where it cannot be mounted a copy failing with ENOSPC halfway), or while the new results.jsonl is
    written: one line, exit 2, results.jsonl unchanged, neither a .bak nor a temporary file beside it."""
    import errno

    from capbench_nb.io import atomic
    from capbench_nb.records import ingest

    def full(*args, **kwargs):
        if full_at == "backup":
            args[1].write(args[0].read(4096))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with nearly_full_disk(tmp_path / "disk") if full_at == "backup" else contextlib.nullcontext() as disk:
        run = simple_run((disk or tmp_path) / "run")
        (run / "results.jsonl").write_bytes(b'{"old": "results"}\n' * 32_000)
        before = snapshot(run)
        if full_at == "results":
            monkeypatch.setattr(ingest, "write_atomic", full)
        elif disk is None:
            monkeypatch.setattr(atomic.shutil, "copyfileobj", full)
        assert main(["ingest", str(run), "--force"]) == 2
        assert capsys.readouterr().err == "capbench-nb: error: No space left on device [rule: os-error]\n"
        assert snapshot(run) == before


def test_out_elsewhere_leaves_the_run_untouched(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "results.jsonl").write_bytes(b"existing\n")  # --out does not care about it
    before = snapshot(run)
    out = tmp_path / "elsewhere" / "derived.jsonl"
    report = ingest_run(run, out=out, progress=False)
    assert report.path == out and out.exists()
    assert snapshot(run) == before
    assert [r["artifact_dir"] for r in read_lines(out)] == ["attempts/t1/1", "attempts/t1/2", "attempts/t2/1"]


def test_out_inside_the_run_changes_only_that_file(tmp_path):
    run = simple_run(tmp_path / "run")
    before = snapshot(run)
    out = run / "derived.jsonl"
    ingest_run(run, out=out, progress=False)
    after = snapshot(run)
    assert set(after) - set(before) == {"derived.jsonl"}
    assert {k: v for k, v in after.items() if k != "derived.jsonl"} == before


def test_out_existing_file_needs_force(tmp_path):
    run = simple_run(tmp_path / "run")
    out = tmp_path / "derived.jsonl"
    out.write_text("x\n")
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, out=out, progress=False)
    assert info.value.rule == "output-exists"
    ingest_run(run, out=out, force=True, progress=False)
    assert (tmp_path / "derived.jsonl.bak").read_text() == "x\n"


def test_ingest_never_changes_attempt_artifacts(tmp_path):
    run = simple_run(tmp_path / "run")
    before = {k: v for k, v in snapshot(run).items() if k.startswith("attempts") or k == "manifest.json"}
    ingest_run(run, progress=False)
    after = {k: v for k, v in snapshot(run).items() if k.startswith("attempts") or k == "manifest.json"}
    assert after == before


# (what to break, file named in the error, rule)
BROKEN = [
    ("missing-attempt", "attempt.json", "artifact-missing"),
    ("attempt-not-json", "attempt.json", "artifact-json"),
    ("episode-not-json", "episode.json", "artifact-json"),
    ("history-truncated", "history.json", "artifact-json"),
    ("attempt-wrong-type", "attempt.json", "artifact-type"),
    ("episode-wrong-type", "episode.json", "artifact-type"),
    ("history-wrong-type", "history.json", "artifact-type"),
]


def break_attempt(d: Path, how: str) -> None:
    if how == "missing-attempt":
        (d / "attempt.json").unlink()
    elif how == "attempt-not-json":
        (d / "attempt.json").write_text("{'task_id': 't1'}")
    elif how == "episode-not-json":
        (d / "episode.json").write_text("episode")
    elif how == "history-truncated":
        (d / "history.json").write_text('{"messages": [')
    elif how == "attempt-wrong-type":
        doc = json.loads((d / "attempt.json").read_text())
        doc["agent"]["status"] = "exploded"
        (d / "attempt.json").write_text(json.dumps(doc))
    elif how == "episode-wrong-type":
        (d / "episode.json").write_text('{"events": {"0": {}}}')
    elif how == "history-wrong-type":
        (d / "history.json").write_text('{"messages": [{"role": "assistant", "usage": {"input_tokens": -1}}]}')


@pytest.mark.parametrize("how, file, rule", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_artifacts_name_the_file(tmp_path, how, file, rule):
    run = simple_run(tmp_path / "run")
    put(run, "t1/1", None, EPISODE, HISTORY)
    break_attempt(run / "attempts" / "t1" / "1", how)
    before = snapshot(run)
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.rule == rule
    assert Path(info.value.file) == run / "attempts" / "t1" / "1" / file
    assert file in str(info.value)
    assert snapshot(run) == before  # nothing written, no temp file left


def test_broken_artifact_with_force_keeps_the_old_results(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "results.jsonl").write_bytes(b"old\n")
    break_attempt(run / "attempts" / "t1" / "2", "episode-not-json")
    with pytest.raises(InvalidRunError):
        ingest_run(run, force=True, progress=False)
    assert (run / "results.jsonl").read_bytes() == b"old\n"


@pytest.mark.parametrize("how, file, rule", BROKEN, ids=[b[0] for b in BROKEN])
def test_allow_invalid_records_broken_attempt_as_unknown(tmp_path, how, file, rule):
    run = simple_run(tmp_path / "run")
    put(run, "t1/1", None, EPISODE, HISTORY)
    break_attempt(run / "attempts" / "t1" / "1", how)
    report = ingest_run(run, allow_invalid=True, progress=False)
    assert (report.records, report.errors) == (3, 1)
    recs = read_lines(run / "results.jsonl")
    assert [(r["task_id"], r["attempt"]) for r in recs] == [("t1", 1), ("t1", 2), ("t2", 1)]
    bad = recs[0]
    assert (bad["success"], bad["agent_eligible"], bad["failure_class"]) == (False, False, "unknown")
    assert bad["failure_stage"] is None and bad["quality_score"] is None
    assert set(bad["ingest_error"]) >= {"file", "rule", "reason"}
    assert bad["ingest_error"]["file"] == file
    assert bad["ingest_error"]["rule"] == rule
    assert isinstance(bad["ingest_error"]["reason"], str) and bad["ingest_error"]["reason"]
    assert all(v is None for v in bad["telemetry"].values()) and bad["telemetry_source"] == {}
    assert (bad["cost"], bad["cost_source"]) == (None, None)
    # evidence only into JSON that resolves
    resolver = EvidenceResolver(run)
    for ref in bad["evidence"]:
        resolver.resolve(bad["artifact_dir"], ref)
    if file == "attempt.json" and rule != "artifact-type":
        assert bad["evidence"] == []
    # the rest of the run is ingested normally
    assert recs[1]["failure_class"] == "agent" and recs[1]["failure_stage"] == "device_execution"
    assert recs[2]["failure_class"] == "environment" and recs[2]["evidence"] == ["attempt.json#/setup"]
    # and the output is what the loader accepts
    run_obj = load_run(run)
    assert len(run_obj.records) == 3
    assert int((run_obj.records["failure_class"] == "unknown").sum()) == 1


def test_allow_invalid_evidence_dropped_when_attempt_json_unreadable(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "attempts" / "t1" / "2" / "attempt.json").write_text('{"task_id": "t1", "attempt": 2,')
    ingest_run(run, allow_invalid=True, progress=False)
    bad = [r for r in read_lines(run / "results.jsonl") if r["attempt"] == 2][0]
    assert bad["evidence"] == [] and bad["ingest_error"]["rule"] == "artifact-json"


def test_allow_invalid_attempt_directory_named_by_a_digit_int_refuses(tmp_path):
    """"²" is a digit to ``str.isdigit`` but no number to ``int``: the ids cannot be told (no traceback)."""
    run = simple_run(tmp_path / "run")
    (run / "attempts" / "t1" / "2").rename(run / "attempts" / "t1" / "²")
    (run / "attempts" / "t1" / "²" / "attempt.json").write_text("{")
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, allow_invalid=True, progress=False)
    assert info.value.rule == "artifact-ids"


def test_allow_invalid_with_nothing_broken_equals_strict(tmp_path):
    run = simple_run(tmp_path / "run")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert ingest_run(run, out=a, progress=False).errors == 0
    assert ingest_run(run, out=b, allow_invalid=True, progress=False).errors == 0
    assert a.read_bytes() == b.read_bytes()
    assert b"ingest_error" not in a.read_bytes()


def test_duplicate_attempt(tmp_path):
    run = make_run(tmp_path / "run", {
        "t1/1": ("t1", 1, "S"),
        "t1/1-retry": ("t1", 1, "A"),
        "t1/2": ("t1", 2, "S"),
    })
    before = snapshot(run)
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.rule == "duplicate-attempt"
    assert "t1" in str(info.value)
    assert "1-retry" in info.value.file or "1-retry" in info.value.message
    assert snapshot(run) == before


def test_duplicate_attempt_across_task_dirs_even_with_allow_invalid(tmp_path):
    run = make_run(tmp_path / "run", {"a/1": ("t1", 1, "S"), "b/1": ("t1", 1, "S")})
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, allow_invalid=True, progress=False)
    assert info.value.rule == "duplicate-attempt"


def test_ingest_is_deterministic(tmp_path):
    run = make_run(tmp_path / "run", {
        "t1/1": ("t1", 1, "S", EPISODE, HISTORY),
        "t1/2": ("t1", 2, "A", EPISODE),
        "tâche/1": ("tâche ✓", 1, "V", EPISODE),
        "t2/1": ("t2", 1, "E"),
        "t3/1": ("t3", 1, "K"),
    })
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    ingest_run(run, out=a, progress=False)
    ingest_run(run, out=b, progress=False)
    assert a.read_bytes() == b.read_bytes()
    # and the same as a copy of the run in another place
    copy_dir = tmp_path / "copy"
    shutil.copytree(run, copy_dir)
    c = tmp_path / "c.jsonl"
    ingest_run(copy_dir, out=c, progress=False)
    assert c.read_bytes() == a.read_bytes()


def test_output_loads_with_load_run(tmp_path):
    run = make_run(tmp_path / "run", {
        "t1/1": ("t1", 1, "S", EPISODE, HISTORY),
        "t1/2": ("t1", 2, "A", EPISODE),
        "t2/1": ("t2", 1, "V", EPISODE),
        "t2/2": ("t2", 2, "E"),
        "t3/1": ("t3", 1, "K"),
        "extra/1": ("not.planned", 1, "S"),
    }, tasks=[("t1", 2), ("t2", 2), ("t3", 1)])
    ingest_run(run, progress=False)
    loaded = load_run(run)
    recs = loaded.records.set_index(["task_id", "attempt"])
    assert len(recs) == 6
    assert recs.loc[("t1", 1), "success"] == True  # noqa: E712 (pandas boolean)
    assert recs.loc[("t2", 1), "failure_class"] == "evaluation"
    assert recs.loc[("t2", 1), "failure_stage"] == "evaluation"
    assert recs.loc[("t1", 1), "total_tokens"] == 9940
    assert recs.loc[("t1", 1), "device_actions"] == 1  # tap; screenshot and pinch excluded
    assert recs.loc[("t1", 1), "tool_calls"] == 3
    assert list(loaded.anomalies["kind"]) == ["task_not_in_plan"]


def test_manifest_judge_false_applies_when_attempt_silent(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps(manifest_doc([("t", 2)], judge=False)), encoding="utf-8")
    doc = attempt_doc("t", 1, "A")           # verdict fail, but the run used --no-judge
    del doc["evaluation"]["judge_enabled"]
    put(run, "t/1", doc)
    doc2 = attempt_doc("t", 2, "V")          # judge error, ignored
    del doc2["evaluation"]["judge_enabled"]
    put(run, "t/2", doc2)
    ingest_run(run, progress=False)
    assert [(r["success"], r["failure_class"]) for r in read_lines(run / "results.jsonl")] == [(True, ""), (True, "")]


def test_manifest_must_be_valid(tmp_path):
    run = simple_run(tmp_path / "run")
    (run / "manifest.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert "manifest.json" in info.value.file
    assert not (run / "results.jsonl").exists()


def test_prices_and_tools_are_applied(tmp_path):
    run = simple_run(tmp_path / "run")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"name": "prices/p1", "version": "v9", "effective_date": "2026-10-01",
                                  "models": {"m-large": {"input": 1e-06, "output": 2e-06}}}), encoding="utf-8")
    from capbench_nb.records.prices import ToolConfig
    ingest_run(run, prices=load_price_table(prices), tools=ToolConfig(frozenset({"pinch"})), progress=False)
    recs = read_lines(run / "results.jsonl")
    assert recs[0]["cost"] == pytest.approx(9100 * 1e-06 + 840 * 2e-06)
    assert recs[0]["cost_source"] == "prices/p1@v9"
    assert recs[0]["telemetry"]["device_actions"] == 1  # pinch only
    assert (recs[2]["cost"], recs[2]["cost_source"]) == (None, None)  # not started: no tokens


def test_progress_default_is_quiet_off_a_terminal(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    ingest_run(run)  # stderr is captured, not a terminal
    assert capsys.readouterr().err == ""


def test_progress_forced(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    ingest_run(run, progress=True)
    err = capsys.readouterr().err
    assert "3/3" in err


def test_attempt_dir_symlinked_outside_the_run_is_refused(tmp_path):
    run = make_run(tmp_path / "run", {"t/1": ("t", 1, "S")}, tasks=[("t", 2)])
    outside = tmp_path / "outside"
    put(outside, "x", attempt_doc("t", 2, "S"))
    os.symlink(outside / "attempts" / "x", run / "attempts" / "t" / "2")
    with pytest.raises(InvalidRunError):
        ingest_run(run, progress=False)
    assert not (run / "results.jsonl").exists()


# -- bugs


@pytest.mark.parametrize("token", ["NaN", "Infinity"])
def test_non_finite_artifact_number_is_an_invalid_run_error(tmp_path, token):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t2" / "1"
    (d / "attempt.json").write_text((d / "attempt.json").read_text().replace('"duration_ms": 500', f'"duration_ms": {token}'))
    assert token in (d / "attempt.json").read_text()
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.file.endswith("attempt.json")


def test_non_finite_artifact_number_with_allow_invalid(tmp_path):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "1"
    (d / "episode.json").write_text(json.dumps(EPISODE).replace('"end_ms": 1530', '"end_ms": NaN'))
    ingest_run(run, allow_invalid=True, progress=False)
    bad = read_lines(run / "results.jsonl")[0]
    assert bad["failure_class"] == "unknown" and bad["ingest_error"]["file"] == "episode.json"


def test_number_too_large_in_artifact_is_refused(tmp_path):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "2"
    (d / "attempt.json").write_text((d / "attempt.json").read_text().replace('"task_wall_ms": 20002',
                                                                                 '"task_wall_ms": 9007199254740993'))
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.rule == "number-too-large"
    assert not (run / "results.jsonl").exists()


def test_number_too_large_in_artifact_names_the_artifact_and_allow_invalid_isolates_it(tmp_path):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "2"
    (d / "attempt.json").write_text((d / "attempt.json").read_text().replace('"task_wall_ms": 20002',
                                                                                 '"task_wall_ms": 9007199254740993'))
    try:
        ingest_run(run, progress=False)
    except InvalidRunError as exc:
        assert exc.file.endswith("attempt.json")
    report = ingest_run(run, allow_invalid=True, progress=False)
    assert report.errors == 1


# --------------------------------------------------------------------------- the sample run


@pytest.fixture(scope="module")
def sample_ingested(tmp_path_factory):
    if not (SAMPLE_RUN / "attempts").is_dir():
        pytest.skip("data/sample-run has no attempt artifacts")
    run = tmp_path_factory.mktemp("sample") / "run"
    shutil.copytree(SAMPLE_RUN, run)
    (run / "results.jsonl").unlink()
    ingest_run(run, progress=False)
    original = {(r["task_id"], r["attempt"]): r for r in read_lines(SAMPLE_RUN / "results.jsonl")}
    derived = {(r["task_id"], r["attempt"]): r for r in read_lines(run / "results.jsonl")}
    runner_classified = {
        key for key, r in original.items()
        if "runner_classification" in json.loads((SAMPLE_RUN / r["artifact_dir"] / "attempt.json").read_text())
    }
    return run, original, derived, runner_classified


COST_FIELDS = ("cost", "cost_source")


def test_sample_same_attempts_in_the_same_order(sample_ingested):
    run, original, derived, _ = sample_ingested
    assert list(derived) == list(original)  # sorted by task then attempt, like the sample
    assert len(derived) == len(attempt_directories(SAMPLE_RUN))


def test_sample_runner_classified_exception_is_documented(sample_ingested):
    _, original, derived, runner_classified = sample_ingested
    readme = (SAMPLE_RUN / "README.md").read_text(encoding="utf-8")
    for task_id, attempt in runner_classified:
        assert task_id in readme
    if ("camera.photo.capture", 2) in original:
        assert ("camera.photo.capture", 2) in runner_classified
        o, d = original[("camera.photo.capture", 2)], derived[("camera.photo.capture", 2)]
        assert (o["failure_class"], o["agent_eligible"]) == ("unknown", True)
        assert (d["failure_class"], d["agent_eligible"]) == ("agent", True)  # no verdict: an agent failure


def test_sample_records_reproduced(sample_ingested):
    """Every record but the runner-classified ones is re-derived, cost aside.

    telemetry_source may name a more specific pointer than the sample (checked
    exactly, and marked as a known mismatch, in the next test).
    """
    _, original, derived, runner_classified = sample_ingested
    compared = 0
    for key, o in original.items():
        if key in runner_classified:
            continue
        d = derived[key]
        skip = COST_FIELDS + ("telemetry_source",)
        assert {k: v for k, v in d.items() if k not in skip} == {k: v for k, v in o.items() if k not in skip}, key
        assert set(d["telemetry_source"]) == set(o["telemetry_source"]), key
        for field, src in o["telemetry_source"].items():
            got = d["telemetry_source"][field]
            assert got == src or got.startswith(src + "/"), (key, field, got, src)
        compared += 1
    assert compared == len(original) - len(runner_classified)


def test_sample_telemetry_source_reproduced_exactly(sample_ingested):
    _, original, derived, runner_classified = sample_ingested
    for key, o in original.items():
        if key not in runner_classified:
            assert derived[key]["telemetry_source"] == o["telemetry_source"], key


def test_sample_costs_reproduced_with_its_price_table(sample_ingested, tmp_path):
    run, original, _, _ = sample_ingested
    costed = {k: r for k, r in original.items() if r["cost"] is not None}
    if not costed:
        pytest.skip("the sample has no cost")
    sources = {r["cost_source"] for r in costed.values()}
    assert len(sources) == 1
    name, _, version = sources.pop().rpartition("@")
    # The sample's prices (scripts/make_sample_run.py): USD per token.
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"name": name, "version": version, "effective_date": version,
                                  "models": {"m-large": {"input": 2.5e-06, "output": 1e-05,
                                                         "cached_input": 6.25e-07}}}), encoding="utf-8")
    out = tmp_path / "priced.jsonl"
    ingest_run(run, out=out, prices=load_price_table(prices), progress=False)
    priced = {(r["task_id"], r["attempt"]): r for r in read_lines(out)}
    for key, o in costed.items():
        assert priced[key]["cost_source"] == o["cost_source"]
        assert priced[key]["cost"] == pytest.approx(o["cost"], abs=1e-6), key
    # every record with tokens gets a cost; none without
    for r in priced.values():
        tel = r["telemetry"]
        has_tokens = tel["input_tokens"] is not None and tel["output_tokens"] is not None
        assert (r["cost"] is not None) == has_tokens == (r["cost_source"] is not None)


def test_sample_ingested_output_loads(sample_ingested):
    run, original, _, _ = sample_ingested
    loaded = load_run(run)
    assert len(loaded.records) == len(original)


# --------------------------------------------------------------------------- CLI


def test_cli_ingest(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    assert main(["ingest", str(run), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(run / "results.jsonl")
    assert err == ""
    assert len(read_lines(run / "results.jsonl")) == 3


def test_cli_ingest_default_progress_is_quiet_off_a_terminal(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    assert main(["ingest", str(run)]) == 0
    assert capsys.readouterr().err == ""


def test_cli_ingest_progress(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    assert main(["ingest", str(run), "--progress"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(run / "results.jsonl")  # stdout stays the path only
    assert "ingest" in err and "3/3" in err


@pytest.mark.parametrize("how, file, rule", BROKEN, ids=[b[0] for b in BROKEN])
def test_cli_ingest_broken_artifacts(tmp_path, capsys, how, file, rule):
    run = simple_run(tmp_path / "run")
    put(run, "t1/1", None, EPISODE, HISTORY)
    break_attempt(run / "attempts" / "t1" / "1", how)
    assert main(["ingest", str(run), "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(run / "attempts" / "t1" / "1" / file) in lines[0]
    assert rule in lines[0]
    assert "Traceback" not in err
    assert not (run / "results.jsonl").exists()


def test_cli_ingest_allow_invalid(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    break_attempt(run / "attempts" / "t1" / "2", "episode-not-json")
    assert main(["ingest", str(run), "--allow-invalid", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(run / "results.jsonl")
    assert "warning" in err and "1 attempt" in err
    bad = read_lines(run / "results.jsonl")[1]
    assert bad["failure_class"] == "unknown" and bad["ingest_error"]["file"] == "episode.json"


def test_cli_ingest_existing_output_and_force(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    (run / "results.jsonl").write_bytes(b"old\n")
    assert main(["ingest", str(run), "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and "output-exists" in err
    assert (run / "results.jsonl").read_bytes() == b"old\n"
    assert main(["ingest", str(run), "--force", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(run / "results.jsonl")
    assert "results.jsonl.bak" in err
    assert (run / "results.jsonl.bak").read_bytes() == b"old\n"
    assert len(read_lines(run / "results.jsonl")) == 3


def test_cli_ingest_out(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    before = snapshot(run)
    target = tmp_path / "out" / "r.jsonl"
    assert main(["ingest", str(run), "--out", str(target), "--no-progress"]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    assert len(read_lines(target)) == 3
    assert snapshot(run) == before


def test_cli_ingest_device_actions(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"device_actions": ["tap", "pinch"], "read_only": ["screenshot"]}), encoding="utf-8")
    assert main(["ingest", str(run), "--device-actions", str(tools), "--no-progress"]) == 0
    assert read_lines(run / "results.jsonl")[0]["telemetry"]["device_actions"] == 2
    # and the default configuration
    assert main(["ingest", str(run), "--out", str(tmp_path / "d.jsonl"), "--no-progress"]) == 0
    assert read_lines(tmp_path / "d.jsonl")[0]["telemetry"]["device_actions"] == 1


def test_cli_ingest_bad_device_actions_file(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    tools = tmp_path / "tools.json"
    tools.write_text('{"device_actions": "tap"}', encoding="utf-8")
    assert main(["ingest", str(run), "--device-actions", str(tools), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "tools-config" in err and str(tools) in err
    assert not (run / "results.jsonl").exists()


def test_cli_ingest_prices(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"name": "prices/p1", "version": "2026-10-01", "effective_date": "2026-10-01",
                                  "models": {"m-large": {"input": 2.5e-06, "output": 1e-05,
                                                         "cached_input": 6.25e-07}}}), encoding="utf-8")
    assert main(["ingest", str(run), "--prices", str(prices), "--no-progress"]) == 0
    recs = read_lines(run / "results.jsonl")
    assert recs[0]["cost_source"] == "prices/p1@2026-10-01"
    assert recs[0]["cost"] == pytest.approx(3100 * 2.5e-06 + 6000 * 6.25e-07 + 840 * 1e-05)
    assert (recs[2]["cost"], recs[2]["cost_source"]) == (None, None)
    assert load_run(run).records["cost"].notna().sum() == 2


@pytest.mark.parametrize("text", ["{", '{"name": "p", "version": "1", "effective_date": "d", "models": {}}'])
def test_cli_ingest_bad_prices_file(tmp_path, capsys, text):
    run = simple_run(tmp_path / "run")
    prices = tmp_path / "prices.json"
    prices.write_text(text, encoding="utf-8")
    assert main(["ingest", str(run), "--prices", str(prices), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "price-table" in err
    assert not (run / "results.jsonl").exists()


def test_cli_ingest_missing_run(tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "nope"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_cli_ingest_duplicate(tmp_path, capsys):
    run = make_run(tmp_path / "run", {"a/1": ("t1", 1, "S"), "b/1": ("t1", 1, "A")})
    assert main(["ingest", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "duplicate-attempt" in err


def test_cli_ingest_non_finite_number_exits_2(tmp_path, capsys):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "1"
    (d / "attempt.json").write_text((d / "attempt.json").read_text().replace('"task_wall_ms": 20001',
                                                                                 '"task_wall_ms": NaN'))
    assert main(["ingest", str(run), "--no-progress"]) == 2


def test_cli_ingest_relative_paths(tmp_path, capsys, monkeypatch):
    simple_run(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", "run", "--no-progress"]) == 0
    assert Path(capsys.readouterr().out.strip()) == Path("run") / "results.jsonl"
    recs = read_lines(tmp_path / "run" / "results.jsonl")
    assert [r["artifact_dir"] for r in recs] == ["attempts/t1/1", "attempts/t1/2", "attempts/t2/1"]
    assert main(["ingest", "run", "--out", "rel.jsonl", "--no-progress"]) == 0
    assert (tmp_path / "rel.jsonl").read_bytes() == (tmp_path / "run" / "results.jsonl").read_bytes()
    assert len(load_run(tmp_path / "run").records) == 3
