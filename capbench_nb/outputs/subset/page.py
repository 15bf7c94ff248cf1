"""The cells of subset.html: the header, the validation, the leave-one-run-out figure, the chosen tasks.

Every function reads the subset document (:func:`capbench_nb.metrics.subset.select_subset`); none
recomputes a number.  Run-supplied strings (task ids, run ids, strata) reach HTML through
:func:`~capbench_nb.outputs.html.escaping.html_escape` and figures through
:func:`~capbench_nb.outputs.html.escaping.plain_label`.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.outputs.html.assets import PAGE_CSS
from capbench_nb.outputs.html.images import NARROW_MEDIA, NARROW_WIDTH, figure_image, narrow_picture
from capbench_nb.outputs.html.escaping import html_escape, plain_label
from capbench_nb.outputs.html.formatting import fmt_interval, fmt_pct

__all__ = ["style_html", "header_html", "validation_html", "loo_figure", "tasks_html"]

_CSS = """
.cbs table { border-collapse: collapse; margin: 0.5em 0; }
.cbs th, .cbs td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
.cbs td.id, .cbs th.id { text-align: left; font-family: monospace; }
.cbs table.cbs-facts th { white-space: nowrap; vertical-align: top; }
.cbs .cbs-scroll { overflow-x: auto; max-width: 100%; }
.cbs .cbs-cue { display: none; color: #555; font-size: 12.5px; margin: 0.2em 0; }
""" + f"@media {NARROW_MEDIA} {{ .cbs .cbs-cue {{ display: block; }} }}\n"


def style_html() -> str:
    """The page's style sheet: the comparison's rules and a few of its own."""
    return f"<style>{PAGE_CSS}{_CSS}</style>"


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def header_html(doc: dict) -> str:
    """What was chosen: the size, the suite, the method, the strata counts."""
    suite = doc["suite"] or {}
    facts = [("suite", f"{suite.get('name')} {suite.get('version')}"), ("chosen", f"{doc['size']} of {doc['full_tasks']} "
             "common tasks"), ("method", f"{doc['method']['name']} (seed {doc['method']['seed']}, k = {doc['method']['k']})"),
             ("input runs", ", ".join(e["run_id"] for e in doc["from_runs"]))]
    for dim, counts in doc["strata"].items():
        facts.append((f"strata by {dim}", ", ".join(f"{v} {n}" for v, n in counts.items())))
    rows = "".join(f'<tr><th class="id">{html_escape(k)}</th><td class="id">{html_escape(v, max_len=2000)}</td></tr>'
                   for k, v in facts)
    return f'<div class="cbs cbc"><h1>Representative subset</h1><table class="cbs-facts">{rows}</table></div>'


def validation_html(doc: dict) -> str:
    """Kendall tau_b and MAE of the method (leave one run out) and of the random-subset baseline, then each run."""
    loo, rnd = doc["validation"]["leave_one_run_out"], doc["validation"]["random_subsets"]
    names = [e["run_id"] for e in doc["from_runs"]]
    head = ('<table><tr><th class="id">estimator</th><th>Kendall tau_b</th><th>mean absolute error</th></tr>'
            f'<tr><td class="id">{html_escape(doc["method"]["name"])} (leave one run out)</td>'
            f'<td>{_num(loo["kendall_tau_b"])}</td><td>{_num(loo["mae"])}</td></tr>'
            f'<tr><td class="id">plain mean, median of {rnd["count"]} random {doc["size"]}-task subsets</td>'
            f'<td>{_num(rnd["kendall_tau_b"])}</td><td>{_num(rnd["mae"])}</td></tr></table>')
    rows = "".join(f'<tr><td class="id">{html_escape(names[e["run"]])}</td><td>{fmt_pct(e["estimate"])}</td>'
                   f'<td>{fmt_interval(e["ci_low"], e["ci_high"])}</td><td>{fmt_pct(e["full_suite"])}</td></tr>'
                   for e in loo["runs"])
    return (f'<div class="cbs">{head}<table><tr><th class="id">left-out run</th><th>estimate</th>'
            f'<th>95% interval</th><th>full-suite pass@1</th></tr>{rows}</table></div>')


def loo_figure(doc: dict) -> Any:
    """The leave-one-run-out estimates (with their 95% intervals) against the full-suite pass@1; on a narrow page
    the same figure drawn narrow (:func:`~capbench_nb.outputs.html.images.narrow_picture`)."""
    from IPython.display import HTML
    from matplotlib.figure import Figure

    fig, narrow = Figure(figsize=(5.5, 5), layout="constrained"), Figure(figsize=(NARROW_WIDTH, 3.6), layout="constrained")
    for figure in (fig, narrow):
        _draw_loo(figure, doc)
    image = figure_image(fig, alt="leave-one-run-out estimates with 95% intervals against the full-suite pass@1")
    return HTML(narrow_picture(image.data, narrow))


def _draw_loo(fig, doc: dict) -> None:
    runs = [e for e in doc["validation"]["leave_one_run_out"]["runs"] if e["full_suite"] is not None]
    names = [e["run_id"] for e in doc["from_runs"]]
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#999", lw=1, ls="--", label="estimate = full suite")
    for e in runs:
        ax.errorbar(e["full_suite"], e["estimate"], yerr=[[e["estimate"] - e["ci_low"]], [e["ci_high"] - e["estimate"]]],
                    fmt="o", color="#1f77b4", capsize=3)
        ax.annotate(plain_label(names[e["run"]], 24), (e["full_suite"], e["estimate"]), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("full-suite pass@1 (common tasks)")
    ax.set_ylabel(f"estimate from the {doc['size']} chosen tasks")
    ax.legend(loc="upper left", fontsize=8)


def tasks_html(doc: dict) -> str:
    """The chosen tasks in plan order: stratum, difficulty and the pass rate in each input run."""
    names = [e["run_id"] for e in doc["from_runs"]]
    head = ('<tr><th class="id">task</th><th class="id">stratum</th><th>difficulty</th>'
            + "".join(f"<th>{html_escape(n, max_len=40)}</th>" for n in names) + "</tr>")
    rows = "".join(f'<tr><td class="id">{html_escape(e["task_id"])}</td><td class="id">{html_escape(e["stratum"])}</td>'
                   f'<td>{e["difficulty"]:.2f}</td>' + "".join(f"<td>{fmt_pct(p)}</td>" for p in e["pass_rate"]) + "</tr>"
                   for e in doc["chosen"])
    cue = '<p class="cbs-cue">Scroll the table sideways: one column per input run →</p>'
    return f'<div class="cbs">{cue}<div class="cbs-scroll"><table class="cbs-tasks">{head}{rows}</table></div></div>'
