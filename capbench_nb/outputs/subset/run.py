"""Executing the subset notebook: ``capbench-nb suite select`` with its page.

:func:`build_subset_page` executes ``notebooks/subset.ipynb`` with papermill on a subset document
already computed (it is handed over as a JSON file, never as code) and publishes ``subset.json``,
``subset.md`` (and ``suite.lock.json`` with a lock), ``subset.ipynb`` and ``subset.html`` in one step,
as ``board`` does (:mod:`capbench_nb.outputs.build`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from capbench_nb.io.atomic import dumps
from capbench_nb.outputs.build import build_outputs, find_notebook
from capbench_nb.outputs.subset.files import LOCK_FILE, SUBSET_FILE, SUBSET_MARKDOWN

__all__ = ["SUBSET_NOTEBOOK", "build_subset_page"]

SUBSET_NOTEBOOK = "subset.ipynb"


def build_subset_page(doc: dict, out_dir: str | os.PathLike, *, lock: dict | None = None,
                      progress: bool | None = None, notebook: str | os.PathLike | None = None) -> Path:
    """Execute the subset notebook on ``doc``: subset.json, subset.md, subset.ipynb, subset.html in ``out_dir``
    (and suite.lock.json: ``lock``, the restricted lock of :func:`capbench_nb.metrics.subset.subset_lock`).

    Returns the path of subset.html; a failing cell raises
    :class:`~capbench_nb.outputs.build.ReportError` and leaves ``out_dir`` as it was.
    """
    source = Path(notebook) if notebook is not None else find_notebook(SUBSET_NOTEBOOK)
    written = (SUBSET_FILE, SUBSET_MARKDOWN) + ((LOCK_FILE,) if lock is not None else ())
    suite = doc["suite"] or {}
    title = f"subset of {doc['size']} tasks of {suite.get('name')} · capbench-nb"
    with tempfile.TemporaryDirectory(prefix="capbench-subset-") as tmp:
        handed = Path(tmp) / SUBSET_FILE
        handed.write_text(dumps(doc), encoding="utf-8")
        parameters = {"subset": str(handed), "lock": None}
        if lock is not None:
            parameters["lock"] = str(Path(tmp) / LOCK_FILE)
            Path(parameters["lock"]).write_text(dumps(lock), encoding="utf-8")
        return build_outputs(source, Path(out_dir), parameters, written=written, stem="subset", title=title,
                             progress=progress)
