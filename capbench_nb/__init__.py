"""capbench-nb: reliable capability metrics for AI agent benchmark runs.

Data flows one way: raw run -> attempt records (:func:`load_run`) -> metrics
(:mod:`capbench_nb.metrics`) -> outputs (:mod:`capbench_nb.export`).
"""

from ._version import __version__
from .errors import InvalidRunError
from .export import compute_metrics, write_metrics
from .loading import Run, load_run
from .recorder import RunRecorder
from .metrics import (
    Rate,
    ScoreMean,
    attempt_counts,
    oracle_best_score_at_k,
    pass_at_1,
    pass_at_k,
    pass_hat_k,
    per_task,
    telemetry_aggregates,
)
from .comparison import compare_runs
from .slices import metrics_by, register_slice
from .stats import wilson_interval
from .verification import verify


def build_report(*args, **kwargs):
    """Execute the report notebook on a run (see :func:`capbench_nb.reportrun.build_report`)."""
    from .reportrun import build_report as _build_report  # papermill and nbconvert only when used

    return _build_report(*args, **kwargs)

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
    "wilson_interval",
    "metrics_by",
    "register_slice",
    "compare_runs",
    "build_report",
]
