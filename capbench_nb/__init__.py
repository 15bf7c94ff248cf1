"""capbench-nb: reliable capability metrics for AI agent benchmark runs.

Data flows one way: raw run -> attempt records (:func:`load_run`) -> metrics
(:mod:`capbench_nb.metrics`) -> outputs (:mod:`capbench_nb.outputs`).

Every metric function takes a loaded run (``cb.pass_at_1(run)``, k defaulting to the run's
fixed k) or the attempts table with its plan (``cb.pass_at_1(run.attempts, plan=run.plan)``).

The names below are imported on first use (PEP 562), so that ``import
capbench_nb`` costs nothing beyond what the caller actually touches: a report
kernel needs the loader and the metrics, not scipy's distributions behind the
run comparison.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from capbench_nb._version import __version__

#: public name -> the module that defines it
_EXPORTS = {
    "InvalidRunError": ".errors",
    "Run": ".records.run",
    "load_run": ".records.run",
    "RunRecorder": ".records.recorder",
    "compute_metrics": ".metrics.document",
    "write_metrics": ".outputs.export",
    "verify": ".outputs.verify",
    "Rate": ".metrics.rates",
    "ScoreMean": ".metrics.rates",
    "pass_at_1": ".metrics.rates",
    "pass_at_k": ".metrics.rates",
    "pass_hat_k": ".metrics.rates",
    "oracle_best_score_at_k": ".metrics.rates",
    "per_task": ".metrics.rates",
    "attempt_counts": ".metrics.rates",
    "telemetry_aggregates": ".metrics.telemetry",
    "selection_metrics": ".metrics.selection",
    "TaskMean": ".metrics.health",
    "ClusteredError": ".metrics.health",
    "task_health": ".metrics.health",
    "inconsistent_share": ".metrics.health",
    "mean_quality_score": ".metrics.health",
    "all_attempts_pass_rate": ".metrics.health",
    "clustered_se": ".metrics.health",
    "prefix_curve": ".metrics.curves",
    "unbiased_curve": ".metrics.curves",
    "wilson_interval": ".metrics.stats",
    "metrics_by": ".metrics.slices",
    "register_slice": ".metrics.slices",
    "compare_runs": ".metrics.comparison",
    "import_inspect": ".records.importers",
    "import_taubench": ".records.importers",
    "import_tau2bench": ".records.importers",
    "board": ".metrics.board",
}

if TYPE_CHECKING:  # static analysers see the eager imports
    from capbench_nb.metrics.comparison import compare_runs
    from capbench_nb.records.importers import import_inspect, import_tau2bench, import_taubench
    from capbench_nb.metrics.board import board
    from capbench_nb.errors import InvalidRunError
    from capbench_nb.metrics.document import compute_metrics
    from capbench_nb.outputs.export import write_metrics
    from capbench_nb.records.run import Run, load_run
    from capbench_nb.metrics.rates import (
        Rate,
        ScoreMean,
        attempt_counts,
        oracle_best_score_at_k,
        pass_at_1,
        pass_at_k,
        pass_hat_k,
        per_task,
    )
    from capbench_nb.metrics.telemetry import telemetry_aggregates
    from capbench_nb.metrics.selection import selection_metrics
    from capbench_nb.metrics.health import (
        ClusteredError,
        TaskMean,
        all_attempts_pass_rate,
        clustered_se,
        inconsistent_share,
        mean_quality_score,
        task_health,
    )
    from capbench_nb.metrics.curves import prefix_curve, unbiased_curve
    from capbench_nb.records.recorder import RunRecorder
    from capbench_nb.metrics.slices import metrics_by, register_slice
    from capbench_nb.metrics.stats import wilson_interval
    from capbench_nb.outputs.verify import verify


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


def build_report(*args, **kwargs):
    """Execute the report notebook on a run (see :func:`capbench_nb.outputs.report.run.build_report`)."""
    from capbench_nb.outputs.report import run  # papermill and nbconvert only when used

    return run.build_report(*args, **kwargs)


__all__ = [
    "__version__",
    "InvalidRunError",
    "Run",
    "load_run",
    "RunRecorder",
    "compute_metrics",
    "write_metrics",
    "verify",
    "Rate",
    "ScoreMean",
    "pass_at_1",
    "pass_at_k",
    "pass_hat_k",
    "oracle_best_score_at_k",
    "per_task",
    "attempt_counts",
    "telemetry_aggregates",
    "selection_metrics",
    "TaskMean",
    "ClusteredError",
    "task_health",
    "inconsistent_share",
    "mean_quality_score",
    "all_attempts_pass_rate",
    "clustered_se",
    "prefix_curve",
    "unbiased_curve",
    "wilson_interval",
    "metrics_by",
    "register_slice",
    "compare_runs",
    "import_inspect",
    "import_taubench",
    "import_tau2bench",
    "board",
    "build_report",
]
