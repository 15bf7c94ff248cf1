"""The metrics.json document (spec section 7), assembled from a Run."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb._version import __version__
from capbench_nb.records.run import MANIFEST, RESULTS, Run
from capbench_nb.metrics.curves import prefix_rates_of, unbiased_curve_of
from capbench_nb.suite.check import lock_document
from capbench_nb.metrics.health import QUARANTINE_THRESHOLD, check_quarantine_threshold, health_document
from capbench_nb.metrics.prepare import Prepared
from capbench_nb.metrics.rates import attempt_counts_of, per_task_of
from capbench_nb.metrics.registry import HEADLINE
from capbench_nb.metrics.selection import selection_document
from capbench_nb.metrics.slices import slices_document
from capbench_nb.metrics.telemetry import telemetry_aggregates_of
from capbench_nb.format import ANOMALY_KINDS, METRICS_SCHEMA_VERSION, SELECTION, SELECTION_ANOMALIES

__all__ = ["compute_metrics"]


def _scalar(value: Any) -> Any:
    """A JSON-ready Python scalar: pandas/numpy nulls become None, numpy numbers Python ones."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def _column_values(column: pd.Series) -> list:
    """A column as Python scalars, nulls (NA, NaN) as None: what :func:`_scalar` gives, value by value."""
    array = column.array
    if isinstance(array, pd.arrays.BooleanArray | pd.arrays.IntegerArray | pd.arrays.FloatingArray):
        data = array._data
        missing = array._mask | np.isnan(data) if data.dtype.kind == "f" else array._mask
    elif isinstance(column.dtype, np.dtype) and column.dtype.kind in "biuf":
        data = column.to_numpy()
        missing = np.isnan(data) if data.dtype.kind == "f" else None
    elif isinstance(column.dtype, pd.StringDtype):
        return column.to_numpy(dtype="object", na_value=None).tolist()
    else:
        return [_scalar(v) for v in column.to_numpy(dtype="object")]
    values = data.tolist()
    if missing is not None:
        for i in np.flatnonzero(missing).tolist():
            values[i] = None
    return values


def _per_task_entries(table: pd.DataFrame) -> list[dict]:
    cols = {name: _column_values(table[name]) for name in table.columns}
    entries = []
    for task_id, planned, attempts, eligible, successes, k_eligible, first, wall, tokens, cost, oracle in zip(
        cols["task_id"], cols["planned_repeats"], cols["attempts"], cols["eligible"], cols["successes"],
        cols["k_eligible"], cols["first_success_attempt"], cols["cost_to_first_success_task_wall_ms"],
        cols["cost_to_first_success_total_tokens"], cols["cost_to_first_success_cost"], cols["oracle_best_score"],
    ):
        entries.append(
            {
                "task_id": task_id,
                "planned_repeats": planned,
                "attempts": attempts,
                "eligible": eligible,
                "successes": successes,
                "k_eligible": k_eligible,
                "first_success_attempt": first,
                "cost_to_first_success": None
                if first is None
                else {"task_wall_ms": wall, "total_tokens": tokens, "cost": cost},
                "oracle_best_score": oracle,
            }
        )
    return entries


def _anomaly_entries(anomalies: pd.DataFrame) -> list[dict]:
    out = []
    shared: dict[tuple, tuple] = {}  # one kind and reason string each: 10 million invalid lines share a few
    for kind, tid, att, line, reason, rule in anomalies[["kind", "task_id", "attempt", "line", "reason", "rule"]].itertuples(
        index=False, name=None
    ):
        texts = shared.get((kind, reason, rule))
        if texts is None:
            texts = (kind, reason if kind not in ("invalid_line", *SELECTION_ANOMALIES) else f"{reason} [rule: {rule}]")
            if len(shared) < 65536:
                shared[(kind, reason, rule)] = texts
        out.append({"kind": texts[0], "task_id": _scalar(tid), "attempt": _scalar(att), "line": int(line),
                    "reason": texts[1]})
    return out


def _curves(p: Prepared, k: int) -> dict:
    points = []
    for j, at, hat in prefix_rates_of(p, k):
        points.append({"j": int(j), "pass@j": {f: _scalar(v) for f, v in at.to_dict().items()},
                       "pass^j": {f: _scalar(v) for f, v in hat.to_dict().items()}})
    unbiased = unbiased_curve_of(p)
    return {
        "planned_prefix": points,
        "unbiased": {
            "estimator": "unbiased over all eligible attempts per task: pass@j = 1 - C(n-c,j)/C(n,j) "
            "(Chen et al. 2021), pass^j = C(c,j)/C(n,j) (Yao et al. 2024); j up to the smallest eligible n",
            "tasks": int(unbiased["tasks"].iloc[0]) if len(unbiased) else 0,
            "points": [{"j": int(r["j"]), "pass@j": float(r["pass@j"]), "pass^j": float(r["pass^j"])}
                       for r in unbiased.to_dict("records")],
        },
    }


def compute_metrics(run: Run, *, slices: tuple[str, ...] | list[str] = (),
                    quarantine_threshold: float = QUARANTINE_THRESHOLD,
                    clusters: tuple[str, ...] | list[str] = ()) -> dict:
    """Every metric of spec section 6 for ``run``, as the metrics.json document.

    The result depends only on the two input files, ``run.strict`` and the
    requested options (slice dimensions, quarantine threshold, cluster
    dimensions): no clock, no paths, no environment.  Keys
    follow spec section 7, plus ``suite``, ``status``, ``judge``,
    ``anomaly_counts``, per-task ``k_eligible``, ``curves`` (pass@j and pass^j
    from planned prefixes, and the unbiased estimators beside them),
    ``slices`` (one list per requested dimension) and ``health`` (spec section
    11: :func:`capbench_nb.metrics.health.health_document`, with the
    cluster-robust standard error for each of ``clusters``), and for a run whose manifest names a
    lock, ``lock`` (spec section 12: :func:`capbench_nb.suite.check.lock_document`, checked against
    the run's copy ``suite.lock.json`` when it has one).
    """
    health = {"quarantine_threshold": check_quarantine_threshold(quarantine_threshold),
              "clusters": list(dict.fromkeys(clusters))}
    # One preparation of the run (counted rows, plan positions, prefix counts) for every number
    # below: each metric gets this Prepared instead of going back through its public entry point.
    return _document(run, Prepared(run.records, run.plan), slices, health)


def _document(run: Run, p: Prepared, slices, health: dict) -> dict:
    plan, k = run.plan, run.k
    observed = int((p.count() > 0).sum())
    metrics = {m.name: m.of(p, k).to_dict() for m in HEADLINE}
    suite = run.manifest.get("suite")
    counts = run.anomalies["kind"].value_counts()
    lock = lock_document(run)
    return {
        "schema_version": METRICS_SCHEMA_VERSION,
        "run_id": run.run_id,
        "suite": {"name": suite.get("name"), "version": suite.get("version")} if isinstance(suite, dict) else None,
        "status": run.manifest.get("status"),
        "judge": run.judge,
        "k": int(k),
        "tasks": {"planned": int(len(plan)), "observed": observed},
        "attempts": attempt_counts_of(p),
        "metrics": metrics,
        "telemetry": telemetry_aggregates_of(p),
        "per_task": _per_task_entries(per_task_of(p, k)),
        "anomalies": _anomaly_entries(run.anomalies),
        # invalid_selection_line only when there is a selection file: a run without one keeps its bytes
        "anomaly_counts": {kind: int(counts.get(kind, 0)) for kind in ANOMALY_KINDS
                           if run.selection is not None or kind not in SELECTION_ANOMALIES},
        "curves": _curves(p, k),
        "slices": slices_document(run, slices, prepared=p),
        "health": health_document(run, **health, prepared=p),
        **({"selection": selection_document(run, prepared=p)} if run.selection is not None else {}),  # spec 9
        **({"lock": lock} if lock is not None else {}),  # spec section 12: only a run that names a lock
        "provenance": {
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "inputs": {MANIFEST: run.hashes[MANIFEST], RESULTS: run.hashes[RESULTS],
                       **({SELECTION: run.hashes[SELECTION]} if run.selection is not None else {})},
            "evidence_checked": run.evidence_checked,
            "options": {"allow_invalid": not run.strict, "slices": list(slices), **health},
        },
    }
