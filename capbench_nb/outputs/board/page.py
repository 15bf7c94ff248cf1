"""board.html's sections: the runs and the common ground, the board table, the pairwise matrix, cost and curves.

Everything here reads the board document (:func:`~capbench_nb.metrics.board.board`, the board.json
dict); only the attempt outcome codes shown when a run or a pair is opened come from the loaded
runs.  No metric is recomputed: values, intervals, ranks, groups, differences, p-values, the
frontier and the per-task outcomes (``runs[].outcomes``) are the document's.

Safety, as in comparison.html (:mod:`capbench_nb.outputs.comparison.page`): every run-supplied string
is escaped (:func:`~capbench_nb.outputs.html.escaping.html_escape`) or travels in an inert JSON element
(``<script type="application/json">``, :func:`~capbench_nb.outputs.html.assets.json_island`) that the one small script of the page
(``page_assets/board.js``, after the sortable table it shares with comparison.html,
``page_assets/tables.js``) reads with ``JSON.parse(textContent)`` and inserts with ``textContent``;
figures label runs by their position (``#3``), never by a run-supplied string.  Nothing is loaded
from the network.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from capbench_nb.metrics.board import SELECTED
from capbench_nb.outputs.board.files import board_metrics, board_order, metric_labels, suite_locks, suite_text
from capbench_nb.outputs.html.assets import PAGE_CSS, island_id, island_json, json_island, page_asset, with_tables
from capbench_nb.outputs.html.escaping import html_escape, plain_label
from capbench_nb.outputs.html.formatting import fmt_cost, fmt_interval, fmt_p, fmt_pct, fmt_pp
from capbench_nb.outputs.html.images import NARROW_WIDTH, figure_image, narrow_picture
from capbench_nb.records.views import task_outcome_codes

__all__ = [
    "MAX_ROWS",
    "CODES_HELP",
    "style_html",
    "header_html",
    "attempt_codes",
    "selection_picks",
    "runs_data",
    "run_table",
    "pairs_data",
    "runs_html",
    "pairs_html",
    "frontier_html",
    "curves_html",
    "left_out_html",
]

#: Tasks a run's or a pair's task list shows at once (board.json has them all).
MAX_ROWS = 2000
CODES_HELP = ("Attempts, in order: S success, A agent failure, E environment, V evaluation, K skipped, "
              "U unknown (eligible), X unknown (not eligible), . no record.")
_SELECTED_HELP = ("the selector's pick succeeded, on the common tasks that enter the run's selection (spec "
                  "section 9: attempts 1..k eligible, candidates exactly 1..k); n/a without selection.jsonl or "
                  "when the run's k is not the common k")
_OUTCOME_WORDS = {"1": "success", "0": "failure", ".": "not counted"}
_GROUP_COLORS = ("#1f4e79", "#b35c00", "#2e7d32", "#7b1fa2", "#c62828", "#00838f", "#6d4c41", "#5c6bc0",
                 "#9e9d24", "#ad1457")


def style_html() -> str:
    """The board's style sheet: the comparison's ``.cbc`` rules and the board's own (``page_assets/board.css``)."""
    return f"<style>{PAGE_CSS}{page_asset('board.css')}</style>"


def _name(doc: dict, i: int, limit: int = 60) -> str:
    """``#3 run-id``: the run's input position (1-based) and its id, one visible line (not escaped)."""
    return f"#{i + 1} {plain_label(doc['runs'][i]['run_id'], limit)}"


def _suites(doc: dict) -> list[str]:
    return sorted({suite_text(r["suite"]) for r in doc["runs"]})


# =========================================================================== the first screen


def _lead(doc: dict) -> str:
    labels = metric_labels(doc)
    label = labels[doc["metric"]]
    if not doc["groups"]:
        return ""
    first = doc["groups"][0]
    best = doc["runs"][first[0]]["values"][doc["metric"]]
    names = ", ".join(html_escape(_name(doc, i), max_len=None) for i in first)
    if best["value"] is None:
        return f"<p class=\"cbb-lead\">No run has a {html_escape(label)} value on the common tasks.</p>"
    many = len(first) > 1
    return (f'<p class="cbb-lead">By {html_escape(label)}, <b>group 1</b> ({len(first)} run{"s" if many else ""}): '
            f"{names}. The best scores {fmt_pct(best['value'])} {fmt_interval(best['ci_low'], best['ci_high'])}"
            + (f"; the others in group 1 are not separable from it at alpha = {doc['alpha']:g} (Holm-adjusted "
               "exact McNemar)." if many else "; every other run is separable from it.") + "</p>")


def _warnings(doc: dict) -> str:
    compat = doc["compatibility"]
    if not compat["warnings"]:
        return ("<p><b>No compatibility warning</b>: task set, k, suite, judge, model, configuration, toolkit and "
                "evaluation contract agree as far as the manifests and artifacts show.</p>")
    parts = [f'<div class="cbc-warn"><b>{html_escape(w["code"])}</b>: {html_escape(w["message"], max_len=1500)}</div>'
             for w in compat["warnings"]]
    details = []
    for entry in compat["against_first"]:
        items = "".join(f"<li><b>{html_escape(w['code'])}</b>: {html_escape(w['message'], max_len=1000)}</li>"
                        for w in entry["warnings"]) or "<li>no warning</li>"
        details.append(f"<li>{html_escape(_name(doc, entry['run']), max_len=None)} (B) against "
                       f"{html_escape(_name(doc, 0), max_len=None)} (A)<ul>{items}</ul></li>")
    n = len(compat["warnings"])
    return (f"<p><b>{n} compatibility warning{'s' if n != 1 else ''}</b>: read the board with "
            f"{'them' if n != 1 else 'it'} in mind.</p>" + "".join(parts)
            + '<details class="cbc-help"><summary>Each run against the first, as <code>capbench-nb compare</code> '
              f"words it</summary><ul>{''.join(details)}</ul></details>")


def header_html(doc: dict) -> str:
    """The first screen: how many runs on which suite, group 1, the common ground in numbers, the warnings."""
    common = doc["common"]
    n = len(doc["runs"])
    left = len(common["not_common"])
    priced = n - len(doc["unpriced"])
    facts = [("runs", f"{n:,}"), ("common tasks", f"{common['tasks']:,}"),
             ("left out", f"{left:,} task{'s' if left != 1 else ''} planned in only some runs"),
             ("common k", str(common["k"])), ("pairs per metric", f"{n * (n - 1) // 2:,}"),
             ("priced runs", f"{priced} of {n}"), ("rank bootstrap", f"{doc['resamples']:,} resamples, seed {doc['seed']}")]
    if suite_locks(doc):
        facts.append(("suite lock", suite_locks(doc)))
    if SELECTED in doc["runs"][0]["values"]:
        chosen = sum(e["values"][SELECTED] is not None for e in doc["runs"])
        facts.append((f"runs with {metric_labels(doc)[SELECTED]}", f"{chosen} of {n}"))
    facts_html = "".join(f'<span class="cbb-fact">{html_escape(k)}: <b>{html_escape(v)}</b></span>' for k, v in facts)
    title = f"Board of {n} runs on {', '.join(_suites(doc))}"
    scope = (f"Every number is computed on the {common['tasks']:,} tasks planned in every run, at the common "
             f"k = {common['k']}" + (f"; {left:,} task{'s' if left != 1 else ''} planned in only some runs "
                                      f"{'are' if left != 1 else 'is'} left out (listed at the end)." if left else "."))
    suites = _suites(doc)
    mixed = ("" if len(suites) < 2 else
             f'<p class="cbc-warn"><b>This board mixes {len(suites)} suites</b> ({html_escape(", ".join(suites), max_len=600)}): '
             "a task id may not mean the same task in each, so read the groups and ranks as a comparison across "
             "suites, not of agents on one suite.</p>")
    return (f'<div class="cbc cbb-header"><h1 class="cbc-title">{html_escape(title, max_len=300)}</h1>'
            f"{mixed}{_lead(doc)}<p>{html_escape(scope, max_len=None)}</p>"
            f'<div class="cbb-facts">{facts_html}</div>{_warnings(doc)}</div>')


# =========================================================================== page data


def attempt_codes(run: Any, common: list[str]) -> list[str]:
    """Per common task, the outcome code of each of the run's planned attempts (``S``, ``A``, ..., ``.`` no record):
    the records view :func:`~capbench_nb.records.views.task_outcome_codes`."""
    return task_outcome_codes(run, common)


def selection_picks(run: Any, common: list[str]) -> list[str] | None:
    """Per common task, the attempt the run's selector picked as written in selection.jsonl (``"2"``,
    ``"abstained"``, ``""`` without a line); None for a run without a selection file."""
    if run.selection is None:
        return None
    lines = run.selection.lines
    picked = dict(zip(lines["task_id"].astype(object), lines["selected"].astype(object)))
    return ["" if t not in picked else "abstained" if picked[t] is pd.NA else str(int(picked[t])) for t in common]


def _shared(doc: dict, runs: list) -> dict:
    """What both interactive sections read: names, task ids, outcomes (board.json), attempt codes and the
    selectors' picks (the runs)."""
    common = doc["common"]["task_ids"]
    picks = {"picks": [selection_picks(run, common) for run in runs]} if SELECTED in doc["runs"][0]["values"] else {}
    return {
        "metrics": board_metrics(doc),
        "labels": metric_labels(doc),
        "metric": doc["metric"],
        "names": [_name(doc, i) for i in range(len(doc["runs"]))],
        "short": [f"#{i + 1}" for i in range(len(doc["runs"]))],
        "tasks": [plain_label(t, 200) for t in common],
        "outcomes": [r["outcomes"] for r in doc["runs"]],
        "attempts": [attempt_codes(run, common) for run in runs],
        "outcome_words": _OUTCOME_WORDS,
        "codes_help": CODES_HELP,
        "max_rows": MAX_ROWS,
        **picks,
    }


def _cost_cells(entry: dict) -> tuple[str, Any, str, Any]:
    if entry["cost_per_attempt"] is None:
        return "unpriced", None, "n/a (unpriced)", None
    frontier = {True: ("yes", 1), False: ("dominated", 0), None: ("n/a (no value)", None)}[entry["frontier"]]
    return fmt_cost(entry["cost_per_attempt"]), entry["cost_per_attempt"], frontier[0], frontier[1]


def runs_data(doc: dict, runs: list) -> dict:
    """The board table's JSON: columns, and per run (board order) its display cells and sort keys."""
    columns, rows = run_table(doc)
    return {**_shared(doc, runs), "columns": columns, "rows": rows, "open_col": 3}


def run_table(doc: dict) -> tuple[list[dict], list[dict]]:
    """The board table from the document alone: columns (``label``, ``help``, ``num``) and per run, in board
    order, ``pos``, display ``cells`` and sort ``keys`` (the page adds each run's tasks; a notebook shows it
    as it is, :class:`capbench_nb.outputs.documents.BoardDocument`)."""
    labels = metric_labels(doc)
    main = doc["metric"]
    others = [m for m in board_metrics(doc) if m != main]
    columns = [("rank", "1 + the runs with a strictly higher value", True),
               ("rank interval", "95% paired-bootstrap interval of the rank", True),
               ("group", "runs not separable from the group's first run", True),
               ("run", "open a run for its common tasks", False), ("model", "config.model", False),
               (labels[main], f"{labels[main]} on the common tasks, 95% Wilson interval", True),
               ("tasks", "successes / tasks in the denominator", True),
               *((labels[m], _SELECTED_HELP if m == SELECTED else "on the common tasks", True) for m in others),
               ("cost / attempt", "mean cost over eligible attempts 1..k of the common tasks", True),
               ("frontier", "on the cost-accuracy frontier", False)]
    rows = []
    for i in board_order(doc):
        e = doc["runs"][i]
        rate = e["values"][main]
        interval = e["rank_interval"]
        cost, cost_key, frontier, frontier_key = _cost_cells(e)
        value = ("n/a" if rate["value"] is None
                 else f"{fmt_pct(rate['value'])} {fmt_interval(rate['ci_low'], rate['ci_high'])}")
        cells = ["n/a" if e["rank"] is None else str(e["rank"]),
                 "n/a" if interval is None else f"{interval[0]}–{interval[1]}", str(e["group"]), _name(doc, i),
                 plain_label("n/a" if e["model"] is None else e["model"], 60), value,
                 f"{rate['successes']:,}/{rate['n']:,}"]
        other = [e["values"][m] and e["values"][m]["value"] for m in others]  # a null selected@k: None
        cells += ["n/a" if v is None else fmt_pct(v) for v in other] + [cost, frontier]
        keys = [e["rank"], None if interval is None else interval[0], e["group"], i, cells[4], rate["value"], rate["n"],
                *other, cost_key, frontier_key]
        rows.append({"pos": i, "cells": cells, "keys": keys})
    return [{"label": c, "help": h, "num": n} for c, h, n in columns], rows


def pairs_data(doc: dict, runs: list) -> dict:
    """The matrix's JSON: per metric and pair ``[a, b, a-b text, b-a text, p text, separable, n, a_only, b_only, sign]``."""
    matrix: dict[str, list] = {m: [] for m in board_metrics(doc)}
    alpha = doc["alpha"]
    for p in doc["pairs"]:
        d = p["difference"]
        sign = 0 if d is None or d == 0 else (1 if d > 0 else -1)
        shown = fmt_p(p["p_holm"], alpha)
        matrix[p["metric"]].append([p["a"], p["b"], fmt_pp(d), fmt_pp(None if d is None else -d),
                                    f"p {shown}" if shown.startswith("<") else f"p = {shown}", p["p_holm"] < alpha,
                                    p["n"], p["a_only"], p["b_only"], sign])
    paired = [m for m in matrix if matrix[m]]  # selected@k: only when two runs or more have one
    members = {m: {i for entry in matrix[m] for i in entry[:2]} for m in paired}
    return {**_shared(doc, runs), "pair_metrics": paired, "matrix": matrix,
            "orders": {m: [i for i in board_order(doc) if i in members[m]] for m in paired},
            "matrix_help": f"row minus column, percentage points; Holm-adjusted p; coloured when p < {alpha:g}"}


def _section(kind: str, data: dict, lead: str) -> str:
    root = island_id("cbb-", island_json(data))
    return (f'<div class="cbc cbb-section" id="{root}" data-kind="{kind}" data-island="{root}-data"><p>{lead}</p>'
            '<p class="cbc-fallback cbc-muted">The interactive view needs the page\'s script (in Jupyter: a trusted '
            "notebook); board.md has the table.</p>"
            f'<div class="cbc-mount"></div>{json_island(data, root + "-data")}<script>{with_tables(page_asset("board.js"))}</script></div>')


def _selection_note(doc: dict) -> str:
    """Below the table, when some run has a selection file: what selected@k is and why a run has none."""
    if SELECTED not in doc["runs"][0]["values"]:
        return ""
    label = metric_labels(doc)[SELECTED]
    missing = [f"{_name(doc, i)}: {e['selection']['reason']}" for i, e in enumerate(doc["runs"])
               if e["selection"]["reason"] is not None]
    items = "".join(f"<li>{html_escape(text, max_len=None)}</li>" for text in missing)
    return (f'<div class="cbc"><p><b>{html_escape(label)}</b>: {html_escape(_SELECTED_HELP, max_len=None)}. The '
            f"matrix compares it between the runs that have one (Holm over their pairs).</p>"
            + (f"<p>No {html_escape(label)} (n/a):</p><ul>{items}</ul>" if missing else "") + "</div>")


def runs_html(doc: dict, runs: list) -> str:
    """The board table: sortable, each run opening its common tasks with its outcomes and attempts; the
    selected@k note below it when some run has a selection file."""
    return _section("runs", runs_data(doc, runs),
                    "Sort by a column header (on a narrow screen: the menu). Open a run for its common tasks: "
                    "its outcome in each metric and its attempts.") + _selection_note(doc)


def pairs_html(doc: dict, runs: list) -> str:
    """The pairwise matrix (runs in board order): difference and Holm-adjusted p; a pair opens its discordant tasks."""
    return _section("pairs", pairs_data(doc, runs),
                    "Each cell: the row's value minus the column's on the tasks both have in the metric's "
                    "denominator, and the Holm-adjusted McNemar p. Open a cell for the tasks on which one run "
                    "succeeded and the other failed, with both runs' attempts.")


# =========================================================================== figures


def _rc():
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "font.size": 10.5, "svg.hashsalt": "capbench-nb"})


def frontier_html(doc: dict) -> str:
    """Value (with its Wilson interval) against cost per attempt for the priced runs; the frontier joined; the
    unpriced runs named beside the figure, never placed on the cost axis."""
    from matplotlib.figure import Figure

    label = metric_labels(doc)[doc["metric"]]
    placed = [i for i, e in enumerate(doc["runs"]) if e["frontier"] is not None]
    unpriced = doc["unpriced"]
    note = ("Unpriced (some eligible attempt has no cost; not on the cost axis, never counted as free): "
            + ", ".join(_name(doc, i) for i in unpriced) + "." if unpriced else "Every run is priced.")
    if not placed:
        return (f'<div class="cbc"><p>No priced run has a {html_escape(label)} value, so there is no cost-accuracy '
                f"plot.</p><p>{html_escape(note, max_len=None)}</p></div>")
    with _rc():
        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        ax = fig.add_subplot()
        for i in placed:
            e = doc["runs"][i]
            rate = e["values"][doc["metric"]]
            y = 100 * rate["value"]
            on = e["frontier"]
            ax.errorbar([e["cost_per_attempt"]], [y], yerr=[[y - 100 * rate["ci_low"]], [100 * rate["ci_high"] - y]],
                        fmt="o", color="#1f4e79" if on else "#9aa5b1", capsize=3, markersize=6 if on else 5)
            ax.annotate(f"#{i + 1}", (e["cost_per_attempt"], y), textcoords="offset points", xytext=(5, 4),
                        fontsize=9, color="#1f2328" if on else "#66707a")
        front = doc["frontier"]
        ax.plot([doc["runs"][i]["cost_per_attempt"] for i in front],
                [100 * doc["runs"][i]["values"][doc["metric"]]["value"] for i in front],
                color="#1f4e79", linewidth=1.2, drawstyle="steps-post", label="frontier")
        costs = [doc["runs"][i]["cost_per_attempt"] for i in placed]
        if min(costs) > 0 and max(costs) / min(costs) > 20:
            ax.set_xscale("log")
        ax.set_xlabel("mean cost per attempt (USD)")
        ax.set_ylabel(f"{label} (%), 95% Wilson interval")
        ax.grid(alpha=0.3)
    alt = (f"{label} against cost per attempt for {len(placed)} priced runs; frontier: "
           + ", ".join(f"#{i + 1}" for i in front))
    return (f'<div class="cbc">{figure_image(fig, alt).data}<p>Dark points are on the frontier (no other run is '
            f"cheaper and at least as good, or as cheap and better); grey points are dominated. Points are "
            f"labelled by position (the table's #).</p><p>{html_escape(note, max_len=None)}</p></div>")


def curves_html(doc: dict) -> str:
    """pass^j for j = 1..common k on the common tasks, every run on one figure, coloured by group; on a narrow
    page the same figure drawn narrow (:func:`~capbench_nb.outputs.html.images.narrow_picture`)."""
    from matplotlib.figure import Figure

    k = doc["common"]["k"]
    curves = _coinciding_curves(doc)
    with _rc():
        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        _draw_curves(fig, doc, curves, k, narrow=False)
        narrow = Figure(figsize=(NARROW_WIDTH, 3.9), layout="constrained")
        _draw_curves(narrow, doc, curves, k, narrow=True)
    same = [runs for runs, _ in curves if len(runs) > 1]
    coincide = ("" if not same else " Runs with the same curve are drawn as one line, labelled with all of them: "
                + "; ".join(" = ".join(_name(doc, i) for i in runs) for runs in same) + ".")
    alt = f"pass^j for j = 1 to {k} of {len(doc['runs'])} runs on the common tasks, coloured by group"
    return (f'<div class="cbc">{narrow_picture(figure_image(fig, alt).data, narrow)}<p>How reliability falls as more '
            "attempts must all succeed "
            "(planned prefixes, board.json runs[].curve). Lines are labelled by position (the table's #) and "
            f"coloured by group.{html_escape(coincide, max_len=None)}</p></div>")


def _draw_curves(fig, doc: dict, curves: list, k: int, *, narrow: bool) -> None:
    """The pass^j lines of :func:`curves_html` on ``fig``: narrow, with larger labels and the legend below."""
    ax = fig.add_subplot()
    seen = set()
    heights = _spread([points[-1][1] for _, points in curves], gap=5.5 if narrow else 3.6)
    for (runs, points), height in zip(curves, heights):
        group = doc["runs"][runs[0]]["group"]
        color = _GROUP_COLORS[(group - 1) % len(_GROUP_COLORS)]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3.5, linewidth=1.1,
                color=color, alpha=0.85, label=None if group in seen else f"group {group}", clip_on=False)
        seen.add(group)
        ax.annotate(" = ".join(f"#{i + 1}" for i in runs), points[-1], xytext=(points[-1][0] + 0.06, height),
                    textcoords="data", va="center", fontsize=9.5 if narrow else 8, color=color,
                    annotation_clip=False)
    ax.set_xticks(range(1, k + 1))
    ax.set_xlim(0.8, k + (0.9 if narrow else 0.6))
    ax.set_ylim(0, 100)  # from 0: the fall from pass^1 reads at its true size
    ax.set_xlabel("j (attempts 1..j all succeeded)")
    ax.set_ylabel("pass^j (%), common tasks" if narrow else "pass^j (%) on the common tasks")
    ax.grid(alpha=0.3)
    if seen and narrow:
        fig.legend(loc="outside lower center", fontsize=9.5, frameon=False, ncol=min(len(seen), 3))
    elif seen:
        ax.legend(fontsize=8.5, loc="best", ncol=2 if len(seen) > 5 else 1)


def _spread(heights: list[float], *, gap: float) -> list[float]:
    """Label heights near ``heights`` (0-100) at least ``gap`` apart, in the same order: the end labels of lines
    that finish close together are stacked instead of printed over each other."""
    order = sorted(range(len(heights)), key=lambda i: heights[i])
    placed = [0.0] * len(heights)
    floor = -math.inf
    for i in order:
        placed[i] = floor = max(heights[i], floor + gap)
    top = max(placed, default=0.0)
    if top > 100:  # pushed past the top: move the stack down, keeping the gaps
        placed = [h - (top - 100) for h in placed]
    return placed


def _coinciding_curves(doc: dict) -> list[tuple[list[int], list[tuple[int, float]]]]:
    """Each distinct pass^j curve (points in %) with the runs (input positions) that have it, in board.json order."""
    by_points: dict[tuple, list[int]] = {}
    for i, e in enumerate(doc["runs"]):
        points = tuple((p["j"], 100 * p["pass^j"]["value"]) for p in e["curve"] if p["pass^j"]["value"] is not None)
        if points:
            by_points.setdefault(points, []).append(i)
    return [(runs, list(points)) for points, runs in by_points.items()]


def left_out_html(doc: dict, *, limit: int = 500) -> str:
    """The tasks planned in only some runs (left out of every number), at most ``limit`` named."""
    left = doc["common"]["not_common"]
    if not left:
        return '<div class="cbc"><p>None: every run plans the same tasks.</p></div>'
    shown = sorted(left, key=_natural)[:limit]
    items = ", ".join(f"<bdi>{html_escape(t)}</bdi>" for t in shown)
    more = f"; and {len(left) - limit:,} more (board.json common.not_common)" if len(left) > limit else ""
    n = f"{len(left):,} task{'s' if len(left) != 1 else ''}"
    return (f'<div class="cbc"><details class="cbb-left-out"><summary>{n} planned in only some runs, left out of '
            f"every number (in natural order: 2 before 10)</summary><p>{items}{more}.</p></details></div>")


def _natural(task_id: str) -> list:
    """A sort key reading runs of digits as numbers: ``t2`` before ``t10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", task_id) if part]
