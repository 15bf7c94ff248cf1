"""The one inline script of comparison.html's flipped tasks (:mod:`capbench_nb.outputs.comparison.page`).

A constant of our own: no run data is ever spliced into it.  It reads the flipped tasks from the
section's JSON data island (:func:`capbench_nb.outputs.html.assets.json_island`) and builds the
table with ``createElement`` and ``textContent`` only: no ``innerHTML``, no ``eval``, nothing from
the network.  The sortable table with openable rows is shared with board.html
(``page_assets/tables.js``, :func:`~capbench_nb.outputs.html.assets.with_tables`).
"""

from __future__ import annotations

from capbench_nb.outputs.html.assets import with_tables

__all__ = ["FLIPS_SCRIPT", "flips_script"]

#: The flipped-tasks table; ``__ROOT__`` is replaced by the section's element id (hex digits of our own).
#: The table itself is ``page_assets/tables.js`` (``cbcTables``), inlined before it (:func:`with_tables`).
FLIPS_SCRIPT = """
(function () {
  "use strict";
  var root = document.getElementById("__ROOT__");
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(document.getElementById(root.getAttribute("data-island")).textContent);
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
    pageSize: data.page_size,
    filter: function (task) {
      var needle = search.value.toLowerCase();
      return !needle || task.id.toLowerCase().indexOf(needle) >= 0;
    },
    drawn: function (shown, total, visible) {
      count.textContent = shown + " of " + total + " flipped tasks" + (visible < shown ? ", the first " + visible +
        " shown" : "");
    }
  });
  search.addEventListener("input", flips.draw);
  var controls = el("div", "cbc-controls");
  [search, flips.sorter, flips.reverse, count].forEach(function (node) { controls.appendChild(node); });
  var mount = root.querySelector(".cbc-mount");
  mount.appendChild(controls);
  mount.appendChild(flips.table);
  mount.appendChild(flips.more);
  flips.draw();
})();
"""


def flips_script(root_id: str) -> str:
    """:data:`FLIPS_SCRIPT` for the section whose element id is ``root_id`` (``cbc-`` and hex digits only),
    after the shared table code (:func:`with_tables`)."""
    if not (root_id.startswith("cbc-") and all(ch in "0123456789abcdef" for ch in root_id[4:])):
        raise ValueError(f"not a section id of ours: {root_id!r}")
    return with_tables(FLIPS_SCRIPT.replace("__ROOT__", root_id))
