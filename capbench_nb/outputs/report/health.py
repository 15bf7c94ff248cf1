"""The report's suite-health section (spec section 11), read from the metrics document alone.

In the order a reader needs it: the quarantine candidates (tasks where the suite, not the agent,
fails: environment and evaluation attempts at least the threshold's share of the counted ones),
with the classes that failed there; the tasks where the agent is inconsistent over attempts
1..k; a figure of each task's success share against its ineligible share
(:func:`capbench_nb.outputs.report.figures.plot_health`); and the means over tasks with their standard
errors, plain and clustered.  Every task links into the task explorer (``#cb-explorer-task-N``,
N the task's plan position, never run data), whose script opens the task there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capbench_nb.metrics.health import CONSISTENCY, INELIGIBLE_KEYS, SUITE_CLASSES
from capbench_nb.metrics.registry import REGISTRY
from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.html.formatting import NA, fmt_count, fmt_interval, fmt_pct, formatter, is_null, plural
from capbench_nb.outputs.html.tables import Raw, html_table, id_cell, paragraph, show_html
from capbench_nb.outputs.report.figures import plot_health
from capbench_nb.outputs.summary import health_sentence

__all__ = ["EXPLORER_ID", "task_link", "show_health"]

#: The element id of the report's task explorer (:func:`capbench_nb.outputs.report.explorer.explorer_html`'s default).
EXPLORER_ID = "cb-explorer"


def task_link(position: int, task_id: Any, *, explorer_id: str = EXPLORER_ID, max_len: int = 120) -> Raw:
    """A task id (escaped, bidi-isolated, clipped with the whole on hover) linking to the task, by its plan
    position, in the explorer of the same page."""
    text = "" if task_id is None else str(task_id)
    title = f' title="{html_escape(text, max_len=2000)}"' if len(text) > max_len else ""
    href = f"#{html_escape(explorer_id)}-task-{int(position)}"
    return Raw(f'<bdi class="cb-id"{title}><a class="cb-task-link" href="{href}">{html_escape(text, max_len=max_len)}</a></bdi>')


def _rows_note(shown: int, total: int, what: str) -> str:
    if shown >= total:
        return ""
    return paragraph(f"The first {shown:,} of {total:,} {what} are listed; the explorer's suite health and "
                     "consistency filters show them all.", "cb-note")


def _quarantine_table(entries: list[tuple[int, Mapping]], threshold: str, max_rows: int) -> str:
    rows = []
    for i, e in entries[:max_rows]:
        counted = int(e.get("counted") or 0)
        by = e.get("ineligible") or {}
        suite = sum(int(by.get(c) or 0) for c in SUITE_CLASSES)
        rows.append([task_link(i, e.get("task_id")), fmt_count(counted)]
                    + [fmt_count(by.get(c)) for c in INELIGIBLE_KEYS]
                    + [fmt_pct(suite / counted) if counted else NA])
    note = paragraph(f"Environment plus evaluation attempts are at least {threshold} of each one's counted attempts; "
                     "its ineligible attempts by class:", "cb-note")
    table = html_table(["task", "counted attempts", *INELIGIBLE_KEYS, "environment + evaluation"], rows,
                       numeric=tuple(range(1, 7)), caption=f"Quarantine candidates ({len(entries):,})", scroll=True)
    return note + table + _rows_note(len(rows), len(entries), "candidates")


def _inconsistent_table(entries: list[tuple[int, Mapping]], per_task: dict, k: Any, max_rows: int) -> str:
    rows = []
    for i, e in entries[:max_rows]:
        p = per_task.get(e.get("task_id")) or {}
        rows.append([task_link(i, e.get("task_id")), fmt_count(p.get("successes")), fmt_count(p.get("eligible")),
                     fmt_count(p.get("first_success_attempt")) if p.get("first_success_attempt") is not None else "none"])
    note = paragraph(f"Some, not all, of attempts 1..{k} succeeded; the counts are over every planned attempt.",
                     "cb-note")
    table = html_table(["task", "successes", "eligible attempts", "first success"], rows, numeric=(1, 2, 3),
                       caption=f"Inconsistent tasks ({len(entries):,})", scroll=True)
    return note + table + _rows_note(len(rows), len(entries), "inconsistent tasks")


def _se_text(se: Any, percent: bool) -> str:
    if is_null(se):
        return "n/a (fewer than 2 tasks)"
    return f"{float(se) * 100:.1f} pp" if percent else f"{float(se):.3f}"


def _clustered_interval(c: Mapping, caveat: Any) -> str:
    """The document's t interval of one clustered dimension, with its degrees of freedom and, when the
    metrics flag it, why it is only approximate (``clustered_approximate``)."""
    if is_null(c.get("ci_low")) or is_null(c.get("ci_high")):
        return NA
    text = f"{fmt_interval(c.get('ci_low'), c.get('ci_high'))} (t, {fmt_count(c.get('df'))} df)"
    return text + (f"; approximate: {caveat}" if isinstance(caveat, str) and caveat else "")


def _means_table(health: Mapping) -> str:
    rows = []
    for key, label in (("all_attempts_pass_rate", "all_attempts_pass_rate (unbiased pass@1)"),
                       ("mean_quality_score", "mean_quality_score")):
        metric = REGISTRY[key]  # the registry says how its value is shown (kind) and where it sits (path)
        percent = metric.kind == "rate"
        m = metric.value_in({"health": health}) or {}
        value = formatter(metric.kind)(m.get("value")) if not is_null(m.get("value")) else "n/a (no task)"
        rows.append([label, value, fmt_count(m.get("n")), "tasks independent", _se_text(m.get("se"), percent), NA])
        caveats = m.get("clustered_approximate") if isinstance(m.get("clustered_approximate"), Mapping) else {}
        for dim, c in (m.get("clustered") or {}).items():
            c = c if isinstance(c, Mapping) else {}
            groups = int(c.get("groups") or 0)
            se_text = _se_text(c.get("se"), percent) if groups >= 2 else "n/a (one group says nothing)"
            rows.append([Raw(f"&nbsp;&nbsp;clustered by {id_cell(dim)}"), value, fmt_count(m.get("n")),
                         plural(groups, "group"), se_text, _clustered_interval(c, caveats.get(dim))])
    note = paragraph("Means over tasks with the standard error sd/√n, and the cluster-robust standard error (CR1) over "
                     "the groups of each requested dimension (Miller 2024, arXiv:2411.00640), which allows for tasks "
                     "of one group (one app) succeeding or failing together, with its 95% interval from Student's t "
                     "on groups − 1 degrees of freedom; where the coverage study (docs/coverage.md) found it short, "
                     "the interval says approximate and why.  The plain standard errors come without an interval "
                     "(metrics.json gives none).", "cb-note")
    return note + html_table(["quantity", "value", "tasks", "grouping", "standard error", "95% interval"], rows,
                             numeric=(1, 2, 4), caption="Means over tasks", scroll=True)


def show_health(doc: Mapping, *, explorer_id: str = EXPLORER_ID, max_rows: int = 200) -> None:
    """Display the suite-health section of the report.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``health``, ``per_task``, ``k``).
    explorer_id : str
        The element id of the page's task explorer: task links open their task there.
    max_rows : int, default 200
        Rows of each task list shown (the explorer's filters show every task).

    Notes
    -----
    One sentence (the one summary.md has), then the quarantine candidates with their ineligible
    attempts by class, the inconsistent tasks, :func:`~capbench_nb.outputs.report.figures.plot_health`,
    and the two means over tasks with their standard errors (plain, and clustered by each
    dimension the document holds, with the document's t interval and its ``clustered_approximate``
    caveat).  Every number is the document's: the page computes no interval.
    """
    health = doc.get("health")
    if not isinstance(health, Mapping):
        show_html(paragraph("This metrics.json has no health block (an older capbench-nb wrote it); "
                            "recompute it with capbench-nb metrics.", "cb-note"))
        return
    entries = [(i, e) for i, e in enumerate(health.get("per_task") or []) if isinstance(e, Mapping)]
    per_task = {e.get("task_id"): e for e in doc.get("per_task") or [] if isinstance(e, Mapping)}
    threshold = fmt_pct(health.get("quarantine_threshold")).replace(".0%", "%")
    parts = [paragraph(health_sentence(doc) or "", "cb-verdict")]
    candidates = [(i, e) for i, e in entries if e.get("quarantine") is True]
    if candidates:
        parts.append(_quarantine_table(candidates, threshold, max_rows))
    else:
        parts.append(paragraph(f"No quarantine candidate: no task has environment plus evaluation attempts in at "
                               f"least {threshold} of its counted attempts.", "cb-note"))
    inconsistent = [(i, e) for i, e in entries if e.get("consistency") == CONSISTENCY[2]]
    if inconsistent:
        parts.append(_inconsistent_table(inconsistent, per_task, doc.get("k"), max_rows))
    else:
        parts.append(paragraph(f"No inconsistent task: every k-eligible task passed or failed all of attempts "
                               f"1..{doc.get('k')}.", "cb-note"))
    show_html("".join(parts))
    plot_health(doc)
    show_html(_means_table(health))
