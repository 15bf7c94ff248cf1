/* capbench-nb: the sortable table whose rows open a detail row, shared by comparison.html (the flipped
   tasks) and board.html (the runs).  Inlined in the same <script> element before each page's own script
   (capbench_nb.outputs.html.assets.with_tables); every string is inserted with textContent. */
var cbcTables = (function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function button(cls, text) {
    var b = el("button", cls, text);
    b.type = "button";
    return b;
  }
  // Ascending, null last.
  function compare(x, y) {
    if (x === y) { return 0; }
    if (x === null) { return 1; }
    if (y === null) { return -1; }
    return x < y ? -1 : 1;
  }
  // A plain header row; columns from numFrom on are numeric.
  function headRow(names, numFrom) {
    var thead = el("thead"), tr = el("tr");
    names.forEach(function (name, c) {
      var th = el("th", numFrom !== undefined && c >= numFrom ? "cbc-num" : "", name);
      th.setAttribute("scope", "col");
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    return thead;
  }
  /* spec: columns [{label, num, help}]; rows [{cells, keys}]; className of the table; sortLabel (the
     menu's aria-label); orderLabel (the menu's first entry, the given order); open (the column whose
     button opens a row); detail(row) -> the node an opened row shows; filter(row) -> false hides a row;
     pageSize (optional): rows drawn at first, the "show more" button adds as many again;
     drawn(shown, total, visible) after each drawing: rows passing the filter, all rows, rows drawn.
     Sorting is stable; null keys sort last both ways.
     Returns {sorter, reverse, table, more, draw}: the page places the controls, the table and the "show
     more" button (hidden while every row passing the filter is drawn), then calls draw(). */
  function sortable(spec) {
    var sorter = el("select");
    sorter.setAttribute("aria-label", spec.sortLabel);
    sorter.appendChild(el("option", "", spec.orderLabel)).value = "-1";
    spec.columns.forEach(function (col, c) {
      sorter.appendChild(el("option", "", "sort by " + col.label)).value = String(c);
    });
    var reverse = button("", "reverse");
    var table = el("table", spec.className), thead = el("thead"), head = el("tr"), tbody = el("tbody");
    var state = { col: -1, dir: 1 };
    var limit = spec.pageSize || Infinity;
    var more = button("cbc-more", "");
    more.hidden = true;
    more.addEventListener("click", function () { limit += spec.pageSize; draw(); });
    spec.columns.forEach(function (col, c) {
      var th = el("th", col.num ? "cbc-num" : "");
      th.setAttribute("scope", "col");
      var b = button("", col.label);
      if (col.help) { b.title = col.help; }
      b.addEventListener("click", function () { sortBy(c, state.col === c ? -state.dir : 1); });
      th.appendChild(b);
      head.appendChild(th);
    });
    thead.appendChild(head);
    table.appendChild(thead);
    table.appendChild(tbody);
    var rows = spec.rows.map(function (item, i) {
      var row = { tr: el("tr"), detail: null, item: item, index: i };
      item.cells.forEach(function (text, c) {
        var col = spec.columns[c], cell = el("td", col.num ? "cbc-num" : "");
        cell.setAttribute("data-label", col.label);
        if (c === spec.open) {
          var b = button("cbc-open", text);
          b.setAttribute("aria-expanded", "false");
          b.addEventListener("click", function () { toggle(row, b); });
          cell.appendChild(b);
        } else {
          cell.textContent = text;
        }
        row.tr.appendChild(cell);
      });
      return row;
    });
    function toggle(row, b) {
      if (row.detail) {
        row.detail.parentNode.removeChild(row.detail);
        row.detail = null;
        b.setAttribute("aria-expanded", "false");
        return;
      }
      var tr = el("tr", "cbc-detail-row"), cell = el("td");
      cell.colSpan = spec.columns.length;
      cell.appendChild(spec.detail(row.item));
      tr.appendChild(cell);
      row.tr.parentNode.insertBefore(tr, row.tr.nextSibling);
      row.detail = tr;
      b.setAttribute("aria-expanded", "true");
    }
    function sortBy(c, dir) {
      state.col = c;
      state.dir = dir;
      sorter.value = String(c);
      rows.sort(function (p, q) {
        if (c < 0) { return (p.index - q.index) * dir; }
        var x = p.item.keys[c], y = q.item.keys[c];
        var r = compare(x, y);
        if (r !== 0 && x !== null && y !== null) { r *= dir; }
        return r || p.index - q.index;
      });
      Array.prototype.forEach.call(head.children, function (th, j) {
        if (j === c) { th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); }
        else { th.removeAttribute("aria-sort"); }
      });
      draw();
    }
    function draw() {
      var shown = 0, visible = 0;
      while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
      rows.forEach(function (row) {
        if (spec.filter && !spec.filter(row.item)) { return; }
        shown += 1;
        if (visible >= limit) { return; }
        visible += 1;
        tbody.appendChild(row.tr);
        if (row.detail) { tbody.appendChild(row.detail); }
      });
      var left = shown - visible;
      more.hidden = left <= 0;
      if (left > 0) {
        more.textContent = "show " + Math.min(left, spec.pageSize) + " more (" + left + " not shown)";
      }
      if (spec.drawn) { spec.drawn(shown, rows.length, visible); }
    }
    sorter.addEventListener("change", function () { sortBy(Number(sorter.value), 1); });
    reverse.addEventListener("click", function () { sortBy(state.col, -state.dir); });
    return { sorter: sorter, reverse: reverse, table: table, more: more, draw: draw };
  }
  return { el: el, button: button, headRow: headRow, sortable: sortable };
})();
