"""Comparing two runs on the same suite: compatibility, paired analysis, telemetry deltas.

:func:`compare_runs` turns two loaded runs into the comparison.json document
(schema ``capbench.comparison/1``); :func:`write_comparison` writes it with
``comparison.md`` beside it (:mod:`capbench_nb.outputs.comparison.files`, which also holds
the displays of the comparison notebook, ``notebooks/compare_runs.ipynb``).

Compatibility
-------------
Each difference that can make the two runs' numbers mean different things is a named warning
``{"code", "message", "details"}`` (:mod:`capbench_nb.metrics.compatibility`, where the codes are
described); ``compatibility.unchecked`` lists what could not be checked.

Paired analysis
---------------
A task is *paired for pass@1* when it is planned in both runs and its attempt 1
is present and eligible in both.  It is *paired for pass@k and pass^k* when it
is k-eligible in both runs (attempts 1..k present and eligible) for the paired
k = min(k_A, k_B).  Over the paired tasks, the 2x2 table ``both``, ``a_only``
(A succeeded, B failed), ``b_only`` and ``neither`` gives the difference
B minus A, ``(b_only - a_only) / n_pairs``, Newcombe's (1998) hybrid score
interval (method 10, :func:`~capbench_nb.metrics.stats.paired_difference_interval`) and
the exact McNemar test (:func:`~capbench_nb.metrics.stats.mcnemar_exact`).  With no
paired task, difference, interval and p-value are null; with paired tasks but
no discordant one, the p-value is 1.  When both runs have a selection file
(best-of-k with a selector, spec section 9) and the same k, ``selected@k`` is
paired too: the tasks entering both runs' selection metrics, each task's outcome
whether its run's selector picked a success.

Telemetry deltas
----------------
*Paired eligible attempts* are the (task, attempt number) pairs that are
eligible in both runs (attempts within each run's planned repeats, tasks
planned in both), restricted for each field to pairs where both values are
non-null: the two medians are then over the same units.  The delta is
median(B) minus median(A) (numpy's linear interpolation), with a percentile
bootstrap interval that resamples tasks with replacement (all of a task's
paired attempts move together: attempts of one task are not independent), from
a :class:`numpy.random.Generator` seeded with ``seed`` (a fresh one per field).
Null when no pair has both values.

The document depends only on the two runs' inputs (and, for the
evaluation-contract check, their attempt.json files) and the options: no
clock, no paths; the same inputs give byte-identical comparison.json.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from capbench_nb._version import __version__
from capbench_nb.format import SELECTION
from capbench_nb.metrics.compatibility import compatibility, plan_ids, run_identity, show_value
from capbench_nb.metrics.prepare import as_bool, counted_attempts, prefix_outcomes
from capbench_nb.metrics.registry import paired_rates, task_outcome
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.metrics.stats import mcnemar_exact, paired_difference_interval
from capbench_nb.records.run import MANIFEST, RESULTS, Run

__all__ = [
    "COMPARISON_SCHEMA_VERSION",
    "PAIRED_METRICS",
    "TELEMETRY_DELTA_FIELDS",
    "INTERVAL_METHOD",
    "compare_runs",
    "paired_outcomes",
    "run_paired_outcomes",
    "paired_entry",
]

COMPARISON_SCHEMA_VERSION = "capbench.comparison/1"

#: The paired metrics, in document order: the registry's rates of yes-or-no task outcomes.
PAIRED_METRICS = tuple(m.name for m in paired_rates())
#: Telemetry fields whose medians are compared.
TELEMETRY_DELTA_FIELDS = ("task_wall_ms", "total_tokens")

INTERVAL_METHOD = "Newcombe hybrid score (1998, method 10)"


# =========================================================================== paired analysis


def paired_outcomes(records_a: pd.DataFrame, plan_a: pd.DataFrame, records_b: pd.DataFrame, plan_b: pd.DataFrame,
                    *, metric: str, k: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The paired tasks of a metric and each run's outcome on them.

    Parameters
    ----------
    records_a, records_b : DataFrame
        Attempt records (``task_id``, ``attempt``, ``success``,
        ``agent_eligible``), e.g. ``Run.records``; attempts above a task's
        planned repeats and tasks outside the plan are ignored.
    plan_a, plan_b : DataFrame
        ``task_id`` and ``planned_repeats`` per planned task.
    metric : {"pass@1", "pass@k", "pass^k"}
    k : int
        The paired k (1 for pass@1).

    Returns
    -------
    (tasks, a, b)
        Task ids paired for the metric in A's plan order (planned in both runs
        and 1- or k-eligible in both), and two boolean arrays: the metric's
        task-level outcome in A and in B.
    """
    outcome = task_outcome(metric)
    k, column = outcome.attempts(k), outcome.rule
    out_a, out_b = prefix_outcomes(records_a, plan=plan_a, k=k), prefix_outcomes(records_b, plan=plan_b, k=k)
    in_b = set(plan_b["task_id"].astype(object))
    tasks = [t for t in plan_a["task_id"].astype(object) if t in in_b and t in out_a.index and t in out_b.index]
    a = out_a[column].reindex(tasks).to_numpy(dtype=bool)
    b = out_b[column].reindex(tasks).to_numpy(dtype=bool)
    return tasks, a, b


def paired_entry(k: int, a: np.ndarray, b: np.ndarray, confidence: float) -> dict:
    """One metric's entry of ``comparison.json``'s ``paired``: the 2x2 table of outcomes ``a`` and ``b``,
    the difference B minus A, its Newcombe interval at ``confidence`` and the exact McNemar p."""
    both = int((a & b).sum())
    a_only = int((a & ~b).sum())
    b_only = int((~a & b).sum())
    neither = int((~a & ~b).sum())
    n = both + a_only + b_only + neither
    low, high = paired_difference_interval(both, a_only, b_only, neither, confidence=confidence)
    return {
        "k": int(k),
        "n_pairs": n,
        "both": both,
        "a_only": a_only,
        "b_only": b_only,
        "neither": neither,
        "a_value": (both + a_only) / n if n else None,
        "b_value": (both + b_only) / n if n else None,
        "difference": (b_only - a_only) / n if n else None,
        "ci_low": low,
        "ci_high": high,
        "method": INTERVAL_METHOD,
        "mcnemar_p": mcnemar_exact(a_only, b_only) if n else None,
    }


def run_paired_outcomes(run_a: Run, run_b: Run, metric: str, *,
                        labels: tuple[str, str] = ("run A", "run B")) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """The paired tasks of one metric of two loaded runs, as ``compare`` pairs them.

    Parameters
    ----------
    run_a, run_b : Run
        Two loaded runs.
    metric : {"pass@1", "pass@k", "pass^k", "selected@k"}
        pass@k and pass^k are paired at k = min(k_A, k_B) (:func:`paired_outcomes`);
        ``selected@k`` on the tasks entering both runs' selection metrics (spec
        section 9), each task's outcome whether its run's selector picked a success.

    Returns
    -------
    (tasks, a, b, k)
        Task ids in A's plan order, the two boolean outcome arrays, and the k paired.

    Raises
    ------
    ValueError
        An unknown metric, or ``selected@k`` when a run has no selection.jsonl or the k differ.
    """
    k_paired = min(int(run_a.k), int(run_b.k))
    if metric in PAIRED_METRICS:
        k = task_outcome(metric).attempts(k_paired)
        tasks, a, b = paired_outcomes(run_a.records, run_a.plan, run_b.records, run_b.plan, metric=metric, k=k)
        return tasks, a, b, k
    if metric != "selected@k":
        raise ValueError(f"unknown metric {show_value(metric)}; the metrics are {', '.join(PAIRED_METRICS)}, selected@k")
    missing = [f"{label} ({show_value(run.run_id)})" for label, run in zip(labels, (run_a, run_b)) if run.selection is None]
    if missing:
        raise ValueError(f"selected@k needs a selection.jsonl in both runs; {' and '.join(missing)} "
                         f"{'has' if len(missing) == 1 else 'have'} none")
    if run_a.k != run_b.k:
        raise ValueError(f"selected@k needs the same k in both runs, got k = {run_a.k} and k = {run_b.k}")
    # best-of-k with a selector (spec section 9): tasks entering in both runs, each its own selector's pick
    picks_a, picks_b = (selection_metrics(r).per_task.set_index("task_id")["selected_success"] for r in (run_a, run_b))
    tasks = [t for t in run_a.plan["task_id"].astype(object) if t in picks_a.index and t in picks_b.index]
    a, b = (p.reindex(tasks).to_numpy(dtype=bool) for p in (picks_a, picks_b))
    return tasks, a, b, int(run_a.k)


def _paired(run_a: Run, run_b: Run, confidence: float) -> tuple[dict, dict]:
    names = list(PAIRED_METRICS)
    if run_a.selection is not None and run_b.selection is not None and run_a.k == run_b.k:
        names.append("selected@k")
    paired, flips = {}, {}
    for name in names:
        tasks, a, b, k = run_paired_outcomes(run_a, run_b, name)
        paired[name] = paired_entry(k, a, b, confidence)
        flips[name] = {
            "a_only": [str(t) for t, x, y in zip(tasks, a, b) if x and not y],
            "b_only": [str(t) for t, x, y in zip(tasks, a, b) if y and not x],
        }
    return paired, flips


# =========================================================================== telemetry deltas


def _eligible_values(run: Run, field: str) -> pd.DataFrame:
    a = counted_attempts(run.records, plan=run.plan)
    eligible = as_bool(a["agent_eligible"])
    return pd.DataFrame({
        "task_id": a["task_id"].astype(object).to_numpy()[eligible],
        "attempt": a["attempt"].to_numpy(dtype="int64")[eligible],
        "value": a[field].to_numpy(dtype="float64", na_value=np.nan)[eligible],
    })


def _cluster_bootstrap(codes: np.ndarray, a: np.ndarray, b: np.ndarray, *, n_tasks: int, n_boot: int,
                       seed: int, confidence: float) -> tuple[float | None, float | None]:
    """Percentile interval of median(b) - median(a), resampling tasks (clusters) with replacement."""
    if n_boot < 1:
        return None, None
    rng = np.random.default_rng(seed)
    deltas = np.empty(n_boot)
    for i in range(n_boot):
        counts = np.bincount(rng.integers(0, n_tasks, size=n_tasks), minlength=n_tasks)
        weight = counts[codes]
        deltas[i] = np.median(np.repeat(b, weight)) - np.median(np.repeat(a, weight))
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(deltas, [tail, 100.0 - tail])
    return float(low), float(high)


def _telemetry(run_a: Run, run_b: Run, common: list[str], *, seed: int, n_boot: int, confidence: float) -> dict:
    order = {t: i for i, t in enumerate(common)}
    out = {}
    for field in TELEMETRY_DELTA_FIELDS:
        va, vb = _eligible_values(run_a, field), _eligible_values(run_b, field)
        merged = va.merge(vb, on=["task_id", "attempt"], suffixes=("_a", "_b"), how="inner")
        merged = merged[merged["task_id"].isin(list(order)) & merged["value_a"].notna() & merged["value_b"].notna()]
        merged = merged.assign(position=merged["task_id"].map(order)).sort_values(["position", "attempt"], kind="stable")
        method = (f"median(B) - median(A) over paired eligible attempts; percentile bootstrap resampling tasks "
                  f"(n_boot = {n_boot}, seed = {seed})")
        if merged.empty:
            out[field] = {"n_pairs": 0, "n_tasks": 0, "a_median": None, "b_median": None, "difference": None,
                          "ci_low": None, "ci_high": None, "method": method}
            continue
        a = merged["value_a"].to_numpy(dtype="float64")
        b = merged["value_b"].to_numpy(dtype="float64")
        codes, _ = pd.factorize(merged["position"], sort=True)
        n_tasks = int(codes.max()) + 1
        a_med, b_med = float(np.median(a)), float(np.median(b))
        low, high = _cluster_bootstrap(codes, a, b, n_tasks=n_tasks, n_boot=n_boot, seed=seed, confidence=confidence)
        out[field] = {"n_pairs": int(len(merged)), "n_tasks": n_tasks, "a_median": a_med, "b_median": b_med,
                      "difference": b_med - a_med, "ci_low": low, "ci_high": high, "method": method}
    return out


# =========================================================================== the document

_SELECTION_PAIRING = ("selected@k: tasks entering the selection metrics of both runs (k-eligible, candidates "
                      "exactly 1..k, the same k in both; spec section 9); a task's outcome is whether its run's "
                      "selector picked a successful attempt")


def _input_hashes(run: Run) -> dict:
    """A run's input hashes: manifest.json, results.jsonl, and selection.jsonl only when it has one."""
    return {MANIFEST: run.hashes[MANIFEST], RESULTS: run.hashes[RESULTS],
            **({SELECTION: run.hashes[SELECTION]} if SELECTION in run.hashes else {})}


def compare_runs(run_a: Run, run_b: Run, *, seed: int = 0, n_boot: int = 2000, confidence: float = 0.95) -> dict:
    """The comparison.json document of run B against run A (differences are B minus A).

    Parameters
    ----------
    run_a, run_b : Run
        Two loaded runs (:func:`capbench_nb.load_run`).
    seed : int, default 0
        Seed of the telemetry bootstraps (:func:`numpy.random.default_rng`).
    n_boot : int, default 2000
        Bootstrap resamples per telemetry field (0: no interval).
    confidence : float, default 0.95
        Level of the paired-difference intervals and the bootstrap intervals.

    Returns
    -------
    dict
        Keys, in order: ``schema_version`` (``capbench.comparison/1``),
        ``run_a``, ``run_b`` (identity: run_id, suite, status, runner, config,
        judge, k, tasks_planned), ``compatibility`` (``compatible``,
        ``warnings`` ``[{"code", "message", "details"}]``, ``unchecked``),
        ``tasks`` (``common``, ``only_in_a``, ``only_in_b``), ``k`` (``a``,
        ``b``, ``paired``), ``paired`` (per metric ``pass@1``, ``pass@k``,
        ``pass^k``, and ``selected@k`` when both runs have a selection file and
        the same k: ``k, n_pairs, both, a_only, b_only, neither, a_value,
        b_value, difference, ci_low, ci_high, method, mcnemar_p``), ``flips``
        (per metric, task ids ``a_only`` and ``b_only``), ``telemetry``
        (``task_wall_ms``, ``total_tokens``: ``n_pairs, n_tasks, a_median,
        b_median, difference, ci_low, ci_high, method``), ``methods`` and
        ``provenance`` (toolkit version, both runs' input hashes, options).
        No clock and no paths: the same inputs give the same document.
    """
    if type(seed) is not int:
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if type(n_boot) is not int or n_boot < 0:
        raise ValueError(f"n_boot must be an integer >= 0, got {n_boot!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    warnings, unchecked = compatibility(run_a, run_b)
    ids_a, ids_b = plan_ids(run_a), plan_ids(run_b)
    set_a, set_b = set(ids_a), set(ids_b)
    common = [t for t in ids_a if t in set_b]
    k_paired = min(int(run_a.k), int(run_b.k))
    paired, flips = _paired(run_a, run_b, confidence)
    level = f"{100 * confidence:g}%"
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "run_a": run_identity(run_a),
        "run_b": run_identity(run_b),
        "compatibility": {"compatible": not warnings, "warnings": warnings, "unchecked": unchecked},
        "tasks": {"common": len(common), "only_in_a": [t for t in ids_a if t not in set_b],
                  "only_in_b": [t for t in ids_b if t not in set_a]},
        "k": {"a": int(run_a.k), "b": int(run_b.k), "paired": k_paired},
        "paired": paired,
        "flips": flips,
        "telemetry": _telemetry(run_a, run_b, common, seed=seed, n_boot=n_boot, confidence=confidence),
        "methods": {
            "pairing": "pass@1: tasks planned in both runs whose attempt 1 is present and eligible in both; "
                       "pass@k and pass^k: tasks k-eligible in both runs (attempts 1..k present and eligible) "
                       "at k = min(k_A, k_B)",
            "difference": "B minus A: (b_only - a_only) / n_pairs",
            "interval": f"{level} Newcombe hybrid score interval for paired proportions, method 10 of R. G. Newcombe, "
                        "Stat. Med. 17 (1998) 2635-2650, with the phi rule of Altman et al., Statistics with "
                        "Confidence, 2nd ed. (2000), p. 52",
            "test": "exact two-sided McNemar test: min(1, 2 * P(X <= min(a_only, b_only))), "
                    "X ~ Binomial(a_only + b_only, 1/2)",
            "telemetry": f"median(B) - median(A) over paired eligible attempts (same task and attempt number, "
                         f"eligible in both runs, value non-null in both); {level} percentile bootstrap "
                         f"resampling tasks with replacement, numpy default_rng(seed)",
            **({"selection": _SELECTION_PAIRING} if "selected@k" in paired else {}),
        },
        "provenance": {
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "inputs": {"a": _input_hashes(run_a), "b": _input_hashes(run_b)},
            "options": {"seed": seed, "n_boot": n_boot, "confidence": confidence,
                        "allow_invalid": {"a": not run_a.strict, "b": not run_b.strict}},
        },
    }
