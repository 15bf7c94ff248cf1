"""The gate's verdict as an object for Python and Jupyter: ``cb.gate(...)`` returns a :class:`Gate`."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from capbench_nb.metrics.gate import EXIT_CODES
from capbench_nb.records.views import escape_text as escape

__all__ = ["Gate"]


def _fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _fmt_pp(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} pp"


@dataclass(frozen=True)
class Gate:
    """The gate's verdict: ``document`` is gate.json's content.

    ``decision`` and ``exit_code`` summarise it, :meth:`table` is the per-metric
    verdict table; in Jupyter the object shows itself as that table.
    """

    document: dict

    @property
    def decision(self) -> str:
        return self.document["decision"]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def to_dict(self) -> dict:
        return self.document

    def table(self) -> pd.DataFrame:
        """One row per metric: ``metric, decision, n, baseline, candidate, delta, ci_low, ci_high, needed_tasks,
        regressions`` (the count), nullable dtypes."""
        rows = [{key: e[key] for key in ("metric", "decision", "n", "baseline", "candidate", "delta", "ci_low",
                                         "ci_high", "needed_tasks")} | {"regressions": len(e["regressions"])}
                for e in self.document["metrics"]]
        frame = pd.DataFrame(rows, columns=["metric", "decision", "n", "baseline", "candidate", "delta", "ci_low",
                                            "ci_high", "needed_tasks", "regressions"])
        for column in ("n", "needed_tasks", "regressions"):
            frame[column] = pd.array(frame[column].tolist(), dtype="Int64")
        for column in ("baseline", "candidate", "delta", "ci_low", "ci_high"):
            frame[column] = pd.array(frame[column].tolist(), dtype="Float64")
        frame["metric"] = frame["metric"].astype("string")
        frame["decision"] = frame["decision"].astype("string")
        return frame

    def __repr__(self) -> str:
        doc = self.document
        parts = [f"{e['metric']} {e['decision']} ({_fmt_pp(e['delta'])}, n = {e['n']})" for e in doc["metrics"]]
        extra = "; same run: passes trivially" if doc["same_run"] else ""
        warn = f"; warnings: {', '.join(w['code'] for w in doc['warnings'])}" if doc["warnings"] else ""
        return f"<gate {doc['decision']}: {'; '.join(parts)}{warn}{extra}>"

    def _repr_html_(self) -> str:
        doc = self.document
        level = f"{100 * (1 - 2 * doc['alpha']):g}%"
        head = (f"<p><b>gate: {escape(doc['decision'])}</b> &middot; candidate {escape(str(doc['runs']['candidate']['run_id']))}"
                f" vs baseline {escape(str(doc['runs']['baseline']['run_id']))} &middot; margin "
                f"{100 * doc['margin']:g} pp &middot; alpha {doc['alpha']:g}</p>")
        notes = "".join(f"<p>warning [{escape(w['code'])}]: {escape(str(w['message']))}</p>" for w in doc["warnings"])
        if doc["same_run"]:
            notes += "<p>baseline and candidate are the same run directory: the gate passes trivially.</p>"
        cells = "".join(
            f"<tr><td>{escape(e['metric'])}</td><td><b>{escape(e['decision'])}</b></td><td>{e['n']}</td>"
            f"<td>{_fmt_pct(e['baseline'])}</td><td>{_fmt_pct(e['candidate'])}</td><td>{_fmt_pp(e['delta'])}</td>"
            f"<td>[{_fmt_pp(e['ci_low'])}, {_fmt_pp(e['ci_high'])}]</td>"
            f"<td>{'' if e['needed_tasks'] is None else e['needed_tasks']}</td><td>{len(e['regressions'])}</td></tr>"
            for e in doc["metrics"])
        return (f'<div class="capbench-gate">{head}{notes}<table><thead><tr><th>metric</th><th>decision</th>'
                f"<th>n</th><th>baseline</th><th>candidate</th><th>&Delta;</th><th>{level} CI</th>"
                f"<th>needed tasks</th><th>regressions</th></tr></thead><tbody>{cells}</tbody></table></div>")
