"""The report's best-of-k section (spec section 9), read from the metrics document alone.

Shown only when the run has a selection file (metrics.json has a ``selection`` block); for any other
run :func:`show_selection` displays nothing, so the report's cell stays empty and hidden.  In the
order a reader needs it: one sentence (the one summary.md has) and the four rates as cards; a
figure of pass@1, selected@k and pass@k with their Wilson intervals on the same tasks, beside the
curve from the selector's scores and pass@j; the cost and latency of the best-of-k system beside a
single attempt on the same tasks; and the tasks where the selector missed a success, each linking
into the task explorer (``#cb-explorer-task-N``, N the task's plan position), whose script opens it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.report.figures import figure_html, figure_style, metric_color, new_figure, rates_axes, show_figures
from capbench_nb.outputs.html.formatting import NA, NA_NO_ELIGIBLE, fmt_cost, fmt_count, fmt_interval, fmt_ms, fmt_pct, \
    is_null, plural
from capbench_nb.outputs.html.tables import Raw, html_table, paragraph, show_html
from capbench_nb.outputs.report.health import EXPLORER_ID, task_link
from capbench_nb.outputs.summary import selection_sentence

__all__ = ["show_selection", "plot_selection", "selection_cards", "cost_table", "missed_table"]

def _card(label: str, m: Mapping, detail: str) -> str:
    n = int(m.get("n") or 0)
    value = fmt_pct(m.get("value")) if n and not is_null(m.get("value")) else NA_NO_ELIGIBLE
    text = f"{m.get('successes', 0)}/{n} tasks · 95% CI {fmt_interval(m.get('ci_low'), m.get('ci_high'))} · {detail}"
    return (f'<div class="cb-card"><div class="cb-label">{html_escape(label, max_len=None)}</div>'
            f'<div class="cb-value">{html_escape(value, max_len=None)}</div>'
            f'<div class="cb-detail">{html_escape(text, max_len=None)}</div></div>')


def selection_cards(sel: Mapping) -> str:
    """selected@k, pass@1 and pass@k on the same tasks, and selection accuracy, as the headline's cards."""
    m, k = sel.get("metrics") or {}, sel.get("k")
    gap = sel.get("gap")
    gap_text = "gap to pass@k n/a" if is_null(gap) else f"gap to pass@k {100 * float(gap):.1f} pp"
    cards = [
        _card(f"selected@k (k = {k}): the selector's pick", m.get("selected@k") or {}, gap_text),
        _card("pass@1 on the same tasks: one attempt", m.get("pass@1") or {}, "no selector"),
        _card(f"pass@k (k = {k}) on the same tasks: an oracle", m.get("pass@k") or {}, "any success counts"),
        _card("selection accuracy", m.get("selection_accuracy") or {}, "over tasks with a success among 1..k"),
    ]
    return f'<div class="cb-cards">{"".join(cards)}</div>'


def _curve_axes(ax, sel: Mapping, prefix: list, k: int) -> None:
    """selected@j from the selector's scores beside pass@j over planned prefixes, and selected@k itself."""
    from matplotlib.ticker import PercentFormatter

    top = k
    points = [p for p in prefix if isinstance(p, Mapping)]
    at = [(int(p["j"]), (p.get("pass@j") or {})) for p in points]
    at = [(j, r) for j, r in at if not is_null(r.get("value"))]
    if at:
        js = [j for j, _ in at]
        ax.fill_between(js, [r["ci_low"] for _, r in at], [r["ci_high"] for _, r in at], color=metric_color("pass@k"),
                        alpha=0.13, lw=0)
        ax.plot(js, [r["value"] for _, r in at], "-o", color=metric_color("pass@k"), ms=5,
                label="pass@j: any success in attempts 1..j")
    curve = [p for p in sel.get("curve") or [] if not is_null(p.get("value"))]
    if curve:
        top = max(top, max(int(p["j"]) for p in curve))
        ax.plot([p["j"] for p in curve], [p["value"] for p in curve], "-s", color=metric_color("selected@k"), ms=5,
                label=f"selected@j from scores ({plural(int(curve[0].get('n') or 0), 'task')})")
    picked = (sel.get("metrics") or {}).get("selected@k") or {}
    if not is_null(picked.get("value")):
        v = float(picked["value"])
        ax.errorbar([k], [v], yerr=[[v - float(picked["ci_low"])], [float(picked["ci_high"]) - v]], fmt="D",
                    color="#1f2328", capsize=5, ms=6,
                    label=f"selected@k, the picks ({int(picked.get('n') or 0):,} tasks)")
    if not (at or curve or not is_null(picked.get("value"))):
        ax.text(0.5, 0.5, "no task to draw", transform=ax.transAxes, ha="center", va="center", color="#57606a")
    ax.set_xlim(0.5, max(top, 1) + 0.5)
    ax.set_xticks(range(1, max(top, 1) + 1, max(1, -(-max(top, 1) // 8))))
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("j: candidates the selector chooses among")
    ax.set_title("What the selector buys, j = 1..k")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8.5)


def plot_selection(doc: Mapping) -> None:
    """Two figures from the document: pass@1, selected@k and pass@k on the same tasks with their 95%
    Wilson intervals; and selected@j from the scores beside pass@j (planned prefixes), with selected@k."""
    sel = doc.get("selection")
    if not isinstance(sel, Mapping):
        return
    k = int(sel.get("k") or doc.get("k") or 1)
    bars = [("pass@1", "pass@1\n(one attempt)", metric_color("pass@1")),
            ("selected@k", "selected@k\n(the pick)", metric_color("selected@k")),
            ("pass@k", "pass@k\n(an oracle)", metric_color("pass@k"))]
    prefix = list((doc.get("curves") or {}).get("planned_prefix") or [])
    with figure_style():
        fig = new_figure(4.8, 3.9)
        rates_axes(fig.subplots(), sel.get("metrics") or {}, k, bars=bars,
                   title=f"k = {k}, the same {plural(int(sel.get('entering') or 0), 'task')}; 95% Wilson intervals")
        rates = figure_html(fig, alt="pass@1, selected@k and pass@k on the same tasks, with 95% Wilson intervals")
        fig = new_figure(5.4, 3.9)
        _curve_axes(fig.subplots(), sel, prefix, k)
        curve = figure_html(fig, alt="selected@j from the selector's scores beside pass@j over planned prefixes")
    show_figures([rates, curve])


def _ratio(best: Any, single: Any) -> str:
    if is_null(best) or is_null(single) or not float(single):
        return NA
    return f"×{float(best) / float(single):,.2f}"


def cost_table(sel: Mapping) -> str:
    """The best-of-k system's cost, wall time and tokens per entering task beside attempt 1's alone."""
    cost, single = sel.get("cost") or {}, sel.get("single_attempt") or {}
    rows = []
    for label, key, base, fmt in (("cost (USD)", "cost", "cost", fmt_cost),
                                  ("wall time, in sequence", "wall_ms_sequential", "task_wall_ms", fmt_ms),
                                  ("wall time, in parallel", "wall_ms_parallel", "task_wall_ms", fmt_ms),
                                  ("total tokens", "total_tokens", "total_tokens", fmt_count)):
        b, s = cost.get(key) or {}, single.get(base) or {}
        rows.append([label, fmt(b.get("mean")), fmt(b.get("median")), fmt(s.get("mean")),
                     _ratio(b.get("mean"), s.get("mean")),
                     f"{int(b.get('n') or 0):,} of {int(b.get('n') or 0) + int(b.get('nulls') or 0):,}"])
    k = sel.get("k")
    return html_table(
        ["per task", f"best-of-{k}: mean", "median", "attempt 1 alone: mean", "ratio of means", "tasks with a value"],
        rows, numeric=tuple(range(1, 6)),
        caption=f"Cost and latency per task: all {k} attempts plus the selector (in sequence: the sum of the wall "
                "times; in parallel: the slowest attempt), beside a single attempt, on the same tasks")


def missed_table(doc: Mapping, *, explorer_id: str = EXPLORER_ID, max_rows: int = 200) -> str:
    """The entering tasks where some attempt succeeded but the selector's pick did not, linked to the explorer."""
    sel = doc.get("selection") or {}
    entries = [e for e in doc.get("per_task") or [] if isinstance(e, Mapping)]
    position = {e.get("task_id"): i for i, e in enumerate(entries)}
    missed = [e for e in sel.get("per_task") or [] if e.get("any_success") and not e.get("selected_success")]
    if not missed:
        n = int(sel.get("entering") or 0)
        return paragraph("The selector never missed: on every entering task with a success among attempts 1..k it "
                         "picked a successful attempt." if n else "No task enters, so nothing was missed.", "cb-note")
    rows = []
    for e in missed[:max_rows]:
        task = e.get("task_id")
        i = position.get(task)
        first = entries[i].get("first_success_attempt") if i is not None else None
        picked = e.get("selected")
        rows.append([task_link(i, task, explorer_id=explorer_id) if i is not None else Raw(html_escape(task)),
                     "abstained" if picked is None else f"attempt {picked}",
                     NA if first is None else f"attempt {first}"])
    table = html_table(["task", "the selector picked", "first success"], rows,
                       caption=f"Tasks where the selector missed a success ({len(missed):,}); open one in the explorer",
                       scroll=len(rows) > 25)
    more = paragraph(f"The first {max_rows:,} of {len(missed):,} are listed; metrics.json has them all.",
                     "cb-note") if len(missed) > max_rows else ""
    return table + more


def show_selection(doc: Mapping, *, explorer_id: str = EXPLORER_ID, max_rows: int = 200) -> None:
    """Display the best-of-k section of the report, or nothing when the run has no selection file.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``selection``, ``curves``, ``per_task``).
    explorer_id : str
        The element id of the page's task explorer: task links open their task there.
    max_rows : int, default 200
        Missed tasks listed (metrics.json lists every one).

    Notes
    -----
    Every number is the document's: the sentence of summary.md, the four rates, the two figures of
    :func:`plot_selection`, :func:`cost_table` and :func:`missed_table`.
    """
    sel = doc.get("selection")
    if not isinstance(sel, Mapping):
        return
    k, other = sel.get("k"), int(sel.get("other_candidates") or 0)
    intro = (f"A selector (a verifier, reward model or judge) was shown each task's attempts and picked one. On the "
             f"tasks that enter (k-eligible, shown exactly attempts 1..{k}), selected@k is how often its pick "
             "succeeded (an abstention is no success), between a single attempt (pass@1) and an oracle that takes "
             "any success (pass@k); the gap to pass@k is what a better verifier could still buy.")
    parts = ['<h2 id="best-of-k-with-a-selector">Best-of-k with a selector</h2>', paragraph(intro),
             paragraph(selection_sentence(doc, markdown=False) or "", "cb-verdict"), selection_cards(sel)]
    if other:
        parts.append(paragraph(f"{plural(other, 'k-eligible task')} shown other candidates than 1..{k} "
                               f"{'does' if other == 1 else 'do'} not enter.", "cb-note"))
    show_html("".join(parts))
    plot_selection(doc)
    notes = paragraph("The curve: for each task with scores whose candidates are all eligible, the expected success "
                      "of picking the top-scored of j candidates drawn at random (ties broken uniformly), averaged "
                      "over those tasks; at j = 1 it is a random candidate. A cost or time is missing for a task when "
                      "any attempt or the selector did not record it.", "cb-note")
    show_html(notes + cost_table(sel) + missed_table(doc, explorer_id=explorer_id, max_rows=max_rows))
