"""Executing the report notebook: ``capbench-nb report``.

:func:`build_report` validates the run, executes ``run_report.ipynb`` with
papermill on a kernel of this Python environment, converts the executed
notebook to one self-contained ``report.html`` (code hidden, nothing fetched
from the network), and moves ``report.ipynb``, ``report.html``,
``summary.md`` and ``metrics.json`` into the output directory only when all
four were produced (:func:`capbench_nb.outputs.build.build_outputs`).

The notebook does the work (loading, metrics, the two exported files,
the displays); this module only checks the input and runs it.
"""

from __future__ import annotations

import os
from pathlib import Path

from capbench_nb.metrics.health import QUARANTINE_THRESHOLD, check_quarantine_threshold
from capbench_nb.outputs.build import build_outputs, find_notebook, one_line_title
from capbench_nb.records.run import load_run

__all__ = ["build_report", "REPORT_NOTEBOOK", "OUTPUT_FILES"]

#: The report notebook, by file name (see :func:`~capbench_nb.outputs.build.find_notebook`).
REPORT_NOTEBOOK = "run_report.ipynb"
#: What a report build writes into the output directory, in the order they are moved into place.
OUTPUT_FILES = ("metrics.json", "summary.md", "report.ipynb", "report.html")


def build_report(
    run_dir: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    *,
    allow_invalid: bool = False,
    skip_evidence: bool = False,
    slices: list[str] | tuple[str, ...] = (),
    quarantine_threshold: float = QUARANTINE_THRESHOLD,
    clusters: list[str] | tuple[str, ...] = (),
    progress: bool | None = None,
    notebook: str | os.PathLike | None = None,
) -> Path:
    """Execute the report notebook on a run and write its outputs.

    Parameters
    ----------
    run_dir : path-like
        The run directory.
    out_dir : path-like, optional
        Where ``report.html``, ``report.ipynb``, ``summary.md`` and
        ``metrics.json`` go (created if missing); default ``run_dir``.
    allow_invalid : bool, default False
        Skip invalid lines of results.jsonl (listed under anomalies) instead of failing.
    skip_evidence : bool, default False
        A run shared without its attempts/: evidence references are not resolved.
    slices : list of str
        Slice dimensions (plan labels or config keys) reported per value.
    quarantine_threshold : float, default 0.5
        The share of environment plus evaluation attempts that makes a task a quarantine
        candidate (spec section 11).
    clusters : list of str
        Dimensions (as ``slices``) to give the cluster-robust standard error for.
    progress : bool, optional
        papermill's progress bar on stderr; default: when stderr is a terminal.
    notebook : path-like, optional
        Another notebook to execute instead of ``run_report.ipynb`` (same
        parameters: ``run_dir``, ``out_dir``, ``report_dir``, ``allow_invalid``,
        ``slices``, ``quarantine_threshold``, ``clusters``; it must write ``metrics.json`` and ``summary.md`` into ``out_dir``).

    Returns
    -------
    Path
        The path of ``report.html``.

    Raises
    ------
    InvalidRunError
        The run is invalid, or the output directory exists and cannot be written into
        (``output-unwritable``); raised before any notebook runs.
    UnknownSliceError
        A slice or cluster dimension the run does not have; raised before any notebook runs.
    ValueError
        A quarantine threshold outside (0, 1]; raised before any notebook runs.
    ReportError
        A cell raised or the kernel failed; nothing in ``out_dir`` changed.
    """
    from capbench_nb.metrics.slices import slice_values

    threshold = check_quarantine_threshold(quarantine_threshold)
    run = load_run(run_dir, strict=not allow_invalid, skip_evidence=skip_evidence)  # bad input fails here, before any kernel starts
    for dim in (*slices, *clusters):
        slice_values(run, dim)
    source = Path(notebook) if notebook is not None else find_notebook(REPORT_NOTEBOOK)
    out = Path(out_dir) if out_dir is not None else Path(run_dir)
    parameters = {"run_dir": os.path.abspath(run_dir), "allow_invalid": bool(allow_invalid),
                  "skip_evidence": bool(skip_evidence), "slices": list(slices),
                  "quarantine_threshold": threshold, "clusters": list(clusters)}
    return build_outputs(source, out, parameters, written=("metrics.json", "summary.md"), stem="report",
                  title=f"{one_line_title(run.run_id, 120)} · capbench-nb report", progress=progress,
                  run_output=out_dir is None)
