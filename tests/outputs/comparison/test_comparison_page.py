"""comparison.html's sections and the Jupyter view (capbench_nb.outputs.comparison.page): verdict wording,
numbers with units, the JSON island, and the page in a real browser (headless Chromium) at 1400 and 420 px."""

from __future__ import annotations

import json
import re

import pytest

import capbench_nb as cb
from capbench_nb.metrics.comparison import compare_runs
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.outputs.comparison.page import (
    FLIPS_PAGE,
    ComparisonView,
    flips_data,
    fmt_pp_interval,
    fmt_telemetry,
    header_html,
    verdict,
)
from capbench_nb.outputs.comparison.run import build_comparison
from capbench_nb.simulation.writer import simulate_run

from conftest import manifest, outcomes, write_run


def entry(*, both, a_only, b_only, neither, ci_low, ci_high, p, k=1):
    """A hand-built paired entry (the fields of comparison.json's ``paired``)."""
    n = both + a_only + b_only + neither
    return {"k": k, "n_pairs": n, "both": both, "a_only": a_only, "b_only": b_only, "neither": neither,
            "a_value": (both + a_only) / n if n else None, "b_value": (both + b_only) / n if n else None,
            "difference": (b_only - a_only) / n if n else None, "ci_low": ci_low, "ci_high": ci_high,
            "method": "x", "mcnemar_p": p}


# =========================================================================== verdicts and units


def test_verdict_not_significant():
    e = entry(both=17, a_only=10, b_only=14, neither=10, ci_low=-0.1098, ci_high=0.2591, p=0.5413)
    assert verdict("pass@1", e) == ("pass@1: B is 7.8 pp higher (95% CI -11.0 to +25.9 pp), McNemar p = 0.54: "
                                    "not significant at 5% (51 paired tasks)")


def test_verdict_significant_and_lower():
    e = entry(both=10, a_only=20, b_only=2, neither=8, ci_low=-0.62, ci_high=-0.25, p=0.0001, k=3)
    text = verdict("pass^k", e)
    assert text.startswith("pass^3: B is 45.0 pp lower (95% CI -62.0 to -25.0 pp), McNemar p = < 0.001: "
                           "significant at 5% (40 paired tasks)")
    assert "borderline" not in text


def test_verdict_says_when_interval_and_test_disagree():
    e = entry(both=10, a_only=1, b_only=7, neither=2, ci_low=0.004, ci_high=0.5, p=0.0703, k=2)
    text = verdict("pass@k", e)
    assert "McNemar p = 0.070: not significant at 5%" in text
    assert text.endswith("the interval excludes 0, so the evidence is borderline")


def test_verdict_on_no_pair_and_on_no_difference():
    none = entry(both=0, a_only=0, b_only=0, neither=0, ci_low=None, ci_high=None, p=None)
    assert verdict("pass@1", none) == "pass@1: no task is paired (none is eligible in both runs), so there is no verdict"
    level = entry(both=5, a_only=0, b_only=0, neither=3, ci_low=-0.3, ci_high=0.3, p=1.0)
    assert verdict("pass@1", level) == ("pass@1: B and A are level (0.0 pp, 95% CI -30.0 to +30.0 pp), "
                                        "McNemar p = 1.00: not significant at 5% (8 paired tasks)")


def test_verdict_level_follows_the_confidence():
    e = entry(both=17, a_only=10, b_only=14, neither=10, ci_low=-0.05, ci_high=0.2, p=0.08)
    text = verdict("pass@1", e, confidence=0.9)
    assert "90% CI" in text and "significant at 10%" in text and "not significant" not in text


def test_units():
    assert fmt_pp_interval(-0.11, 0.263) == "-11.0 to +26.3 pp" and fmt_pp_interval(None, 0.1) == "n/a"
    assert fmt_telemetry("task_wall_ms", 25498.0) == "25.5 s" and fmt_telemetry("task_wall_ms", 185_000) == "3 min 05 s"
    assert fmt_telemetry("task_wall_ms", -1200.0, signed=True) == "-1.2 s"
    assert fmt_telemetry("task_wall_ms", 1200.0, signed=True) == "+1.2 s"
    assert fmt_telemetry("total_tokens", 23915.5) == "23,915.5 tokens"
    assert fmt_telemetry("total_tokens", -155.0, signed=True) == "-155 tokens"
    assert fmt_telemetry("total_tokens", None) == "n/a"


# =========================================================================== the JSON island and the view

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</div></table><b>broken</b>",
    "a & b &amp; &lt;",
    "rtl\u202eevil\u202c",
    "sep\u2028line\u2029para",
    "quote\" ' `tick`",
    "非拉丁 текст 😀",
]


@pytest.fixture
def flipped_runs(tmp_path):
    tasks = [("t1", 2), ("t2", 2), ("t3", 2), ("t4", 2)]
    doc_a, doc_b = manifest(tasks), manifest(tasks)
    doc_a["run_id"], doc_b["run_id"] = "run-a", "run-b"
    doc_b["config"]["model"] = "m-other"
    recs_a = outcomes({"t1": "SS", "t2": "AA", "t3": "SA", "t4": "E"})
    recs_b = outcomes({"t1": "AS", "t2": "SS", "t3": "SS", "t4": "A"})
    return cb.load_run(write_run(tmp_path / "a", doc_a, recs_a)), cb.load_run(write_run(tmp_path / "b", doc_b, recs_b))


def test_flips_data_lists_flipped_tasks_with_both_runs_attempts(flipped_runs):
    a, b = flipped_runs
    doc = compare_runs(a, b, n_boot=0)
    data = flips_data(doc, a, b, metrics_a=compute_metrics(a), metrics_b=compute_metrics(b))
    assert [t["id"] for t in data["tasks"]] == ["t1", "t2", "t3"]
    t1 = data["tasks"][0]
    assert t1["cells"][:2] == ["t1", "A only"] and t1["keys"][1] == -1
    assert data["tasks"][1]["cells"][1] == "B only" and data["tasks"][1]["cells"][4:] == ["0 of 2", "2 of 2"]
    rows_a = data["attempts"]["t1"]["a"]["rows"]
    rows_b = data["attempts"]["t1"]["b"]["rows"]
    assert [r["cells"][1] for r in rows_a] == ["success", "success"]
    assert [r["cells"][1] for r in rows_b] == ["failed: agent", "success"]
    assert data["attempts"]["t1"]["a"]["label"] == "A: run-a"


def test_missing_attempts_are_named(flipped_runs):
    a, b = flipped_runs
    rows = flips_data(compare_runs(a, b, n_boot=0), a, b, metrics_a=compute_metrics(a),
                      metrics_b=compute_metrics(b))["attempts"]
    assert "t4" not in rows  # not flipped: t4's attempt 1 is ineligible in A


def test_view_repr_is_short_and_html_names_both_runs(flipped_runs):
    a, b = flipped_runs
    doc = compare_runs(a, b, n_boot=0)
    view = ComparisonView(doc, a, b, metrics_a=compute_metrics(a), metrics_b=compute_metrics(b), strict=True,
                          allow_diff=["model"])
    text = repr(view)
    assert text.startswith("<comparison run-b (B) vs run-a (A): pass@1 ") and "model (allowed)" in text
    assert len(text) < 300
    html = view._repr_html_()
    assert "run-b</span>" in html and "run-a</span>" in html
    assert "allowed (--allow-diff)" in html and "every one is of a kind allowed" in html
    assert len(view.verdicts()) == 3 and all(v in html for v in view.verdicts())
    assert '<script type="application/json" id="cbc-' in html  # the flipped tasks' data island
    assert "Flipped tasks" in html and "Flipped tasks" not in ComparisonView(doc, a, b)._repr_html_()  # no counts
    with pytest.raises(ValueError, match="unknown warning kind"):
        ComparisonView(doc, allow_diff=["models"])


def test_header_strict_names_the_failing_warnings(flipped_runs):
    a, b = flipped_runs
    doc = compare_runs(a, b, n_boot=0)
    assert "1 of them is not of a kind allowed with --allow-diff and fails the comparison" in header_html(doc, strict=True)
    assert "Strict mode" not in header_html(doc)


# =========================================================================== in a real browser


def hostile_pair(root):
    tasks = [{"task_id": t, "repeats": 2} for t in HOSTILE]
    doc_a, doc_b = manifest(tasks), manifest(tasks)
    doc_a["run_id"] = '<script>window.__pwned = 3</script>run "A"'
    doc_b["run_id"] = '<img src=x onerror="window.__pwned = 4">run B\u202e'
    doc_b["config"]["model"] = "<b>other</b>"
    codes_a = {t: "SA"[i % 2] + "S" for i, t in enumerate(HOSTILE)}
    codes_b = {t: "AS"[i % 2] + "A" for i, t in enumerate(HOSTILE)}
    return (write_run(root / "a", doc_a, outcomes(codes_a)), write_run(root / "b", doc_b, outcomes(codes_b)))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """comparison.html of two simulated runs (different models) and of two hostile runs."""
    root = tmp_path_factory.mktemp("comparison-page")
    a = simulate_run(root / "a", tasks=40, repeats=3, seed=1)
    b = simulate_run(root / "b", tasks=40, repeats=3, seed=2, model="m-small")
    ha, hb = hostile_pair(root / "hostile")
    return {"plain": build_comparison(a, b, root / "out", progress=False, strict=True),
            "hostile": build_comparison(ha, hb, root / "hostile-out", progress=False),
            "runs": (cb.load_run(a), cb.load_run(b))}


def check_clean(visit):
    assert visit.requests == [], "the page asked the network for something"
    assert visit.errors == [] and visit.dialogs == []


def no_horizontal_overflow(page):
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.parametrize("width", [1400, 420])
def test_first_screen_names_both_runs_and_gives_verdicts(open_page, pages, width, tmp_path):
    visit = open_page(pages["plain"], width=width)
    page = visit.page
    check_clean(visit)
    for run_id in ("sim-1", "sim-2"):
        box = page.locator(".cbc-runid", has_text=run_id).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, f"{run_id} is not on the first screen"
    lines = page.locator("ul.cbc-verdicts li").all_inner_texts()
    assert len(lines) == 3
    assert [line.split(":")[0] for line in lines] == ["pass@1", "pass@3", "pass^3"]
    assert all(re.search(r"\(95% CI [-+]?\d+\.\d to [-+]\d+\.\d pp\), McNemar p = [<\d. ]+: (not )?significant at 5%",
                         line) for line in lines), lines
    body = page.inner_text("body")
    assert "difference 0.0" not in body and "ci_low" not in body and "mcnemar_p" not in body
    # the power tables' headers are words, and the page does not talk about the notebook's defaults
    assert not {"discordance_independent", "attempts_per_run", "p_a", "pair_rate"} & set(body.split())
    assert page.locator("th", has_text="tasks needed, independent runs").count() == 1 and "defaults" not in body
    assert re.search(r"\d+\.\d s", body) and " tokens" in body  # telemetry with units, not raw ms
    assert no_horizontal_overflow(page)
    page.screenshot(path=str(tmp_path / f"comparison-{width}.png"), full_page=True)


@pytest.mark.parametrize("width", [1400, 420])
def test_flipped_tasks_sort_and_open_both_runs_attempts(open_page, pages, width):
    visit = open_page(pages["plain"], width=width)
    page = visit.page
    rows = page.locator("table.cbc-flips > tbody > tr")
    doc = json.loads((pages["plain"].parent / "comparison.json").read_text(encoding="utf-8"))
    n = len({t for f in doc["flips"].values() for side in ("a_only", "b_only") for t in f[side]})
    assert n > FLIPS_PAGE  # the first page, then "show more" for the rest
    assert rows.count() == FLIPS_PAGE
    assert page.locator(".cbc-count").inner_text() == f"{n} of {n} flipped tasks, the first {FLIPS_PAGE} shown"
    more = page.locator("button.cbc-more")
    assert more.inner_text() == f"show {min(n - FLIPS_PAGE, FLIPS_PAGE)} more ({n - FLIPS_PAGE} not shown)"
    more.click()
    assert rows.count() == n and more.is_hidden()
    assert page.locator(".cbc-count").inner_text() == f"{n} of {n} flipped tasks"
    # sort by the pass@1 column: "A only" rows first, then "same", then "B only"; again: reversed
    # (wide: the column header; narrow, where rows are cards and headers hidden: the sort menu and "reverse")
    order = {"A only": -1, "same": 0, "B only": 1}
    if width >= 1000:
        header = page.locator("table.cbc-flips th button", has_text="pass@1")
        header.click()
    else:
        page.select_option(".cbc-controls select", label="sort by pass@1")
    first = [order[t] for t in page.locator("table.cbc-flips > tbody > tr > td:nth-child(2)").all_inner_texts()]
    assert first == sorted(first) and len(set(first)) > 1
    assert page.locator("table.cbc-flips th[aria-sort=ascending]").count() == 1
    header.click() if width >= 1000 else page.click(".cbc-controls button")
    second = [order[t] for t in page.locator("table.cbc-flips > tbody > tr > td:nth-child(2)").all_inner_texts()]
    assert second == sorted(second, reverse=True)
    # open the first task: both runs' attempts, each planned attempt a row
    button = page.locator("table.cbc-flips button.cbc-open").first
    task = button.inner_text()
    button.click()
    assert button.get_attribute("aria-expanded") == "true"
    detail = page.locator(".cbc-detail").first
    heads = detail.locator("h4").all_inner_texts()
    assert heads == ["A: sim-1", "B: sim-2"]
    a, b = pages["runs"]
    for run, table in zip((a, b), detail.locator("table").all()):
        cells = table.locator("tbody tr td:nth-child(2)").all_inner_texts()
        attempts = run.attempts[run.attempts["task_id"] == task]
        assert len(cells) == 3
        successes = [c == "success" for c in cells]
        assert sum(successes) == int(attempts["success"].astype(bool).sum())
    # after sorting, a row opens its own detail, right below it (not the row that had its place before)
    last = page.locator("table.cbc-flips button.cbc-open").last
    last_task = last.inner_text()
    last.click()
    below = page.locator("table.cbc-flips > tbody > tr").last
    assert below.get_attribute("class") == "cbc-detail-row"
    assert below.evaluate("tr => tr.previousElementSibling.querySelector('button.cbc-open').textContent") == last_task
    # filter by task id
    page.fill(".cbc-controls input", task)
    assert page.locator("table.cbc-flips > tbody > tr:not(.cbc-detail-row)").count() >= 1
    assert all(task in t for t in page.locator("table.cbc-flips button.cbc-open").all_inner_texts())
    assert no_horizontal_overflow(page)
    check_clean(visit)


@pytest.mark.parametrize("width", [1400, 420])
def test_hostile_strings_render_as_text_and_run_nothing(open_page, pages, width, tmp_path):
    visit = open_page(pages["hostile"], width=width)
    page = visit.page
    check_clean(visit)
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".cbc img, .cbc b:has-text('broken'), .cbc b:has-text('other')").count() == 0
    runs = page.locator(".cbc-runid").all_inner_texts()
    assert runs == ['<script>window.__pwned = 3</script>run "A"', '<img src=x onerror="window.__pwned = 4">run B\\u202e']
    assert "model <b>other</b>" in page.inner_text(".cbc-runs")
    ids = page.locator("table.cbc-flips button.cbc-open").all_inner_texts()
    assert ids and set(ids) <= {t.replace("\u202e", "\\u202e").replace("\u202c", "\\u202c").replace("\u2028", "\\u2028")
                                .replace("\u2029", "\\u2029") for t in HOSTILE}
    for button in page.locator("table.cbc-flips button.cbc-open").all():
        button.click()
    assert page.locator(".cbc-detail h4").count() == 2 * len(ids)
    assert page.evaluate("window.__pwned") is None and visit.dialogs == [] and visit.errors == []
    assert no_horizontal_overflow(page)
    page.screenshot(path=str(tmp_path / f"hostile-{width}.png"), full_page=True)
