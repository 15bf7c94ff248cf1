"""Stage 2b: a frozen suite (spec section 12), between records and metrics.

:mod:`~capbench_nb.suite.lock` reads, validates and digests ``suite.lock.json``;
:mod:`~capbench_nb.suite.draft` drafts a lock from a run's plan; :mod:`~capbench_nb.suite.check`
checks a run against its lock (findings, drifted attempts, the ``lock`` block of metrics.json);
:mod:`~capbench_nb.suite.diff` names how two locks differ (the ``lock`` warning of compare and board).
"""

from capbench_nb.suite.lock import Lock, dumps_lock, load_lock, lock_digest, lock_problems, make_lock, read_spec

__all__ = ["Lock", "dumps_lock", "load_lock", "lock_digest", "lock_problems", "make_lock", "read_spec"]
