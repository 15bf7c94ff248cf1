"""The gate's verdict on the comparison page, when a gate.json sits beside comparison.html (issue 28).

:func:`gate_beside_html` reads ``DIR/gate.json`` and renders its decision and
per-metric table for the comparison notebook (``notebooks/compare_runs.ipynb``),
only when the gate was run on the same two runs as the comparison (their input
hashes agree): a gate.json of other runs, or one that cannot be read, is named
and not shown.  Every string from the file goes through
:func:`capbench_nb.outputs.html.escaping.html_escape`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.gate.files import GATE_FILE
from capbench_nb.outputs.gate.markdown import DECISION_WORDS, fmt_pct, fmt_pp

__all__ = ["gate_beside_html", "gate_html", "same_runs"]


def same_runs(gate_doc: dict, comparison_doc: dict) -> bool:
    """Whether a gate document and a comparison document are about the same two runs (A = baseline, B = candidate)."""
    inputs = comparison_doc.get("provenance", {}).get("inputs", {})
    runs = gate_doc.get("runs") or {}
    return (isinstance(runs, dict) and (runs.get("baseline") or {}).get("inputs") == inputs.get("a")
            and (runs.get("candidate") or {}).get("inputs") == inputs.get("b"))


def _cell(text: str, label: str, num: bool) -> str:
    cls = ' class="cbc-num"' if num else ""
    return f'<td{cls} data-label="{html_escape(label)}">{text}</td>'


def _row(doc: dict, e: dict, columns: list[tuple[str, bool]]) -> str:
    needed = "" if e["needed_tasks"] is None else f"{int(e['needed_tasks']):,}"
    cells = [html_escape(e["metric"]), f"<b>{html_escape(e['decision'])}</b>", f"{int(e['n']):,}",
             fmt_pct(e["baseline"]), fmt_pct(e["candidate"]), fmt_pp(e["delta"]),
             f"[{fmt_pp(e['ci_low'])}, {fmt_pp(e['ci_high'])}]", needed, f"{len(e['regressions']):,}"]
    return "<tr>" + "".join(_cell(c, name, num) for c, (name, num) in zip(cells, columns)) + "</tr>"


def gate_html(doc: dict) -> str:
    """The gate's decision, a row per metric, the warnings left and the same-run note, as an HTML block.

    The table has the comparison page's classes (``cbc-t cbc-cards``: cards on a narrow screen).
    """
    decision = str(doc["decision"])
    level = f"{100 * (1 - 2 * float(doc['alpha'])):g}%"
    columns = [("metric", False), ("decision", False), ("paired tasks", True), ("baseline", True),
               ("candidate", True), ("\u0394", True), (f"{level} CI", True), ("needed tasks", True),
               ("regressions", True)]
    num_class = ' class="cbc-num"'
    head = "".join(f'<th scope="col"{num_class if num else ""}>{html_escape(name)}</th>' for name, num in columns)
    rows = "".join(_row(doc, e, columns) for e in doc["metrics"])
    notes = "".join(f'<div class="cbc-warn"><b>{html_escape(w.get("code"))}</b>: '
                    f'{html_escape(w.get("message"), max_len=1000)}</div>' for w in doc.get("warnings") or [])
    if doc.get("same_run"):
        notes += ("<p><b>The baseline and the candidate are the same run directory: the gate passes trivially "
                  "(a run cannot regress against itself) and checks nothing.</b></p>")
    return (f'<div class="cbc cbc-gate"><h2>Regression gate: {html_escape(decision)}</h2>'
            f"<p>{html_escape(DECISION_WORDS.get(decision, decision))} (gate.json beside this page: margin "
            f"{100 * float(doc['margin']):g} pp, alpha {float(doc['alpha']):g}, {level} interval).</p>{notes}"
            f'<table class="cbc-t cbc-cards"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>')


def gate_beside_html(directory: str | os.PathLike, comparison_doc: dict) -> str:
    """:func:`gate_html` of ``directory/gate.json`` when it is about the compared runs; ``""`` without one."""
    path = Path(directory) / GATE_FILE
    if not path.is_file():
        return ""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("schema_version") != "capbench.gate/1":
            raise ValueError("not a capbench.gate/1 document")
        if not same_runs(doc, comparison_doc):
            return ('<div class="cbc cbc-gate"><p>A gate.json beside this page is about other runs than these '
                    "two; its verdict is not shown.</p></div>")
        return gate_html(doc)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return (f'<div class="cbc cbc-gate"><p>The gate.json beside this page could not be read '
                f"({html_escape(type(exc).__name__)}); its verdict is not shown.</p></div>")
