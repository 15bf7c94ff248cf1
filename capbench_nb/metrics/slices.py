"""Metrics per slice of a run: by platform, app, model, or any grouping of the researcher's own.

A slice dimension is one of

- a label of the plan's tasks (any key other than ``task_id`` and ``repeats``);
- a key of the manifest's ``config`` (one value for the whole run);
- a derived dimension registered by name with :func:`register_slice`: a
  function of the run that returns one value per planned task.

Adding a slice needs no change to the package::

    import capbench_nb as cb
    cb.register_slice("family", lambda run: run.plan["task_id"].str.split(".").str[0])
    cb.metrics_by(run, by="family")

Every slice is a set of planned tasks; its metrics are the run's metrics
restricted to those tasks, with coverage over the tasks planned in the slice.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pandas as pd

from capbench_nb.records.exact_reader import json_value
from capbench_nb.records.run import Run
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.metrics.rates import attempt_counts_of, pass_rate_of
from capbench_nb.format import CLASS_KEYS

__all__ = ["UnknownSliceError", "register_slice", "unregister_slice", "registered_slices", "slice_values", "metrics_by", "SMALL_SLICE"]

#: Slices with fewer planned tasks than this are marked ``small``: their
#: intervals are wide and their point estimates move a lot with one task.
SMALL_SLICE = 10

_REGISTRY: dict[str, Callable[[Run], Iterable]] = {}


class UnknownSliceError(KeyError):
    """A slice dimension that is neither registered, nor a plan label, nor a config key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown slice dimension"

#: The slice rates: name -> (k, or None for the run's k; pass^k rather than pass@k).
_RATES = {"pass@1": (1, False), "pass@k": (None, False), "pass^k": (None, True)}
_RATE_FIELDS = ("value", "successes", "n", "ci_low", "ci_high", "coverage")


def register_slice(name: str, function: Callable[[Run], Iterable]) -> None:
    """Register a derived slice dimension.

    Parameters
    ----------
    name : str
        The dimension's name, as used in ``by=`` and ``--slice``.  It shadows
        a plan label or config key of the same name.
    function : callable
        ``function(run)`` returns one value per planned task, in plan order
        (a list, array or Series aligned with ``run.plan``).
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a slice dimension needs a non-empty name")
    _REGISTRY[name] = function


def unregister_slice(name: str) -> None:
    """Remove a derived slice dimension (no error when absent)."""
    _REGISTRY.pop(name, None)


def registered_slices() -> list[str]:
    """Names of the derived dimensions registered so far."""
    return sorted(_REGISTRY)


def slice_values(run: Run, dimension: str) -> pd.Series:
    """The value of ``dimension`` for every planned task, indexed like ``run.plan``.

    Raises
    ------
    KeyError
        When the dimension is neither registered, nor a plan label, nor a config key.
    """
    if dimension in _REGISTRY:
        values = _REGISTRY[dimension](run)
        series = pd.Series(list(values) if not isinstance(values, pd.Series) else values.to_numpy(), index=run.plan.index)
        if len(series) != len(run.plan):
            raise ValueError(f"slice {dimension!r} gave {len(series)} values for {len(run.plan)} planned tasks")
        return series
    if dimension in run.plan.columns and dimension not in ("task_id", "planned_repeats"):
        return run.plan[dimension].astype(object)
    config = run.manifest.get("config") or {}
    if dimension in config:
        return pd.Series([config[dimension]] * len(run.plan), index=run.plan.index, dtype=object)
    labels = [c for c in run.plan.columns if c not in ("task_id", "planned_repeats")]
    raise UnknownSliceError(
        f"unknown slice dimension {dimension!r}; plan labels: {labels or 'none'}, "
        f"config keys: {sorted(config) or 'none'}, registered: {registered_slices() or 'none'}"
    )


def _slice_rows(run: Run, dims: list[str], confidence: float, prepared: Prepared | None = None) -> list[dict]:
    """One dict per slice, sorted by value (missing values last): ``key`` (the values of ``dims``),
    ``tasks``, ``small``, ``rates`` (metric name -> :class:`Rate`) and ``counts`` (:func:`attempt_counts`).

    The one computation behind :func:`metrics_by` and :func:`slices_document`; ``prepared`` is the
    run's :class:`Prepared` if the caller made it.  Each slice is prepared once for all its numbers.
    """
    keys = pd.DataFrame({d: pd.Series([json_value(v) for v in slice_values(run, d).astype(object)], dtype=object)
                         for d in dims})
    attempts = (prepare(run.records, run.plan) if prepared is None else prepared).counted
    task_of = attempts["task_id"].astype(object)
    groups: dict[tuple, list[int]] = {}
    for position, combo in enumerate(keys.itertuples(index=False, name=None)):
        groups.setdefault(combo, []).append(position)

    def order(combo: tuple):
        return tuple((v is None, str(type(v).__name__), v if v is not None else "") for v in combo)

    rows = []
    for combo in sorted(groups, key=order):
        sub_plan = run.plan.iloc[groups[combo]].reset_index(drop=True)
        sub = attempts[task_of.isin(set(sub_plan["task_id"].astype(object))).to_numpy()]
        p = prepare(sub, sub_plan)
        rates = {name: pass_rate_of(p, run.k if k is None else k, every=every, confidence=confidence)
                 for name, (k, every) in _RATES.items()}
        rows.append({"key": combo, "tasks": len(sub_plan), "small": len(sub_plan) < SMALL_SLICE,
                     "rates": rates, "counts": attempt_counts_of(p)})
    return rows


def _slice_index(dims: list[str], keys: list[tuple]) -> pd.Index:
    if len(dims) == 1:  # slice values as given (None for missing), not coerced to a string dtype
        return pd.Index([key[0] for key in keys], dtype=object, name=dims[0])
    return pd.MultiIndex.from_arrays([[key[i] for key in keys] for i in range(len(dims))], names=dims)


def metrics_by(run: Run, by: str | list[str], *, confidence: float = 0.95) -> pd.DataFrame:
    """pass@1, pass@k and pass^k per slice, with Wilson intervals, n, coverage and attempt counts.

    Parameters
    ----------
    run : Run
        A loaded run.
    by : str or list of str
        Slice dimension(s); several give one row per combination of values.
    confidence : float, default 0.95
        Level of the Wilson intervals.

    Returns
    -------
    DataFrame
        One row per slice, indexed by the slice value (named after the dimension; a
        MultiIndex for several dimensions), sorted by value with missing values last (None;
        NaN in a MultiIndex level).  Columns are a (metric, statistic) MultiIndex:

        - ``("slice", "tasks")`` (planned in the slice), ``("slice", "small")`` (fewer than
          :data:`SMALL_SLICE` tasks);
        - for each of ``pass@1``, ``pass@k``, ``pass^k``: ``value``, ``successes``, ``n``,
          ``ci_low``, ``ci_high``, ``coverage`` (within the slice); nulls stay null (Float64);
        - ``("attempts", "total")``, ``("attempts", "eligible")`` and one count per class
          (``success``, ``agent``, ``environment``, ...).

        ``table["pass@1"]`` is one metric's statistics, ``table.xs("value", axis=1,
        level="statistic")`` every metric's value.  Slice rows add up to the whole run in
        tasks, n, successes and counts.  metrics.json's ``slices`` holds the same numbers
        (:func:`slices_document`).  ``table.attrs["k"]`` is the run's k.
    """
    dims = [by] if isinstance(by, str) else list(by)
    rows = _slice_rows(run, dims, confidence)
    data: dict[tuple[str, str], pd.api.extensions.ExtensionArray | list] = {
        ("slice", "tasks"): pd.array([r["tasks"] for r in rows], dtype="int64"),
        ("slice", "small"): pd.array([r["small"] for r in rows], dtype="bool"),
    }
    for name in _RATES:
        for field in _RATE_FIELDS:
            values = [getattr(r["rates"][name], field) for r in rows]
            data[(name, field)] = pd.array(values, dtype="int64" if field in ("successes", "n") else "Float64")
    data[("attempts", "total")] = pd.array([r["counts"]["total"] for r in rows], dtype="int64")
    data[("attempts", "eligible")] = pd.array([r["counts"]["eligible"] for r in rows], dtype="int64")
    for key in CLASS_KEYS:
        data[("attempts", key)] = pd.array([r["counts"]["by_failure_class"][key] for r in rows], dtype="int64")
    table = pd.DataFrame(data, index=_slice_index(dims, [r["key"] for r in rows]))
    table.columns = pd.MultiIndex.from_tuples(list(data), names=["metric", "statistic"])
    table.attrs["k"] = run.k  # what "k" is in the column names, for a display of the table
    return table


def slices_document(run: Run, dimensions: Iterable[str], *, confidence: float = 0.95,
                    prepared: Prepared | None = None) -> dict:
    """The ``slices`` object of metrics.json: per dimension, one entry per value.

    Each entry is ``{"value", "tasks", "small", "pass@1", "pass@k", "pass^k",
    "attempts": {"total", "eligible", "by_failure_class"}}`` with the metric
    objects shaped exactly like the headline ones.
    """
    out = {}
    for dim in dimensions:
        entries = []
        for row in _slice_rows(run, [dim], confidence, prepared):
            entry = {"value": row["key"][0], "tasks": int(row["tasks"]), "small": bool(row["small"])}
            for name in _RATES:
                entry[name] = {f: json_value(v) for f, v in row["rates"][name].to_dict().items()}
            counts = row["counts"]
            entry["attempts"] = {
                "total": int(counts["total"]),
                "eligible": int(counts["eligible"]),
                "by_failure_class": {key: int(counts["by_failure_class"][key]) for key in CLASS_KEYS},
            }
            entries.append(entry)
        out[dim] = entries
    return out
