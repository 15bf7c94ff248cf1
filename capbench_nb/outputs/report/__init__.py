"""report.html: the report of one run (``notebooks/run_report.ipynb``): its sections (``page``), the
suite-health, selection and explorer views, the figures, and the runner (``run``)."""
