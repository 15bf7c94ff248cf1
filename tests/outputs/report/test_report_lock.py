"""The report's 'Suite lock' section (spec section 12): shown only for a run that names a lock, run data as text."""

from __future__ import annotations

import pytest

import capbench_nb as cb
from capbench_nb.outputs.report.lock import lock_html
from capbench_nb.records.drift import Drift
from conftest import HOSTILE_TEXTS, REPO

DIGEST = "sha256:" + "ab" * 32
LOCK = {"digest": DIGEST, "platform": {"device": "pixel_6", "system_image": {"api": 33, "tag": "google_apis",
                                                                           "abi": "x86_64", "sha256": "ff"}},
        "device_state": {"locale": "en-US", "region": "US", "network": "offline"},
        "apps": [{"package": "net.osmand", "version_code": 4613}]}


def block(findings=(), drifted=0, tasks=()):
    return {"lock": {"digest": DIGEST, "checked": True, "drifted_attempts": drifted, "drifted_tasks": list(tasks),
                     "findings": [{"kind": k, "detail": d} for k, d in findings]}}


def test_a_run_without_a_lock_says_nothing_about_locks():
    assert lock_html({"run_id": "x"}, LOCK) == ""


def test_digest_pins_and_no_banner_without_findings():
    html = lock_html(block(), LOCK)
    assert html.startswith("<h2>Suite lock</h2>") and DIGEST in html
    for text in ("pixel_6", "33 google_apis x86_64", "en-US", "US", "offline", "app net.osmand", "4613"):
        assert text in html
    assert "cb-lock-findings" not in html and "No attempt drifted" in html


def test_findings_as_a_red_banner_and_drifts_linked_to_the_explorer():
    drifts = [Drift("t1", 2, 3, False, ("attempt.json#/preflight/probes/1",), "attempts/t1/2",
                    {"probes": [{"name": "a", "expected": 1, "observed": 1},
                                {"name": "locale", "expected": "en-US", "observed": "en-GB"}]}),
              Drift("t2", 1, 4, True, ("attempt.json#/preflight/lock",), "attempts/t2/1", {"lock": "sha256:old"})]
    html = lock_html(block([("labels", "task 't1': labels differ on 'app'")], 2, ["t1", "t2"]), LOCK, drifts,
                     {"t1": 0, "t2": 5})
    assert 'class="cb-lock-findings"' in html and "#cf222e" in html and "<b>labels</b>" in html
    assert 'href="#cb-explorer-task-0"' in html and 'href="#cb-explorer-task-5"' in html
    assert "locale: expected" in html and "en-GB" in html and "sha256:old" in html
    assert "2 attempts of 2 tasks drifted" in html


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_run_data_reaches_the_html_as_text(text):
    lock = {**LOCK, "platform": {"device": text}, "apps": [{"package": text, "version_code": text}]}
    drifts = [Drift(text, 1, 1, True, ("attempt.json#/preflight/probes/0",), "x",
                    {"probes": [{"name": text, "expected": text, "observed": 0}]})]
    html = lock_html(block([(text, text)], 1, [text]), lock, drifts, {text: 0})
    assert "<script>" not in html and "<img" not in html and "<!--" not in html


def test_the_section_in_chromium(tmp_path, open_page):
    drifts = [Drift("<b>t1</b>", 1, 1, True, ("attempt.json#/preflight/probes/0",), "x",
                    {"probes": [{"name": "locale", "expected": "en-US", "observed": "<img src=x onerror=alert(1)>"}]})]
    html = lock_html(block([("drift_counted", "<script>alert(2)</script>")], 1, ["<b>t1</b>"]), LOCK, drifts,
                     {"<b>t1</b>": 0})
    page_file = tmp_path / "page.html"
    page_file.write_text(f'<!doctype html><meta charset="utf-8">'
                         f'<div class="cb">{html}<div id="cb-explorer-task-0">here</div></div>', encoding="utf-8")
    visit = open_page(page_file)
    page = visit.page
    banner = page.locator(".cb-lock-findings")
    assert banner.is_visible()
    assert page.evaluate("getComputedStyle(document.querySelector('.cb-lock-findings')).backgroundColor") \
        == "rgb(255, 235, 233)"
    assert "<script>alert(2)</script>" in banner.inner_text()
    assert page.locator("a.cb-task-link").inner_text() == "<b>t1</b>"
    assert "<img src=x onerror=alert(1)>" in page.locator("table").last.inner_text()
    assert visit.errors == [] and visit.dialogs == [] and visit.requests == []


@pytest.mark.parametrize("width", [1400, 420])
def test_the_bundled_locked_run_at_1400_and_420_px(tmp_path, open_page, width):
    """data/locked-run's section as the report shows it (show_lock's inputs, the report's stylesheet): its pins
    one line each at 420 px, its six drifted attempts with the probe that failed, nothing cut at the side."""
    from capbench_nb.outputs.html.tables import report_style_html

    run = cb.load_run(REPO / "data" / "locked-run")
    doc = cb.compute_metrics(run)
    positions = {t: i for i, t in enumerate(run.plan["task_id"].tolist())}
    html = lock_html(doc, run.lock_copy, run.drifts, positions)
    page_file = tmp_path / "page.html"
    page_file.write_text(f'<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
                         f'{report_style_html()}<div class="cb">{html}</div>', encoding="utf-8")
    visit = open_page(page_file, width=width)
    page = visit.page
    assert visit.errors == [] and visit.requests == []
    assert page.locator(".cb-lock-findings").count() == 0  # the run meets its lock
    pins = page.locator("table.cb-kv tbody tr")
    assert pins.count() == 13 and pins.first.locator("td").all_inner_texts() == ["device", "pixel_6"]
    after = page.evaluate("() => getComputedStyle(document.querySelector('table.cb-kv td'), '::after').content")
    assert after == ('":"' if width < 760 else "none")  # at 420 px: "device: pixel_6" on one line
    heights = pins.evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)")
    assert max(heights) < 30, heights  # one line per pin, at either width
    drifted = page.locator("table:not(.cb-kv) tbody tr")
    assert drifted.count() == 6 and "expected en-US, observed en-US-drifted" in drifted.first.inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    page.screenshot(path=str(tmp_path / f"lock-{width}.png"), full_page=True)
