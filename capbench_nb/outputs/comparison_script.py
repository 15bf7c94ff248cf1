"""The style sheet and the one inline script of comparison.html (:mod:`capbench_nb.outputs.comparison_page`).

Both are constants of our own: no run data is ever spliced into them.  The
script reads the flipped tasks from an inert JSON element of its section
(``JSON.parse(textContent)``) and builds the table with ``createElement`` and
``textContent`` only: no ``innerHTML``, no ``eval``, nothing from the network.  The sortable
table with openable rows is shared with board.html: ``page_assets/tables.js``, inlined in the
same ``<script>`` element before the page's own script (:func:`with_tables`).
"""

from __future__ import annotations

from importlib import resources

__all__ = ["COMPARISON_CSS", "FLIPS_SCRIPT", "flips_script", "page_asset", "with_tables"]

COMPARISON_CSS = """
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

#: The flipped-tasks table; ``__ROOT__`` is replaced by the section's element id (hex digits of our own).
#: The table itself is ``page_assets/tables.js`` (``cbcTables``), inlined before it (:func:`with_tables`).
FLIPS_SCRIPT = """
(function () {
  "use strict";
  var root = document.getElementById("__ROOT__");
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(root.querySelector(".cbc-data").textContent);
  var fallback = root.querySelector(".cbc-fallback");
  if (fallback) { fallback.hidden = true; }
  var el = cbcTables.el;
  var search = el("input");
  search.type = "search";
  search.placeholder = "filter by task id";
  search.setAttribute("aria-label", "filter flipped tasks by task id");
  var count = el("span", "cbc-muted cbc-count");
  function attemptsTable(side) {
    var box = el("div");
    box.appendChild(el("h4", "", side.label));
    if (!side.rows.length) { box.appendChild(el("p", "cbc-muted", side.empty)); return box; }
    var t = el("table", "cbc-t"), body = el("tbody");
    t.appendChild(cbcTables.headRow(data.attempt_columns, data.attempt_num_from));
    side.rows.forEach(function (row) {
      var tr = el("tr");
      row.cells.forEach(function (text, c) {
        tr.appendChild(el("td", c >= data.attempt_num_from ? "cbc-num" : "", text));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    box.appendChild(t);
    side.rows.forEach(function (row) {
      if (!row.evidence.length) { return; }
      var ul = el("ul");
      row.evidence.forEach(function (ev) {
        var li = el("li");
        li.appendChild(el("span", "", "attempt " + row.cells[0] + ", " + ev[0] + ": "));
        li.appendChild(el("code", "", ev[1]));
        ul.appendChild(li);
      });
      box.appendChild(ul);
    });
    return box;
  }
  function detail(task) {
    var sides = data.attempts[task.id];
    var box = el("div", "cbc-detail");
    if (!sides) {
      box.appendChild(el("p", "cbc-muted", data.no_detail));
    } else {
      box.appendChild(attemptsTable(sides.a));
      box.appendChild(attemptsTable(sides.b));
    }
    return box;
  }
  var flips = cbcTables.sortable({
    columns: data.columns, rows: data.tasks, className: "cbc-t cbc-cards cbc-flips", open: 0,
    sortLabel: "sort flipped tasks by", orderLabel: "sort: plan order", detail: detail,
    filter: function (task) {
      var needle = search.value.toLowerCase();
      return !needle || task.id.toLowerCase().indexOf(needle) >= 0;
    },
    drawn: function (shown, total) { count.textContent = shown + " of " + total + " flipped tasks"; }
  });
  search.addEventListener("input", flips.draw);
  var controls = el("div", "cbc-controls");
  [search, flips.sorter, flips.reverse, count].forEach(function (node) { controls.appendChild(node); });
  var mount = root.querySelector(".cbc-mount");
  mount.appendChild(controls);
  mount.appendChild(flips.table);
  flips.draw();
})();
"""


def page_asset(name: str) -> str:
    """The text of ``page_assets/<name>`` (a style sheet or script of our own, shipped with the package)."""
    return resources.files("capbench_nb.outputs").joinpath("page_assets", name).read_text(encoding="utf-8")


def with_tables(script: str) -> str:
    """``script`` preceded by the shared sortable table (``page_assets/tables.js``): one ``<script>``'s text.

    In one element, so that the table code has run before ``script`` wherever the HTML is inserted
    (a page or a notebook output).
    """
    return page_asset("tables.js") + script


def flips_script(root_id: str) -> str:
    """:data:`FLIPS_SCRIPT` for the section whose element id is ``root_id`` (``cbc-`` and hex digits only),
    after the shared table code (:func:`with_tables`)."""
    if not (root_id.startswith("cbc-") and all(ch in "0123456789abcdef" for ch in root_id[4:])):
        raise ValueError(f"not a section id of ours: {root_id!r}")
    return with_tables(FLIPS_SCRIPT.replace("__ROOT__", root_id))
