"""The report notebooks' sections: one ``show_*`` function per section of report.html.

Each renders its section through :func:`capbench_nb.outputs.tables.show_html` and returns None.
The report content is split by concern: :mod:`~capbench_nb.outputs.formatting` (values),
:mod:`~capbench_nb.outputs.escaping` (run-supplied strings), :mod:`~capbench_nb.outputs.summary`
(summary.md), :mod:`~capbench_nb.outputs.tables` (HTML blocks, the style) and
:mod:`~capbench_nb.outputs.figures` (the ``plot_*`` figures).  This module also offers the
names the notebooks call (``reporting.show_style()``, ``reporting.plot_headline(...)``, ...),
so a notebook imports one module.
"""

# long module: the report's section displays, one function per section, moved as they were
# (the outputs are rebuilt by issue #13)

from __future__ import annotations

import json
import math
import os
import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from capbench_nb.format import ANOMALY_KINDS, CLASS_KEYS, FAILURE_STAGES, TELEMETRY_BOOL_FIELDS
from capbench_nb.metrics.rates import per_task
from capbench_nb.outputs.escaping import html_escape, md_escape
from capbench_nb.outputs.figures import outcome_kind, plot_attempt_grid, plot_headline, plot_slices, plot_telemetry
from capbench_nb.outputs.formatting import (
    NA_NO_ELIGIBLE, NA_SOURCE, fmt_cost, fmt_count, fmt_interval, fmt_ms, fmt_pct, fmt_rate, fmt_score,
    is_null, judge_phrase, plural, telemetry_formatter,
)
from capbench_nb.outputs.summary import anomaly_counts, summary_markdown
from capbench_nb.outputs.tables import Raw, cell, html_table, id_cell, paragraph, show_html, show_style, show_table

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
    "show_headline",
    "plot_headline",
    "plot_attempt_grid",
    "show_outcomes",
    "show_per_task",
    "show_telemetry",
    "plot_telemetry",
    "show_anomalies",
    "show_provenance",
    "show_curves",
    "show_slices",
]

_METRIC_LABELS = {"pass@1": "pass@1", "pass@k": "pass@k", "pass^k": "pass^k"}


def _card(label: str, value: str, detail: str) -> str:
    return (
        f'<div class="cb-card"><div class="cb-label">{html_escape(label, max_len=None)}</div>'
        f'<div class="cb-value">{cell(value)}</div>'
        f'<div class="cb-detail">{html_escape(detail, max_len=None)}</div></div>'
    )


def show_headline(doc: Mapping) -> None:
    """Display the headline: run identity, k, task and attempt counts, the three rates.

    Parameters
    ----------
    doc : dict
        The metrics.json document.

    Notes
    -----
    Shows run_id, suite name and version, status, judge mode (``judge`` or
    ``--no-judge (hard assertions only)``), k, planned/observed tasks,
    attempts total/eligible, then pass@1, pass@k and pass^k with their 95%
    Wilson intervals, n and coverage, and oracle_best_score@k as a
    diagnostic.  A run that is not ``completed``, and any anomaly or invalid
    line, is flagged in a visible banner.
    """
    k = doc.get("k")
    tasks = doc.get("tasks") or {}
    attempts = doc.get("attempts") or {}
    suite = doc.get("suite") if isinstance(doc.get("suite"), Mapping) else None
    planned = int(tasks.get("planned") or 0)
    suite_text = " ".join(str(p) for p in (suite.get("name"), suite.get("version")) if p) if suite else ""
    parts = [f'<div class="cb-title">Run {id_cell(doc.get("run_id"))}</div>']
    rows = [
        ["run_id", id_cell(doc.get("run_id"))],
        ["suite", id_cell(suite_text, missing="not recorded") if suite_text else "n/a (not recorded)"],
        ["status", id_cell(doc.get("status"), missing="not recorded")],
        ["judge mode", judge_phrase(doc.get("judge"))],
        ["k (fixed by the plan)", str(k)],
        ["tasks planned / observed", f"{planned:,} / {int(tasks.get('observed') or 0):,}"],
        [
            "attempts counted / agent-eligible",
            f"{int(attempts.get('total') or 0):,} / {int(attempts.get('eligible') or 0):,}",
        ],
    ]
    parts.append(html_table(["run", "value"], rows))

    cards = []
    metrics = doc.get("metrics") or {}
    for key in ("pass@1", "pass@k", "pass^k"):
        m = metrics.get(key) or {}
        n = int(m.get("n") or 0)
        label = key if key == "pass@1" else f"{key} (k = {k})"
        if n and not is_null(m.get("value")):
            value = fmt_pct(m["value"])
            detail = (
                f"{m.get('successes')}/{n} tasks · 95% CI {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"
                f" · coverage {fmt_pct(m.get('coverage'))} ({n:,} of {planned:,} planned)"
            )
        else:
            value = NA_NO_ELIGIBLE
            detail = f"0 tasks in the denominator · coverage {fmt_pct(m.get('coverage'))}"
        cards.append(_card(label, value, detail))
    oracle = metrics.get("oracle_best_score@k") or {}
    cards.append(
        _card(
            "oracle_best_score@k (diagnostic)",
            fmt_score(oracle.get("value"), none="n/a (no scores)"),
            f"mean best quality score over {int(oracle.get('n') or 0):,} k-eligible tasks;"
            " an upper bound, not a best-of-k system",
        )
    )
    parts.append(f'<div class="cb-cards">{"".join(cards)}</div>')

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
    show_html("".join(parts))


def _evidence_list(value: Any) -> list[str]:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    try:
        parsed = json.loads(str(value))
    except ValueError:
        return [str(value)]
    return [str(v) for v in parsed] if isinstance(parsed, list) else [str(parsed)]


def _evidence_link(base: str, artifact_dir: Any, reference: str) -> Raw:
    """``<a href="BASE/artifact_dir/FILE">FILE#POINTER</a>``, every part escaped and percent-encoded."""
    text = html_escape(reference)
    if artifact_dir is None or artifact_dir is pd.NA:
        return Raw(f'<span class="cb-mono">{text}</span>')
    file = reference.partition("#")[0]
    path = (
        posixpath.join(base, str(artifact_dir).replace("\\", "/"), file)
        if base
        else posixpath.join(str(artifact_dir).replace("\\", "/"), file)
    )
    # quote() leaves only unreserved characters and "/": no scheme, query or fragment can appear.
    href = html_escape(quote(path, safe="/"), max_len=None)
    return Raw(f'<a class="cb-mono" href="{href}">{text}</a>')


# long function: moved as it was; the report's outputs are rebuilt by issue #13
def show_outcomes(
    doc: Mapping, run, *, link_base: str | None = None, report_dir: str | None = None, max_rows: int = 500
) -> None:
    """Display outcome counts by failure class and stage, and the attempts with a failure stage.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``attempts.by_failure_class``).
    run : Run
        The loaded run (failure stages, eligibility of unknown attempts,
        evidence references).
    link_base : str, optional
        Prefix of evidence links, as seen from the report; default: the run
        directory as given (``run.path``).  Links are
        ``LINK_BASE/artifact_dir/FILE``, link text the reference itself.
    report_dir : str, optional
        Where the report will be read from: links are then relative to it
        (ignored when ``link_base`` is given), so they work wherever the run
        and the report are moved together.
    max_rows : int, default 500
        Attempts listed with their evidence; the rest are counted.
    """
    attempts = doc.get("attempts") or {}
    byc = attempts.get("by_failure_class") or {}
    total = int(attempts.get("total") or 0)
    a = run.attempts
    succ = a["success"].to_numpy(dtype=bool, na_value=False)
    elig = a["agent_eligible"].to_numpy(dtype=bool, na_value=False)
    fcls = a["failure_class"].astype(object).to_numpy()
    stages = a["failure_stage"].astype(object).to_numpy()
    outcome = (
        np.array([outcome_kind(bool(s), f) for s, f in zip(succ, fcls)], dtype=object)
        if len(a)
        else np.array([], dtype=object)
    )

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
            mask = outcome == "unknown"
            e, ne = int((mask & elig).sum()), int((mask & ~elig).sum())
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

    # Stage by class.
    stage_names = list(FAILURE_STAGES) + ["(no stage)"]
    stage_of = np.array([s if isinstance(s, str) else "(no stage)" for s in stages], dtype=object)
    srows = []
    for st in stage_names:
        m = stage_of == st if len(a) else np.array([], dtype=bool)
        srows.append(
            [st] + [fmt_count(int((m & (outcome == c)).sum())) for c in CLASS_KEYS] + [fmt_count(int(m.sum()))]
        )
    parts.append(
        html_table(
            ["failure stage"] + list(CLASS_KEYS) + ["total"],
            srows,
            numeric=tuple(range(1, len(CLASS_KEYS) + 2)),
            caption="Outcomes by failure stage and class (a stage is set only with evidence)",
        )
    )

    # Attempts with a stage, with their evidence.
    staged = np.flatnonzero(stage_of != "(no stage)") if len(a) else np.array([], dtype=int)
    if len(staged):
        order = {t: i for i, t in enumerate(run.plan["task_id"].astype(object))}
        tids = a["task_id"].astype(object).to_numpy()
        nums = a["attempt"].to_numpy(dtype="int64")
        staged = sorted(staged, key=lambda r: (order.get(tids[r], len(order)), nums[r]))
        if link_base is not None:
            base = link_base
        elif report_dir is not None:
            base = posixpath.normpath(os.path.relpath(os.path.abspath(run.path), os.path.abspath(report_dir)))
        else:
            base = run.path.as_posix()
        adirs = a["artifact_dir"].astype(object).to_numpy()
        evid = a["evidence"].astype(object).to_numpy()
        erows = []
        for r in staged[:max_rows]:
            adir = adirs[r] if isinstance(adirs[r], str) else None
            links = [_evidence_link(base, adir, ref) for ref in _evidence_list(evid[r])]
            erows.append(
                [
                    id_cell(tids[r]),
                    str(int(nums[r])),
                    outcome[r],
                    stage_of[r],
                    Raw("<br>".join(links)) if links else "n/a (no evidence)",
                ]
            )
        parts.append(
            html_table(
                ["task", "attempt", "class", "stage", "evidence"],
                erows,
                numeric=(1,),
                caption="Attempts with a failure stage, and their evidence",
                scroll=len(erows) > 25,
            )
        )
        if len(staged) > max_rows:
            parts.append(
                paragraph(f"Showing the first {max_rows:,} of {len(staged):,} attempts with a failure stage.", "cb-note")
            )
    else:
        parts.append(paragraph("No counted attempt has a failure stage (so no evidence to link).", "cb-note"))
    show_html("".join(parts))


# long function: moved as it was; the report's outputs are rebuilt by issue #13
def show_per_task(doc: Mapping, run, *, max_rows: int = 1000) -> None:
    """Display the per-task statistics table, in plan order.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``per_task``: counts, k-eligibility,
        first success, cost to first success, oracle best score).
    run : Run
        The loaded run (:func:`capbench_nb.metrics.rates.per_task`: success rate
        over eligible attempts with its Wilson interval, median wall time and
        tokens).
    max_rows : int, default 1000
        Tasks shown; the rest are counted below the table (every task is in
        metrics.json).
    """
    table = per_task(run.attempts, plan=run.plan, k=run.k)
    entries = list(doc.get("per_task") or [])
    by_id = {e.get("task_id"): e for e in entries}
    cols = {name: table[name].to_numpy(dtype=object, na_value=None) for name in table.columns}
    rows = []
    n = len(table)
    for i in range(min(n, max_rows)):
        tid = cols["task_id"][i]
        e = entries[i] if i < len(entries) and entries[i].get("task_id") == tid else by_id.get(tid, {})
        eligible = int(e.get("eligible", cols["eligible"][i]) or 0)
        rate = cols["success_rate"][i]
        if rate is None:
            rate_text = "n/a (no eligible attempts)"
        else:
            rate_text = f"{fmt_pct(rate)} {fmt_interval(cols['success_ci_low'][i], cols['success_ci_high'][i])}"
        first = e.get("first_success_attempt", cols["first_success_attempt"][i])
        cost = e.get("cost_to_first_success")
        if first is None or not isinstance(cost, Mapping):
            c_wall = c_tok = c_cost = "n/a (no success)"
        else:
            c_wall, c_tok, c_cost = (
                fmt_ms(cost.get("task_wall_ms")),
                fmt_count(cost.get("total_tokens")),
                fmt_cost(cost.get("cost")),
            )
        k_elig = e.get("k_eligible", cols["k_eligible"][i])
        oracle = e.get("oracle_best_score", cols["oracle_best_score"][i])
        oracle_text = fmt_score(oracle, none="n/a (not k-eligible)" if not k_elig else "n/a (no score)")
        no_elig = "n/a (no eligible attempts)"
        med_wall = fmt_ms(cols["median_task_wall_ms"][i]) if eligible else no_elig
        med_tok = fmt_count(cols["median_total_tokens"][i]) if eligible else no_elig
        rows.append(
            [
                id_cell(tid),
                fmt_count(e.get("planned_repeats", cols["planned_repeats"][i])),
                fmt_count(e.get("attempts", cols["attempts"][i])),
                fmt_count(eligible),
                "yes" if k_elig else "no",
                fmt_count(e.get("successes", cols["successes"][i])),
                rate_text,
                str(first) if first is not None else "none",
                c_wall,
                c_tok,
                c_cost,
                oracle_text,
                med_wall,
                med_tok,
            ]
        )
    headers = [
        "task",
        "planned repeats",
        "attempts",
        "eligible",
        "k-eligible",
        "successes",
        "success rate [95% CI]",
        "first success",
        "time to first success",
        "tokens to first success",
        "cost to first success",
        "oracle best score",
        "median wall time",
        "median tokens",
    ]
    parts = [
        html_table(
            headers,
            rows,
            numeric=(1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13),
            caption="Per-task statistics (plan order; success rate over eligible attempts)",
            scroll=True,
        )
    ]
    if n > max_rows:
        parts.append(paragraph(f"Showing the first {max_rows:,} of {n:,} tasks; metrics.json lists every task.", "cb-note"))
    parts.append(
        paragraph(
            "Cost to first success sums task wall time, total tokens and cost over the eligible attempts up to the "
            "first success; a sum is n/a when any addend has no source. Medians are over eligible attempts.",
            "cb-note",
        )
    )
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
        classes.append("cb-bad" if a.get("kind") == "invalid_line" else "")
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
        rows, classes = [], []
        for e in entries:
            small = bool(e.get("small"))
            rows.append([
                id_cell(e.get("value"), missing="(no value)"),
                fmt_count(e.get("tasks")),
                "small" if small else "",
                fmt_rate(e.get("pass@1") or {}),
                fmt_rate(e.get("pass@k") or {}),
                fmt_rate(e.get("pass^k") or {}),
                fmt_count((e.get("attempts") or {}).get("total")),
                fmt_count((e.get("attempts") or {}).get("eligible")),
            ])
            classes.append("cb-small" if small else "")
        show_html(paragraph(f"Slices by {dim}", "cb-title") + html_table(
            [str(dim), "tasks", "", "pass@1", "pass@k", "pass^k", "attempts", "eligible"], rows,
            numeric=(1, 6, 7), caption=f"Metrics per value of {dim}; coverage is within the slice",
            row_classes=classes))
        plot_slices(str(dim), entries, int(doc.get("k") or 1))
