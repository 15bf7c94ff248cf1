"""The report's suite-health section and summary.md's health sentence, read from the metrics document."""

from __future__ import annotations

import re

import pytest
from IPython.display import HTML

import capbench_nb as cb
from capbench_nb.outputs.html import tables
from capbench_nb.outputs.report import health as health_view
from capbench_nb.outputs.summary import clustered_sentence, health_sentence, summary_markdown

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
    assert re.search(r'clock\.timer\.start</a></bdi></td><td class="num" data-label="[^"]+">3</td>'
                     r'<td class="num" data-label="[^"]+">2</td>', html)
    assert html.count('class="cb-task-link"') == 1 + 6
    assert "5 groups" in html and "6.8 pp" in html and "8.1 pp" in html  # clustered by app (CR1), and plain
    # the document's t interval, its degrees of freedom and its caveat, next to the number
    assert "[43.2%, 81.0%] (t, 4 df); approximate: fewer than 8 groups; fewer than 4 tasks per group" in html
    assert "n/a (one group says nothing)" in html  # clustered by a config key: no standard error, no interval
    assert "1.96" not in html and "±" not in html  # the page computes no interval
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


def test_the_interval_shown_is_the_documents_not_recomputed(sample_doc, shown):
    """Tampered bounds and caveat in the document are what the page shows: it reads, it does not compute."""
    import copy

    doc = copy.deepcopy(sample_doc)
    rate = doc["health"]["all_attempts_pass_rate"]
    rate["clustered"]["app"].update(ci_low=0.111, ci_high=0.999, df=7)
    rate["clustered_approximate"]["app"] = "<b>odd</b>"
    health_view.show_health(doc)
    html = "\n".join(shown)
    assert "[11.1%, 99.9%] (t, 7 df); approximate: &lt;b&gt;odd&lt;/b&gt;" in html
    # a document of the previous format (clustered without df or interval): no interval, nothing invented
    del rate["clustered_approximate"]
    rate["clustered"]["app"] = {"se": 0.05, "groups": 5}
    shown.clear()
    health_view.show_health(doc)
    assert "(t," not in "\n".join(shown)


def test_the_summary_gives_each_clustered_interval_and_says_one_group_says_nothing(sample_doc):
    assert clustered_sentence(sample_doc) == (
        "all_attempts_pass_rate 62.1%; clustered by app (5 groups): standard error 6.8 pp, 95% t interval"
        " [43.2%, 81.0%] on 4 degrees of freedom (approximate: fewer than 8 groups; fewer than 4 tasks per group);"
        " clustered by model (1 group): no interval, one group says nothing.")
    assert clustered_sentence(sample_doc) in summary_markdown(sample_doc)
    plain = cb.compute_metrics(cb.load_run(SAMPLE_RUN))
    assert clustered_sentence(plain) is None and "clustered by" not in summary_markdown(plain)
