"""The comparison of two runs as files and displays: comparison.md, comparison.json, notebook views.

:func:`capbench_nb.metrics.comparison.compare_runs` computes the comparison
document; here it becomes ``comparison.md`` (:func:`comparison_markdown`),
the two files of :func:`write_comparison`, and the tables, summary and chart of
the comparison notebook (``notebooks/compare_runs.ipynb``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.metrics.comparison import compare_runs
from capbench_nb.outputs.html.escaping import md_escape  # one escaping rule for every Markdown output
from capbench_nb.outputs.html.formatting import judge_phrase, metric_label
from capbench_nb.outputs.html.images import figure_image  # for the comparison notebook

__all__ = [
    "COMPARISON_FILE",
    "COMPARISON_MARKDOWN",
    "compare_runs",
    "metric_label",
    "comparison_markdown",
    "write_comparison",
    "compatibility_summary",
    "warnings_frame",
    "paired_frame",
    "flips_frame",
    "telemetry_frame",
    "plot_differences",
    "figure_image",
]

COMPARISON_FILE = "comparison.json"
COMPARISON_MARKDOWN = "comparison.md"
# compare_runs is imported for the comparison notebook, which computes and renders through this module.


# =========================================================================== Markdown


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def _signed_pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:+.{digits}f} pp"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def comparison_markdown(doc: dict, *, max_flips: int = 50) -> str:
    """comparison.md: a concise Markdown rendering of the comparison document.

    Every run-supplied string (run ids, suites, models, task ids, warning
    messages) goes through :func:`md_escape`.  Flip lists name at most
    ``max_flips`` tasks each and say how many more there are.
    """
    a, b = doc["run_a"], doc["run_b"]

    def run_line(label: str, run: dict) -> str:
        suite = run["suite"] or {}
        config = run["config"] or {}
        judge = judge_phrase(run["judge"])
        lock = f" (lock {md_escape(suite['lock'])})" if suite.get("lock") else ""
        return (f"| {label} | {md_escape(run['run_id'])} | {md_escape(suite.get('name'))} "
                f"{md_escape(suite.get('version'))}{lock} | {md_escape(config.get('model'))} | "
                f"{judge} | {run['k']} | {run['tasks_planned']} |")

    lines = [
        f"# Comparison: {md_escape(b['run_id'])} (B) against {md_escape(a['run_id'])} (A)",
        "",
        "Differences are B minus A, on the tasks both runs have eligible (paired).",
        "",
        "| run | run_id | suite | model | judge | k | planned tasks |",
        "|---|---|---|---|---|---|---|",
        run_line("A", a),
        run_line("B", b),
        "",
        "## Compatibility",
        "",
    ]
    warnings = doc["compatibility"]["warnings"]
    if warnings:
        lines += [f"- **{md_escape(w['code'])}**: {md_escape(w['message'])}" for w in warnings]
    else:
        lines.append("No compatibility warning.")
    for item in doc["compatibility"]["unchecked"]:
        lines.append(f"- not checked, {md_escape(item['code'])}: {md_escape(item['reason'])}")
    k = doc["k"]
    lines += [
        "",
        f"## Paired analysis (k: A {k['a']}, B {k['b']}, compared at {k['paired']})",
        "",
        "| metric | pairs | both | A only | B only | neither | A | B | B - A | 95% interval | McNemar p |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    level = doc["provenance"]["options"]["confidence"]
    if level != 0.95:
        lines[-2] = lines[-2].replace("95% interval", f"{100 * level:g}% interval")
    for name, e in doc["paired"].items():
        label = metric_label(name, e["k"])
        interval = "n/a" if e["ci_low"] is None else f"{_signed_pct(e['ci_low'])} to {_signed_pct(e['ci_high'])}"
        lines.append(f"| {md_escape(label)} | {e['n_pairs']} | {e['both']} | {e['a_only']} | {e['b_only']} | "
                     f"{e['neither']} | {_pct(e['a_value'])} | {_pct(e['b_value'])} | {_signed_pct(e['difference'])} | "
                     f"{interval} | {_p(e['mcnemar_p'])} |")
    lines += ["", f"Interval: {doc['methods']['interval']}. Test: {doc['methods']['test']}.", "", "## Flips", ""]
    for name, f in doc["flips"].items():
        for side, text in (("a_only", "A succeeded, B failed"), ("b_only", "B succeeded, A failed")):
            ids = f[side]
            shown = ", ".join(md_escape(t) for t in ids[:max_flips])
            more = f" and {len(ids) - max_flips} more" if len(ids) > max_flips else ""
            lines.append(f"- {metric_label(name, doc['paired'][name]['k'])}, {text} ({len(ids)}): {shown + more if ids else 'none'}")
    lines += [
        "",
        "## Telemetry (paired eligible attempts)",
        "",
        "| field | pairs | tasks | median A | median B | B - A | 95% bootstrap interval |",
        "|---|---|---|---|---|---|---|",
    ]
    if level != 0.95:
        lines[-2] = lines[-2].replace("95% bootstrap", f"{100 * level:g}% bootstrap")
    for field, t in doc["telemetry"].items():
        interval = "n/a" if t["ci_low"] is None else f"{t['ci_low']:+,.0f} to {t['ci_high']:+,.0f}"
        diff = "n/a" if t["difference"] is None else f"{t['difference']:+,.0f}"
        lines.append(f"| {field} | {t['n_pairs']} | {t['n_tasks']} | {_num(t['a_median'])} | {_num(t['b_median'])} | "
                     f"{diff} | {interval} |")
    lines += ["", f"Telemetry: {doc['methods']['telemetry']}; n_boot = {doc['provenance']['options']['n_boot']}, "
              f"seed = {doc['provenance']['options']['seed']}.", ""]
    return "\n".join(lines)


def write_comparison(doc: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``comparison.json`` (canonical JSON, :func:`~capbench_nb.io.atomic.dumps`) and ``comparison.md``.

    Both atomically (:func:`~capbench_nb.io.atomic.write_atomic`); ``out_dir`` is
    created when missing.  Returns the two paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = write_atomic(out / COMPARISON_FILE, dumps(doc))
    md_path = write_atomic(out / COMPARISON_MARKDOWN, comparison_markdown(doc))
    return json_path, md_path


# =========================================================================== notebook displays


def compatibility_summary(doc: dict, *, strict: bool = False) -> str:
    """One Markdown paragraph on the compatibility of the two runs (for the notebook).

    With ``strict``, warnings are called failures: ``capbench-nb compare
    --strict`` exits non-zero on any of them.
    """
    warnings = doc["compatibility"]["warnings"]
    unchecked = doc["compatibility"]["unchecked"]
    if not warnings:
        text = "**No compatibility warning**: suite, task set, k, judge, model, configuration, toolkit and " \
               "evaluation contract agree as far as the manifests and artifacts show."
    else:
        codes = ", ".join(f"`{md_escape(w['code'])}`" for w in warnings)
        text = f"**{len(warnings)} compatibility warning{'s' if len(warnings) != 1 else ''}** ({codes}): read the " \
               "paired numbers below with them in mind."
        if strict:
            text += " **Strict mode**: these warnings make the comparison fail (non-zero exit)."
    if unchecked:
        text += " Not checked: " + "; ".join(f"{md_escape(u['code'])} ({md_escape(u['reason'])})" for u in unchecked) + "."
    return text


def warnings_frame(doc: dict) -> pd.DataFrame:
    """The compatibility warnings (``code``, ``message``) and unchecked items (code ``not checked: ...``)."""
    rows = [{"code": w["code"], "message": w["message"]} for w in doc["compatibility"]["warnings"]]
    rows += [{"code": f"not checked: {u['code']}", "message": u["reason"]} for u in doc["compatibility"]["unchecked"]]
    return pd.DataFrame(rows, columns=["code", "message"])


def paired_frame(doc: dict) -> pd.DataFrame:
    """One row per paired metric: the 2x2 table, both rates, B minus A, its interval and McNemar's p."""
    columns = ["metric", "k", "n_pairs", "both", "a_only", "b_only", "neither", "a_value", "b_value",
               "difference", "ci_low", "ci_high", "mcnemar_p"]
    rows = [{"metric": name, **{c: e[c] for c in columns[1:]}} for name, e in doc["paired"].items()]
    frame = pd.DataFrame(rows, columns=columns)
    for c in ("a_value", "b_value", "difference", "ci_low", "ci_high", "mcnemar_p"):
        frame[c] = pd.array([None if v is None else float(v) for v in frame[c]], dtype="Float64")
    return frame


def flips_frame(doc: dict) -> pd.DataFrame:
    """One row per flipped task and metric: ``metric``, ``task_id``, ``flip`` (``A only`` or ``B only``)."""
    rows = []
    for name, f in doc["flips"].items():
        rows += [{"metric": name, "task_id": t, "flip": "A only"} for t in f["a_only"]]
        rows += [{"metric": name, "task_id": t, "flip": "B only"} for t in f["b_only"]]
    return pd.DataFrame(rows, columns=["metric", "task_id", "flip"])


def telemetry_frame(doc: dict) -> pd.DataFrame:
    """One row per telemetry field: pairs, tasks, both medians, B minus A and its bootstrap interval."""
    columns = ["field", "n_pairs", "n_tasks", "a_median", "b_median", "difference", "ci_low", "ci_high"]
    rows = [{"field": name, **{c: t[c] for c in columns[1:]}} for name, t in doc["telemetry"].items()]
    frame = pd.DataFrame(rows, columns=columns)
    for c in columns[3:]:
        frame[c] = pd.array([None if v is None else float(v) for v in frame[c]], dtype="Float64")
    return frame


def plot_differences(doc: dict, ax: Any = None) -> Any:
    """Dot-and-whisker chart of B minus A per paired metric with its interval; returns the matplotlib Figure.

    Built on :class:`matplotlib.figure.Figure` (no pyplot state) unless ``ax`` is given.
    """
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=(6.0, 2.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    names = list(doc["paired"])
    for y, name in enumerate(names):
        e = doc["paired"][name]
        label = metric_label(name, e["k"])
        names[y] = f"{label} (n={e['n_pairs']})"
        if e["difference"] is None:
            continue
        ax.errorbar([100 * e["difference"]], [y], xerr=[[100 * (e["difference"] - e["ci_low"])],
                                                          [100 * (e["ci_high"] - e["difference"])]],
                    fmt="o", color="#1f4e79", capsize=4)
    ax.axvline(0.0, color="#888888", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.invert_yaxis()
    level = doc["provenance"]["options"]["confidence"]
    ax.set_xlabel(f"B minus A (percentage points), {100 * level:g}% Newcombe interval")
    fig.tight_layout()
    return fig
