"""The report's 'Suite lock' section (spec section 12), shown only for a run that names a lock.

Near the top of the report: the lock's digest, the pins a reader cares about (device, system image,
locale, region, network, app versions) in a compact table, the drifted attempts (each linked to the
task explorer, each failed probe as expected vs observed) and the findings of the check as a red
banner.  The numbers (drifted attempts, findings) come from metrics.json's ``lock`` block; the pins
from the run's lock copy, the probes from the drifted attempts' preflight (both read by ``load_run``;
nothing here reads a file).  A run without a lock shows nothing at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capbench_nb.format.lock import LOCK_PIN_ROWS
from capbench_nb.io.pointer import EvidenceError, resolve_pointer
from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.html.formatting import plural
from capbench_nb.outputs.report.health import task_link
from capbench_nb.outputs.html.tables import Raw, html_table, id_cell, paragraph, show_html

__all__ = ["lock_html", "show_lock"]

#: Drifted attempts listed at most (the explorer shows every attempt).
MAX_DRIFT_ROWS = 200
_RED = 'style="background:#ffebe9;border:1px solid #cf222e;border-radius:6px;padding:6px 10px;margin:0.4em 0"'


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _pins(lock: Mapping) -> str:
    rows = []
    for label, pointer in LOCK_PIN_ROWS:
        try:
            value = resolve_pointer(lock, pointer)
        except EvidenceError:
            continue
        if isinstance(value, dict) and pointer == "/platform/system_image":
            value = " ".join(str(value[key]) for key in ("api", "tag", "abi") if key in value) or _text(value)
        rows.append([label, id_cell(_text(value))])
    for app in lock.get("apps") or []:
        if isinstance(app, dict):
            rows.append([f"app {app.get('package')}", id_cell(_text(app.get("version_code", app.get("version"))))])
    if not rows:
        return paragraph("The lock pins no device, system image, device state or app.", "cb-note")
    return html_table(["pin", "value"], rows, caption="Pins", key_value=True)


def _probe_text(probe: Any) -> Raw:
    if not isinstance(probe, dict):
        return Raw(html_escape(_text(probe)))
    return Raw(f'{html_escape(_text(probe.get("name")))}: expected <span class="cb-mono">'
               f'{html_escape(_text(probe.get("expected")))}</span>, observed <span class="cb-mono">'
               f'{html_escape(_text(probe.get("observed")))}</span>')


def _drift_rows(drifts, positions: Mapping) -> list[list[Any]]:
    rows = []
    for d in drifts[:MAX_DRIFT_ROWS]:
        preflight = d.preflight or {}
        shown = []
        for ref in d.evidence:
            pointer = ref.partition("#")[2]
            if pointer == "/preflight/lock":
                shown.append(Raw(f'lock: expected this lock, observed <span class="cb-mono">'
                                 f'{html_escape(_text(preflight.get("lock")))}</span>'))
            else:
                try:
                    shown.append(_probe_text(resolve_pointer({"preflight": preflight}, pointer)))
                except EvidenceError:
                    shown.append(Raw(html_escape(ref)))
        cell = Raw("<br>".join(str(s) for s in shown))
        task = task_link(positions[d.task_id], d.task_id) if d.task_id in positions else id_cell(d.task_id)
        rows.append([task, d.attempt, "yes" if d.eligible else "no", cell])
    return rows


def lock_html(doc: Mapping, lock: Mapping | None, drifts=(), positions: Mapping | None = None) -> str:
    """The section's HTML ('' for a run without a lock).

    Parameters
    ----------
    doc : mapping
        The metrics document (its ``lock`` block).
    lock : mapping or None
        The run's lock copy, when at hand.
    drifts : sequence of Drift
        The run's drifted attempts (``Run.drifts``), each with its preflight.
    positions : mapping
        ``task_id -> plan position`` (the explorer's anchors).
    """
    block = doc.get("lock")
    if not isinstance(block, Mapping):
        return ""
    parts = ["<h2>Suite lock</h2>"]
    findings = block.get("findings") or []
    if findings:
        items = "".join(f"<li><b>{html_escape(f.get('kind'))}</b>: {html_escape(f.get('detail'))}</li>"
                        for f in findings)
        parts.append(f'<div class="cb-lock-findings" {_RED}>The run does not match its lock: '
                     f"{plural(len(findings), 'finding')}<ul>{items}</ul></div>")
    checked = "checked against the run's copy" if block.get("checked") else "not checked: the run carries no lock copy"
    parts.append(f'<p>A run of a frozen suite, lock <span class="cb-mono">{html_escape(block.get("digest"))}</span> '
                 f"({html_escape(checked)}).</p>")
    if lock is not None:
        parts.append(_pins(lock))
    n = int(block.get("drifted_attempts") or 0)
    tasks = block.get("drifted_tasks") or []
    if n:
        parts.append(paragraph(f"{plural(n, 'attempt')} of {plural(len(tasks), 'task')} drifted from the lock: "
                               "the device did not match it before the attempt, so the attempt is an environment "
                               "failure (not agent-eligible) unless its record says otherwise.", "cb-note"))
        rows = _drift_rows(list(drifts), positions or {})
        if rows:
            parts.append(html_table(["task", "attempt", "agent-eligible", "drift (expected vs observed)"], rows,
                                    numeric=(1,), caption="Drifted attempts", scroll=True))
    else:
        parts.append(paragraph("No attempt drifted from the lock.", "cb-note"))
    return "".join(parts)


def show_lock(doc: Mapping, run=None) -> None:
    """Display the section for a run that names a lock; nothing otherwise.  The pins come from the
    run's lock copy and the probes from its drifted attempts, both read by ``load_run``
    (``Run.lock_copy``, ``Run.drifts``)."""
    if not isinstance(doc.get("lock"), Mapping):
        return
    lock, drifts, positions = None, (), {}
    if run is not None:
        lock, drifts = run.lock_copy, run.drifts
        positions = {t: i for i, t in enumerate(run.plan["task_id"].tolist())}
    show_html(lock_html(doc, lock, drifts, positions))
