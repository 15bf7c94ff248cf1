"""Report content: formatting, escaping, summary.md and the report notebook's displays.

Three layers, each usable on its own:

* **Formatting** (pure): :func:`fmt_ms`, :func:`fmt_count`, :func:`fmt_pct`,
  :func:`fmt_interval`, :func:`fmt_rate`, :func:`fmt_cost`.  A missing value
  is always shown as ``n/a (...)``, never as 0.
* **Escaping** (pure): :func:`html_escape` and :func:`md_escape` make every
  run-supplied string (task ids, run id, suite, reasons, evidence references,
  parameters) render as data: markup is neutralised, and control characters,
  bidirectional overrides and lone surrogates are shown as visible escapes
  such as ``\\u202e``.
* **Outputs**: :func:`summary_markdown` is a pure, deterministic function of
  the metrics.json document (``capbench-nb verify`` regenerates and compares
  it); the ``show_*`` and ``plot_*`` functions render the sections of the
  report notebook through :func:`IPython.display.display` and return None.

The HTML is self-contained: one ``<style>`` block (:func:`show_style`), no
external URLs, fonts or scripts.  Figures are built on
:class:`matplotlib.figure.Figure` objects (no pyplot state, no backend
needed) and displayed as inline PNG images rendered here without metadata,
so the same run gives the same image bytes.
"""

from __future__ import annotations

import base64
import io
import json
import math
import numbers
import os
import posixpath
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd
from IPython.display import HTML, display

from capbench_nb.metrics.rates import pass_at_k, pass_hat_k, per_task
from capbench_nb.format import (
    ANOMALY_KINDS,
    CLASS_KEYS,
    FAILURE_STAGES,
    INELIGIBLE_CLASSES,
    TELEMETRY_BOOL_FIELDS,
    TELEMETRY_MS_FIELDS,
)

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

#: How a missing telemetry (or cost) value is shown: never as 0.
NA_SOURCE = "n/a (no source)"
#: How a rate with an empty denominator is shown.
NA_NO_ELIGIBLE = "n/a (no eligible tasks)"
NA = "n/a"

#: Display cap for run-supplied strings in HTML (characters of the original text).
DISPLAY_MAX = 200


# =========================================================================== formatting


def _is_null(value: Any) -> bool:
    """None, NaN, pandas NA/NaT."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT
    except TypeError:  # pd.NA: its truth value is ambiguous
        return True


def fmt_ms(value: Any) -> str:
    """A duration in milliseconds, for people.

    Parameters
    ----------
    value : number or None
        Milliseconds.

    Returns
    -------
    str
        ``"n/a (no source)"`` for None/NaN/NA; below one second ``"842 ms"``;
        below a minute ``"12.4 s"``; below an hour ``"3 min 05 s"``; else
        ``"1 h 02 min"``.  Rounding is half up and happens before the unit is
        chosen, so 999.5 ms is ``"1.0 s"`` and 59,950 ms is ``"1 min 00 s"``.
        A positive value below 0.5 ms is ``"<1 ms"``, never ``"0 ms"``.

    Examples
    --------
    >>> fmt_ms(185_000)
    '3 min 05 s'
    """
    if _is_null(value):
        return NA_SOURCE
    v = float(value)
    if math.isinf(v):
        return "∞"
    sign = "-" if v < 0 else ""
    v = abs(v)
    whole_ms = math.floor(v + 0.5)
    if whole_ms < 1000:
        if v > 0 and whole_ms == 0:
            return f"{sign}<1 ms"
        return f"{sign}{whole_ms} ms"
    tenths = math.floor(v / 100 + 0.5)
    if tenths < 600:
        return f"{sign}{tenths // 10}.{tenths % 10} s"
    seconds = math.floor(v / 1000 + 0.5)
    if seconds < 3600:
        return f"{sign}{seconds // 60} min {seconds % 60:02d} s"
    minutes = math.floor(v / 60_000 + 0.5)
    return f"{sign}{minutes // 60:,} h {minutes % 60:02d} min"


def fmt_count(value: Any) -> str:
    """A count with thousands separators.

    Parameters
    ----------
    value : int, float or None
        Integers (counts, sums) print exactly; floats (means, medians) with
        one decimal.

    Returns
    -------
    str
        ``"12,345"``, ``"1,234.5"``, or ``"n/a (no source)"`` for a null.
    """
    if _is_null(value):
        return NA_SOURCE
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    v = float(value)
    if math.isinf(v):
        return "∞"
    return f"{v:,.1f}"


def fmt_pct(value: Any, digits: int = 1) -> str:
    """A proportion as a percentage.

    Parameters
    ----------
    value : float or None
        A proportion in [0, 1].
    digits : int, default 1
        Decimals of the percentage.

    Returns
    -------
    str
        ``0.7 -> "70.0%"``; ``"n/a"`` for a null.  A non-zero value that
        would round to 0 is ``"<0.1%"`` and a value below 1 that would round
        to 100 is ``">99.9%"`` (with ``digits=1``), so rounding never turns a
        failure or a success into "none" or "all".
    """
    if _is_null(value):
        return NA
    v = float(value) * 100.0
    text = f"{v:.{digits}f}"
    step = 10.0**-digits
    if v > 0 and float(text) == 0:
        return f"<{step:.{digits}f}%"
    if v < 100 and float(text) >= 100:
        return f">{100 - step:.{digits}f}%"
    return text + "%"


def fmt_interval(low: Any, high: Any, digits: int = 1) -> str:
    """A confidence interval of proportions: ``"[39.7%, 89.2%]"``; ``"n/a"`` when a bound is null."""
    if _is_null(low) or _is_null(high):
        return NA
    return f"[{fmt_pct(low, digits)}, {fmt_pct(high, digits)}]"


def _as_mapping(metric: Any) -> Mapping:
    if isinstance(metric, Mapping):
        return metric
    if is_dataclass(metric):
        return asdict(metric)
    if hasattr(metric, "to_dict"):
        return metric.to_dict()
    raise TypeError(f"expected a metric dict or Rate, got {type(metric).__name__}")


def fmt_rate(metric: Any) -> str:
    """A headline rate with numerator, denominator and interval.

    Parameters
    ----------
    metric : dict or Rate
        ``{"value", "successes", "n", "ci_low", "ci_high", ...}`` as in
        metrics.json.

    Returns
    -------
    str
        ``"70.0% (7/10) [39.7%, 89.2%]"``; ``"n/a (no eligible tasks)"`` when
        ``n == 0``.
    """
    m = _as_mapping(metric)
    n = m.get("n") or 0
    if not n or _is_null(m.get("value")):
        return NA_NO_ELIGIBLE
    return f"{fmt_pct(m['value'])} ({m.get('successes')}/{n}) {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"


def fmt_cost(value: Any) -> str:
    """A provider cost in USD.

    Returns
    -------
    str
        Four decimals with thousands separators (``"$0.0468"``,
        ``"$1,234.5000"``); a positive value below $0.001 keeps three
        significant digits (``"$0.0000123"``) so it never reads as zero;
        ``"n/a (no source)"`` for a null.
    """
    if _is_null(value):
        return NA_SOURCE
    v = float(value)
    if math.isinf(v):
        return "∞"
    sign = "-" if v < 0 else ""
    v = abs(v)
    if 0 < v < 0.001:
        decimals = 2 - math.floor(math.log10(v))
        return f"{sign}${v:.{decimals}f}"
    return f"{sign}${v:,.4f}"


def _fmt_score(value: Any, *, none: str = NA) -> str:
    return none if _is_null(value) else f"{float(value):.3f}"


# =========================================================================== escaping

# Characters that would be invisible or would rearrange the text around them:
# C0 and C1 controls, the bidirectional marks, embeddings, overrides and
# isolates, line/paragraph separators, zero-width space, BOM, and lone
# surrogates (which cannot even be encoded as UTF-8).
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible_char(match: re.Match) -> str:
    ch = match.group()
    return _SHORT.get(ch) or f"\\u{ord(ch):04x}"


def _display_text(text: Any, max_len: int | None) -> str:
    """``text`` as a string, clipped to ``max_len`` characters, invisibles made visible."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    if max_len is not None and len(s) > max_len:
        s = s[: max(max_len - 1, 0)] + "…"
    return _INVISIBLE.sub(_visible_char, s)


def html_escape(text: Any, *, max_len: int | None = DISPLAY_MAX) -> str:
    """Escape a run-supplied string for HTML text or a quoted attribute.

    Parameters
    ----------
    text : str or any
        Converted with ``str``; None gives ``""``.
    max_len : int or None, default 200
        Display cap in characters of the original text; longer text is cut
        and ends with an ellipsis.  None keeps everything.

    Returns
    -------
    str
        :func:`html.escape` with ``quote=True`` (``& < > " '``), after
        control characters, bidirectional overrides/isolates (U+202A-U+202E,
        U+2066-U+2069 and the marks), zero-width space, BOM and lone
        surrogates are replaced by visible escapes such as ``\\u202e``
        (``\\n``, ``\\r``, ``\\t`` for those three).
    """
    s = _display_text(text, max_len)
    return (
        s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#x27;")
    )


# Every ASCII punctuation character that means something in CommonMark or GFM
# inline text or tables; a backslash before ASCII punctuation always means the
# character itself.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~#$!{}])")


def md_escape(text: Any, *, max_len: int | None = None) -> str:
    """Escape a run-supplied string for Markdown text and table cells.

    Parameters
    ----------
    text : str or any
        Converted with ``str``; None gives ``""``.
    max_len : int or None, default None
        Optional display cap in characters, as in :func:`html_escape`.

    Returns
    -------
    str
        Backslash escapes for ``\\ ` * _ [ ] < > | & ~ # $ ! { }``, after
        newlines, control characters, bidirectional overrides, zero-width
        space, BOM and lone surrogates are replaced by visible escapes (whose
        backslash is itself escaped, so ``\\u202e`` renders literally).  The
        result is a single line that cannot open emphasis, code, links, HTML,
        entities or a table cell.
    """
    return _MD_SPECIAL.sub(r"\\\1", _display_text(text, max_len))


def _plain_label(text: Any, max_len: int = 40) -> str:
    """A label for matplotlib text: one line, invisibles made visible, clipped in the middle.

    Task ids often share a long prefix, so the end is kept too: ``suite.app.task-0…-long-name``.
    """
    s = "" if text is None else str(text)
    if len(s) > max_len:
        head = (max_len - 1) * 3 // 5
        s = s[:head] + "…" + s[len(s) - (max_len - 1 - head) :]
    return _display_text(s, None)


# =========================================================================== summary.md


def _judge_phrase(judge: Any) -> str:
    if judge is True:
        return "judge"
    if judge is False:
        return "--no-judge (hard assertions only)"
    return "not recorded (config.judge absent)"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def _listing(items: list[str], limit: int = 5, sep: str = ", ") -> str:
    shown = items[:limit]
    rest = len(items) - len(shown)
    return sep.join(shown) + (f"{sep}and {rest:,} more" if rest else "")


def _anomaly_counts(doc: Mapping) -> dict:
    counts = doc.get("anomaly_counts")
    if isinstance(counts, Mapping):
        return {kind: int(counts.get(kind, 0) or 0) for kind in ANOMALY_KINDS}
    out = {kind: 0 for kind in ANOMALY_KINDS}
    for a in doc.get("anomalies") or []:
        if a.get("kind") in out:
            out[a["kind"]] += 1
    return out


def _ineligible_by_class(attempts: Mapping) -> tuple[dict, int, int]:
    """Ineligible attempts by class, from the document alone.

    environment, evaluation and skipped are always ineligible; ``unknown`` may
    be either, and its ineligible part is what remains of ``total - eligible``.
    """
    byc = attempts.get("by_failure_class") or {}
    total = int(attempts.get("total") or 0)
    eligible = int(attempts.get("eligible") or 0)
    ineligible = total - eligible
    classes = {c: int(byc.get(c) or 0) for c in INELIGIBLE_CLASSES}
    unknown = int(byc.get("unknown") or 0)
    unknown_ineligible = max(0, min(unknown, ineligible - sum(classes.values())))
    classes["unknown"] = unknown_ineligible
    return classes, ineligible, unknown - unknown_ineligible


def _metric_sentence(name: str, m: Mapping) -> str:
    n = int(m.get("n") or 0)
    if not n or _is_null(m.get("value")):
        return f"{name} is undefined (no eligible tasks; coverage {fmt_pct(m.get('coverage'))})"
    return (
        f"{name} is {fmt_pct(m['value'])} ({m.get('successes')}/{n} tasks; 95% Wilson interval "
        f"{fmt_interval(m.get('ci_low'), m.get('ci_high'))}; coverage {fmt_pct(m.get('coverage'))} of planned tasks)"
    )


def summary_markdown(doc: Mapping) -> str:
    """A paste-ready Markdown section for a paper or a pull request.

    A pure, deterministic function of the metrics.json document (no run, no
    clock, no paths): ``capbench-nb verify`` regenerates it from the
    recomputed document and compares the text.

    Parameters
    ----------
    doc : dict
        The metrics.json document (:func:`capbench_nb.export.compute_metrics`,
        or the parsed file: both give the same text).

    Returns
    -------
    str
        A heading; one paragraph with the run's identity, the three headline
        rates with their 95% Wilson intervals and coverage, and what was
        excluded and why (ineligible attempts by class, tasks outside each
        denominator, anomalies and invalid lines); a compact table of the
        headline numbers; a provenance line.  Every run-supplied string is
        escaped with :func:`md_escape`.  Ends with a newline.
    """
    k = doc.get("k")
    planned = int((doc.get("tasks") or {}).get("planned") or 0)
    observed = int((doc.get("tasks") or {}).get("observed") or 0)
    attempts = doc.get("attempts") or {}
    total = int(attempts.get("total") or 0)
    eligible = int(attempts.get("eligible") or 0)
    metrics = doc.get("metrics") or {}
    empty_rate = {"value": None, "successes": 0, "n": 0, "ci_low": None, "ci_high": None, "coverage": None}
    p1 = metrics.get("pass@1") or empty_rate
    pk = metrics.get("pass@k") or empty_rate
    hk = metrics.get("pass^k") or empty_rate
    oracle = metrics.get("oracle_best_score@k") or {"value": None, "n": 0}
    suite = doc.get("suite") if isinstance(doc.get("suite"), Mapping) else None
    run_id = md_escape(doc.get("run_id"), max_len=DISPLAY_MAX)
    suite_text = (
        " ".join(md_escape(part, max_len=DISPLAY_MAX) for part in (suite.get("name"), suite.get("version")) if part)
        if suite
        else ""
    )

    heading = f"## Capability metrics: {suite_text + ', ' if suite_text else ''}run {run_id}"

    sentences = []
    identity = f"Run {run_id}"
    if suite_text:
        identity += f" of suite {suite_text}"
    status = md_escape(doc.get("status") or "not recorded")
    identity += f" (status {status}; judge mode: {md_escape(_judge_phrase(doc.get('judge')))})"
    identity += (
        f" planned {_plural(planned, 'task')} with a fixed k = {k} (the smallest planned repeats);"
        f" {observed:,} {'task was' if observed == 1 else 'tasks were'} observed,"
        f" with {_plural(total, 'counted attempt')},"
        f" {eligible:,} of them agent-eligible."
    )
    sentences.append(identity)
    sentences.append(
        "Headline rates: "
        + _metric_sentence("pass@1", p1)
        + "; "
        + _metric_sentence("pass@k", pk)
        + "; and "
        + _metric_sentence("pass^k", hk)
        + "."
    )

    # What was excluded, and why.
    by_class, ineligible, unknown_eligible = _ineligible_by_class(attempts)
    if ineligible:
        parts = [f"{n:,} {cls}" for cls, n in by_class.items() if n]
        excl = f"Excluded from every denominator: {_plural(ineligible, 'ineligible attempt')} ({', '.join(parts)})"
    else:
        excl = "No attempt was ineligible"
    if unknown_eligible:
        one = unknown_eligible == 1
        excl += (
            f"; {_plural(unknown_eligible, 'unknown attempt')} marked eligible"
            f" {'counts as a failure' if one else 'count as failures'}"
        )
    sentences.append(excl + ".")

    left_out_1 = planned - int(p1.get("n") or 0)
    per_task_entries = doc.get("per_task") or []
    not_k = [e for e in per_task_entries if not e.get("k_eligible")]
    no_attempts = sum(1 for e in per_task_entries if not e.get("attempts"))
    if left_out_1:
        task_text = (
            f"Of the {_plural(planned, 'planned task')}, pass@1 leaves out {left_out_1:,}"
            " (attempt 1 missing or ineligible)"
        )
    else:
        task_text = f"pass@1 keeps all {_plural(planned, 'planned task')}"
    if not_k:
        names = [md_escape(e.get("task_id"), max_len=120) for e in not_k]
        task_text += (
            f"; {_plural(len(not_k), 'task is', 'tasks are')} not k-eligible"
            f" (attempts 1..{k} not all present and eligible)"
            f" and {'stays' if len(not_k) == 1 else 'stay'} out of pass@k and pass^k: {_listing(names)}"
        )
    else:
        task_text += "; every planned task is k-eligible"
    if no_attempts:
        task_text += f" ({_plural(no_attempts, 'task')} without any attempt)"
    sentences.append(task_text + ".")

    counts = _anomaly_counts(doc)
    n_anomalies = sum(counts.values())
    if n_anomalies:
        kinds = []
        if counts["above_planned_repeats"]:
            kinds.append(f"{_plural(counts['above_planned_repeats'], 'record')} above the planned repeats")
        if counts["task_not_in_plan"]:
            kinds.append(f"{_plural(counts['task_not_in_plan'], 'record')} of tasks not in the plan")
        if counts["invalid_line"]:
            kinds.append(f"{_plural(counts['invalid_line'], 'invalid line')} skipped with --allow-invalid")
        examples = []
        for a in doc.get("anomalies") or []:
            tid = a.get("task_id")
            text = md_escape(tid, max_len=120) if tid is not None else "unreadable task"
            if a.get("attempt") is not None:
                text += f" attempt {a['attempt']}"
            examples.append(f"{text}, line {a.get('line')}")
        sentences.append(
            f"Anomalies, entering no metric and no count: {_join(kinds)}"
            + (f" ({_listing(examples, sep='; ')})" if examples else "")
            + "."
        )
    else:
        sentences.append("There were no anomalies and no invalid lines.")

    paragraph = " ".join(sentences)

    def row(name: str, m: Mapping) -> str:
        n = int(m.get("n") or 0)
        value = fmt_pct(m.get("value")) if n and not _is_null(m.get("value")) else NA_NO_ELIGIBLE
        return (
            f"| {name} | {value} | {m.get('successes', 0)} / {n} | {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"
            f" | {fmt_pct(m.get('coverage'))} |"
        )

    oracle_n = int(oracle.get("n") or 0)
    table = [
        f"| metric | value | successes / tasks | 95% Wilson interval | coverage of {planned:,} planned tasks |",
        "|---|---:|---:|---|---:|",
        row("pass@1", p1),
        row(f"pass@k (k = {k})", pk),
        row(f"pass^k (k = {k})", hk),
        f"| oracle\\_best\\_score@k (diagnostic) | {_fmt_score(oracle.get('value'))} | n = {oracle_n:,} | n/a | n/a |",
    ]

    prov = doc.get("provenance") or {}
    inputs = prov.get("inputs") or {}
    options = prov.get("options") or {}
    toolkit = md_escape(prov.get("toolkit") or "capbench-nb")
    prov_text = f"Computed with {toolkit} {md_escape(prov.get('toolkit_version') or '')}".rstrip()
    if inputs:
        prov_text += " from " + _join([f"{md_escape(name)} {md_escape(h)}" for name, h in inputs.items()])
    if options.get("allow_invalid"):
        prov_text += " (with --allow-invalid)"
    prov_text += (
        ". Rates are over tasks; a task enters a denominator only when the attempts it needs are present and"
        " agent-eligible; pass@k and pass^k look at attempts 1..k of each task (the planned prefix);"
        " intervals are 95% Wilson score intervals."
    )

    lines = [heading, "", paragraph, "", *table, "", prov_text]
    return "\n".join(lines) + "\n"


# =========================================================================== HTML helpers


class _Raw(str):
    """HTML produced here (already escaped); any other cell text is escaped."""


def _cell(value: Any) -> str:
    if isinstance(value, _Raw):
        return str(value)
    text = "" if value is None else str(value)
    if text.startswith("n/a"):
        return f'<span class="cb-na">{html_escape(text, max_len=None)}</span>'
    return html_escape(text, max_len=None)


def _id(text: Any, *, max_len: int = 120, missing: str = "n/a (unreadable)") -> _Raw:
    """A run-supplied identifier: escaped, isolated for bidi, clipped with the full text on hover."""
    if text is None or text is pd.NA:
        return _Raw(f'<span class="cb-na">{html_escape(missing)}</span>')
    s = str(text)
    title = f' title="{html_escape(s, max_len=2000)}"' if len(s) > max_len else ""
    return _Raw(f'<bdi class="cb-id"{title}>{html_escape(s, max_len=max_len)}</bdi>')


def _table(
    headers: list[str],
    rows: list[list[Any]],
    *,
    numeric: tuple[int, ...] = (),
    caption: str | None = None,
    scroll: bool = False,
    row_classes: list[str] | None = None,
) -> str:
    num = ' class="num"'
    head = "".join(
        f"<th{num if i in numeric else ''}>{html_escape(h, max_len=None)}</th>" for i, h in enumerate(headers)
    )
    body = []
    for r, cells in enumerate(rows):
        cls = f' class="{row_classes[r]}"' if row_classes and row_classes[r] else ""
        tds = "".join(f"<td{num if i in numeric else ''}>{_cell(c)}</td>" for i, c in enumerate(cells))
        body.append(f"<tr{cls}>{tds}</tr>")
    cap = f"<caption>{html_escape(caption, max_len=None)}</caption>" if caption else ""
    table = f'<table class="cb-table">{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return f'<div class="cb-scroll">{table}</div>' if scroll else table


def _frame_cell(value: Any, *, identifier: bool) -> Any:
    if _is_null(value):
        return NA
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return fmt_count(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return _id(value) if identifier else value


def show_table(frame: pd.DataFrame, *, caption: str | None = None, max_rows: int = 1000) -> None:
    """Display a DataFrame as an escaped HTML table (the report's style).

    pandas' own HTML escapes ``< > &`` but leaves control and bidi characters
    of run-supplied strings raw; here every cell goes through
    :func:`html_escape` (columns named ``task_id`` or ``*_id`` as identifiers:
    monospace, bidi-isolated, long ones clipped with the full text on hover).
    Missing values show as n/a, integers and numbers from 1,000 up with
    thousands separators, other numbers with 4 significant digits; numeric
    columns are right-aligned.

    Parameters
    ----------
    frame : DataFrame
        The table; its index is not shown.
    caption : str, optional
        Shown above the table.
    max_rows : int, default 1000
        Rows shown; a note says how many were left out.
    """
    numeric = tuple(i for i, c in enumerate(frame.columns)
                    if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
    shown = frame.head(max_rows)
    ids = [str(c) == "task_id" or str(c).endswith("_id") for c in frame.columns]
    rows = [[_frame_cell(v, identifier=i) for v, i in zip(row, ids)] for row in shown.itertuples(index=False, name=None)]
    html = _table([str(c) for c in frame.columns], rows, numeric=numeric, caption=caption, scroll=True)
    if len(frame) > max_rows:
        html += _p(f"First {max_rows:,} of {len(frame):,} rows shown.", "cb-note")
    _show(html)


def _show(html: str) -> None:
    display(HTML(f'<div class="cb">{html}</div>'))


def _p(text: str, cls: str | None = None) -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<p{c}>{html_escape(text, max_len=None)}</p>"


_STYLE = """
.cb { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
      font-size: 14px; line-height: 1.45; color: #1f2328; max-width: 1280px; }
.cb p { margin: 0.4em 0; }
.cb .cb-title { font-size: 18px; font-weight: 600; margin: 0.2em 0 0.6em; }
.cb table.cb-table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 13px; width: auto; }
.cb table.cb-table caption { caption-side: top; text-align: left; font-weight: 600; padding: 0 0 4px; color: #1f2328; }
.cb table.cb-table th, .cb table.cb-table td { border: 1px solid #d0d7de; padding: 3px 8px;
      text-align: left; vertical-align: top; }
.cb table.cb-table th { background: #f6f8fa; font-weight: 600; position: sticky; top: 0; z-index: 1; }
.cb table.cb-table td.num, .cb table.cb-table th.num { text-align: right; font-variant-numeric: tabular-nums;
      white-space: nowrap; }
.cb table.cb-table tbody tr:nth-child(even) td { background: #fafbfc; }
.cb table.cb-table tbody tr.cb-bad td { background: #fff1f0; }
.cb table.cb-table tbody tr.cb-total td { font-weight: 600; }
.cb .cb-scroll { max-height: 36em; overflow: auto; max-width: 100%; margin-bottom: 1em; }
.cb .cb-cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 0.4em 0 0.8em; }
.cb .cb-card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; min-width: 14em;
      max-width: 22em; background: #ffffff; }
.cb .cb-card .cb-label { font-size: 12px; color: #57606a; }
.cb .cb-card .cb-value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; }
.cb .cb-card .cb-detail { font-size: 12px; color: #57606a; }
.cb .cb-na { color: #6e7781; font-style: italic; }
.cb .cb-note { color: #57606a; font-size: 13px; }
.cb tr.cb-small td { color: #6e7781; font-style: italic; }
.cb td > bdi.cb-id { white-space: nowrap; }
.cb .cb-warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; margin: 0.4em 0; }
.cb .cb-ok { background: #dafbe1; border: 1px solid #4ac26b; border-radius: 6px; padding: 6px 10px; margin: 0.4em 0; }
.cb .cb-id, .cb .cb-mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
      font-size: 12.5px; overflow-wrap: anywhere; }
.cb a { color: #0969da; }
.cb img.cb-fig { max-width: 100%; height: auto; display: block; margin: 0.3em 0 1em; }
"""


def show_style() -> None:
    """Display the report's single ``<style>`` block (tables, cards, notes).

    Readable on a laptop screen: 14 px system fonts, compact bordered tables
    with right-aligned tabular numbers, scroll boxes for long tables.  No
    external fonts or URLs.
    """
    display(HTML(f"<style>{_STYLE}</style>"))


# =========================================================================== headline


_METRIC_LABELS = {"pass@1": "pass@1", "pass@k": "pass@k", "pass^k": "pass^k"}


def _card(label: str, value: str, detail: str) -> str:
    return (
        f'<div class="cb-card"><div class="cb-label">{html_escape(label, max_len=None)}</div>'
        f'<div class="cb-value">{_cell(value)}</div>'
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
    parts = [f'<div class="cb-title">Run {_id(doc.get("run_id"))}</div>']
    rows = [
        ["run_id", _id(doc.get("run_id"))],
        ["suite", _id(suite_text, missing="not recorded") if suite_text else "n/a (not recorded)"],
        ["status", _id(doc.get("status"), missing="not recorded")],
        ["judge mode", _judge_phrase(doc.get("judge"))],
        ["k (fixed by the plan)", str(k)],
        ["tasks planned / observed", f"{planned:,} / {int(tasks.get('observed') or 0):,}"],
        [
            "attempts counted / agent-eligible",
            f"{int(attempts.get('total') or 0):,} / {int(attempts.get('eligible') or 0):,}",
        ],
    ]
    parts.append(_table(["run", "value"], rows))

    cards = []
    metrics = doc.get("metrics") or {}
    for key in ("pass@1", "pass@k", "pass^k"):
        m = metrics.get(key) or {}
        n = int(m.get("n") or 0)
        label = key if key == "pass@1" else f"{key} (k = {k})"
        if n and not _is_null(m.get("value")):
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
            _fmt_score(oracle.get("value"), none="n/a (no scores)"),
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
    counts = _anomaly_counts(doc)
    if sum(counts.values()):
        text = ", ".join(f"{n:,} {kind.replace('_', ' ')}" for kind, n in counts.items() if n)
        parts.append(
            f'<div class="cb-warn">Anomalies: {html_escape(text)}. These records enter no metric and no count; '
            "see the anomalies section.</div>"
        )
    _show("".join(parts))


# =========================================================================== figures

_COLORS = {
    "success": "#2e9e5b",
    "agent": "#d1495b",
    "environment": "#3b75af",
    "evaluation": "#e3a21a",
    "skipped": "#9a9a9a",
    "unknown": "#8c5a3c",
    "missing": "#ffffff",
}
_RC = {
    "text.parse_math": False,  # run-supplied labels are text, never mathtext
    "svg.hashsalt": "capbench-nb",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "hatch.linewidth": 0.8,
}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _show_figure(fig, alt: str) -> None:
    """Render ``fig`` as PNG without metadata (same data, same bytes) and display it.

    The image is an inline ``<img>`` with a ``data:`` URI (self-contained, with
    alternative text and a width that shrinks to the page).  It is rendered at
    1.5x resolution and shown at 100 px per inch, so text stays sharp on
    high-density laptop screens.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    width = int(round(fig.get_figwidth() * 100))
    fig.set_dpi(150)
    fig.patch.set_facecolor("white")
    canvas = FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph.*missing.*")
        warnings.filterwarnings("ignore", message=r".*constrained_layout not applied.*")
        # One draw, which runs the layout engine too; savefig would draw twice (a dry run for the layout).
        canvas.draw()
    image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    image.save(buf, format="png")  # no text chunks: same figure, same bytes
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    _show(
        f'<img class="cb-fig" width="{width}" alt="{html_escape(alt, max_len=None)}"'
        f' src="data:image/png;base64,{data}">'
    )


#: Installed fonts tried, in order, for glyphs DejaVu Sans lacks (task ids in any script).
_FALLBACK_FONTS = (
    "Noto Sans",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "Noto Sans CJK TC",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "Arial Unicode MS",
    "Microsoft YaHei",
    "PingFang SC",
    "Hiragino Sans",
    "Apple SD Gothic Neo",
    "Segoe UI",
    "Segoe UI Symbol",
)
_FONT_FAMILY: list[str] | None = None


def _font_family() -> list[str]:
    """``sans-serif`` followed by whichever fallback fonts are installed (looked up once)."""
    global _FONT_FAMILY
    if _FONT_FAMILY is None:
        from matplotlib import font_manager

        installed = {f.name for f in font_manager.fontManager.ttflist}
        _FONT_FAMILY = ["sans-serif"] + [name for name in _FALLBACK_FONTS if name in installed]
    return _FONT_FAMILY


def _rc():
    import matplotlib

    return matplotlib.rc_context({**_RC, "font.family": _font_family()})


def plot_headline(doc: Mapping, run) -> None:
    """Plot the headline rates and the capability/reliability curves over planned prefixes.

    Parameters
    ----------
    doc : dict
        The metrics.json document (left panel: pass@1, pass@k, pass^k with
        95% Wilson intervals as error bars).
    run : Run
        The loaded run (right panel: pass@j and pass^j for j = 1..k from
        planned prefixes, :func:`capbench_nb.metrics.pass_at_k` and
        :func:`capbench_nb.metrics.pass_hat_k`, with interval bands), so the
        gap between capability and reliability is visible.
    """
    from matplotlib.ticker import PercentFormatter

    k = int(doc.get("k") or run.k)
    metrics = doc.get("metrics") or {}
    at = [pass_at_k(run.attempts, plan=run.plan, k=j) for j in range(1, k + 1)]
    hat = [pass_hat_k(run.attempts, plan=run.plan, k=j) for j in range(1, k + 1)]

    with _rc():
        fig = _figure(10.0, 3.9)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.0, 1.5]})
        keys = ["pass@1", "pass@k", "pass^k"]
        labels = ["pass@1", f"pass@k\n(k = {k})", f"pass^k\n(k = {k})"]
        colors = ["#3b75af", "#2e9e5b", "#d1495b"]
        for x, (key, color) in enumerate(zip(keys, colors)):
            m = metrics.get(key) or {}
            n = int(m.get("n") or 0)
            if not n or _is_null(m.get("value")):
                ax1.text(x, 0.04, "n/a\n(no eligible\ntasks)", ha="center", va="bottom", color="#57606a")
                continue
            v, lo, hi = float(m["value"]), m.get("ci_low"), m.get("ci_high")
            ax1.bar(x, v, width=0.6, color=color, alpha=0.85)
            if not _is_null(lo) and not _is_null(hi):
                ax1.errorbar(
                    x, v, yerr=[[v - float(lo)], [float(hi) - v]], fmt="none", ecolor="#1f2328", capsize=6, lw=1.2
                )
                top = float(hi)
            else:
                top = v
            ax1.text(x, min(top + 0.03, 1.08), f"{fmt_pct(v)}\n{m.get('successes')}/{n}", ha="center", va="bottom")
        ax1.set_xticks(range(3), labels)
        ax1.set_xlim(-0.6, 2.6)
        ax1.set_ylim(0, 1.22)
        ax1.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax1.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax1.set_ylabel("share of tasks")
        ax1.set_title("Headline rates (95% Wilson intervals)")
        ax1.grid(axis="y", alpha=0.3)

        js = np.arange(1, k + 1)

        def series(rates):
            val = np.array([np.nan if r.value is None else r.value for r in rates], dtype=float)
            lo = np.array([np.nan if r.ci_low is None else r.ci_low for r in rates], dtype=float)
            hi = np.array([np.nan if r.ci_high is None else r.ci_high for r in rates], dtype=float)
            return val, lo, hi

        any_data = False
        for rates, name, color, marker in (
            (at, "pass@j (capability)", "#2e9e5b", "o"),
            (hat, "pass^j (reliability)", "#d1495b", "s"),
        ):
            val, lo, hi = series(rates)
            if np.all(np.isnan(val)):
                continue
            any_data = True
            ax2.fill_between(js, lo, hi, color=color, alpha=0.15, lw=0)
            ax2.errorbar(
                js,
                val,
                yerr=[np.nan_to_num(val - lo), np.nan_to_num(hi - val)],
                fmt=f"-{marker}",
                color=color,
                ecolor=color,
                elinewidth=0.8,
                capsize=3,
                ms=5,
                label=name,
            )
        if not any_data:
            ax2.text(
                0.5,
                0.5,
                "no j-eligible tasks for any j",
                transform=ax2.transAxes,
                ha="center",
                va="center",
                color="#57606a",
            )
        step = max(1, math.ceil(k / 12))
        ticks = js[::step]
        ax2.set_xticks(ticks, [f"{j}\nn={at[j - 1].n}" for j in ticks])
        ax2.set_xlim(0.5, k + 0.5)
        ax2.set_ylim(0, 1.05)
        ax2.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax2.set_xlabel("j (planned prefix: attempts 1..j); n = j-eligible tasks")
        ax2.set_title("Capability vs reliability over planned prefixes, j = 1..k")
        ax2.grid(alpha=0.3)
        if any_data:
            ax2.legend(loc="lower left")
        _show_figure(fig, alt="Headline rates with 95% Wilson intervals, and pass@j and pass^j for j = 1..k")


def _outcome(success: Any, fclass: Any) -> str:
    if success is True:
        return "success"
    if fclass is None or fclass is pd.NA or (isinstance(fclass, float) and math.isnan(fclass)):
        return "unknown"
    fc = str(fclass)
    return fc if fc in _COLORS else "unknown"


def plot_attempt_grid(run, *, max_tasks: int = 60, max_attempts: int = 50, max_extra_columns: int = 5) -> None:
    """Plot tasks (plan order) by attempt number, each cell coloured by outcome.

    Parameters
    ----------
    run : Run
        The loaded run.
    max_tasks : int, default 60
        Tasks shown (the first ones in plan order); the title says when
        more exist.
    max_attempts : int, default 50
        Planned attempt columns drawn; the title says when tasks plan more.
    max_extra_columns : int, default 5
        Columns drawn beyond the largest planned repeats for anomalous extra
        attempts; extra attempts further out are counted in the title.

    Notes
    -----
    Colours: success, agent, environment, evaluation, skipped, unknown;
    a white outlined cell is a planned attempt with no record (missing);
    hatched cells are not agent-eligible; cells with a dashed black border
    are attempts above the task's planned repeats (anomalies, not counted);
    light grey is beyond the task's planned repeats.  The dotted line marks
    the end of the planned prefix 1..k.
    """
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.lines import Line2D

    plan = run.plan
    task_ids = [str(t) for t in plan["task_id"].astype(object)]
    planned = [int(p) for p in plan["planned_repeats"]]
    n_total = len(task_ids)
    shown = task_ids[:max_tasks]
    shown_planned = planned[:max_tasks]
    index = {t: i for i, t in enumerate(shown)}
    max_planned = max(shown_planned) if shown_planned else 1
    planned_cols = min(max_planned, max_attempts)
    # anomalous extra attempts get a few columns of their own, unless the planned ones are already cut
    last_col = planned_cols + max_extra_columns if max_planned <= max_attempts else planned_cols

    recs = run.records
    cells: dict[tuple[int, int], tuple[str, bool, bool]] = {}
    extra_beyond = 0
    not_in_plan = int((recs["anomaly"].astype(object) == "task_not_in_plan").sum()) if len(recs) else 0
    has_records = len(recs) > 0
    recs = recs[recs["task_id"].astype(object).isin(index).to_numpy()] if len(recs) else recs
    if len(recs):
        tid = recs["task_id"].astype(object).to_numpy()
        att = recs["attempt"].to_numpy(dtype="int64")
        succ = recs["success"].to_numpy(dtype=object, na_value=None)
        elig = recs["agent_eligible"].to_numpy(dtype=object, na_value=None)
        fcls = recs["failure_class"].astype(object).to_numpy()
        anomaly = recs["anomaly"].astype(object).to_numpy()
        for t, a, s, e, f, an in zip(tid, att, succ, elig, fcls, anomaly):
            i = index.get(t)
            if i is None:
                continue
            if a > last_col:
                extra_beyond += int(a > max_planned)
                continue
            cells[(i, int(a))] = (_outcome(s is True, f), e is not True, an == "above_planned_repeats")
    ncols = max([planned_cols] + [a for (_, a) in cells])
    nrows = max(len(shown), 1)

    with _rc():
        height = min(0.24 * nrows + 1.7, 18.0)
        width = min(4.8 + 0.42 * ncols, 12.0)
        fig = _figure(width, height)
        ax = fig.subplots()
        ax.set_facecolor("#f0f0f0")
        has_extra = False
        for i in range(len(shown)):
            for a in range(1, ncols + 1):
                cell = cells.get((i, a))
                if cell is None:
                    if a <= shown_planned[i]:
                        ax.add_patch(
                            Rectangle((a - 0.45, i - 0.42), 0.9, 0.84, facecolor="white", edgecolor="#8a8a8a", lw=0.8)
                        )
                    continue
                kind, ineligible, extra = cell
                has_extra |= extra
                ax.add_patch(
                    Rectangle(
                        (a - 0.45, i - 0.42),
                        0.9,
                        0.84,
                        facecolor=_COLORS[kind],
                        edgecolor="#1f2328" if extra else "white",
                        linestyle="--" if extra else "-",
                        lw=1.4 if extra else 0.5,
                        hatch="////" if ineligible else None,
                        alpha=0.6 if extra else 1.0,
                    )
                )
        k = int(run.k)
        if k < ncols:
            ax.axvline(k + 0.5, color="#1f2328", ls=":", lw=1.0)
        ax.set_xlim(0.5, ncols + 0.5)
        ax.set_ylim(nrows - 0.5, -0.5)
        step = max(1, math.ceil(ncols / 20))
        ax.set_xticks(range(1, ncols + 1, step))
        ax.set_yticks(range(len(shown)), [_plain_label(t, 40) for t in shown])
        ax.tick_params(axis="y", labelsize=8 if len(shown) <= 40 else 7)
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        ax.set_xlabel("attempt")
        title = "Attempts by task (plan order)"
        notes = []
        if n_total > len(shown):
            notes.append(f"first {len(shown)} of {n_total:,} tasks shown")
        if max_planned > planned_cols:
            notes.append(f"attempts above {planned_cols} not drawn")
        if extra_beyond:
            notes.append(f"{extra_beyond:,} attempts above planned repeats beyond attempt {last_col} not drawn")
        if not_in_plan:
            notes.append(f"{not_in_plan:,} records of tasks not in the plan not drawn")
        if not has_records:
            notes.append("no records")
        if notes:
            title += "\n" + "; ".join(notes)
        ax.set_title(title, loc="left")

        handles = [Patch(facecolor=_COLORS[c], edgecolor="white", label=c) for c in CLASS_KEYS]
        handles.append(Patch(facecolor="white", edgecolor="#8a8a8a", label="missing (planned, no record)"))
        handles.append(
            Patch(facecolor="#cccccc", edgecolor="white", hatch="////", label="not agent-eligible (hatched)")
        )
        if has_extra:
            handles.append(
                Patch(
                    facecolor="#cccccc",
                    edgecolor="#1f2328",
                    linestyle="--",
                    label="above planned repeats\n(anomaly, not counted)",
                )
            )
        if any(p < ncols for p in shown_planned):
            handles.append(Patch(facecolor="#f0f0f0", edgecolor="#f0f0f0", label="beyond the task's repeats"))
        if k < ncols:
            handles.append(Line2D([0], [0], color="#1f2328", ls=":", label=f"end of prefix 1..k (k = {k})"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="outcome")
        _show_figure(fig, alt="Attempt grid: tasks by attempt number, coloured by outcome")


# =========================================================================== outcomes


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


def _evidence_link(base: str, artifact_dir: Any, reference: str) -> _Raw:
    """``<a href="BASE/artifact_dir/FILE">FILE#POINTER</a>``, every part escaped and percent-encoded."""
    text = html_escape(reference)
    if artifact_dir is None or artifact_dir is pd.NA:
        return _Raw(f'<span class="cb-mono">{text}</span>')
    file = reference.partition("#")[0]
    path = (
        posixpath.join(base, str(artifact_dir).replace("\\", "/"), file)
        if base
        else posixpath.join(str(artifact_dir).replace("\\", "/"), file)
    )
    # quote() leaves only unreserved characters and "/": no scheme, query or fragment can appear.
    href = html_escape(quote(path, safe="/"), max_len=None)
    return _Raw(f'<a class="cb-mono" href="{href}">{text}</a>')


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
        np.array([_outcome(bool(s), f) for s, f in zip(succ, fcls)], dtype=object)
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
        _table(
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
        _table(
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
                    _id(tids[r]),
                    str(int(nums[r])),
                    outcome[r],
                    stage_of[r],
                    _Raw("<br>".join(links)) if links else "n/a (no evidence)",
                ]
            )
        parts.append(
            _table(
                ["task", "attempt", "class", "stage", "evidence"],
                erows,
                numeric=(1,),
                caption="Attempts with a failure stage, and their evidence",
                scroll=len(erows) > 25,
            )
        )
        if len(staged) > max_rows:
            parts.append(
                _p(f"Showing the first {max_rows:,} of {len(staged):,} attempts with a failure stage.", "cb-note")
            )
    else:
        parts.append(_p("No counted attempt has a failure stage (so no evidence to link).", "cb-note"))
    _show("".join(parts))


# =========================================================================== per task


def show_per_task(doc: Mapping, run, *, max_rows: int = 1000) -> None:
    """Display the per-task statistics table, in plan order.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``per_task``: counts, k-eligibility,
        first success, cost to first success, oracle best score).
    run : Run
        The loaded run (:func:`capbench_nb.metrics.per_task`: success rate
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
        oracle_text = _fmt_score(oracle, none="n/a (not k-eligible)" if not k_elig else "n/a (no score)")
        no_elig = "n/a (no eligible attempts)"
        med_wall = fmt_ms(cols["median_task_wall_ms"][i]) if eligible else no_elig
        med_tok = fmt_count(cols["median_total_tokens"][i]) if eligible else no_elig
        rows.append(
            [
                _id(tid),
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
        _table(
            headers,
            rows,
            numeric=(1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13),
            caption="Per-task statistics (plan order; success rate over eligible attempts)",
            scroll=True,
        )
    ]
    if n > max_rows:
        parts.append(_p(f"Showing the first {max_rows:,} of {n:,} tasks; metrics.json lists every task.", "cb-note"))
    parts.append(
        _p(
            "Cost to first success sums task wall time, total tokens and cost over the eligible attempts up to the "
            "first success; a sum is n/a when any addend has no source. Medians are over eligible attempts.",
            "cb-note",
        )
    )
    _show("".join(parts))


# =========================================================================== telemetry


def _tele_fmt(name: str):
    return fmt_ms if name in TELEMETRY_MS_FIELDS else fmt_count


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
            rows.append([_id(name), over, fmt_count(n), fmt_count(nulls), value, "", "", "", "", ""])
            continue
        f = _tele_fmt(name)
        stats = [f(agg.get(s)) if n else NA_SOURCE for s in ("sum", "mean", "median", "p90", "min", "max")]
        rows.append([_id(name), over, fmt_count(n), fmt_count(nulls), *stats])
    if not rows:
        _show(_p("No telemetry aggregates in the document.", "cb-note"))
        return
    parts = [
        _table(
            ["field", "over", "n", "nulls", "sum", "mean", "median", "p90", "min", "max"],
            rows,
            numeric=(2, 3, 4, 5, 6, 7, 8, 9),
            caption="Telemetry aggregates (n = attempts with a value; nulls = attempts without a source)",
        ),
        _p(
            "Boolean fields count true values among attempts with a value. Median and p90 interpolate linearly.",
            "cb-note",
        ),
    ]
    _show("".join(parts))


_PLOTTED_TELEMETRY = (
    ("task_wall_ms", "task wall time"),
    ("total_tokens", "total tokens"),
    ("device_execution_ms", "device execution time"),
    ("time_to_first_token_ms", "time to first token"),
)


def plot_telemetry(run) -> None:
    """Plot distributions of the main telemetry fields over eligible attempts.

    Parameters
    ----------
    run : Run
        The loaded run.

    Notes
    -----
    Histograms of ``task_wall_ms``, ``total_tokens``, ``device_execution_ms``
    and ``time_to_first_token_ms`` over eligible counted attempts, with the
    median (solid) and p90 (dashed) marked.  A field without any value is not
    plotted and is named in a note instead.
    """
    from matplotlib.ticker import FuncFormatter

    a = run.attempts
    eligible = a[a["agent_eligible"].to_numpy(dtype=bool, na_value=False)]
    data = []
    skipped = []
    for name, label in _PLOTTED_TELEMETRY:
        col = eligible[name]
        vals = col.dropna().to_numpy(dtype="float64")
        if len(vals):
            data.append((name, label, vals, int(col.isna().sum())))
        else:
            skipped.append(name)
    note = ""
    if skipped:
        note = _p(
            "Not plotted, no value in any eligible attempt: " + ", ".join(skipped) + ".",
            "cb-note",
        )
    if not data:
        _show(
            _p(
                "No telemetry to plot: no eligible attempt has a value for "
                + ", ".join(n for n, _ in _PLOTTED_TELEMETRY)
                + ".",
                "cb-note",
            )
        )
        return
    with _rc():
        ncols = 2 if len(data) > 1 else 1
        nrows = math.ceil(len(data) / ncols)
        fig = _figure(5.0 * ncols, 2.9 * nrows)
        axes = np.atleast_1d(fig.subplots(nrows, ncols)).ravel()
        for ax, (name, label, vals, nulls) in zip(axes, data):
            if name in TELEMETRY_MS_FIELDS and np.median(vals) >= 1000:
                shown, unit = vals / 1000.0, "seconds"
            elif name in TELEMETRY_MS_FIELDS:
                shown, unit = vals, "milliseconds"
            else:
                shown, unit = vals, "tokens" if "tokens" in name else "count"
            bins = int(min(30, max(5, math.ceil(math.sqrt(len(shown))) + 2)))
            ax.hist(shown, bins=bins, color="#3b75af", alpha=0.85, edgecolor="white")
            med, p90 = np.percentile(shown, [50, 90])
            ax.axvline(med, color="#1f2328", lw=1.2, label=f"median {(_tele_fmt(name))(np.median(vals))}")
            ax.axvline(p90, color="#1f2328", lw=1.0, ls="--", label=f"p90 {(_tele_fmt(name))(np.percentile(vals, 90))}")
            ax.set_title(f"{label} ({name}): n = {len(vals):,}, {nulls:,} null")
            ax.set_xlabel(unit)
            if unit in ("tokens", "count"):
                ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.0f}"))
            ax.set_ylabel("attempts")
            ax.legend(loc="upper right", frameon=False)
            ax.grid(axis="y", alpha=0.3)
        for ax in axes[len(data) :]:
            ax.set_visible(False)
        _show_figure(fig, alt="Telemetry distributions over eligible attempts")
    if note:
        _show(note)


# =========================================================================== anomalies, provenance


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
    counts = _anomaly_counts(doc)
    if not anomalies and not sum(counts.values()):
        _show('<div class="cb-ok">No anomalies.</div>')
        return
    labels = {
        "above_planned_repeats": "above planned repeats",
        "task_not_in_plan": "task not in the plan",
        "invalid_line": "invalid lines (skipped with --allow-invalid)",
    }
    summary = ", ".join(f"{counts[k]:,} {labels[k]}" for k in ANOMALY_KINDS if counts[k])
    parts = [
        f'<div class="cb-warn"><b>{_plural(max(len(anomalies), sum(counts.values())), "anomaly", "anomalies")}</b>: '
        f"{html_escape(summary)}. "
        "These records enter no metric and no count.</div>"
    ]
    rows, classes = [], []
    for a in anomalies[:max_rows]:
        att = a.get("attempt")
        rows.append(
            [
                a.get("kind") or "",
                _id(a.get("task_id")),
                str(att) if att is not None else "n/a (unreadable)",
                fmt_count(a.get("line")) if a.get("line") is not None else "n/a",
                _Raw(html_escape(a.get("reason"), max_len=400)),
            ]
        )
        classes.append("cb-bad" if a.get("kind") == "invalid_line" else "")
    parts.append(
        _table(
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
            _p(f"Showing the first {max_rows:,} of {len(anomalies):,} anomalies; metrics.json lists all.", "cb-note")
        )
    _show("".join(parts))


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
        ["run_id", _id(doc.get("run_id"))],
    ]
    for name, digest in (prov.get("inputs") or {}).items():
        rows.append([f"input {name}", _Raw(f'<span class="cb-mono">{html_escape(digest)}</span>')])
    for name, value in (prov.get("options") or {}).items():
        rows.append([f"option {name}", _param_text(value)])
    parts = [_table(["provenance", "value"], rows, caption="Provenance")]
    params = dict(parameters or {})
    if params:
        prow = [
            [_id(str(k)), _Raw(f'<span class="cb-mono">{html_escape(_param_text(v), max_len=1000)}</span>')]
            for k, v in params.items()
        ]
        parts.append(_table(["parameter", "value"], prow, caption="Report parameters"))
    else:
        parts.append(_p("No report parameters.", "cb-note"))
    _show("".join(parts))


# =========================================================================== curves and slices


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
    parts = [_table(["j", "pass@j (planned prefix)", "pass^j (planned prefix)", "coverage"], rows,
                    numeric=(0, 3), caption="Planned prefixes: attempts 1..j of the tasks whose attempts 1..j "
                                             "are all present and eligible")] if rows else []
    unbiased = curves.get("unbiased") or {}
    points = unbiased.get("points") or []
    if points:
        urows = [[str(p["j"]), fmt_pct(p["pass@j"]), fmt_pct(p["pass^j"])] for p in points]
        parts.append(_table(["j", "pass@j (unbiased)", "pass^j (unbiased)"], urows, numeric=(0, 1, 2),
                            caption=f"A different estimator: unbiased over all eligible attempts of "
                                    f"{unbiased.get('tasks', 0)} tasks (Chen et al. 2021; Yao et al. 2024)"))
    else:
        parts.append(_p("Unbiased estimators: n/a (no task has an eligible attempt).", "cb-note"))
    _show("".join(parts))


def show_slices(doc: Mapping) -> None:
    """Display, for every slice dimension in the document, a table and a chart of the slice metrics.

    Slices with fewer than ``SMALL_SLICE`` planned tasks are marked *small*:
    their intervals are wide.  Slice values are run-supplied and escaped.
    """
    slices = doc.get("slices") or {}
    if not slices:
        _show(_p("No slice dimensions were requested (capbench-nb report --slice DIM).", "cb-note"))
        return
    for dim, entries in slices.items():
        rows, classes = [], []
        for e in entries:
            small = bool(e.get("small"))
            rows.append([
                _id(e.get("value"), missing="(no value)"),
                fmt_count(e.get("tasks")),
                "small" if small else "",
                fmt_rate(e.get("pass@1") or {}),
                fmt_rate(e.get("pass@k") or {}),
                fmt_rate(e.get("pass^k") or {}),
                fmt_count((e.get("attempts") or {}).get("total")),
                fmt_count((e.get("attempts") or {}).get("eligible")),
            ])
            classes.append("cb-small" if small else "")
        _show(_p(f"Slices by {dim}", "cb-title") + _table(
            [str(dim), "tasks", "", "pass@1", "pass@k", "pass^k", "attempts", "eligible"], rows,
            numeric=(1, 6, 7), caption=f"Metrics per value of {dim}; coverage is within the slice",
            row_classes=classes))
        _plot_slices(str(dim), entries, int(doc.get("k") or 1))


def _plot_slices(dim: str, entries: list, k: int) -> None:
    from matplotlib.ticker import PercentFormatter

    shown = entries[:40]
    if not shown:
        return
    with _rc():
        fig = _figure(10.0, 0.9 + 0.32 * len(shown))
        ax = fig.subplots()
        keys = [("pass@1", "pass@1", "#3b75af", -0.22), ("pass@k", f"pass@k (k = {k})", "#2e9e5b", 0.0),
                ("pass^k", f"pass^k (k = {k})", "#d1495b", 0.22)]
        for key, label, color, offset in keys:
            ys, xs, lo, hi = [], [], [], []
            for i, e in enumerate(shown):
                m = e.get(key) or {}
                if _is_null(m.get("value")):
                    continue
                ys.append(i + offset)
                xs.append(float(m["value"]))
                lo.append(float(m["value"]) - float(m["ci_low"]))
                hi.append(float(m["ci_high"]) - float(m["value"]))
            if xs:
                ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", color=color, ms=4, capsize=3, lw=1, label=label)
        ax.set_yticks(range(len(shown)))
        ax.set_yticklabels([_plain_label(e.get("value") if e.get("value") is not None else "(no value)")
                            + (" (small)" if e.get("small") else "") for e in shown])
        ax.invert_yaxis()
        ax.set_xlim(-0.02, 1.02)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("rate with 95% Wilson interval")
        title = f"By {_plain_label(dim)}"
        if len(entries) > len(shown):
            title += f" (first {len(shown)} of {len(entries)} values)"
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=8)
        _show_figure(fig, alt=f"pass@1, pass@k and pass^k with intervals for each value of {dim}")
