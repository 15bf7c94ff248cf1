"""Stage 2b: a frozen suite (spec section 12), between records and metrics.

The lock file itself is read, validated, digested and written by :mod:`capbench_nb.records.lock` (a run
input like the manifest; ``load_run`` reads a run's lock copy and its drifted attempts there).
:mod:`~capbench_nb.suite.draft` drafts a lock from a run's plan; :mod:`~capbench_nb.suite.check`
checks a run against its lock (findings, the ``lock`` block of metrics.json);
:mod:`~capbench_nb.suite.diff` names how two locks differ (the ``lock`` warning of compare and board).
"""
