"""Best-of-k with a selector (spec section 9): what a verifier really buys on the same candidate pool.

Three numbers on the same tasks: a single attempt (pass@1), the selector's pick (selected@k) and
an oracle that picks any success (pass@k); the *generation-verification gap* between the last two
(Weaver, arXiv 2506.18203) and the share of the oracle's advantage the selector closes.  Large
Language Monkeys (Brown et al. 2024, arXiv 2407.21787) report the same three on repeated samples.

A task *enters* when it is k-eligible (attempts 1..k present and eligible,
:func:`~capbench_nb.metrics.prepare.k_eligible_tasks`) and its selection line's candidates are
exactly 1..k.  Over the entering tasks:

==================  ============================================  ==========================================
metric              denominator                                   numerator
==================  ============================================  ==========================================
selected@k          entering tasks                                the selected attempt succeeded
pass@1, pass@k      entering tasks                                attempt 1 / any of 1..k succeeded
selection_accuracy  entering tasks with a success among 1..k      the selected attempt succeeded
==================  ============================================  ==========================================

An abstention (``selected`` null) is not a success.  Each rate has its 95% Wilson interval and
coverage over the planned tasks.  ``gap = pass@k - selected@k``; ``gap_closed = (selected@k -
pass@1) / (pass@k - pass@1)``, null when the denominator is 0; the exact McNemar test compares
selected@k with pass@1 on the entering tasks (:func:`~capbench_nb.metrics.stats.mcnemar_exact`).
The cost of the best-of-k system per entering task (all k attempts plus the selector; in parallel
the slowest attempt plus the selector) aggregates like telemetry, beside what attempt 1 alone costs
on the same tasks.  The curve from scores is the expected success of picking the top-scored of j
random candidates, ties broken uniformly, computed exactly (:func:`top_of_j_curve`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from capbench_nb.metrics.inputs import metric_inputs
from capbench_nb.metrics.prepare import Prepared, prepare
from capbench_nb.metrics.rates import Rate
from capbench_nb.metrics.stats import mcnemar_exact
from capbench_nb.metrics.telemetry import telemetry_aggregate
from capbench_nb.records.run import Run

__all__ = ["SelectionMetrics", "selection_metrics", "selection_metrics_of", "selection_document", "top_of_j_curve", "RATE_NAMES",
           "COST_NAMES", "SINGLE_ATTEMPT_NAMES"]

#: The rates of the ``selection`` block, in document order.
RATE_NAMES = ("selected@k", "pass@1", "pass@k", "selection_accuracy")
#: The cost aggregates of the best-of-k system, in document order.
COST_NAMES = ("cost", "wall_ms_sequential", "wall_ms_parallel", "total_tokens")
#: What attempt 1 alone costs on the entering tasks (the pass@1 system), in document order.
SINGLE_ATTEMPT_NAMES = ("cost", "task_wall_ms", "total_tokens")
_DTYPES = {"cost": "Float64", "wall_ms_sequential": "Float64", "wall_ms_parallel": "Float64",
           "total_tokens": "Int64", "task_wall_ms": "Float64"}


@dataclass(frozen=True)
class SelectionMetrics:
    """The selection metrics of a run (spec section 9); :meth:`to_dict` is metrics.json's ``selection``.

    Attributes
    ----------
    selector : dict or None
        ``{"name", "version"}`` of the selection file (None when it has no valid line).
    k : int
        The run's fixed k.
    entering : int
        Tasks that enter: k-eligible, with candidates exactly 1..k.
    rates : dict of str to Rate
        ``selected@k``, ``pass@1``, ``pass@k`` (over the entering tasks) and ``selection_accuracy``
        (over those with a success among 1..k).
    gap, gap_closed : float or None
        ``pass@k - selected@k``; ``(selected@k - pass@1) / (pass@k - pass@1)``.
    abstentions : int
        Entering tasks whose selector abstained.
    other_candidates : int
        k-eligible tasks whose line's candidates are not 1..k (they do not enter).
    mcnemar : dict
        ``b`` (selected succeeded, attempt 1 failed), ``c`` (the reverse) and the exact ``p``.
    cost : dict
        Aggregates (telemetry's form) of ``cost``, ``wall_ms_sequential``, ``wall_ms_parallel`` and
        ``total_tokens`` of the best-of-k system over the entering tasks.
    curve : list of dict
        ``{"j", "value", "n"}`` for j = 1..m: the mean over the n tasks with scores and eligible
        candidates of :func:`top_of_j_curve`, m their smallest number of candidates.
    per_task : DataFrame
        Entering tasks in plan order: ``task_id``, ``selected``, ``selected_success``, ``any_success``.
    single_attempt : dict
        Aggregates of attempt 1's ``cost``, ``task_wall_ms`` and ``total_tokens`` over the entering tasks.
    """

    selector: dict | None
    k: int
    entering: int
    rates: dict
    gap: float | None
    gap_closed: float | None
    abstentions: int
    other_candidates: int
    mcnemar: dict
    cost: dict = field(repr=False)
    curve: list = field(repr=False)
    per_task: pd.DataFrame = field(repr=False)
    single_attempt: dict = field(repr=False)

    def to_dict(self) -> dict:
        """The ``selection`` block of metrics.json, keys in the order of spec section 9 (then
        ``single_attempt``)."""
        entries = [
            {"task_id": t, "selected": None if s is pd.NA else int(s), "selected_success": bool(ok),
             "any_success": bool(any_)}
            for t, s, ok, any_ in zip(self.per_task["task_id"].astype(object), self.per_task["selected"],
                                      self.per_task["selected_success"], self.per_task["any_success"])
        ]
        return {
            "selector": None if self.selector is None else dict(self.selector),
            "k": self.k,
            "entering": self.entering,
            "metrics": {name: self.rates[name].to_dict() for name in RATE_NAMES},
            "gap": self.gap,
            "gap_closed": self.gap_closed,
            "abstentions": self.abstentions,
            "other_candidates": self.other_candidates,
            "mcnemar": dict(self.mcnemar),
            "cost": {name: dict(self.cost[name]) for name in COST_NAMES},
            "curve": [dict(point) for point in self.curve],
            "per_task": entries,
            "single_attempt": {name: dict(self.single_attempt[name]) for name in SINGLE_ATTEMPT_NAMES},
        }

    def __repr__(self) -> str:
        s = self.selector
        name = "no selector" if s is None else f"selector {s['name']} {s['version']}"
        rates = ", ".join(f"{r.metric} = " + ("n/a" if r.value is None else f"{r.value:.3f}")
                          for r in (self.rates[n] for n in RATE_NAMES[:3]))
        return f"SelectionMetrics({rates}; {self.entering} entering tasks, {name})"


def _binomial(n: int, j: int) -> int:
    return math.comb(n, j) if 0 <= j <= n else 0


_CURVES: dict[tuple, tuple] = {}


def _curve_of_groups(groups: tuple[tuple[int, int], ...]) -> tuple[Fraction, ...]:
    """The exact curve of tie groups ``((size, successes), ...)`` in ascending score order (memoised)."""
    hit = _CURVES.get(groups)
    if hit is not None:
        return hit
    n = sum(size for size, _ in groups)
    values = []
    for j in range(1, n + 1):
        total, below = Fraction(0), 0
        for size, won in groups:
            # sum over the group's positions i of C(i-1, j-1) is C(hi, j) - C(lo-1, j) (hockey stick)
            weight = _binomial(below + size, j) - _binomial(below, j)
            if won and weight:
                total += Fraction(won * weight, size)
            below += size
        values.append(total / _binomial(n, j))
    hit = tuple(values)
    if len(_CURVES) < 4096:
        _CURVES[groups] = hit
    return hit


def top_of_j_curve(scores, successes, *, exact: bool = False) -> list:
    r"""Expected success of picking the top-scored of j candidates drawn at random, j = 1..n.

    With the n candidates sorted by score ascending, :math:`y` 1 for a success and
    :math:`\bar y_{(i)}` the mean :math:`y` over the candidates tied with the i-th (ties broken
    uniformly),

    .. math:: \text{selected@}j = \sum_{i=j}^{n} \frac{\binom{i-1}{j-1}}{\binom{n}{j}}\,\bar y_{(i)}

    (spec section 9: the probability that the top of a random j-subset sits at position i is
    :math:`\binom{i-1}{j-1}/\binom{n}{j}`).  Computed in exact rational arithmetic.

    Parameters
    ----------
    scores : sequence of float
        The selector's score of each candidate.
    successes : sequence of bool
        Whether each candidate succeeded (same order).
    exact : bool, default False
        Return :class:`fractions.Fraction` values instead of floats.

    Returns
    -------
    list
        Element j - 1 is the value for j.
    """
    if len(scores) != len(successes):
        raise ValueError("scores and successes must have the same length")
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    groups: list[list[int]] = []
    last = None
    for i in order:
        if groups and scores[i] == last:
            groups[-1][0] += 1
            groups[-1][1] += bool(successes[i])
        else:
            groups.append([1, int(bool(successes[i]))])
        last = scores[i]
    values = _curve_of_groups(tuple((size, won) for size, won in groups))
    return list(values) if exact else [float(v) for v in values]


def _aggregates(values: dict[str, list], names: tuple[str, ...]) -> dict:
    return {name: telemetry_aggregate(pd.Series(pd.array(values[name], dtype=_DTYPES[name]))) for name in names}


def _sum(addends: list, *, integer: bool):
    """Sum with every addend required: None when any is null (spec section 9)."""
    if any(v is None for v in addends):
        return None
    return sum(addends) if integer else math.fsum(addends)


def _values(column: pd.Series, integer: bool) -> list:
    """A numeric column as Python numbers, nulls (NA, NaN) as None (every value is at most 2**53-1: exact)."""
    return [None if math.isnan(v) else (int(v) if integer else v)
            for v in column.to_numpy(dtype="float64", na_value=np.nan).tolist()]


def _attempt_rows(p, positions: set[int]) -> dict[tuple[int, int], int]:
    """(plan position, attempt number) -> row of ``p.counted``, for the tasks at ``positions``."""
    rows = np.flatnonzero(np.isin(p.pos, list(positions))) if positions else np.array([], dtype=np.int64)
    return {(int(p.pos[r]), int(p.attempt[r])): int(r) for r in rows}


def _task_cost(columns: dict, rows: dict, pos: int, k: int, line: dict) -> dict:
    """The best-of-k system's cost, wall times and tokens on one entering task, and attempt 1's."""
    at = [rows[(pos, j)] for j in range(1, k + 1)]
    cost, wall, tokens = ([columns[name][r] for r in at] for name in ("cost", "task_wall_ms", "total_tokens"))
    sel_ms, sel_tokens, sel_cost = line["selector_ms"], line["selector_tokens"], line["selector_cost"]
    parallel = None if None in wall or sel_ms is None else math.fsum([max(wall), sel_ms])
    return {
        "cost": _sum(cost + [sel_cost], integer=False),
        "wall_ms_sequential": _sum(wall + [sel_ms], integer=False),
        "wall_ms_parallel": parallel,
        "total_tokens": _sum(tokens + [sel_tokens], integer=True),
        "single": {"cost": cost[0], "task_wall_ms": wall[0], "total_tokens": tokens[0]},
    }


def _line_values(lines: pd.DataFrame) -> list[dict]:
    def scalar(v):
        return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v

    out = []
    for row in lines.to_dict("records"):
        row = {key: scalar(v) if not isinstance(v, (tuple, dict)) else v for key, v in row.items()}
        for key in ("selected", "selector_tokens"):
            row[key] = None if row[key] is None else int(row[key])
        for key in ("selector_ms", "selector_cost"):
            row[key] = None if row[key] is None else float(row[key])
        out.append(row)
    return out


def selection_metrics(data: Run | pd.DataFrame, *, plan: pd.DataFrame | None = None, k: int | None = None,
                      selection: pd.DataFrame | None = None, selector: dict | None = None,
                      confidence: float = 0.95) -> SelectionMetrics:
    """Every number of spec section 9 for a run that used a selector.

    Parameters
    ----------
    data : Run or DataFrame
        A loaded run with a selection (``run.selection``), or an attempts table with ``plan=``,
        ``k=`` and ``selection=``.
    plan : DataFrame, optional
        With an attempts table: the plan (``task_id``, ``planned_repeats``).
    k : int, optional
        The fixed k (default ``run.k``).
    selection : DataFrame, optional
        The checked selection lines (:attr:`capbench_nb.records.selection.Selection.lines`);
        default ``run.selection.lines``.
    selector : dict, optional
        ``{"name", "version"}``; default the run's.
    confidence : float, default 0.95
        Level of the Wilson intervals.

    Returns
    -------
    SelectionMetrics

    Raises
    ------
    ValueError
        A run without selection.jsonl (and no ``selection=``).
    """
    if isinstance(data, Run) and selection is None:
        if data.selection is None:
            raise ValueError("the run has no selection.jsonl: selection metrics need a selector's picks")
        selection, selector = data.selection.lines, data.selection.selector if selector is None else selector
    attempts, plan, k = metric_inputs(data, plan, k, function="selection_metrics", needs_k=True)
    if selection is None:
        raise TypeError("selection_metrics(attempts, ...) needs selection= (the checked selection lines)")
    return selection_metrics_of(prepare(attempts, plan), k, selection=selection, selector=selector,
                                confidence=confidence)


# long function: one pass over the selection lines gathers every per-task quantity of section 9
def selection_metrics_of(p: Prepared, k: int, *, selection: pd.DataFrame, selector: dict | None = None,
                         confidence: float = 0.95) -> SelectionMetrics:
    """:func:`selection_metrics` of an already prepared run, with its checked selection lines."""
    k, plan = int(k), p.plan
    k_eligible = p.k_eligible(k)
    where = {t: i for i, t in enumerate(plan["task_id"].astype(object))}
    lines = sorted(_line_values(selection), key=lambda r: where[r["task_id"]])
    rows = _attempt_rows(p, {where[r["task_id"]] for r in lines})
    columns = {name: _values(p.counted[name], name == "total_tokens")
               for name in ("cost", "task_wall_ms", "total_tokens")}
    full = set(range(1, k + 1))
    entered, other, curves = [], 0, []
    costs, single = {name: [] for name in COST_NAMES}, {name: [] for name in SINGLE_ATTEMPT_NAMES}
    for line in lines:
        pos, candidates = where[line["task_id"]], line["candidates"]
        if line["scores"] is not None and candidates:
            found = [rows.get((pos, c)) for c in candidates]
            if all(r is not None and p.eligible[r] for r in found):
                curves.append(top_of_j_curve([line["scores"][c] for c in candidates],
                                             [bool(p.success[r]) for r in found], exact=True))
        if not k_eligible[pos]:
            continue
        if set(candidates) != full:
            other += 1
            continue
        won = [bool(p.success[rows[(pos, j)]]) for j in range(1, k + 1)]
        selected = line["selected"]
        entered.append((line["task_id"], selected, selected is not None and won[selected - 1], any(won), won[0]))
        cost = _task_cost(columns, rows, pos, k, line)
        for name in COST_NAMES:
            costs[name].append(cost[name])
        for name in SINGLE_ATTEMPT_NAMES:
            single[name].append(cost["single"][name])
    n = len(entered)
    chosen = sum(e[2] for e in entered)
    anyone = sum(e[3] for e in entered)
    first = sum(e[4] for e in entered)
    b = sum(e[2] and not e[4] for e in entered)
    c = sum(e[4] and not e[2] for e in entered)
    planned = len(plan)
    rates = {
        "selected@k": Rate.of(chosen, n, planned, confidence, metric=f"selected@{k}"),
        "pass@1": Rate.of(first, n, planned, confidence, metric="pass@1"),
        "pass@k": Rate.of(anyone, n, planned, confidence, metric=f"pass@{k}"),
        "selection_accuracy": Rate.of(chosen, anyone, planned, confidence, metric="selection_accuracy"),
    }
    m = min((len(v) for v in curves), default=0)
    curve = [{"j": j, "value": float(sum((v[j - 1] for v in curves), Fraction(0)) / len(curves)), "n": len(curves)}
             for j in range(1, m + 1)]
    per_task = pd.DataFrame({
        "task_id": pd.array([e[0] for e in entered], dtype="string"),
        "selected": pd.array([e[1] for e in entered], dtype="Int64"),
        "selected_success": pd.array([e[2] for e in entered], dtype="boolean"),
        "any_success": pd.array([e[3] for e in entered], dtype="boolean"),
    })
    return SelectionMetrics(
        selector=selector, k=k, entering=n, rates=rates,
        gap=(anyone - chosen) / n if n else None,
        gap_closed=(chosen - first) / (anyone - first) if n and anyone != first else None,
        abstentions=sum(e[1] is None for e in entered), other_candidates=other,
        mcnemar={"b": b, "c": c, "p": mcnemar_exact(b, c)},
        cost=_aggregates(costs, COST_NAMES), curve=curve, per_task=per_task,
        single_attempt=_aggregates(single, SINGLE_ATTEMPT_NAMES),
    )


def selection_document(run: Run, *, prepared: Prepared | None = None) -> dict | None:
    """metrics.json's ``selection`` block of ``run`` (:meth:`SelectionMetrics.to_dict`), None without
    selection.jsonl (the key is then absent); ``prepared``: the run's :class:`Prepared`, if made."""
    if run.selection is None:
        return None
    if prepared is None:
        return selection_metrics(run).to_dict()
    return selection_metrics_of(prepared, run.k, selection=run.selection.lines,
                                selector=run.selection.selector).to_dict()
