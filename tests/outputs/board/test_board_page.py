"""board.html (capbench_nb.outputs.board.page, board.run): ``capbench-nb board`` executes notebooks/board.ipynb
with papermill once, and the page is read in a real browser (headless Chromium) at 1400 and 420 px: the first
screen, the sortable table opening a run's tasks, the pairwise matrix opening a pair's discordant tasks, the
cost plot naming the unpriced run, hostile strings inert, nothing from the network, no sideways scroll; and
selected@k (a column, a run's picks, the matrix's menu) on a board of runs with hand-made selection files."""

from __future__ import annotations

import json

import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.outputs.board.page import (attempt_codes, curves_html, header_html, left_out_html, pairs_html, runs_html,
                                            style_html)
from capbench_nb.outputs.html.escaping import plain_label

from conftest import HOSTILE_TEXTS, cli, manifest, outcomes, selection_board, write_run

RUN_IDS = ["alpha", '<img src=x onerror="window.__pwned = 1">beta\u202e', "gamma", "delta"]
TASKS = HOSTILE_TEXTS + [f"task-{i:02d}" for i in range(24)]


def codes(run: int, i: int) -> str:
    """Attempt codes of task i in run ``run``: alpha strong, beta middling, gamma (k = 2) mixed, delta weak."""
    if run == 0:
        return "SSS" if i % 8 else "ASA"
    if run == 1:
        return "SAS" if i % 3 else "AAA"
    if run == 2:
        return "SA" if i % 2 else "ES"
    return "AAS" if i % 5 == 0 else "AAA"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Four runs on 30 common tasks (six with hostile ids), one with a task of its own and k = 2, one unpriced;
    the board built by the command line."""
    root = tmp_path_factory.mktemp("board-page")
    paths = []
    for r, run_id in enumerate(RUN_IDS):
        spec = {t: codes(r, i) for i, t in enumerate(TASKS)}
        if r == 2:
            spec["only-in-gamma"] = "SS"
        doc = manifest([(t, len(c)) for t, c in spec.items()])
        doc["run_id"] = run_id
        doc["config"]["model"] = "</script><b>m2</b>" if r == 1 else f"model-{r}"
        records = outcomes(spec)
        for rec in records:
            if r != 2:  # gamma is unpriced
                rec.update(cost=[0.004, 0.001, None, 0.0005][r], cost_source="prices/test@1")
        paths.append(write_run(root / f"run{r}", doc, records))
    out = root / "out"
    rc, stdout, stderr = cli("board", *paths, "--out", out, "--seed", "4", "--resamples", "500", "--no-progress")
    assert rc == 0, stderr
    assert stdout.strip() == str(out / "board.html") and stderr == ""
    runs = [cb.load_run(p) for p in paths]
    return {"out": out, "runs": runs, "doc": json.loads((out / "board.json").read_text(encoding="utf-8"))}


def test_the_command_writes_the_four_files_from_the_package(built):
    out = built["out"]
    assert sorted(p.name for p in out.iterdir()) == ["board.html", "board.ipynb", "board.json", "board.md"]
    expected = cb.board(built["runs"], seed=4, resamples=500)
    assert (out / "board.json").read_text(encoding="utf-8") == dumps(expected)
    doc = built["doc"]
    assert doc["common"]["tasks"] == 30 and doc["common"]["not_common"] == ["only-in-gamma"] and doc["common"]["k"] == 2
    assert doc["unpriced"] == [2] and len(doc["groups"]) >= 2
    nb = json.loads((out / "board.ipynb").read_text(encoding="utf-8"))
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o["output_type"] == "error"]
    assert errors == []
    assert attempt_codes(built["runs"][2], doc["common"]["task_ids"])[:2] == ["ES", "SA"]


def check_clean(visit):
    assert visit.requests == [], "the page asked the network for something"
    assert visit.errors == [] and visit.dialogs == []
    assert visit.page.evaluate("window.__pwned") is None


def no_sideways_scroll(page):
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.parametrize("width", [1400, 420])
def test_the_board_page(open_page, built, width, tmp_path):
    doc = built["doc"]
    visit = open_page(built["out"] / "board.html", width=width)
    page = visit.page
    check_clean(visit)
    # the first screen: what is compared, on how many tasks, how many left out, group 1
    title = page.locator("h1.cbc-title")
    assert title.inner_text() == "Board of 4 runs on unit 1"
    lead = page.locator(".cbb-lead").inner_text()
    assert lead.startswith("By pass@1, group 1") and "#1 alpha" in lead
    scope = page.get_by_text("Every number is computed on the 30 tasks planned in every run")
    assert "1 task planned in only some runs is left out" in scope.inner_text()
    for element in (title, scope):
        box = element.bounding_box()
        assert box["y"] + box["height"] <= 900
    assert page.locator(".cbc-warn b", has_text="task_set").count() == 1
    # the table: one row per run in board order; sort by cost (unpriced last), open a run for its tasks
    table = page.locator("table.cbb-runs")
    names = table.locator("button.cbc-open").all_inner_texts()
    ranked = sorted(range(4), key=lambda i: (doc["runs"][i]["rank"], i))
    assert names == [f"#{i + 1} {plain_label(RUN_IDS[i], 60)}" for i in ranked]
    if width >= 1000:
        table.locator("th button", has_text="cost / attempt").click()
    else:
        page.select_option(".cbb-section[data-kind=runs] .cbc-controls select", label="sort by cost / attempt")
    costs = table.locator("> tbody > tr > td:nth-child(10)").all_inner_texts()
    assert costs[-1].endswith("unpriced") and costs[:3] == sorted(costs[:3], key=lambda c: float(c.split("$")[1]))
    opener = table.locator("button.cbc-open", has_text="#2 ")
    opener.click()
    detail = table.locator(".cbb-panel")
    rows = detail.locator("tbody tr")
    assert rows.count() == 30
    texts = rows.locator("td:nth-child(1)").all_inner_texts()
    assert texts[0] == HOSTILE_TEXTS[0] and texts[6] == "task-00"  # hostile ids shown as text
    assert rows.nth(6).locator("td").last.inner_text() == "AAA"
    detail.locator("input").fill("task-0")
    assert rows.count() == 10
    # the matrix: row alpha, column delta; the cell opens the discordant tasks of both sides
    cell = page.locator("table.cbb-matrix tbody tr", has=page.locator("th", has_text="#1 alpha")).locator(
        "td button[title='#1 alpha vs #4 delta']")
    pair = next(p for p in doc["pairs"] if p["metric"] == "pass@1" and (p["a"], p["b"]) == (0, 3))
    assert cell.inner_text().splitlines()[0].startswith("+") and pair["p_holm"] < 0.05
    assert "cbb-pos" in cell.locator("xpath=..").get_attribute("class")
    cell.click()
    panel = page.locator(".cbb-section[data-kind=pairs] .cbb-panel")
    heads = panel.locator(".cbb-two h4").all_inner_texts()
    assert heads == [f"#1 alpha succeeded, #4 delta failed ({pair['a_only']})",
                     f"#4 delta succeeded, #1 alpha failed ({pair['b_only']})"]
    assert panel.locator(".cbb-two > div").first.locator("tbody tr").count() == pair["a_only"]
    # the cost plot and the unpriced run named beside it
    assert page.locator("img[alt^='pass@1 against cost per attempt for 3 priced runs']").count() == 1
    assert page.get_by_text("Unpriced (some eligible attempt has no cost").inner_text().endswith("#3 gamma.")
    curve = page.locator("img[alt^='pass^j for j = 1 to 2 of 4 runs']")
    assert curve.count() == 1
    # at 420 px the figure drawn narrow (its own source, 360 px at full size), at 1400 px the wide one
    narrow, shown = curve.evaluate("img => [img.currentSrc !== img.src, img.getBoundingClientRect().width]")
    assert (narrow, 340 <= shown <= 360) == (True, True) if width < 600 else (narrow, shown > 600) == (False, True)
    left_out = page.locator("details.cbb-left-out")
    assert left_out.locator("bdi", has_text="only-in-gamma").count() == 1 and left_out.get_attribute("open") is None
    assert no_sideways_scroll(page)
    check_clean(visit)
    page.screenshot(path=str(tmp_path / f"board-{width}.png"), full_page=True)


def test_selected_at_k_on_the_page(open_page, tmp_path):
    """conftest.SELECTION_BOARD's A, B and C (no selection.jsonl), the page's sections put together without
    papermill: the selected@3 column (n/a for C, its reason below), the runs' picks, the matrix's menu."""
    runs = [cb.load_run(p) for p in selection_board(tmp_path / "runs", "ABC")]
    doc = json.loads(dumps(cb.board(runs, resamples=50)))
    body = style_html() + header_html(doc) + runs_html(doc, runs) + pairs_html(doc, runs)
    (tmp_path / "board.html").write_text(f"<!doctype html><meta charset='utf-8'><body>{body}</body>", encoding="utf-8")
    visit = open_page(tmp_path / "board.html")
    page = visit.page
    assert "runs with selected@3: 2 of 3" in page.locator(".cbb-facts").inner_text()
    table = page.locator("table.cbb-runs")
    assert table.locator("> thead th").nth(9).inner_text().startswith("selected@3")
    # board order by pass@1: C (8/8), A and B (4/8 each, input order)
    assert table.locator("> tbody > tr > td:nth-child(10)").all_inner_texts() == ["n/a", "16.7%", "62.5%"]
    assert page.locator(".cbc li", has_text="#3 C: the run has no selection.jsonl").count() == 1
    table.locator("button.cbc-open", has_text="#1 A").click()
    rows = table.locator(".cbb-panel tbody tr")
    assert rows.nth(3).locator("td").all_inner_texts() == ["t4", "success", "success", "success", "failure",
                                                          "SSS", "abstained"]
    assert rows.nth(5).locator("td").nth(4).inner_text() == "not counted"  # t6: not k-eligible
    # the matrix: selected@3 pairs A and B only; the open pair shows both selectors' picks
    menu = page.locator(".cbb-section[data-kind=pairs] select")
    assert menu.locator("option").all_inner_texts() == ["pass@1", "pass@3", "pass^3", "selected@3"]
    menu.select_option(label="selected@3")
    matrix = page.locator("table.cbb-matrix")
    assert matrix.locator("tbody th").all_inner_texts() == ["#1 A", "#2 B"]
    matrix.locator("td button[title='#2 B vs #1 A']").click()
    panel = page.locator(".cbb-section[data-kind=pairs] .cbb-panel")
    assert panel.locator(".cbb-two h4").all_inner_texts() == ["#2 B succeeded, #1 A failed (4)",
                                                              "#1 A succeeded, #2 B failed (1)"]
    first = panel.locator(".cbb-two > div").first
    assert first.locator("thead th").all_inner_texts() == ["task", "#2 attempts", "#1 attempts", "#2 pick", "#1 pick"]
    assert first.locator("tbody tr").first.locator("td").all_inner_texts() == ["t2", "SSA", "ASA", "1", "1"]
    assert no_sideways_scroll(page)
    check_clean(visit)


def test_coinciding_curves_mixed_suites_and_tasks_left_out_in_natural_order(tmp_path):
    """The same run twice draws one pass^j line labelled with both and named below the figure; two suites are
    said on the first screen; the tasks left out are folded, in natural order (t2 before t10)."""
    plan = [{"task_id": f"t{i}", "repeats": 2} for i in range(1, 13)]
    docs = [manifest(plan), manifest(plan), manifest(plan[:3])]
    for i, doc in enumerate(docs):
        doc["run_id"] = f"r{i}"
    docs[2]["suite"] = {"name": "other-suite", "version": "1"}
    recs = outcomes({t["task_id"]: "SA" if n % 2 else "SS" for n, t in enumerate(plan)})
    runs = [cb.load_run(write_run(tmp_path / f"r{i}", doc, [r for r in recs if r["task_id"] in
                                                          {t["task_id"] for t in doc["plan"]["tasks"]}]))
            for i, doc in enumerate(docs)]
    doc = json.loads(dumps(cb.board(runs[:2] + runs[2:], resamples=0)))
    curves = curves_html(doc)
    assert "Runs with the same curve are drawn as one line, labelled with all of them: #1 r0 = #2 r1" in curves
    assert "This board mixes 2 suites" in header_html(doc)
    left = left_out_html(doc)
    assert left.startswith('<div class="cbc"><details class="cbb-left-out"><summary>9 tasks planned in only some')
    assert [m for m in left.split("<bdi>")[1:]][0].startswith("t4<") and "t9</bdi>, <bdi>t10</bdi>" in left
    one_suite = json.loads(dumps(cb.board(runs[:2], resamples=0)))
    assert "mixes" not in header_html(one_suite) and "same curve" in curves_html(one_suite)
