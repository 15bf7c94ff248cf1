/* capbench-nb task explorer: reads its JSON data island and renders a sortable, filterable,
   paginated task table with an attempt grid and a drill-down per task.  Every run-supplied
   string is inserted with textContent (never as markup); nothing is fetched. */
(function () {
  "use strict";
  var NAMES = {S: "success", A: "agent failure", E: "environment", V: "evaluation", K: "skipped",
               U: "unknown (eligible)", X: "unknown (not eligible)", ".": "no record"};
  var CLASS_OF = {S: "success", A: "agent", E: "environment", V: "evaluation", K: "skipped", U: "unknown", X: "unknown"};
  var INELIGIBLE = {E: 1, V: 1, K: 1, X: 1};
  var CONSISTENCY = ["stable pass", "stable fail", "inconsistent"];
  var INEL_NAMES = ["environment", "evaluation", "skipped", "unknown"];
  var MAX_CELLS = 24, DETAIL_STEP = 100, FOLD_LINES = 12;
  var INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  var SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"};

  function visible(s, keepLines) {  /* control, bidi and zero-width characters shown as escapes, as in the rest of the report */
    return String(s).replace(INVISIBLE, function (c) {
      if (keepLines && c === "\n") return c;
      return SHORT[c] || "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
    });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function idText(s, max) {  /* a run-supplied id: visible escapes, clipped, the whole of it on hover */
    var t = visible(s == null ? "" : s), e = el("bdi", "cbx-id");
    max = max || 120;
    /* a line may break after a separator (settings.display.|brightness), not in the middle of a word */
    (t.length > max ? t.slice(0, max - 1) + "\u2026" : t).split(/(?<=[._\/:-])/).forEach(function (part, j) {
      if (j) e.appendChild(document.createElement("wbr"));
      e.appendChild(document.createTextNode(part));
    });
    if (t.length > max) e.title = t.slice(0, 2000);
    return e;
  }
  function na(text) { return el("span", "cbx-na", text || "n/a"); }
  function folded(text) {  /* a long multi-line value: its first FOLD_LINES lines, and a button for the rest */
    var lines = text.split("\n"), box = el("div", "cbx-fold");
    if (lines.length <= FOLD_LINES + 2) { box.appendChild(el("pre", "cbx-value", text)); return box; }
    var pre = el("pre", "cbx-value", lines.slice(0, FOLD_LINES).join("\n") + "\n\u2026");
    var more = el("button", "cbx-showall", "show all " + lines.length.toLocaleString("en-US") + " lines");
    more.type = "button";
    more.addEventListener("click", function () { pre.textContent = text; box.removeChild(more); });
    box.appendChild(pre); box.appendChild(more);
    return box;
  }
  function fmtCount(v) { return v == null ? null : Number(v).toLocaleString("en-US", {maximumFractionDigits: 1}); }
  function fmtMs(v) {
    if (v == null) return null;
    var sign = v < 0 ? "-" : "", a = Math.abs(v), whole = Math.floor(a + 0.5);
    if (whole < 1000) return sign + (a > 0 && whole === 0 ? "<1" : whole) + " ms";
    var tenths = Math.floor(a / 100 + 0.5);
    if (tenths < 600) return sign + Math.floor(tenths / 10) + "." + (tenths % 10) + " s";
    var sec = Math.floor(a / 1000 + 0.5);
    if (sec < 3600) return sign + Math.floor(sec / 60) + " min " + ("0" + (sec % 60)).slice(-2) + " s";
    var min = Math.floor(a / 60000 + 0.5);
    return sign + Math.floor(min / 60).toLocaleString("en-US") + " h " + ("0" + (min % 60)).slice(-2) + " min";
  }
  function fmtCost(v) {
    if (v == null) return null;
    var a = Math.abs(v), sign = v < 0 ? "-" : "";
    if (a > 0 && a < 0.001) return sign + "$" + a.toFixed(2 - Math.floor(Math.log10(a)));
    return sign + "$" + a.toLocaleString("en-US", {minimumFractionDigits: 4, maximumFractionDigits: 4});
  }
  function fmtScore(v) { return v == null ? null : Number(v).toFixed(3); }
  function segments(path) { return String(path).split("/").map(encodeURIComponent).join("/"); }

  function Explorer(root, data) {
    this.root = root; this.d = data; this.k = data.k;
    this.recorded = data.attempts.telemetry.map(function (values) { return values.some(function (v) { return v != null; }); });
    this.sortKey = null; this.sortDir = 1; this.page = 0; this.pageSize = 50; this.open = {};
    this.prepare(); this.build(); this.apply();
  }
  Explorer.prototype.prepare = function () {
    var T = this.d.tasks, A = this.d.attempts, n = T.id.length, k = this.k, i;
    this.n = n; this.stageMask = new Int32Array(n);
    for (i = 0; i < n; i++) {
      for (var r = A.start[i]; r < A.start[i + 1]; r++) {
        var st = A.stage.charAt(r);
        if (st !== ".") this.stageMask[i] |= 1 << Number(st);
      }
    }
    this.kSucc = new Int32Array(n); this.flags = [];
    for (i = 0; i < n; i++) {
      var o = T.outcomes[i], s = 0, f = {};
      for (var j = 0; j < o.length; j++) {
        var c = o.charAt(j);
        if (j < k && c === "S") s++;
        f[c] = 1;
      }
      this.kSucc[i] = s; this.flags.push(f);
    }
    this.hasHealth = !!T.quarantine && T.quarantine.some(function (v) { return v != null; });
    this.inelShare = [];
    for (i = 0; i < n; i++) {
      var inel = T.ineligible ? T.ineligible[i] : null, m = T.attempts[i];
      this.inelShare.push(inel && m ? (inel[0] + inel[1] + inel[2] + inel[3]) / m : null);
    }
    this.labelText = [];
    for (i = 0; i < n; i++) {
      var parts = [];
      T.labels.forEach(function (L) { var c = L.codes[i]; if (c != null) parts.push(L.name + ": " + L.values[c]); });
      this.labelText.push(parts.join(" \u00b7 "));
    }
  };
  Explorer.prototype.columns = function () {
    var T = this.d.tasks, self = this;
    function num(key, fmt) { return function (i) { return T[key][i]; }; }
    return [
      {key: "id", label: "task", value: function (i) { return T.id[i]; }, cls: "cbx-task"},
      {key: "labels", label: "labels", value: function (i) { return self.labelText[i]; }, hide: !T.labels.length},
      {key: "outcomes", label: "attempts 1.." + this.k + " (planned)", value: function (i) { return T.outcomes[i]; }, cls: "cbx-gridcol"},
      {key: "planned", label: "planned", value: num("planned"), fmt: fmtCount, numeric: true},
      {key: "attempts", label: "attempts", value: num("attempts"), fmt: fmtCount, numeric: true},
      {key: "eligible", label: "eligible", value: num("eligible"), fmt: fmtCount, numeric: true},
      {key: "successes", label: "successes", value: num("successes"), fmt: fmtCount, numeric: true},
      {key: "k_eligible", label: "k-eligible", value: num("k_eligible"), fmt: function (v) { return v ? "yes" : "no"; }, numeric: true,
       hide: this.hasHealth},  /* the consistency column says it: null there is "not k-eligible" */
      {key: "consistency", label: "consistency", value: num("consistency"), fmt: function (v) { return CONSISTENCY[v]; },
       none: "not k-eligible", hide: !this.hasHealth},
      {key: "ineligible", label: "ineligible", value: function (i) { return self.inelShare[i]; }, render: this.inelCell.bind(this),
       cls: "cbx-inelcol", hide: !this.hasHealth},
      {key: "first_success", label: "first success", value: num("first_success"), fmt: fmtCount, numeric: true, none: "none"},
      {key: "wall_to_first", label: "time to 1st success", value: num("wall_to_first"), fmt: fmtMs, numeric: true},
      {key: "tokens_to_first", label: "tokens to 1st success", value: num("tokens_to_first"), fmt: fmtCount, numeric: true},
      {key: "cost_to_first", label: "cost to 1st success", value: num("cost_to_first"), fmt: fmtCost, numeric: true},
      {key: "oracle", label: "oracle best score", value: num("oracle"), fmt: fmtScore, numeric: true}
    ].filter(function (c) { return !c.hide; });
  };
  Explorer.prototype.control = function (box, label, input) {
    var l = el("label", "cbx-ctl"); l.appendChild(el("span", null, label)); l.appendChild(input); box.appendChild(l);
    input.addEventListener(input.tagName === "SELECT" || input.type === "checkbox" ? "change" : "input", this.reset.bind(this));
    return input;
  };
  function select(options) {
    var s = el("select");
    options.forEach(function (o) { var opt = el("option", null, o[1]); opt.value = o[0]; s.appendChild(opt); });
    return s;
  }
  Explorer.prototype.build = function () {
    var d = this.d, self = this, root = this.root;
    root.textContent = "";
    var box = el("div", "cbx-controls");
    this.q = this.control(box, "task id contains", el("input")); this.q.type = "search";
    /* the summary's words, each with its count: "failed every one" is over k-eligible tasks, as the summary counts */
    var K = this.k, succOptions = [["all", "all " + K + " succeeded"], ["none-k", "failed every one of 1.." + K + " (k-eligible)"],
      ["none", "no success in 1.." + K + " (any task)"], ["some", "some, not all"], ["first-failed", "attempt 1 failed"]];
    this.succ = this.control(box, "successes in 1.." + K, select([["", "any"]].concat(succOptions.map(function (o) {
      var n = 0;
      for (var t = 0; t < self.n; t++) if (self.succMatches(o[0], t)) n++;
      return [o[0], o[1] + " (" + fmtCount(n) + ")"];
    }))));
    this.pat = this.control(box, "outcome pattern", el("input"));
    this.pat.placeholder = "e.g. SA? or F"; this.pat.title = "One letter per attempt from attempt 1: S success, A agent, E environment, " +
      "V evaluation, K skipped, U/X unknown (eligible/not), . no record, F any failure, I ineligible, ? anything";
    this.cls = this.control(box, "has an attempt of class", select([["", "any"]].concat(d.classes.slice(1).map(function (c) { return [c, c]; }))));
    this.stg = this.control(box, "has a failure stage", select([["", "any"]].concat(d.stages.map(function (s, i) { return [String(i), s]; }))));
    this.inel = el("input"); this.inel.type = "checkbox"; this.control(box, "has an ineligible attempt", this.inel);
    this.health = [];
    if (this.hasHealth) {
      this.cons = this.control(box, "consistency in 1.." + this.k, select([["", "any"], ["0", "stable pass"], ["1", "stable fail"],
        ["2", "inconsistent"], ["none", "not k-eligible"]]));
      this.suite = this.control(box, "suite health", select([["", "any"], ["quarantine", "quarantine candidate"],
        ["suite", "has environment or evaluation"], ["clean", "no ineligible attempt"]]));
      this.health = [this.cons, this.suite];
    }
    this.labelSel = d.tasks.labels.map(function (L) {
      return self.control(box, "label " + visible(L.name), select([["", "any"]].concat(L.values.map(function (v, i) { return [String(i), visible(v)]; }))));
    });
    this.sortSel = this.control(box, "sort by", select([["", "plan order"]].concat(this.columns().map(function (c) { return [c.key, c.label]; }))));
    this.dirSel = this.control(box, "order", select([["1", "ascending"], ["-1", "descending"]]));
    var clear = el("button", "cbx-btn", "clear filters"); clear.type = "button"; box.appendChild(clear);
    clear.addEventListener("click", function () { self.clearFilters(); self.reset(); });
    root.appendChild(box);
    root.appendChild(this.legend());
    this.status = el("p", "cbx-status"); this.status.setAttribute("aria-live", "polite"); root.appendChild(this.status);
    var wrap = el("div", "cbx-wrap"), table = el("table", "cbx-table"), thead = el("thead"), tr = el("tr");
    this.cols = this.columns();
    this.cols.forEach(function (c) {
      var th = el("th", c.numeric ? "num" : null), b = el("button", "cbx-sort", c.label);
      b.type = "button"; b.dataset.key = c.key; th.appendChild(b); tr.appendChild(th);
      b.addEventListener("click", function () {
        if (self.sortSel.value === c.key) self.dirSel.value = String(-Number(self.dirSel.value));
        else { self.sortSel.value = c.key; self.dirSel.value = c.numeric ? "-1" : "1"; }
        self.reset();
      });
    });
    thead.appendChild(tr); table.appendChild(thead); this.tbody = el("tbody"); table.appendChild(this.tbody);
    wrap.appendChild(table); root.appendChild(wrap);
    var pager = el("div", "cbx-pager");
    this.prev = el("button", "cbx-btn", "\u2190 previous"); this.next = el("button", "cbx-btn", "next \u2192");
    this.prev.type = this.next.type = "button";
    this.size = select([["50", "50 per page"], ["100", "100 per page"], ["250", "250 per page"], ["1000", "1000 per page"]]);
    this.pageInfo = el("span", "cbx-pageinfo");
    [this.prev, this.pageInfo, this.next, this.size].forEach(function (x) { pager.appendChild(x); });
    this.prev.addEventListener("click", function () { self.page--; self.render(); });
    this.next.addEventListener("click", function () { self.page++; self.render(); });
    this.size.addEventListener("change", function () { self.pageSize = Number(self.size.value); self.page = 0; self.render(); });
    root.appendChild(pager);
    var p = d.policy;
    if (p.successes_summarised || p.resolved < p.attempts)
      root.appendChild(el("p", "cbx-note", (p.successes_summarised ? "This run has " + fmtCount(p.attempts) + " attempts: details of successful attempts are summarised (above " +
        fmtCount(p.full_detail) + "); every failed or ineligible attempt keeps its details. " : "") +
        "Evidence values and error messages were read for " + fmtCount(p.resolved) + " attempts (failures first); the others name their references."));
  };
  Explorer.prototype.legend = function () {
    var box = el("div", "cbx-legend");
    "SAEVKUX.".split("").forEach(function (c) {
      var item = el("span", "cbx-legend-item"); item.appendChild(cell(c)); item.appendChild(document.createTextNode(NAMES[c])); box.appendChild(item);
    });
    var sep = el("span", "cbx-legend-item"); sep.appendChild(el("span", "cbx-sep")); sep.appendChild(document.createTextNode("after attempt k = " + this.k + ": the end of attempts 1..k")); box.appendChild(sep);
    return box;
  };
  function cell(c, title) {
    var s = el("span", "cbx-c cbx-" + (c === "." ? "M" : c) + (INELIGIBLE[c] ? " cbx-inel" : ""), c);
    s.title = title || NAMES[c];
    return s;
  }
  Explorer.prototype.reset = function () { this.page = 0; this.apply(); };
  Explorer.prototype.clearFilters = function () {
    [this.q, this.pat].forEach(function (x) { x.value = ""; });
    [this.succ, this.cls, this.stg, this.sortSel].concat(this.labelSel, this.health).forEach(function (x) { x.value = ""; });
    this.inel.checked = false;
  };
  Explorer.prototype.healthMatches = function (i) {  /* the consistency and suite-health filters (metrics.json health.per_task) */
    var T = this.d.tasks, cv = this.cons.value, hv = this.suite.value, c = T.consistency[i], inel = T.ineligible[i];
    if (cv !== "" && (cv === "none" ? c != null : c !== Number(cv))) return false;
    if (hv === "quarantine" && T.quarantine[i] !== 1) return false;
    if (hv === "suite" && !(inel && inel[0] + inel[1] > 0)) return false;
    if (hv === "clean" && !(inel && inel[0] + inel[1] + inel[2] + inel[3] === 0)) return false;
    return true;
  };
  Explorer.prototype.inelCell = function (i) {  /* "2 of 3", by class on hover (the grid colours each attempt); sorted by the share */
    var T = this.d.tasks, inel = T.ineligible[i], box = el("span");
    if (!inel || !T.attempts[i]) { box.appendChild(na(T.attempts[i] === 0 ? "no attempt" : "n/a")); return box; }
    var total = inel[0] + inel[1] + inel[2] + inel[3], parts = [];
    INEL_NAMES.forEach(function (name, j) { if (inel[j]) parts.push(name + " " + fmtCount(inel[j])); });
    box.textContent = fmtCount(total) + " of " + fmtCount(T.attempts[i]);
    box.title = "not agent-eligible: " + (parts.join(", ") || "none") + " (of " + fmtCount(T.attempts[i]) + " counted attempts)";
    return box;
  };
  Explorer.prototype.focus = function (i) {  /* a link #ROOT-task-N: task N (plan position) opened, on its page, in view */
    if (!(i >= 0 && i < this.n)) return;
    this.clearFilters(); this.open[i] = this.open[i] || DETAIL_STEP; this.page = 0; this.apply();
    this.page = Math.floor(this.rows.indexOf(i) / this.pageSize); this.render();
    var tr = this.tbody.querySelector('tr.cbx-row[data-task="' + i + '"]');
    if (!tr) return;
    var prev = this.tbody.querySelector("tr.cbx-focus");
    if (prev) prev.classList.remove("cbx-focus");
    tr.classList.add("cbx-focus"); tr.scrollIntoView({block: "start"});
    var b = tr.querySelector(".cbx-open"); if (b) b.focus({preventScroll: true});
  };
  Explorer.prototype.succMatches = function (value, i) {  /* the "successes in 1..k" filter */
    var T = this.d.tasks, s = this.kSucc[i], kk = Math.min(this.k, T.planned[i]);
    if (value === "all") return s === kk;
    if (value === "none-k") return s === 0 && T.k_eligible[i] === 1;
    if (value === "none") return s === 0;
    if (value === "some") return s !== 0 && s !== kk;
    if (value === "first-failed") return T.outcomes[i].charAt(0) !== "S";
    return true;
  };
  Explorer.prototype.matches = function (i) {
    var T = this.d.tasks, o = T.outcomes[i], k = this.k, f = this.flags[i];
    if (this.qv && T.id[i].toLowerCase().indexOf(this.qv) < 0) return false;
    if (this.succ.value && !this.succMatches(this.succ.value, i)) return false;
    if (this.patv) {
      for (var j = 0; j < this.patv.length; j++) {
        var p = this.patv.charAt(j), c = o.charAt(j) || ".";
        if (p === "?") continue;
        if (p === "F" ? (c === "S" || c === ".") : p === "I" ? !INELIGIBLE[c] : p !== c) return false;
      }
    }
    if (this.inel.checked && !(f.E || f.V || f.K || f.X)) return false;
    var cl = this.cls.value;
    if (cl && !(cl === "unknown" ? (f.U || f.X) : f[{agent: "A", environment: "E", evaluation: "V", skipped: "K"}[cl]])) return false;
    if (this.stg.value !== "" && !(this.stageMask[i] & (1 << Number(this.stg.value)))) return false;
    if (this.hasHealth && !this.healthMatches(i)) return false;
    for (var L = 0; L < this.labelSel.length; L++) {
      var v = this.labelSel[L].value;
      if (v !== "" && T.labels[L].codes[i] !== Number(v)) return false;
    }
    return true;
  };
  Explorer.prototype.apply = function () {
    this.qv = this.q.value.trim().toLowerCase(); this.patv = this.pat.value.trim().toUpperCase();
    var rows = [], i;
    for (i = 0; i < this.n; i++) if (this.matches(i)) rows.push(i);
    var key = this.sortSel.value, dir = Number(this.dirSel.value) || 1;
    var col = this.cols.filter(function (c) { return c.key === key; })[0];
    if (col) {
      var v = col.value;
      rows.sort(function (a, b) {
        var x = v(a), y = v(b);
        if (x == null || y == null) return x == null && y == null ? a - b : (x == null ? 1 : -1);
        var r = typeof x === "number" ? x - y : (x < y ? -1 : x > y ? 1 : 0);
        return r ? r * dir : a - b;
      });
    }
    this.cols.forEach(function (c, j) {
      this.tbody.parentNode.tHead.rows[0].cells[j].setAttribute("aria-sort", c.key === key ? (dir > 0 ? "ascending" : "descending") : "none");
    }, this);
    this.rows = rows; this.render();
  };
  Explorer.prototype.render = function () {
    var rows = this.rows, size = this.pageSize, pages = Math.max(1, Math.ceil(rows.length / size));
    this.page = Math.max(0, Math.min(this.page, pages - 1));
    var start = this.page * size, end = Math.min(rows.length, start + size), frag = document.createDocumentFragment();
    for (var r = start; r < end; r++) {
      frag.appendChild(this.row(rows[r]));
      if (this.open[rows[r]]) frag.appendChild(this.detail(rows[r]));
    }
    this.tbody.textContent = ""; this.tbody.appendChild(frag);
    this.status.textContent = rows.length ? "Showing tasks " + fmtCount(start + 1) + "\u2013" + fmtCount(end) + " of " + fmtCount(rows.length) +
      (rows.length < this.n ? " matching (" + fmtCount(this.n) + " planned)" : " planned") + ". Click a task to open its attempts." :
      "No task matches these filters (" + fmtCount(this.n) + " planned).";
    this.pageInfo.textContent = "page " + (this.page + 1) + " of " + pages;
    this.prev.disabled = this.page === 0; this.next.disabled = this.page >= pages - 1;
  };
  Explorer.prototype.row = function (i) {
    var T = this.d.tasks, tr = el("tr", "cbx-row"), self = this;
    tr.dataset.task = String(i);
    this.cols.forEach(function (c) {
      var td = el("td", c.numeric ? "num" : c.cls || null);
      td.setAttribute("data-label", c.label);
      if (c.key === "id") {
        var b = el("button", "cbx-open"); b.type = "button"; b.setAttribute("aria-expanded", self.open[i] ? "true" : "false");
        b.appendChild(el("span", "cbx-caret", self.open[i] ? "\u25be" : "\u25b8")); b.appendChild(idText(T.id[i]));
        b.addEventListener("click", function () { self.toggle(i); });
        td.appendChild(b);
        if (self.hasHealth && T.quarantine[i] === 1) {
          var q = el("span", "cbx-tag cbx-quarantine", "quarantine");
          q.title = "quarantine candidate: environment and evaluation attempts reach the threshold; the suite, not the agent, fails here";
          td.appendChild(q);
        }
      } else if (c.key === "outcomes") {
        td.appendChild(self.grid(i));
      } else if (c.key === "labels") {  /* one line of chips: the values, each naming its label on hover */
        td.className = "cbx-labels"; td.title = visible(self.labelText[i]);
        var chips = el("div", "cbx-chips");
        T.labels.forEach(function (L) {
          var code = L.codes[i];
          if (code == null) return;
          var chip = el("span", "cbx-chip", visible(L.values[code])); chip.title = visible(L.name + ": " + L.values[code]);
          chips.appendChild(chip);
        });
        td.appendChild(chips);
      } else if (c.render) {
        td.appendChild(c.render(i));
      } else {
        var v = c.value(i), text = v == null ? null : c.fmt(v);
        td.appendChild(text == null ? na(v == null && c.none ? c.none : "n/a") : document.createTextNode(text));
      }
      tr.appendChild(td);
    });
    return tr;
  };
  Explorer.prototype.grid = function (i) {
    var o = this.d.tasks.outcomes[i], g = el("span", "cbx-grid"), shown = Math.min(o.length, MAX_CELLS);
    g.style.minWidth = (Math.min(shown, 10) * 17 + (o.length > this.k ? 4 : 0)) + "px";
    for (var j = 0; j < shown; j++) {
      var c = cell(o.charAt(j), "attempt " + (j + 1) + ": " + NAMES[o.charAt(j)]);
      g.appendChild(c);
      if (j === this.k - 1 && o.length > this.k) g.appendChild(el("span", "cbx-sep"));
    }
    if (o.length > shown) g.appendChild(el("span", "cbx-more", "+" + fmtCount(o.length - shown)));
    return g;
  };
  Explorer.prototype.toggle = function (i) {
    if (this.open[i]) delete this.open[i]; else this.open[i] = DETAIL_STEP;
    this.render();
  };
  Explorer.prototype.detail = function (i) {
    var T = this.d.tasks, A = this.d.attempts, tr = el("tr", "cbx-detail"), td = el("td"), self = this;
    td.colSpan = this.cols.length; tr.appendChild(td);
    var head = el("p", "cbx-dhead"); head.appendChild(el("b", null, "Task ")); head.appendChild(idText(T.id[i], 400));
    head.appendChild(document.createTextNode(" \u2014 " + fmtCount(T.planned[i]) + " planned attempts" + (self.labelText[i] ? "; " + visible(self.labelText[i]) : "")));
    td.appendChild(head);
    var byNum = {};
    for (var r = A.start[i]; r < A.start[i + 1]; r++) byNum[A.attempt[r]] = r;
    var o = T.outcomes[i], limit = Math.min(o.length, this.open[i]);
    for (var j = 0; j < limit; j++) td.appendChild(this.attempt(i, j + 1, o.charAt(j), byNum[j + 1]));
    if (o.length > limit) {
      var more = el("button", "cbx-btn", "show " + fmtCount(Math.min(DETAIL_STEP, o.length - limit)) + " more attempts");
      more.type = "button"; more.addEventListener("click", function () { self.open[i] += DETAIL_STEP; self.render(); });
      td.appendChild(more);
    }
    return tr;
  };
  Explorer.prototype.attempt = function (i, num, code, r) {
    var d = this.d, A = d.attempts, box = el("div", "cbx-att cbx-att-" + (code === "." ? "M" : code));
    var h = el("div", "cbx-atthead"); h.appendChild(cell(code));
    h.appendChild(el("b", null, "attempt " + num + ": " + NAMES[code]));
    if (code !== "." && code !== "S") h.appendChild(el("span", "cbx-tag", "class " + CLASS_OF[code]));
    if (code !== ".") h.appendChild(el("span", "cbx-tag", INELIGIBLE[code] ? "not agent-eligible" : "agent-eligible"));
    box.appendChild(h);
    if (code === ".") { box.appendChild(el("p", "cbx-note", "No record for this planned attempt (missing).")); return box; }
    if (r === undefined) { box.appendChild(el("p", "cbx-note", "Details summarised (a successful attempt of a run above " + fmtCount(d.policy.full_detail) + " attempts).")); return box; }
    var facts = el("div", "cbx-facts");
    function fact(name, text) {
      var item = el("div", "cbx-fact"), value = el("span", "cbx-fval"); item.appendChild(el("span", "cbx-fname", name));
      value.appendChild(text == null ? na() : document.createTextNode(text)); item.appendChild(value); facts.appendChild(item);
    }
    var st = A.stage.charAt(r);
    fact("failure stage", st === "." ? "none" : d.stages[Number(st)]);
    fact("quality score", fmtScore(A.quality[r]));
    fact("cost", fmtCost(A.cost[r]));
    var missing = [], recorded = this.recorded;
    d.telemetry.forEach(function (t, f) {
      var v = A.telemetry[f][r];
      // a field no detailed attempt of the run records (e.g. device timings of an imported run) is not called missing
      if (v == null) { if (recorded[f]) missing.push(t[0]); return; }
      fact(t[0], t[2] === "ms" ? fmtMs(v) : t[2] === "bool" ? (v ? "true" : "false")
        : fmtCount(v) + " " + (Number(v) === 1 ? t[1].replace(/s$/, "") : t[1]));
    });
    box.appendChild(facts);
    if (missing.length) box.appendChild(el("p", "cbx-note", "No source for: " + missing.join(", ") + "."));
    var err = A.errors[r];
    if (err != null) { var e = el("div", "cbx-err"); e.appendChild(el("b", null, "error: ")); e.appendChild(document.createTextNode(visible(err))); box.appendChild(e); }
    var ev = A.evidence[r];
    if (ev) ev.forEach(function (x) {
      var item = el("div", "cbx-ev"), lab = el("div", "cbx-evref"); lab.appendChild(el("span", null, "evidence ")); lab.appendChild(el("code", null, visible(x[0])));
      item.appendChild(lab);
      if (x[1] != null) item.appendChild(folded(visible(x[1], true)));
      else item.appendChild(el("p", "cbx-note", x[2] ? "not resolved: " + visible(x[2]) : "not resolved here (over the budget of attempts read); open the file"));
      box.appendChild(item);
    });
    var files = A.files[r] == null ? null : d.file_sets[A.files[r]];
    var dir = A.dir[r] == null ? null : A.dir[r] === -1 ? "attempts/" + d.tasks.id[i] + "/" + num : d.dirs[A.dir[r]];
    if (files && dir != null) {
      var p = el("p", "cbx-files"); p.appendChild(el("span", null, "artifacts: "));
      files.forEach(function (f, n) {
        var name = d.files[f < 0 ? -1 - f : f], shown = visible(dir + "/" + name);
        if (n) p.appendChild(document.createTextNode(" \u00b7 "));
        if (f < 0) { p.appendChild(el("code", null, shown)); p.appendChild(na(" (not found)")); return; }
        var a = el("a", null, shown); a.setAttribute("href", d.link_base + segments(dir) + "/" + segments(name)); p.appendChild(a);
      });
      box.appendChild(p);
    }
    return box;
  };
  function boot() {
    var roots = document.querySelectorAll(".cbx[data-island]");
    for (var i = 0; i < roots.length; i++) {
      var root = roots[i];
      if (root.getAttribute("data-booted")) continue;
      var island = document.getElementById(root.getAttribute("data-island"));
      if (!island) continue;
      root.setAttribute("data-booted", "1");
      explorers[root.id] = new Explorer(root, JSON.parse(island.textContent));
      root.setAttribute("data-ready", "1");
    }
    follow(location.hash);
  }
  var explorers = {}, LINK = /^#(.+)-task-(\d+)$/;
  function follow(hash) {  /* "#cb-explorer-task-3" opens task 3 of the explorer cb-explorer */
    var m = LINK.exec(hash || "");
    if (m && explorers[m[1]]) { explorers[m[1]].focus(Number(m[2])); return true; }
    return false;
  }
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[href^='#']") : null;
    if (a && follow(a.getAttribute("href"))) e.preventDefault();
  });
  window.addEventListener("hashchange", function () { follow(location.hash); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot); else boot();
})();
