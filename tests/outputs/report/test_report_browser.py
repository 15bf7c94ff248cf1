"""report.html in a real browser (headless Chromium): what a reader sees, at 1400 and 420 px."""

from __future__ import annotations

import json
import re

import pytest

from conftest import HOSTILE_TEXTS, REPO, SAMPLE_RUN, cli, hostile_page_run

from capbench_nb.outputs.report.run import build_report

INSPECT_LOG = REPO / "tests" / "data" / "inspect" / "mock_pass_k_with_error.json"
EXPLORER = "#cb-explorer"


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample-report")
    return build_report(SAMPLE_RUN, out, progress=False)


@pytest.fixture(scope="module")
def sim300_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim300")
    run = root / "run"
    assert cli("simulate", "--tasks", "300", "--repeats", "5", "--seed", "1", "--out", run, "--artifacts")[0] == 0
    assert cli("ingest", run)[0] == 0
    return build_report(run, root / "report", progress=False)


@pytest.fixture(scope="module")
def inspect_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("inspect")
    assert cli("import", "inspect", INSPECT_LOG, "--out", root / "run")[0] == 0
    return build_report(root / "run", root / "report", progress=False)


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-page")
    return build_report(hostile_page_run(root / "run"), root / "report", progress=False)


def opened(open_page, path, width=1400):
    visit = open_page(path, width=width)
    visit.page.wait_for_selector(f"{EXPLORER}[data-ready]")
    return visit


def shown_ids(page) -> list[str]:
    return page.eval_on_selector_all(f"{EXPLORER} tr.cbx-row .cbx-open .cbx-id", "els => els.map(e => e.textContent)")


def column(page, index: int) -> list[str]:
    return page.eval_on_selector_all(f"{EXPLORER} tr.cbx-row", f"rows => rows.map(r => r.cells[{index}].textContent)")


def header_index(page, label: str) -> int:
    labels = page.eval_on_selector_all(f"{EXPLORER} thead th", "ths => ths.map(t => t.textContent)")
    return next(i for i, text in enumerate(labels) if text.startswith(label))


@pytest.mark.parametrize("width", [1400, 420])
def test_the_report_loads_offline_without_script_errors(open_page, sample_report, width):
    visit = opened(open_page, sample_report, width=width)
    page = visit.page
    assert visit.requests == [], "the page asked the network for something"
    assert visit.errors == [] and visit.dialogs == []
    assert page.title() == "sim-4759 · capbench-nb report"
    body = page.inner_text("body")
    assert "pass@1" in body and "Showing tasks 1–13 of 13 planned" in body


def test_the_first_screen_is_the_run(open_page, sample_report):
    page = opened(open_page, sample_report).page
    top = page.evaluate("() => document.querySelector('.cb-cards').getBoundingClientRect().bottom")
    assert top < 900, "the headline cards are below the first screen"
    verdict = page.inner_text(".cb-verdict")
    assert verdict.startswith("pass@1 is 63.6% (95% CI 35.4–84.8%) over 11 of 13 planned tasks;")
    assert "8 attempts were ineligible (3 environment, 1 evaluation, 3 skipped and 1 unknown)" in verdict
    facts = page.inner_text(".cb-facts")
    assert "model: m-large" in facts and "suite: mobile-core-sim 2026.11" in facts and "status: partial" in facts


def test_sorting_by_a_column_orders_what_the_reader_sees(open_page, sample_report):
    page = opened(open_page, sample_report).page
    i = header_index(page, "successes")
    page.click(f"{EXPLORER} thead th:nth-child({i + 1}) button")
    values = [int(v) for v in column(page, i)]
    assert values == sorted(values, reverse=True) and values[0] == 2  # numbers sort descending first
    page.click(f"{EXPLORER} thead th:nth-child({i + 1}) button")
    assert [int(v) for v in column(page, i)] == sorted(values)
    page.click(f"{EXPLORER} thead th:nth-child(1) button")  # task ids, ascending
    ids = shown_ids(page)
    assert ids == sorted(ids) and ids[0] == "browser.search.query"
    t = header_index(page, "time to 1st")
    page.click(f"{EXPLORER} thead th:nth-child({t + 1}) button")
    times = column(page, t)
    assert times[0] == "3 min 34 s" and times[-1] == "n/a"  # missing values last


def test_filters_by_outcome_class_label_and_search(open_page, sample_report):
    page = opened(open_page, sample_report).page
    page.fill(f"{EXPLORER} input[type=search]", "clock")
    assert shown_ids(page) == ["clock.alarm.create", "clock.timer.start", "clock.stopwatch.lap"]
    page.fill(f"{EXPLORER} input[type=search]", "")
    page.fill(f"{EXPLORER} input[placeholder^='e.g.']", "AS")  # failed first, then succeeded
    assert shown_ids(page) == ["settings.wifi.toggle", "settings.display.dark_mode", "contacts.contact.search"]
    page.fill(f"{EXPLORER} input[placeholder^='e.g.']", "")
    page.select_option(f"{EXPLORER} label:has-text('has an attempt of class') select", "skipped")
    assert shown_ids(page) == ["settings.bluetooth.off"]
    page.select_option(f"{EXPLORER} label:has-text('has an attempt of class') select", "")
    page.select_option(f"{EXPLORER} label:has-text('has a failure stage') select", label="setup")
    assert shown_ids(page) == ["clock.timer.start"]
    page.select_option(f"{EXPLORER} label:has-text('has a failure stage') select", "")
    page.select_option(f"{EXPLORER} label:has-text('label app') select", label="messages")
    assert shown_ids(page) == ["messages.sms.send", "messages.inbox.read_latest"]
    page.check(f"{EXPLORER} label:has-text('has an ineligible attempt') input")
    assert shown_ids(page) == ["messages.inbox.read_latest"]
    page.select_option(f"{EXPLORER} label:has-text('successes in') select", "all")
    assert shown_ids(page) == [] and "No task matches" in page.inner_text(EXPLORER)


def test_labels_are_chips_in_at_most_two_lines(open_page, sample_report):
    page = opened(open_page, sample_report).page
    cell = page.locator(f"{EXPLORER} tr.cbx-row td.cbx-labels").first
    chips = cell.locator(".cbx-chip")
    assert chips.all_inner_texts() == ["settings", "android"]  # the values; each names its label on hover
    assert [chips.nth(j).get_attribute("title") for j in range(2)] == ["app: settings", "platform: android"]
    box, chip = cell.bounding_box(), chips.first.bounding_box()
    assert box["height"] < 3 * chip["height"]  # two lines at most, not the four of wrapped "app: ... platform: ..."


def test_the_tasks_to_look_at_first_open_in_the_explorer(open_page, sample_report):
    page = opened(open_page, sample_report).page
    cards = page.locator(".cb-triage")
    assert [c.split("\n")[0] for c in cards.all_inner_texts()] == [
        "0 tasks never succeeded", "6 inconsistent tasks", "1 quarantine candidate"]  # by hand from the sample run
    cards.nth(2).locator("a.cb-task-link").click()
    assert page.inner_text(f"{EXPLORER} tr.cbx-focus .cbx-open .cbx-id") == "clock.timer.start"


def test_suite_health_links_open_the_task_and_its_columns_filter(open_page, sample_report):
    page = opened(open_page, sample_report).page
    page.click(".cb a.cb-task-link:has-text('clock.timer.start')")  # a quarantine candidate, in the health section
    assert page.inner_text(f"{EXPLORER} tr.cbx-focus .cbx-open .cbx-id") == "clock.timer.start"
    assert page.get_attribute(f"{EXPLORER} tr.cbx-focus .cbx-open", "aria-expanded") == "true"
    assert "attempt 3: environment" in page.inner_text(f"{EXPLORER} tr.cbx-detail")
    assert page.evaluate(f"() => document.querySelector('{EXPLORER} tr.cbx-focus').getBoundingClientRect().top") < 200
    i = header_index(page, "ineligible")
    assert column(page, i)[:2] == ["0 of 3", "3 of 3"] and "quarantine" in page.inner_text(f"{EXPLORER} tr.cbx-focus")
    page.select_option(f"{EXPLORER} label:has-text('consistency') select", label="inconsistent")
    assert len(shown_ids(page)) == 6 and set(column(page, header_index(page, "consistency"))) == {"inconsistent"}
    page.select_option(f"{EXPLORER} label:has-text('consistency') select", "")
    page.select_option(f"{EXPLORER} label:has-text('suite health') select", label="quarantine candidate")
    assert shown_ids(page) == ["clock.timer.start"]


def test_opening_a_task_shows_each_attempt_and_its_evidence_value(open_page, sample_report):
    page = opened(open_page, sample_report).page
    page.fill(f"{EXPLORER} input[type=search]", "clock.timer.start")
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    detail = page.inner_text(f"{EXPLORER} tr.cbx-detail")
    assert "attempt 1: success" in detail and "attempt 2: environment" in detail
    assert "evidence attempt.json#/setup" in detail
    value = json.loads(page.inner_text(f"{EXPLORER} tr.cbx-detail pre.cbx-value"))
    assert value["status"] == "failed" and value["error"]  # the setup object the pointer names
    assert "error: adb: device not found after reboot (attempt.json#/setup)" in detail
    href = page.get_attribute(f"{EXPLORER} tr.cbx-detail .cbx-att:has(pre.cbx-value) .cbx-files a", "href")
    assert href.startswith("../") and href.endswith("/attempts/clock.timer.start/3/attempt.json")
    assert "task wall time" not in detail and "task_wall_ms" in detail  # telemetry named with units
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")  # closes again
    assert page.query_selector(f"{EXPLORER} tr.cbx-detail") is None
    page.fill(f"{EXPLORER} input[type=search]", "messages.inbox.read_latest")  # attempt 1: one tool error
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    first = page.inner_text(f"{EXPLORER} tr.cbx-detail .cbx-att >> nth=0")
    assert "tool_errors\n1 event" in first and "1 events" not in first and "replan_count\n1 event" in first
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")


def test_the_inspect_error_is_shown(open_page, inspect_report):
    page = opened(open_page, inspect_report).page
    page.fill(f"{EXPLORER} input[type=search]", "t5")
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    detail = page.inner_text(f"{EXPLORER} tr.cbx-detail")
    assert "attempt 3: unknown (not eligible)" in detail
    assert "error: RuntimeError('deliberate failure for sample t5 epoch 3')" in detail
    # inspect logs hold no device timings: fields no attempt of the run records are not called missing
    assert "screenshot_capture_ms" not in detail and "device_execution_ms" not in detail
    # the traceback is text with its own line breaks, folded after its first lines, "show all" for the rest
    value = page.locator(f"{EXPLORER} tr.cbx-detail pre.cbx-value")
    folded = value.inner_text()
    assert "traceback:\n  + Exception Group Traceback (most recent call last):\n" in folded and "\\n" not in folded
    assert len(folded.splitlines()) == 13 and folded.endswith("\u2026")
    button = page.locator(f"{EXPLORER} tr.cbx-detail button.cbx-showall")
    assert re.fullmatch(r"show all \d+ lines", button.inner_text())
    button.click()
    assert len(value.inner_text().splitlines()) > 13 and button.count() == 0


def test_the_success_filter_counts_in_the_summarys_words(open_page, sim300_report):
    """'failed every one of 1..k' counts the k-eligible tasks, as the summary's stable fail does; tasks
    without any success (not k-eligible ones included) have an option of their own."""
    doc = json.loads((sim300_report.parent / "metrics.json").read_text(encoding="utf-8"))
    consistency, k = doc["health"]["consistency"], doc["k"]
    page = opened(open_page, sim300_report).page
    menu = f"{EXPLORER} label:has-text('successes in') select"
    options = page.locator(f"{menu} option").all_inner_texts()
    assert f"all {k} succeeded ({consistency['stable_pass']})" in options
    assert f"failed every one of 1..{k} (k-eligible) ({consistency['stable_fail']})" in options
    none_any = int(re.fullmatch(rf"no success in 1\.\.{k} \(any task\) \((\d+)\)",
                                next(o for o in options if o.startswith("no success"))).group(1))
    assert none_any > consistency["stable_fail"]  # the k-eligible ones are some of them
    for value, count in (("none-k", consistency["stable_fail"]), ("all", consistency["stable_pass"]), ("none", none_any)):
        page.select_option(menu, value)
        assert f" of {count} matching (300 planned)" in page.inner_text(f"{EXPLORER} .cbx-status")


def test_all_300_simulated_tasks_are_reachable(open_page, sim300_report):
    page = opened(open_page, sim300_report).page
    seen = []
    while True:
        seen += shown_ids(page)
        if page.is_disabled(f"{EXPLORER} .cbx-pager button:has-text('next')"):
            break
        page.click(f"{EXPLORER} .cbx-pager button:has-text('next')")
    assert len(seen) == len(set(seen)) == 300
    page.select_option(f"{EXPLORER} .cbx-pager select", "1000")
    assert len(shown_ids(page)) == 300
    # a device-execution failure opens with its device_action event resolved
    page.select_option(f"{EXPLORER} label:has-text('has a failure stage') select", label="device_execution")
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    event = json.loads(page.inner_text(f"{EXPLORER} tr.cbx-detail pre.cbx-value"))
    assert event["type"] == "device_action" and event["status"] == "error"


@pytest.mark.parametrize("width", [1400, 420])
def test_hostile_strings_stay_text(open_page, hostile_report, width):
    visit = opened(open_page, hostile_report, width=width)
    page = visit.page
    assert visit.dialogs == [] and visit.errors == [] and visit.requests == []
    assert page.evaluate("() => document.querySelectorAll('img:not(.cb-fig)').length") == 0
    ids = shown_ids(page)
    assert "</script><script>alert('island')</script>" in ids and "<img src=x onerror=alert('img')>" in ids
    assert "line\\u2028sep\\u2029para" in ids and "rtl\\u202eevil\\u202c" in ids  # invisibles made visible
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    detail = page.inner_text(f"{EXPLORER} tr.cbx-detail")
    assert HOSTILE_TEXTS[0] in detail.replace("\\\"", "\"") or "alert('island')" in detail
    links = page.eval_on_selector_all(f"{EXPLORER} tr.cbx-detail a", "as => as.map(a => a.getAttribute('href'))")
    assert links and all(":" not in h and "<" not in h and "#" not in h and "?" not in h for h in links)
    assert "alert('model')" in page.inner_text(".cb-facts")


@pytest.mark.parametrize("fixture", ["sample_report", "sim300_report", "inspect_report"])
def test_nothing_overflows_at_420_px(open_page, request, fixture):
    page = opened(open_page, request.getfixturevalue(fixture), width=420).page
    page.click(f"{EXPLORER} tr.cbx-row .cbx-open")
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    # the report's tables (telemetry, quarantine, outcomes by stage...) are cards here: nothing cut at the side
    cut = page.evaluate("""() => [...document.querySelectorAll('table.cb-table')].filter(t =>
        t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().right > innerWidth).length""")
    assert cut == 0
    label = page.evaluate("""() => getComputedStyle(document.querySelector('table.cb-table td[data-label]'),
        '::before').content""")
    assert label.endswith(': "') and page.evaluate("() => getComputedStyle(document.querySelector("
                                                   "'table.cb-table thead')).display") == "none"
    # task ids may break after a separator only: a <wbr> after each '.', '_', '-', '/' or ':', the text unchanged
    ids = page.evaluate(f"""() => [...document.querySelectorAll('{EXPLORER} .cbx-open .cbx-id')].map(e =>
        [e.textContent, e.querySelectorAll('wbr').length])""")
    assert ids and all(n == len(re.findall(r"[._/:-](?=.)", text)) for text, n in ids), ids[:3]
    # the health scatter is the figure drawn narrow (its own source, 360 px at full size): labels stay legible
    scatter = page.evaluate("""() => [...document.querySelectorAll("picture.cb-pic img[alt^='Per task']")].map(i =>
        [i.currentSrc !== i.src, i.getBoundingClientRect().width])""")
    assert len(scatter) == 1 and scatter[0][0] and 340 <= scatter[0][1] <= 360, scatter


@pytest.mark.parametrize("fixture", ["sample_report", "sim300_report"])
def test_no_hidden_column_at_1400_px(open_page, request, fixture):
    page = opened(open_page, request.getfixturevalue(fixture), width=1400).page
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    hidden = page.evaluate("""() => {
        const table = document.querySelector('#cb-explorer table'), box = table.parentElement.getBoundingClientRect();
        return [...table.querySelectorAll('thead th')].filter(th => {
            const r = th.getBoundingClientRect();
            return r.width < 20 || r.right > box.right + 1 || r.left < box.left - 1;
        }).map(th => th.textContent);
    }""")
    assert hidden == []
    assert page.evaluate("() => [...document.querySelectorAll('img.cb-fig')].every(i => i.getBoundingClientRect().right <= innerWidth)")
