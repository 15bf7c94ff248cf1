"""Executing a page's notebook and publishing its outputs, shared by the three pages' runners
(:mod:`capbench_nb.outputs.report.run`, :mod:`capbench_nb.outputs.comparison.run`,
:mod:`capbench_nb.outputs.board.run`).

:func:`build_outputs` executes a notebook with papermill on a kernel of this Python environment
(:mod:`capbench_nb.outputs.notebook`), converts the executed notebook to one self-contained HTML
page (:func:`notebook_to_html`: code hidden, nothing fetched from the network), and moves the
outputs into the output directory only when all of them were produced (publishing is
:mod:`capbench_nb.io.publish`'s).  papermill and nbconvert are imported when a page is built,
not when the package is.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.io import interrupts, publish
from capbench_nb.io.atomic import fsync_directory, fsync_file, write_synced
from capbench_nb.outputs.notebook import INJECTED_TAG, execute_notebook, own_kernel

__all__ = [
    "build_outputs",
    "execute_notebook",
    "own_kernel",
    "find_notebook",
    "notebook_to_html",
    "one_line_title",
    "ReportError",
]

#: The nbconvert template shipped in ``capbench_nb/outputs/html/templates/``.
HTML_TEMPLATE = "capbench_report"

_PARAMETERS_TAG = "parameters"


class ReportError(RuntimeError):
    """The report notebook failed (a cell raised, or the kernel could not run it).

    ``str()`` is one line, e.g. ``report notebook failed in cell 7
    (reporting.show_per_task(doc, run)): ValueError: ...``.  For a failing
    cell, ``cell`` is its number among the notebook's code cells, counted
    from 1: its ``In [N]`` when the notebook is run top to bottom in
    Jupyter; ``source`` is the cell's first line of code, ``ename`` and
    ``evalue`` the exception raised in the kernel.
    """

    def __init__(self, message: str, *, cell: int | None = None, source: str | None = None,
                 ename: str | None = None, evalue: str | None = None) -> None:
        super().__init__(message)
        self.cell = cell
        self.source = source
        self.ename = ename
        self.evalue = evalue


# --------------------------------------------------------------------------- locating files


def find_notebook(name: str) -> Path:
    """The path of a notebook shipped with capbench-nb.

    Looked up, in order, as package data (``capbench_nb/notebooks/NAME``, where
    a packaged build puts a copy), then in the ``notebooks/`` folder of the
    source checkout this package is imported from (an editable install).

    Raises
    ------
    FileNotFoundError
        When neither exists.
    """
    packaged = resources.files("capbench_nb").joinpath("notebooks", name)
    if packaged.is_file():
        return Path(str(packaged))
    package_dir = Path(__file__).resolve().parents[1]  # capbench_nb/
    checkout = package_dir.parent
    candidate = checkout / "notebooks" / name
    if candidate.is_file() and (checkout / "pyproject.toml").is_file():
        return candidate
    raise FileNotFoundError(
        2, f"the notebook {name} is neither package data of capbench_nb nor in {checkout / 'notebooks'}",
        str(candidate))


def _template_dir() -> Path:
    path = resources.files("capbench_nb.outputs.html").joinpath("templates")
    return Path(str(path))


def _first_code_line(source: str, limit: int = 70) -> str:
    lines = [line.strip() for line in source.splitlines()]
    code = [line for line in lines if line and not line.startswith("#")]
    text = code[0] if code else (lines[0] if lines else "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line_title(text: str, limit: int = 300) -> str:
    """``text`` on one line (runs of white space as one space), at most ``limit`` characters."""
    from capbench_nb.errors import one_line

    return one_line(" ".join(str(text).split()), limit=limit)


def _source_cell(notebook: Path, index: int, source: str) -> int | None:
    """The number, among the code cells of ``notebook`` as written, of the executed notebook's cell ``index``.

    papermill's executed notebook has its own cell with the parameters right
    after the one tagged ``parameters`` (or first, or in place of an earlier
    injected cell); ``source`` must match, else None (never a wrong number).
    """
    import nbformat

    try:
        cells = nbformat.read(str(notebook), as_version=4).cells
    except Exception:  # the numbering is a courtesy; the error itself must get out
        return None
    tags = [set(c.get("metadata", {}).get("tags", [])) for c in cells]
    if not any(INJECTED_TAG in t for t in tags):
        inserted = next((i for i, t in enumerate(tags) if _PARAMETERS_TAG in t), -1) + 1
        if index == inserted:
            return None
        index -= index > inserted
    if 0 <= index < len(cells) and cells[index].cell_type == "code" and cells[index].source == source:
        return sum(1 for c in cells[: index + 1] if c.cell_type == "code")
    return None


def _describe_cell(number: int | None, source: str, exec_count: Any = None) -> str:
    if number is not None:
        where = f"cell {number}"
    elif exec_count is not None:
        where = f"the cell executed as In [{exec_count}]"
    else:
        where = "a cell"
    code = _first_code_line(source)
    return f"{where} ({code})" if code else where


def _cell_error(exc: Any, notebook: Path) -> ReportError:
    """A :class:`ReportError` naming the code cell of ``notebook`` that raised (papermill's ``exc``)."""
    number = _source_cell(notebook, exc.cell_index, exc.source or "")
    evalue = one_line_title(exc.evalue or "")
    what = f"{exc.ename}: {evalue}" if evalue else str(exc.ename)
    where = _describe_cell(number, exc.source or "", exc.exec_count)
    message = one_line_title(f"report notebook failed in {where}: {what}", limit=500)
    return ReportError(message, cell=number, source=_first_code_line(exc.source or ""), ename=exc.ename,
                       evalue=exc.evalue)


def _execution_error(exc: BaseException, notebook: Path) -> ReportError:
    """A :class:`ReportError` for a kernel that died or hung: the cell it was running, when known.

    papermill stamps each cell's ``start_time`` as it starts; when the kernel
    dies it marks the remaining cells completed without one, so the last cell
    that started (in the notebook the exception carries, see
    :func:`~capbench_nb.outputs.notebook.execute_notebook`) is the one the kernel did not finish.
    """
    detail = one_line_title(str(exc)) or "no detail"
    what = f"{type(exc).__name__}: {detail}"
    number, source = None, None
    try:
        nb = getattr(exc, "capbench_notebook", None)
        started = [i for i, c in enumerate(nb.cells)
                   if c.cell_type == "code" and c.get("metadata", {}).get("papermill", {}).get("start_time")]
        if started:
            cell = nb.cells[started[-1]]
            number, source = _source_cell(notebook, started[-1], cell.source), cell.source
    except Exception:  # not started, or no cell running: say what we know
        pass
    if source is None:
        return ReportError(f"report notebook could not be executed: {what}", ename=type(exc).__name__, evalue=detail)
    message = one_line_title(f"report notebook failed in {_describe_cell(number, source)}: {what}", limit=500)
    return ReportError(message, cell=number, source=_first_code_line(source), ename=type(exc).__name__, evalue=detail)


# --------------------------------------------------------------------------- HTML


def notebook_to_html(nb: Any, *, title: str | None = None) -> str:
    """One self-contained HTML page from an executed notebook: outputs and text only.

    Code cells' input and the In/Out prompts are left out; images are inline
    (``data:`` URIs) and the template (``capbench_nb/outputs/html/templates/capbench_report``)
    loads nothing from the network: no require.js, MathJax, mermaid or
    widget scripts, no remote fonts or style sheets.
    """
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name=HTML_TEMPLATE,
        extra_template_basedirs=[str(_template_dir())],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    res = {"metadata": {"name": title}} if title else None
    body, _ = exporter.from_notebook_node(nb, resources=res)
    return body


# --------------------------------------------------------------------------- the build


def _build(
    source: Path,
    out: Path,
    parameters: dict,
    *,
    written: tuple[str, ...],
    stem: str,
    title: str,
    progress: bool | None,
    run_output: bool = False,
) -> Path:
    """Execute ``source`` into a staging folder next to ``out`` and publish its outputs.

    ``parameters`` are given to papermill (as data, never spliced into code),
    with ``out_dir`` set to the staging folder and ``report_dir`` to ``out``;
    the notebook must write every file of ``written`` there.  The executed
    notebook is kept as ``<stem>.ipynb`` and converted to ``<stem>.html``.
    Nothing in ``out`` changes unless every output exists; then an ``out``
    that is missing or holds only such outputs is replaced as a whole in one
    step (:func:`~capbench_nb.io.publish.switch`), any other ``out`` file by file
    (:func:`~capbench_nb.io.publish.publish_files`).  Leftovers of killed builds are removed first
    (:func:`~capbench_nb.io.publish.recover`).  An existing ``out`` this process may not write into
    is refused first (InvalidRunError, rule ``output-unwritable``; ``run_output``: ``out`` is the run
    directory, and the message suggests ``--out``).  A signal during publishing is held until the
    outputs are switched (:func:`~capbench_nb.io.interrupts.deferred`).
    """
    if not source.is_file():
        raise FileNotFoundError(2, "no such notebook", str(source))
    given = Path(out)
    out = Path(os.path.abspath(out))
    report_dir = out  # evidence links are relative to where the user asked for the report
    if os.path.islink(out):
        out = Path(os.path.realpath(out))  # publish into the folder the link names, keep the link
    if os.path.lexists(out) and not out.is_dir():
        raise NotADirectoryError(20, "the output directory is not a directory", str(report_dir))
    _refuse_unwritable(out, given, run_output=run_output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if progress is None:
        progress = sys.stderr.isatty()
    outputs = (*written, f"{stem}.ipynb", f"{stem}.html")
    publish.recover(out)
    staging = lock = None
    try:
        with interrupts.deferred():  # the staging folder exists only once the clean-up below owns it
            staging = _new_staging(out)
            lock = publish.lock(staging)
        parameters = {**parameters, "out_dir": str(staging), "report_dir": str(report_dir)}
        try:
            nb = execute_notebook(source.absolute(), parameters, cwd=staging, progress=progress)
        except Exception as exc:
            from papermill.exceptions import PapermillExecutionError

            if isinstance(exc, PapermillExecutionError):
                raise _cell_error(exc, source) from exc
            raise _execution_error(exc, source) from exc
        _complete(staging, nb, source, written=written, stem=stem, title=title)
        whole = staging.parent == out.parent and (not os.path.lexists(out) or publish.dedicated(out, outputs))
        with interrupts.deferred():  # a signal from here on is raised once the outputs are switched
            interrupts.pause_point("publish")
            if not (whole and publish.switch(staging, out, outputs)):
                publish.publish_files(staging, out, outputs)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if lock is not None:
            os.close(lock)
    return given / f"{stem}.html"


def _new_staging(out: Path) -> Path:
    """A staging folder next to ``out``, so that the finished folder can take its place in one step; inside
    ``out`` when its parent is not writable (then the outputs are published file by file)."""
    try:
        return Path(tempfile.mkdtemp(dir=out.parent, prefix=publish.sibling_prefix(out), suffix=publish.PARTIAL))
    except OSError:
        out.mkdir(exist_ok=True)
        return publish.inner_staging(out)


#: The execute-then-publish step above, for the three pages' runners.
build_outputs = _build


def _complete(staging: Path, nb: Any, source: Path, *, written: tuple[str, ...], stem: str, title: str) -> None:
    """The staging folder made the complete set of outputs: the files of ``written`` (the notebook's),
    ``<stem>.ipynb`` and ``<stem>.html``, one mode, fsynced; the notebook's scratch files removed."""
    import nbformat

    outputs = (*written, f"{stem}.ipynb", f"{stem}.html")
    for name in written:
        if not (staging / name).is_file():
            raise ReportError(f"notebook {source.name} ran but did not write {name} into out_dir")
    for extra in os.listdir(staging):  # the notebook's own scratch files stay out of the outputs
        if extra not in outputs:
            path = staging / extra
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    write_synced(staging / f"{stem}.ipynb", nbformat.writes(nb))
    write_synced(staging / f"{stem}.html", notebook_to_html(nb, title=title))
    # write_atomic keeps modes; give every output the mode open() gave the HTML file
    mode = (staging / f"{stem}.html").stat().st_mode & 0o777
    for name in outputs:
        os.chmod(staging / name, mode)
        fsync_file(staging / name)
    fsync_directory(staging)


def _refuse_unwritable(out: Path, given: Path, *, run_output: bool) -> None:
    """InvalidRunError (``output-unwritable``) when ``out`` exists and this process may not write into it."""
    reason = publish.check_writable(out)
    if reason is None:
        return
    if run_output:
        raise InvalidRunError(str(given), "output-unwritable", f"the run directory is not writable ({reason}); "
                              "write the outputs elsewhere with --out DIR")
    raise InvalidRunError(str(given), "output-unwritable", f"the output directory is not writable ({reason})")
