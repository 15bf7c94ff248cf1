"""The compatibility of two runs: what can make their numbers mean different things (``compare``, ``board``, ``gate``).

:func:`compatibility` gives the warnings and what could not be checked; :func:`compatibility_warnings`
the warnings alone; :func:`check_warning_kinds` and :func:`blocking_warnings` read ``--allow-diff``.
:func:`run_identity` is a run's identity as comparison.json states it.

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
"""

from __future__ import annotations

import json
import re
from typing import Any

from capbench_nb.metrics.options import WARNING_CODES  # stated there, for the command line
from capbench_nb.metrics.prepare import as_bool, counted_attempts
from capbench_nb.records.manifest import manifest_lock
from capbench_nb.records.run import Run
from capbench_nb.suite.diff import lock_differences

__all__ = ["WARNING_CODES", "compatibility", "compatibility_warnings", "check_warning_kinds", "blocking_warnings",
           "run_identity", "suite_identity", "plan_ids", "show_value"]

_EVAL_KEY = re.compile(r"^(judge|eval)|assert", re.IGNORECASE)
#: How many task ids a warning message names before "and N more".
_NAMED = 5


def show_value(value: Any) -> str:
    """A value as it reads in a message: JSON, so strings are quoted and null is null."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _listing(ids: list[str], limit: int = _NAMED) -> str:
    shown = ", ".join(show_value(t) for t in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _suite(run: Run) -> dict:
    suite = run.manifest.get("suite")
    suite = suite if isinstance(suite, dict) else {}
    return {"name": suite.get("name"), "version": suite.get("version")}


def suite_identity(run: Run) -> dict:
    """The suite as comparison.json and board.json state it: name and version, and ``lock`` (the digest) for a
    run of a frozen suite (spec 12), so the lock is seen at every step; a run without one has no ``lock`` key."""
    lock = manifest_lock(run.manifest)
    return {**_suite(run), **({"lock": lock} if lock else {})}


def _config(run: Run) -> dict:
    config = run.manifest.get("config")
    return config if isinstance(config, dict) else {}


def _runner(run: Run) -> dict | None:
    runner = run.manifest.get("runner")
    return runner if isinstance(runner, dict) else None


def plan_ids(run: Run) -> list[str]:
    """The run's planned task ids, in plan order, as strings."""
    return [str(t) for t in run.plan["task_id"].astype(object)]


def run_identity(run: Run) -> dict:
    """A run's identity as comparison.json states it: run_id, suite, status, runner, config, judge, k, tasks."""
    suite = run.manifest.get("suite")
    return {
        "run_id": run.run_id,
        "suite": suite_identity(run) if isinstance(suite, dict) else None,
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
    return "; ".join(f"{show_value(key)}: {show_value(config_a.get(key))} in A, {show_value(config_b.get(key))} in B" for key in keys)


def _identity_warnings(run_a: Run, run_b: Run) -> list[dict]:
    """The ``suite``, ``suite_version``, ``task_set`` and ``k`` warnings."""
    out = []
    suite_a, suite_b = _suite(run_a), _suite(run_b)
    if suite_a["name"] != suite_b["name"]:
        out.append(_warning("suite", f"different suites: A runs {show_value(suite_a['name'])}, B runs {show_value(suite_b['name'])}",
                            a=suite_a["name"], b=suite_b["name"]))
    if suite_a["version"] != suite_b["version"]:
        out.append(_warning("suite_version", f"different suite versions: A has {show_value(suite_a['version'])}, "
                            f"B has {show_value(suite_b['version'])}; tasks with the same id may not be the same task",
                            a=suite_a["version"], b=suite_b["version"]))

    ids_a, ids_b = plan_ids(run_a), plan_ids(run_b)
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
    message = f"different locks: A names {show_value(lock_a) if lock_a else 'none'}, B names {show_value(lock_b) if lock_b else 'none'}"
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
        parts.append(f"config.judge is {show_value(judge_a)} in A and {show_value(judge_b)} in B"
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
        out.append(_warning("model", f"different models: A used {show_value(config_a.get('model'))}, "
                            f"B used {show_value(config_b.get('model'))}", a=config_a.get("model"), b=config_b.get("model")))
    if other:
        out.append(_warning("config", "other configuration differs: " + _differing(config_a, config_b, other),
                            keys=other, a={key: config_a.get(key) for key in other},
                            b={key: config_b.get(key) for key in other}))
    runner_a, runner_b = _runner(run_a), _runner(run_b)
    if runner_a != runner_b:
        def label(runner: dict | None) -> str:
            return "no runner named" if runner is None else f"{show_value(runner.get('name'))} version {show_value(runner.get('version'))}"

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
                     f"(e.g. {show_value(t)}: A checks {show_value(list(contracts_a[t][0]))}, B checks {show_value(list(contracts_b[t][0]))})")
    if evaluation_keys:
        parts.append("evaluation settings differ: " + _differing(config_a, config_b, evaluation_keys))
    return [_warning("evaluation_contract", "different evaluation contract (what success means): " + "; ".join(parts),
                     tasks=hard_differs, keys=evaluation_keys,
                     a={key: config_a.get(key) for key in evaluation_keys},
                     b={key: config_b.get(key) for key in evaluation_keys})]


def compatibility(run_a: Run, run_b: Run) -> tuple[list[dict], list[dict]]:
    """(warnings, unchecked) for two runs; see the module docstring for the codes (in that order)."""
    ids_b = set(plan_ids(run_b))
    common = [t for t in plan_ids(run_a) if t in ids_b]
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
    return compatibility(run_a, run_b)[0]


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
            raise ValueError(f"unknown warning kind {show_value(kind)} for --allow-diff; the kinds are "
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
