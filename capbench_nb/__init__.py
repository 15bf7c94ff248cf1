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
    "register_slice": ".metrics.slices",
    "import_inspect": ".records.importers",
    "import_taubench": ".records.importers",
    "import_tau2bench": ".records.importers",
    "campaign": ".metrics.campaign",
}

#: The public names defined here: the callers that read run directories before the stages compute, and
#: those whose documents show themselves in Jupyter (:mod:`capbench_nb.outputs.documents`).
_DEFINED = ("build_report", "board", "gate", "compute_metrics", "compare_runs", "explore", "metrics_by")

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
    ``strict=not allow_invalid`` and ``skip_evidence``; the options are the metrics function's.

    Returns a :class:`~capbench_nb.outputs.documents.BoardDocument`: the document as a read-only dict that
    Jupyter shows as the board's first screen and table, with ``.to_frame()`` (one row per run).
    """
    from capbench_nb.metrics import board as boards
    from capbench_nb.outputs.documents import BoardDocument
    from capbench_nb.records.run import Run, load_run

    loaded = [run if isinstance(run, Run) else load_run(run, strict=not allow_invalid, skip_evidence=skip_evidence)
              for run in runs]
    return BoardDocument(boards.board(loaded, **options))


def compute_metrics(run, **options):
    """Every metric of ``run`` as the metrics.json document
    (:func:`capbench_nb.metrics.document.compute_metrics`, which returns a plain dict; the options are its
    ``slices``, ``quarantine_threshold`` and ``clusters``).

    Returns a :class:`~capbench_nb.outputs.documents.MetricsDocument`: the same document as a read-only dict
    (``doc["metrics"]["pass@1"]``, ``json.dumps(doc)``) that Jupyter shows as the headline cards, with
    ``.to_frame()`` (the headline metrics) and ``.to_frame("per_task")``.
    """
    from capbench_nb.metrics import document
    from capbench_nb.outputs.documents import MetricsDocument

    return MetricsDocument(document.compute_metrics(run, **options))


def compare_runs(run_a, run_b, **options):
    """The comparison.json document of run B against run A (:func:`capbench_nb.metrics.comparison.compare_runs`,
    which returns a plain dict; differences are B minus A; the options are its ``seed``, ``n_boot`` and
    ``confidence``).

    Returns a :class:`~capbench_nb.outputs.documents.ComparisonDocument`: the same document as a read-only dict
    that Jupyter shows as the verdicts and paired table, with ``.verdicts()`` and ``.to_frame()``.
    """
    from capbench_nb.metrics import comparison
    from capbench_nb.outputs.documents import ComparisonDocument

    return ComparisonDocument(comparison.compare_runs(run_a, run_b, **options))


def metrics_by(run, by, *, confidence: float = 0.95):
    """pass@1, pass@k and pass^k per slice (:func:`capbench_nb.metrics.slices.metrics_by`, which returns a plain
    DataFrame): one row per slice value, (metric, statistic) columns.

    Returns a :class:`~capbench_nb.outputs.documents.SliceTable`: the same DataFrame, shown in Jupyter and by
    ``repr`` as the report's slice table (each rate as "63.6% (7/11) [35.4%, 84.8%]"), with ``.tidy()`` (one
    row per slice and rate).
    """
    from capbench_nb.metrics import slices
    from capbench_nb.outputs.documents import SliceTable

    plain = slices.metrics_by(run, by, confidence=confidence)
    table = SliceTable(plain)
    table.attrs.update(plain.attrs)  # the run's k
    return table


def explore(run, *, allow_invalid: bool = False, skip_evidence: bool = False):
    """The task explorer of a run, shown inline in Jupyter (the report's explorer: every planned task,
    sortable and filterable, with its attempts and evidence); ``run`` is a loaded run or its directory."""
    from capbench_nb.metrics.document import compute_metrics as metrics_of
    from capbench_nb.outputs.report.explorer import Explorer
    from capbench_nb.records.run import Run, load_run

    if not isinstance(run, Run):
        run = load_run(run, strict=not allow_invalid, skip_evidence=skip_evidence)
    return Explorer(metrics_of(run), run)


def gate(baseline, candidate, *, metrics=None, metric=None, margin: float | None = None, alpha: float | None = None,
         allow_diff=(), allow_invalid: bool = False, skip_evidence: bool = False):
    """The regression gate of ``candidate`` against ``baseline`` (spec section 15).

    Parameters
    ----------
    baseline, candidate : Run or path-like
        Loaded runs, or run directories (loaded here with ``strict = not allow_invalid``, as
        :func:`capbench_nb.metrics.gate.gate_document` takes loaded runs); ``same_run`` compares the
        directories' real paths.
    metrics : str or sequence of str, optional
        The metrics to gate on (pass@1 when none); ``metric`` is a synonym for one.
    margin : float, default 0.02 (``metrics.gate.DEFAULT_MARGIN``)
        D: the largest drop tolerated.
    alpha : float, default 0.05 (``metrics.gate.DEFAULT_ALPHA``)
        One-sided level: the interval is at confidence 1 - 2 alpha.
    allow_diff : iterable of str
        Compatibility warning kinds that are intended.

    Returns
    -------
    Gate
        :class:`capbench_nb.outputs.gate.result.Gate`:
        ``gate(...).decision``, ``.exit_code``, ``.table()``, ``.document`` (gate.json).

    Examples
    --------
    >>> cb.gate("runs/main", "runs/pr-123", margin=0.03)   # doctest: +SKIP
    <gate pass: pass@1 pass (+1.0 pp, n = 50)>
    """
    import os

    from capbench_nb.metrics.gate import DEFAULT_ALPHA, DEFAULT_MARGIN, check_gate_options, gate_document
    from capbench_nb.outputs.gate.result import Gate
    from capbench_nb.records.run import Run, load_run

    chosen = metrics if metrics is not None else metric
    margin = DEFAULT_MARGIN if margin is None else margin
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    check_gate_options(metrics=chosen, margin=margin, alpha=alpha, allow_diff=allow_diff)  # before any run is read
    paths = [r.path if isinstance(r, Run) else r for r in (baseline, candidate)]
    same_run = os.path.realpath(paths[0]) == os.path.realpath(paths[1])
    runs = [r if isinstance(r, Run) else load_run(r, strict=not allow_invalid, skip_evidence=skip_evidence)
            for r in (baseline, candidate)]
    return Gate(gate_document(runs[0], runs[1], metrics=chosen, margin=margin, alpha=alpha, allow_diff=allow_diff,
                              same_run=same_run))
