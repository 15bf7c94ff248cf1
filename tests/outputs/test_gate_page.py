"""comparison.html with a gate.json beside it, in headless Chromium: the verdict shows, escaped, at 1400 and 420 px."""

from __future__ import annotations

import pytest

import capbench_nb as cb
from capbench_nb.outputs.gate.files import write_gate
from capbench_nb.outputs.comparison.run import build_comparison
from conftest import manifest, outcomes, write_run

HOSTILE = ["<script>window.__pwned = 1</script>", "| a | b |", "a]]>b", "`x`", "<img src=x onerror=alert(2)>"]


@pytest.fixture(scope="module")
def gated_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate-page")
    tasks = [(t, 1) for t in HOSTILE] + [(f"ok-{i}", 1) for i in range(25)]
    doc_a, doc_b = manifest(tasks, k=1), manifest(tasks, k=1)
    doc_b["run_id"] = "<b>cand</b>"
    a = write_run(root / "a", doc_a, outcomes({t: "S" for t, _ in tasks}))
    b = write_run(root / "b", doc_b, outcomes({t: ("A" if t in HOSTILE else "S") for t, _ in tasks}))
    out = root / "out"
    write_gate(cb.gate(a, b).document, out)
    return build_comparison(a, b, out, progress=False)


@pytest.mark.parametrize("width", [1400, 420])
def test_the_gate_verdict_shows_on_the_comparison_page(open_page, gated_page, width):
    visit = open_page(gated_page, width=width)
    page = visit.page
    assert visit.requests == [] and visit.errors == [] and visit.dialogs == []
    heading = page.locator(".cbc-gate h2")
    assert heading.inner_text() == "Regression gate: fail"
    rows = page.locator(".cbc-gate tbody tr").all_inner_texts()
    assert len(rows) == 1 and "pass@1" in rows[0] and "fail" in rows[0]
    assert page.evaluate("window.__pwned === undefined")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
