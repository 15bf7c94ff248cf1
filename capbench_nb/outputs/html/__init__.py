"""What every page of capbench-nb shares: escaping, formatting, tables, the JSON data island and the
page assets, figures as images, and the nbconvert template (see :mod:`capbench_nb.outputs`)."""
