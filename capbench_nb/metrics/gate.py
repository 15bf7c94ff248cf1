r"""A regression gate for CI (spec section 15): is CANDIDATE worse than BASELINE by more than a margin?

For each chosen metric M (pass@1, pass@k, pass^k, selected@k) the tasks are
paired as ``compare`` pairs them
(:func:`capbench_nb.metrics.comparison.run_paired_outcomes`), and the paired
table gives :math:`\Delta = M(\text{candidate}) - M(\text{baseline})` with
Newcombe's hybrid score interval at confidence :math:`1 - 2\alpha`
(:func:`capbench_nb.metrics.comparison.paired_entry`): a two-sided 90% interval
by default, i.e. a one-sided non-inferiority test at 5%.  With margin D:

============  ====================================================
``pass``      ci_low > -D
``fail``      ci_low <= -D and ci_high < 0
inconclusive  otherwise (ci_low <= -D and ci_high >= 0), and n = 0
============  ====================================================

``needed_tasks`` (inconclusive only): the paired task count at which the
observed discordance :math:`\psi = (b + c)/n` would show non-inferiority at
margin D with power 0.8 if the true difference were 0,
:math:`\lceil (z_{1-\alpha} + z_{0.8})^2 \psi / D^2 \rceil`
(:func:`capbench_nb.metrics.power.noninferiority_tasks`; null when n = 0,
:math:`\psi` = 0 or D = 0).

Compatibility: ``compare``'s warnings
(:func:`capbench_nb.metrics.compatibility.compatibility_warnings`) whose kind is
not allowed (``--allow-diff``) make the overall decision ``incompatible``; each
metric keeps its numeric decision.  Otherwise the overall decision is the worst
metric, fail > inconclusive > pass.  Exit status (:data:`EXIT_CODES`): 0 pass,
1 fail, 4 inconclusive, 5 incompatible (2 is invalid input).

The same run directory given twice is allowed: identical runs cannot regress,
so every metric and the gate ``pass`` (trivially; ``same_run`` is true and
every output says so), whatever the width of the interval.

:func:`gate_document` is gate.json's content (written with gate.md and junit.xml
by :mod:`capbench_nb.outputs.gate`); ``cb.gate`` loads two run directories and
returns it as a :class:`~capbench_nb.outputs.gate.result.Gate`, which shows
itself as the verdict table in Jupyter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb._version import __version__
from capbench_nb.metrics.comparison import INTERVAL_METHOD, PAIRED_METRICS, paired_entry, run_paired_outcomes
from capbench_nb.metrics.compatibility import blocking_warnings, check_warning_kinds, compatibility_warnings
from capbench_nb.metrics.power import noninferiority_tasks
from capbench_nb.metrics.prepare import as_bool, counted_attempts
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.records.run import Run

__all__ = [
    "GATE_SCHEMA_VERSION",
    "GATE_METRICS",
    "DEFAULT_MARGIN",
    "DEFAULT_ALPHA",
    "NEEDED_POWER",
    "EXIT_CODES",
    "check_gate_options",
    "metric_decision",
    "overall_decision",
    "gate_document",
]

GATE_SCHEMA_VERSION = "capbench.gate/1"
#: The metrics a gate can check, in the order they are reported when several are chosen.
GATE_METRICS = PAIRED_METRICS + ("selected@k",)
DEFAULT_MARGIN = 0.02
DEFAULT_ALPHA = 0.05
#: The power ``needed_tasks`` is computed for.
NEEDED_POWER = 0.8
#: Per-metric decisions from best to worst.
DECISIONS = ("pass", "inconclusive", "fail")
#: Exit status of ``capbench-nb gate`` per overall decision (2 is invalid input).
EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 4, "incompatible": 5}


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def check_gate_options(*, metrics: Sequence[str] | str | None = None, margin: Any = DEFAULT_MARGIN,
                       alpha: Any = DEFAULT_ALPHA, allow_diff=()) -> tuple[tuple[str, ...], float, float,
                                                                           tuple[str, ...]]:
    """The gate's options, checked: ``(metrics, margin, alpha, allowed warning kinds)``.

    Parameters
    ----------
    metrics : str or sequence of str, optional
        Metric names from :data:`GATE_METRICS`; repeats dropped, order kept; none means pass@1.
    margin : float
        D, in [0, 1).
    alpha : float
        One-sided level, in (0, 0.5).
    allow_diff : iterable of str
        Warning kinds of ``compare`` (:data:`capbench_nb.metrics.compatibility.WARNING_CODES`).

    Raises
    ------
    ValueError
        One sentence naming the first bad option.
    """
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics or ())
    names = tuple(dict.fromkeys(names)) or ("pass@1",)
    for name in names:
        if name not in GATE_METRICS:
            raise ValueError(f"unknown metric {name!r} for the gate; the metrics are {', '.join(GATE_METRICS)}")
    margin = _number("the margin", margin)
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"the margin must lie in [0, 1), got {margin!r}")
    alpha = _number("alpha", alpha)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    return names, margin, alpha, check_warning_kinds(allow_diff)


def metric_decision(ci_low: float | None, ci_high: float | None, margin: float) -> str:
    """``pass`` when ci_low > -D, ``fail`` when ci_low <= -D and ci_high < 0, else ``inconclusive``.

    No interval (n = 0) is ``inconclusive``.
    """
    if ci_low is None or ci_high is None:
        return "inconclusive"
    if ci_low > -margin:
        return "pass"
    return "fail" if ci_high < 0 else "inconclusive"


def overall_decision(decisions: Sequence[str], warnings: Sequence[dict]) -> str:
    """``incompatible`` when a warning is left, else the worst decision (fail > inconclusive > pass)."""
    if warnings:
        return "incompatible"
    return max(decisions, key=DECISIONS.index, default="pass")


# --------------------------------------------------------------------------- per metric


def _attempt_outcomes(run: Run) -> dict[str, list[dict]]:
    """Per task, its counted attempts in attempt order: ``{"attempt", "success", "failure_class", "eligible"}``."""
    a = counted_attempts(run.records, plan=run.plan)
    frame = pd.DataFrame({
        "task_id": a["task_id"].astype(object).to_numpy(),
        "attempt": a["attempt"].to_numpy(dtype="int64"),
        "success": as_bool(a["success"]),
        "failure_class": a["failure_class"].astype(object).to_numpy(),
        "eligible": as_bool(a["agent_eligible"]),
    }).sort_values(["task_id", "attempt"], kind="stable")
    out: dict[str, list[dict]] = {}
    for row in frame.itertuples(index=False):
        fc = row.failure_class
        out.setdefault(row.task_id, []).append({
            "attempt": int(row.attempt), "success": bool(row.success),
            "failure_class": None if fc is None or fc is pd.NA or (isinstance(fc, float) and math.isnan(fc))
            else str(fc),
            "eligible": bool(row.eligible)})
    return out


def _selected(run: Run) -> dict[str, int | None]:
    per_task = selection_metrics(run).per_task
    return {t: (None if pd.isna(s) else int(s)) for t, s in zip(per_task["task_id"], per_task["selected"])}


def _regressions(metric: str, tasks: list[str], a: np.ndarray, b: np.ndarray, k: int, baseline: Run,
                 candidate: Run) -> list[dict]:
    """Tasks the baseline passed and the candidate did not, baseline plan order, with attempts 1..k of each run."""
    lost = [t for t, x, y in zip(tasks, a, b) if x and not y]
    if not lost:
        return []
    outcomes = (_attempt_outcomes(baseline), _attempt_outcomes(candidate))
    picks = (_selected(baseline), _selected(candidate)) if metric == "selected@k" else None
    out = []
    for t in lost:
        entry = {"task_id": str(t)}
        for i, side in enumerate(("baseline", "candidate")):
            entry[side] = [o for o in outcomes[i].get(t, []) if o["attempt"] <= k]
            if picks is not None:
                entry[f"{side}_selected"] = picks[i].get(t)
        out.append(entry)
    return out


def _metric_entry(baseline: Run, candidate: Run, metric: str, *, margin: float, alpha: float,
                  same_run: bool) -> dict:
    tasks, a, b, k = run_paired_outcomes(baseline, candidate, metric, labels=("the baseline", "the candidate"))
    entry = paired_entry(k, a, b, 1.0 - 2.0 * alpha)
    n = entry["n_pairs"]
    decision = "pass" if same_run else metric_decision(entry["ci_low"], entry["ci_high"], margin)
    needed = None
    if decision == "inconclusive" and n:
        needed = noninferiority_tasks((entry["a_only"] + entry["b_only"]) / n, margin, alpha=alpha,
                                      power=NEEDED_POWER)
    return {
        "metric": metric,
        "k": int(k),
        "n": int(n),
        "baseline": entry["a_value"],
        "candidate": entry["b_value"],
        "delta": entry["difference"],
        "ci_low": entry["ci_low"],
        "ci_high": entry["ci_high"],
        "decision": decision,
        "needed_tasks": needed,
        "regressions": _regressions(metric, tasks, a, b, k, baseline, candidate),
        "discordant": {"baseline_only": entry["a_only"], "candidate_only": entry["b_only"]},
    }


# --------------------------------------------------------------------------- the document


def gate_document(baseline: Run, candidate: Run, *, metrics: Sequence[str] | str | None = None,
                  margin: float = DEFAULT_MARGIN, alpha: float = DEFAULT_ALPHA, allow_diff=(),
                  same_run: bool | None = None) -> dict:
    """gate.json of ``candidate`` against ``baseline`` (spec section 15).

    Parameters
    ----------
    baseline, candidate : Run
        Two loaded runs.
    metrics, margin, alpha, allow_diff
        As in :func:`check_gate_options`.
    same_run : bool, optional
        Whether both are the same run directory (``cb.gate`` and ``capbench-nb gate`` compare the directories'
        real paths); by default, whether they are one loaded run or were loaded from equal paths.

    Returns
    -------
    dict
        ``schema_version`` (``capbench.gate/1``), ``decision``, ``margin``,
        ``alpha``, ``warnings`` (the compatibility warnings left after
        ``allow_diff``), ``metrics`` (per metric ``metric, k, n, baseline,
        candidate, delta, ci_low, ci_high, decision, needed_tasks,
        regressions, discordant``), then ``same_run``, ``allowed_warnings``,
        ``runs`` (run ids and input hashes), ``method``.  No clock and no
        paths: the same inputs give the same document.

    Raises
    ------
    ValueError
        A bad option, or selected@k for a run without selection.jsonl.
    """
    names, margin, alpha, allowed = check_gate_options(metrics=metrics, margin=margin, alpha=alpha,
                                                       allow_diff=allow_diff)
    if same_run is None:  # the callers that hold paths (cb.gate, capbench-nb gate) compare their real paths
        same_run = baseline is candidate or Path(baseline.path) == Path(candidate.path)
    warnings = compatibility_warnings(baseline, candidate)
    left = blocking_warnings(warnings, allowed)
    entries = [_metric_entry(baseline, candidate, name, margin=margin, alpha=alpha, same_run=same_run)
               for name in names]
    confidence = 1.0 - 2.0 * alpha
    return {
        "schema_version": GATE_SCHEMA_VERSION,
        "decision": overall_decision([e["decision"] for e in entries], left),
        "margin": margin,
        "alpha": alpha,
        "warnings": left,
        "metrics": entries,
        "same_run": bool(same_run),
        "allowed_warnings": [w for w in warnings if w not in left],
        "runs": {side: {"run_id": run.run_id, "k": int(run.k), "inputs": dict(sorted(run.hashes.items()))}
                 for side, run in (("baseline", baseline), ("candidate", candidate))},
        "method": {
            "interval": f"{100 * confidence:g}% {INTERVAL_METHOD} interval of candidate minus baseline on the "
                        f"paired tasks (compare's pairing); a one-sided test at {alpha:g}",
            "decision": "pass: ci_low > -margin; fail: ci_low <= -margin and ci_high < 0; inconclusive otherwise "
                        "(and with no paired task)",
            "needed_tasks": f"ceil((z_(1-alpha) + z_{NEEDED_POWER:g})^2 * psi / margin^2), psi = (b + c) / n the "
                            "observed discordance, a true difference of 0",
            "toolkit_version": __version__,
        },
    }
