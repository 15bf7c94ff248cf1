"""What the pages share in their HTML: the style sheet of comparison.html and board.html, our own
scripts and style sheets (``page_assets/``), and the one form of a JSON data island.

Every page carries its data as a JSON data island, ``<script type="application/json"
id="ID">`` (:func:`json_island`), and every inline script reads it the same way: the element
it draws into names the island in ``data-island``, and the script does
``JSON.parse(document.getElementById(root.getAttribute("data-island")).textContent)``.  Every
string is then inserted with ``textContent``: no ``innerHTML``, no ``eval``, nothing from the
network.  The assets are constants of our own: no run data is ever spliced into them.  The
sortable table with openable rows (``page_assets/tables.js``) is inlined in the same ``<script>``
element before a page's own script (:func:`with_tables`).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

__all__ = ["PAGE_CSS", "island_json", "json_island", "island_id", "page_asset", "with_tables"]

#: ``<`` ``>`` ``&`` (no ``</script>``, ``<!--`` or entity) and the two JavaScript line separators.
_ISLAND_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}

PAGE_CSS = """
.cbc { font-size: 14px; line-height: 1.45; max-width: 100%; overflow-wrap: anywhere; }
.cbc * { box-sizing: border-box; }
.cbc h1.cbc-title { font-size: 1.55em; margin: 0 0 0.4em 0; line-height: 1.25; }
.cbc .cbc-runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 0.6em; }
.cbc .cbc-run { border: 1px solid #c8d3df; border-radius: 6px; padding: 0.5em 0.8em; background: #f7f9fb; }
.cbc .cbc-run .cbc-runid { font-weight: 600; font-size: 1.1em; }
.cbc .cbc-tag { display: inline-block; font-size: 0.8em; font-weight: 600; color: #fff; background: #1f4e79;
  border-radius: 3px; padding: 0 0.45em; margin-right: 0.4em; }
.cbc .cbc-tag.cbc-b { background: #8a4b08; }
.cbc .cbc-muted { color: #555; }
.cbc ul.cbc-verdicts { list-style: none; padding: 0; margin: 0.8em 0; }
.cbc ul.cbc-verdicts li { border-left: 4px solid #9aa9b8; padding: 0.3em 0.7em; margin: 0.35em 0; background: #fbfbfb; }
.cbc ul.cbc-verdicts li.cbc-sig { border-left-color: #1f7a3a; }
.cbc ul.cbc-verdicts li.cbc-none { border-left-color: #bbb; color: #555; }
.cbc .cbc-warn { margin: 0.3em 0; padding: 0.3em 0.7em; border-left: 4px solid #b35c00; background: #fff8f0; }
.cbc .cbc-warn.cbc-allowed { border-left-color: #6b7d8f; background: #f5f7f9; }
.cbc .cbc-badge { font-size: 0.8em; font-weight: 600; border: 1px solid currentColor; border-radius: 3px;
  padding: 0 0.35em; margin-left: 0.3em; }
.cbc table.cbc-t { border-collapse: collapse; margin: 0.5em 0; width: auto; max-width: 100%; table-layout: auto;
  font-size: 13px; }
.cbc table.cbc-t th, .cbc table.cbc-t td { padding: 0.3em 0.6em; border-bottom: 1px solid #e2e6ea;
  text-align: left; vertical-align: top; white-space: normal; }
.cbc table.cbc-t td.cbc-num, .cbc table.cbc-t th.cbc-num { text-align: right; font-variant-numeric: tabular-nums; }
.cbc table.cbc-t td.cbc-num { white-space: nowrap; }
.cbc table.cbc-t th { overflow-wrap: normal; }
.cbc table.cbc-t thead th { background: #eef2f6; font-weight: 600; }
.cbc table.cbc-t tbody tr:nth-child(odd) { background: transparent; }
.cbc th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer;
  color: #1f3550; text-align: inherit; }
.cbc th[aria-sort="ascending"] button::after { content: " \\25B2"; font-size: 0.75em; }
.cbc th[aria-sort="descending"] button::after { content: " \\25BC"; font-size: 0.75em; }
.cbc td button.cbc-open { font: inherit; background: none; border: 0; padding: 0; color: #0b5cad;
  text-decoration: underline; cursor: pointer; text-align: left; overflow-wrap: anywhere; }
.cbc table.cbc-flips { width: 100%; }
.cbc .cbc-controls { display: flex; flex-wrap: wrap; gap: 0.5em; align-items: center; margin: 0.4em 0; }
.cbc .cbc-controls input, .cbc .cbc-controls select, .cbc .cbc-controls button { font: inherit;
  padding: 0.2em 0.4em; min-width: 0; max-width: 100%; }
.cbc button.cbc-more { font: inherit; padding: 0.2em 0.6em; margin: 0.4em 0; cursor: pointer; }
.cbc .cbc-detail { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 0.8em;
  padding: 0.4em 0; }
.cbc .cbc-detail h4 { margin: 0.2em 0; font-size: 1em; }
.cbc .cbc-detail ul { margin: 0.2em 0 0 1.1em; padding: 0; font-size: 12px; }
.cbc .cbc-detail code { font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.cbc .cbc-forest { margin: 0.6em 0; max-width: 760px; }
.cbc .cbc-frow { display: grid; grid-template-columns: minmax(90px, 150px) 1fr; gap: 0.6em; align-items: center;
  margin: 0.25em 0; }
.cbc .cbc-track { position: relative; height: 1.6em; background: #f3f5f7; border-radius: 3px; }
.cbc .cbc-zero { position: absolute; top: 0; bottom: 0; width: 0; border-left: 1px dashed #777; }
.cbc .cbc-ci { position: absolute; top: 0.7em; height: 0.2em; background: #1f4e79; }
.cbc .cbc-dot { position: absolute; top: 0.45em; width: 0.7em; height: 0.7em; margin-left: -0.35em;
  border-radius: 50%; background: #1f4e79; }
.cbc .cbc-axis { display: flex; justify-content: space-between; gap: 0.5em; font-size: 12px; color: #555; }
.cbc .cbc-axis > span:first-child, .cbc .cbc-axis > span:last-child { white-space: nowrap; }
.cbc .cbc-axis > span:nth-child(2) { text-align: center; }
.cbc details.cbc-help { margin: 0.4em 0; color: #333; }
.cbc details.cbc-help summary { cursor: pointer; color: #1f3550; }
@media (max-width: 640px) {
  .cbc table.cbc-cards, .cbc table.cbc-cards > tbody, .cbc table.cbc-cards > tbody > tr,
  .cbc table.cbc-cards > tbody > tr > td { display: block; width: 100%; }
  .cbc table.cbc-cards > thead { display: none; }
  .cbc table.cbc-cards > tbody > tr { border: 1px solid #dde3e9; border-radius: 4px; margin: 0.4em 0; padding: 0.2em 0; }
  .cbc table.cbc-cards > tbody > tr > td, .cbc table.cbc-cards > tbody > tr > td.cbc-num { border: 0;
    text-align: left; padding: 0.1em 0.6em; white-space: normal; }
  .cbc table.cbc-cards > tbody > tr > td[data-label]::before { content: attr(data-label) ": "; font-weight: 600;
    color: #444; }
  .cbc table.cbc-cards > tbody > tr.cbc-detail-row > td { padding: 0.1em 0.3em; }
  .cbc table.cbc-t th, .cbc table.cbc-t td { padding: 0.25em 0.35em; }
  .cbc .cbc-frow { grid-template-columns: 1fr; gap: 0.1em; }
  .cbc .cbc-detail { grid-template-columns: 1fr; }
}
"""


def island_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script type="application/json">`` element.

    ASCII only (``\\u`` escapes for every other character, lone surrogates included), and ``<``,
    ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes: no ``</script>``, ``<!--`` or entity can
    appear, and ``JSON.parse`` of the element's text gives back every string exactly.
    """
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for ch, esc in _ISLAND_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def island_id(prefix: str, text: str) -> str:
    """An element id of our own for a section: ``prefix`` and 12 hex digits of the SHA-256 of ``text``
    (the section's island JSON), so that two sections on one page never share an id."""
    return prefix + hashlib.sha256(text.encode("ascii")).hexdigest()[:12]


def json_island(data: Any, element_id: str) -> str:
    """The JSON data island of every page: ``<script type="application/json" id="ELEMENT_ID">``
    holding :func:`island_json` of ``data``.

    ``element_id`` must be a plain identifier of our own (letters, digits, ``-`` and ``_``), never
    run data; the element a script draws into names it in its ``data-island`` attribute.
    """
    if not element_id or not element_id.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"element_id must be a plain identifier, got {element_id!r}")
    return f'<script type="application/json" id="{element_id}">{island_json(data)}</script>'


def page_asset(name: str) -> str:
    """The text of ``page_assets/<name>`` (a style sheet or script of our own, shipped with the package)."""
    return resources.files("capbench_nb.outputs.html").joinpath("page_assets", name).read_text(encoding="utf-8")


def with_tables(script: str) -> str:
    """``script`` preceded by the shared sortable table (``page_assets/tables.js``): one ``<script>``'s text.

    In one element, so that the table code has run before ``script`` wherever the HTML is inserted
    (a page or a notebook output).
    """
    return page_asset("tables.js") + script
