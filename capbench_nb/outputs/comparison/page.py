"""comparison.html's sections and the Jupyter view of a comparison: runs, verdicts, tables, flipped tasks.

Everything here reads the comparison document (:func:`~capbench_nb.metrics.comparison.compare_runs`,
the comparison.json dict), each run's metrics document
(:func:`~capbench_nb.metrics.document.compute_metrics`, handed in, for per-task counts) and,
for the attempts of a flipped task, the two loaded runs; nothing computes a metric.

The comparison result stays a plain dict (comparison.json is unchanged); for
Jupyter, :class:`ComparisonView` wraps it with a short ``repr`` (the verdicts)
and an HTML view (the whole page).  The notebook ``notebooks/compare_runs.ipynb``
shows the same sections one by one.

Safety: every run-supplied string (run ids, suites, models, warnings, task
ids, failure classes, evidence) is either escaped by
:func:`~capbench_nb.outputs.html.escaping.html_escape` or travels in the pages' one JSON data
island (``<script type="application/json">``, :func:`~capbench_nb.outputs.html.assets.json_island`:
``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so its text is the JSON exactly and never markup)
that our one inline script (:mod:`capbench_nb.outputs.comparison.script`) reads with
``JSON.parse(textContent)`` and inserts with ``textContent`` only.  Nothing is loaded from the
network.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.format import TELEMETRY_MS_FIELDS
from capbench_nb.metrics.compatibility import check_warning_kinds
from capbench_nb.outputs.comparison.script import flips_script
from capbench_nb.outputs.html.assets import PAGE_CSS, island_id, island_json, json_island
from capbench_nb.outputs.html.escaping import html_escape, plain_label
from capbench_nb.outputs.html.formatting import fmt_ms, fmt_p, fmt_pct, fmt_pp, is_null, metric_label
from capbench_nb.records.details import evidence_texts

__all__ = [
    "MAX_DETAIL_TASKS",
    "MAX_EVIDENCE",
    "FLIPS_PAGE",
    "fmt_pp_interval",
    "fmt_telemetry",
    "verdict",
    "verdicts",
    "style_html",
    "header_html",
    "paired_html",
    "forest_html",
    "telemetry_html",
    "flips_data",
    "flips_html",
    "frame_html",
    "POWER_HEADERS",
    "ComparisonView",
]

#: Flipped tasks whose attempts are embedded (the others are listed, their attempts named as omitted).
MAX_DETAIL_TASKS = 2000
#: Flipped tasks drawn at first (and added by each "show more"), so that telemetry and power planning stay near.
FLIPS_PAGE = 20
#: Evidence references resolved inline, over all embedded tasks (later ones are named, not resolved).
MAX_EVIDENCE = 2000
_EVIDENCE_CHARS = 400
_TELEMETRY_NAMES = {"task_wall_ms": "wall time per attempt", "total_tokens": "total tokens per attempt"}


# =========================================================================== numbers with units


def fmt_pp_interval(low: Any, high: Any) -> str:
    """An interval of differences in percentage points, the unit once: ``"-11.0 to +25.9 pp"``; ``"n/a"``."""
    if is_null(low) or is_null(high):
        return "n/a"
    return f"{fmt_pp(low)[:-3]} to {fmt_pp(high)}"


def fmt_telemetry(field: str, value: Any, *, signed: bool = False) -> str:
    """A telemetry median or difference with its unit: durations as ms / s / min, counts as tokens."""
    if is_null(value):
        return "n/a"
    v = float(value)
    plus = "+" if signed and v > 0 else ""
    if field in TELEMETRY_MS_FIELDS:
        return plus + fmt_ms(v)
    number = f"{v:,.0f}" if v.is_integer() else f"{v:,.1f}"
    unit = " tokens" if field.endswith("tokens") else ""
    return f"{plus}{number}{unit}"


def _level(doc: dict) -> tuple[float, str, str]:
    """(confidence, ``"95%"``, ``"5%"``) of the document."""
    confidence = float(doc["provenance"]["options"]["confidence"])
    return confidence, f"{100 * confidence:g}%", f"{100 * (1 - confidence):.3g}%"


# =========================================================================== verdicts


def verdict(name: str, entry: dict, *, confidence: float = 0.95) -> str:
    """One sentence on a paired metric: the difference, its interval, the McNemar p and the 5% verdict.

    Parameters
    ----------
    name : {"pass@1", "pass@k", "pass^k"}
    entry : dict
        ``doc["paired"][name]`` of the comparison document.
    confidence : float, default 0.95
        The document's confidence level; significance is tested at ``1 - confidence``.

    Returns
    -------
    str
        e.g. ``"pass@1: B is 7.8 pp higher (95% CI -11.0 to +25.9 pp), McNemar p = 0.54: not significant
        at 5% (51 paired tasks)"``.  Significance is McNemar's p below the level; when the interval
        says otherwise (it excludes 0 while p is above, or the reverse) the sentence says so.
    """
    label = metric_label(name, entry["k"])
    level, alpha = f"{100 * confidence:g}%", f"{100 * (1 - confidence):.3g}%"
    n = entry["n_pairs"]
    if not n or is_null(entry["difference"]):
        return f"{label}: no task is paired (none is eligible in both runs), so there is no verdict"
    d, low, high, p = entry["difference"], entry["ci_low"], entry["ci_high"], entry["mcnemar_p"]
    size = fmt_pp(abs(d), signed=False)
    head = "B and A are level (0.0 pp" if d == 0 else f"B is {size} {'higher' if d > 0 else 'lower'} ("
    ci = "no interval" if is_null(low) else f"{level} CI {fmt_pp_interval(low, high)}"
    head += f", {ci})" if d == 0 else f"{ci})"
    significant = not is_null(p) and float(p) < 1 - confidence
    text = (f"{label}: {head}, McNemar p = {fmt_p(p, 1 - confidence)}: "
            f"{'significant' if significant else 'not significant'} at {alpha} ({n:,} paired task{'s' if n != 1 else ''})")
    if not is_null(low):
        excludes_zero = low > 0 or high < 0
        if excludes_zero != significant:
            text += (f"; the interval {'excludes' if excludes_zero else 'includes'} 0, so the evidence is borderline")
    return text


def verdicts(doc: dict) -> list[str]:
    """:func:`verdict` of every paired metric of the comparison document, in document order."""
    confidence = _level(doc)[0]
    return [verdict(name, entry, confidence=confidence) for name, entry in doc["paired"].items()]


def _significant(doc: dict, entry: dict) -> bool:
    return not is_null(entry["mcnemar_p"]) and float(entry["mcnemar_p"]) < 1 - _level(doc)[0]


# =========================================================================== HTML building blocks


def style_html() -> str:
    """The comparison's style sheet (a ``<style>`` element; every rule is scoped to ``.cbc``)."""
    return f"<style>{PAGE_CSS}</style>"


def _td(text: str, label: str, *, num: bool = False) -> str:
    cls = ' class="cbc-num"' if num else ""
    return f'<td{cls} data-label="{html_escape(label)}">{text}</td>'


def _table(columns: list[tuple[str, bool]], rows: list[list[str]], *, caption: str | None = None,
           cards: bool = True) -> str:
    """An HTML table of escaped cells; ``columns`` are (header, numeric); narrow screens get cards."""
    num_class = ' class="cbc-num"'
    head = "".join(f'<th scope="col"{num_class if num else ""}>{html_escape(name)}</th>' for name, num in columns)
    body = "".join("<tr>" + "".join(_td(cell, name, num=num) for cell, (name, num) in zip(row, columns)) + "</tr>"
                   for row in rows)
    cap = f"<caption>{html_escape(caption)}</caption>" if caption else ""
    kind = "cbc-t cbc-cards" if cards else "cbc-t"
    return (f'<table class="{kind}">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _run_card(tag: str, run: dict, extra: str) -> str:
    suite = run["suite"] or {}
    config = run["config"] or {}
    suite_text = " ".join(str(x) for x in (suite.get("name"), suite.get("version")) if x is not None) or "not named"
    model = config.get("model")
    lock = (f' · lock <code title="{html_escape(suite["lock"])}">{html_escape(suite["lock"][:19])}…</code>'
            if suite.get("lock") else "")  # the whole digest on hover and in comparison.json
    return (f'<div class="cbc-run"><span class="cbc-tag{" cbc-b" if tag == "B" else ""}">{tag}</span>'
            f'<span class="cbc-runid">{html_escape(run["run_id"])}</span><br>'
            f'suite {html_escape(suite_text)}{lock} · model {html_escape("not named" if model is None else model)}<br>'
            f'k = {run["k"]} · {run["tasks_planned"]:,} planned tasks · status {html_escape(run["status"])}'
            f'{extra}</div>')


def _warnings_html(doc: dict, *, strict: bool, allow_diff: tuple[str, ...]) -> str:
    warnings = doc["compatibility"]["warnings"]
    parts = []
    for w in warnings:
        allowed = w["code"] in allow_diff
        badge = '<span class="cbc-badge">allowed (--allow-diff)</span>' if allowed else ""
        parts.append(f'<div class="cbc-warn{" cbc-allowed" if allowed else ""}"><b>{html_escape(w["code"])}</b>'
                     f"{badge}: {html_escape(w['message'], max_len=1000)}</div>")
    for u in doc["compatibility"]["unchecked"]:
        parts.append(f'<div class="cbc-warn cbc-allowed"><b>not checked: {html_escape(u["code"])}</b>: '
                     f"{html_escape(u['reason'], max_len=1000)}</div>")
    if not warnings:
        lead = "<p><b>No compatibility warning</b>: suite, task set, k, judge, model, configuration, toolkit and " \
               "evaluation contract agree as far as the manifests and artifacts show.</p>"
    else:
        n = len(warnings)
        lead = f"<p><b>{n} compatibility warning{'s' if n != 1 else ''}</b>: read the verdicts with them in mind."
        if strict:
            blocking = [w for w in warnings if w["code"] not in allow_diff]
            one = len(blocking) == 1
            lead += (f" Strict mode: {len(blocking)} of them {'is' if one else 'are'} not of a kind allowed with "
                     f"--allow-diff and {'fails' if one else 'fail'} the comparison." if blocking else
                     " Strict mode: every one is of a kind allowed with --allow-diff, so the comparison passes.")
        lead += "</p>"
    return lead + "".join(parts)


def header_html(doc: dict, *, strict: bool = False, allow_diff=()) -> str:
    """The first screen: both runs named (id, suite, model, k, task counts), one verdict per metric,
    and the compatibility warnings (those of a kind in ``allow_diff`` marked allowed)."""
    allow_diff = check_warning_kinds(allow_diff)
    a, b = doc["run_a"], doc["run_b"]
    paired1 = doc["paired"].get("pass@1", {}).get("n_pairs", 0)
    tasks = doc["tasks"]
    common = (f" · {tasks['common']:,} in common, {paired1:,} paired for pass@1" if tasks["common"] else
              " · no task in common")
    items = []
    for name, entry in doc["paired"].items():
        cls = "cbc-none" if not entry["n_pairs"] else "cbc-sig" if _significant(doc, entry) else ""
        items.append(f'<li class="{cls}">{html_escape(verdict(name, entry, confidence=_level(doc)[0]), max_len=None)}'
                     "</li>")
    return (f'<div class="cbc cbc-header"><h1 class="cbc-title">{html_escape(b["run_id"], max_len=120)} (B) against '
            f'{html_escape(a["run_id"], max_len=120)} (A)</h1>'
            f'<div class="cbc-runs">{_run_card("A", a, " · the baseline")}{_run_card("B", b, common)}</div>'
            f'<ul class="cbc-verdicts">{"".join(items)}</ul>'
            f'{_warnings_html(doc, strict=strict, allow_diff=allow_diff)}</div>')


def paired_html(doc: dict) -> str:
    """The paired analysis as a formatted table: both rates, B - A with its interval, McNemar p, the 2x2 counts."""
    _, level, _ = _level(doc)
    columns = [("metric", False), ("A", True), ("B", True), ("B - A", True), (f"{level} CI", True),
               ("McNemar p", True), ("paired tasks", True), ("both · A only · B only · neither", True)]
    rows = []
    for name, e in doc["paired"].items():
        ci = fmt_pp_interval(e["ci_low"], e["ci_high"])
        rows.append([html_escape(metric_label(name, e["k"])), fmt_pct(e["a_value"]), fmt_pct(e["b_value"]),
                     fmt_pp(e["difference"]), ci, fmt_p(e["mcnemar_p"], 1 - _level(doc)[0]), f"{e['n_pairs']:,}",
                     f"{e['both']:,} · {e['a_only']:,} · {e['b_only']:,} · {e['neither']:,}"])
    return f'<div class="cbc">{_table(columns, rows)}</div>'


def forest_html(doc: dict) -> str:
    """B - A per paired metric with its interval, drawn in HTML (text stays readable at any width)."""
    entries = [(metric_label(n, e["k"]), e) for n, e in doc["paired"].items()]
    bounds = [100 * float(e[key]) for _, e in entries for key in ("ci_low", "ci_high") if not is_null(e[key])]
    low, high = min(bounds + [0.0]), max(bounds + [0.0])
    span = max(high - low, 1.0)
    low, high = low - 0.05 * span, high + 0.05 * span

    def pos(pp: float) -> str:
        return f"{100 * (pp - low) / (high - low):.2f}%"

    rows = []
    for label, e in entries:
        inner = f'<span class="cbc-zero" style="left:{pos(0.0)}"></span>'
        if not is_null(e["difference"]):
            lo, hi = 100 * float(e["ci_low"]), 100 * float(e["ci_high"])
            inner += (f'<span class="cbc-ci" style="left:{pos(lo)};width:{100 * (hi - lo) / (high - low):.2f}%"></span>'
                      f'<span class="cbc-dot" style="left:{pos(100 * float(e["difference"]))}"></span>')
            text = f"{fmt_pp(e['difference'])} ({fmt_pp_interval(e['ci_low'], e['ci_high'])})"
        else:
            text = "no paired task"
        rows.append(f'<div class="cbc-frow"><span>{html_escape(label)} <span class="cbc-muted">{text}</span></span>'
                    f'<span class="cbc-track" role="img" aria-label="{html_escape(label)}: {text}">{inner}</span></div>')
    axis = (f'<div class="cbc-frow"><span></span><span class="cbc-axis"><span>{low:+.0f} pp</span>'
            f'<span>B - A, {_level(doc)[1]} interval; dashed line: no difference</span><span>{high:+.0f} pp</span>'
            "</span></div>")
    return f'<div class="cbc"><div class="cbc-forest">{"".join(rows)}{axis}</div></div>'


def telemetry_html(doc: dict) -> str:
    """Telemetry medians over paired eligible attempts, B - A and its bootstrap interval, with units."""
    _, level, _ = _level(doc)
    columns = [("field", False), ("pairs (tasks)", True), ("median A", True), ("median B", True), ("B - A", True),
               (f"{level} bootstrap CI", True)]
    rows = []
    for field, t in doc["telemetry"].items():
        ci = "n/a" if is_null(t["ci_low"]) else (f"{fmt_telemetry(field, t['ci_low'], signed=True)} to "
                                                 f"{fmt_telemetry(field, t['ci_high'], signed=True)}")
        rows.append([html_escape(_TELEMETRY_NAMES.get(field, field)), f"{t['n_pairs']:,} ({t['n_tasks']:,})",
                     fmt_telemetry(field, t["a_median"]), fmt_telemetry(field, t["b_median"]),
                     fmt_telemetry(field, t["difference"], signed=True), ci])
    return f'<div class="cbc">{_table(columns, rows)}</div>'


#: Headers of the power-planning tables (:mod:`capbench_nb.metrics.power`'s columns) on the page.
POWER_HEADERS = {
    "baseline": "A's pass@1 (baseline)", "target": "B's pass@1 to detect", "difference": "difference",
    "discordance_independent": "discordant share, independent runs", "tasks_independent": "tasks needed, independent runs",
    "discordance_observed": "discordant share, as observed", "tasks_observed_discordance": "tasks needed, as observed",
    "pair_rate": "share of tasks paired", "metric": "metric", "k": "k", "p_a": "A's value", "p_b": "B's value",
    "discordance": "discordant share", "tasks": "tasks needed", "attempts_per_run": "attempts per run",
}


def frame_html(frame: Any, *, percent: tuple[str, ...] = (), headers: dict[str, str] | None = None) -> str:
    """A small DataFrame (e.g. a power-planning table) as a formatted, escaped table; ``percent`` columns as %.

    Column headers are ``headers`` (default :data:`POWER_HEADERS`) where they name a column, else the column.
    """
    headers = POWER_HEADERS if headers is None else headers
    columns = [(str(c), frame[c].dtype.kind in "iuf") for c in frame.columns]
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for (name, num), value in zip(columns, record):
            if name in percent:
                cells.append(fmt_pct(value))
            elif num and not is_null(value):
                cells.append(f"{value:,}" if float(value).is_integer() else f"{float(value):,.3f}")
            else:
                cells.append(html_escape("n/a" if is_null(value) else value))
        rows.append(cells)
    return f'<div class="cbc">{_table([(headers.get(name, name), num) for name, num in columns], rows)}</div>'


# =========================================================================== flipped tasks


def _flip_order(doc: dict, run_a: Any) -> list[str]:
    """Every task flipped in some metric, in A's plan order."""
    flipped = {t for f in doc["flips"].values() for side in ("a_only", "b_only") for t in f[side]}
    return [t for t in run_a.plan["task_id"].astype(object) if t in flipped]


def _tokens(value: Any) -> str:
    """A token count in a column headed "tokens": the number alone."""
    return "n/a" if is_null(value) else f"{int(value):,}"


def _outcome(row: dict) -> str:
    failure = "" if is_null(row["failure_class"]) else str(row["failure_class"])
    if not is_null(row["success"]) and bool(row["success"]):
        return "success"
    if not is_null(row["agent_eligible"]) and bool(row["agent_eligible"]):
        return f"failed: {plain_label(failure or 'unknown', 60)}"
    return f"ineligible: {plain_label(failure or 'unknown', 60)}"


def _evidence_cell(value: str | None, reason: str | None) -> str:
    if value is not None:
        return value
    if reason is not None:
        return f"not resolved: {plain_label(reason, _EVIDENCE_CHARS)}"
    return f"not resolved here (the page resolves at most {MAX_EVIDENCE:,} references)"


def _attempt_rows(run: Any, tasks: list[str], budget: list[int]) -> dict[str, list[dict]]:
    """Per task: one row per planned attempt number (``missing`` when absent) and any counted attempt, with
    the evidence the records view resolves (at most ``budget[0]`` references, shared by both runs' calls)."""
    frame = run.attempts
    frame = frame[frame["task_id"].isin(set(tasks))]
    planned = dict(zip(run.plan["task_id"].astype(object), run.plan["planned_repeats"].astype(int)))
    by_task: dict[str, dict[int, dict]] = {t: {} for t in tasks}
    columns = ["task_id", "attempt", "success", "agent_eligible", "failure_class", "failure_stage",
               "quality_score", "task_wall_ms", "total_tokens"]
    for values in zip(*(frame[c].astype(object).tolist() for c in columns)):
        row = dict(zip(columns, values))
        by_task[row["task_id"]][int(row["attempt"])] = row
    evidence, used = evidence_texts(run, [(t, n) for t in tasks for n in sorted(by_task[t])], budget=budget[0],
                                    text=lambda value: plain_label(value, _EVIDENCE_CHARS))
    budget[0] -= used
    out = {}
    for task in tasks:
        rows = []
        for number in sorted(set(range(1, planned.get(task, 0) + 1)) | set(by_task[task])):
            row = by_task[task].get(number)
            if row is None:
                rows.append({"cells": [str(number), "missing", "", "", "", ""], "evidence": []})
                continue
            stage = "" if is_null(row["failure_stage"]) else plain_label(row["failure_stage"], 60)
            rows.append({
                "cells": [str(number), _outcome(row), stage,
                          "" if is_null(row["quality_score"]) else f"{float(row['quality_score']):.3f}",
                          fmt_telemetry("task_wall_ms", row["task_wall_ms"]),
                          _tokens(row["total_tokens"])],
                "evidence": [[plain_label(ref, 200), _evidence_cell(value, reason)]
                             for ref, value, reason in evidence[(task, number)]],
            })
        out[task] = rows
    return out


def flips_data(doc: dict, run_a: Any, run_b: Any, *, metrics_a: dict, metrics_b: dict) -> dict:
    """The flipped tasks and both runs' attempts of each, as the JSON the page's script reads.

    Parameters
    ----------
    doc : dict
        The comparison document.
    run_a, run_b : Run
        The two loaded runs (attempts, evidence).
    metrics_a, metrics_b : dict
        Their metrics documents (:func:`~capbench_nb.metrics.document.compute_metrics`): the per-task
        success counts.

    Returns
    -------
    dict
        ``columns`` (label, help, numeric), ``tasks`` (``id``, display ``cells``, sort ``keys``), ``attempts``
        (per task id, ``a`` and ``b``: label and rows of attempt number, outcome, stage, quality, wall time,
        tokens, with resolved evidence), ``attempt_columns`` and ``no_detail``.  Attempts are embedded for
        the first :data:`MAX_DETAIL_TASKS` flipped tasks; every run-supplied string is made one visible line
        (:func:`~capbench_nb.outputs.html.escaping.plain_label`).
    """
    per_a = {t["task_id"]: t for t in metrics_a["per_task"]}
    per_b = {t["task_id"]: t for t in metrics_b["per_task"]}
    order = _flip_order(doc, run_a)
    sides = {name: ({*f["a_only"]}, {*f["b_only"]}) for name, f in doc["flips"].items()}
    labels = {name: metric_label(name, doc["paired"][name]["k"]) for name in doc["flips"]}
    columns = [{"label": "task", "help": "task id; open it for both runs' attempts", "num": False}]
    columns += [{"label": labels[n], "help": f"{labels[n]}: 'B only' = B succeeded and A failed; 'A only' the "
                 "reverse", "num": False} for n in doc["flips"]]
    columns += [{"label": f"{s} successes", "help": f"successful attempts of run {s} out of its eligible ones "
                 "(metrics.json per_task)", "num": True} for s in ("A", "B")]

    def counts(entry: dict | None) -> tuple[str, Any]:
        if entry is None:
            return "n/a", None
        return f"{entry['successes']} of {entry['eligible']}", entry["successes"]

    tasks = []
    for task in order:
        cells, keys = [plain_label(task, 200)], [task]
        for name, (a_only, b_only) in sides.items():
            flip = "B only" if task in b_only else "A only" if task in a_only else "same"
            cells.append(flip)
            keys.append({"A only": -1, "same": 0, "B only": 1}[flip])
        for entry in (per_a.get(task), per_b.get(task)):
            text, key = counts(entry)
            cells.append(text)
            keys.append(key)
        tasks.append({"id": task, "cells": cells, "keys": keys})
    detail = order[:MAX_DETAIL_TASKS]
    budget = [MAX_EVIDENCE]
    rows_a = _attempt_rows(run_a, detail, budget)
    rows_b = _attempt_rows(run_b, detail, budget)
    label_a = f"A: {plain_label(doc['run_a']['run_id'], 120)}"
    label_b = f"B: {plain_label(doc['run_b']['run_id'], 120)}"
    attempts = {t: {"a": {"label": label_a, "rows": rows_a[t], "empty": "no attempt recorded"},
                    "b": {"label": label_b, "rows": rows_b[t], "empty": "no attempt recorded"}} for t in detail}
    return {"columns": columns, "tasks": tasks, "attempts": attempts,
            "attempt_columns": ["#", "outcome", "stage", "quality", "wall time", "tokens"], "attempt_num_from": 3,
            "page_size": FLIPS_PAGE,
            "no_detail": f"attempts are embedded for the first {MAX_DETAIL_TASKS:,} flipped tasks only; "
                         "load both runs with capbench_nb.load_run to see this one's"}


def flips_html(doc: dict, run_a: Any, run_b: Any, *, metrics_a: dict, metrics_b: dict) -> str:
    """The flipped tasks as a sortable, filterable table whose rows open both runs' attempts.

    Without script (an untrusted notebook) the section says where the list is instead.  The arguments are
    :func:`flips_data`'s.
    """
    data = flips_data(doc, run_a, run_b, metrics_a=metrics_a, metrics_b=metrics_b)
    if not data["tasks"]:
        return '<div class="cbc"><p>No task flipped: on every paired task both runs had the same outcome.</p></div>'
    root = island_id("cbc-", island_json(data))
    n = len(data["tasks"])
    return (f'<div class="cbc cbc-flips-section" id="{root}" data-island="{root}-data">'
            f'<p>{n:,} task{"s" if n != 1 else ""} flipped in at least one metric. Sort by a column header; '
            "open a task for both runs' attempts (outcome, failure stage, quality, telemetry, evidence).</p>"
            f'<p class="cbc-fallback cbc-muted">The interactive table needs the page\'s script (in Jupyter: a '
            "trusted notebook); comparison.md lists the flipped tasks.</p>"
            f'<div class="cbc-mount"></div>{json_island(data, root + "-data")}<script>{flips_script(root)}</script></div>')


# =========================================================================== the Jupyter view


class ComparisonView:
    """A comparison for Jupyter: a short ``repr`` (the verdicts) and an HTML view (the whole page).

    Parameters
    ----------
    doc : dict
        The comparison document (:func:`~capbench_nb.metrics.comparison.compare_runs`); it is not changed.
    run_a, run_b : Run, optional
        The two loaded runs; with them and their metrics documents the view lists the flipped tasks
        with their attempts.
    metrics_a, metrics_b : dict, optional
        The runs' metrics documents (:func:`~capbench_nb.metrics.document.compute_metrics`): the
        per-task success counts of the flipped tasks.
    strict : bool, default False
        Whether warnings fail the comparison (as ``capbench-nb compare --strict``).
    allow_diff : iterable of str
        Warning kinds declared intended (``--allow-diff``): shown as allowed, never failing.

    Examples
    --------
    >>> view = ComparisonView(cb.compare_runs(a, b), a, b,
    ...                       metrics_a=cb.compute_metrics(a), metrics_b=cb.compute_metrics(b))  # doctest: +SKIP
    >>> view                                                 # doctest: +SKIP
    <comparison sim-2 (B) vs sim-1 (A): pass@1 +7.8 pp, p = 0.54; pass@3 +9.1 pp, p = 0.45; ...>
    """

    def __init__(self, doc: dict, run_a: Any = None, run_b: Any = None, *, metrics_a: dict | None = None,
                 metrics_b: dict | None = None, strict: bool = False, allow_diff=()) -> None:
        self.doc, self.run_a, self.run_b = doc, run_a, run_b
        self.metrics_a, self.metrics_b = metrics_a, metrics_b
        self.strict = bool(strict)
        self.allow_diff = check_warning_kinds(allow_diff)

    def verdicts(self) -> list[str]:
        """One sentence per paired metric (:func:`verdict`)."""
        return verdicts(self.doc)

    def __repr__(self) -> str:
        doc = self.doc
        alpha = 1 - _level(doc)[0]
        parts = [f"{metric_label(n, e['k'])} {fmt_pp(e['difference'])}, p = {fmt_p(e['mcnemar_p'], alpha)}"
                 for n, e in doc["paired"].items()]
        codes = [w["code"] + (" (allowed)" if w["code"] in self.allow_diff else "")
                 for w in doc["compatibility"]["warnings"]]
        warn = f"; warnings: {', '.join(codes)}" if codes else "; no warning"
        return (f"<comparison {plain_label(doc['run_b']['run_id'], 40)} (B) vs {plain_label(doc['run_a']['run_id'], 40)}"
                f" (A): {'; '.join(parts)}{warn}>")

    def _repr_html_(self) -> str:
        parts = [style_html(), header_html(self.doc, strict=self.strict, allow_diff=self.allow_diff),
                 '<div class="cbc"><h2>Paired analysis</h2></div>', paired_html(self.doc), forest_html(self.doc)]
        if all(x is not None for x in (self.run_a, self.run_b, self.metrics_a, self.metrics_b)):
            parts += ['<div class="cbc"><h2>Flipped tasks</h2></div>',
                      flips_html(self.doc, self.run_a, self.run_b, metrics_a=self.metrics_a, metrics_b=self.metrics_b)]
        parts += ['<div class="cbc"><h2>Telemetry</h2></div>', telemetry_html(self.doc)]
        return "".join(parts)
