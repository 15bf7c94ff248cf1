"""The report notebooks' sections: one ``show_*`` function per section of report.html.

Each renders its section through :func:`capbench_nb.outputs.html.tables.show_html` and returns None.
The report content is split by concern: :mod:`~capbench_nb.outputs.html.formatting` (values),
:mod:`~capbench_nb.outputs.html.escaping` (run-supplied strings), :mod:`~capbench_nb.outputs.summary`
(summary.md), :mod:`~capbench_nb.outputs.html.tables` (HTML blocks, the style) and
:mod:`~capbench_nb.outputs.report.figures` (the ``plot_*`` figures).  This module also offers the
names the notebooks call (``reporting.show_style()``, ``reporting.plot_headline(...)``, ...),
so a notebook imports one module.
"""

# long module: the report's section displays, one function per section of report.html

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any


from capbench_nb.format import ANOMALY_KINDS, CLASS_KEYS, INELIGIBLE_CLASSES, TELEMETRY_BOOL_FIELDS
from capbench_nb.metrics.registry import HEADLINE, headline_rates
from capbench_nb.outputs.html.escaping import html_escape, md_escape
from capbench_nb.outputs.html.formatting import (
    NA_NO_ELIGIBLE, NA_SOURCE, fmt_cost, fmt_count, fmt_interval, fmt_ms, fmt_pct, fmt_rate, formatter,
    is_null, join_words, judge_phrase, plural, telemetry_formatter,
)
from capbench_nb.outputs.html.tables import Raw, cell, html_table, id_cell, paragraph, show_html, show_style, show_table
from capbench_nb.outputs.report.explorer import explorer_html
from capbench_nb.outputs.report.figures import plot_headline, plot_slices, plot_telemetry
from capbench_nb.outputs.report.health import show_health
from capbench_nb.outputs.report.selection import show_selection
from capbench_nb.outputs.summary import anomaly_counts, summary_markdown
from capbench_nb.records.views import eligibility_by_outcome, outcomes_by_stage

#: The section displays, and the names the notebooks call from the modules that define them.
__all__ = [
    "NA_SOURCE",
    "fmt_ms",
    "fmt_count",
    "fmt_pct",
    "fmt_interval",
    "fmt_rate",
    "fmt_cost",
    "md_escape",
    "html_escape",
    "summary_markdown",
    "show_style",
    "show_table",
    "verdict",
    "show_headline",
    "headline_html",
    "show_help",
    "plot_headline",
    "show_explorer",
    "show_outcomes",
    "show_telemetry",
    "plot_telemetry",
    "show_anomalies",
    "show_provenance",
    "show_curves",
    "show_slices",
    "slice_table_html",
    "show_health",
    "show_selection",
]

#: The card detail of a headline mean, by metric name (a registry entry's description otherwise).
_MEAN_DETAILS = {"oracle_best_score@k": "mean best quality score over {n:,} k-eligible tasks;"
                                        " an upper bound, not a best-of-k system"}


def _card(label: str, value: str, detail: str) -> str:
    return (
        f'<div class="cb-card"><div class="cb-label">{html_escape(label, max_len=None)}</div>'
        f'<div class="cb-value">{cell(value)}</div>'
        f'<div class="cb-detail">{html_escape(detail, max_len=None)}</div></div>'
    )


def _rate_card(label: str, m: Mapping, planned: int) -> str:
    """A headline card of a rate: the value, its successes over tasks, the 95% interval and coverage."""
    n = int(m.get("n") or 0)
    if n and not is_null(m.get("value")):
        detail = (f"{m.get('successes')}/{n} tasks · 95% CI {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"
                  f" · coverage {fmt_pct(m.get('coverage'))} ({n:,} of {planned:,} planned)")
        return _card(label, fmt_pct(m["value"]), detail)
    return _card(label, NA_NO_ELIGIBLE, f"0 tasks in the denominator · coverage {fmt_pct(m.get('coverage'))}")


def _ineligible(run) -> dict[str, int]:
    """The run's ineligible attempts by outcome (the records view)."""
    return {c: int(n) for c, n in eligibility_by_outcome(run)["ineligible"].items()}


def verdict(doc: Mapping, ineligible: Mapping | None = None) -> str:
    """One plain sentence on the run: pass@1 with its interval and coverage, and what was excluded.

    For example ``pass@1 is 63.6% (95% CI 35.4-84.8%) over 11 of 13 planned tasks; 8 attempts
    were ineligible (3 environment, 1 evaluation, 3 skipped, 1 unknown).``  The numbers are the
    document's; the split of the ineligible attempts by class is ``ineligible`` (the records view
    :func:`~capbench_nb.records.views.eligibility_by_outcome`), or without it the document's counts
    of the classes that are never eligible (``attempts.by_failure_class``).
    """
    m = (doc.get("metrics") or {}).get("pass@1") or {}
    planned = int((doc.get("tasks") or {}).get("planned") or 0)
    n = int(m.get("n") or 0)
    if n and not is_null(m.get("value")):
        lo, hi = m.get("ci_low"), m.get("ci_high")
        ci = f"95% CI {fmt_pct(lo)[:-1]}–{fmt_pct(hi)}" if not (is_null(lo) or is_null(hi)) else "no interval"
        head = f"pass@1 is {fmt_pct(m['value'])} ({ci}) over {n:,} of {plural(planned, 'planned task')}"
    else:
        head = f"pass@1 is undefined: none of the {plural(planned, 'planned task')} has an eligible first attempt"
    attempts = doc.get("attempts") or {}
    excluded = int(attempts.get("total") or 0) - int(attempts.get("eligible") or 0)
    if ineligible is None:
        byc = attempts.get("by_failure_class") or {}
        ineligible = {c: int(byc.get(c) or 0) for c in INELIGIBLE_CLASSES}
    if excluded:
        split = join_words([f"{c:,} {name}" for name, c in ineligible.items() if c])
        tail = f"{plural(excluded, 'attempt')} {'was' if excluded == 1 else 'were'} ineligible ({split})"
    else:
        tail = "no attempt was ineligible"
    return f"{head}; {tail}."


def _config_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _run_facts(doc: Mapping, run) -> str:
    """The run's identity line: suite, model, config, status, judge, k, tasks, attempts."""
    suite = doc.get("suite") if isinstance(doc.get("suite"), Mapping) else None
    suite_text = " ".join(str(p) for p in (suite.get("name"), suite.get("version")) if p) if suite else ""
    config = dict((run.manifest.get("config") or {}) if run is not None else {})
    tasks, attempts = doc.get("tasks") or {}, doc.get("attempts") or {}
    facts = [
        ("suite", id_cell(suite_text, missing="not recorded") if suite_text else Raw('<span class="cb-na">not recorded</span>')),
        ("model", id_cell(_config_text(config.pop("model")), max_len=80) if "model" in config else None),
        ("status", id_cell(doc.get("status"), missing="not recorded")),
        ("judge", Raw(html_escape(judge_phrase(doc.get("judge"))))),
        ("k", Raw(f"{doc.get('k')} (fixed by the plan)")),
        ("tasks", Raw(f"{int(tasks.get('planned') or 0):,} planned, {int(tasks.get('observed') or 0):,} observed")),
        ("attempts", Raw(f"{int(attempts.get('total') or 0):,} counted, {int(attempts.get('eligible') or 0):,} eligible")),
    ]
    config.pop("judge", None)
    for key, value in list(config.items())[:12]:
        facts.append((str(key), id_cell(_config_text(value), max_len=80)))
    return '<div class="cb-facts">' + "".join(
        f'<span>{html_escape(name, max_len=60)}: <b>{value}</b></span>' for name, value in facts if value is not None
    ) + "</div>"


def show_headline(doc: Mapping, run=None) -> None:
    """Display the first screen (:func:`headline_html`): the run, the headline cards and one sentence of verdict."""
    show_html(headline_html(doc, run))


def headline_html(doc: Mapping, run=None) -> str:
    """The first screen: the run, the headline cards and one sentence of verdict, as HTML (no container).

    Parameters
    ----------
    doc : dict
        The metrics.json document.
    run : Run, optional
        The loaded run: its manifest's model and config are shown beside the suite.

    Notes
    -----
    Shows the run id, suite, model and the other config values, status, judge mode, k and the
    task and attempt counts; then pass@1, pass@k and pass^k with their 95% Wilson intervals, n
    and coverage, and oracle_best_score@k as a diagnostic; then :func:`verdict`.  A run that is
    not ``completed``, and any anomaly or invalid line, is flagged in a visible banner.
    """
    k = doc.get("k")
    planned = int((doc.get("tasks") or {}).get("planned") or 0)
    parts = [f'<div class="cb-run">Run {id_cell(doc.get("run_id"))}</div>', _run_facts(doc, run)]
    rates = [(metric.display(k), metric.value_in(doc) or {}) for metric in headline_rates()]
    selection = doc.get("selection")
    if isinstance(selection, Mapping):  # best-of-k with a selector: the system's number leads (spec section 9)
        rates.insert(0, (f"selected@k (k = {selection.get('k')}, selector)",
                         (selection.get("metrics") or {}).get("selected@k") or {}))
    cards = [_rate_card(label, m, planned) for label, m in rates]
    for metric in (m for m in HEADLINE if m.kind != "rate"):  # the diagnostics: a mean, no interval
        m = metric.value_in(doc) or {}
        value = m.get("value")
        detail = _MEAN_DETAILS.get(metric.name, metric.description + " (n = {n:,})")
        cards.append(_card(metric.display(k), "n/a (no scores)" if is_null(value) else formatter(metric.kind)(value),
                           detail.format(n=int(m.get("n") or 0))))
    parts.append(f'<div class="cb-cards">{"".join(cards)}</div>')
    parts.append(paragraph(verdict(doc, None if run is None else _ineligible(run)), "cb-verdict"))
    status = doc.get("status")
    if status is not None and status != "completed":
        parts.append(
            f'<div class="cb-warn">The run is <b>{html_escape(status)}</b>: some planned attempts may not have run; '
            "coverage shows how many planned tasks each rate keeps.</div>"
        )
    counts = anomaly_counts(doc)
    if sum(counts.values()):
        text = ", ".join(f"{n:,} {kind.replace('_', ' ')}" for kind, n in counts.items() if n)
        parts.append(
            f'<div class="cb-warn">Anomalies: {html_escape(text)}. These records enter no metric and no count; '
            "see the anomalies section.</div>"
        )
    parts.append(_help_html("What these numbers mean", _HEADLINE_HELP))
    return "".join(parts)


_HEADLINE_HELP = (
    "pass@1: the share of tasks whose first attempt succeeded, over the tasks whose attempt 1 is present and "
    "eligible. pass@k: the share of k-eligible tasks (attempts 1..k all present and eligible) with a success "
    "among attempts 1..k. pass^k: the share of k-eligible tasks whose attempts 1..k all succeeded: how reliably "
    "the agent solves a task, not whether it can. k is fixed by the plan, never by how many attempts finished. "
    "An attempt is eligible when a failure could be the agent's: environment, evaluation and skipped attempts "
    "are not, and leave their task out of a denominator exactly as a missing attempt would. Coverage is each "
    "denominator over the planned tasks. Each rate comes with its 95% Wilson score interval.",
)


def _help_html(summary: str, paragraphs: tuple[str, ...]) -> str:
    body = "".join(paragraph(p) for p in paragraphs)
    return f'<details class="cb-help"><summary>{html_escape(summary, max_len=None)}</summary>{body}</details>'


def show_help(summary: str, *paragraphs: str) -> None:
    """Display help text folded under ``summary`` (a ``<details>`` element), escaped."""
    show_html(_help_html(summary, paragraphs))


def show_explorer(doc: Mapping, run, *, report_dir: str | os.PathLike | None = None) -> None:
    """Display the task explorer: every planned task, sortable and filterable, with its attempts.

    See :mod:`capbench_nb.outputs.report.explorer` (what the page carries, and its size policy).

    Parameters
    ----------
    doc : dict
        The metrics.json document (``per_task``).
    run : Run
        The loaded run (attempt outcomes, stages, telemetry, evidence).
    report_dir : path-like, optional
        Where the report will be read from: artifact links are relative to it.
    """
    show_html(explorer_html(doc, run, report_dir=report_dir))


def _stage_table(run) -> str:
    """Counted attempts by failure stage and class (the records view :func:`~capbench_nb.records.views.outcomes_by_stage`)."""
    counts = outcomes_by_stage(run)
    srows = [[stage] + [fmt_count(int(v)) for v in row] for stage, row in zip(counts.index, counts.to_numpy().tolist())]
    return html_table(
        ["failure stage"] + list(counts.columns),
        srows,
        numeric=tuple(range(1, len(counts.columns) + 1)),
        caption="Outcomes by failure stage and class (a stage is set only with evidence)",
    )


def show_outcomes(doc: Mapping, run) -> None:
    """Display outcome counts by failure class and by failure stage.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``attempts.by_failure_class``).
    run : Run
        The loaded run (failure stages, eligibility of unknown attempts,
        evidence references).

    Notes
    -----
    Each attempt with a failure stage, its evidence resolved, is in the task explorer (filter
    "has a failure stage").
    """
    attempts = doc.get("attempts") or {}
    byc = attempts.get("by_failure_class") or {}
    total = int(attempts.get("total") or 0)
    split = eligibility_by_outcome(run)

    enters = {
        "success": "yes",
        "agent": "yes (as failures)",
        "environment": "no",
        "evaluation": "no",
        "skipped": "no",
    }
    rows = []
    for cls in CLASS_KEYS:
        n = int(byc.get(cls) or 0)
        share = fmt_pct(n / total) if total else "n/a (no attempts)"
        if cls == "unknown":
            e, ne = int(split.at["unknown", "eligible"]), int(split.at["unknown", "ineligible"])
            note = f"only when eligible (as failures): {e:,} eligible, {ne:,} not"
        else:
            note = enters[cls]
        rows.append([cls, fmt_count(n), share, note])
    rows.append(
        [
            "all counted attempts",
            fmt_count(total),
            fmt_pct(1.0) if total else "n/a (no attempts)",
            f"{int(attempts.get('eligible') or 0):,} agent-eligible",
        ]
    )
    parts = [
        html_table(
            ["failure class", "attempts", "share", "enters the denominators?"],
            rows,
            numeric=(1, 2),
            caption="Outcomes by failure class (counted attempts)",
            row_classes=[""] * len(CLASS_KEYS) + ["cb-total"],
        )
    ]

    parts.append(_stage_table(run))
    parts.append(paragraph("The attempts themselves, with their stage and evidence, are in the task explorer "
                           "above (filter by failure class or stage).", "cb-note"))
    show_html("".join(parts))


def show_telemetry(doc: Mapping) -> None:
    """Display the telemetry aggregates of the document, formatted for people.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``telemetry``).

    Notes
    -----
    Durations as ``842 ms`` / ``12.4 s`` / ``3 min 05 s``, counts with
    thousands separators, means and medians of counts with one decimal,
    booleans as ``n true of m``.  A statistic without values is
    ``n/a (no source)``, never 0.  Aggregates are over eligible attempts,
    except ``setup_ms`` (every counted attempt).
    """
    tele = doc.get("telemetry") or {}
    rows = []
    for name, agg in tele.items():
        agg = agg or {}
        over = "all attempts" if name == "setup_ms" else "eligible attempts"
        n = int(agg.get("n") or 0)
        nulls = int(agg.get("nulls") or 0)
        if name in TELEMETRY_BOOL_FIELDS or ("true" in agg and "sum" not in agg):
            true = agg.get("true")
            value = f"{int(true):,} true of {n:,}" if n and true is not None else NA_SOURCE
            rows.append([id_cell(name), over, fmt_count(n), fmt_count(nulls), value, "", "", "", "", ""])
            continue
        f = telemetry_formatter(name)
        stats = [f(agg.get(s)) if n else NA_SOURCE for s in ("sum", "mean", "median", "p90", "min", "max")]
        rows.append([id_cell(name), over, fmt_count(n), fmt_count(nulls), *stats])
    if not rows:
        show_html(paragraph("No telemetry aggregates in the document.", "cb-note"))
        return
    parts = [
        html_table(
            ["field", "over", "n", "nulls", "sum", "mean", "median", "p90", "min", "max"],
            rows,
            numeric=(2, 3, 4, 5, 6, 7, 8, 9),
            caption="Telemetry aggregates (n = attempts with a value; nulls = attempts without a source)",
        ),
        paragraph(
            "Boolean fields count true values among attempts with a value. Median and p90 interpolate linearly.",
            "cb-note",
        ),
    ]
    show_html("".join(parts))


def show_anomalies(doc: Mapping, *, max_rows: int = 1000) -> None:
    """Display every anomaly and invalid line, or "No anomalies.".

    Parameters
    ----------
    doc : dict
        The metrics.json document (``anomalies``, ``anomaly_counts``).
    max_rows : int, default 1000
        Rows listed; the counts above the table are complete.
    """
    anomalies = list(doc.get("anomalies") or [])
    counts = anomaly_counts(doc)
    if not anomalies and not sum(counts.values()):
        show_html('<div class="cb-ok">No anomalies.</div>')
        return
    labels = {
        "above_planned_repeats": "above planned repeats",
        "task_not_in_plan": "task not in the plan",
        "invalid_line": "invalid lines (skipped with --allow-invalid)",
        "invalid_selection_line": "invalid lines of selection.jsonl (skipped with --allow-invalid)",
    }
    summary = ", ".join(f"{counts[k]:,} {labels[k]}" for k in ANOMALY_KINDS if counts[k])
    parts = [
        f'<div class="cb-warn"><b>{plural(max(len(anomalies), sum(counts.values())), "anomaly", "anomalies")}</b>: '
        f"{html_escape(summary)}. "
        "These records enter no metric and no count.</div>"
    ]
    rows, classes = [], []
    for a in anomalies[:max_rows]:
        att = a.get("attempt")
        rows.append(
            [
                a.get("kind") or "",
                id_cell(a.get("task_id")),
                str(att) if att is not None else "n/a (unreadable)",
                fmt_count(a.get("line")) if a.get("line") is not None else "n/a",
                Raw(html_escape(a.get("reason"), max_len=400)),
            ]
        )
        classes.append("cb-bad" if a.get("kind") in ("invalid_line", "invalid_selection_line") else "")
    parts.append(
        html_table(
            ["kind", "task", "attempt", "line", "reason"],
            rows,
            numeric=(2, 3),
            caption="Anomalies (file order)",
            scroll=len(rows) > 25,
            row_classes=classes,
        )
    )
    if len(anomalies) > max_rows:
        parts.append(
            paragraph(f"Showing the first {max_rows:,} of {len(anomalies):,} anomalies; metrics.json lists all.", "cb-note")
        )
    show_html("".join(parts))


def _param_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def show_provenance(doc: Mapping, parameters: Mapping | None = None) -> None:
    """Display the provenance: toolkit version, input hashes, options and the notebook parameters.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``provenance``, ``schema_version``, ``run_id``).
    parameters : dict, optional
        The report's parameters (papermill), shown as given, escaped.
    """
    prov = doc.get("provenance") or {}
    rows = [
        ["toolkit", prov.get("toolkit") or "n/a (not recorded)"],
        ["toolkit version", prov.get("toolkit_version") or "n/a (not recorded)"],
        ["metrics schema", doc.get("schema_version") or "n/a (not recorded)"],
        ["run_id", id_cell(doc.get("run_id"))],
    ]
    for name, digest in (prov.get("inputs") or {}).items():
        rows.append([f"input {name}", Raw(f'<span class="cb-mono">{html_escape(digest)}</span>')])
    for name, value in (prov.get("options") or {}).items():
        rows.append([f"option {name}", _param_text(value)])
    parts = [html_table(["provenance", "value"], rows, caption="Provenance")]
    params = dict(parameters or {})
    if params:
        prow = [
            [id_cell(str(k)), Raw(f'<span class="cb-mono">{html_escape(_param_text(v), max_len=1000)}</span>')]
            for k, v in params.items()
        ]
        parts.append(html_table(["parameter", "value"], prow, caption="Report parameters"))
    else:
        parts.append(paragraph("No report parameters.", "cb-note"))
    show_html("".join(parts))


def show_curves(doc: Mapping) -> None:
    """Display pass@j and pass^j for j = 1..k (planned prefixes) beside the unbiased estimators.

    Two tables, labelled as the different estimators they are: the planned
    prefix (the headline's definition, with Wilson intervals and the
    k-eligible-task counts per j) and the unbiased estimators over all
    eligible attempts per task (Chen et al. 2021; Yao et al. 2024), which have
    no interval here.
    """
    curves = doc.get("curves") or {}
    prefix = curves.get("planned_prefix") or []
    rows = [
        [str(p.get("j")), fmt_rate(p.get("pass@j") or {}), fmt_rate(p.get("pass^j") or {}),
         fmt_pct((p.get("pass@j") or {}).get("coverage"))]
        for p in prefix
    ]
    parts = [html_table(["j", "pass@j (planned prefix)", "pass^j (planned prefix)", "coverage"], rows,
                    numeric=(0, 3), caption="Planned prefixes: attempts 1..j of the tasks whose attempts 1..j "
                                             "are all present and eligible")] if rows else []
    unbiased = curves.get("unbiased") or {}
    points = unbiased.get("points") or []
    if points:
        urows = [[str(p["j"]), fmt_pct(p["pass@j"]), fmt_pct(p["pass^j"])] for p in points]
        parts.append(html_table(["j", "pass@j (unbiased)", "pass^j (unbiased)"], urows, numeric=(0, 1, 2),
                            caption=f"A different estimator: unbiased over all eligible attempts of "
                                    f"{unbiased.get('tasks', 0)} tasks (Chen et al. 2021; Yao et al. 2024)"))
    else:
        parts.append(paragraph("Unbiased estimators: n/a (no task has an eligible attempt).", "cb-note"))
    show_html("".join(parts))


def slice_table_html(dims: list[str], entries: list[Mapping], *, k: int | None = None) -> str:
    """The table of slice metrics: one row per entry of metrics.json's ``slices`` (``value``: one slice value,
    or ``values``: one per dimension of ``dims``), small slices marked, the rates headed by name or, given
    ``k``, by ``pass@3``-style labels.  The report's slice section and ``cb.metrics_by`` in Jupyter show this
    one table."""
    rates = headline_rates()  # a slice entry holds each headline rate under its name
    rows, classes = [], []
    for e in entries:
        small = bool(e.get("small"))
        values = e["values"] if "values" in e else [e.get("value")]
        rows.append([
            *(id_cell(v, missing="(no value)") for v in values),
            fmt_count(e.get("tasks")),
            "small" if small else "",
            *(fmt_rate(e.get(m.name) or {}) for m in rates),
            fmt_count((e.get("attempts") or {}).get("total")),
            fmt_count((e.get("attempts") or {}).get("eligible")),
        ])
        classes.append("cb-small" if small else "")
    d = len(dims)
    label = " × ".join(str(dim) for dim in dims)
    return paragraph(f"Slices by {label}", "cb-title") + html_table(
        [*(str(dim) for dim in dims), "tasks", "", *(m.name if k is None else m.display(k) for m in rates),
         "attempts", "eligible"], rows,
        numeric=(d, d + 2 + len(rates), d + 3 + len(rates)),
        caption=f"Metrics per value of {label}; coverage is within the slice", row_classes=classes)


def show_slices(doc: Mapping) -> None:
    """Display, for every slice dimension in the document, a table and a chart of the slice metrics.

    Slices with fewer than ``SMALL_SLICE`` planned tasks are marked *small*:
    their intervals are wide.  Slice values are run-supplied and escaped.
    """
    slices = doc.get("slices") or {}
    if not slices:
        show_html(paragraph("No slice dimensions were requested (capbench-nb report --slice DIM).", "cb-note"))
        return
    for dim, entries in slices.items():
        show_html(slice_table_html([dim], entries))
        plot_slices(str(dim), entries, int(doc.get("k") or 1))
