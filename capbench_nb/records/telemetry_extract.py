"""Telemetry of one attempt, each field from its authoritative artifact (spec sections 5 and 8).

:func:`extract_telemetry` names the source (``FILE#POINTER``) of every non-null value.  Nothing is
guessed: a field whose source is absent is null, a count over a present source with no match is 0.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.format import EPISODE_ONLY_FIELDS, HISTORY, TELEMETRY, TELEMETRY_FIELDS, TOKEN_FIELDS
from capbench_nb.records.prices import ToolConfig, load_tool_config

__all__ = ["extract_telemetry"]


#: Each field's authoritative source, from the format's telemetry table.
_SOURCE = {f.name: f.source for f in TELEMETRY}
_SRC_WALL, _SRC_SETUP = _SOURCE["task_wall_ms"], _SOURCE["setup_ms"]
_SRC_MESSAGES, _SRC_EVENTS = _SOURCE["tool_calls"], _SOURCE["device_execution_ms"]
_SRC_SHOTS = _SOURCE["screenshot_capture_ms"]
_SRC_RUN_METRICS = {key: _SOURCE[key] for key in TOKEN_FIELDS + EPISODE_ONLY_FIELDS}
_SRC_ATTEMPTED, _SRC_SUCCEEDED = _SOURCE["recovery_attempted"], _SOURCE["recovery_succeeded"]
#: ``recovery: null`` says that none was attempted.
_SRC_RECOVERY = _SRC_ATTEMPTED.rsplit("/", 1)[0]
#: Token counts missing from run_metrics are summed from the history's usage.
_SRC_HISTORY_TOKENS = f"{HISTORY}#/messages"


def extract_telemetry(
    attempt: dict, episode: dict | None, history: dict | None, *, tools: ToolConfig | None = None
) -> tuple[dict, dict]:
    """Every telemetry field from its authoritative source (spec sections 5 and 8).

    Returns
    -------
    telemetry : dict
        Every field of section 5, in order; null when its source is absent.
    telemetry_source : dict
        For each non-null field, its source (``FILE#POINTER``), in the order of section 5.
    """
    tools = tools or load_tool_config()
    tel: dict[str, Any] = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(name: str, value: Any, source: str) -> None:
        if value is not None:
            tel[name] = value
            src[name] = source

    agent, setup = attempt.get("agent"), attempt.get("setup")
    put("task_wall_ms", agent.get("task_wall_ms") if isinstance(agent, dict) else None, _SRC_WALL)
    put("setup_ms", setup.get("duration_ms") if isinstance(setup, dict) else None, _SRC_SETUP)

    history_tokens: dict[str, int | None] = {}
    messages = history.get("messages") if history is not None else None
    if isinstance(messages, list):
        calls, actions, llm_calls, history_tokens = _history_counts(messages, tools.device_actions)
        put("tool_calls", calls, _SRC_MESSAGES)
        put("device_actions", actions, _SRC_MESSAGES)
        put("llm_calls", llm_calls, _SRC_MESSAGES)

    run_metrics = episode.get("run_metrics") if episode is not None else None
    run_metrics = run_metrics if isinstance(run_metrics, dict) else {}
    for key in TOKEN_FIELDS:  # fall back one by one to the history's usage
        if run_metrics.get(key) is not None:
            put(key, run_metrics[key], _SRC_RUN_METRICS[key])
        else:
            put(key, history_tokens.get(key), _SRC_HISTORY_TOKENS)
    for key in EPISODE_ONLY_FIELDS:
        put(key, run_metrics.get(key), _SRC_RUN_METRICS[key])

    events = episode.get("events") if episode is not None else None
    if isinstance(events, list):
        device_ms, tool_errors, replans = _event_counts(events)
        put("device_execution_ms", device_ms, _SRC_EVENTS)
        put("tool_errors", tool_errors, _SRC_EVENTS)
        put("replan_count", replans, _SRC_EVENTS)

    shots = attempt.get("screenshots")
    if isinstance(shots, list) and all(s.get("capture_ms") is not None for s in shots):
        put("screenshot_capture_ms", sum(s["capture_ms"] for s in shots), _SRC_SHOTS)

    if "recovery" in attempt:
        recovery = attempt["recovery"]
        if recovery is None:  # none attempted
            put("recovery_attempted", False, _SRC_RECOVERY)
        else:
            put("recovery_attempted", recovery.get("attempted"), _SRC_ATTEMPTED)
            put("recovery_succeeded", recovery.get("succeeded"), _SRC_SUCCEEDED)
    return tel, src


def _history_counts(messages: list, device: frozenset[str]) -> tuple[int, int, int, dict[str, int | None]]:
    """From history.json's messages, in one pass: tool calls of assistant messages, those naming a
    device action, messages with usage (LLM calls), and the usage's token sums by field.

    The sums are empty when no message has usage (a history without usage is no token source, spec
    section 8); a sum is None when a message's usage lacks that count; the total is input + output.
    """
    calls = actions = 0
    usages = []  # every message's usage object
    for msg in messages:
        if msg.get("role") == "assistant":
            for call in msg.get("tool_calls") or ():
                calls += 1
                if call.get("name") in device:
                    actions += 1
        usage = msg.get("usage")
        if isinstance(usage, dict):
            usages.append(usage)
    tokens: dict[str, int | None] = {}
    if usages:
        for key in ("input_tokens", "output_tokens"):
            values = [u.get(key) for u in usages]
            tokens[key] = None if None in values else sum(values)
        i, o = tokens["input_tokens"], tokens["output_tokens"]
        tokens["total_tokens"] = None if i is None or o is None else i + o
    return calls, actions, len(usages), tokens


def _event_counts(events: list) -> tuple[float, int, int]:
    """From episode.json's events, in one pass: the summed span (end - start) of device actions
    that have both, the tool errors and the replans."""
    spans = []
    tool_errors = replans = 0
    for e in events:
        kind = e.get("type")
        if kind == "device_action":
            start, end = e.get("start_ms"), e.get("end_ms")
            if start is not None and end is not None:
                spans.append(end - start)
        elif kind == "tool_error":
            tool_errors += 1
        elif kind == "replan":
            replans += 1
    return sum(spans), tool_errors, replans
