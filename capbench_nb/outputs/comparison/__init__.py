"""comparison.html: two runs compared (``notebooks/compare_runs.ipynb``): its sections (``page``), the
flipped-tasks script, comparison.md and comparison.json (``files``), and the runner (``run``)."""
