"""Constants that the command line names in its help texts, without the numerical stack.

``capbench-nb --help`` builds every parser; importing :mod:`capbench_nb.metrics.compatibility`
or :mod:`capbench_nb.metrics.health` for two constants would load pandas and numpy (seconds).
They are stated here once and re-exported by those modules.
"""

from __future__ import annotations

__all__ = ["QUARANTINE_THRESHOLD", "WARNING_CODES"]

#: Warning codes of a run comparison, in the order they are reported.
WARNING_CODES = (
    "suite",
    "suite_version",
    "task_set",
    "k",
    "lock",
    "judge",
    "model",
    "config",
    "toolkit_version",
    "evaluation_contract",
)
#: The default quarantine threshold: environment plus evaluation attempts at least half of the counted ones.
QUARANTINE_THRESHOLD = 0.5
