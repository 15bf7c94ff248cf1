"""Versions and vocabularies of the run format (spec sections 2-5 and 8)."""

from __future__ import annotations

__all__ = [
    "RUN_SCHEMA_VERSION", "METRICS_SCHEMA_VERSION", "FAILURE_CLASSES", "CLASS_KEYS", "INELIGIBLE_CLASSES",
    "FAILURE_STAGES", "RUN_STATUSES", "ANOMALY_KINDS", "RECORD_ANOMALIES", "SETUP_STATUSES", "AGENT_STATUSES",
    "JUDGE_STATUSES", "JUDGE_VERDICTS", "MANIFEST", "RESULTS", "SELECTION", "SELECTION_ANOMALIES",
]

RUN_SCHEMA_VERSION = "capbench.run/1"
METRICS_SCHEMA_VERSION = "capbench.metrics/1"

#: Failure classes of a record (section 3); ``""`` is a success.  The readers map a class to its
#: position here only through this tuple, never through a hard-coded number.
FAILURE_CLASSES = ("agent", "environment", "evaluation", "skipped", "unknown")
#: Keys of ``attempts.by_failure_class``: successes first, then every failure class.
CLASS_KEYS = ("success",) + FAILURE_CLASSES
#: Classes that keep an attempt out of the agent's denominators (``agent_eligible`` false).
INELIGIBLE_CLASSES = ("environment", "evaluation", "skipped")
FAILURE_STAGES = ("setup", "evaluation", "device_execution")
RUN_STATUSES = ("completed", "partial", "aborted")

#: Kinds of ``anomalies`` entries (section 8; ``invalid_selection_line``: section 9).
ANOMALY_KINDS = ("above_planned_repeats", "task_not_in_plan", "invalid_line", "invalid_selection_line")
#: The anomalies of selection.jsonl: ``anomaly_counts`` has their keys only when the run has that file.
SELECTION_ANOMALIES = ("invalid_selection_line",)
#: The anomalies a valid record can have: what the ``anomaly`` column of ``Run.records`` holds.
RECORD_ANOMALIES = ("above_planned_repeats", "task_not_in_plan")

#: Vocabularies of attempt.json (section 4).
SETUP_STATUSES = ("ok", "failed")
AGENT_STATUSES = ("completed", "timeout", "crashed", "not_started")
JUDGE_STATUSES = ("ok", "error")
JUDGE_VERDICTS = ("pass", "fail")

#: The two files of a run directory (spec section 1), and the optional selection file (section 9).
MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
SELECTION = "selection.jsonl"
