"""The two ways to call a metric function: a loaded run, or an attempts table with its plan.

``cb.pass_at_1(run)`` and ``cb.pass_at_1(run.attempts, plan=run.plan)`` are one computation:
:func:`metric_inputs` unpacks the run form into the table form (``run.attempts``,
``run.plan`` and, where a metric needs one, ``k`` defaulting to ``run.k``), so there is a
single code path behind both.
"""

from __future__ import annotations

import pandas as pd

from capbench_nb.records.run import Run

__all__ = ["metric_inputs"]


def metric_inputs(data: Run | pd.DataFrame, plan: pd.DataFrame | None, k: int | None = None, *,
                  function: str, needs_k: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, int | None]:
    """``(attempts, plan, k)`` from either calling form of the metric function ``function``.

    Parameters
    ----------
    data : Run or DataFrame
        A loaded run, or the attempts table (one row per attempt).
    plan : DataFrame or None
        Must be None with a run (the run's plan is used), and given with a table.
    k : int, optional
        The k a metric needs (``needs_k``); with a run it defaults to ``run.k``.
    function : str
        The caller's name, for the error message.
    needs_k : bool, default False
        Whether the caller needs k.

    Raises
    ------
    TypeError
        A run together with ``plan=``; a table without ``plan=`` (or without ``k=`` where the
        metric needs one); anything else as ``data``.
    """
    if isinstance(data, Run):
        if plan is not None:
            raise TypeError(f"{function}(run) takes the plan from the run: give plan= only with an attempts "
                            f"DataFrame, as in {function}(run.attempts, plan=run.plan)")
        return data.attempts, data.plan, (data.k if k is None else k) if needs_k else None
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{function}() takes a loaded run (cb.load_run) or an attempts DataFrame, "
                        f"not {type(data).__name__}")
    if plan is None:
        raise TypeError(f"{function}(attempts) needs plan= (the run's plan DataFrame), "
                        f"or pass the loaded run itself: {function}(run)")
    if needs_k and k is None:
        raise TypeError(f"{function}(attempts, plan=...) needs k= (the run's fixed k, run.k), "
                        f"or pass the loaded run itself: {function}(run)")
    return data, plan, k
