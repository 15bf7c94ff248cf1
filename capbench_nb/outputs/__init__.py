"""Stage 4: metrics -> outputs: the files and pages a user reads.

Layout (the naming scheme):

* Shared modules that are no page are named by what they make or do, one noun each:
  :mod:`~capbench_nb.outputs.export` (metrics.json on disk), :mod:`~capbench_nb.outputs.summary`
  (summary.md), :mod:`~capbench_nb.outputs.verify` (``capbench-nb verify``),
  :mod:`~capbench_nb.outputs.notebook` (executing a notebook on a kernel of its own) and
  :mod:`~capbench_nb.outputs.build` (executing a page's notebook and publishing its outputs).
* :mod:`capbench_nb.outputs.html`: what the pages share: escaping, formatting, tables, the one
  JSON data island (``<script type="application/json">``) and the page assets
  (``html/page_assets/``), figures as images, and the nbconvert template (``html/templates/``).
* One package per page, each with the same module names: ``run`` (its notebook runner, the
  ``build_*`` function the command line calls), ``page`` (the page's builder: the sections its
  notebook displays) and its views beside them; ``files`` for a page's own Markdown and JSON files.
  :mod:`capbench_nb.outputs.report` (report.html: ``page``, ``health``, ``selection``,
  ``explorer``, ``figures``, ``run``), :mod:`capbench_nb.outputs.comparison` (comparison.html:
  ``page``, ``script``, ``files``, ``run``) and :mod:`capbench_nb.outputs.board` (board.html:
  ``page``, ``files``, ``run``).

A page package imports from ``html`` and the shared modules, never from another page package.
Every number a page shows comes from the metrics document or from a view of
:mod:`capbench_nb.records.views`; no page reads a file while it renders (apart from its own
templates and assets).
"""
