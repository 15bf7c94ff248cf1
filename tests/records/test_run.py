"""Run: its short repr, its HTML card in Jupyter, the readable attempts view and evidence look-up."""

from __future__ import annotations

import dataclasses
import re

import pytest

import capbench_nb as cb

from conftest import SAMPLE_RUN, manifest, outcomes, record, write_run

HOSTILE = "<script>alert('run')</script>&amp;\"x\""


def hostile_run(tmp_path):
    doc = manifest([{"task_id": "<b>t1</b>", "repeats": 2, "app": "<img src=x onerror=alert(1)>"}])
    doc["run_id"] = HOSTILE
    doc["suite"] = {"name": "<i>suite</i>", "version": "1&2"}
    doc["config"] = {"model": "<svg onload=alert(2)>", "judge": True, "note": "</td></tr></table><script>x</script>"}
    return cb.load_run(write_run(tmp_path / "run", doc, [record("<b>t1</b>", 1, "S"), record("<b>t1</b>", 2, "A")]))


def test_repr_of_the_sample_run_is_one_short_line_with_the_key_numbers():
    run = cb.load_run(SAMPLE_RUN)
    text = repr(run)
    assert text == ("Run('sim-4759', suite mobile-core-sim@2026.11, partial, 13 tasks x 2-3, "
                    f"{len(run.attempts)} attempts, k=2, 1 anomaly)")
    assert len(text) < 200 and "\n" not in text


def test_repr_stays_short_whatever_the_manifest_holds(tmp_path):
    doc = manifest([("t1", 3), ("t2", 3)], k=None)
    doc["run_id"] = "r" * 5000
    doc["suite"] = {"name": "s" * 5000, "version": "v" * 100}
    run = cb.load_run(write_run(tmp_path / "run", doc, outcomes({"t1": "SSS", "t2": "S"})))
    text = repr(run)
    assert len(text) < 200
    assert "2 tasks x 3" in text and "4 attempts" in text and "k=3" in text and "anomal" not in text
    assert "\u2026" in text  # clipped, and says so


def test_the_dataclass_keeps_its_fields_and_equality():
    run = cb.load_run(SAMPLE_RUN)
    assert [f.name for f in dataclasses.fields(run)] == ["path", "manifest", "plan", "k", "records", "anomalies",
                                                           "hashes", "strict", "evidence_checked", "selection",
                                                           "lock_copy", "drifts"]
    assert run.run_id == "sim-4759" and run == run


def test_html_card_names_the_run_and_escapes_every_run_supplied_string(tmp_path):
    run = hostile_run(tmp_path)
    page = run._repr_html_()
    assert "<script" not in page.lower() and "<img" not in page and "<svg" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(&#x27;run&#x27;)&lt;/script&gt;&amp;amp;&quot;x&quot;" in page
    assert "&lt;svg onload=alert(2)&gt;" in page and "&lt;i&gt;suite&lt;/i&gt;@1&amp;2" in page
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;" in page
    # only our own tags remain
    assert set(re.findall(r"</?([a-z]+)", page)) <= {"div", "table", "caption", "tr", "th", "td", "p", "code"}
    assert repr(run).startswith("Run(" + repr(HOSTILE) + ", suite <i>suite</i>@1&2")  # text, not HTML: as given


def test_html_card_of_the_sample_run_holds_its_identity_and_counts():
    run = cb.load_run(SAMPLE_RUN)
    page = run._repr_html_()
    assert re.search(r"judge</th><td[^>]*>on</td>", page) and "judge=true" not in page  # the judge mode's word
    for text in ("Run sim-4759", "mobile-core-sim@2026.11", "partial", "m-large", "provider=p1",
                 "13 tasks x 2-3 repeats, k=2", f"{len(run.attempts)} counted of {len(run.records)} records",
                 "1 above_planned_repeats", "run.attempts_view()"):
        assert text in page, text


def test_attempts_view_and_evidence_are_run_methods():
    run = cb.load_run(SAMPLE_RUN)
    view = run.attempts_view()
    assert "outcome" in view.columns and "line" not in view.columns
    assert "line" in run.attempts_view(provenance=True).columns
    assert run.evidence("clock.timer.start", 3) == {
        "attempt.json#/setup": {"status": "failed", "duration_ms": 9028, "error": "adb: device not found after reboot"}}
    with pytest.raises(KeyError, match="no counted attempt 9"):
        run.evidence("clock.timer.start", 9)
