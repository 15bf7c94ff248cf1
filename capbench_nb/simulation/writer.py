"""A simulated run, in memory (:func:`build_run`) and as a run directory (:func:`simulate_run`).

:func:`simulate_run` writes a run directory in the run format v1
(``run-format.md``): ``manifest.json`` and either ``results.jsonl`` (without
artifacts) or ``attempts/<task_id>/<attempt>/`` artifact directories (with
``artifacts=True``; derive results.jsonl with ``capbench-nb ingest``).  Next to
them it writes ``simulation.json``, the ground truth
(:mod:`capbench_nb.simulation.truth`), and with ``selector_accuracy`` a ``selection.jsonl`` of a
best-of-k selector of that accuracy (:mod:`capbench_nb.simulation.selector`).  How attempts are drawn:
:mod:`capbench_nb.simulation.generator`.

Determinism: every draw comes from the seed (see the generator); nothing reads
the clock; key order is fixed.  The same arguments give byte-identical files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import ATTEMPT, EPISODE, HISTORY, RUN_SCHEMA_VERSION, new_record
from capbench_nb.records.outcome import classify
from capbench_nb.records.prices import price_cost
from capbench_nb.records.telemetry_extract import extract_telemetry
from capbench_nb.simulation.artifacts import artifact_documents, attempt_dir
from capbench_nb.simulation.generator import DrawnAttempt, PlannedTask, attempt_numbers, draw_attempt, draw_plan
from capbench_nb.simulation.options import SIMULATOR_VERSION, SimulationOptions
from capbench_nb.simulation.selector import selection_line, selection_truth
from capbench_nb.simulation.truth import TRUTH_FILE, attempt_truth, task_truth, truth_document

__all__ = ["SimulatedRun", "build_run", "simulate_run", "CREATED_AT"]

CREATED_AT = "2026-11-28T10:00:00Z"  # fixed: a simulated run has no wall-clock time


@dataclass(frozen=True)
class SimulatedRun:
    """A simulated run in memory: the manifest, the truth document, the draws and the selection lines."""

    manifest: dict
    truth: dict
    options: SimulationOptions
    attempts: tuple  # of DrawnAttempt, sorted by task_id then attempt
    selection: tuple = ()  # the lines of selection.jsonl, in plan order (with a selector only)


def _sort_key(task_id: str, attempt: int) -> tuple:
    return (task_id.encode("utf-8", "surrogatepass"), attempt)


def _options(tasks: int, repeats: int, seed: int, options: dict) -> SimulationOptions:
    """Check the arguments of :func:`build_run` and make its options."""
    if type(tasks) is not int or tasks < 1:
        raise ValueError(f"tasks must be an integer >= 1, got {tasks!r}")
    if type(repeats) is not int or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be an integer, got {seed!r}")
    try:
        opt = SimulationOptions(**options)
    except TypeError:
        known = ", ".join(f.name for f in fields(SimulationOptions))
        unknown = sorted(set(options) - {f.name for f in fields(SimulationOptions)})
        raise TypeError(f"unknown simulation option(s) {unknown}; known: {known}") from None
    opt.check(tasks, repeats)
    return opt


def _manifest(seed: int, opt: SimulationOptions, plan_tasks: list[PlannedTask], *, partial: bool,
              run_id: str | None = None, created_at: str | None = None) -> dict:
    """manifest.json of the simulated run (spec section 2)."""
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": f"sim-{seed}" if run_id is None else run_id,
        "suite": {"name": "mobile-core-sim", "version": "2026.11"},
        "created_at": CREATED_AT if created_at is None else created_at,
        "status": "partial" if partial else "completed",
        "runner": {"name": "capbench-nb-simulator", "version": SIMULATOR_VERSION},
        "config": {"model": opt.model, "provider": opt.provider, "platform": opt.platform, "judge": opt.judge},
        "plan": {
            "repeats_override": None,
            "k": min(t.planned for t in plan_tasks),
            "tasks": [{"task_id": t.task_id, "repeats": t.planned, "app": t.app, "platform": opt.platform}
                      for t in plan_tasks],
        },
    }


def build_run(*, tasks: int, repeats: int, seed: int, artifacts: bool = False, run_id: str | None = None,
              created_at: str | None = None, **options: Any) -> SimulatedRun:
    """Draw a run without touching the disk (see :func:`simulate_run` for the arguments)."""
    for name, value in (("run_id", run_id), ("created_at", created_at)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    opt = _options(tasks, repeats, seed, options)
    plan_tasks, shape = draw_plan(tasks, repeats, seed, opt)

    drawn: list[DrawnAttempt] = []
    tasks_truth = []
    for task in plan_tasks:
        numbers = attempt_numbers(task, shape)
        tasks_truth.append(task_truth(task, numbers))
        drawn.extend(draw_attempt(task, n, seed, opt) for n in numbers)
    drawn.sort(key=lambda a: _sort_key(a.task.task_id, a.attempt))

    manifest = _manifest(seed, opt, plan_tasks, partial=bool(shape["missing"] or shape["empty"]), run_id=run_id,
                         created_at=created_at)
    parameters = {"tasks": tasks, "repeats": repeats, "seed": seed, "artifacts": artifacts, **opt.as_json()}
    records = [attempt_truth(a, opt, artifacts=artifacts) for a in drawn]
    lines, selection = [], None
    if opt.selector_accuracy is not None:
        k = manifest["plan"]["k"]
        won: dict[str, dict[int, bool]] = {}
        for x in records:
            won.setdefault(x["task_id"], {})[x["attempt"]] = x["record"]["success"]
        ran = {t.task_id: [won[t.task_id][j] for j in range(1, k + 1)] for t in plan_tasks
               if all(j in won.get(t.task_id, {}) for j in range(1, k + 1))}  # the selector needs attempts 1..k
        lines = [selection_line(t, ran[t.task_id], seed, opt) for t in plan_tasks if t.task_id in ran]
        selection = selection_truth(opt, k, lines, ran)
    truth = truth_document(parameters, tasks_truth, records, selection=selection)
    return SimulatedRun(manifest=manifest, truth=truth, options=opt, attempts=tuple(drawn), selection=tuple(lines))


def _derived_record(a: DrawnAttempt, opt: SimulationOptions, files: dict, lock: str | None = None) -> dict:
    """The record of a runner that writes results.jsonl itself, by the toolkit's derivation rules.

    It keeps no artifacts, so it can cite no evidence and sets no stage.  Built by
    :func:`~capbench_nb.format.new_record`, as the derivation builds its records; the simulator's
    truth (``truth.truth_record``) stays independent on purpose: it states the expected record from
    the simulator's own draws, so it must not share the code under test.
    """
    outcome = classify(files[ATTEMPT], files.get(EPISODE), judge_default=opt.judge, lock=lock)
    telemetry, sources = extract_telemetry(files[ATTEMPT], files.get(EPISODE), files.get(HISTORY))
    cost, cost_source = price_cost(telemetry, opt.model, opt.price_table)
    return new_record(
        task_id=files[ATTEMPT]["task_id"], attempt=files[ATTEMPT]["attempt"], success=outcome.success,
        agent_eligible=outcome.agent_eligible, failure_class=outcome.failure_class,
        quality_score=outcome.quality_score, telemetry=telemetry, telemetry_source=sources, cost=cost,
        cost_source=cost_source,
    )


def _dump_lines(doc: dict) -> str:
    """JSON with one top-level key per line and one list element per line: readable, and small."""
    parts = []
    for key, value in doc.items():
        head = json.dumps(key, ensure_ascii=False) + ": "
        if isinstance(value, list) and value:
            items = ",\n".join("    " + _compact(item) for item in value)
            parts.append(f"  {head}[\n{items}\n  ]")
        else:
            parts.append("  " + head + _compact(value))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def _write_attempts(out: Path, run: SimulatedRun, documents, digest: str | None, *, artifacts: bool) -> None:
    """The attempts: their artifact directories (``artifacts``), else results.jsonl as ingest would derive it."""
    if artifacts:
        for a in run.attempts:
            for name, doc in documents(a).items():
                _write(out / attempt_dir(a) / name, _dump_lines(doc))
        return
    from capbench_nb.records.ingest import record_line  # the line format ingest writes

    lines = [record_line(_derived_record(a, run.options, documents(a), digest)) for a in run.attempts]
    _write(out / "results.jsonl", "".join(lines))


def _locked(run: SimulatedRun, lock, drift: float, seed: int, artifacts: bool) -> tuple[SimulatedRun, dict]:
    """The run as a run of ``lock`` with its preflights (:mod:`capbench_nb.simulation.drift`), or as it is."""
    if lock is None:
        if drift:
            raise ValueError("drift needs a lock")
        return run, {}
    from capbench_nb.simulation.drift import locked_run

    return locked_run(run, lock, drift, seed, artifacts=artifacts)


def simulate_run(
    out_dir: str | os.PathLike,
    *,
    tasks: int,
    repeats: int,
    seed: int,
    artifacts: bool = False,
    lock: Any = None,
    drift: float = 0.0,
    run_id: str | None = None,
    created_at: str | None = None,
    **options: Any,
) -> Path:
    """Write a realistic, seeded run directory and its ground truth ``simulation.json``.

    Parameters
    ----------
    out_dir : path-like
        The run directory to create; it may exist only if empty.
    tasks, repeats : int
        Planned tasks and planned repeats per task (>= 1).
    seed : int
        The only source of randomness: the same arguments give byte-identical files.
    artifacts : bool, default False
        Write ``attempts/<task_id>/<attempt>/`` (attempt.json, and episode.json
        and history.json when kept) and no results.jsonl: derive it with
        ``capbench-nb ingest``.  Without, write results.jsonl directly.
    **options
        Keyword-only options, see :class:`~capbench_nb.simulation.options.SimulationOptions`
        (rates, plan shape ``short_tasks``, ``missing_attempts``, ``empty_tasks``,
        ``extra_attempts``, ``price_table`` and ``selector_accuracy``).
    lock, drift : Lock and float, optional
        A run of this frozen suite, each attempt drifted with probability ``drift`` (:mod:`~capbench_nb.simulation.drift`).
    run_id, created_at : str, optional
        The manifest's ``run_id`` (default ``sim-<seed>``) and ``created_at`` (default :data:`CREATED_AT`: the
        simulator reads no clock), for runs that stand for different runs of a campaign.  Neither changes a draw.

    Returns
    -------
    Path
        ``out_dir``.

    Raises
    ------
    InvalidRunError
        ``out_dir`` exists and is not an empty directory (rule ``output-exists``).
    ValueError, TypeError
        Bad arguments or an unknown option.
    """
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidRunError(str(out), "output-exists",
                              "the output exists and is not an empty directory; give a new run directory")
    run = build_run(tasks=tasks, repeats=repeats, seed=seed, artifacts=artifacts, run_id=run_id, created_at=created_at,
                    **options)
    opt = run.options
    run, preflights = _locked(run, lock, drift, seed, artifacts)
    digest = lock.digest if lock is not None else None

    def documents(a):
        docs = artifact_documents(a, opt)
        if preflights:
            docs[ATTEMPT] = {**docs[ATTEMPT], "preflight": preflights[(a.task.task_id, a.attempt)][0]}
        return docs

    out.mkdir(parents=True, exist_ok=True)
    if lock is not None:
        from capbench_nb.records.lock import dumps_lock

        _write(out / "suite.lock.json", dumps_lock(lock))
    _write(out / "manifest.json", json.dumps(run.manifest, ensure_ascii=False, indent=2) + "\n")
    _write_attempts(out, run, documents, digest, artifacts=artifacts)
    if run.selection:
        _write(out / "selection.jsonl", "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n"
                                                for line in run.selection))
    _write(out / TRUTH_FILE, _dump_lines(run.truth))
    return out
