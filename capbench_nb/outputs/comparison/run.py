"""Executing the comparison notebook: ``capbench-nb compare``.

:func:`build_comparison` validates both runs, executes ``compare_runs.ipynb`` and publishes
``comparison.json``, ``comparison.md``, ``comparison.ipynb`` and ``comparison.html``
(:func:`capbench_nb.outputs.build.build_outputs`).
"""

from __future__ import annotations

import os
from pathlib import Path

from capbench_nb.outputs.build import build_outputs, find_notebook, one_line_title
from capbench_nb.records.run import load_run

__all__ = ["build_comparison", "COMPARE_NOTEBOOK"]

#: The comparison notebook, by file name (see :func:`~capbench_nb.outputs.build.find_notebook`).
COMPARE_NOTEBOOK = "compare_runs.ipynb"


def build_comparison(
    run_a: str | os.PathLike,
    run_b: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    allow_invalid: bool = False,
    skip_evidence: bool = False,
    seed: int = 0,
    strict: bool = False,
    allow_diff: tuple[str, ...] | list[str] = (),
    progress: bool | None = None,
    notebook: str | os.PathLike | None = None,
) -> Path:
    """Execute the comparison notebook on two runs: comparison.json, .md, .ipynb and .html in ``out_dir``.

    Both runs are validated first (bad input raises InvalidRunError before any
    kernel starts).  Returns the path of ``comparison.html``.
    """
    a = load_run(run_a, strict=not allow_invalid, skip_evidence=skip_evidence)
    b = load_run(run_b, strict=not allow_invalid, skip_evidence=skip_evidence)
    source = Path(notebook) if notebook is not None else find_notebook(COMPARE_NOTEBOOK)
    parameters = {"run_a": os.path.abspath(run_a), "run_b": os.path.abspath(run_b), "strict": bool(strict),
                  "seed": int(seed), "allow_invalid": bool(allow_invalid),
                  "skip_evidence": bool(skip_evidence), "allow_diff": list(allow_diff)}
    return build_outputs(Path(source), Path(out_dir), parameters, written=("comparison.json", "comparison.md"),
                  stem="comparison", progress=progress,
                  title=f"{one_line_title(b.run_id, 120)} vs {one_line_title(a.run_id, 120)} · capbench-nb comparison")
