"""The report's suite-health section and summary.md's health sentence, read from the metrics document."""

from __future__ import annotations

import re

import pytest
from IPython.display import HTML

import capbench_nb as cb
from capbench_nb.outputs.html import tables
from capbench_nb.outputs.report import health as health_view
from capbench_nb.outputs.summary import health_sentence, summary_markdown

from conftest import HOSTILE_TEXTS, SAMPLE_RUN, manifest, outcomes, write_run


@pytest.fixture
def shown(monkeypatch):
    """The HTML the section displays, in order."""
    out: list[str] = []
    monkeypatch.setattr(tables, "display", lambda obj, *a, **kw: out.append(obj.data if isinstance(obj, HTML) else obj))
    return out


@pytest.fixture(scope="module")
def sample_doc():
    return cb.compute_metrics(cb.load_run(SAMPLE_RUN), clusters=["app", "model"])


def test_candidates_first_then_inconsistent_tasks_the_figure_and_the_means(sample_doc, shown):
    health_view.show_health(sample_doc)
    html = "\n".join(shown)
    order = [html.index(s) for s in ("Quarantine candidates (1)", "Inconsistent tasks (6)", '<img class="cb-fig"',
                                     "Means over tasks")]
    assert order == sorted(order)
    # clock.timer.start is plan position 5: its link opens it in the explorer
    assert '<a class="cb-task-link" href="#cb-explorer-task-5">clock.timer.start</a>' in html
    assert re.search(r"clock\.timer\.start</a></bdi></td><td class=\"num\">3</td><td class=\"num\">2</td>", html)
    assert html.count('class="cb-task-link"') == 1 + 6
    assert "5 groups" in html and "6.1 pp" in html and "8.1 pp" in html  # clustered by app, and plain
    assert "0 (one group: says nothing)" in html  # clustered by a config key
    assert health_sentence(sample_doc) in html


def test_the_summary_names_the_candidates_and_the_inconsistent_share(sample_doc):
    assert health_sentence(sample_doc) == (
        "Suite health: 6 of the 9 k-eligible tasks were inconsistent over attempts 1..2 (66.7%, 95% Wilson interval"
        " [35.4%, 87.9%]; 2 passed and 1 failed every one of attempts 1..2); 1 quarantine candidate, where"
        " environment and evaluation failures are at least 50% of the counted attempts (the suite, not the agent,"
        " fails there): clock.timer.start.")
    assert health_sentence(sample_doc) in summary_markdown(sample_doc)
    old = {key: value for key, value in sample_doc.items() if key != "health"}
    assert health_sentence(old) is None and "Suite health" not in summary_markdown(old)


def test_hostile_task_ids_are_data_in_the_section_and_the_summary(tmp_path, shown):
    codes = ["EE", "SA", "VS", "SS", "AS", "AA"]  # two candidates (0, 2), two inconsistent (1, 4)
    run = cb.load_run(write_run(tmp_path / "run", manifest([(t, 2) for t in HOSTILE_TEXTS]),
                                outcomes(dict(zip(HOSTILE_TEXTS, codes)))))
    doc = cb.compute_metrics(run, quarantine_threshold=0.5)
    health_view.show_health(doc)
    html = "\n".join(shown)
    assert "<script" not in html.lower() and "<img src" not in html and "\u202e" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(&#x27;island&#x27;)" in html
    assert re.findall(r'href="([^"]*)"', html) == ["#cb-explorer-task-0", "#cb-explorer-task-2",
                                                    "#cb-explorer-task-1", "#cb-explorer-task-4"]
    md = health_sentence(doc)
    assert "2 quarantine candidates" in md and "</script>" not in md and "\\</script\\>\\<script\\>" in md


def test_a_document_without_health_or_without_attempts(tmp_path, shown):
    health_view.show_health({"k": 2, "per_task": []})
    assert "no health block" in shown[-1]
    run = cb.load_run(write_run(tmp_path / "run", manifest([("a", 2), ("b", 2)]), []))
    health_view.show_health(cb.compute_metrics(run))
    html = "\n".join(shown)
    assert "No quarantine candidate" in html and "No inconsistent task" in html
    assert "No task has a counted attempt" in html and "n/a (no task)" in html
    assert "cb-fig" not in html
