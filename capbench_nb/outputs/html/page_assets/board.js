/* capbench-nb board.html: the sortable board table (a run opens its common tasks) and the pairwise
   matrix (a pair opens its discordant tasks).  Each section carries its data in a JSON data island
   (script type="application/json", named by the section's data-island); every string is inserted with textContent.  The
   sortable table is page_assets/tables.js (cbcTables), inlined before this script. */
(function () {
  "use strict";
  var el = cbcTables.el, button = cbcTables.button, headRow = cbcTables.headRow;
  function td(text, label, cls) {
    var cell = el("td", cls || "", text);
    cell.setAttribute("data-label", label);
    return cell;
  }
  // A table of tasks: id, then one column per run given (its outcome words or attempt codes).
  function taskTable(data, ids, columns) {
    var t = el("table", "cbc-t cbc-cards"), body = el("tbody");
    t.appendChild(headRow(["task"].concat(columns.map(function (c) { return c.label; }))));
    ids.forEach(function (i) {
      var tr = el("tr");
      tr.appendChild(td(data.tasks[i], "task"));
      columns.forEach(function (c) { tr.appendChild(td(c.value(i), c.label, c.cls)); });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }
  function capped(data, box, ids, columns) {
    var shown = ids.slice(0, data.max_rows);
    box.appendChild(taskTable(data, shown, columns));
    if (ids.length > shown.length) {
      box.appendChild(el("p", "cbb-note", "The first " + shown.length + " of " + ids.length +
        " tasks are listed; board.json has every task's outcome (runs[].outcomes)."));
    }
  }
  function word(data, pos, metric, i) {
    var text = data.outcomes[pos][metric];  // null: the run has no such value (selected@k without a selection)
    return text === null ? "n/a" : data.outcome_words[text.charAt(i)];
  }

  // ------------------------------------------------------------------ the board table
  function runsSection(root, data) {
    function detailBox(run) {
      var box = el("div", "cbb-panel");
      var pos = run.pos, ids = [];
      for (var i = 0; i < data.tasks.length; i += 1) { ids.push(i); }
      box.appendChild(el("h4", "", data.names[pos] + ": its " + data.tasks.length + " common tasks"));
      box.appendChild(el("p", "cbb-note", data.codes_help));
      var search = el("input");
      search.type = "search";
      search.placeholder = "filter by task id";
      search.setAttribute("aria-label", "filter this run's tasks by task id");
      var holder = el("div");
      function draw() {
        var needle = search.value.toLowerCase();
        while (holder.firstChild) { holder.removeChild(holder.firstChild); }
        var shown = ids.filter(function (i) { return !needle || data.tasks[i].toLowerCase().indexOf(needle) >= 0; });
        var columns = data.metrics.map(function (m) {
          return { label: data.labels[m], value: function (i) { return word(data, pos, m, i); } };
        });
        columns.push({ label: "attempts", cls: "cbb-codes", value: function (i) { return data.attempts[pos][i]; } });
        if (data.picks && data.picks[pos]) {
          columns.push({ label: "pick", value: function (i) { return data.picks[pos][i]; } });
        }
        capped(data, holder, shown, columns);
      }
      search.addEventListener("input", draw);
      box.appendChild(search);
      box.appendChild(holder);
      draw();
      return box;
    }
    var runs = cbcTables.sortable({
      columns: data.columns, rows: data.rows, className: "cbc-t cbc-cards cbb-runs", open: data.open_col,
      sortLabel: "sort the runs by", orderLabel: "sort: board order", detail: detailBox
    });
    var controls = el("div", "cbc-controls");
    controls.appendChild(runs.sorter);
    controls.appendChild(runs.reverse);
    var mount = root.querySelector(".cbc-mount");
    mount.appendChild(controls);
    mount.appendChild(runs.table);
    runs.draw();
  }

  // ------------------------------------------------------------------ the pairwise matrix
  function pairsSection(root, data) {
    var controls = el("div", "cbc-controls");
    var picker = el("select");
    picker.setAttribute("aria-label", "metric of the matrix");
    data.pair_metrics.forEach(function (m) { picker.appendChild(el("option", "", data.labels[m])).value = m; });
    picker.value = data.metric;
    controls.appendChild(picker);
    controls.appendChild(el("span", "cbc-muted", data.matrix_help));
    var scroll = el("div", "cbb-scroll"), panel = el("div");
    var selected = null;
    function lookup(metric) {
      var map = {};
      data.matrix[metric].forEach(function (e) { map[e[0] + "," + e[1]] = e; });
      return map;
    }
    function draw() {
      var metric = picker.value, map = lookup(metric), order = data.orders[metric];
      var table = el("table", "cbb-matrix"), thead = el("thead"), hr = el("tr"), body = el("tbody");
      var corner = el("th", "", "row vs column");
      corner.setAttribute("scope", "col");
      hr.appendChild(corner);
      order.forEach(function (j) {
        var th = el("th", "", data.short[j]);
        th.setAttribute("scope", "col");
        th.title = data.names[j];
        hr.appendChild(th);
      });
      thead.appendChild(hr);
      table.appendChild(thead);
      order.forEach(function (i) {
        var tr = el("tr"), th = el("th", "", data.names[i]);
        th.setAttribute("scope", "row");
        th.title = data.names[i];
        tr.appendChild(th);
        order.forEach(function (j) {
          if (i === j) { tr.appendChild(el("td", "cbb-self", "·")); return; }
          var e = map[Math.min(i, j) + "," + Math.max(i, j)], flip = i > j;
          var sign = flip ? -e[9] : e[9];
          var cell = el("td", e[5] ? (sign > 0 ? "cbb-pos" : sign < 0 ? "cbb-neg" : "") : "");
          var b = button("");
          b.appendChild(el("span", "", flip ? e[3] : e[2]));
          b.appendChild(el("span", "cbb-p", e[4]));
          b.title = data.names[i] + " vs " + data.names[j];
          b.setAttribute("aria-label", data.names[i] + " vs " + data.names[j] + ": " + (flip ? e[3] : e[2]) + ", " + e[4]);
          b.addEventListener("click", function () { open(metric, e, i, j, cell); });
          cell.appendChild(b);
          tr.appendChild(cell);
        });
        body.appendChild(tr);
      });
      table.appendChild(body);
      while (scroll.firstChild) { scroll.removeChild(scroll.firstChild); }
      scroll.appendChild(table);
      while (panel.firstChild) { panel.removeChild(panel.firstChild); }
      selected = null;
    }
    function open(metric, e, i, j, cell) {
      if (selected) { selected.classList.remove("cbb-on"); }
      selected = cell;
      cell.classList.add("cbb-on");
      while (panel.firstChild) { panel.removeChild(panel.firstChild); }
      var box = el("div", "cbb-panel");
      var flip = i > j;
      var iOnly = flip ? e[8] : e[7], jOnly = flip ? e[7] : e[8];
      box.appendChild(el("h4", "", data.names[i] + " vs " + data.names[j] + ", " + data.labels[metric]));
      box.appendChild(el("p", "", e[6] + " tasks in both runs' denominators; " + data.names[i] + " only: " + iOnly +
        ", " + data.names[j] + " only: " + jOnly + "; difference " + (flip ? e[3] : e[2]) + ", " + e[4] + "."));
      box.appendChild(el("p", "cbb-note", data.codes_help));
      var two = el("div", "cbb-two");
      [[i, j, "1", "0"], [j, i, "1", "0"]].forEach(function (side) {
        var ids = [], x = data.outcomes[side[0]][metric], y = data.outcomes[side[1]][metric];
        for (var t = 0; t < x.length; t += 1) { if (x.charAt(t) === "1" && y.charAt(t) === "0") { ids.push(t); } }
        var part = el("div");
        part.appendChild(el("h4", "", data.names[side[0]] + " succeeded, " + data.names[side[1]] + " failed (" +
          ids.length + ")"));
        if (!ids.length) { part.appendChild(el("p", "cbc-muted", "none")); }
        else {
          var columns = [
            { label: data.short[i] + " attempts", cls: "cbb-codes", value: function (t) { return data.attempts[i][t]; } },
            { label: data.short[j] + " attempts", cls: "cbb-codes", value: function (t) { return data.attempts[j][t]; } }
          ];
          if (metric === "selected@k") {  // the selector's pick of each run, as selection.jsonl has it
            columns.push({ label: data.short[i] + " pick", value: function (t) { return data.picks[i][t]; } });
            columns.push({ label: data.short[j] + " pick", value: function (t) { return data.picks[j][t]; } });
          }
          capped(data, part, ids, columns);
        }
        two.appendChild(part);
      });
      box.appendChild(two);
      panel.appendChild(box);
    }
    picker.addEventListener("change", draw);
    var mount = root.querySelector(".cbc-mount");
    mount.appendChild(controls);
    mount.appendChild(scroll);
    mount.appendChild(panel);
    draw();
  }

  var sections = document.querySelectorAll(".cbb-section");
  Array.prototype.forEach.call(sections, function (root) {
    if (root.getAttribute("data-ready")) { return; }
    root.setAttribute("data-ready", "1");
    var data = JSON.parse(document.getElementById(root.getAttribute("data-island")).textContent);
    var fallback = root.querySelector(".cbc-fallback");
    if (fallback) { fallback.hidden = true; }
    if (root.getAttribute("data-kind") === "runs") { runsSection(root, data); }
    else { pairsSection(root, data); }
  });
})();
