"""The headline numbers a simulated run must give, from its ground truth (spec sections 6 and 8).

Counts of attempts and tasks are taken from the truth records directly; which tasks enter
pass@1, pass@k and pass^k, and with what outcome, comes from the metrics' own statement of
k-eligibility (:func:`capbench_nb.metrics.prepare.prefix_outcomes`), applied to the truth
records rather than to the derived ones: tests compare the two.
"""

from __future__ import annotations

import pandas as pd

from capbench_nb.format import CLASS_KEYS
from capbench_nb.metrics.prepare import prefix_outcomes

__all__ = ["expected_metrics", "task_outcomes"]


def _frames(truth: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(attempt records, plan) of the truth document, as the metric functions take them."""
    records = [x["record"] for x in truth["attempts"]]
    attempts = pd.DataFrame({
        "task_id": pd.array([r["task_id"] for r in records], dtype="string"),
        "attempt": pd.array([r["attempt"] for r in records], dtype="int64"),
        "success": pd.array([r["success"] for r in records], dtype="bool"),
        "agent_eligible": pd.array([r["agent_eligible"] for r in records], dtype="bool"),
    })
    plan = pd.DataFrame({
        "task_id": pd.array([t["task_id"] for t in truth["tasks"]], dtype="string"),
        "planned_repeats": pd.array([t["planned_repeats"] for t in truth["tasks"]], dtype="int64"),
    })
    return attempts, plan


def task_outcomes(truth: dict) -> dict[str, dict]:
    """Per planned task (plan order): its pass@1, pass@k and pass^k outcomes, None outside the denominator.

    Returns ``{task_id: {"pass@1", "k_eligible", "pass@k", "pass^k"}}``: ``pass@1`` is whether
    attempt 1 succeeded (None unless present and eligible); ``k_eligible`` whether attempts
    1..k are all present and eligible, with k the plan's smallest planned repeats; ``pass@k``
    and ``pass^k`` whether any / all of them succeeded (None unless k-eligible).
    """
    attempts, plan = _frames(truth)
    k = int(plan["planned_repeats"].min())
    first = prefix_outcomes(attempts, plan=plan, k=1)
    prefix = prefix_outcomes(attempts, plan=plan, k=k)
    out = {}
    for t in truth["tasks"]:
        tid = t["task_id"]
        eligible = tid in prefix.index
        out[tid] = {
            "pass@1": bool(first.at[tid, "any"]) if tid in first.index else None,
            "k_eligible": eligible,
            "pass@k": bool(prefix.at[tid, "any"]) if eligible else None,
            "pass^k": bool(prefix.at[tid, "all"]) if eligible else None,
        }
    return out


def expected_metrics(truth: dict) -> dict:
    """Headline numbers of a simulated run, from its truth records (spec sections 6 and 8).

    Returns ``k``, ``tasks`` (planned, observed), ``attempts`` (total, eligible,
    by_failure_class), ``pass@1``, ``pass@k``, ``pass^k`` as ``(successes, n)``,
    and ``anomalies`` as ``[(task_id, attempt)]`` in results.jsonl order.
    """
    plan = {t["task_id"]: t["planned_repeats"] for t in truth["tasks"]}
    k = min(plan.values())
    counted = [x["record"] for x in truth["attempts"] if x["attempt"] <= plan[x["task_id"]]]
    classes = dict.fromkeys(CLASS_KEYS, 0)
    for r in counted:
        classes["success" if r["success"] else r["failure_class"]] += 1
    outcomes = task_outcomes(truth).values()

    def rate(name: str) -> tuple[int, int]:
        values = [o[name] for o in outcomes if o[name] is not None]
        return sum(values), len(values)

    return {
        "k": k,
        "tasks": {"planned": len(plan), "observed": len({r["task_id"] for r in counted})},
        "attempts": {"total": len(counted), "eligible": sum(r["agent_eligible"] for r in counted),
                     "by_failure_class": classes},
        "pass@1": rate("pass@1"),
        "pass@k": rate("pass@k"),
        "pass^k": rate("pass^k"),
        "anomalies": [(x["task_id"], x["attempt"]) for x in truth["attempts"] if x["attempt"] > plan[x["task_id"]]],
    }
