"""report.html in a real browser (headless Chromium): what a reader sees, at 1400 and 420 px."""

from __future__ import annotations

import pytest

from conftest import SAMPLE_RUN

from capbench_nb.outputs.reportrun import build_report


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample-report")
    return build_report(SAMPLE_RUN, out, progress=False)


@pytest.mark.parametrize("width", [1400, 420])
def test_the_report_loads_offline_without_script_errors(open_page, sample_report, width):
    visit = open_page(sample_report, width=width)
    page = visit.page
    assert visit.requests == [], "the page asked the network for something"
    assert visit.errors == [] and visit.dialogs == []
    assert page.title() == "sim-4759 · capbench-nb report"
    assert "pass@1" in page.inner_text("body")
