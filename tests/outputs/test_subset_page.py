"""subset.html (capbench_nb.outputs.subset): ``capbench-nb suite select --lock`` executes notebooks/subset.ipynb
once, and the page is read in headless Chromium: the header, the validation tables, the figure, the chosen tasks
with a hostile task id and run id inert, nothing from the network; the notebook writes the restricted lock."""

from __future__ import annotations

import json

import pytest

from capbench_nb.metrics.subset import subset_lock
from capbench_nb.records.lock import dumps_lock, load_lock, make_lock

from conftest import cli, manifest, outcomes, write_run

HOSTILE = '<img src=x onerror="window.__pwned = 1">task'
RUN_ID = '<script>window.__pwned = 2</script>run'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("subset-page")
    plan = ([{"task_id": f"a{j}", "repeats": 3, "app": "alpha"} for j in range(5)]
            + [{"task_id": f"b{j}", "repeats": 3, "app": "beta"} for j in range(4)]
            + [{"task_id": HOSTILE, "repeats": 3, "app": "gamma"}])
    runs = []
    for i in range(3):
        doc = manifest(plan, k=3)
        doc["run_id"] = RUN_ID if i == 1 else f"run-{i}"
        codes = {t["task_id"]: "".join("S" if (i + j + a) % 3 else "A" for a in range(3)) for j, t in enumerate(plan)}
        runs.append(write_run(root / f"r{i}", doc, outcomes(codes)))
    lock, problems = make_lock({"schema_version": "capbench.suite-lock/1", "run_policy": {"k": 3}, "selection": None,
                                "suite": {"name": "mobile-core-sim", "version": "2026.11"},
                                "tasks": [{"task_id": t["task_id"], "labels": {"app": t["app"]}} for t in plan]},
                               "lock.json")
    assert not problems
    (root / "lock.json").write_text(dumps_lock(lock), encoding="utf-8")
    out = root / "out"
    rc, stdout, err = cli("suite", "select", *runs, "--size", "4", "--strata", "app", "--out", out,
                          "--lock", root / "lock.json")
    assert rc == 0, err
    return {"out": out, "doc": json.loads((out / "subset.json").read_text(encoding="utf-8")), "lock": root / "lock.json"}


def test_the_five_files(built):
    assert sorted(p.name for p in built["out"].iterdir()) == ["subset.html", "subset.ipynb", "subset.json", "subset.md",
                                                              "suite.lock.json"]
    html = (built["out"] / "subset.html").read_text(encoding="utf-8")
    assert HOSTILE not in html and RUN_ID not in html  # escaped: data, never markup
    assert built["doc"]["strata"] == {"app": {"alpha": 2, "beta": 1, "gamma": 1}}
    written = (built["out"] / "suite.lock.json").read_text(encoding="utf-8")  # by the notebook
    assert written == dumps_lock(subset_lock(built["doc"], load_lock(built["lock"])))
    assert json.loads(written)["suite"]["version"] == "2026.11+subset4"


@pytest.mark.parametrize("width", [1400, 420])
def test_the_subset_page(open_page, built, width):
    visit = open_page(built["out"] / "subset.html", width=width)
    page = visit.page
    assert visit.requests == [] and visit.errors == [] and visit.dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator("h1", has_text="Representative subset").count() == 1
    tables = page.locator(".cbs table")
    assert tables.count() == 4  # header, validation, left-out runs, chosen tasks
    rows = tables.nth(3).locator("tr")
    assert rows.count() == 1 + 4
    assert HOSTILE in tables.nth(3).inner_text() and RUN_ID in tables.nth(2).inner_text()
    assert page.locator('img[alt^="leave-one-run-out estimates"]').count() == 1
    # at 420 px: nothing wider than the page but the tasks table's own scroller (with its cue), the figure narrow
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    assert page.locator(".cbs-cue").is_visible() is (width < 600)
    narrow, shown = page.locator('img[alt^="leave-one-run-out estimates"]').evaluate(
        "img => [img.currentSrc !== img.src, img.getBoundingClientRect().width]")
    assert narrow is (width < 600) and (shown <= 360 if narrow else shown > 500)
    lines = page.locator("table.cbs-facts th").evaluate_all("""ths => ths.map(t => {
        const r = document.createRange(); r.selectNodeContents(t); return r.getClientRects().length; })""")
    assert lines == [1] * 5  # each name ("strata by app") on one line, not broken inside a word
