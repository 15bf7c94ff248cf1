"""Writing metrics.json into an output directory."""

from __future__ import annotations

import os
from pathlib import Path

from capbench_nb.io.atomic import json_pieces, write_atomic
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.records.run import Run

__all__ = ["write_metrics", "write_document", "METRICS_FILE"]

METRICS_FILE = "metrics.json"


def write_metrics(run: Run, out_dir: str | os.PathLike | None = None, *, slices: tuple[str, ...] | list[str] = (),
                  **options) -> Path:
    """Compute and write ``metrics.json`` into ``out_dir`` (default: the run directory).

    ``options`` go to :func:`~capbench_nb.metrics.document.compute_metrics` (``quarantine_threshold``,
    ``clusters``).
    """
    doc = compute_metrics(run, slices=slices, **options)  # an unknown slice or cluster fails before DIR is made
    return write_document(doc, out_dir if out_dir is not None else run.path)


def write_document(doc: dict, out_dir: str | os.PathLike) -> Path:
    """Write a metrics document (:func:`~capbench_nb.metrics.document.compute_metrics`) as ``out_dir/metrics.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # written as it is encoded (the bytes of dumps): the text of a large document is never held whole
    return write_atomic(out / METRICS_FILE, json_pieces(doc))
