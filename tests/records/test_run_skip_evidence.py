"""The skip-evidence option (spec section 8): a run shared without its attempts/ can be read."""

from __future__ import annotations

import json

import pytest

from conftest import manifest, record, write_run

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.records import columnar_reader


def _shared_without_attempts(path):
    """A run whose evidence points into attempts/ that were not shared."""
    recs = [record("t1", 1, "S"),
            record("t1", 2, "E", artifact_dir="attempts/t1/2", failure_stage="setup",
                   evidence=["attempt.json#/setup"]),
            record("t2", 1, "A", artifact_dir="attempts/t2/1", evidence=["episode.json#/events/3"]),
            record("t2", 2, "S")]
    return write_run(path, manifest([("t1", 2), ("t2", 2)]), recs)


@pytest.mark.parametrize("reader", ["columnar", "exact"])
def test_evidence_is_not_resolved_and_the_run_says_so(tmp_path, monkeypatch, reader):
    run_dir = _shared_without_attempts(tmp_path / "run")
    if reader == "exact":
        monkeypatch.setattr(columnar_reader, "read_results_fast", lambda *a, **k: None)
    with pytest.raises(cb.InvalidRunError) as err:
        cb.load_run(run_dir)
    assert err.value.rule == "evidence" and err.value.line == 2
    run = cb.load_run(run_dir, skip_evidence=True)
    assert run.evidence_checked is False and len(run.attempts) == 4
    doc = cb.compute_metrics(run)
    assert doc["provenance"]["evidence_checked"] is False
    assert doc["metrics"]["pass@1"]["successes"] == 1 and doc["metrics"]["pass@1"]["n"] == 2


def test_a_checked_run_says_evidence_checked_true(tmp_path):
    run = cb.load_run(write_run(tmp_path / "run", manifest([("t1", 1)]), [record("t1", 1, "S")]))
    assert run.evidence_checked is True
    assert cb.compute_metrics(run)["provenance"]["evidence_checked"] is True


@pytest.mark.parametrize("reader", ["columnar", "exact"])
def test_every_other_rule_still_holds(tmp_path, monkeypatch, reader):
    recs = [record("t1", 1, "A", artifact_dir="../outside", evidence=["attempt.json#/setup"])]
    run_dir = write_run(tmp_path / "run", manifest([("t1", 1)]), recs)
    if reader == "exact":
        monkeypatch.setattr(columnar_reader, "read_results_fast", lambda *a, **k: None)
    with pytest.raises(cb.InvalidRunError) as err:
        cb.load_run(run_dir, skip_evidence=True)
    assert err.value.rule == "artifact-dir"
    stage_without_evidence = [record("t1", 1, "A", artifact_dir="attempts/t1/1", failure_stage="device_execution")]
    run_dir = write_run(tmp_path / "run2", manifest([("t1", 1)]), stage_without_evidence)
    with pytest.raises(cb.InvalidRunError) as err:
        cb.load_run(run_dir, skip_evidence=True)
    assert err.value.rule == "stage-needs-evidence"


def test_cli_metrics_and_verify_with_skip_evidence(tmp_path, capsys):
    run_dir = _shared_without_attempts(tmp_path / "run")
    assert main(["metrics", str(run_dir), "--out", str(tmp_path / "plain")]) == 2
    assert "[rule: evidence]" in capsys.readouterr().err
    assert main(["metrics", str(run_dir), "--out", str(tmp_path / "out"), "--skip-evidence"]) == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert doc["provenance"]["evidence_checked"] is False
    capsys.readouterr()
    assert main(["report", str(run_dir), "--out", str(tmp_path / "report"), "--skip-evidence", "--no-progress"]) == 0
    summary = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "evidence references were not resolved (--skip-evidence)" in summary
    assert main(["verify", str(run_dir), "--out", str(tmp_path / "report")]) == 0  # summary.md checked too
    capsys.readouterr()
    # verify recomputes the way the metrics.json found says it was computed
    assert main(["verify", str(run_dir), "--out", str(tmp_path / "out")]) == 0
    assert "verified" in capsys.readouterr().out
