"""The telemetry fields of a record, as data (spec sections 5 and 6).

Each field has a kind (``count``: a non-negative integer, ``ms``: a non-negative number of
milliseconds, ``bool``), a unit, the source pointer ``derivation`` reads it from, and the scope it
is aggregated over in metrics.json (``eligible``: agent-eligible attempts only; ``all``: every
counted attempt).  The tuples other modules use are derived from :data:`TELEMETRY`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "TelemetryField", "TELEMETRY", "TELEMETRY_FIELDS", "TELEMETRY_COUNT_FIELDS", "TELEMETRY_MS_FIELDS",
    "TELEMETRY_BOOL_FIELDS", "ALL_ATTEMPTS_TELEMETRY", "TELEMETRY_KINDS",
]

#: Kind of a telemetry field: JSON type, pandas dtype, arrow type.
TELEMETRY_KINDS = {
    "count": ("integer", "Int64", "int64"),
    "ms": ("number", "Float64", "float64"),
    "bool": ("boolean", "boolean", "bool"),
}


@dataclass(frozen=True)
class TelemetryField:
    """One field of a record's ``telemetry`` object.

    Attributes
    ----------
    name : str
    kind : {"count", "ms", "bool"}
    unit : str
    source : str
        ``FILE#JSON_POINTER`` of its authoritative source (``derivation.extract_telemetry``).
    scope : {"eligible", "all"}
        The attempts it is aggregated over (spec section 6).
    description : str
    """

    name: str
    kind: str
    unit: str
    source: str
    scope: str
    description: str

    @property
    def json_type(self) -> str:
        return TELEMETRY_KINDS[self.kind][0]

    @property
    def pandas_dtype(self) -> str:
        return TELEMETRY_KINDS[self.kind][1]

    @property
    def arrow_type(self) -> str:
        return TELEMETRY_KINDS[self.kind][2]


def _f(name, kind, unit, source, description, scope="eligible"):
    return TelemetryField(name, kind, unit, source, scope, description)


#: Telemetry fields in the order of spec section 5.
TELEMETRY = (
    _f("task_wall_ms", "ms", "ms", "attempt.json#/agent/task_wall_ms",
       "runner's monotonic time from prompt submission to agent termination"),
    _f("setup_ms", "ms", "ms", "attempt.json#/setup/duration_ms",
       "setup time, reported apart from task wall time", scope="all"),
    _f("tool_calls", "count", "calls", "history.json#/messages", "assistant tool calls"),
    _f("device_actions", "count", "actions", "history.json#/messages",
       "tool calls naming a known device action (read-only queries and screenshots excluded)"),
    _f("llm_calls", "count", "calls", "history.json#/messages", "messages carrying usage"),
    _f("input_tokens", "count", "tokens", "episode.json#/run_metrics/input_tokens",
       "input tokens; else summed from history usage"),
    _f("output_tokens", "count", "tokens", "episode.json#/run_metrics/output_tokens",
       "output tokens; else summed from history usage"),
    _f("total_tokens", "count", "tokens", "episode.json#/run_metrics/total_tokens",
       "total tokens; else history input + output"),
    _f("cached_input_tokens", "count", "tokens", "episode.json#/run_metrics/cached_input_tokens",
       "cached input tokens (run_metrics only)"),
    _f("reasoning_tokens", "count", "tokens", "episode.json#/run_metrics/reasoning_tokens",
       "reasoning tokens (run_metrics only)"),
    _f("time_to_first_token_ms", "ms", "ms", "episode.json#/run_metrics/time_to_first_token_ms",
       "time to the first token (run_metrics only)"),
    _f("device_execution_ms", "ms", "ms", "episode.json#/events",
       "sum of end_ms - start_ms over device_action events with both set"),
    _f("screenshot_capture_ms", "ms", "ms", "attempt.json#/screenshots", "sum of screenshots[].capture_ms"),
    _f("tool_errors", "count", "events", "episode.json#/events", "tool_error events"),
    _f("replan_count", "count", "events", "episode.json#/events", "replan events"),
    _f("recovery_attempted", "bool", "-", "attempt.json#/recovery/attempted",
       "the runner attempted a timeout recovery (false when recovery is null)"),
    _f("recovery_succeeded", "bool", "-", "attempt.json#/recovery/succeeded", "the recovery succeeded"),
)

TELEMETRY_FIELDS = tuple(f.name for f in TELEMETRY)
TELEMETRY_MS_FIELDS = tuple(f.name for f in TELEMETRY if f.kind == "ms")
TELEMETRY_BOOL_FIELDS = tuple(f.name for f in TELEMETRY if f.kind == "bool")
TELEMETRY_COUNT_FIELDS = tuple(f.name for f in TELEMETRY if f.kind == "count")
#: Telemetry aggregated over every attempt, not only eligible ones (spec section 6).
ALL_ATTEMPTS_TELEMETRY = tuple(f.name for f in TELEMETRY if f.scope == "all")
