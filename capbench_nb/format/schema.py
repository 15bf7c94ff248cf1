"""Names and vocabularies of the run format (spec sections 3 and 5)."""

from __future__ import annotations

__all__ = [
    "RUN_SCHEMA_VERSION",
    "METRICS_SCHEMA_VERSION",
    "FAILURE_CLASSES",
    "CLASS_KEYS",
    "INELIGIBLE_CLASSES",
    "FAILURE_STAGES",
    "RUN_STATUSES",
    "TELEMETRY_FIELDS",
    "TELEMETRY_COUNT_FIELDS",
    "TELEMETRY_MS_FIELDS",
    "TELEMETRY_BOOL_FIELDS",
    "ALL_ATTEMPTS_TELEMETRY",
    "ANOMALY_KINDS",
    "MAX_SAFE_NUMBER",
    "MAX_REPEATS",
    "MAX_LINE_BYTES",
    "MAX_MANIFEST_BYTES",
]

RUN_SCHEMA_VERSION = "capbench.run/1"
METRICS_SCHEMA_VERSION = "capbench.metrics/1"

FAILURE_CLASSES = ("agent", "environment", "evaluation", "skipped", "unknown")
#: Keys of ``attempts.by_failure_class``: successes first, then every failure class.
CLASS_KEYS = ("success",) + FAILURE_CLASSES
INELIGIBLE_CLASSES = ("environment", "evaluation", "skipped")
FAILURE_STAGES = ("setup", "evaluation", "device_execution")
RUN_STATUSES = ("completed", "partial", "aborted")

#: Telemetry fields in the order of spec section 5.
TELEMETRY_FIELDS = (
    "task_wall_ms",
    "setup_ms",
    "tool_calls",
    "device_actions",
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "time_to_first_token_ms",
    "device_execution_ms",
    "screenshot_capture_ms",
    "tool_errors",
    "replan_count",
    "recovery_attempted",
    "recovery_succeeded",
)
TELEMETRY_MS_FIELDS = (
    "task_wall_ms",
    "setup_ms",
    "time_to_first_token_ms",
    "device_execution_ms",
    "screenshot_capture_ms",
)
TELEMETRY_BOOL_FIELDS = ("recovery_attempted", "recovery_succeeded")
TELEMETRY_COUNT_FIELDS = tuple(
    f for f in TELEMETRY_FIELDS if f not in TELEMETRY_MS_FIELDS and f not in TELEMETRY_BOOL_FIELDS
)
#: Telemetry aggregated over every attempt, not only eligible ones (spec section 6).
ALL_ATTEMPTS_TELEMETRY = ("setup_ms",)

ANOMALY_KINDS = ("above_planned_repeats", "task_not_in_plan", "invalid_line")

#: Largest number accepted in a numeric field: 2**53 - 1, the largest integer a
#: JSON reader in any language represents exactly.  Larger values are refused as
#: invalid input rather than silently rounded.
MAX_SAFE_NUMBER = 2**53 - 1

#: Largest planned repeats of a task (and ``repeats_override``).  The reliability curves hold
#: one point per j = 1..k, so k sets the size of metrics.json (about 400 bytes per j) and the
#: time to compute it.  Ten thousand attempts of one task is far beyond any agent benchmark
#: run; a plan above it is refused (``repeats-too-large``), never truncated.
MAX_REPEATS = 10_000

#: Longest line of results.jsonl, in bytes (its newline not included): 128 MiB.  A record is a
#: few hundred bytes; a longer line (such as a file that never ends, ``/dev/zero``) is refused
#: (``line-too-long``) instead of being read until memory runs out.
MAX_LINE_BYTES = 128 << 20

#: Largest manifest.json, in bytes: 64 MiB (about half a million plan tasks with labels).
MAX_MANIFEST_BYTES = 64 << 20
