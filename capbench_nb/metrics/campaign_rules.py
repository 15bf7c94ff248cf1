"""The pass rules of spec section 6 as engine-neutral Ibis expressions, for a campaign store.

Each rule is stated once here, as an Ibis expression over the store's tables (the attempts table
with its ``run_id`` partition column, and runs.parquet for each run's k); Ibis compiles the same
expression to DuckDB SQL and to Spark SQL (:mod:`capbench_nb.metrics.campaign` runs it on either).
The store holds counted records only (planned tasks, attempts within planned repeats), and
``(run_id, task_id, attempt)`` is unique, so:

- per task, ``first_eligible`` = [attempt 1 present and eligible] and ``first_success`` = [it also
  succeeded]: pass@1's denominator and numerator;
- per task, ``prefix_eligible`` = the number of eligible attempts numbered 1..k and
  ``prefix_success`` = the successes among them; the task is k-eligible when
  ``prefix_eligible = k`` (attempts 1..k all present and eligible, :func:`k_eligible`);
  pass@k counts the k-eligible tasks with ``prefix_success > 0``, pass^k those with
  ``prefix_success = k``.

The per-run counts (:func:`run_counts`) are exact integers on both engines; the rates, Wilson
intervals and coverage are :meth:`capbench_nb.metrics.rates.Rate.of` on them, as in metrics.json.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir

__all__ = ["COUNT_COLUMNS", "task_prefixes", "k_eligible", "run_counts"]

#: Per-run counts :func:`run_counts` gives: (metric, successes column, denominator column).
COUNT_COLUMNS = (
    ("pass@1", "pass1_successes", "pass1_n"),
    ("pass@k", "passk_successes", "passk_n"),
    ("pass^k", "passhatk_successes", "passk_n"),
)


def _count(condition: ir.BooleanValue) -> ir.IntegerScalar:
    """The number of rows where ``condition`` holds (0 for none)."""
    return condition.cast("int64").sum()


def task_prefixes(attempts: ir.Table, runs: ir.Table) -> ir.Table:
    """Per (run_id, task_id): ``first_eligible``, ``first_success``, ``prefix_eligible``, ``prefix_success``, ``k``.

    ``runs`` gives each run's own k (``runs.k``); pass ``runs.mutate(k=j)`` for another prefix length.
    """
    a = attempts.inner_join(runs.select("run_id", "k"), "run_id")
    first = (a.attempt == 1) & a.agent_eligible
    prefix = (a.attempt <= a.k) & a.agent_eligible
    return a.group_by(["run_id", "task_id"]).aggregate(
        first_eligible=_count(first),
        first_success=_count(first & a.success),
        prefix_eligible=_count(prefix),
        prefix_success=_count(prefix & a.success),
        k=a.k.max(),
    )


def k_eligible(tasks: ir.Table) -> ir.BooleanColumn:
    """Section 6: the task's attempts 1..k are all present and eligible."""
    return tasks.prefix_eligible == tasks.k


def run_counts(attempts: ir.Table, runs: ir.Table) -> ir.Table:
    """Per run of ``runs`` (every run, one without attempts included): the pass@1, pass@k and pass^k counts.

    Columns ``run_id``, ``k``, ``tasks_planned`` and those of :data:`COUNT_COLUMNS`.
    """
    t = task_prefixes(attempts, runs)
    eligible = k_eligible(t)
    counts = t.group_by("run_id").aggregate(
        pass1_n=_count(t.first_eligible > 0),
        pass1_successes=_count(t.first_success > 0),
        passk_n=_count(eligible),
        passk_successes=_count(eligible & (t.prefix_success > 0)),
        passhatk_successes=_count(eligible & (t.prefix_success == t.k)),
    )
    joined = runs.select("run_id", "k", "tasks_planned").left_join(counts, "run_id")
    names = [n for _, s, d in COUNT_COLUMNS for n in (s, d)]
    return joined.select("run_id", "k", "tasks_planned",
                         **{n: ibis.coalesce(joined[n], 0) for n in dict.fromkeys(names)})
