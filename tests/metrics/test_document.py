"""metrics.json: contents on the sample run, keys, determinism, atomic writes, verification."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.format import CLASS_KEYS, TELEMETRY_FIELDS
from capbench_nb.metrics.stats import wilson_interval
from capbench_nb.outputs.verify import diff_documents

from conftest import SAMPLE_RUN


@pytest.fixture(scope="module")
def sample_doc():
    return cb.compute_metrics(cb.load_run(SAMPLE_RUN))


def test_sample_run_headline_numbers(sample_doc):
    # Hand-computed from data/sample-run/README.md (k = 2, 13 planned tasks).
    d = sample_doc
    assert d["k"] == 2
    assert d["tasks"] == {"planned": 13, "observed": 12}
    assert d["attempts"] == {
        "total": 34,
        "eligible": 26,
        "by_failure_class": {"success": 15, "agent": 11, "environment": 3, "evaluation": 1, "skipped": 3, "unknown": 1},
    }
    for name, (x, n) in {"pass@1": (7, 11), "pass@k": (8, 9), "pass^k": (2, 9)}.items():
        m = d["metrics"][name]
        low, high = wilson_interval(x, n)
        assert m == {"value": x / n, "successes": x, "n": n, "ci_low": low, "ci_high": high, "coverage": n / 13}
    assert [a["kind"] for a in d["anomalies"]] == ["above_planned_repeats"]
    assert d["anomalies"][0]["task_id"] == "settings.display.dark_mode" and d["anomalies"][0]["attempt"] == 4


def test_sample_run_per_task_spot_checks(sample_doc):
    tasks = {e["task_id"]: e for e in sample_doc["per_task"]}
    assert list(tasks)[0] == "settings.wifi.toggle" and len(tasks) == 13  # plan order
    lap = tasks["clock.stopwatch.lap"]
    # first success is attempt 3; attempt 2 has no token source (no episode.json, history
    # without usage): the token and cost sums are null, the wall time sum is not
    assert lap["first_success_attempt"] == 3
    assert lap["cost_to_first_success"] == {"task_wall_ms": 22971 + 18174 + 14735, "total_tokens": None, "cost": None}
    wifi = tasks["settings.wifi.toggle"]["cost_to_first_success"]
    assert (wifi["task_wall_ms"], wifi["total_tokens"]) == (23742 + 26280, 26743 + 18965)
    assert wifi["cost"] == pytest.approx(0.03451 + 0.030365, abs=1e-12)
    assert tasks["browser.url.open"]["attempts"] == 0
    assert tasks["contacts.contact.create"]["attempts"] == 2  # attempt 3 never ran
    assert tasks["contacts.contact.create"]["oracle_best_score"] == 0.97
    assert tasks["settings.bluetooth.off"]["eligible"] == 0  # all skipped
    assert tasks["settings.bluetooth.off"]["cost_to_first_success"] is None
    assert tasks["clock.timer.start"]["k_eligible"] is False  # attempt 2 did not start
    assert tasks["clock.timer.start"]["oracle_best_score"] is None
    assert tasks["messages.inbox.read_latest"]["k_eligible"] is False  # attempt 2 crashed
    assert tasks["settings.display.dark_mode"]["attempts"] == 3  # attempt 4 is an anomaly


def test_spec_section_7_keys(sample_doc):
    d = sample_doc
    for key in ("schema_version", "run_id", "k", "tasks", "attempts", "metrics", "telemetry",
                "per_task", "anomalies", "provenance"):
        assert key in d
    assert d["schema_version"] == "capbench.metrics/1"
    assert list(d["attempts"]["by_failure_class"]) == list(CLASS_KEYS)
    for name in ("pass@1", "pass@k", "pass^k"):
        assert list(d["metrics"][name]) == ["value", "successes", "n", "ci_low", "ci_high", "coverage"]
    assert list(d["metrics"]["oracle_best_score@k"]) == ["value", "n"]
    assert list(d["telemetry"]) == list(TELEMETRY_FIELDS)
    assert list(d["telemetry"]["recovery_attempted"]) == ["n", "nulls", "true"]
    assert list(d["telemetry"]["task_wall_ms"]) == ["n", "nulls", "sum", "mean", "median", "p90", "min", "max"]
    for entry in d["per_task"]:
        for key in ("task_id", "planned_repeats", "attempts", "eligible", "successes",
                    "first_success_attempt", "cost_to_first_success", "oracle_best_score"):
            assert key in entry
    for entry in d["anomalies"]:
        assert list(entry) == ["kind", "task_id", "attempt", "line", "reason"]


def test_provenance_hashes_are_sha256_of_the_inputs(sample_doc):
    inputs = sample_doc["provenance"]["inputs"]
    for name in ("manifest.json", "results.jsonl"):
        assert inputs[name] == "sha256:" + hashlib.sha256((SAMPLE_RUN / name).read_bytes()).hexdigest()
    assert sample_doc["provenance"]["toolkit_version"] == cb.__version__


def test_byte_identical_for_the_same_inputs(tmp_path):
    run_copy = tmp_path / "copy"
    shutil.copytree(SAMPLE_RUN, run_copy)
    a = cb.write_metrics(cb.load_run(SAMPLE_RUN), tmp_path / "a")
    b = cb.write_metrics(cb.load_run(run_copy), tmp_path / "b")  # another path, same bytes
    assert a.read_bytes() == b.read_bytes()
    assert b"NaN" not in a.read_bytes() and a.read_bytes().endswith(b"}\n")


def test_metrics_json_is_ascii_and_round_trips(tmp_path, sample_doc):
    text = dumps(sample_doc)
    assert text.isascii()
    assert json.loads(text) == sample_doc


def test_write_atomic_replaces_whole_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "metrics.json"
    target.write_text("old\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["metrics.json"]


def test_write_atomic_failure_keeps_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    target.write_text("previous complete output\n")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "half")
    assert target.read_text() == "previous complete output\n"
    assert sorted(os.listdir(tmp_path)) == ["metrics.json"]


def test_verify_agrees_then_catches_an_edit(tmp_path):
    cb.write_metrics(cb.load_run(SAMPLE_RUN), tmp_path)
    assert cb.verify(SAMPLE_RUN, tmp_path) == []
    doc = json.loads((tmp_path / "metrics.json").read_text())
    doc["metrics"]["pass^k"]["value"] = 0.34
    doc["per_task"][3]["successes"] += 1
    (tmp_path / "metrics.json").write_text(json.dumps(doc))
    problems = cb.verify(SAMPLE_RUN, tmp_path)
    assert [p.pointer for p in problems] == ["/metrics/pass^k/value", "/per_task/3/successes"]
    assert problems[0].found == 0.34 and problems[0].expected == pytest.approx(2 / 9)  # the sample's pass^k


def test_diff_documents_reports_missing_extra_and_type_changes():
    found = {"a": 1, "b": [1, 2], "c": True, "x": 0, "p/q": None}
    expected = {"a": 1.0, "b": [1], "c": 1, "y": 0, "p/q": 2}
    out = {(d.pointer, repr(d.found), repr(d.expected)) for d in diff_documents(found, expected)}
    assert out == {
        ("/b/1", "2", "<absent>"),
        ("/c", "True", "1"),
        ("/y", "<absent>", "0"),
        ("/x", "0", "<absent>"),
        ("/p~1q", "None", "2"),
    }


def _count_preparations(monkeypatch) -> list:
    """Every Prepared made from now on, appended to the returned list (Prepared.__init__ wrapped)."""
    from capbench_nb.metrics.prepare import Prepared

    made, original = [], Prepared.__init__

    def counting(self, attempts, plan):
        made.append((len(attempts), len(plan)))
        original(self, attempts, plan)

    monkeypatch.setattr(Prepared, "__init__", counting)
    return made


def test_compute_metrics_prepares_the_run_once(monkeypatch, sample_doc):
    import importlib

    run = cb.load_run(SAMPLE_RUN)
    made = _count_preparations(monkeypatch)
    visits = []
    for name in ("rates", "curves", "health", "telemetry", "selection", "slices", "registry", "prepare"):
        module = importlib.import_module(f"capbench_nb.metrics.{name}")
        if hasattr(module, "prepare"):
            monkeypatch.setattr(module, "prepare", lambda *a, _f=module.prepare, **kw: (visits.append(1), _f(*a, **kw))[1])
    doc = cb.compute_metrics(run, clusters=("app",))
    assert made == [(len(run.records), len(run.plan))]  # one preparation, of the whole run
    assert visits == []  # handed to every metric: none goes back through prepare()
    assert doc["metrics"] == sample_doc["metrics"] and doc["per_task"] == sample_doc["per_task"]


def test_compute_metrics_with_slices_prepares_each_slice_once(monkeypatch):
    run = cb.load_run(SAMPLE_RUN)
    made = _count_preparations(monkeypatch)
    doc = cb.compute_metrics(run, slices=("app", "platform"))
    values = len(doc["slices"]["app"]) + len(doc["slices"]["platform"])
    assert values > 2
    assert made[0] == (len(run.records), len(run.plan)) and len(made) == 1 + values
    assert sorted(n for _, n in made[1:]) == sorted(e["tasks"] for dim in doc["slices"].values() for e in dim)
