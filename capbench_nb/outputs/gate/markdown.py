"""gate.md: the gate's verdict in Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``).

The decision comes first, then one table row per metric, the compatibility
warnings, and each metric's regressions as a collapsible ``<details>`` list.
Every run-supplied string (run ids, task ids, failure classes, warning
messages) goes through :func:`capbench_nb.outputs.html.escaping.md_escape`: a task id
with backticks, pipes, ``<``, newlines, control characters or lone surrogates
renders as data, on its line and in its cell.
"""

from __future__ import annotations

from capbench_nb.outputs.html.escaping import md_escape

__all__ = ["gate_markdown", "DECISION_WORDS", "fmt_pct", "fmt_pp", "attempts_text"]

#: How each decision reads in the headline.
DECISION_WORDS = {
    "pass": "PASS: no metric is worse than the baseline by more than the margin",
    "fail": "FAIL: the candidate is worse than the baseline by more than the margin",
    "inconclusive": "INCONCLUSIVE: too few paired tasks to rule out a drop larger than the margin",
    "incompatible": "INCOMPATIBLE: the two runs differ in a way that makes their numbers incomparable",
}


def fmt_pct(value: float | None) -> str:
    """A rate as a percentage with one decimal, ``n/a`` for null."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def fmt_pp(value: float | None) -> str:
    """A difference in signed percentage points, ``n/a`` for null."""
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


def attempts_text(outcomes: list[dict]) -> str:
    """``1 success, 2 agent, 3 ineligible (environment)``: a run's attempts of a task, as plain text (not escaped)."""
    if not outcomes:
        return "no attempt"
    parts = []
    for o in outcomes:
        what = "success" if o["success"] else (o["failure_class"] or "failed")
        parts.append(f"{o['attempt']} {what}" if o["eligible"] else f"{o['attempt']} ineligible ({what})")
    return ", ".join(parts)


def _regression_line(metric: str, entry: dict) -> str:
    line = (f"- {md_escape(entry['task_id'])}: baseline {md_escape(attempts_text(entry['baseline']))}; "
            f"candidate {md_escape(attempts_text(entry['candidate']))}")
    if metric == "selected@k":
        def pick(value):
            return "abstained" if value is None else f"attempt {value}"

        line += f" (selected: baseline {pick(entry.get('baseline_selected'))}, " \
                f"candidate {pick(entry.get('candidate_selected'))})"
    return line


def gate_markdown(doc: dict, *, max_regressions: int = 200) -> str:
    """gate.md of a gate document (:func:`capbench_nb.metrics.gate.gate_document`).

    Each metric's regression list names at most ``max_regressions`` tasks and says how many more there are.
    """
    level = f"{100 * (1 - 2 * doc['alpha']):g}%"
    runs = doc["runs"]
    lines = [f"# capbench-nb gate: {doc['decision']}", "",
             f"**{DECISION_WORDS[doc['decision']]}.**", "",
             f"Candidate {md_escape(runs['candidate']['run_id'])} against baseline "
             f"{md_escape(runs['baseline']['run_id'])}; margin {100 * doc['margin']:g} pp, alpha {doc['alpha']:g} "
             f"({level} Newcombe interval of candidate minus baseline on the paired tasks, a one-sided test at "
             f"{doc['alpha']:g}).", ""]
    if doc["same_run"]:
        lines += ["**The baseline and the candidate are the same run directory: the gate passes trivially "
                  "(a run cannot regress against itself) and checks nothing.**", ""]
    lines += [f"| metric | decision | paired tasks | baseline | candidate | Δ | {level} CI | needed tasks | "
              "regressions |", "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for e in doc["metrics"]:
        needed = "" if e["needed_tasks"] is None else str(e["needed_tasks"])
        lines.append(f"| {md_escape(e['metric'])} | **{e['decision']}** | {e['n']} | {fmt_pct(e['baseline'])} | "
                     f"{fmt_pct(e['candidate'])} | {fmt_pp(e['delta'])} | [{fmt_pp(e['ci_low'])}, "
                     f"{fmt_pp(e['ci_high'])}] | {needed} | {len(e['regressions'])} |")
    lines.append("")
    if doc["warnings"] or doc["allowed_warnings"]:
        lines += ["## Compatibility", ""]
        lines += [f"- **{md_escape(w['code'])}**: {md_escape(w['message'])}" for w in doc["warnings"]]
        lines += [f"- {md_escape(w['code'])} (allowed by --allow-diff): {md_escape(w['message'])}"
                  for w in doc["allowed_warnings"]]
        lines.append("")
    for e in doc["metrics"]:
        regressions = e["regressions"]
        if not regressions:
            continue
        lines += ["<details>", f"<summary>Regressions in {md_escape(e['metric'])}: {len(regressions)} task(s) the "
                  "baseline passed and the candidate did not</summary>", ""]
        lines += [_regression_line(e["metric"], r) for r in regressions[:max_regressions]]
        if len(regressions) > max_regressions:
            lines.append(f"- and {len(regressions) - max_regressions} more (see gate.json)")
        lines += ["", "</details>", ""]
    return "\n".join(lines)
