"""The ground truth of a simulated run: every attempt's intended record, and ``simulation.json``.

Truth and derivation are kept apart: the truth record of an attempt is built
from the simulator's own draws (what it knows happened,
:class:`~capbench_nb.simulation.generator.DrawnAttempt`), never by reading the
artifacts back; the records of results.jsonl come from the toolkit's
derivation (``ingest``, or :func:`capbench_nb.records.outcome.classify` and
:func:`capbench_nb.records.telemetry_extract.extract_telemetry` on the
in-memory artifacts when no artifacts are written).  Tests compare the two.
Field names and their authoritative sources come from the format description
(:data:`capbench_nb.format.TELEMETRY`).

Without artifacts the runner keeps no file a record could cite, so no record
has evidence or a failure stage (the format sets a stage only with evidence);
``artifact_dir`` is null and the truth's ``cause`` still says what happened.

The truth file ``simulation.json``::

    {"schema_version": "capbench.simulation/1", "simulator_version": "1",
     "parameters": {"tasks", "repeats", "seed", "artifacts", every option; price_table as an object or null},
     "causes": {cause: description},
     "tasks": [{"task_id", "app", "planned_repeats", "p_success", "skipped",
                "attempts": [numbers that ran], "missing_attempts": [planned numbers that did not]}],
     "attempts": [{"task_id", "attempt", "above_planned_repeats", "cause",
                   "files": [artifact files written], "record": {the intended results.jsonl record}}]}

``tasks`` is in plan order, ``attempts`` in results.jsonl order (task_id, then
attempt).  A run simulated with a selector (``selector_accuracy``) also has ``selection``: the
selector, its accuracy and model, the population rates and, per line of selection.jsonl, whether
the pick succeeded (:mod:`capbench_nb.simulation.selector`).  ``record`` has every field of spec section 3 (outcome, evidence,
quality score, all telemetry with its sources, cost).
"""

from __future__ import annotations

from typing import Any

from capbench_nb.format import ATTEMPT, EPISODE, HISTORY, TELEMETRY, TELEMETRY_FIELDS, TOKEN_FIELDS
from capbench_nb.simulation.artifacts import artifact_files, attempt_dir
from capbench_nb.simulation.generator import DEVICE_TOOLS, DrawnAttempt, PlannedTask
from capbench_nb.simulation.options import CAUSES, SIMULATOR_VERSION, SimulationOptions

__all__ = ["TRUTH_FILE", "TRUTH_SCHEMA_VERSION", "truth_record", "task_truth", "attempt_truth", "truth_document"]

TRUTH_FILE = "simulation.json"
TRUTH_SCHEMA_VERSION = "capbench.simulation/1"

#: Where the format says each telemetry field comes from (spec section 5).
_SOURCE = {t.name: t.source for t in TELEMETRY}


def _outcome(a: DrawnAttempt, *, with_artifacts: bool) -> tuple:
    """(success, agent_eligible, failure_class, failure_stage, evidence, quality_score) of the attempt."""
    cause = a.cause
    episode = a.started and a.episode
    stage, evidence, quality = None, [], None
    if cause == "skipped":
        success, eligible, fclass = False, False, "skipped"
    elif cause in ("setup_failed", "provider_unavailable", "not_started"):
        success, eligible, fclass = False, False, "environment"
        if cause == "setup_failed":
            stage, evidence = "setup", [f"{ATTEMPT}#/setup"]
    elif cause == "crashed":
        success, eligible, fclass = False, False, "unknown"
    elif cause == "judge_error":
        success, eligible, fclass = False, False, "evaluation"
        stage, evidence = "evaluation", [f"{ATTEMPT}#/evaluation/judge"]
    elif a.success:
        success, eligible, fclass, quality = True, True, "", a.quality
    else:
        success, eligible, fclass, quality = False, True, "agent", a.quality
        if episode and a.device_error_events:
            stage, evidence = "device_execution", [f"{EPISODE}#/events/{i}" for i in a.device_error_events]
    if not with_artifacts:
        stage, evidence = None, []
    return success, eligible, fclass, stage, evidence, quality


def _telemetry(a: DrawnAttempt, opt: SimulationOptions) -> tuple[dict, dict]:
    """The attempt's telemetry (every field, null where no source was kept) and its sources.

    A value is taken from the source the format names for it (:data:`capbench_nb.format.TELEMETRY`),
    except the token counts' fallback on history usage and a null ``recovery``.
    """
    episode, history = a.started and a.episode, a.started and a.history
    tel: dict[str, Any] = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(name: str, value: Any, source: str | None = None) -> None:
        if value is not None:
            tel[name], src[name] = value, source or _SOURCE[name]

    put("task_wall_ms", a.wall_ms)
    put("setup_ms", a.setup_ms)
    tool_calls = [c for c in a.calls if c["tool"] is not None]
    if history:
        put("tool_calls", len(tool_calls))
        put("device_actions", sum(c["tool"] in DEVICE_TOOLS for c in tool_calls))
        put("llm_calls", len(a.calls) if a.history_usage else 0)
    drawn = {
        "input_tokens": sum(c["input"] for c in a.calls),
        "output_tokens": sum(c["output"] for c in a.calls),
        "cached_input_tokens": sum(c["cached"] for c in a.calls),
        "reasoning_tokens": sum(c["reasoning"] for c in a.calls) if opt.reasoning_tokens else None,
        "time_to_first_token_ms": a.ttft_ms,
    }
    drawn["total_tokens"] = drawn["input_tokens"] + drawn["output_tokens"]
    for key in TOKEN_FIELDS:
        if episode and a.rm_gap != key:
            put(key, drawn[key])
        elif history and a.history_usage:
            put(key, drawn[key], f"{HISTORY}#/messages")
    for key in ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms"):
        if episode and a.rm_gap != key:
            put(key, drawn[key])
    if episode:
        put("device_execution_ms", a.device_ms)
        put("tool_errors", a.tool_errors)
        put("replan_count", a.replans)
    if a.screenshots is not None and None not in a.screenshots:
        put("screenshot_capture_ms", sum(a.screenshots))
    if a.recovery == "none":
        put("recovery_attempted", False, f"{ATTEMPT}#/recovery")
    elif a.recovery in ("ok", "failed"):
        put("recovery_attempted", True)
        put("recovery_succeeded", a.recovery == "ok")
    return tel, src


def _cost(tel: dict, opt: SimulationOptions) -> tuple[float | None, str | None]:
    """The cost ``ingest --prices`` gives, priced here from the drawn token counts (spec section 5)."""
    table = opt.price_table
    if table is None or opt.model not in table.models or tel["input_tokens"] is None \
            or tel["output_tokens"] is None:
        return None, None
    prices = table.models[opt.model]
    cached = min(tel["cached_input_tokens"] or 0, tel["input_tokens"])
    cost = round((tel["input_tokens"] - cached) * prices["input"]
                 + cached * prices.get("cached_input", prices["input"])
                 + tel["output_tokens"] * prices["output"], 12)
    return cost, f"{table.name}@{table.version}"


def truth_record(a: DrawnAttempt, opt: SimulationOptions, *, with_artifacts: bool) -> dict:
    """The record a correct derivation gives, from the simulator's own draws (never from the artifacts)."""
    success, eligible, fclass, stage, evidence, quality = _outcome(a, with_artifacts=with_artifacts)
    tel, src = _telemetry(a, opt)
    cost, cost_source = _cost(tel, opt)
    return {
        "task_id": a.task.task_id,
        "attempt": a.attempt,
        "artifact_dir": attempt_dir(a) if with_artifacts else None,
        "success": success,
        "agent_eligible": eligible,
        "failure_class": fclass,
        "failure_stage": stage,
        "evidence": evidence,
        "quality_score": quality,
        "telemetry": tel,
        "telemetry_source": src,
        "cost": cost,
        "cost_source": cost_source,
    }


def task_truth(task: PlannedTask, numbers: list[int]) -> dict:
    """The truth entry of a planned task whose attempts ``numbers`` ran."""
    missing = [n for n in range(1, task.planned + 1) if n not in numbers]
    return {"task_id": task.task_id, "app": task.app, "planned_repeats": task.planned,
            "p_success": task.p_success, "skipped": task.skipped,
            "attempts": numbers, "missing_attempts": missing}


def attempt_truth(a: DrawnAttempt, opt: SimulationOptions, *, artifacts: bool) -> dict:
    """The truth entry of an attempt: what happened, the files written and the intended record."""
    return {
        "task_id": a.task.task_id,
        "attempt": a.attempt,
        "above_planned_repeats": a.attempt > a.task.planned,
        "cause": a.cause,
        "files": artifact_files(a) if artifacts else [],
        "record": truth_record(a, opt, with_artifacts=artifacts),
    }


def truth_document(parameters: dict, tasks: list[dict], attempts: list[dict], *, selection: dict | None = None) -> dict:
    """The ``simulation.json`` document (see the module docstring); ``selection`` (the selector's truth,
    :func:`capbench_nb.simulation.selector.selection_truth`) only for a run simulated with a selector."""
    doc = {
        "schema_version": TRUTH_SCHEMA_VERSION,
        "simulator_version": SIMULATOR_VERSION,
        "parameters": parameters,
        "causes": CAUSES,
        "tasks": tasks,
        "attempts": attempts,
    }
    if selection is not None:
        doc["selection"] = selection
    return doc
