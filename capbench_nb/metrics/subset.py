"""A representative subset of a suite and the estimate of a run from it (spec section 13).

:func:`select_subset` turns >= 3 loaded runs of one suite into the subset.json document (the chosen
tasks, strata, the estimator, the leave-one-run-out validation); :func:`estimate_run` turns a run
and that document into estimate.json; :func:`subset_lock` restricts a suite lock to the chosen tasks.  The numbers are :mod:`capbench_nb.metrics.subset_model`'s
(method ``stratified-rasch``; docs/subset.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.lock import LOCK_FILE
from capbench_nb.format.subset import ESTIMATE_SCHEMA, SUBSET_RULE, SUBSET_SCHEMA
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics.board import common_ground
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.metrics.prepare import k_eligible_mask, prepare
from capbench_nb.metrics.stats import wilson_interval
from capbench_nb.metrics.subset_model import (DRAWS, PRIOR_SD, TAU, apportion, choose_tasks, estimate_full,
                                              fit_rasch, information, plain_mean, residual_sd)
from capbench_nb.records.lock import lock_digest
from capbench_nb.records.run import Run
from capbench_nb.records.subset import subset_problems

__all__ = ["SUBSET_SCHEMA", "ESTIMATE_SCHEMA", "METHOD", "GLOBAL_METHOD", "MISSING_LABEL", "RANDOM_SUBSETS", "Outcomes",
           "run_outcomes", "select_subset", "estimate_run", "subset_estimate", "restrict_lock", "subset_lock"]

METHOD = "stratified-rasch"
#: The method's name without ``--strata``: one ability per run, systematic sampling over the whole suite.
GLOBAL_METHOD = "global-rasch"
#: The stratum value of a task whose plan has no label of the stratum dimension.
MISSING_LABEL = "(missing)"
#: Random subsets of the validation's baseline.
RANDOM_SUBSETS = 100
RULE = SUBSET_RULE


@dataclass(frozen=True)
class Outcomes:
    """The runs' outcomes on the common tasks (arrays runs x tasks, tasks in the first run's plan order).

    ``n``/``s``: eligible attempts 1..k and their successes; ``first_n``/``first_s``: attempt 1
    present and eligible, and it succeeded (pass@1's denominator and numerator).
    """

    tasks: list[str]
    strata: list[str]
    k: int
    n: np.ndarray
    s: np.ndarray
    first_n: np.ndarray
    first_s: np.ndarray

    def full_pass1(self) -> list[float | None]:
        """Each run's pass@1 over the common tasks (None with an empty denominator)."""
        return [plain_mean(a, b) for a, b in zip(self.first_n, self.first_s)]


def _error(message: str, path="") -> InvalidRunError:
    return InvalidRunError(str(path) or "(runs)", RULE, message)


def task_counts(run: Run, tasks: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(n, s, first_n, first_s)`` of ``run`` on ``tasks`` (each in its plan): attempts 1..k and attempt 1."""
    p = prepare(run.attempts, run.plan)
    index = {str(t): i for i, t in enumerate(run.plan["task_id"].astype(object))}
    where = np.asarray([index[t] for t in tasks], dtype=np.int64)
    size, won = p.prefix(int(k))
    size1, won1 = p.prefix(1)
    first = k_eligible_mask(size1, 1)[where]
    return (size[where].astype(float), won[where].astype(float), first.astype(float),
            (first & (won1[where] > 0)).astype(float))


def _strata(run: Run, tasks: list[str], dim: str | None) -> list[str]:
    if dim is None:
        return ["*"] * len(tasks)
    if dim not in run.plan.columns:
        raise _error(f"--strata {dim!r}: no plan task of the first run has that label", run.path / "manifest.json")
    labels = dict(zip(run.plan["task_id"].astype(object).map(str), run.plan[dim].astype(object)))
    return [MISSING_LABEL if labels[t] is None or labels[t] is pd.NA or labels[t] != labels[t] else str(labels[t])
            for t in tasks]


def run_outcomes(runs: Sequence[Run], *, strata: str | None = None) -> Outcomes:
    """The :class:`Outcomes` of the runs on their common tasks; strata labels from the first run's plan."""
    tasks, _, k = common_ground(runs)
    counts = [task_counts(run, tasks, k) for run in runs]
    return Outcomes(tasks, _strata(runs[0], tasks, strata), k, *(np.stack([c[i] for c in counts]) for i in range(4)))


def _choose(out: Outcomes, rows: Sequence[int], size: int, quotas: dict, seed: int) -> tuple[list[int], dict]:
    """The chosen task indices and the estimator fitted on the runs ``rows``."""
    theta, b = fit_rasch(out.n[rows], out.s[rows])
    chosen = choose_tasks(b, out.strata, quotas, np.random.default_rng(seed), weights=information(theta, b))
    estimator = {"b": b, "theta_mean": float(theta.mean()), "theta_sd": float(theta.std()),
                 "sigma_e": residual_sd(out.n[rows], out.s[rows])}
    return chosen, estimator


def _tau_b(x: list, y: list) -> float | None:
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    if len(pairs) < 2:
        return None
    tau = kendalltau([a for a, _ in pairs], [b for _, b in pairs]).statistic  # variant 'b' is scipy's default
    return None if tau != tau else round(float(tau), 6)


def _mae(x: list, y: list) -> float | None:
    d = [abs(a - b) for a, b in zip(x, y) if a is not None and b is not None]
    return round(float(np.mean(d)), 6) if d else None


def _validation(out: Outcomes, size: int, quotas: dict, seed: int, strata: bool) -> dict:
    """Leave-one-run-out over the runs, and the median of 100 seeded random subsets with the plain mean."""
    truth = out.full_pass1()
    runs = out.n.shape[0]
    estimates = []
    for left in range(runs):
        rows = [r for r in range(runs) if r != left]
        chosen, est = _choose(out, rows, size, quotas, seed)
        value = estimate_full(est["b"], out.strata, chosen, out.n[left, chosen], out.s[left, chosen],
                              theta_mean=est["theta_mean"], theta_sd=est["theta_sd"], sigma_e=est["sigma_e"],
                              tau=TAU if strata else 0.0, draws=DRAWS, seed=seed)
        estimates.append({"run": left, "estimate": round(value[0], 6), "ci_low": round(value[1], 6),
                          "ci_high": round(value[2], 6), "full_suite": None if truth[left] is None else round(truth[left], 6)})
    rng = np.random.default_rng([seed, 1])
    taus, maes = [], []
    for _ in range(RANDOM_SUBSETS):
        pick = np.sort(rng.choice(len(out.tasks), size=size, replace=False))
        plain = [plain_mean(out.n[r, pick], out.s[r, pick]) for r in range(runs)]
        taus.append(_tau_b(plain, truth))
        maes.append(_mae(plain, truth))
    values = [e["estimate"] for e in estimates]

    def median(xs):
        xs = [x for x in xs if x is not None]
        return round(float(np.median(xs)), 6) if xs else None

    return {"leave_one_run_out": {"kendall_tau_b": _tau_b(values, truth), "mae": _mae(values, truth),
                                  "runs": estimates},
            "random_subsets": {"count": RANDOM_SUBSETS, "estimator": "plain subset mean",
                               "kendall_tau_b": median(taus), "mae": median(maes)}}


def _metrics_digest(run: Run) -> str:
    return "sha256:" + hashlib.sha256(dumps(compute_metrics(run)).encode("utf-8")).hexdigest()


def check_inputs(runs: Sequence[Run], size: int) -> None:
    """At least 3 runs, of one suite, and ``0 < size <`` their common tasks; else InvalidRunError."""
    if len(runs) < 3:
        raise _error(f"suite select needs at least 3 runs, got {len(runs)}")
    suites = {(str(s.get("name")), str(s.get("version"))) if isinstance(s := run.manifest.get("suite"), dict)
              else ("None", "None") for run in runs}
    if len(suites) > 1:
        raise _error("the runs are of different suites: " + ", ".join(f"{n} {v}" for n, v in sorted(suites)))
    common = len(common_ground(runs)[0])
    if not 0 < size < common:
        raise _error(f"--size {size} must be at least 1 and below the {common} common tasks")


def _check_data(runs: Sequence[Run], out: Outcomes) -> None:
    """Each run has an eligible attempt (1..k) on most common tasks: the fit and the validation rest on them."""
    for run, n in zip(runs, out.n):
        with_data = int(np.count_nonzero(n))
        if 2 * with_data <= len(out.tasks):
            raise _error(f"run {run.run_id!r} has an eligible attempt on only {with_data} of {len(out.tasks)} common "
                         "tasks; a subset is chosen from the runs' outcomes and needs them on most tasks",
                         "" if run.path is None else Path(run.path) / "results.jsonl")


def select_subset(runs: Sequence[Run], *, size: int, strata: str | None = None, seed: int = 0) -> dict:
    """The subset.json document of spec section 13 (without files; a pure function of the runs).

    Raises
    ------
    InvalidRunError
        Fewer than 3 runs, runs of different suites, ``size`` not below the common tasks, a run with an
        eligible attempt on at most half the common tasks, or a ``strata`` dimension the first run's plan lacks.
    """
    check_inputs(runs, size)
    out = run_outcomes(runs, strata=strata)
    _check_data(runs, out)
    counts = dict(pd.Series(out.strata).value_counts(sort=False))
    counts = {v: int(counts[v]) for v in dict.fromkeys(out.strata)}
    quotas = apportion(counts, size)
    chosen, est = _choose(out, list(range(len(runs))), size, quotas, seed)
    suite = runs[0].manifest.get("suite")
    tau = TAU if strata else 0.0
    name = METHOD if strata else GLOBAL_METHOD
    return {
        "schema_version": SUBSET_SCHEMA,
        "suite": {"name": suite.get("name"), "version": suite.get("version")} if isinstance(suite, dict) else None,
        "size": int(size),
        "tasks": [out.tasks[i] for i in chosen],
        "full_tasks": len(out.tasks),
        "strata": {} if strata is None else {strata: {v: q for v, q in quotas.items()}},
        "from_runs": [{"run_id": run.run_id, "metrics": _metrics_digest(run)} for run in runs],
        "method": {"name": name, "seed": int(seed), "strata": strata, "k": int(out.k), "prior_sd": PRIOR_SD,
                   "tau": tau, "draws": DRAWS, "selection": "information-weighted systematic sampling over Rasch difficulty within strata"},
        "estimator": {"name": name, "k": int(out.k), "tau": tau, "draws": DRAWS, "seed": int(seed),
                      "theta_mean": round(est["theta_mean"], 9), "theta_sd": round(est["theta_sd"], 9),
                      "sigma_e": round(est["sigma_e"], 9),
                      "full_suite": [{"task_id": t, "stratum": v, "difficulty": round(float(d), 9)}
                                     for t, v, d in zip(out.tasks, out.strata, est["b"])]},
        "chosen": [{"task_id": out.tasks[i], "stratum": out.strata[i], "difficulty": round(float(est["b"][i]), 6),
                    "pass_rate": [None if out.n[r, i] == 0 else round(float(out.s[r, i] / out.n[r, i]), 6)
                                  for r in range(len(runs))]} for i in chosen],
        "validation": _validation(out, size, quotas, seed, strata is not None),
    }


def subset_estimate(estimator: dict, tasks: Sequence[str], n: np.ndarray, s: np.ndarray) -> dict:
    """The estimated full-suite pass@1 ``{"value", "ci_low", "ci_high", "method"}`` from a run's subset counts."""
    full = estimator["full_suite"]
    index = {e["task_id"]: i for i, e in enumerate(full)}
    value, low, high = estimate_full(np.array([e["difficulty"] for e in full]), [e["stratum"] for e in full],
                                     [index[t] for t in tasks], n, s, theta_mean=estimator["theta_mean"],
                                     theta_sd=estimator["theta_sd"], sigma_e=estimator["sigma_e"],
                                     tau=estimator["tau"], draws=estimator["draws"], seed=estimator["seed"])
    return {"value": round(value, 6), "ci_low": round(low, 6), "ci_high": round(high, 6), "method": estimator["name"]}


def _rate(successes: int, n: int, planned: int) -> dict:
    low, high = wilson_interval(successes, n)
    return {"value": successes / n if n else None, "successes": successes, "n": n, "ci_low": low, "ci_high": high,
            "coverage": n / planned if planned else None}


def estimate_run(run: Run, subset: dict) -> dict:
    """estimate.json for ``run`` (it must plan every subset task; only the subset tasks enter).

    Raises
    ------
    InvalidRunError
        A subset document with a problem (:func:`capbench_nb.records.subset.subset_problems`), or a subset
        task missing from the run's plan.
    """
    problems = subset_problems(subset)
    if problems:
        raise _error(problems[0], "(subset)")
    tasks = list(subset["tasks"])
    planned = set(run.plan["task_id"].astype(object).map(str))
    missing = [t for t in tasks if t not in planned]
    if missing:
        raise _error(f"{len(missing)} subset task(s) missing from the run's plan, e.g. {missing[0]!r}",
                     run.path / "manifest.json")
    n, s, first_n, first_s = task_counts(run, tasks, int(run.k))
    return {"schema_version": ESTIMATE_SCHEMA, "run_id": run.run_id,
            "pass@1": {"subset": _rate(int(first_s.sum()), int(first_n.sum()), len(tasks)),
                       "full_suite": subset_estimate(subset["estimator"], tasks, n, s)}}


def restrict_lock(lock_doc: dict, task_ids: Sequence[str], suffix: str, selection: dict | None = None) -> dict:
    """The lock restricted to ``task_ids`` (lock order), ``suite.version`` + ``suffix``, ``selection``, a new digest.

    A restricted lock is a new lock (spec section 12: a lock is never edited): every pin is kept, the
    digest is computed again.

    Raises
    ------
    InvalidRunError
        A task of ``task_ids`` is not in the lock (rule ``subset``).
    """
    wanted = set(task_ids)
    have = {t.get("task_id") for t in lock_doc.get("tasks", [])}
    missing = sorted(wanted - have)
    if missing:
        raise InvalidRunError(LOCK_FILE, RULE, f"{len(missing)} subset task(s) not in the lock, e.g. {missing[0]!r}")
    out = json.loads(json.dumps(lock_doc))
    out["suite"] = {**out["suite"], "version": f"{out['suite']['version']}{suffix}"}
    out["tasks"] = [t for t in out["tasks"] if t.get("task_id") in wanted]
    out["selection"] = selection
    out.pop("digest", None)
    out["digest"] = lock_digest(out)
    return out


def subset_lock(doc: dict, lock_doc: dict) -> dict:
    """The suite.lock.json of a subset (spec section 13): ``lock_doc`` (a validated lock, as
    :func:`~capbench_nb.records.lock.load_lock` reads it) restricted to the subset document ``doc``'s tasks,
    its version suffixed ``+subset<N>``, ``selection`` the subset document without its validation."""
    selection = {k: v for k, v in doc.items() if k != "validation"}
    return restrict_lock(dict(lock_doc), doc["tasks"], f"+subset{doc['size']}", selection)
