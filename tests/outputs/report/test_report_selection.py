"""The report's best-of-k section (outputs.report.selection) and summary.md's selection sentence: read from
the document, escaped, shown only with a selection file; in headless Chromium at 1400 and 420 px."""

from __future__ import annotations

import re

import pytest

import capbench_nb as cb
from capbench_nb.outputs.report import selection as selection_view
from capbench_nb.outputs.report.run import build_report
from capbench_nb.outputs.summary import selection_rows, selection_sentence, summary_markdown
from conftest import HOSTILE_TEXTS, cli, html_of, manifest, outcomes, pick, write_run, write_selection


@pytest.fixture
def small(tmp_path):
    run = write_run(tmp_path / "run", manifest([("a", 2), ("b", 2), ("c", 2), ("d", 2)]),
                    outcomes({"a": "AS", "b": "SA", "c": "SS", "d": "AA"}))
    write_selection(run, [pick("a", 1, (1, 2), scores=[0.9, 0.1]), pick("b", None, (1, 2)), pick("c", 2, (1, 2)),
                          pick("d", 2, (1, 2))])
    return cb.compute_metrics(cb.load_run(run))


def test_nothing_is_shown_without_a_selection(tmp_path, captured):
    doc = cb.compute_metrics(cb.load_run(write_run(tmp_path / "run", manifest([("a", 1)]), outcomes({"a": "S"}))))
    selection_view.show_selection(doc)
    assert captured == [] and selection_sentence(doc) is None and selection_rows(doc) == []
    assert "selector" not in summary_markdown(doc)


def test_the_section_reads_the_document(small, captured):
    selection_view.show_selection(small)
    html = html_of(captured)
    assert "Best-of-k with a selector" in html and html.count('<img class="cb-fig"') == 2
    assert "25.0%" in html and "selected@k (k = 2)" in html  # selected@k: 1 of 4 (a's pick), the document's
    # missed a success: a (picked the failed attempt 1) and b (abstained), each linked to its plan position
    links = re.findall(r'<a class="cb-task-link" href="#cb-explorer-task-(\d+)">([^<]*)</a>', html)
    assert links == [("0", "a"), ("1", "b")] and "abstained" in html
    assert selection_sentence(small, markdown=False) in html.replace("&#x27;", "'")


def test_selected_at_k_leads_the_first_screen_cards(small, tmp_path):
    from capbench_nb.outputs.report.page import headline_html

    labels = re.findall(r'<div class="cb-label">([^<]*)</div>', headline_html(small))
    assert labels[:2] == ["selected@k (k = 2, selector)", "pass@1"]
    card = re.search(r'selected@k \(k = 2, selector\)</div><div class="cb-value">([^<]*)</div>'
                     r'<div class="cb-detail">([^<]*)</div>', headline_html(small))
    assert card.group(1) == "25.0%" and card.group(2).startswith("1/4 tasks")
    plain = cb.compute_metrics(cb.load_run(write_run(tmp_path / "plain", manifest([("a", 1)]), outcomes({"a": "S"}))))
    assert "selector" not in headline_html(plain)


def test_summary_md_states_selected_at_k_beside_pass_at_1_and_pass_at_k(small):
    text = summary_markdown(small)
    assert ("over the 4 tasks that enter, selected@k is 25.0% (1/4; 95% Wilson interval [4.6%, 69.9%]) beside "
            "pass@1 50.0% and pass@k 75.0% on the same tasks: a gap of 50.0 percentage points to pass@k") in text
    assert "1 abstention" in text and "| selected@k (k = 2, selector) | 25.0% | 1 / 4 |" in text


def test_hostile_task_ids_and_selector_stay_text(tmp_path, captured):
    ids = HOSTILE_TEXTS[:4]
    run = write_run(tmp_path / "run", manifest([(t, 1) for t in ids]), outcomes({t: "S" for t in ids}))
    selector = {"name": "<script>alert('sel')</script>", "version": "1 | `x` *y*"}
    write_selection(run, [pick(t, None, (1,), selector=selector) for t in ids])
    doc = cb.compute_metrics(cb.load_run(run))
    selection_view.show_selection(doc)
    html = html_of(captured)
    assert "<script>alert" not in html and "</script><script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;sel&#x27;)&lt;/script&gt;" in html
    text = summary_markdown(doc)
    assert "(\\<script\\>alert('sel')\\</script\\> 1 \\| \\`x\\` \\*y\\*, shown attempts 1..1)" in text


# --------------------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def selector_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("selector-report")
    assert cli("simulate", "--tasks", 24, "--repeats", 3, "--seed", 3, "--out", root / "run", "--selector", 0.5)[0] == 0
    return build_report(root / "run", root / "report", progress=False)


@pytest.mark.parametrize("width", [1400, 420])
def test_the_section_in_the_report_and_its_links_into_the_explorer(open_page, selector_report, width):
    visit = open_page(selector_report, width=width)
    page = visit.page
    page.wait_for_selector("#cb-explorer[data-ready]")
    assert visit.requests == [] and visit.errors == [] and visit.dialogs == []
    assert page.is_visible("#best-of-k-with-a-selector")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width  # nothing overflows the page
    link = page.locator(".cb a.cb-task-link[href^='#cb-explorer-task-']").first
    task = link.inner_text()
    link.click()
    page.wait_for_selector("#cb-explorer tr.cbx-focus")
    assert page.inner_text("#cb-explorer tr.cbx-focus .cbx-id") == task
    assert task in page.inner_text("#cb-explorer tr.cbx-detail .cbx-dhead")  # its attempts are open
    assert cli("verify", selector_report.parent.parent / "run", "--out", selector_report.parent)[0] == 0  # metrics.json's selection block and summary.md agree
