"""The report's figures: headline rates and curves, telemetry distributions, slices, suite health.

Figures are built on :class:`matplotlib.figure.Figure` objects (no pyplot
state, no backend needed) and displayed as inline PNG images rendered here
without metadata, so the same run gives the same image bytes.  They are drawn
small (about 5 inches wide) with large type and laid out in a wrapping row
(``cb-figs``), so text stays readable when the page is 420 px wide; the rates
come from the metrics document, never recomputed here.
"""

from __future__ import annotations

import base64
import io
import math
import warnings
from collections.abc import Mapping

import numpy as np

from capbench_nb.format import TELEMETRY_MS_FIELDS
from capbench_nb.metrics.registry import headline_rates
from capbench_nb.outputs.html.escaping import html_escape, plain_label
from capbench_nb.outputs.html.formatting import fmt_pct, is_null, telemetry_formatter
from capbench_nb.outputs.html.images import NARROW_WIDTH, narrow_picture
from capbench_nb.outputs.html.tables import paragraph, show_html

__all__ = [
    "plot_headline",
    "plot_telemetry",
    "plot_slices",
    "plot_health",
    "new_figure",
    "figure_html",
    "figure_style",
    "show_figures",
    "rates_axes",
    "METRIC_COLORS",
    "metric_color",
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
    "font.size": 11,
    "axes.titlesize": 11.5,
    "axes.labelsize": 11,
    "legend.fontsize": 10,
    "hatch.linewidth": 0.8,
}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _show_figure(fig, alt: str) -> None:
    """Display :func:`_figure_html` of ``fig``."""
    show_html(_figure_html(fig, alt))


def _show_figures(html: list[str]) -> None:
    """Display several figures in one wrapping row (side by side when the page is wide)."""
    show_html('<div class="cb-figs">' + "".join(html) + "</div>")


def _figure_html(fig, alt: str) -> str:
    """Render ``fig`` as PNG without metadata (same data, same bytes): an ``<img>`` element.

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
    return (
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


#: The colour of each metric in every figure; a metric not listed here gets the grey.
METRIC_COLORS = {"pass@1": "#3b75af", "pass@k": "#2e9e5b", "pass^k": "#d1495b", "selected@k": "#8250df"}


def metric_color(name: str) -> str:
    """The figure colour of a metric (:data:`METRIC_COLORS`, grey for one not listed)."""
    return METRIC_COLORS.get(name, "#57606a")


def _tick_label(label: str) -> str:
    """A registry label as an axis tick: its parenthesis on a second line (``pass@k\n(k = 3)``)."""
    return label.replace(" (", "\n(", 1)


def _rates_axes(ax, metrics: Mapping, k: int, *, bars: list | None = None,
                title: str = "Headline rates, 95% Wilson intervals") -> None:
    """Rates as bars with their Wilson intervals: pass@1, pass@k and pass^k unless ``bars`` gives
    ``(key, label, colour)`` triples of other rates of ``metrics``."""
    from matplotlib.ticker import PercentFormatter

    keys = [m.name for m in headline_rates()]
    labels = [_tick_label(m.display(k)) for m in headline_rates()]
    colors = [metric_color(key) for key in keys]
    if bars is not None:
        keys, labels, colors = (list(column) for column in zip(*bars))
    for x, (key, color) in enumerate(zip(keys, colors)):
        m = metrics.get(key) or {}
        n = int(m.get("n") or 0)
        if not n or is_null(m.get("value")):
            ax.text(x, 0.04, "n/a\n(no eligible\ntasks)", ha="center", va="bottom", color="#57606a")
            continue
        v, lo, hi = float(m["value"]), m.get("ci_low"), m.get("ci_high")
        ax.bar(x, v, width=0.6, color=color, alpha=0.85)
        top = v
        if not is_null(lo) and not is_null(hi):
            ax.errorbar(x, v, yerr=[[v - float(lo)], [float(hi) - v]], fmt="none", ecolor="#1f2328", capsize=6, lw=1.2)
            top = float(hi)
        ax.text(x, min(top + 0.03, 1.08), f"{fmt_pct(v)}\n{m.get('successes')}/{n}", ha="center", va="bottom")
    ax.set_xticks(range(len(keys)), labels)
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.set_ylim(0, 1.25)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylabel("share of tasks")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)


# For the figures of other report sections (capbench_nb.outputs.report.selection): the same size, style,
# rate bars and metadata-free PNG rendering, under public names.
new_figure, figure_html, figure_style, show_figures, rates_axes = _figure, _figure_html, _rc, _show_figures, _rates_axes


def _series(points: list, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    def get(p, field):
        v = (p.get(key) or {}).get(field)
        return np.nan if is_null(v) else float(v)

    val = np.array([get(p, "value") for p in points], dtype=float)
    lo = np.array([get(p, "ci_low") for p in points], dtype=float)
    hi = np.array([get(p, "ci_high") for p in points], dtype=float)
    return val, lo, hi, [int((p.get(key) or {}).get("n") or 0) for p in points]


def _curves_axes(ax, points: list, k: int) -> None:
    """pass@j and pass^j over planned prefixes j = 1..k, with interval bands."""
    from matplotlib.ticker import PercentFormatter

    js = np.array([int(p.get("j")) for p in points], dtype=int)
    any_data = False
    for key, name, color, marker in (("pass@j", "pass@j (capability)", "#2e9e5b", "o"),
                                     ("pass^j", "pass^j (reliability)", "#d1495b", "s")):
        val, lo, hi, _ = _series(points, key)
        if not len(val) or np.all(np.isnan(val)):
            continue
        any_data = True
        ax.fill_between(js, lo, hi, color=color, alpha=0.15, lw=0)
        yerr = [np.clip(np.nan_to_num(val - lo), 0, None), np.clip(np.nan_to_num(hi - val), 0, None)]
        ax.errorbar(js, val, yerr=yerr, fmt=f"-{marker}", color=color,
                    ecolor=color, elinewidth=0.8, capsize=3, ms=5, label=name)
    if not any_data:
        ax.text(0.5, 0.5, "no j-eligible tasks for any j", transform=ax.transAxes, ha="center", va="center",
                color="#57606a")
    counts = _series(points, "pass@j")[3]
    step = max(1, math.ceil(max(k, 1) / 6))
    ticks = list(range(0, len(js), step))
    ax.set_xticks([js[i] for i in ticks], [f"{js[i]}\nn={counts[i]}" for i in ticks])
    ax.set_xlim(0.5, max(k, 1) + 0.5)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("j: attempts 1..j (n = j-eligible tasks)")
    ax.set_title("Capability vs reliability, j = 1..k")
    ax.grid(alpha=0.3)
    if any_data:
        ax.legend(loc="lower left")


def plot_headline(doc: Mapping, run=None) -> None:
    """Plot the headline rates and the capability/reliability curves over planned prefixes.

    Two figures side by side (stacked on a narrow page), both from the metrics document: the
    headline rates pass@1, pass@k and pass^k with their 95% Wilson intervals (``metrics``), and
    pass@j and pass^j for j = 1..k from planned prefixes with interval bands
    (``curves.planned_prefix``), so the gap between capability and reliability is visible.

    Parameters
    ----------
    doc : dict
        The metrics.json document.
    run : Run, optional
        Not used (kept so notebooks calling ``plot_headline(doc, run)`` keep working).
    """
    k = int(doc.get("k") or 1)
    points = list((doc.get("curves") or {}).get("planned_prefix") or [])
    with _rc():
        fig = _figure(4.6, 3.9)
        _rates_axes(fig.subplots(), doc.get("metrics") or {}, k)
        rates = _figure_html(fig, alt="Headline rates pass@1, pass@k and pass^k with 95% Wilson intervals")
        fig = _figure(5.4, 3.9)
        _curves_axes(fig.subplots(), points, k)
        curves = _figure_html(fig, alt="pass@j and pass^j for j = 1..k over planned prefixes")
    _show_figures([rates, curves])


_PLOTTED_TELEMETRY = (
    ("task_wall_ms", "task wall time"),
    ("total_tokens", "total tokens"),
    ("device_execution_ms", "device execution time"),
    ("time_to_first_token_ms", "time to first token"),
)


def _telemetry_axes(ax, name: str, label: str, vals: np.ndarray, nulls: int, agg: Mapping) -> None:
    from matplotlib.ticker import FuncFormatter

    ms = name in TELEMETRY_MS_FIELDS
    scale = 1000.0 if ms and np.median(vals) >= 1000 else 1.0
    unit = ("seconds" if scale > 1 else "milliseconds") if ms else ("tokens" if "tokens" in name else "count")
    shown = vals / scale
    bins = int(min(30, max(5, math.ceil(math.sqrt(len(shown))) + 2)))
    ax.hist(shown, bins=bins, color="#3b75af", alpha=0.85, edgecolor="white")
    fmt = telemetry_formatter(name)
    for stat, style in (("median", "-"), ("p90", "--")):
        value = agg.get(stat)
        if not is_null(value):  # the document's statistic, not recomputed
            ax.axvline(float(value) / scale, color="#1f2328", lw=1.2, ls=style, label=f"{stat} {fmt(value)}")
    ax.set_title(f"{label}\nn = {len(vals):,}, {nulls:,} without a source")
    ax.set_xlabel(unit)
    if unit in ("tokens", "count"):
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.0f}"))
    ax.locator_params(axis="x", nbins=5)
    ax.set_ylabel("attempts")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", frameon=False)
    ax.grid(axis="y", alpha=0.3)


def plot_telemetry(run, doc: Mapping | None = None) -> None:
    """Plot distributions of the main telemetry fields over eligible attempts.

    Parameters
    ----------
    run : Run
        The loaded run (the values of each histogram).
    doc : dict, optional
        The metrics.json document: its median and p90 of each field are marked (solid and
        dashed); without it no statistic is drawn.

    Notes
    -----
    One small histogram per field (``task_wall_ms``, ``total_tokens``, ``device_execution_ms``,
    ``time_to_first_token_ms``) over eligible counted attempts, in a wrapping row.  A field
    without any value is not plotted and is named in a note instead.
    """
    a = run.attempts
    eligible = a[a["agent_eligible"].to_numpy(dtype=bool, na_value=False)]
    tele = (doc or {}).get("telemetry") or {}
    data, skipped = [], []
    for name, label in _PLOTTED_TELEMETRY:
        col = eligible[name]
        vals = col.dropna().to_numpy(dtype="float64")
        if len(vals):
            data.append((name, label, vals, int(col.isna().sum())))
        else:
            skipped.append(name)
    if not data:
        show_html(paragraph("No telemetry to plot: no eligible attempt has a value for "
                            + ", ".join(n for n, _ in _PLOTTED_TELEMETRY) + ".", "cb-note"))
        return
    images = []
    with _rc():
        for name, label, vals, nulls in data:
            fig = _figure(4.8, 3.1)
            _telemetry_axes(fig.subplots(), name, f"{label} ({name})", vals, nulls, tele.get(name) or {})
            images.append(_figure_html(fig, alt=f"Distribution of {name} over eligible attempts"))
    _show_figures(images)
    if skipped:
        show_html(paragraph("Not plotted, no value in any eligible attempt: " + ", ".join(skipped) + ".", "cb-note"))


def plot_slices(dim: str, entries: list, k: int) -> None:
    """One figure per slice dimension: pass@1, pass@k and pass^k with their intervals, per slice value."""
    from matplotlib.ticker import PercentFormatter

    shown = entries[:40]
    if not shown:
        return
    with _rc():
        fig = _figure(6.4, 1.2 + 0.36 * len(shown))
        ax = fig.subplots()
        rates = headline_rates()
        step = 0.22 if len(rates) <= 3 else 0.66 / len(rates)
        keys = [(m.name, m.display(k), metric_color(m.name), step * (i - (len(rates) - 1) / 2))
                for i, m in enumerate(rates)]
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
        ax.set_yticklabels([plain_label(e.get("value") if e.get("value") is not None else "(no value)", 24)
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


def _health_points(doc: Mapping) -> tuple[dict[tuple[float, float, bool], int], int]:
    """Per task with counted attempts: (ineligible share, success share, quarantine candidate), and how many
    tasks share each point; and the number of tasks without a counted attempt.  From the document alone."""
    health = doc.get("health") if isinstance(doc.get("health"), Mapping) else {}
    successes = {e.get("task_id"): e.get("successes") for e in doc.get("per_task") or [] if isinstance(e, Mapping)}
    points: dict[tuple[float, float, bool], int] = {}
    empty = 0
    for e in health.get("per_task") or []:
        counted = int(e.get("counted") or 0)
        if not counted:
            empty += 1
            continue
        ineligible = sum(int(v or 0) for v in (e.get("ineligible") or {}).values())
        key = (ineligible / counted, int(successes.get(e.get("task_id")) or 0) / counted, bool(e.get("quarantine")))
        points[key] = points.get(key, 0) + 1
    return points, empty


def plot_health(doc: Mapping) -> None:
    """Per task, its success share against its ineligible share, both over its counted attempts.

    Read from the document (``per_task`` successes, ``health.per_task``).  Tasks at the same point
    are one marker whose area grows with their number (written beside it); quarantine candidates
    are red diamonds; on the dashed diagonal every eligible attempt of the task succeeded, and the
    distance below it is the share of eligible failures.  On a narrow page it is drawn narrow.
    """
    points, empty = _health_points(doc)
    if not points:
        show_html(paragraph("No task has a counted attempt: nothing to plot.", "cb-note"))
        return
    threshold = fmt_pct((doc.get("health") or {}).get("quarantine_threshold")).replace(".0%", "%")
    alt = ("Per task, the share of counted attempts that succeeded against the share that were not agent-eligible; "
           "quarantine candidates marked")
    with _rc():
        fig, narrow = _figure(5.6, 5.2), _figure(NARROW_WIDTH, 4.9)
        _draw_health(fig, points, empty, threshold, narrow=False)
        _draw_health(narrow, points, empty, threshold, narrow=True)
        show_html(narrow_picture(_figure_html(fig, alt=alt), narrow))


def _draw_health(fig, points: dict, empty: int, threshold: str, *, narrow: bool) -> None:
    """The scatter of :func:`plot_health` on ``fig``; narrow: shorter labels, a two-line title."""
    from matplotlib.ticker import PercentFormatter

    ax = fig.subplots()
    ax.plot([0, 1], [1, 0], ls="--", color="#8c959f", lw=1, label="every eligible attempt succeeded")
    kinds = ((False, "#3b75af", "o", "task"),
             (True, "#d1495b", "D", f"quarantine candidate ({'env. + eval.' if narrow else 'environment + evaluation'}"
                                    f" ≥ {threshold})"))
    for flag, color, marker, label in kinds:
        shown = [(x, y, n) for (x, y, q), n in points.items() if q is flag]
        if shown:
            xs, ys, ns = zip(*shown)
            scale = 0.6 if narrow else 1.0  # areas in points²: the same share of a smaller plot
            ax.scatter(xs, ys, s=[scale * min(28 + 22 * (n - 1), 420) for n in ns], c=color, marker=marker,
                       alpha=0.75, edgecolors="white", linewidths=0.8, label=label, zorder=3)
    for (x, y, _), n in sorted(points.items(), key=lambda item: -item[1])[:30]:
        if n > 1:
            ax.annotate(f"{n:,}", (x, y), xytext=(6, 5), textcoords="offset points", fontsize=9, color="#1f2328")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("ineligible share of counted attempts")
    ax.set_ylabel("success share of counted attempts")
    title = "Per task: successes against\nineligible attempts" if narrow else "Per task: successes against ineligible attempts"
    ax.set_title(title + (f"\n({empty:,} task{'s' if empty != 1 else ''} without attempts not shown)" if empty else ""))
    ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", fontsize=9, frameon=False)
