"""The artifact files of a simulated attempt (spec section 4), rendered from its draws.

:func:`artifact_documents` gives ``attempt.json`` and, when the runtime kept
them, ``episode.json`` and ``history.json`` of one
:class:`~capbench_nb.simulation.generator.DrawnAttempt`.  They are written to
``attempts/<task_id>/<attempt>/`` (:func:`attempt_dir`) with ``--artifacts``, and fed to the
toolkit's derivation in memory without.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.format import ATTEMPT, EPISODE, HISTORY
from capbench_nb.simulation.generator import DrawnAttempt
from capbench_nb.simulation.options import SimulationOptions

__all__ = ["ATTEMPT", "EPISODE", "HISTORY", "attempt_dir", "artifact_files", "artifact_documents",
           "attempt_document", "episode_document", "history_document"]


def attempt_dir(a: DrawnAttempt) -> str:
    """The attempt's directory, relative to the run directory."""
    return f"attempts/{a.task.task_id}/{a.attempt}"


def artifact_files(a: DrawnAttempt) -> list[str]:
    """Names of the files :func:`artifact_documents` gives for the attempt, in that order."""
    return [ATTEMPT] + ([EPISODE] if a.started and a.episode else []) + ([HISTORY] if a.started and a.history else [])


def attempt_document(a: DrawnAttempt, opt: SimulationOptions) -> dict:
    """attempt.json: setup, provider, skip, agent, recovery, screenshots and evaluation (spec section 4)."""
    doc: dict[str, Any] = {"task_id": a.task.task_id, "attempt": a.attempt}
    if a.cause == "skipped":
        doc["setup"] = None
    else:
        doc["setup"] = {"status": "failed" if a.setup_failed else "ok", "duration_ms": a.setup_ms,
                        "error": "adb: device not found after reboot" if a.setup_failed else None}
    unavailable = a.cause == "provider_unavailable"
    doc["provider"] = {"available": not unavailable, "error": "HTTP 503 after 3 retries" if unavailable else None}
    doc["skip"] = {"reason": "task needs telephony; the device has no SIM"} if a.cause == "skipped" else None
    if not a.started:
        doc["agent"] = {"status": "not_started", "task_wall_ms": None}
    else:
        status = {"crashed": "crashed", "timeout": "timeout"}.get(a.cause, "completed")
        doc["agent"] = {"status": status, "task_wall_ms": a.wall_ms}
    if a.recovery != "missing":
        doc["recovery"] = None if a.recovery == "none" else {"attempted": True, "succeeded": a.recovery == "ok"}
    if a.screenshots is not None:
        doc["screenshots"] = [{"capture_ms": ms} if ms is not None else {"error": "capture timed out"}
                              for ms in a.screenshots]
    if not a.started or a.cause == "crashed":
        doc["evaluation"] = None
    else:
        judge = None
        if opt.judge:
            if a.judge_status == "error":
                judge = {"status": "error", "verdict": None, "score": None, "error": "judge request timed out"}
            else:
                judge = {"status": "ok", "verdict": a.verdict, "score": a.judge_score, "error": None}
        doc["evaluation"] = {"judge_enabled": opt.judge,
                             "hard_assertions": [{"name": n, "passed": p} for n, p in a.hard],
                             "judge": judge, "quality_score": a.quality}
    return doc


def episode_document(a: DrawnAttempt) -> dict:
    """episode.json: ``run_metrics`` (with the drawn gap) and the trajectory's events."""
    calls = a.calls
    rm: dict[str, Any] = {
        "input_tokens": sum(c["input"] for c in calls),
        "output_tokens": sum(c["output"] for c in calls),
    }
    rm["total_tokens"] = rm["input_tokens"] + rm["output_tokens"]
    rm["cached_input_tokens"] = sum(c["cached"] for c in calls)
    rm["reasoning_tokens"] = None if calls[0]["reasoning"] is None else sum(c["reasoning"] for c in calls)
    rm["time_to_first_token_ms"] = a.ttft_ms
    if a.rm_gap is not None:
        if a.rm_gap_absent:
            del rm[a.rm_gap]
        else:
            rm[a.rm_gap] = None
    return {"run_metrics": rm, "events": a.events}


def history_document(a: DrawnAttempt) -> dict:
    """history.json: the prompt, then each LLM call's message (with usage when kept) and tool result."""
    messages: list[dict] = [{"role": "user", "content": a.task.prompt}]
    for i, call in enumerate(a.calls, start=1):
        msg: dict[str, Any] = {"role": "assistant", "content": "" if call["tool"] else _final_text(a)}
        if a.history_usage:
            msg["usage"] = {"input_tokens": call["input"], "output_tokens": call["output"]}
        if call["tool"]:
            msg["tool_calls"] = [{"id": f"c{i}", "name": call["tool"], "arguments": call["args"]}]
        messages.append(msg)
        if call["tool"]:
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": call["result"]})
    return {"messages": messages}


def _final_text(a: DrawnAttempt) -> str:
    return "Done." if a.cause.startswith("success") or a.cause == "judge_error" else "I could not complete the task."


def artifact_documents(a: DrawnAttempt, opt: SimulationOptions) -> dict[str, dict]:
    """The documents of the attempt's directory, by file name (attempt.json first; the others when kept)."""
    files = {ATTEMPT: attempt_document(a, opt)}
    if a.started and a.episode:
        files[EPISODE] = episode_document(a)
    if a.started and a.history:
        files[HISTORY] = history_document(a)
    return files
