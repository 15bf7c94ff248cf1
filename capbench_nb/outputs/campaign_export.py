"""``capbench-nb export``: runs into a campaign store (spec section 14), or one run as Every Eval Ever records.

:func:`export_campaign` loads each run (every rule of the format checked), computes the
metrics.json the toolkit writes for it (its sha256 goes into ``runs.parquet``) and hands the runs
to :func:`capbench_nb.records.campaign.store.write_store`, which publishes the store in one step.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from capbench_nb.io.atomic import json_pieces
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.records.campaign.store import write_store
from capbench_nb.records.run import Run, load_run

__all__ = ["metrics_sha256", "export_campaign"]


def metrics_sha256(run: Run) -> str:
    """``"sha256:"`` + the hex digest of the metrics.json bytes ``capbench-nb metrics`` writes for ``run``."""
    digest = hashlib.sha256()
    for piece in json_pieces(compute_metrics(run)):
        digest.update(piece.encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def export_campaign(runs: Sequence[str | os.PathLike | Run], out: str | os.PathLike, *, append: bool = False,
                    replace: bool = False, allow_invalid: bool = False, skip_evidence: bool = False) -> Path:
    """Write the runs into the campaign store ``out`` (see :func:`~capbench_nb.records.campaign.store.write_store`).

    Every run is loaded and checked before the store is touched; ``allow_invalid`` and
    ``skip_evidence`` are :func:`capbench_nb.load_run`'s options for runs given as paths.
    """
    loaded = [r if isinstance(r, Run) else load_run(r, strict=not allow_invalid, skip_evidence=skip_evidence)
              for r in runs]
    return write_store(out, [(run, metrics_sha256(run)) for run in loaded], append=append, replace=replace)
