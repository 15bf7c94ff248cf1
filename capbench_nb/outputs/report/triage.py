"""The tasks to look at first, above the report's explorer: never succeeded, inconsistent, quarantine
candidates, drifted.

Read from the metrics document alone (``per_task``, ``health.per_task``, ``lock.drifted_tasks``); each task
links to its row in the explorer of the same page (:func:`~capbench_nb.outputs.report.health.task_link`).
"""

from __future__ import annotations

from collections.abc import Mapping

from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.html.tables import show_html
from capbench_nb.outputs.report.health import task_link

__all__ = ["TRIAGE_NAMED", "triage_groups", "triage_html", "show_triage"]

#: Tasks named per group (the rest are counted; the explorer's filters list them all).
TRIAGE_NAMED = 12


#: Each group's name, singular and plural.
_NAMES = {"never succeeded": ("task never succeeded", "tasks never succeeded"),
          "inconsistent": ("inconsistent task", "inconsistent tasks"),
          "quarantine candidates": ("quarantine candidate", "quarantine candidates"),
          "drifted": ("drifted task", "drifted tasks")}


def triage_groups(doc: Mapping) -> list[tuple[str, str, list[str]]]:
    """``(group, what it means and how the explorer finds them, task ids in plan order)`` for each group, empty
    groups included; the groups are ``never succeeded``, ``inconsistent``, ``quarantine candidates``, ``drifted``."""
    per_task = doc.get("per_task") or []
    health = {e.get("task_id"): e for e in ((doc.get("health") or {}).get("per_task") or [])}
    lock = doc.get("lock") if isinstance(doc.get("lock"), Mapping) else {}
    drifted = set(lock.get("drifted_tasks") or [])
    k = doc.get("k")
    ids = [e.get("task_id") for e in per_task]
    return [
        ("never succeeded", "eligible attempts, none of them a success (tasks with only ineligible attempts are "
                            "the suite's: see quarantine)",
         [e.get("task_id") for e in per_task if int(e.get("eligible") or 0) and not int(e.get("successes") or 0)]),
        ("inconsistent", f"some, not all, of attempts 1..{k} succeeded (filter: consistency)",
         [t for t in ids if (health.get(t) or {}).get("consistency") == "inconsistent"]),
        ("quarantine candidates", "the suite fails there, not the agent (filter: suite health)",
         [t for t in ids if (health.get(t) or {}).get("quarantine")]),
        ("drifted", "an attempt ran under other conditions than the lock pins (see the suite lock)",
         [t for t in ids if t in drifted]),
    ]


def triage_html(doc: Mapping, *, named: int = TRIAGE_NAMED) -> str:
    """The groups as cards: a title with the count, what it means, and up to ``named`` linked tasks."""
    position = {e.get("task_id"): i for i, e in enumerate(doc.get("per_task") or [])}
    cards = []
    for title, meaning, tasks in triage_groups(doc):
        if title == "drifted" and not isinstance(doc.get("lock"), Mapping):
            continue  # a run without a lock says nothing about drift
        links = ", ".join(task_link(position[t], t) for t in tasks[:named])
        more = f" and {len(tasks) - named:,} more" if len(tasks) > named else ""
        body = f"<p>{links}{more}</p>" if tasks else '<p class="cb-note">none</p>'
        one, many = _NAMES[title]
        cards.append(f'<div class="cb-card cb-triage"><div><b>{len(tasks):,}</b> {one if len(tasks) == 1 else many}</div>'
                     f'<div class="cb-label">{html_escape(meaning, max_len=None)}</div>{body}</div>')
    return ('<p class="cb-title">Tasks to look at first</p>'
            f'<div class="cb-cards">{"".join(cards)}</div>')


def show_triage(doc: Mapping) -> None:
    """Display :func:`triage_html` (above the explorer)."""
    show_html(triage_html(doc))
