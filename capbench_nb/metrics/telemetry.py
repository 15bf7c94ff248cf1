"""Telemetry aggregates of a run (spec sections 6 and 8): nulls kept apart, sums exact."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from capbench_nb.format import ALL_ATTEMPTS_TELEMETRY, TELEMETRY_FIELDS
from capbench_nb.metrics.inputs import metric_inputs
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.records.run import Run

__all__ = ["telemetry_aggregate", "telemetry_aggregates", "telemetry_aggregates_of"]


def telemetry_aggregate(values: pd.Series) -> dict:
    """Aggregate one telemetry column, nulls kept apart (spec sections 6 and 8).

    Numeric: ``{"n", "nulls", "sum", "mean", "median", "p90", "min", "max"}``,
    every statistic None when ``n == 0``.  Median and p90 interpolate linearly
    between order statistics (numpy's default).  Sums are exact for integers
    and correctly rounded for floats (:func:`math.fsum`), so they do not depend
    on row order.  Boolean: ``{"n", "nulls", "true"}``.
    """
    return _aggregate(values, None)


def _exact_sum(arr: np.ndarray) -> float:
    """``math.fsum(arr)``; when every value is a non-negative whole number and every partial sum stays
    below 2**53, a plain float sum is exact, hence the same correctly rounded value, and faster."""
    if len(arr) and (arr >= 0).all() and float(arr.max()) * len(arr) < 2.0**53 and not np.signbit(arr).any() \
            and (arr == np.floor(arr)).all():
        return float(arr.sum())
    return math.fsum(arr)


def telemetry_aggregates(attempts: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None) -> dict:
    """Aggregates of every telemetry field over eligible attempts (``setup_ms``: all attempts).

    Takes a loaded run, or an attempts table with ``plan=``.

    Returns
    -------
    dict
        Field name (spec section 5 order) to :func:`telemetry_aggregate`.
    """
    attempts, plan, _ = metric_inputs(attempts, plan, function="telemetry_aggregates")
    return telemetry_aggregates_of(prepare(attempts, plan))


def telemetry_aggregates_of(p: Prepared) -> dict:
    """:func:`telemetry_aggregates` of an already prepared run."""
    return {name: _aggregate(p.counted[name], None if name in ALL_ATTEMPTS_TELEMETRY else p.eligible)
            for name in TELEMETRY_FIELDS}


def _aggregate(values: pd.Series, rows: np.ndarray | None) -> dict:
    """:func:`telemetry_aggregate` of ``values[rows]``, without building the subset Series."""
    if rows is None:
        rows = np.ones(len(values), dtype=bool)
    null = values.isna().to_numpy()
    total = int(rows.sum())
    keep = rows & ~null
    n = int(keep.sum())
    if pd.api.types.is_bool_dtype(values.dtype):
        return {"n": n, "nulls": total - n, "true": int(values.to_numpy(dtype="bool", na_value=False)[keep].sum()) if n else None}
    if n == 0:
        return {"n": 0, "nulls": total, "sum": None, "mean": None, "median": None, "p90": None, "min": None, "max": None}
    integer = pd.api.types.is_integer_dtype(values.dtype)
    if integer:
        arr = values.to_numpy(dtype="int64", na_value=0)[keep]
        if float(np.abs(arr).max()) * n < 2.0**62:
            exact = int(arr.sum())
        else:  # would overflow int64: add as Python integers
            exact = sum(int(v) for v in arr)
        mean = exact / n
        lo, hi = int(arr.min()), int(arr.max())
    else:
        arr = values.to_numpy(dtype="float64", na_value=0.0)[keep]
        exact = _exact_sum(arr)
        mean = exact / n
        lo, hi = float(arr.min()), float(arr.max())
    median, p90 = np.percentile(arr, [50, 90])
    return {"n": n, "nulls": total - n, "sum": exact, "mean": mean, "median": float(median), "p90": float(p90), "min": lo, "max": hi}
