"""The documents ``cb.compute_metrics``, ``cb.compare_runs`` and ``cb.board`` return in a notebook, and the
table ``cb.metrics_by`` returns.

Each is the plain document (metrics.json, comparison.json, board.json) as a read-only ``dict``: existing
code keeps working (``doc["metrics"]["pass@1"]["value"]``, ``json.dumps(doc)``, ``dict(doc)`` for a copy
to change), while Jupyter shows a short ``repr`` and an HTML view (the headline cards, the verdicts, the
board table) instead of thousands of characters of dict, and ``to_frame()`` gives the tidy table.
The views read the document only; nothing here computes a metric.  The functions of
:mod:`capbench_nb.metrics` themselves keep returning plain dicts.  The comparison and board pages are
imported when their document is shown (scipy behind them), and every view's HTML helpers (IPython behind
them) only when Jupyter asks for it: ``cb.compute_metrics`` in a script costs the computation alone.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from capbench_nb.metrics.registry import HEADLINE, REGISTRY
from capbench_nb.outputs.html.escaping import html_escape, plain_label
from capbench_nb.outputs.html.formatting import fmt_interval, fmt_pct, is_null

__all__ = ["Document", "MetricsDocument", "ComparisonDocument", "BoardDocument", "SliceTable"]

_RATE_COLUMNS = ("value", "successes", "n", "ci_low", "ci_high", "coverage")


class Document(dict):
    """A read-only document: a ``dict`` whose keys cannot be set, deleted or updated (``dict(doc)`` copies it)."""

    kind = "document"

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError(f"a {self.kind} document is read-only; dict(doc) gives a copy to change "
                        "(copy.deepcopy(dict(doc)) a deep one)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __reduce__(self):  # pickle and copy.deepcopy: the same class around a copy of the items
        return type(self), (dict(self),)

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # IPython's plain-text view: the short repr
        printer.text(repr(self))


def _typed(rows: list[dict], *, strings: tuple[str, ...] = (), ints: tuple[str, ...] = (),
           bools: tuple[str, ...] = ()) -> pd.DataFrame:
    """``rows`` as a DataFrame of nullable dtypes: the named string, integer and boolean columns, every other
    one Float64 (a missing value stays missing, never 0)."""
    frame = pd.DataFrame(rows)
    dtypes = {c: "string" if c in strings else "Int64" if c in ints else "boolean" if c in bools else "Float64"
              for c in frame.columns}
    return frame.astype(dtypes)


def _rate_text(rate: dict | None) -> str:
    if not rate or rate.get("value") is None:
        return "n/a"
    return f"{fmt_pct(rate['value'])} {fmt_interval(rate.get('ci_low'), rate.get('ci_high'))}"


class MetricsDocument(Document):
    """metrics.json (:func:`capbench_nb.metrics.document.compute_metrics`): the headline cards in Jupyter,
    ``to_frame()`` the headline metrics, ``to_frame("per_task")`` one row per planned task."""

    kind = "metrics"

    def __repr__(self) -> str:
        k = self.get("k")
        parts = [f"{m.display(k)} {_rate_text(m.value_in(self))}" for m in HEADLINE if m.kind == "rate"]
        return f"<metrics {plain_label(self.get('run_id'), 40)}: {'; '.join(parts)}>"

    def _repr_html_(self) -> str:
        from capbench_nb.outputs.html.tables import report_style_html
        from capbench_nb.outputs.report.page import headline_html

        return f'{report_style_html()}<div class="cb">{headline_html(self)}</div>'

    def to_frame(self, table: str = "headline") -> pd.DataFrame:
        """``"headline"``: one row per headline metric (``metric``, ``label`` and the rate's fields; a mean
        has ``value`` and ``n``); ``"per_task"``: the document's ``per_task`` entries, one row per task
        (``cost_to_first_success`` as ``cost_to_first_success_task_wall_ms``, ``..._total_tokens``, ``..._cost``)."""
        if table == "per_task":
            costs = ("task_wall_ms", "total_tokens", "cost")
            rows = [{**{key: v for key, v in e.items() if key != "cost_to_first_success"},
                     **{f"cost_to_first_success_{c}": (e.get("cost_to_first_success") or {}).get(c) for c in costs}}
                    for e in self.get("per_task") or []]
            return _typed(rows, strings=("task_id",), bools=("k_eligible",),
                          ints=("planned_repeats", "attempts", "eligible", "successes", "first_success_attempt",
                                "cost_to_first_success_total_tokens"))
        if table != "headline":
            raise ValueError(f"table must be 'headline' or 'per_task', not {table!r}")
        rows = []
        for m in HEADLINE:
            value = m.value_in(self) or {}
            rows.append({"metric": m.name, "label": m.display(self.get("k")),
                         **{key: value.get(key) for key in _RATE_COLUMNS}})
        return _typed(rows, strings=("metric", "label"), ints=("successes", "n"))


class ComparisonDocument(Document):
    """comparison.json (:func:`capbench_nb.metrics.comparison.compare_runs`): the verdicts in Jupyter,
    ``to_frame()`` the paired table (one row per paired metric)."""

    kind = "comparison"

    def _view(self):
        from capbench_nb.outputs.comparison.page import ComparisonView

        return ComparisonView(self)

    def __repr__(self) -> str:
        return repr(self._view())

    def _repr_html_(self) -> str:
        return self._view()._repr_html_()

    def verdicts(self) -> list[str]:
        """One sentence per paired metric."""
        return self._view().verdicts()

    def to_frame(self) -> pd.DataFrame:
        """One row per paired metric: ``metric`` and its entry of ``paired`` (counts, values, difference B - A,
        interval, McNemar p)."""
        return _typed([{"metric": name, **entry} for name, entry in self["paired"].items()], strings=("metric", "method"),
                      ints=("k", "n_pairs", "both", "a_only", "b_only", "neither"))


class BoardDocument(Document):
    """board.json (:func:`capbench_nb.metrics.board.board`): the first screen and the runs by rank in Jupyter,
    ``to_frame()`` one row per run in board order."""

    kind = "board"
    SOURCE = ("The runs by rank on the common tasks; capbench-nb board renders the whole page (pairs, cost, "
              "pass^j, each run's tasks).")

    def __repr__(self) -> str:
        from capbench_nb.outputs.board.files import metric_labels

        label = metric_labels(self)[self["metric"]]
        best = [f"#{i + 1} {plain_label(self['runs'][i]['run_id'], 30)}" for i in (self["groups"] or [[]])[0]]
        return (f"<board of {len(self['runs'])} runs by {label} on {self['common']['tasks']} common tasks: "
                f"group 1 {', '.join(best) or 'empty'}>")

    def _repr_html_(self) -> str:
        from capbench_nb.outputs.board import page as board_page
        from capbench_nb.outputs.html.tables import html_table, report_style_html

        columns, rows = board_page.run_table(self)  # the page's table, without each run's tasks
        table = html_table([c["label"] for c in columns], [r["cells"] for r in rows],
                           numeric=tuple(j for j, c in enumerate(columns) if c["num"]))
        return (f"{board_page.style_html()}{report_style_html()}{board_page.header_html(self)}"
                f'<div class="cb">{table}<p class="cb-note">{html_escape(self.SOURCE, max_len=None)}</p></div>')

    def to_frame(self) -> pd.DataFrame:
        """One row per run in board order: position, id, model, rank and its interval, group, each board metric's
        value, interval and counts (``pass@1``, ``pass@1_ci_low``, ...), cost per attempt and frontier."""
        from capbench_nb.outputs.board.files import board_metrics, board_order

        rows = []
        for i in board_order(self):
            e = self["runs"][i]
            interval = e["rank_interval"] or [None, None]
            row = {"position": i + 1, "run_id": e["run_id"], "model": e["model"], "rank": e["rank"],
                   "rank_low": interval[0], "rank_high": interval[1], "group": e["group"]}
            for name in board_metrics(self):
                rate = e["values"].get(name) or {}
                row.update({name: rate.get("value"), f"{name}_ci_low": rate.get("ci_low"),
                            f"{name}_ci_high": rate.get("ci_high"), f"{name}_successes": rate.get("successes"),
                            f"{name}_n": rate.get("n")})
            row.update(cost_per_attempt=e["cost_per_attempt"], frontier=e["frontier"])
            rows.append(row)
        counts = tuple(f"{name}_{part}" for name in board_metrics(self) for part in ("successes", "n"))
        return _typed(rows, strings=("run_id", "model"),
                      ints=("position", "rank", "rank_low", "rank_high", "group", *counts), bools=("frontier",))


class SliceTable(pd.DataFrame):
    """The table of :func:`capbench_nb.metrics.slices.metrics_by` (``cb.metrics_by``): the same DataFrame, one
    row per slice with (metric, statistic) columns (``table[("pass@1", "value")]``, ``table["pass@1"]``), shown
    in Jupyter and by ``repr`` as the report's slice table (one readable column per rate, intervals in
    percent) instead of 28 columns of six decimals; :meth:`tidy` gives one row per slice and rate.

    Anything derived from it (a column, ``.loc``, ``.xs``, arithmetic) is a plain DataFrame or Series.
    """

    @property
    def _constructor(self):
        return pd.DataFrame

    @property
    def dimensions(self) -> list[str]:
        """The slice dimensions: the index's names."""
        return [str(name) for name in self.index.names]

    def _entries(self) -> list[dict]:
        """Each row as a slice entry of metrics.json's shape (``values`` for the dimensions)."""
        rates = [m for m in dict.fromkeys(self.columns.get_level_values("metric")) if m not in ("slice", "attempts")]
        entries = []
        for key, row in zip(self.index, pd.DataFrame(self).itertuples(index=False, name=None)):
            cells = dict(zip(self.columns, row))
            values = list(key) if isinstance(self.index, pd.MultiIndex) else [key]
            entry = {"values": [None if is_null(v) else v for v in values], "tasks": cells[("slice", "tasks")],
                     "small": cells[("slice", "small")],
                     "attempts": {"total": cells[("attempts", "total")], "eligible": cells[("attempts", "eligible")]}}
            for name in rates:
                entry[name] = {field: None if is_null(cells[(name, field)]) else cells[(name, field)]
                               for field in _RATE_COLUMNS}
            entries.append(entry)
        return entries

    def __repr__(self) -> str:
        from capbench_nb.outputs.html.formatting import fmt_rate

        entries = self._entries()
        rates = [name for name in entries[0] if name not in ("values", "tasks", "small", "attempts")] if entries else []
        view = pd.DataFrame([
            {**{d: "(no value)" if v is None else str(v) for d, v in zip(self.dimensions, e["values"])},
             "tasks": f"{e['tasks']}{' (small)' if e['small'] else ''}",
             **{_label(name, self.attrs.get("k")): fmt_rate(e[name]) for name in rates},
             "attempts": f"{e['attempts']['total']} ({e['attempts']['eligible']} eligible)"} for e in entries])
        return view.to_string(index=False) if len(view) else "(no slices)"

    def _repr_html_(self) -> str:
        from capbench_nb.outputs.html.tables import report_style_html
        from capbench_nb.outputs.report.page import slice_table_html

        table = slice_table_html(self.dimensions, self._entries(), k=self.attrs.get("k"))
        return f'{report_style_html()}<div class="cb">{table}</div>'

    def tidy(self) -> pd.DataFrame:
        """One row per slice and rate: the dimensions, ``tasks``, ``small``, ``metric`` and the rate's
        ``value``, ``successes``, ``n``, ``ci_low``, ``ci_high``, ``coverage`` (nullable dtypes)."""
        rows = []
        for e in self._entries():
            for name in (n for n in e if n not in ("values", "tasks", "small", "attempts")):
                rows.append({**dict(zip(self.dimensions, e["values"])), "tasks": e["tasks"], "small": e["small"],
                             "metric": name, **e[name]})
        frame = pd.DataFrame(rows, columns=[*self.dimensions, "tasks", "small", "metric", *_RATE_COLUMNS], dtype=object)
        dtypes = {c: "Int64" if c in ("tasks", "successes", "n") else "Float64" for c in ("tasks", *_RATE_COLUMNS)}
        return frame.astype({**dtypes, "small": "boolean", "metric": "string"})  # slice values as given


def _label(name: str, k: int | None) -> str:
    metric = REGISTRY.get(name)
    return name if metric is None or k is None else metric.display(k)
