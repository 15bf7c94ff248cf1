"""subset.html (capbench_nb.outputs.subset): ``capbench-nb suite select`` executes notebooks/subset.ipynb once, and
the page is read in headless Chromium: the header, the validation tables, the figure, the chosen tasks with a
hostile task id and run id inert, nothing from the network."""

from __future__ import annotations

import json

import pytest

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
    out = root / "out"
    rc, stdout, err = cli("suite", "select", *runs, "--size", "4", "--strata", "app", "--out", out)
    assert rc == 0, err
    return {"out": out, "doc": json.loads((out / "subset.json").read_text(encoding="utf-8"))}


def test_the_four_files(built):
    assert sorted(p.name for p in built["out"].iterdir()) == ["subset.html", "subset.ipynb", "subset.json", "subset.md"]
    html = (built["out"] / "subset.html").read_text(encoding="utf-8")
    assert HOSTILE not in html and RUN_ID not in html  # escaped: data, never markup
    assert built["doc"]["strata"] == {"app": {"alpha": 2, "beta": 1, "gamma": 1}}


def test_the_subset_page(open_page, built):
    visit = open_page(built["out"] / "subset.html")
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
