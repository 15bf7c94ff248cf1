"""Executing the board notebook: ``capbench-nb board``.

:func:`build_board` validates every run and the options, then executes ``notebooks/board.ipynb``
with papermill and publishes ``board.json``, ``board.md``, ``board.ipynb`` and ``board.html`` in
one step, exactly as ``report`` and ``compare`` do (the execution, the one-line errors naming a
failing cell, the staging folder and the publishing are :mod:`capbench_nb.outputs.build`'s).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from capbench_nb.errors import one_line
from capbench_nb.metrics.board import check_board_metric, check_board_options
from capbench_nb.outputs.board.files import BOARD_FILE, BOARD_MARKDOWN
from capbench_nb.outputs.build import build_outputs, find_notebook
from capbench_nb.records.run import load_run

__all__ = ["BOARD_NOTEBOOK", "build_board"]

#: The board notebook, by file name (see :func:`~capbench_nb.outputs.build.find_notebook`).
BOARD_NOTEBOOK = "board.ipynb"


def build_board(
    runs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    metric: str = "pass@1",
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 2000,
    allow_invalid: bool = False,
    skip_evidence: bool = False,
    progress: bool | None = None,
    notebook: str | os.PathLike | None = None,
) -> Path:
    """Execute the board notebook on N >= 2 runs: board.json, board.md, board.ipynb and board.html in ``out_dir``.

    The options are those of :func:`capbench_nb.metrics.board.board`.  The options and every run
    are checked first (a ValueError for an option, or for ``metric="selected@k"`` while some run
    has none; InvalidRunError for a run), before any kernel starts.  Returns the path of ``board.html``; a failing cell raises
    :class:`~capbench_nb.outputs.build.ReportError` and leaves ``out_dir`` as it was.
    """
    check_board_options(metric=metric, alpha=alpha, seed=seed, resamples=resamples, runs=len(runs))
    loaded = [load_run(r, strict=not allow_invalid, skip_evidence=skip_evidence) for r in runs]
    check_board_metric(loaded, metric)
    source = Path(notebook) if notebook is not None else find_notebook(BOARD_NOTEBOOK)
    parameters = {"runs": [os.path.abspath(r) for r in runs], "metric": metric, "alpha": float(alpha),
                  "seed": int(seed), "resamples": int(resamples), "allow_invalid": bool(allow_invalid),
                  "skip_evidence": bool(skip_evidence)}
    suites = sorted({str(s.get("name")) if isinstance(s := run.manifest.get("suite"), dict) else "None"
                     for run in loaded})
    title = f"board of {len(loaded)} runs on {one_line(', '.join(suites), 120)} · capbench-nb"
    return build_outputs(source, Path(out_dir), parameters, written=(BOARD_FILE, BOARD_MARKDOWN), stem="board",
                         title=title, progress=progress)
