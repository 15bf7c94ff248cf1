"""Telemetry aggregates (capbench_nb.metrics.telemetry): eligible attempts only (setup_ms: all),
nulls kept apart from zeros, numpy's linear percentiles, exact sums."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.metrics.telemetry import telemetry_aggregate

from conftest import manifest, record, write_run


def test_telemetry_aggregates_eligible_only_except_setup(tmp_path):
    records = [
        record("t1", 1, "S", telemetry={"task_wall_ms": 1, "setup_ms": 10, "tool_calls": 4, "recovery_attempted": True}),
        record("t1", 2, "A", telemetry={"task_wall_ms": 2, "setup_ms": 20, "tool_calls": 0, "recovery_attempted": False}),
        record("t1", 3, "A", telemetry={"task_wall_ms": 3, "setup_ms": None, "tool_calls": None}),
        record("t1", 4, "A", telemetry={"task_wall_ms": 4, "setup_ms": 40, "tool_calls": 7, "recovery_attempted": True}),
        # ineligible: excluded from everything but setup_ms
        record("t1", 5, "E", telemetry={"task_wall_ms": 1000, "setup_ms": 50, "tool_calls": 1000, "recovery_attempted": True}),
    ]
    run = cb.load_run(write_run(tmp_path / "run", manifest([("t1", 5)]), records))
    agg = cb.telemetry_aggregates(run.attempts, plan=run.plan)
    assert agg["task_wall_ms"] == {"n": 4, "nulls": 0, "sum": 10.0, "mean": 2.5, "median": 2.5,
                                   "p90": pytest.approx(3.7), "min": 1.0, "max": 4.0}
    assert agg["setup_ms"] == {"n": 4, "nulls": 1, "sum": 120.0, "mean": 30.0, "median": 30.0,
                               "p90": pytest.approx(47.0), "min": 10.0, "max": 50.0}
    # a zero is a value; a null is not: mean over 4, 0 and 7 is 11/3
    assert agg["tool_calls"]["n"] == 3 and agg["tool_calls"]["nulls"] == 1
    assert agg["tool_calls"]["sum"] == 11 and isinstance(agg["tool_calls"]["sum"], int)
    assert agg["tool_calls"]["mean"] == 11 / 3
    assert agg["tool_calls"]["median"] == 4.0
    assert agg["recovery_attempted"] == {"n": 3, "nulls": 1, "true": 2}
    assert agg["recovery_succeeded"] == {"n": 0, "nulls": 4, "true": None}
    assert agg["input_tokens"] == {"n": 0, "nulls": 4, "sum": None, "mean": None, "median": None,
                                   "p90": None, "min": None, "max": None}


def test_percentiles_follow_numpy_linear():
    values = pd.array([5, 1, 9, 3, 3, 8, None], dtype="Int64")
    agg = telemetry_aggregate(pd.Series(values))
    data = np.array([5, 1, 9, 3, 3, 8])
    assert agg["median"] == np.median(data)
    assert agg["p90"] == np.percentile(data, 90)
    assert (agg["min"], agg["max"], agg["sum"]) == (1, 9, 29)


def test_integer_sum_does_not_overflow():
    big = 2**53 - 1
    agg = telemetry_aggregate(pd.Series(pd.array([big] * 4096, dtype="Int64")))
    assert agg["sum"] == big * 4096  # exceeds int64: summed exactly
    assert agg["mean"] == float(big)


def test_float_sum_is_correctly_rounded():
    values = [0.1] * 10 + [1e15, -1e15 + 0.5]
    agg = telemetry_aggregate(pd.Series(pd.array([abs(v) for v in values], dtype="Float64")))
    assert agg["sum"] == math.fsum(abs(v) for v in values)
