"""The report's figures: headline rates, the attempt grid, telemetry distributions, slices.

Figures are built on :class:`matplotlib.figure.Figure` objects (no pyplot
state, no backend needed) and displayed as inline PNG images rendered here
without metadata, so the same run gives the same image bytes.
"""

from __future__ import annotations

import base64
import io
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.format import CLASS_KEYS, TELEMETRY_MS_FIELDS
from capbench_nb.metrics.rates import pass_at_k, pass_hat_k
from capbench_nb.outputs.escaping import html_escape, plain_label
from capbench_nb.outputs.formatting import fmt_pct, is_null, telemetry_formatter
from capbench_nb.outputs.tables import paragraph, show_html

__all__ = [
    "plot_headline",
    "outcome_kind",
    "plot_attempt_grid",
    "plot_telemetry",
    "plot_slices",
]

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
    show_html(
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


# long function: moved as it was; the report's outputs are rebuilt by issue #13
def plot_headline(doc: Mapping, run) -> None:
    """Plot the headline rates and the capability/reliability curves over planned prefixes.

    Parameters
    ----------
    doc : dict
        The metrics.json document (left panel: pass@1, pass@k, pass^k with
        95% Wilson intervals as error bars).
    run : Run
        The loaded run (right panel: pass@j and pass^j for j = 1..k from
        planned prefixes, :func:`capbench_nb.metrics.rates.pass_at_k` and
        :func:`capbench_nb.metrics.rates.pass_hat_k`, with interval bands), so the
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
            if not n or is_null(m.get("value")):
                ax1.text(x, 0.04, "n/a\n(no eligible\ntasks)", ha="center", va="bottom", color="#57606a")
                continue
            v, lo, hi = float(m["value"]), m.get("ci_low"), m.get("ci_high")
            ax1.bar(x, v, width=0.6, color=color, alpha=0.85)
            if not is_null(lo) and not is_null(hi):
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


def outcome_kind(success: Any, fclass: Any) -> str:
    """The outcome of an attempt as the figures colour it: ``success``, its failure class, or ``unknown``."""
    if success is True:
        return "success"
    if fclass is None or fclass is pd.NA or (isinstance(fclass, float) and math.isnan(fclass)):
        return "unknown"
    fc = str(fclass)
    return fc if fc in _COLORS else "unknown"


# long function: moved as it was; the report's outputs are rebuilt by issue #13
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
            cells[(i, int(a))] = (outcome_kind(s is True, f), e is not True, an == "above_planned_repeats")
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
        ax.set_yticks(range(len(shown)), [plain_label(t, 40) for t in shown])
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
        note = paragraph(
            "Not plotted, no value in any eligible attempt: " + ", ".join(skipped) + ".",
            "cb-note",
        )
    if not data:
        show_html(
            paragraph(
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
            ax.axvline(med, color="#1f2328", lw=1.2, label=f"median {(telemetry_formatter(name))(np.median(vals))}")
            ax.axvline(p90, color="#1f2328", lw=1.0, ls="--", label=f"p90 {(telemetry_formatter(name))(np.percentile(vals, 90))}")
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
        show_html(note)


def plot_slices(dim: str, entries: list, k: int) -> None:
    """One figure per slice dimension: pass@1, pass@k and pass^k with their intervals, per slice value."""
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
                if is_null(m.get("value")):
                    continue
                ys.append(i + offset)
                xs.append(float(m["value"]))
                lo.append(float(m["value"]) - float(m["ci_low"]))
                hi.append(float(m["ci_high"]) - float(m["value"]))
            if xs:
                ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", color=color, ms=4, capsize=3, lw=1, label=label)
        ax.set_yticks(range(len(shown)))
        ax.set_yticklabels([plain_label(e.get("value") if e.get("value") is not None else "(no value)")
                            + (" (small)" if e.get("small") else "") for e in shown])
        ax.invert_yaxis()
        ax.set_xlim(-0.02, 1.02)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("rate with 95% Wilson interval")
        title = f"By {plain_label(dim)}"
        if len(entries) > len(shown):
            title += f" (first {len(shown)} of {len(entries)} values)"
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=8)
        _show_figure(fig, alt=f"pass@1, pass@k and pass^k with intervals for each value of {dim}")
