"""The type checks of an attempt's artifact files (spec section 4), as :data:`~capbench_nb.format.ARTIFACT` states them.

:func:`check_attempt`, :func:`check_episode` and :func:`check_history` raise
:class:`~capbench_nb.errors.InvalidRunError` (rule ``artifact-type``, or ``number-too-large``)
naming the file and the JSON pointer of the first value that breaks its row of the table; a test
holds each row to these checks.  A check looks at a value with the cheapest test that accepts
exactly what the rule accepts; only when it refuses does it build the JSON pointer and the message
(:func:`_fail`, :func:`_bad_number`), so a valid document costs no string formatting.  The rules
run in document order and the first broken one raises.
"""

from __future__ import annotations

import math
from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import (
    AGENT_STATUSES, JUDGE_STATUSES, JUDGE_VERDICTS, MAX_SAFE_NUMBER, SETUP_STATUSES, TELEMETRY, is_safe_number,
)

__all__ = ["check_attempt", "check_episode", "check_history"]

#: Keys of ``episode.json#/run_metrics``, and whether each is an integer (a count).
_RUN_METRICS = tuple((t.name, t.kind == "count") for t in TELEMETRY
                     if t.source == f"episode.json#/run_metrics/{t.name}")
#: Token counts of each ``history.json`` message's ``usage``.
_USAGE = ("input_tokens", "output_tokens", "total_tokens")


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)


def _fail(file: str, pointer: str, message: str, rule: str = "artifact-type") -> None:
    raise InvalidRunError(file, rule, message, pointer=pointer)


def _bad_number(file: str, pointer: str, value: Any, integer: bool) -> None:
    """Raise for a number the fast test refused (a non-negative number, or integer, at most 2**53-1).

    The tests run in this order; an integer of any size is finite."""
    ok = type(value) is int if integer else _is_number(value)
    # an int is finite (math.isfinite would raise OverflowError on one beyond a float's range)
    if not ok or (type(value) is float and not math.isfinite(value)) or value < 0:
        _fail(file, pointer, f"{pointer} must be a non-negative {'integer' if integer else 'number'} or null")
    if value > MAX_SAFE_NUMBER:
        _fail(file, pointer, f"{pointer} is {value}, above 2**53-1, the largest exactly representable value",
              "number-too-large")
    raise AssertionError(f"{pointer}: {value!r} passes the number rule")  # pragma: no cover


def _number(file: str, value: Any, pointer: str) -> None:
    """A non-negative number at most 2**53-1, or null."""
    if value is not None and not is_safe_number(value):
        _bad_number(file, pointer, value, False)


def _count(file: str, value: Any, pointer: str) -> None:
    """A non-negative integer at most 2**53-1, or null."""
    if value is not None and not is_safe_number(value, True):
        _bad_number(file, pointer, value, True)


def _object_or_null(file: str, value: Any, pointer: str) -> None:
    if value is not None and not isinstance(value, dict):
        _fail(file, pointer, f"{pointer} must be an object or null")


def _boolean(file: str, value: Any, pointer: str) -> None:
    if value is not None and type(value) is not bool:
        _fail(file, pointer, f"{pointer} must be true or false or null")


def _choice(file: str, value: Any, pointer: str, options: tuple) -> None:
    if value is not None and (not isinstance(value, str) or value not in options):
        _fail(file, pointer, f"{pointer} must be one of {', '.join(options)}")


def _list(file: str, value: Any, pointer: str) -> None:
    if not isinstance(value, list):
        _fail(file, pointer, f"{pointer} must be a list")


def _document(file: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        _fail(file, "", "the document must be an object")


def check_attempt(doc: Any, file: str) -> None:
    """The types of attempt.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    task_id = doc.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        _fail(file, "/task_id", "/task_id must be a non-empty string")
    number = doc.get("attempt")
    if type(number) is not int or number < 1:
        _fail(file, "/attempt", "/attempt must be an integer >= 1")
    setup = doc.get("setup")
    _object_or_null(file, setup, "/setup")
    if setup:
        _choice(file, setup.get("status"), "/setup/status", SETUP_STATUSES)
        _number(file, setup.get("duration_ms"), "/setup/duration_ms")
    provider = doc.get("provider")
    _object_or_null(file, provider, "/provider")
    if provider:
        _boolean(file, provider.get("available"), "/provider/available")
    _object_or_null(file, doc.get("skip"), "/skip")
    agent = doc.get("agent")
    _object_or_null(file, agent, "/agent")
    if agent:
        _choice(file, agent.get("status"), "/agent/status", AGENT_STATUSES)
        _number(file, agent.get("task_wall_ms"), "/agent/task_wall_ms")
    recovery = doc.get("recovery")
    _object_or_null(file, recovery, "/recovery")
    if recovery:
        _boolean(file, recovery.get("attempted"), "/recovery/attempted")
        _boolean(file, recovery.get("succeeded"), "/recovery/succeeded")
    shots = doc.get("screenshots")
    if shots is not None:
        _list(file, shots, "/screenshots")
        for i, shot in enumerate(shots):
            if not isinstance(shot, dict):
                _fail(file, f"/screenshots/{i}", f"/screenshots/{i} must be an object")
            v = shot.get("capture_ms")
            if v is not None and not is_safe_number(v):
                _bad_number(file, f"/screenshots/{i}/capture_ms", v, False)
    ev = doc.get("evaluation")
    _object_or_null(file, ev, "/evaluation")
    if ev:
        _boolean(file, ev.get("judge_enabled"), "/evaluation/judge_enabled")
        hard = ev.get("hard_assertions")
        if hard is not None:
            _list(file, hard, "/evaluation/hard_assertions")
            for i, item in enumerate(hard):
                if not isinstance(item, dict):
                    _fail(file, f"/evaluation/hard_assertions/{i}", f"/evaluation/hard_assertions/{i} must be an object")
                if type(item.get("passed")) is not bool:
                    _fail(file, f"/evaluation/hard_assertions/{i}/passed",
                          f"/evaluation/hard_assertions/{i}/passed must be true or false")
        judge = ev.get("judge")
        _object_or_null(file, judge, "/evaluation/judge")
        if judge:
            _choice(file, judge.get("status"), "/evaluation/judge/status", JUDGE_STATUSES)
            _choice(file, judge.get("verdict"), "/evaluation/judge/verdict", JUDGE_VERDICTS)
        q = ev.get("quality_score")
        if q is not None and (not _is_number(q) or not 0 <= q <= 1):
            _fail(file, "/evaluation/quality_score", "/evaluation/quality_score must be a number in [0, 1] or null")
    _check_preflight(file, doc.get("preflight"))


def _check_preflight(file: str, preflight: Any) -> None:
    """The optional ``preflight`` (spec section 12, :data:`~capbench_nb.format.PREFLIGHT`)."""
    _object_or_null(file, preflight, "/preflight")
    if preflight:
        lock = preflight.get("lock")
        if lock is not None and not isinstance(lock, str):
            _fail(file, "/preflight/lock", "/preflight/lock must be a string or null")
        probes = preflight.get("probes")
        if probes is not None:
            _list(file, probes, "/preflight/probes")
            for i, probe in enumerate(probes):
                if not isinstance(probe, dict):
                    _fail(file, f"/preflight/probes/{i}", f"/preflight/probes/{i} must be an object")


def check_episode(doc: Any, file: str) -> None:
    """The types of episode.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    metrics = doc.get("run_metrics")
    _object_or_null(file, metrics, "/run_metrics")
    if metrics:
        for key, integer in _RUN_METRICS:
            v = metrics.get(key)
            if v is not None and not is_safe_number(v, integer):
                _bad_number(file, f"/run_metrics/{key}", v, integer)
    events = doc.get("events")
    if events is not None:
        _list(file, events, "/events")
        for i, event in enumerate(events):
            if not isinstance(event, dict):
                _fail(file, f"/events/{i}", f"/events/{i} must be an object")
            kind = event.get("type")
            if kind is not None and not isinstance(kind, str):
                _fail(file, f"/events/{i}/type", f"/events/{i}/type must be a string")
            if kind == "device_action":
                start, end = event.get("start_ms"), event.get("end_ms")
                if start is not None and not is_safe_number(start):
                    _bad_number(file, f"/events/{i}/start_ms", start, False)
                if end is not None and not is_safe_number(end):
                    _bad_number(file, f"/events/{i}/end_ms", end, False)
                if start is not None and end is not None and end < start:
                    _fail(file, f"/events/{i}/end_ms", f"/events/{i} ends before it starts")


def check_history(doc: Any, file: str) -> None:
    """The types of history.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    messages = doc.get("messages")
    if messages is None:
        return
    _list(file, messages, "/messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            _fail(file, f"/messages/{i}", f"/messages/{i} must be an object")
        usage = msg.get("usage")
        if usage is not None:
            if not isinstance(usage, dict):
                _fail(file, f"/messages/{i}/usage", f"/messages/{i}/usage must be an object or null")
            for key in _USAGE:
                v = usage.get(key)
                if v is not None and not is_safe_number(v, True):
                    _bad_number(file, f"/messages/{i}/usage/{key}", v, True)
        calls = msg.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                _fail(file, f"/messages/{i}/tool_calls", f"/messages/{i}/tool_calls must be a list")
            for j, call in enumerate(calls):
                if not isinstance(call, dict):
                    _fail(file, f"/messages/{i}/tool_calls/{j}", f"/messages/{i}/tool_calls/{j} must be an object")
                name = call.get("name")
                if name is not None and not isinstance(name, str):
                    _fail(file, f"/messages/{i}/tool_calls/{j}/name", f"/messages/{i}/tool_calls/{j}/name must be a string")
