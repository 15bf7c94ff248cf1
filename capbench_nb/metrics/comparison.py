# long module: the compatibility checks, the pairing and the telemetry deltas build one document and share
# its private helpers (identity, plan ids, messages); split, they would import each other's privates.
"""Comparing two runs on the same suite: compatibility, paired analysis, telemetry deltas.

:func:`compare_runs` turns two loaded runs into the comparison.json document
(schema ``capbench.comparison/1``); :func:`write_comparison` writes it with
``comparison.md`` beside it (:mod:`capbench_nb.outputs.comparison.files`, which also holds
the displays of the comparison notebook, ``notebooks/compare_runs.ipynb``).

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
``lock``
    the runs name different locks (``manifest.suite.lock``, spec section 12), or one names none; with both
    lock copies at hand, the differing top-level sections and up to 5 differing JSON-pointer paths.
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

import json
import re
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb._version import __version__
from capbench_nb.metrics.options import WARNING_CODES  # stated there, for the command line
from capbench_nb.metrics.prepare import as_bool, counted_attempts, prefix_outcomes
from capbench_nb.metrics.registry import paired_rates, task_outcome
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.metrics.stats import mcnemar_exact, paired_difference_interval
from capbench_nb.records.manifest import manifest_lock
from capbench_nb.suite.diff import lock_differences
from capbench_nb.records.run import MANIFEST, RESULTS, Run
from capbench_nb.format import SELECTION

__all__ = [
    "COMPARISON_SCHEMA_VERSION",
    "WARNING_CODES",
    "PAIRED_METRICS",
    "TELEMETRY_DELTA_FIELDS",
    "INTERVAL_METHOD",
    "compare_runs",
    "compatibility_warnings",
    "paired_outcomes",
    "run_paired_outcomes",
    "paired_entry",
    "check_warning_kinds",
    "blocking_warnings",
]

COMPARISON_SCHEMA_VERSION = "capbench.comparison/1"

#: The paired metrics, in document order: the registry's rates of yes-or-no task outcomes.
PAIRED_METRICS = tuple(m.name for m in paired_rates())
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
    return set(a["task_id"].astype(object).to_numpy()[as_bool(a["agent_eligible"])])


def _warning(code: str, message: str, **details: Any) -> dict:
    return {"code": code, "message": message, "details": details}


def _differing(config_a: dict, config_b: dict, keys: list[str]) -> str:
    """``"key": A value in A, B value in B`` for each key, joined by semicolons."""
    return "; ".join(f"{_show(key)}: {_show(config_a.get(key))} in A, {_show(config_b.get(key))} in B" for key in keys)


def _identity_warnings(run_a: Run, run_b: Run) -> list[dict]:
    """The ``suite``, ``suite_version``, ``task_set`` and ``k`` warnings."""
    out = []
    suite_a, suite_b = _suite(run_a), _suite(run_b)
    if suite_a["name"] != suite_b["name"]:
        out.append(_warning("suite", f"different suites: A runs {_show(suite_a['name'])}, B runs {_show(suite_b['name'])}",
                            a=suite_a["name"], b=suite_b["name"]))
    if suite_a["version"] != suite_b["version"]:
        out.append(_warning("suite_version", f"different suite versions: A has {_show(suite_a['version'])}, "
                            f"B has {_show(suite_b['version'])}; tasks with the same id may not be the same task",
                            a=suite_a["version"], b=suite_b["version"]))

    ids_a, ids_b = _plan_ids(run_a), _plan_ids(run_b)
    set_a, set_b = set(ids_a), set(ids_b)
    common = [t for t in ids_a if t in set_b]
    only_a = [t for t in ids_a if t not in set_b]
    only_b = [t for t in ids_b if t not in set_a]
    if only_a or only_b:
        out.append(_warning("task_set", f"different task sets: A plans {len(ids_a)} tasks, B plans {len(ids_b)}, "
                            f"{len(common)} in common ({len(only_a)} only in A, {len(only_b)} only in B); "
                            f"only the {len(common)} common tasks are paired",
                            a=len(ids_a), b=len(ids_b), common=len(common), only_in_a=len(only_a),
                            only_in_b=len(only_b)))

    k_a, k_b = int(run_a.k), int(run_b.k)
    if k_a != k_b:
        out.append(_warning("k", f"different k: A has k = {k_a}, B has k = {k_b}; pass@k and pass^k are compared at "
                            f"k = {min(k_a, k_b)}, the smaller (attempts 1..{min(k_a, k_b)} of each task in both runs)",
                            a=k_a, b=k_b, paired=min(k_a, k_b)))
    return out


def _lock_warnings(run_a: Run, run_b: Run) -> list[dict]:
    """The ``lock`` warning (spec section 12): the runs name different locks, or one names none; with both lock
    copies at hand, the differing sections and up to LOCK_DIFF_PATHS differing paths."""
    lock_a, lock_b = manifest_lock(run_a.manifest), manifest_lock(run_b.manifest)
    if lock_a == lock_b:
        return []
    message = f"different locks: A names {_show(lock_a) if lock_a else 'none'}, B names {_show(lock_b) if lock_b else 'none'}"
    copy_a, copy_b = run_a.lock_copy, run_b.lock_copy  # read and checked by load_run
    details: dict[str, Any] = {"a": lock_a, "b": lock_b}
    if copy_a is not None and copy_b is not None:
        sections, paths, n = lock_differences(copy_a, copy_b)
        more = f" and {n - len(paths)} more" if n > len(paths) else ""
        message += (f"; they differ in {', '.join(sections) or 'nothing but their digest'}"
                    + (f": {', '.join(paths)}{more}" if paths else ""))
        details.update(sections=sections, paths=paths, differing_paths=n)
    return [_warning("lock", message + "; the runs may not have met the same conditions", **details)]


def _judge_warnings(config_a: dict, config_b: dict, judge_differs: list[str]) -> list[dict]:
    """The ``judge`` warning: declared judge modes differ, or the judge as enabled on common tasks."""
    judge_a, judge_b = config_a.get("judge"), config_b.get("judge")
    if judge_a == judge_b and not judge_differs:
        return []
    parts = []
    if judge_a != judge_b:
        parts.append(f"config.judge is {_show(judge_a)} in A and {_show(judge_b)} in B"
                     + (" (false: a --no-judge run, where success is the hard assertions alone)"
                        if False in (judge_a, judge_b) else ""))
    if judge_differs:
        parts.append(f"the judge was enabled in one run and not the other on {len(judge_differs)} "
                     f"common task(s) (attempt.json evaluation.judge_enabled): {_listing(judge_differs)}")
    return [_warning("judge", "different judge mode: " + "; ".join(parts), a=judge_a, b=judge_b, tasks=judge_differs)]


def _configuration_warnings(run_a: Run, run_b: Run, config_a: dict, config_b: dict, other: list[str]) -> list[dict]:
    """The ``model``, ``config`` and ``toolkit_version`` warnings."""
    out = []
    if config_a.get("model") != config_b.get("model"):
        out.append(_warning("model", f"different models: A used {_show(config_a.get('model'))}, "
                            f"B used {_show(config_b.get('model'))}", a=config_a.get("model"), b=config_b.get("model")))
    if other:
        out.append(_warning("config", "other configuration differs: " + _differing(config_a, config_b, other),
                            keys=other, a={key: config_a.get(key) for key in other},
                            b={key: config_b.get(key) for key in other}))
    runner_a, runner_b = _runner(run_a), _runner(run_b)
    if runner_a != runner_b:
        def label(runner: dict | None) -> str:
            return "no runner named" if runner is None else f"{_show(runner.get('name'))} version {_show(runner.get('version'))}"

        out.append(_warning("toolkit_version", f"different toolkits produced the runs: A by {label(runner_a)}, "
                            f"B by {label(runner_b)}", a=runner_a, b=runner_b))
    return out


def _contract_warnings(config_a: dict, config_b: dict, hard_differs: list[str], contracts_a: dict, contracts_b: dict,
                       evaluation_keys: list[str]) -> list[dict]:
    """The ``evaluation_contract`` warning: hard assertions differ on common tasks, or evaluation settings differ."""
    if not (hard_differs or evaluation_keys):
        return []
    parts = []
    if hard_differs:
        t = hard_differs[0]
        parts.append(f"the hard assertions differ on {len(hard_differs)} common task(s): {_listing(hard_differs)} "
                     f"(e.g. {_show(t)}: A checks {_show(list(contracts_a[t][0]))}, B checks {_show(list(contracts_b[t][0]))})")
    if evaluation_keys:
        parts.append("evaluation settings differ: " + _differing(config_a, config_b, evaluation_keys))
    return [_warning("evaluation_contract", "different evaluation contract (what success means): " + "; ".join(parts),
                     tasks=hard_differs, keys=evaluation_keys,
                     a={key: config_a.get(key) for key in evaluation_keys},
                     b={key: config_b.get(key) for key in evaluation_keys})]


def _compatibility(run_a: Run, run_b: Run) -> tuple[list[dict], list[dict]]:
    """(warnings, unchecked) for two runs; see the module docstring for the codes (in that order)."""
    ids_b = set(_plan_ids(run_b))
    common = [t for t in _plan_ids(run_a) if t in ids_b]
    config_a, config_b = _config(run_a), _config(run_b)
    evaluated_a, evaluated_b = _evaluated_tasks(run_a), _evaluated_tasks(run_b)
    evaluated = [t for t in common if t in evaluated_a and t in evaluated_b]
    contracts_a = run_a.evaluation_contracts(evaluated)
    contracts_b = run_b.evaluation_contracts(evaluated)
    both_known = [t for t in evaluated if t in contracts_a and t in contracts_b]
    judge_differs = [t for t in both_known if contracts_a[t][1] != contracts_b[t][1]]
    hard_differs = [t for t in both_known if contracts_a[t][0] != contracts_b[t][0]]

    keys = sorted((set(config_a) | set(config_b)) - {"model", "judge"})
    differing = [key for key in keys if config_a.get(key, None) != config_b.get(key, None) or (key in config_a) != (key in config_b)]
    other = [key for key in differing if not _EVAL_KEY.search(key)]
    evaluation_keys = [key for key in differing if _EVAL_KEY.search(key)]

    warnings = (_identity_warnings(run_a, run_b)
                + _lock_warnings(run_a, run_b)
                + _judge_warnings(config_a, config_b, judge_differs)
                + _configuration_warnings(run_a, run_b, config_a, config_b, other)
                + _contract_warnings(config_a, config_b, hard_differs, contracts_a, contracts_b, evaluation_keys))

    unchecked: list[dict] = []
    if len(both_known) < len(evaluated):
        missing = len(evaluated) - len(both_known)
        unchecked.append({
            "code": "evaluation_contract",
            "reason": f"the hard assertions and the judge as enabled were not compared on {missing} of the "
                      f"{len(evaluated)} common task(s) evaluated in both runs: no readable attempt.json of an "
                      "evaluated attempt (artifact_dir null or artifacts missing) in one run or both",
            "tasks_checked": len(both_known),
        })
    if _suite(run_a)["name"] is None and _suite(run_b)["name"] is None:
        unchecked.append({"code": "suite", "reason": "neither manifest names its suite", "tasks_checked": None})
    return warnings, unchecked


def compatibility_warnings(run_a: Run, run_b: Run) -> list[dict]:
    """The compatibility warnings of two runs, ``[{"code", "message", "details"}]`` in :data:`WARNING_CODES` order.

    An empty list means no difference was found (see ``compare_runs(...)["compatibility"]["unchecked"]``
    for what could not be checked).  The codes are described in the module docstring.
    """
    return _compatibility(run_a, run_b)[0]


def check_warning_kinds(kinds) -> tuple[str, ...]:
    """The warning kinds named by ``--allow-diff``, checked against :data:`WARNING_CODES`.

    Parameters
    ----------
    kinds : iterable of str
        Warning codes such as ``"model"``; repeats are dropped, order kept.

    Returns
    -------
    tuple of str

    Raises
    ------
    ValueError
        One sentence naming the first unknown kind and every valid one.
    """
    out = tuple(dict.fromkeys(kinds))
    for kind in out:
        if kind not in WARNING_CODES:
            raise ValueError(f"unknown warning kind {_show(kind)} for --allow-diff; the kinds are "
                             f"{', '.join(WARNING_CODES)}")
    return out


def blocking_warnings(warnings: list[dict], allowed=()) -> list[dict]:
    """The warnings that make ``compare --strict`` fail: those whose code is not in ``allowed``.

    Parameters
    ----------
    warnings : list of dict
        ``compare_runs(...)["compatibility"]["warnings"]``.
    allowed : iterable of str
        Warning kinds declared intended (``--allow-diff``), checked with
        :func:`check_warning_kinds`.

    Returns
    -------
    list of dict
        The other warnings, in their order.
    """
    allowed = set(check_warning_kinds(allowed))
    return [w for w in warnings if w.get("code") not in allowed]


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
        raise ValueError(f"unknown metric {_show(metric)}; the metrics are {', '.join(PAIRED_METRICS)}, selected@k")
    missing = [f"{label} ({_show(run.run_id)})" for label, run in zip(labels, (run_a, run_b)) if run.selection is None]
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
    warnings, unchecked = _compatibility(run_a, run_b)
    ids_a, ids_b = _plan_ids(run_a), _plan_ids(run_b)
    set_a, set_b = set(ids_a), set(ids_b)
    common = [t for t in ids_a if t in set_b]
    k_paired = min(int(run_a.k), int(run_b.k))
    paired, flips = _paired(run_a, run_b, confidence)
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
