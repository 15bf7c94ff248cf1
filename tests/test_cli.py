"""The ``capbench-nb`` command line: exit codes, one-line errors, outputs, verify, slices and compare.

Most cases call ``capbench_nb.cli.main`` in-process (with capsys); a few go
through a real subprocess (``python -m capbench_nb.cli`` and the installed
``capbench-nb`` console script).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE_RUN, check_error, cli, encode_lines, failed_record, full_record, outcomes
from conftest import manifest as plan_manifest
from conftest import write_run as write_outcomes_run

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.io.atomic import dumps
from capbench_nb.outputs.summary import headline_lines
from capbench_nb.simulation.writer import simulate_run

# --------------------------------------------------------------------------- helpers

ARTIFACT_DIR = "attempts/t1/1"
TELEMETRY = {
    "task_wall_ms": 48210, "setup_ms": 2310, "tool_calls": 4, "device_actions": 3, "llm_calls": 5,
    "input_tokens": 9100, "output_tokens": 840, "total_tokens": 9940, "cached_input_tokens": 6000,
    "reasoning_tokens": None, "time_to_first_token_ms": 640, "device_execution_ms": 320,
    "screenshot_capture_ms": 210, "tool_errors": 1, "replan_count": 0,
    "recovery_attempted": False, "recovery_succeeded": None,
}


#: conftest's full record with this file's telemetry; a failure here has quality_score 0.1.
record = functools.partial(full_record, base_telemetry=TELEMETRY)
failed = functools.partial(failed_record, base_telemetry=TELEMETRY, quality_score=0.1)


def telemetry(**values) -> dict:
    return dict(TELEMETRY, **values)


def manifest(**plan_overrides) -> dict:
    plan = {
        "repeats_override": None,
        "k": 2,
        "tasks": [{"task_id": "t1", "repeats": 2, "app": "a"}, {"task_id": "t2", "repeats": 2, "app": "b"}],
    }
    plan.update(plan_overrides)
    return {"schema_version": "capbench.run/1", "run_id": "cli-run", "status": "completed",
            "suite": {"name": "s", "version": "1"}, "config": {"judge": True}, "plan": plan}


VALID_LINES = [record("t1", 1), "", failed("t1", 2), record("t2", 1)]


def write_run(root: Path, lines=VALID_LINES, *, manifest_text=None, name="run") -> Path:
    run = root / name
    run.mkdir()
    (run / "manifest.json").write_text(manifest_text if manifest_text is not None else json.dumps(manifest(), indent=2))
    (run / "results.jsonl").write_bytes(encode_lines(lines))
    art = run / ARTIFACT_DIR
    art.mkdir(parents=True)
    (art / "attempt.json").write_text(json.dumps({"setup": {"status": "failed"}, "list": [1, 2]}))
    return run


def snapshot(directory: Path) -> dict:
    """Every path under ``directory`` with the sha256 of each file (None for directories)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return out


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, f"expected exactly one line, got {lines!r}"
    assert text.endswith("\n")
    return lines[0]


# --------------------------------------------------------------------------- invalid input table

# (lines, line, rule): the invalid record is on ``line``; line 2 is blank in most cases.
INVALID_CASES = [
    pytest.param([record("t1", 1), "", "{not json"], 3, "json", id="json"),
    pytest.param([record("t1", 1), "", json.dumps(record("t2", 1, quality_score=float("nan")))], 3, "json-nan",
                 id="json-nan"),
    pytest.param([record("t1", 1), "", json.dumps(record("t2", 1))[:50].encode()], 3, "truncated-line",
                 id="truncated-line"),
    pytest.param([b"\xef\xbb\xbf" + json.dumps(record("t1", 1)).encode() + b"\n", record("t2", 1)], 1, "bom",
                 id="bom"),
    pytest.param([record("t1", 1), "", b'{"task_id": "t\xff2"}\n'], 3, "utf-8", id="utf-8"),
    pytest.param([record("t1", 1), "", "[1, 2, 3]"], 3, "record-type", id="record-type"),
    pytest.param([record("t1", 1), "", {k: v for k, v in record("t2", 1).items() if k != "agent_eligible"}], 3,
                 "missing-field", id="missing-field"),
    pytest.param([record("t1", 1), "", record("t2", 1, telemetry=telemetry(task_wall_ms="fast"))], 3, "type",
                 id="type-telemetry-string"),
    pytest.param([record("t1", 1), "", record("t2", 1, telemetry=telemetry(tool_calls=True))], 3, "type",
                 id="type-count-bool"),
    pytest.param([record("t1", 1), "", record("t2", 1.0)], 3, "attempt", id="attempt-float"),
    pytest.param([record("t1", 1), "", record("t2", 1, telemetry=telemetry(setup_ms=-1))], 3, "negative",
                 id="negative"),
    pytest.param([record("t1", 1), "", record("t2", 1, telemetry=telemetry(total_tokens=2**53))], 3,
                 "number-too-large", id="number-too-large"),
    pytest.param([record("t1", 1), "", record("t2", 1, quality_score=1.5)], 3, "quality-score", id="quality-score"),
    pytest.param([record("t1", 1), "", failed("t2", 1, failure_class="crash")], 3, "failure-class",
                 id="failure-class"),
    pytest.param([record("t1", 1), "", record("t2", 1, agent_eligible=False)], 3, "success-implies-eligible",
                 id="success-implies-eligible"),
    pytest.param([record("t1", 1), "", failed("t2", 1, failure_class="")], 3, "failure-needs-class",
                 id="failure-needs-class"),
    pytest.param([record("t1", 1), "", failed("t2", 1, failure_class="skipped")], 3, "class-implies-ineligible",
                 id="class-implies-ineligible"),
    pytest.param([record("t1", 1), "", failed("t2", 1, failure_stage="device_execution")], 3,
                 "stage-needs-evidence", id="stage-needs-evidence"),
    pytest.param([record("t1", 1), "", record("t2", 1, cost=0.3)], 3, "cost-needs-source", id="cost-needs-source"),
    pytest.param([record("t1", 1), "", record("t2", 1), failed("t1", 1)], 4, "duplicate-attempt",
                 id="duplicate-attempt"),
    pytest.param([record("t1", 1), "", record("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["attempt.json#/list/2"])],
                 3, "evidence", id="evidence-index-past-end"),
    pytest.param([record("t1", 1), "", record("t2", 1, artifact_dir=ARTIFACT_DIR, evidence=["../../../manifest.json#"])],
                 3, "evidence", id="evidence-dotdot"),
    pytest.param([record("t1", 1), "", record("t2", 1, artifact_dir="../elsewhere")], 3, "artifact-dir",
                 id="artifact-dir"),
]


@pytest.mark.parametrize("lines,line,rule", INVALID_CASES)
def test_metrics_on_invalid_input_exits_2_with_one_line(tmp_path, capsys, lines, line, rule):
    run = write_run(tmp_path, lines)
    before = snapshot(run)
    rc = main(["metrics", str(run)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    message = one_line(err)
    assert f"{run / 'results.jsonl'}:{line}:" in message
    assert f"[rule: {rule}]" in message
    assert message.startswith("capbench-nb: error:")
    assert "Traceback" not in err
    assert not (run / "metrics.json").exists()
    assert snapshot(run) == before


@pytest.mark.parametrize("lines,line,rule", INVALID_CASES)
def test_metrics_allow_invalid_lists_the_line_and_warns(tmp_path, capsys, lines, line, rule):
    run = write_run(tmp_path, lines)
    before = snapshot(run)
    rc = main(["metrics", str(run), "--allow-invalid"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.splitlines()[0] == str(run / "metrics.json")  # then the headline
    warning = one_line(err)
    assert "warning" in warning and "1 invalid line" in warning
    doc = json.loads((run / "metrics.json").read_text())
    invalid = [a for a in doc["anomalies"] if a["kind"] == "invalid_line"]
    assert len(invalid) == 1
    assert invalid[0]["line"] == line
    assert rule in invalid[0]["reason"]
    assert set(invalid[0]) >= {"kind", "task_id", "attempt", "line", "reason"}
    assert doc["anomaly_counts"]["invalid_line"] == 1
    after = snapshot(run)
    assert after.pop("metrics.json") is not None
    assert after == before  # nothing else created or changed
    # verify re-reads with the option metrics.json was written with
    assert main(["verify", str(run)]) == 0
    capsys.readouterr()


def test_allow_invalid_anomaly_carries_readable_ids(tmp_path, capsys):
    lines = [record("t1", 1), "", record("t2", 1, agent_eligible=False), "{broken"]
    run = write_run(tmp_path, lines)
    assert main(["metrics", str(run), "--allow-invalid"]) == 0
    assert "2 invalid line" in capsys.readouterr().err
    doc = json.loads((run / "metrics.json").read_text())
    assert doc["anomalies"] == [
        {"kind": "invalid_line", "task_id": "t2", "attempt": 1, "line": 3,
         "reason": doc["anomalies"][0]["reason"]},
        {"kind": "invalid_line", "task_id": None, "attempt": None, "line": 4,
         "reason": doc["anomalies"][1]["reason"]},
    ]
    assert "[rule: success-implies-eligible]" in doc["anomalies"][0]["reason"]
    assert "[rule: json]" in doc["anomalies"][1]["reason"]
    # an invalid line enters no count
    assert doc["attempts"]["total"] == 1
    assert doc["tasks"]["observed"] == 1


def test_allow_invalid_with_every_line_invalid_still_writes_metrics(tmp_path, capsys):
    run = write_run(tmp_path, ["{bad", "[]"])
    assert main(["metrics", str(run), "--allow-invalid"]) == 0
    capsys.readouterr()
    doc = json.loads((run / "metrics.json").read_text())
    assert [a["line"] for a in doc["anomalies"]] == [1, 2]
    assert doc["attempts"]["total"] == 0
    assert doc["metrics"]["pass@1"]["value"] is None


def test_clean_run_prints_no_warning(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run), "--allow-invalid"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[0] == str(run / "metrics.json")
    assert json.loads((run / "metrics.json").read_text())["anomalies"] == []


MANIFEST_CASES = [
    pytest.param('{\n  "schema_version": "capbench.run/1",\n  oops\n}', ":3:", "json", id="manifest-json"),
    pytest.param(json.dumps(dict(manifest(), status="done")), "#/status:", "status", id="manifest-status"),
    pytest.param(json.dumps(manifest(k=1)), "#/plan/k:", "plan-k", id="manifest-plan-k"),
    pytest.param(json.dumps(manifest(tasks=[])), "#/plan/tasks:", "plan-empty", id="manifest-plan-empty"),
]


@pytest.mark.parametrize("text,location,rule", MANIFEST_CASES)
def test_metrics_on_invalid_manifest(tmp_path, capsys, text, location, rule):
    run = write_run(tmp_path, manifest_text=text)
    before = snapshot(run)
    rc = main(["metrics", str(run), "--allow-invalid"])  # the manifest is always strict
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    message = one_line(err)
    assert f"{run / 'manifest.json'}{location}" in message
    assert f"[rule: {rule}]" in message
    assert not (run / "metrics.json").exists()
    assert snapshot(run) == before


@pytest.mark.parametrize(
    "setup,rule",
    [
        pytest.param(lambda run: (run / "results.jsonl").unlink(), "results-missing", id="results-missing"),
        pytest.param(lambda run: (run / "manifest.json").unlink(), "manifest-missing", id="manifest-missing"),
    ],
)
def test_metrics_on_missing_input_file(tmp_path, capsys, setup, rule):
    run = write_run(tmp_path)
    setup(run)
    assert main(["metrics", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"[rule: {rule}]" in one_line(err)


def test_metrics_on_missing_run_dir(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "nope")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    message = one_line(err)
    assert str(tmp_path / "nope") in message and "[rule: run-dir]" in message
    assert not (tmp_path / "nope").exists()


def test_error_with_control_characters_stays_on_one_line(tmp_path, capsys):
    run = write_run(tmp_path, [record("t1", 1), failed("t2", 1, failure_class="bad\nclass\u2028x\r")])
    assert main(["metrics", str(run)]) == 2
    out, err = capsys.readouterr()
    message = one_line(err)
    assert ":2:" in message and "[rule: failure-class]" in message


def test_failure_stage_array_exits_2_not_traceback(tmp_path, capsys):
    run = write_run(tmp_path, [record("t1", 1), failed("t2", 1, failure_stage=["setup"])])
    assert main(["metrics", str(run)]) == 2
    assert "[rule:" in one_line(capsys.readouterr().err)


# --------------------------------------------------------------------------- outputs


def test_metrics_writes_into_the_run_dir_by_default(tmp_path, capsys):
    run = write_run(tmp_path)
    before = snapshot(run)
    assert main(["metrics", str(run)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == str(run / "metrics.json") and err == ""
    after = snapshot(run)
    assert after.pop("metrics.json") is not None
    assert after == before


def test_metrics_out_writes_only_out_metrics_json(tmp_path, capsys):
    run = write_run(tmp_path)
    out_dir = tmp_path / "reports" / "nested"
    before = snapshot(run)
    assert main(["metrics", str(run), "--out", str(out_dir)]) == 0
    out, _ = capsys.readouterr()
    path, *headline = out.splitlines()
    assert path == str(out_dir / "metrics.json")
    assert snapshot(run) == before
    assert sorted(p.name for p in out_dir.iterdir()) == ["metrics.json"]
    doc = json.loads((out_dir / "metrics.json").read_text())
    # then the headline, from the document written: one line per headline rate
    assert headline == headline_lines(doc) and [line.split(" is ")[0] for line in headline] == [
        "pass@1", f"pass@k (k = {doc['k']})", f"pass^k (k = {doc['k']})"]
    p1 = doc["metrics"]["pass@1"]
    assert f"({p1['successes']}/{p1['n']} tasks; 95% Wilson interval" in headline[0]
    assert main(["metrics", str(run), "--out", str(out_dir), "--quiet"]) == 0
    assert capsys.readouterr().out == f"{out_dir / 'metrics.json'}\n"
    assert doc["run_id"] == "cli-run" and doc["k"] == 2


def test_metrics_json_is_deterministic_and_hashes_the_inputs(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run), "--out", str(tmp_path / "a")]) == 0
    assert main(["metrics", str(run), "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    first = (tmp_path / "a" / "metrics.json").read_bytes()
    assert first == (tmp_path / "b" / "metrics.json").read_bytes()
    inputs = json.loads(first)["provenance"]["inputs"]
    for name in ("manifest.json", "results.jsonl"):
        assert inputs[name] == "sha256:" + hashlib.sha256((run / name).read_bytes()).hexdigest()


def test_metrics_out_is_an_existing_file(tmp_path, capsys):
    run = write_run(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert main(["metrics", str(run), "--out", str(blocker)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert one_line(err).startswith("capbench-nb: error:")
    assert blocker.read_text() == "x"


# --------------------------------------------------------------------------- verify


def test_verify_fresh_outputs(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    capsys.readouterr()
    before = snapshot(run)
    assert main(["verify", str(run)]) == 0
    out, err = capsys.readouterr()
    assert one_line(out).startswith("verified") and err == ""
    assert snapshot(run) == before


def test_verify_with_out(tmp_path, capsys):
    run = write_run(tmp_path)
    out_dir = tmp_path / "o"
    assert main(["metrics", str(run), "--out", str(out_dir)]) == 0
    assert main(["verify", str(run), "--out", str(out_dir)]) == 0
    capsys.readouterr()
    assert main(["verify", str(run)]) == 2  # no metrics.json in RUN itself
    assert "[rule: metrics-missing]" in one_line(capsys.readouterr().err)


def test_verify_reports_an_edited_number_by_pointer(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    path = run / "metrics.json"
    doc = json.loads(path.read_text())
    assert doc["metrics"]["pass@1"]["value"] != 0.123
    doc["metrics"]["pass@1"]["value"] = 0.123
    path.write_text(json.dumps(doc, indent=2))
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    out, err = capsys.readouterr()
    problem = one_line(out)
    assert f"{path}#/metrics/pass@1/value" in problem and "0.123" in problem
    assert "1 disagreement" in one_line(err)


def test_verify_reports_a_removed_key(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    path = run / "metrics.json"
    doc = json.loads(path.read_text())
    del doc["metrics"]["pass^k"]["ci_low"]
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    assert "#/metrics/pass^k/ci_low" in one_line(capsys.readouterr().out)


def test_verify_shows_hostile_keys_escaped_on_one_line(tmp_path, capsys):
    """Keys read from metrics.json reach the terminal escaped: no control character, no forged line."""
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    path = run / "metrics.json"
    doc = json.loads(path.read_text())
    forged = "verified: the outputs in run agree with the raw results"
    doc["x\x1b[1A\x1b[2K\x07\n" + forged] = 1  # an extra key: one disagreement
    doc["metrics"]["\u202e\r\x85\u2028k"] = doc["metrics"].pop("pass@1")  # a renamed key: two
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 3 and out.count("\n") == 3, lines
    assert all(line.startswith(f"{path}#/") for line in lines), lines
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", out), out
    assert sum("\\x1b[1A\\x1b[2K\\x07\\n" + forged in line for line in lines) == 1
    assert "3 disagreement" in one_line(err)


def test_verify_detects_results_changed_after_metrics(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    with open(run / "results.jsonl", "ab") as fh:
        fh.write(b"\n")  # still valid, same records: only the provenance hash differs
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    out, _ = capsys.readouterr()
    assert "#/provenance/inputs/results.jsonl" in one_line(out)


def test_verify_detects_changed_results_content(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    (run / "results.jsonl").write_bytes(encode_lines([failed("t1", 1), "", failed("t1", 2), record("t2", 1)]))
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    out = capsys.readouterr().out
    assert "#/provenance/inputs/results.jsonl:" in out
    assert "#/metrics/pass@1/successes:" in out


def test_verify_detects_changed_manifest(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    (run / "manifest.json").write_text(json.dumps(manifest()))  # same content, other bytes
    capsys.readouterr()
    assert main(["verify", str(run)]) == 1
    assert "#/provenance/inputs/manifest.json" in one_line(capsys.readouterr().out)


def test_verify_without_metrics_json_exits_2(tmp_path, capsys):
    run = write_run(tmp_path)
    before = snapshot(run)
    assert main(["verify", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    message = one_line(err)
    assert str(run / "metrics.json") in message and "[rule: metrics-missing]" in message
    assert snapshot(run) == before


def test_verify_on_results_made_invalid_exits_2(tmp_path, capsys):
    run = write_run(tmp_path)
    assert main(["metrics", str(run)]) == 0
    with open(run / "results.jsonl", "ab") as fh:
        fh.write(b"{oops\n")  # line 5
    capsys.readouterr()
    assert main(["verify", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert ":5:" in one_line(err) and "[rule: json]" in err


def test_verify_metrics_json_not_json_exits_2(tmp_path, capsys):
    run = write_run(tmp_path)
    (run / "metrics.json").write_text("{\n  nope\n")
    assert main(["verify", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "[rule: json]" in one_line(err)


@pytest.mark.parametrize("filename, expected", [
    (None, "capbench-nb: error: No space left on device [rule: os-error]"),
    ("out/metrics.json\n", "capbench-nb: error: out/metrics.json\\n: No space left on device [rule: os-error]"),
], ids=["without-file-name", "with-file-name"])
def test_an_os_error_is_one_line_naming_the_file_when_known(monkeypatch, capsys, filename, expected):
    import errno
    import os

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    monkeypatch.setattr("capbench_nb.outputs.verify.verify", full_disk)  # the CLI imports it when it runs
    assert main(["verify", "run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and one_line(err) == expected


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    "argv",
    [[], ["metrics"], ["verify"], ["frobnicate", "run"], ["metrics", "run", "--bogus"], ["metrics", "--out"]],
    ids=["nothing", "metrics-no-run", "verify-no-run", "unknown-command", "unknown-option", "out-without-dir"],
)
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and "usage:" not in err
    assert err.endswith("[rule: usage]\n") and err.count("\n") == 1 and err.startswith("capbench-nb: error: ")


# --------------------------------------------------------------------------- subprocess


def _run_cli(args, *, console_script=False):
    if console_script:
        exe = Path(sys.executable).parent / "capbench-nb"
        if not exe.exists():
            pytest.skip("the capbench-nb console script is not installed next to this Python")
        cmd = [str(exe), *args]
    else:
        cmd = [sys.executable, "-m", "capbench_nb.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _cases(*ids):
    return [case for case in INVALID_CASES if case.id in ids]


@pytest.mark.parametrize("lines,line,rule", _cases("json", "truncated-line", "duplicate-attempt", "evidence-dotdot"))
def test_subprocess_invalid_input(tmp_path, lines, line, rule):
    run = write_run(tmp_path, lines)
    before = snapshot(run)
    proc = _run_cli(["metrics", str(run)])
    assert proc.returncode == 2
    assert proc.stdout == ""
    message = one_line(proc.stderr)
    assert f"{run / 'results.jsonl'}:{line}:" in message and f"[rule: {rule}]" in message
    assert "Traceback" not in proc.stderr
    assert snapshot(run) == before


def test_subprocess_console_script_metrics_then_verify(tmp_path):
    run = write_run(tmp_path)
    out_dir = tmp_path / "out"
    proc = _run_cli(["metrics", str(run), "--out", str(out_dir)], console_script=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == str(out_dir / "metrics.json")
    proc = _run_cli(["verify", str(run), "--out", str(out_dir)], console_script=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out_dir / "metrics.json").read_text())
    doc["tasks"]["planned"] = 99
    (out_dir / "metrics.json").write_text(json.dumps(doc))
    proc = _run_cli(["verify", str(run), "--out", str(out_dir)], console_script=True)
    assert proc.returncode == 1
    assert "#/tasks/planned" in one_line(proc.stdout)


def test_subprocess_allow_invalid(tmp_path):
    run = write_run(tmp_path, [record("t1", 1), "", "{bad"])
    proc = _run_cli(["metrics", str(run), "--allow-invalid"])
    assert proc.returncode == 0, proc.stderr
    assert "warning" in one_line(proc.stderr)
    anomalies = json.loads((run / "metrics.json").read_text())["anomalies"]
    assert [(a["kind"], a["line"]) for a in anomalies] == [("invalid_line", 3)]


def test_subprocess_usage_error(tmp_path):
    proc = _run_cli([])
    assert proc.returncode == 2
    assert proc.stderr == ("capbench-nb: error: the following arguments are required: COMMAND "
                           "(see capbench-nb --help) [rule: usage]\n")
    proc = _run_cli(["metrics"], console_script=True)
    assert proc.returncode == 2
    assert proc.stderr == ("capbench-nb: error: metrics: the following arguments are required: RUN_DIR "
                           "(see capbench-nb metrics --help) [rule: usage]\n")


# --------------------------------------------------------------------------- slices and compare


def test_metrics_with_slices_writes_them_and_verify_agrees(tmp_path, capsys):
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "app", "--slice", "app",
                 "--slice", "platform"]) == 0
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert list(doc["slices"]) == ["app", "platform"]  # repeated dimensions once, in order
    assert doc["provenance"]["options"]["slices"] == ["app", "platform"]
    expected = cb.compute_metrics(cb.load_run(SAMPLE_RUN), slices=["app", "platform"])
    assert (tmp_path / "metrics.json").read_text() == dumps(expected)
    capsys.readouterr()
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 0
    doc["slices"]["app"][0]["pass@1"]["successes"] += 1
    (tmp_path / "metrics.json").write_text(json.dumps(doc))
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 1
    assert "/slices/app/0/pass@1/successes" in capsys.readouterr().out


def test_unknown_slice_is_one_line_exit_2(tmp_path, capsys):
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "colour"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown slice dimension 'colour'" in err[0] and "app" in err[0]
    assert not (tmp_path / "metrics.json").exists()
    assert main(["report", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "colour"]) == 2
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", ["--slice", "--cluster"])
def test_an_unknown_dimension_creates_no_output_directory(tmp_path, capsys, option):
    out = tmp_path / "new" / "out"
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(out), option, "colour"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("command", ["metrics", "report"])
@pytest.mark.parametrize("option", ["--slice", "--cluster"])
def test_an_unknown_dimension_is_a_usage_error_with_its_rule(tmp_path, command, option):
    """Before, the line was the only usage line without a [rule: ...]."""
    out = tmp_path / "out"
    rc, stdout, err = cli(command, SAMPLE_RUN, "--out", out, option, "colour")
    assert (rc, stdout) == (2, "") and check_error(err, rule="usage")
    assert "unknown slice dimension 'colour'; plan labels: ['app', 'platform']" in err
    assert not out.exists()


def test_quarantine_threshold_and_clusters_are_recorded_and_verified(tmp_path, capsys):
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--quarantine-threshold", "0.7",
                 "--cluster", "app", "--cluster", "app", "--cluster", "model"]) == 0
    text = (tmp_path / "metrics.json").read_text()
    assert text == dumps(cb.compute_metrics(cb.load_run(SAMPLE_RUN), quarantine_threshold=0.7, clusters=["app", "model"]))
    doc = json.loads(text)
    assert doc["provenance"]["options"]["quarantine_threshold"] == 0.7 and doc["health"]["quarantine"] == []
    assert list(doc["health"]["all_attempts_pass_rate"]["clustered"]) == ["app", "model"]
    capsys.readouterr()
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 0  # the file's threshold and clusters
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path), "--quarantine-threshold", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "#/health/quarantine_threshold: found 0.7, recomputed 0.5" in out and "#/health/quarantine/0" in out
    for bad in ("0", "1.5", "nan", "half"):
        with pytest.raises(SystemExit) as exc:
            main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path / "x"), "--quarantine-threshold", bad])
        assert exc.value.code == 2
    assert "--quarantine-threshold" in capsys.readouterr().err
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path / "y"), "--cluster", "colour"]) == 2
    assert "unknown slice dimension 'colour'" in capsys.readouterr().err and not (tmp_path / "y" / "metrics.json").exists()


def test_verify_reports_a_slice_it_cannot_recompute(tmp_path, capsys):
    run = cb.load_run(SAMPLE_RUN)
    cb.register_slice("family", lambda r: r.plan["task_id"].str.split(".").str[0])
    try:
        (tmp_path / "metrics.json").write_text(dumps(cb.compute_metrics(run, slices=["family"])))
    finally:
        from capbench_nb.metrics.slices import unregister_slice

        unregister_slice("family")
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "/slices/family" in out and "recomputed nothing" in out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    a = simulate_run(base / "a", tasks=24, repeats=2, seed=1)
    b = simulate_run(base / "b", tasks=24, repeats=2, seed=2)
    return a, b


def test_compare_writes_the_three_outputs(two_runs, tmp_path, capsys):
    a, b = two_runs
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["comparison.json", "comparison.md", "comparison.html", "comparison.ipynb"])
    doc = json.loads((out / "comparison.json").read_text())
    expected = cb.compare_runs(cb.load_run(a), cb.load_run(b), seed=0)
    assert doc == json.loads(dumps(expected))
    for metric in ("pass@1", "pass@k", "pass^k"):
        p = doc["paired"][metric]
        assert p["both"] + p["a_only"] + p["b_only"] + p["neither"] == p["n_pairs"]
    html = (out / "comparison.html").read_text()
    assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//", html)
    assert capsys.readouterr().out.strip().endswith("comparison.html")


def test_compare_strict_exits_1_on_warnings(tmp_path, capsys, tiny_comparison):
    a = write_outcomes_run(tmp_path / "a", plan_manifest([("t1", 2), ("t2", 2)]), outcomes({"t1": "SS", "t2": "AS"}))
    other = plan_manifest([("t1", 2), ("t3", 2)])
    other["suite"]["version"] = "2"
    b = write_outcomes_run(tmp_path / "b", other, outcomes({"t1": "SA", "t3": "SS"}))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "[suite_version]" in err and "[task_set]" in err
    assert main(["compare", str(a), str(b), "--out", str(out), "--strict", "--no-progress"]) == 1
    assert "with --strict" in capsys.readouterr().err


def test_compare_bad_input_is_exit_2_before_any_notebook(tmp_path, capsys):
    a = write_outcomes_run(tmp_path / "a", plan_manifest([("t1", 2)]), outcomes({"t1": "SS"}))
    b = write_outcomes_run(tmp_path / "b", plan_manifest([("t1", 2)]), ['{"task_id": "t1", "attempt": 1'], trailing_newline=False)
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "truncated-line" in err[0]
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.parametrize("seed, says", [
    ("-1", "argument --seed: must be at least 0, got -1"),  # before: exit 3, numpy's ValueError in cell 2
    ("9007199254740992", "argument --seed: must be at most 9,007,199,254,740,991 (MAX_SAFE_NUMBER)"),
])
def test_compare_seed_out_of_range_is_a_usage_error(two_runs, tmp_path, seed, says):
    out = tmp_path / "cmp"
    rc, stdout, err = cli("compare", *two_runs, "--seed", seed, "--out", out)
    assert (rc, stdout) == (2, "") and check_error(err, rule="usage") and says in err
    assert not out.exists()


# --------------------------------------------------------------------------- compare --allow-diff


@pytest.fixture
def two_models(tmp_path):
    """Two runs of one plan by different models (one `model` warning), and a third that also differs in
    suite version (`suite_version` and `model`)."""
    a = write_outcomes_run(tmp_path / "a", plan_manifest([("t1", 2), ("t2", 2)]), outcomes({"t1": "SS", "t2": "AS"}))
    other = plan_manifest([("t1", 2), ("t2", 2)])
    other["config"]["model"] = "m-other"
    b = write_outcomes_run(tmp_path / "b", other, outcomes({"t1": "SA", "t2": "SS"}))
    other = plan_manifest([("t1", 2), ("t2", 2)])
    other["config"]["model"] = "m-other"
    other["suite"]["version"] = "2"
    c = write_outcomes_run(tmp_path / "c", other, outcomes({"t1": "SA", "t2": "SS"}))
    return a, b, c


def test_compare_strict_allow_diff_passes_when_only_allowed_kinds(two_models, tmp_path, capsys, tiny_comparison):
    a, b, _ = two_models
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--strict", "--no-progress"]) == 1
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--out", str(out), "--strict", "--allow-diff", "model",
                 "--no-progress"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("capbench-nb: warning: [model] (allowed by --allow-diff) ")
    assert captured.out.strip() == str(out / "comparison.html")


def test_compare_strict_allow_diff_fails_on_another_kind(two_models, tmp_path, capsys, tiny_comparison):
    a, _, c = two_models
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(c), "--out", str(out), "--strict", "--allow-diff", "model",
                 "--allow-diff", "judge", "--no-progress"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("capbench-nb: warning: [suite_version] different suite versions")
    assert err[1].startswith("capbench-nb: warning: [model] (allowed by --allow-diff) ")
    assert err[2].startswith("capbench-nb: error: 1 compatibility warning(s) with --strict (suite_version;")
    doc = json.loads((out / "comparison.json").read_text())
    assert [w["code"] for w in doc["compatibility"]["warnings"]] == ["suite_version", "model"]


def test_compare_allow_diff_unknown_kind_is_a_usage_error(two_models, tmp_path, capsys):
    a, b, _ = two_models
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--strict", "--allow-diff", "models"]) == 2
    text = capsys.readouterr().err
    assert check_error(text, rule="usage")  # before: no [rule: ...], unlike every other usage line
    err = text.splitlines()
    assert len(err) == 1 and err[0].startswith('capbench-nb: error: unknown warning kind "models" for --allow-diff')
    assert "model, config, toolkit_version, evaluation_contract [rule: usage]" in err[0]
    assert not out.exists()


def test_compare_help_documents_allow_diff(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--allow-diff KIND" in text and "repeatable; kinds: suite, suite_version" in text


def test_cluster_by_a_one_value_dimension_gives_the_null_interval_and_verify_checks_the_interval(tmp_path, capsys):
    """--cluster model (a config key: one value, one group) gives se, ci_low and ci_high null, never a
    zero-width interval, and the summary's "one group says nothing"; verify recomputes df and the
    t interval and names a tampered bound."""
    from capbench_nb.outputs.summary import summary_markdown

    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--cluster", "model", "--cluster", "app"]) == 0
    doc = json.loads((tmp_path / "metrics.json").read_text())
    rate = doc["health"]["all_attempts_pass_rate"]
    assert rate["clustered"]["model"] == {"se": None, "groups": 1, "df": 0, "ci_low": None, "ci_high": None}
    assert rate["clustered_approximate"]["model"] is None
    app = rate["clustered"]["app"]
    assert app["df"] == 4 and app["ci_low"] < rate["value"] < app["ci_high"]
    summary = summary_markdown(doc)
    assert "clustered by model (1 group): no interval, one group says nothing" in summary
    (tmp_path / "summary.md").write_text(summary)
    capsys.readouterr()
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 0
    app["ci_low"] = 0.0  # a zero-width or widened interval is not what the run gives
    (tmp_path / "metrics.json").write_text(dumps(doc))
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "#/health/all_attempts_pass_rate/clustered/app/ci_low: found 0.0, recomputed 0.43" in out


def test_cluster_with_as_many_groups_as_tasks_is_the_plain_standard_error(tmp_path):
    codes = {f"t{i}": code for i, code in enumerate(["SS", "SA", "AA", "AS", "SS", "AA", "SA", "SS"])}
    tasks = [{"task_id": t, "repeats": 2, "app": f"app-{t}"} for t in codes]
    run_dir = write_outcomes_run(tmp_path / "run", plan_manifest(tasks), outcomes(codes))
    assert main(["metrics", str(run_dir), "--out", str(tmp_path / "out"), "--cluster", "app"]) == 0
    rate = json.loads((tmp_path / "out" / "metrics.json").read_text())["health"]["all_attempts_pass_rate"]
    app = rate["clustered"]["app"]
    assert app["groups"] == rate["n"] == 8 and app["df"] == 7
    assert app["se"] == pytest.approx(rate["se"], rel=1e-12)  # CR1 undoes the sandwich's (T - 1) / T
    # 0.5625 +- t_{0.975, 7} * se; t_{0.975, 7} = 2.364624251592784 (scipy.stats.t.ppf(0.975, 7))
    assert app["ci_low"] == pytest.approx(rate["value"] - 2.364624251592784 * rate["se"], rel=1e-12)
    assert app["ci_high"] == pytest.approx(rate["value"] + 2.364624251592784 * rate["se"], rel=1e-12)


# --------------------------------------------------------------------------- board options (MAX_RESAMPLES)


@pytest.fixture(scope="module")
def store(two_runs, tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "camp"
    assert cli("export", *two_runs, "--out", path)[0] == 0
    return path


def test_board_resamples_above_the_limit_is_refused_before_any_run_is_read(two_runs, store, tmp_path):
    """Before: a MemoryError, as a traceback (--campaign) or a failed notebook (exit 3)."""
    says = "resamples must be an integer from 0 to 1,000,000 (MAX_RESAMPLES), got "
    for where, resamples in ((two_runs, "100000000000"), (["--campaign", store], "3000000000"),
                             ([tmp_path / "missing-a", tmp_path / "missing-b"], "1000001")):
        rc, out, err = cli("board", *where, "--resamples", resamples, "--out", tmp_path / "b")
        assert (rc, out) == (2, "") and check_error(err, rule="board-options") and says + resamples in err
        assert not (tmp_path / "b").exists()
    rc, out, _ = cli("board", "--help")
    assert rc == 0 and "at most 1,000,000 (MAX_RESAMPLES)" in " ".join(out.split())


def test_verify_board_refuses_resamples_above_the_limit_in_board_json(two_runs, tmp_path):
    from capbench_nb.outputs.board.files import write_board

    doc = json.loads(dumps(cb.board(list(two_runs), resamples=10)))
    write_board(doc, tmp_path)
    assert cli("verify-board", tmp_path, *two_runs)[0] == 0
    doc["resamples"] = 10**12  # before: a MemoryError traceback
    (tmp_path / "board.json").write_text(json.dumps(doc), encoding="utf-8")
    rc, out, err = cli("verify-board", tmp_path, *two_runs)
    assert (rc, out) == (2, "") and check_error(err, rule="board-options")
    assert f"{tmp_path}/board.json: cannot recompute this board: resamples must be an integer from 0 to 1,000,000" in err


def test_board_seed_outside_the_number_rule_is_refused(two_runs, tmp_path):
    """board.json records the seed: above 2**53 - 1 it was written as is (and verified) though no JSON reader
    represents it exactly."""
    for seed in ("-1", "9007199254740992"):
        rc, out, err = cli("board", *two_runs, "--seed", seed, "--out", tmp_path / "b")
        assert (rc, out) == (2, "") and check_error(err, rule="board-options")
        assert f"seed must be an integer from 0 to 9,007,199,254,740,991 (MAX_SAFE_NUMBER), got {seed}" in err
        assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("ids, unknown", [(["nosuch"], "nosuch"), (["zz", "sim-1", "nosuch"], "zz")])
def test_board_campaign_names_an_unknown_run_id_before_counting_the_runs(store, tmp_path, ids, unknown):
    """Before, one unknown id said "a board compares at least 2 runs, got 1"; of several, a set's order chose."""
    rc, out, err = cli("board", "--campaign", store, *ids, "--out", tmp_path / "b")
    assert (rc, out) == (2, "") and check_error(err, rule="campaign-unknown-run")
    assert f"run_id '{unknown}' is not in the store" in err
    assert not (tmp_path / "b").exists()
