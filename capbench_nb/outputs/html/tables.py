"""HTML building blocks of the report notebooks: cells, tables, paragraphs, the one ``<style>`` block.

Everything is displayed through :func:`show_html` (:func:`IPython.display.display`); the HTML is
self-contained: no external URLs, fonts or scripts.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import HTML, display

from capbench_nb.outputs.html.escaping import html_escape
from capbench_nb.outputs.html.formatting import NA, fmt_count, is_null
from capbench_nb.outputs.html.images import NARROW_MEDIA

__all__ = [
    "Raw",
    "cell",
    "id_cell",
    "html_table",
    "show_table",
    "show_html",
    "paragraph",
    "show_style",
    "report_style_html",
]

class Raw(str):
    """HTML produced here (already escaped); any other cell text is escaped."""


def cell(value: Any) -> str:
    """A table cell's HTML: :class:`Raw` as it is, other values escaped (``n/a ...`` greyed)."""
    if isinstance(value, Raw):
        return str(value)
    text = "" if value is None else str(value)
    if text.startswith("n/a"):
        return f'<span class="cb-na">{html_escape(text, max_len=None)}</span>'
    return html_escape(text, max_len=None)


def id_cell(text: Any, *, max_len: int = 120, missing: str = "n/a (unreadable)") -> Raw:
    """A run-supplied identifier: escaped, isolated for bidi, clipped with the full text on hover."""
    if text is None or text is pd.NA:
        return Raw(f'<span class="cb-na">{html_escape(missing)}</span>')
    s = str(text)
    title = f' title="{html_escape(s, max_len=2000)}"' if len(s) > max_len else ""
    return Raw(f'<bdi class="cb-id"{title}>{html_escape(s, max_len=max_len)}</bdi>')


def html_table(
    headers: list[str],
    rows: list[list[Any]],
    *,
    numeric: tuple[int, ...] = (),
    caption: str | None = None,
    scroll: bool = False,
    row_classes: list[str] | None = None,
    key_value: bool = False,
) -> str:
    """An HTML table: headers and rows escaped cell by cell (:func:`cell`), ``numeric`` columns right-aligned.

    Each cell carries its column's header (``data-label``): on a narrow screen a row becomes a card of
    ``header: value`` lines instead of a table wider than the screen; a ``key_value`` table (a name and its
    value per row) becomes one ``name: value`` line per row instead.
    """
    num = ' class="num"'
    head = "".join(
        f"<th{num if i in numeric else ''}>{html_escape(h, max_len=None)}</th>" for i, h in enumerate(headers)
    )
    labels = [f' data-label="{html_escape(h, max_len=None)}"' for h in headers]
    body = []
    for r, cells in enumerate(rows):
        cls = f' class="{row_classes[r]}"' if row_classes and row_classes[r] else ""
        tds = "".join(f"<td{num if i in numeric else ''}{labels[i] if i < len(labels) else ''}>{cell(c)}</td>"
                      for i, c in enumerate(cells))
        body.append(f"<tr{cls}>{tds}</tr>")
    cap = f"<caption>{html_escape(caption, max_len=None)}</caption>" if caption else ""
    classes = "cb-table cb-kv" if key_value else "cb-table"
    table = f'<table class="{classes}">{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return f'<div class="cb-scroll">{table}</div>' if scroll else table


def _frame_cell(value: Any, *, identifier: bool) -> Any:
    if is_null(value):
        return NA
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return fmt_count(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return id_cell(value) if identifier else value


def show_table(frame: pd.DataFrame, *, caption: str | None = None, max_rows: int = 1000) -> None:
    """Display a DataFrame as an escaped HTML table (the report's style).

    pandas' own HTML escapes ``< > &`` but leaves control and bidi characters
    of run-supplied strings raw; here every cell goes through
    :func:`html_escape` (columns named ``task_id`` or ``*_id`` as identifiers:
    monospace, bidi-isolated, long ones clipped with the full text on hover).
    Missing values show as n/a, integers and numbers from 1,000 up with
    thousands separators, other numbers with 4 significant digits; numeric
    columns are right-aligned.

    Parameters
    ----------
    frame : DataFrame
        The table; its index is not shown.
    caption : str, optional
        Shown above the table.
    max_rows : int, default 1000
        Rows shown; a note says how many were left out.
    """
    numeric = tuple(i for i, c in enumerate(frame.columns)
                    if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
    shown = frame.head(max_rows)
    ids = [str(c) == "task_id" or str(c).endswith("_id") for c in frame.columns]
    rows = [[_frame_cell(v, identifier=i) for v, i in zip(row, ids)] for row in shown.itertuples(index=False, name=None)]
    html = html_table([str(c) for c in frame.columns], rows, numeric=numeric, caption=caption, scroll=True)
    if len(frame) > max_rows:
        html += paragraph(f"First {max_rows:,} of {len(frame):,} rows shown.", "cb-note")
    show_html(html)


def show_html(html: str) -> None:
    """Display ``html`` inside the report's ``cb`` container (every section and figure goes through it)."""
    display(HTML(f'<div class="cb">{html}</div>'))


def paragraph(text: str, cls: str | None = None) -> str:
    """An escaped ``<p>``, with an optional class."""
    c = f' class="{cls}"' if cls else ""
    return f"<p{c}>{html_escape(text, max_len=None)}</p>"


_STYLE = """
.cb { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
      font-size: 14px; line-height: 1.45; color: #1f2328; max-width: 1280px; }
.cb p { margin: 0.4em 0; }
.cb .cb-title { font-size: 18px; font-weight: 600; margin: 0.2em 0 0.6em; }
.cb table.cb-table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 13px; width: auto; }
.cb table.cb-table caption { caption-side: top; text-align: left; font-weight: 600; padding: 0 0 4px; color: #1f2328; }
.cb table.cb-table th, .cb table.cb-table td { border: 1px solid #d0d7de; padding: 3px 8px;
      text-align: left; vertical-align: top; }
.cb table.cb-table th { background: #f6f8fa; font-weight: 600; position: sticky; top: 0; z-index: 1; }
.cb table.cb-table td.num, .cb table.cb-table th.num { text-align: right; font-variant-numeric: tabular-nums;
      white-space: nowrap; }
.cb table.cb-table tbody tr:nth-child(even) td { background: #fafbfc; }
.cb table.cb-table tbody tr.cb-bad td { background: #fff1f0; }
.cb table.cb-table tbody tr.cb-total td { font-weight: 600; }
.cb .cb-scroll { max-height: 36em; overflow: auto; max-width: 100%; margin-bottom: 1em; }
.cb table.cb-table { max-width: 100%; }
.cb .cb-cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 0.4em 0 0.8em; }
.cb .cb-card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; min-width: 14em;
      max-width: 22em; background: #ffffff; }
.cb .cb-card .cb-label { font-size: 12px; color: #57606a; }
.cb .cb-card .cb-value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; }
.cb .cb-card .cb-detail { font-size: 12px; color: #57606a; }
.cb .cb-na { color: #6e7781; font-style: italic; }
.cb .cb-note { color: #57606a; font-size: 13px; }
.cb tr.cb-small td { color: #6e7781; font-style: italic; }
.cb td > bdi.cb-id { white-space: nowrap; }
.cb .cb-warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; margin: 0.4em 0; }
.cb .cb-ok { background: #dafbe1; border: 1px solid #4ac26b; border-radius: 6px; padding: 6px 10px; margin: 0.4em 0; }
.cb .cb-id, .cb .cb-mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
      font-size: 12.5px; overflow-wrap: anywhere; }
.cb a { color: #0969da; }
.cb img.cb-fig { max-width: 100%; height: auto; display: block; margin: 0.3em 0 1em; }
.cb .cb-figs { display: flex; flex-wrap: wrap; gap: 0 16px; align-items: flex-start; max-width: 100%; }
.cb .cb-figs img.cb-fig { flex: 0 1 auto; min-width: 0; }
.cb .cb-run { font-size: 22px; font-weight: 650; margin: 0 0 0.2em; overflow-wrap: anywhere; }
.cb .cb-run .cb-id { font-size: inherit; }
.cb .cb-facts { display: flex; flex-wrap: wrap; gap: 2px 18px; margin: 0 0 0.5em; color: #57606a; }
.cb .cb-facts b { color: #1f2328; font-weight: 600; overflow-wrap: anywhere; }
.cb .cb-verdict { font-size: 15px; margin: 0.5em 0 0.6em; max-width: 60em; }
.cb details.cb-help { margin: 0.3em 0 0.8em; color: #57606a; font-size: 13px; max-width: 60em; }
.cb details.cb-help summary { cursor: pointer; color: #0969da; }
.cb .cb-card { flex: 1 1 14em; }
@media (max-width: 760px) {
  .cb .cb-card { max-width: none; }
  .cb table.cb-table, .cb table.cb-table > tbody, .cb table.cb-table > tbody > tr,
  .cb table.cb-table > tbody > tr > td { display: block; width: 100%; box-sizing: border-box; }
  .cb table.cb-table > thead { display: none; }
  .cb table.cb-table > caption { display: block; width: 100%; }
  .cb table.cb-table > tbody > tr { border: 1px solid #d0d7de; border-radius: 6px; margin: 0 0 6px; padding: 3px 0; }
  .cb table.cb-table > tbody > tr > td, .cb table.cb-table > tbody > tr > td.num { border: 0; text-align: left;
      white-space: normal; padding: 1px 8px; background: none; }
  .cb table.cb-table > tbody > tr > td[data-label]::before { content: attr(data-label) ": "; font-weight: 600;
      color: #57606a; }
  .cb table.cb-table tbody tr:nth-child(even) td { background: none; }
  .cb table.cb-kv > tbody > tr { border: 0; border-radius: 0; margin: 0; padding: 1px 0; text-align: left; }
  .cb table.cb-kv > tbody > tr > td { display: inline; width: auto; padding: 0 4px 0 0; }
  .cb table.cb-kv > tbody > tr > td[data-label]::before { content: none; }
  .cb table.cb-kv > tbody > tr > td:first-child::after { content: ":"; }
}
""" + f"@media {NARROW_MEDIA} {{ .cb picture.cb-pic img.cb-fig {{ width: auto; }} }}\n"  # the narrow figure's own width


def show_style() -> None:
    """Display the report's single ``<style>`` block (:func:`report_style_html`)."""
    display(HTML(report_style_html()))


def report_style_html() -> str:
    """The report's ``<style>`` block (tables, cards, notes).

    Readable on a laptop screen: 14 px system fonts, compact bordered tables
    with right-aligned tabular numbers, scroll boxes for long tables.  No
    external fonts or URLs.
    """
    return f"<style>{_STYLE}</style>"
