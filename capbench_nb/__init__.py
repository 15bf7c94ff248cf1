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
from typing import Any

from capbench_nb._version import __version__

#: Every public name, stated once: public name -> the module that defines it (imported on first use).
#: ``__all__``, ``__getattr__`` and ``__dir__`` are derived from it.
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
    "gate": ".metrics.gate",
    "campaign": ".metrics.campaign",
}

#: The public names defined here: the callers that read run directories before the stages compute.
_DEFINED = ("build_report", "board")

#: The public names: ``__version__``, every lazy name of :data:`_EXPORTS`, and those of :data:`_DEFINED`.
__all__ = ["__version__", *_EXPORTS, *_DEFINED]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)  # the public names only, not the module's machinery


def build_report(*args, **kwargs):
    """Execute the report notebook on a run (see :func:`capbench_nb.outputs.report.run.build_report`)."""
    from capbench_nb.outputs.report import run  # papermill and nbconvert only when used

    return run.build_report(*args, **kwargs)


def board(runs, *, allow_invalid: bool = False, skip_evidence: bool = False, **options):
    """The board.json document of N >= 2 runs (:func:`capbench_nb.metrics.board.board`, which takes
    loaded runs): a run given as a directory is loaded here, as :func:`load_run` does with
    ``strict=not allow_invalid`` and ``skip_evidence``; the options are the metrics function's."""
    from capbench_nb.metrics import board as boards
    from capbench_nb.records.run import Run, load_run

    loaded = [run if isinstance(run, Run) else load_run(run, strict=not allow_invalid, skip_evidence=skip_evidence)
              for run in runs]
    return boards.board(loaded, **options)
