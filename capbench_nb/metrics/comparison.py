"""Comparing two runs on the same suite: compatibility, paired analysis, telemetry deltas.

:func:`compare_runs` turns two loaded runs into the comparison.json document
(schema ``capbench.comparison/1``); :func:`write_comparison` writes it with
``comparison.md`` beside it; :func:`comparison_markdown` is the Markdown.  The
``*_frame`` and :func:`plot_differences` helpers are the displays of the
comparison notebook (``notebooks/compare_runs.ipynb``).

Compatibility
-------------
Each difference that can make the two runs' numbers mean different things is a
named warning ``{"code", "message", "details"}``, in this order:

``suite``, ``suite_version``
    ``manifest.suite.name`` / ``.version`` differ (absent counts as a value).
``task_set``
    The plans' task ids differ; the message gives the overlap.  Only tasks
    planned in both runs are ever paired.
``k``
    The runs' fixed k differ.  pass@k and pass^k are then compared at the
    smaller k (attempts 1..k of each task in both runs); the message and
    ``doc["k"]["paired"]`` say so.
``judge``
    The judge mode differs: ``config.judge`` as declared (true, false for a
    ``--no-judge`` run, or absent), or, where the attempts' artifacts can be
    read, the judge as actually enabled (``attempt.json``
    ``evaluation.judge_enabled``, resolved as ingest does) on common tasks.
``model``
    ``config.model`` differs.
``config``
    Any other ``config`` key differs (keys of the evaluation contract
    excepted, see below), e.g. provider or platform.
``toolkit_version``
    The toolkit that produced the runs differs: the manifest's ``runner``
    (name or version).
``evaluation_contract``
    What ``success`` means differs beyond the judge mode.  The format defines
    success as "the enabled evaluation contract passed; with --no-judge, the
    hard-assertion result" (spec section 3; section 4, rule 5), so the
    contract is the judge mode plus the hard assertions a task is checked
    against.  The judge-mode part has its own code (``judge``), so that no
    difference is reported twice; this code covers (a) a common task whose
    hard-assertion names differ between the runs and (b) evaluation settings
    in ``config``: keys other than ``judge`` that start with ``judge`` or
    ``eval`` or contain ``assert`` (e.g. ``judge_model``, ``eval_version``).
    Hard assertions are read from ``attempt.json#/evaluation`` of the first
    eligible attempt (an attempt that was evaluated) of each common task that
    has an artifact directory; when either run has none, the check is listed
    under ``compatibility.unchecked`` instead of passing silently.

Paired analysis
---------------
A task is *paired for pass@1* when it is planned in both runs and its attempt 1
is present and eligible in both.  It is *paired for pass@k and pass^k* when it
is k-eligible in both runs (attempts 1..k present and eligible) for the paired
k = min(k_A, k_B).  Over the paired tasks, the 2x2 table ``both``, ``a_only``
(A succeeded, B failed), ``b_only`` and ``neither`` gives the difference
B minus A, ``(b_only - a_only) / n_pairs``, Newcombe's (1998) hybrid score
interval (method 10, :func:`~capbench_nb.stats.paired_difference_interval`) and
the exact McNemar test (:func:`~capbench_nb.stats.mcnemar_exact`).  With no
paired task, difference, interval and p-value are null; with paired tasks but
no discordant one, the p-value is 1.

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

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb._version import __version__
from capbench_nb.records.derivation import _judge_enabled
from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.records.loading import MANIFEST, RESULTS, Run
from capbench_nb.metrics.rates import _bool, _prefix_table, counted_attempts
from capbench_nb.outputs.reporting import md_escape  # one escaping rule for every Markdown output
from capbench_nb.metrics.stats import mcnemar_exact, paired_difference_interval

__all__ = [
    "COMPARISON_SCHEMA_VERSION",
    "COMPARISON_FILE",
    "COMPARISON_MARKDOWN",
    "WARNING_CODES",
    "PAIRED_METRICS",
    "TELEMETRY_DELTA_FIELDS",
    "compare_runs",
    "compatibility_warnings",
    "paired_outcomes",
    "comparison_markdown",
    "write_comparison",
    "md_escape",
    "compatibility_summary",
    "warnings_frame",
    "paired_frame",
    "flips_frame",
    "telemetry_frame",
    "plot_differences",
    "figure_image",
]

COMPARISON_SCHEMA_VERSION = "capbench.comparison/1"
COMPARISON_FILE = "comparison.json"
COMPARISON_MARKDOWN = "comparison.md"

#: Warning codes, in the order they are reported.
WARNING_CODES = (
    "suite",
    "suite_version",
    "task_set",
    "k",
    "judge",
    "model",
    "config",
    "toolkit_version",
    "evaluation_contract",
)
#: The paired metrics, in document order.
PAIRED_METRICS = ("pass@1", "pass@k", "pass^k")
#: Telemetry fields whose medians are compared.
TELEMETRY_DELTA_FIELDS = ("task_wall_ms", "total_tokens")

INTERVAL_METHOD = "Newcombe hybrid score (1998, method 10)"
_EVAL_KEY = re.compile(r"^(judge|eval)|assert", re.IGNORECASE)
#: How many task ids a warning message names before "and N more".
_NAMED = 5


# =========================================================================== helpers


def _show(value: Any) -> str:
    """A value as it reads in a message: JSON, so strings are quoted and null is null."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _listing(ids: list[str], limit: int = _NAMED) -> str:
    shown = ", ".join(_show(t) for t in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _suite(run: Run) -> dict:
    suite = run.manifest.get("suite")
    suite = suite if isinstance(suite, dict) else {}
    return {"name": suite.get("name"), "version": suite.get("version")}


def _config(run: Run) -> dict:
    config = run.manifest.get("config")
    return config if isinstance(config, dict) else {}


def _runner(run: Run) -> dict | None:
    runner = run.manifest.get("runner")
    return runner if isinstance(runner, dict) else None


def _plan_ids(run: Run) -> list[str]:
    return [str(t) for t in run.plan["task_id"].astype(object)]


def _identity(run: Run) -> dict:
    suite = run.manifest.get("suite")
    return {
        "run_id": run.run_id,
        "suite": _suite(run) if isinstance(suite, dict) else None,
        "status": run.manifest.get("status"),
        "runner": _runner(run),
        "config": run.manifest.get("config") if isinstance(run.manifest.get("config"), dict) else None,
        "judge": run.judge,
        "k": int(run.k),
        "tasks_planned": int(len(run.plan)),
    }


# =========================================================================== compatibility


def _evaluated_tasks(run: Run) -> set:
    """Tasks with at least one eligible (hence evaluated) counted attempt."""
    a = counted_attempts(run.records, plan=run.plan)
    return set(a["task_id"].astype(object).to_numpy()[_bool(a["agent_eligible"])])


def _evaluation_contracts(run: Run, tasks: list[str]) -> dict[str, tuple[tuple[str, ...], bool]]:
    """Per task: (sorted hard-assertion names, judge enabled) from its first evaluated attempt's attempt.json.

    Tasks without an eligible attempt that has a readable ``attempt.json#/evaluation`` are absent.
    """
    a = counted_attempts(run.records, plan=run.plan)
    eligible = _bool(a["agent_eligible"])
    frame = pd.DataFrame({
        "task_id": a["task_id"].astype(object).to_numpy(),
        "attempt": a["attempt"].to_numpy(dtype="int64"),
        "artifact_dir": a["artifact_dir"].astype(object).to_numpy(),
    })[eligible]
    frame = frame[frame["artifact_dir"].notna() & frame["task_id"].isin(set(tasks))]
    frame = frame.sort_values(["task_id", "attempt"], kind="stable")
    resolver = EvidenceResolver(run.path)
    judge_default = run.judge
    out: dict[str, tuple[tuple[str, ...], bool]] = {}
    for task_id, artifact_dir in zip(frame["task_id"], frame["artifact_dir"]):
        if task_id in out:
            continue
        try:
            evaluation = resolver.resolve(artifact_dir, "attempt.json#/evaluation")
        except EvidenceError:
            continue
        if not isinstance(evaluation, dict):
            continue
        hard = evaluation.get("hard_assertions") or []
        if not isinstance(hard, list):
            continue
        names = tuple(sorted(str(item.get("name")) if isinstance(item, dict) else str(item) for item in hard))
        out[task_id] = (names, bool(_judge_enabled(evaluation, judge_default)))
    return out


def _compatibility(run_a: Run, run_b: Run) -> tuple[list[dict], list[dict]]:
    """(warnings, unchecked) for two runs; see the module docstring for the codes."""
    warnings: list[dict] = []
    unchecked: list[dict] = []

    def warn(code: str, message: str, **details: Any) -> None:
        warnings.append({"code": code, "message": message, "details": details})

    suite_a, suite_b = _suite(run_a), _suite(run_b)
    if suite_a["name"] != suite_b["name"]:
        warn("suite", f"different suites: A runs {_show(suite_a['name'])}, B runs {_show(suite_b['name'])}",
             a=suite_a["name"], b=suite_b["name"])
    if suite_a["version"] != suite_b["version"]:
        warn("suite_version", f"different suite versions: A has {_show(suite_a['version'])}, "
             f"B has {_show(suite_b['version'])}; tasks with the same id may not be the same task",
             a=suite_a["version"], b=suite_b["version"])

    ids_a, ids_b = _plan_ids(run_a), _plan_ids(run_b)
    set_a, set_b = set(ids_a), set(ids_b)
    common = [t for t in ids_a if t in set_b]
    only_a = [t for t in ids_a if t not in set_b]
    only_b = [t for t in ids_b if t not in set_a]
    if only_a or only_b:
        warn("task_set", f"different task sets: A plans {len(ids_a)} tasks, B plans {len(ids_b)}, "
             f"{len(common)} in common ({len(only_a)} only in A, {len(only_b)} only in B); "
             f"only the {len(common)} common tasks are paired",
             a=len(ids_a), b=len(ids_b), common=len(common), only_in_a=len(only_a), only_in_b=len(only_b))

    k_a, k_b = int(run_a.k), int(run_b.k)
    if k_a != k_b:
        warn("k", f"different k: A has k = {k_a}, B has k = {k_b}; pass@k and pass^k are compared at "
             f"k = {min(k_a, k_b)}, the smaller (attempts 1..{min(k_a, k_b)} of each task in both runs)",
             a=k_a, b=k_b, paired=min(k_a, k_b))

    config_a, config_b = _config(run_a), _config(run_b)
    evaluated_a, evaluated_b = _evaluated_tasks(run_a), _evaluated_tasks(run_b)
    evaluated = [t for t in common if t in evaluated_a and t in evaluated_b]
    contracts_a = _evaluation_contracts(run_a, evaluated)
    contracts_b = _evaluation_contracts(run_b, evaluated)
    both_known = [t for t in evaluated if t in contracts_a and t in contracts_b]

    judge_a, judge_b = config_a.get("judge"), config_b.get("judge")
    judge_differs = [t for t in both_known if contracts_a[t][1] != contracts_b[t][1]]
    if judge_a != judge_b or judge_differs:
        parts = []
        if judge_a != judge_b:
            parts.append(f"config.judge is {_show(judge_a)} in A and {_show(judge_b)} in B"
                         + (" (false: a --no-judge run, where success is the hard assertions alone)"
                            if False in (judge_a, judge_b) else ""))
        if judge_differs:
            parts.append(f"the judge was enabled in one run and not the other on {len(judge_differs)} "
                         f"common task(s) (attempt.json evaluation.judge_enabled): {_listing(judge_differs)}")
        warn("judge", "different judge mode: " + "; ".join(parts), a=judge_a, b=judge_b, tasks=judge_differs)

    if config_a.get("model") != config_b.get("model"):
        warn("model", f"different models: A used {_show(config_a.get('model'))}, B used {_show(config_b.get('model'))}",
             a=config_a.get("model"), b=config_b.get("model"))

    keys = sorted((set(config_a) | set(config_b)) - {"model", "judge"})
    differing = [key for key in keys if config_a.get(key, None) != config_b.get(key, None) or (key in config_a) != (key in config_b)]
    other = [key for key in differing if not _EVAL_KEY.search(key)]
    evaluation_keys = [key for key in differing if _EVAL_KEY.search(key)]
    if other:
        warn("config", "other configuration differs: " + "; ".join(
            f"{_show(key)}: {_show(config_a.get(key))} in A, {_show(config_b.get(key))} in B" for key in other),
            keys=other, a={key: config_a.get(key) for key in other}, b={key: config_b.get(key) for key in other})

    runner_a, runner_b = _runner(run_a), _runner(run_b)
    if runner_a != runner_b:
        def label(runner: dict | None) -> str:
            return "no runner named" if runner is None else f"{_show(runner.get('name'))} version {_show(runner.get('version'))}"

        warn("toolkit_version", f"different toolkits produced the runs: A by {label(runner_a)}, B by {label(runner_b)}",
             a=runner_a, b=runner_b)

    hard_differs = [t for t in both_known if contracts_a[t][0] != contracts_b[t][0]]
    if hard_differs or evaluation_keys:
        parts = []
        if hard_differs:
            t = hard_differs[0]
            parts.append(f"the hard assertions differ on {len(hard_differs)} common task(s): {_listing(hard_differs)} "
                         f"(e.g. {_show(t)}: A checks {_show(list(contracts_a[t][0]))}, B checks {_show(list(contracts_b[t][0]))})")
        if evaluation_keys:
            parts.append("evaluation settings differ: " + "; ".join(
                f"{_show(key)}: {_show(config_a.get(key))} in A, {_show(config_b.get(key))} in B" for key in evaluation_keys))
        warn("evaluation_contract", "different evaluation contract (what success means): " + "; ".join(parts),
             tasks=hard_differs, keys=evaluation_keys,
             a={key: config_a.get(key) for key in evaluation_keys}, b={key: config_b.get(key) for key in evaluation_keys})

    if len(both_known) < len(evaluated):
        missing = len(evaluated) - len(both_known)
        unchecked.append({
            "code": "evaluation_contract",
            "reason": f"the hard assertions and the judge as enabled were not compared on {missing} of the "
                      f"{len(evaluated)} common task(s) evaluated in both runs: no readable attempt.json of an "
                      "evaluated attempt (artifact_dir null or artifacts missing) in one run or both",
            "tasks_checked": len(both_known),
        })
    if suite_a["name"] is None and suite_b["name"] is None:
        unchecked.append({"code": "suite", "reason": "neither manifest names its suite", "tasks_checked": None})
    return warnings, unchecked


def compatibility_warnings(run_a: Run, run_b: Run) -> list[dict]:
    """The compatibility warnings of two runs, ``[{"code", "message", "details"}]`` in :data:`WARNING_CODES` order.

    An empty list means no difference was found (see ``compare_runs(...)["compatibility"]["unchecked"]``
    for what could not be checked).  The codes are described in the module docstring.
    """
    return _compatibility(run_a, run_b)[0]


# =========================================================================== paired analysis


def _outcomes(records: pd.DataFrame, plan: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per task that is k-eligible: ``any`` and ``all`` success among attempts 1..k."""
    table = _prefix_table(records, plan, k)
    eligible = table[table["size"] == k]
    return pd.DataFrame({"any": (eligible["sum"] > 0).to_numpy(), "all": (eligible["sum"] == k).to_numpy()},
                        index=pd.Index(eligible.index.astype(object)))


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
    if metric not in PAIRED_METRICS:
        raise ValueError(f"metric must be one of {', '.join(PAIRED_METRICS)}, got {metric!r}")
    k = 1 if metric == "pass@1" else int(k)
    column = "all" if metric == "pass^k" else "any"
    out_a, out_b = _outcomes(records_a, plan_a, k), _outcomes(records_b, plan_b, k)
    in_b = set(plan_b["task_id"].astype(object))
    tasks = [t for t in plan_a["task_id"].astype(object) if t in in_b and t in out_a.index and t in out_b.index]
    a = out_a[column].reindex(tasks).to_numpy(dtype=bool)
    b = out_b[column].reindex(tasks).to_numpy(dtype=bool)
    return tasks, a, b


def _paired_entry(k: int, a: np.ndarray, b: np.ndarray, confidence: float) -> dict:
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


def _paired(run_a: Run, run_b: Run, k_paired: int, confidence: float) -> tuple[dict, dict]:
    paired, flips = {}, {}
    for name in PAIRED_METRICS:
        k = 1 if name == "pass@1" else k_paired
        tasks, a, b = paired_outcomes(run_a.records, run_a.plan, run_b.records, run_b.plan, metric=name, k=k)
        paired[name] = _paired_entry(k, a, b, confidence)
        flips[name] = {
            "a_only": [str(t) for t, x, y in zip(tasks, a, b) if x and not y],
            "b_only": [str(t) for t, x, y in zip(tasks, a, b) if y and not x],
        }
    return paired, flips


# =========================================================================== telemetry deltas


def _eligible_values(run: Run, field: str) -> pd.DataFrame:
    a = counted_attempts(run.records, plan=run.plan)
    eligible = _bool(a["agent_eligible"])
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
        ``pass^k``: ``k, n_pairs, both, a_only, b_only, neither, a_value,
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
    warnings, unchecked = _compatibility(run_a, run_b)
    ids_a, ids_b = _plan_ids(run_a), _plan_ids(run_b)
    set_a, set_b = set(ids_a), set(ids_b)
    common = [t for t in ids_a if t in set_b]
    k_paired = min(int(run_a.k), int(run_b.k))
    paired, flips = _paired(run_a, run_b, k_paired, confidence)
    level = f"{100 * confidence:g}%"
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "run_a": _identity(run_a),
        "run_b": _identity(run_b),
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
        },
        "provenance": {
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "inputs": {
                "a": {MANIFEST: run_a.hashes[MANIFEST], RESULTS: run_a.hashes[RESULTS]},
                "b": {MANIFEST: run_b.hashes[MANIFEST], RESULTS: run_b.hashes[RESULTS]},
            },
            "options": {"seed": seed, "n_boot": n_boot, "confidence": confidence,
                        "allow_invalid": {"a": not run_a.strict, "b": not run_b.strict}},
        },
    }


# =========================================================================== Markdown


def _label(name: str, k: int) -> str:
    """``pass@k`` and ``pass^k`` with the paired k written out (``pass^3``; ``pass@k (k=1)`` beside pass@1)."""
    if name == "pass@1":
        return name
    return f"{name} (k=1)" if k == 1 else name[:-1] + str(k)


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def _signed_pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:+.{digits}f} pp"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def comparison_markdown(doc: dict, *, max_flips: int = 50) -> str:
    """comparison.md: a concise Markdown rendering of the comparison document.

    Every run-supplied string (run ids, suites, models, task ids, warning
    messages) goes through :func:`md_escape`.  Flip lists name at most
    ``max_flips`` tasks each and say how many more there are.
    """
    a, b = doc["run_a"], doc["run_b"]

    def run_line(label: str, run: dict) -> str:
        suite = run["suite"] or {}
        config = run["config"] or {}
        judge = {True: "on", False: "off (--no-judge)", None: "n/a"}[run["judge"]]
        return (f"| {label} | {md_escape(run['run_id'])} | {md_escape(suite.get('name'))} "
                f"{md_escape(suite.get('version'))} | {md_escape(config.get('model'))} | "
                f"{judge} | {run['k']} | {run['tasks_planned']} |")

    lines = [
        f"# Comparison: {md_escape(b['run_id'])} (B) against {md_escape(a['run_id'])} (A)",
        "",
        "Differences are B minus A, on the tasks both runs have eligible (paired).",
        "",
        "| run | run_id | suite | model | judge | k | planned tasks |",
        "|---|---|---|---|---|---|---|",
        run_line("A", a),
        run_line("B", b),
        "",
        "## Compatibility",
        "",
    ]
    warnings = doc["compatibility"]["warnings"]
    if warnings:
        lines += [f"- **{md_escape(w['code'])}**: {md_escape(w['message'])}" for w in warnings]
    else:
        lines.append("No compatibility warning.")
    for item in doc["compatibility"]["unchecked"]:
        lines.append(f"- not checked, {md_escape(item['code'])}: {md_escape(item['reason'])}")
    k = doc["k"]
    lines += [
        "",
        f"## Paired analysis (k: A {k['a']}, B {k['b']}, compared at {k['paired']})",
        "",
        "| metric | pairs | both | A only | B only | neither | A | B | B - A | 95% interval | McNemar p |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    level = doc["provenance"]["options"]["confidence"]
    if level != 0.95:
        lines[-2] = lines[-2].replace("95% interval", f"{100 * level:g}% interval")
    for name, e in doc["paired"].items():
        label = _label(name, e["k"])
        interval = "n/a" if e["ci_low"] is None else f"{_signed_pct(e['ci_low'])} to {_signed_pct(e['ci_high'])}"
        lines.append(f"| {md_escape(label)} | {e['n_pairs']} | {e['both']} | {e['a_only']} | {e['b_only']} | "
                     f"{e['neither']} | {_pct(e['a_value'])} | {_pct(e['b_value'])} | {_signed_pct(e['difference'])} | "
                     f"{interval} | {_p(e['mcnemar_p'])} |")
    lines += ["", f"Interval: {doc['methods']['interval']}. Test: {doc['methods']['test']}.", "", "## Flips", ""]
    for name, f in doc["flips"].items():
        for side, text in (("a_only", "A succeeded, B failed"), ("b_only", "B succeeded, A failed")):
            ids = f[side]
            shown = ", ".join(md_escape(t) for t in ids[:max_flips])
            more = f" and {len(ids) - max_flips} more" if len(ids) > max_flips else ""
            lines.append(f"- {_label(name, doc['paired'][name]['k'])}, {text} ({len(ids)}): {shown + more if ids else 'none'}")
    lines += [
        "",
        "## Telemetry (paired eligible attempts)",
        "",
        "| field | pairs | tasks | median A | median B | B - A | 95% bootstrap interval |",
        "|---|---|---|---|---|---|---|",
    ]
    if level != 0.95:
        lines[-2] = lines[-2].replace("95% bootstrap", f"{100 * level:g}% bootstrap")
    for field, t in doc["telemetry"].items():
        interval = "n/a" if t["ci_low"] is None else f"{t['ci_low']:+,.0f} to {t['ci_high']:+,.0f}"
        diff = "n/a" if t["difference"] is None else f"{t['difference']:+,.0f}"
        lines.append(f"| {field} | {t['n_pairs']} | {t['n_tasks']} | {_num(t['a_median'])} | {_num(t['b_median'])} | "
                     f"{diff} | {interval} |")
    lines += ["", f"Telemetry: {doc['methods']['telemetry']}; n_boot = {doc['provenance']['options']['n_boot']}, "
              f"seed = {doc['provenance']['options']['seed']}.", ""]
    return "\n".join(lines)


def write_comparison(doc: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``comparison.json`` (canonical JSON, :func:`~capbench_nb.export.dumps`) and ``comparison.md``.

    Both atomically (:func:`~capbench_nb.export.write_atomic`); ``out_dir`` is
    created when missing.  Returns the two paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = write_atomic(out / COMPARISON_FILE, dumps(doc))
    md_path = write_atomic(out / COMPARISON_MARKDOWN, comparison_markdown(doc))
    return json_path, md_path


# =========================================================================== notebook displays


def compatibility_summary(doc: dict, *, strict: bool = False) -> str:
    """One Markdown paragraph on the compatibility of the two runs (for the notebook).

    With ``strict``, warnings are called failures: ``capbench-nb compare
    --strict`` exits non-zero on any of them.
    """
    warnings = doc["compatibility"]["warnings"]
    unchecked = doc["compatibility"]["unchecked"]
    if not warnings:
        text = "**No compatibility warning**: suite, task set, k, judge, model, configuration, toolkit and " \
               "evaluation contract agree as far as the manifests and artifacts show."
    else:
        codes = ", ".join(f"`{md_escape(w['code'])}`" for w in warnings)
        text = f"**{len(warnings)} compatibility warning{'s' if len(warnings) != 1 else ''}** ({codes}): read the " \
               "paired numbers below with them in mind."
        if strict:
            text += " **Strict mode**: these warnings make the comparison fail (non-zero exit)."
    if unchecked:
        text += " Not checked: " + "; ".join(f"{md_escape(u['code'])} ({md_escape(u['reason'])})" for u in unchecked) + "."
    return text


def warnings_frame(doc: dict) -> pd.DataFrame:
    """The compatibility warnings (``code``, ``message``) and unchecked items (code ``not checked: ...``)."""
    rows = [{"code": w["code"], "message": w["message"]} for w in doc["compatibility"]["warnings"]]
    rows += [{"code": f"not checked: {u['code']}", "message": u["reason"]} for u in doc["compatibility"]["unchecked"]]
    return pd.DataFrame(rows, columns=["code", "message"])


def paired_frame(doc: dict) -> pd.DataFrame:
    """One row per paired metric: the 2x2 table, both rates, B minus A, its interval and McNemar's p."""
    columns = ["metric", "k", "n_pairs", "both", "a_only", "b_only", "neither", "a_value", "b_value",
               "difference", "ci_low", "ci_high", "mcnemar_p"]
    rows = [{"metric": name, **{c: e[c] for c in columns[1:]}} for name, e in doc["paired"].items()]
    frame = pd.DataFrame(rows, columns=columns)
    for c in ("a_value", "b_value", "difference", "ci_low", "ci_high", "mcnemar_p"):
        frame[c] = pd.array([None if v is None else float(v) for v in frame[c]], dtype="Float64")
    return frame


def flips_frame(doc: dict) -> pd.DataFrame:
    """One row per flipped task and metric: ``metric``, ``task_id``, ``flip`` (``A only`` or ``B only``)."""
    rows = []
    for name, f in doc["flips"].items():
        rows += [{"metric": name, "task_id": t, "flip": "A only"} for t in f["a_only"]]
        rows += [{"metric": name, "task_id": t, "flip": "B only"} for t in f["b_only"]]
    return pd.DataFrame(rows, columns=["metric", "task_id", "flip"])


def telemetry_frame(doc: dict) -> pd.DataFrame:
    """One row per telemetry field: pairs, tasks, both medians, B minus A and its bootstrap interval."""
    columns = ["field", "n_pairs", "n_tasks", "a_median", "b_median", "difference", "ci_low", "ci_high"]
    rows = [{"field": name, **{c: t[c] for c in columns[1:]}} for name, t in doc["telemetry"].items()]
    frame = pd.DataFrame(rows, columns=columns)
    for c in columns[3:]:
        frame[c] = pd.array([None if v is None else float(v) for v in frame[c]], dtype="Float64")
    return frame


def plot_differences(doc: dict, ax: Any = None) -> Any:
    """Dot-and-whisker chart of B minus A per paired metric with its interval; returns the matplotlib Figure.

    Built on :class:`matplotlib.figure.Figure` (no pyplot state) unless ``ax`` is given.
    """
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=(6.0, 2.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    names = list(doc["paired"])
    for y, name in enumerate(names):
        e = doc["paired"][name]
        label = _label(name, e["k"])
        names[y] = f"{label} (n={e['n_pairs']})"
        if e["difference"] is None:
            continue
        ax.errorbar([100 * e["difference"]], [y], xerr=[[100 * (e["difference"] - e["ci_low"])],
                                                          [100 * (e["ci_high"] - e["difference"])]],
                    fmt="o", color="#1f4e79", capsize=4)
    ax.axvline(0.0, color="#888888", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.invert_yaxis()
    level = doc["provenance"]["options"]["confidence"]
    ax.set_xlabel(f"B minus A (percentage points), {100 * level:g}% Newcombe interval")
    fig.tight_layout()
    return fig


def figure_image(fig: Any, alt: str = "pass@1, pass@k and pass^k differences, B minus A, with 95% intervals") -> Any:
    """A matplotlib Figure as inline HTML ``<img>`` with alternative text (PNG without metadata: stable bytes)."""
    import base64
    import html
    import io

    from IPython.display import HTML

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return HTML(f'<img alt="{html.escape(alt)}" style="max-width: 100%" src="data:image/png;base64,{data}">')
