"""A board of many runs (spec section 10): which run is better, how sure, at what cost.

:func:`board` turns N >= 2 loaded runs (or run directories) into the board.json document
(schema ``capbench.board/1``); :mod:`capbench_nb.outputs.board.files` writes it with ``board.md``
beside it, and ``notebooks/board.ipynb`` (``capbench-nb board``) renders ``board.html``.

Common ground
-------------
The *common tasks* are the task ids planned in every run, in the first run's plan order; the
*common k* is the smallest k of the runs.  Tasks planned in only some runs enter no number and
are listed (``common.not_common``, sorted).  A run's *board value* for pass@1, pass@k or pass^k
is that metric of spec section 6 at the common k over the common tasks, with its Wilson interval
and coverage over the number of common tasks.

Pairs, groups, ranks
--------------------
For runs a < b (input positions) and a metric, the paired tasks are the common tasks in the
metric's denominator in both runs; ``a_only`` counts those a succeeded on and b did not,
``b_only`` the reverse, and ``p`` is the exact McNemar p of
:func:`~capbench_nb.metrics.stats.mcnemar_exact` (1 without a discordant task).  Holm's step-down
correction (:func:`~capbench_nb.metrics.board_stats.holm_adjust`) runs over the N(N-1)/2 pairs of
each metric.  Groups (:func:`~capbench_nb.metrics.board_stats.board_groups`) and ranks
(:func:`~capbench_nb.metrics.board_stats.board_ranks`) are those of section 10; rank intervals come from
a paired bootstrap of the common tasks (:func:`~capbench_nb.metrics.board_stats.rank_intervals`).

Cost
----
``cost_per_attempt`` is the mean cost over the eligible attempts 1..common k of the common
tasks, null (the run is *unpriced*) when any of them has no cost or there is none.  Among priced
runs with a board value, the non-dominated ones form the cost-accuracy frontier
(:func:`frontier_flags`); an unpriced run is named under ``unpriced``, never counted as free.

Compatibility
-------------
``compatibility.warnings`` states the common ground (``task_set``: tasks left out; ``k``: the
runs' k differ) and, for every other code of :data:`~capbench_nb.metrics.compatibility.WARNING_CODES`,
which runs differ from the first run; ``against_first`` holds the warnings of
:func:`~capbench_nb.metrics.compatibility.compatibility_warnings` of the first run against each other
run, as ``capbench-nb compare`` words them.

Best-of-k with a selector
-------------------------
When a run of the board has a selection file (spec section 9), every run's ``values`` gains
``selected@k``: section 9's selected@k restricted to the common tasks (the tasks entering the run's
selection metrics among the common tasks, each a success when its selected attempt succeeded; Wilson
interval; coverage over the common tasks), taken from
:func:`~capbench_nb.metrics.selection.selection_metrics`' per-task entries.  It is null, with the
reason in ``runs[i].selection.reason``, for a run without a selection file or whose k is not the
common k (section 9 enters a task only when its candidates are exactly 1..k of the run's k).  The
runs that have one are paired (``pairs`` with metric ``selected@k``: the common tasks entering in
both runs; Holm over those pairs, a family of its own), and ``selected@k`` can be the board's metric
when every run has one (:func:`check_board_metric`).  A board without any selection file has no
``selected@k`` anywhere: its bytes are those of a board before selection existed.

The document depends only on the runs' inputs and the options: the same runs, options and seed
give byte-identical board.json.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from capbench_nb._version import __version__
from capbench_nb.format import MAX_RESAMPLES, MAX_SAFE_NUMBER
from capbench_nb.metrics.board_stats import board_groups, board_ranks, holm_adjust, pair_tests, rank_intervals
from capbench_nb.metrics.compatibility import (WARNING_CODES, compatibility_warnings, plan_ids, show_value,
                                              suite_identity)
from capbench_nb.metrics.prepare import k_eligible_mask, prepare, shared_preparation
from capbench_nb.metrics.rates import Rate
from capbench_nb.metrics.registry import paired_rates
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.records.run import Run

__all__ = [
    "BOARD_SCHEMA_VERSION",
    "BOARD_METRICS",
    "SELECTED",
    "BOARD_METRIC_CHOICES",
    "board",
    "check_board_options",
    "check_board_metric",
    "common_ground",
    "board_outcomes",
    "selection_reason",
    "board_selection",
    "cost_per_attempt",
    "frontier_flags",
]

BOARD_SCHEMA_VERSION = "capbench.board/1"
#: The board metrics, in document order (pairs are listed metric by metric in this order).
BOARD_METRICS = tuple(m.name for m in paired_rates())
#: Best-of-k with a selector (spec section 9): on a board only when some run has a selection file.
SELECTED = "selected@k"
#: The metrics a board can be ordered by (``selected@k`` only when every run has one).
BOARD_METRIC_CHOICES = BOARD_METRICS + (SELECTED,)
#: Outcome characters of ``runs[i].outcomes``: success, failure, not in the metric's denominator.
OUTCOME_CHARS = ("1", "0", ".")


# =========================================================================== options and common ground


def check_board_options(*, metric: str, alpha: float, seed: int, resamples: int, runs: int | None = None) -> None:
    """Raise ValueError, one sentence, for an option outside its range (or fewer than 2 runs)."""
    if runs is not None and runs < 2:
        raise ValueError(f"a board compares at least 2 runs, got {runs}")
    if metric not in BOARD_METRIC_CHOICES:
        raise ValueError(f"unknown board metric {metric!r}; the metrics are {', '.join(BOARD_METRIC_CHOICES)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if type(seed) is not int or not 0 <= seed <= MAX_SAFE_NUMBER:  # board.json records it: the number rule
        raise ValueError(f"seed must be an integer from 0 to {MAX_SAFE_NUMBER:,} (MAX_SAFE_NUMBER), got {seed!r}")
    if type(resamples) is not int or not 0 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be an integer from 0 to {MAX_RESAMPLES:,} (MAX_RESAMPLES), got {resamples!r}")


def common_ground(runs: Sequence[Run]) -> tuple[list[str], list[str], int]:
    """``(common task ids in the first run's plan order, task ids left out (sorted), common k)``."""
    plans = [plan_ids(run) for run in runs]
    everywhere = set(plans[0]).intersection(*plans[1:])
    common = [t for t in plans[0] if t in everywhere]
    left_out = sorted(set().union(*plans) - everywhere)
    return common, left_out, min(int(run.k) for run in runs)


def board_outcomes(run: Run, common: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per board metric and common task: in the metric's denominator, and succeeded.

    Returns
    -------
    (eligible, success) : two bool arrays of shape (len(BOARD_METRICS), len(common)), a row per
        metric, each by its registered task outcome: pass@1 (attempt 1 present and eligible; it
        succeeded), pass@k and pass^k (attempts 1..k present and eligible; any / all of them
        succeeded), with k the common k.  ``success`` is False outside the denominator.
    """
    p = prepare(run.attempts, run.plan)
    where = np.asarray(_positions(run, common), dtype=np.int64)
    eligible, success = [], []
    for metric in paired_rates():
        j = metric.task_outcome.attempts(int(k))
        size, won = p.prefix(j)
        inside = k_eligible_mask(size, j)[where]
        eligible.append(inside)
        success.append(inside & ((won[where] > 0) if metric.task_outcome.rule == "any" else (won[where] == j)))
    return np.stack(eligible), np.stack(success)


def _positions(run: Run, tasks: list[str]) -> list[int]:
    index = {t: i for i, t in enumerate(plan_ids(run))}
    return [index[t] for t in tasks]


def selection_reason(run: Run, k: int) -> str | None:
    """Why ``run`` has no board selected@k at the common k ``k``; None when it has one."""
    if run.selection is None:
        return "the run has no selection.jsonl"
    if int(run.k) != int(k):
        return (f"its k = {int(run.k)} is not the common k = {int(k)}: spec section 9 enters a task only when its "
                f"candidates are exactly 1..{int(run.k)}, so its picks are no selected@{int(k)}")
    return None


def board_selection(run: Run, common: list[str], k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per common task: enters the run's selection metrics, and its selected attempt succeeded.

    The entering tasks and ``selected_success`` are those of
    :func:`~capbench_nb.metrics.selection.selection_metrics` (spec section 9: k-eligible, candidates
    exactly 1..k; an abstention is no success), restricted to the common tasks.

    Returns
    -------
    (entering, success) : two bool arrays of length ``len(common)``, or None
        None when :func:`selection_reason` gives a reason (no selection file, or k not the common k).
    """
    if selection_reason(run, k) is not None:
        return None
    picks = selection_metrics(run).per_task
    won = dict(zip(picks["task_id"].astype(object), picks["selected_success"].to_numpy(dtype=bool).tolist()))
    return (np.array([t in won for t in common], dtype=bool),
            np.array([won.get(t, False) for t in common], dtype=bool))


def check_board_metric(runs: Sequence[Run], metric: str) -> None:
    """Raise ValueError, one sentence, when the board's metric is selected@k and some run has none."""
    if metric != SELECTED:
        return
    k = common_ground(runs)[2]
    missing = [(i, reason) for i, run in enumerate(runs) if (reason := selection_reason(run, k)) is not None]
    if missing:
        i, reason = missing[0]
        more = f" (and {len(missing) - 1} more run(s) without one)" if len(missing) > 1 else ""
        raise ValueError(f"the board metric selected@k needs a selected@k for every run, but #{i + 1} "
                         f"{show_value(runs[i].run_id)} has none: {reason}{more}")


# =========================================================================== cost


def cost_per_attempt(run: Run, common: list[str], k: int) -> tuple[float | None, int]:
    """``(mean cost, attempts)`` over the eligible attempts 1..k of the common tasks.

    The mean is :func:`math.fsum` over the attempts divided by their number (exact sum, so the
    order of the records does not matter); None when any of them has a null cost or there is none.
    """
    p = prepare(run.attempts, run.plan)
    in_common = np.zeros(p.n_tasks, dtype=bool)
    in_common[_positions(run, common)] = True
    mask = p.eligible & (p.attempt <= int(k)) & in_common[p.pos]
    costs = p.counted["cost"].to_numpy(dtype="float64", na_value=np.nan)[mask]
    n = int(costs.size)
    if n == 0 or np.isnan(costs).any():
        return None, n
    return math.fsum(costs.tolist()) / n, n


def frontier_flags(values: Sequence[float | None], costs: Sequence[float | None]) -> list[bool | None]:
    """Per run: on the cost-accuracy frontier (True), dominated (False), or None (unpriced, or no value).

    Among the runs with both a cost and a value, r is dominated when some s has cost_s <= cost_r
    and value_s >= value_r, one of them strictly.
    """
    placed = [i for i in range(len(values)) if values[i] is not None and costs[i] is not None]
    out: list[bool | None] = [None] * len(values)
    for r in placed:
        out[r] = not any(costs[s] <= costs[r] and values[s] >= values[r]
                         and (costs[s] < costs[r] or values[s] > values[r]) for s in placed if s != r)
    return out


# =========================================================================== compatibility


def _names(runs: Sequence[Run], positions: list[int], limit: int = 5) -> str:
    shown = ", ".join(f"#{i + 1} {show_value(runs[i].run_id)}" for i in positions[:limit])
    return shown + (f" and {len(positions) - limit} more" if len(positions) > limit else "")


def _compatibility(runs: Sequence[Run], common: list[str], left_out: list[str], k: int) -> dict:
    """Board-level warnings (common ground, then each compare code against the first run) and the pairwise lists."""
    against = [{"run": i, "warnings": compatibility_warnings(runs[0], runs[i])} for i in range(1, len(runs))]
    warnings = []
    if left_out:
        planned = [len(plan_ids(run)) for run in runs]
        partial = [i for i, run in enumerate(runs) if len(plan_ids(run)) > len(common)]
        warnings.append({"code": "task_set", "runs": partial, "message": (
            f"the runs plan different task sets ({min(planned)} to {max(planned)} tasks): the board compares them "
            f"on the {len(common)} tasks planned in every run; {len(left_out)} task(s) planned in only some runs "
            f"are left out of every number (runs with tasks left out: {_names(runs, partial)})")})
    ks = [int(run.k) for run in runs]
    if len(set(ks)) > 1:
        differing = [i for i, value in enumerate(ks) if value != k]
        warnings.append({"code": "k", "runs": differing, "message": (
            f"the runs have different k ({min(ks)} to {max(ks)}): pass@k and pass^k are compared at the common "
            f"k = {k}, the smallest (attempts 1..{k} of each task; runs with a larger k: {_names(runs, differing)})")})
    for code in WARNING_CODES:
        if code in ("task_set", "k"):
            continue
        hits = [(entry["run"], w) for entry in against for w in entry["warnings"] if w["code"] == code]
        if hits:
            positions = [i for i, _ in hits]
            warnings.append({"code": code, "runs": positions, "message": (
                f"{len(positions)} of {len(runs) - 1} run(s) differ from the first run (#1 {show_value(runs[0].run_id)}) "
                f"in {code}: {_names(runs, positions)}; e.g. #{positions[0] + 1} (B) against #1 (A): "
                f"{hits[0][1]['message']}")})
    return {"compatible": not warnings, "warnings": warnings, "against_first": against}


# =========================================================================== the document


def _loaded(runs: Sequence[Run]) -> list[Run]:
    """The runs as a list, each a loaded Run: reading run directories is the caller's (``cb.board``, the CLI)."""
    for i, run in enumerate(runs):
        if not isinstance(run, Run):
            raise TypeError(f"board() takes loaded runs (cb.load_run); run {i + 1} is a {type(run).__name__}: "
                            "give run directories to capbench_nb.board, which loads them")
    return list(runs)


def _suite(run: Run) -> dict | None:
    """The suite a run states (:func:`~capbench_nb.metrics.compatibility.suite_identity`), None when it names none."""
    return suite_identity(run) if isinstance(run.manifest.get("suite"), dict) else None


def _curve(run: Run, common: list[str], k: int) -> list[dict]:
    """pass@j and pass^j for j = 1..k over the common tasks (planned prefixes, as metrics.json's curves)."""
    p = prepare(run.attempts, run.plan)
    p.prefixes(k)
    where = np.asarray(_positions(run, common), dtype=np.int64)
    points = []
    for j in range(1, k + 1):
        size, won = p.prefix(j)
        ok = k_eligible_mask(size, j)[where]
        n = int(ok.sum())
        points.append({"j": j, "pass@j": Rate.of(int((ok & (won[where] > 0)).sum()), n, len(common)).to_dict(),
                       "pass^j": Rate.of(int((ok & (won[where] == j)).sum()), n, len(common)).to_dict()})
    return points


def _outcome_text(eligible: np.ndarray, success: np.ndarray) -> str:
    """One character per task: ``1`` success, ``0`` failure, ``.`` not in the denominator."""
    return "".join(OUTCOME_CHARS[c] for c in np.where(eligible, np.where(success, 0, 1), 2).tolist())


def _run_entry(run: Run, eligible: np.ndarray, success: np.ndarray, common: list[str], k: int,
               picks: tuple[np.ndarray, np.ndarray] | None, *, selection: bool) -> dict:
    """A run's entry; with ``selection`` (some run of the board has a selection file) its selected@k too."""
    values = {name: Rate.of(int(success[m].sum()), int(eligible[m].sum()), len(common)).to_dict()
              for m, name in enumerate(BOARD_METRICS)}
    cost, attempts = cost_per_attempt(run, common, k)
    config = run.manifest.get("config") if isinstance(run.manifest.get("config"), dict) else {}
    outcomes = {name: _outcome_text(eligible[m], success[m]) for m, name in enumerate(BOARD_METRICS)}
    entry = {
        "run_id": run.run_id,
        "suite": _suite(run),
        "model": config.get("model"),
        "k": int(run.k),
        "tasks_planned": int(len(run.plan)),
        "values": values,
        "rank": None,
        "rank_interval": None,
        "group": None,
        "cost_per_attempt": cost,
        "cost_attempts": attempts,
        "frontier": None,
        "curve": _curve(run, common, k),
        "outcomes": outcomes,
    }
    if selection:
        values[SELECTED] = None if picks is None else Rate.of(int(picks[1].sum()), int(picks[0].sum()),
                                                              len(common)).to_dict()
        outcomes[SELECTED] = None if picks is None else _outcome_text(*picks)
        selector = None if run.selection is None else run.selection.selector
        entry["selection"] = {"selector": None if selector is None else dict(selector),
                              "reason": selection_reason(run, k)}
    return entry


def _metric_pairs(name: str, positions: list[int], eligible: np.ndarray, success: np.ndarray) -> list[dict]:
    """The pairs of one metric among the runs at ``positions`` (input order), Holm-adjusted as one family."""
    tests = pair_tests(eligible, success)
    out = []
    for test, adjusted in zip(tests, holm_adjust([t["p"] for t in tests]).tolist()):
        n = test["n"]
        out.append({"metric": name, "a": positions[test["a"]], "b": positions[test["b"]], "n": n,
                    "a_only": test["a_only"], "b_only": test["b_only"],
                    "difference": (test["a_only"] - test["b_only"]) / n if n else None,
                    "p": test["p"], "p_holm": adjusted})
    return out


# long function: the document, key by key in section 10's order; each block is a call to a helper above
def _families(outcomes: list, picks: list) -> dict:
    """Per metric: the runs paired (input positions) with their denominators and successes per common task."""
    families = {name: (list(range(len(outcomes))), np.stack([e[m] for e, _ in outcomes]),
                       np.stack([s[m] for _, s in outcomes])) for m, name in enumerate(BOARD_METRICS)}
    chosen = [i for i, pick in enumerate(picks) if pick is not None]
    if len(chosen) >= 2:
        families[SELECTED] = (chosen, np.stack([picks[i][0] for i in chosen]), np.stack([picks[i][1] for i in chosen]))
    return families


def _place(entries: list[dict], pairs: list[dict], outcomes: tuple, *, metric: str, alpha: float, seed: int,
           resamples: int) -> tuple[list[list[int]], list[bool | None]]:
    """Fill each run entry's ``group``, ``rank``, ``rank_interval`` and ``frontier`` by the board metric;
    return the groups and the frontier flags."""
    values = [entry["values"][metric]["value"] for entry in entries]
    p_holm = np.ones((len(entries), len(entries)))
    for pair in pairs:
        if pair["metric"] == metric:
            p_holm[pair["a"], pair["b"]] = p_holm[pair["b"], pair["a"]] = pair["p_holm"]
    groups = board_groups(values, p_holm, float(alpha))
    intervals = rank_intervals(*outcomes, resamples=resamples, seed=seed)
    flags = frontier_flags(values, [entry["cost_per_attempt"] for entry in entries])
    for number, group in enumerate(groups, start=1):
        for i in group:
            entries[i]["group"] = number
    for i, (entry, rank) in enumerate(zip(entries, board_ranks(values))):
        entry["rank"] = rank
        entry["rank_interval"] = intervals[i] if rank is not None else None
        entry["frontier"] = flags[i]
    return groups, flags


def board(runs: Sequence[Run], *, metric: str = "pass@1", alpha: float = 0.05, seed: int = 0,
          resamples: int = 2000) -> dict:
    """The board.json document of N >= 2 runs (spec section 10).

    Parameters
    ----------
    runs : sequence of Run
        Loaded runs (:func:`capbench_nb.load_run`; :func:`capbench_nb.board` also takes run
        directories and loads them); positions in this order name the runs.
    metric : {"pass@1", "pass@k", "pass^k", "selected@k"}, default "pass@1"
        The board's metric: groups, ranks, rank intervals and the frontier use it; ``selected@k``
        only when every run has one (a selection file and the common k).
    alpha : float, default 0.05
        Level of the groups (a run joins a group when its Holm-adjusted p against the anchor is
        >= alpha).
    seed : int, default 0
        Seed of the rank bootstrap (:func:`numpy.random.default_rng`).
    resamples : int, default 2000
        Bootstrap resamples B (0: no rank interval), at most :data:`~capbench_nb.format.MAX_RESAMPLES`.

    Returns
    -------
    dict
        ``schema_version`` (``capbench.board/1``), ``metric``, ``alpha``, ``seed``, ``resamples``,
        ``common`` (``k``, ``tasks``, ``not_common``, ``task_ids``), ``runs`` (input order:
        ``run_id``, ``suite``, ``model``, ``k``, ``tasks_planned``, ``values`` {pass@1, pass@k,
        pass^k: rates as in metrics.json; selected@k, a rate or null, when some run has a selection
        file}, ``rank``, ``rank_interval``, ``group``,
        ``cost_per_attempt``, ``cost_attempts``, ``frontier``, ``curve`` (pass@j and pass^j, j =
        1..common k, on the common tasks) and ``outcomes`` (per metric, one character per common
        task: ``1`` success, ``0`` failure, ``.`` not in the denominator; null for a selected@k the run
        does not have), and, when some run has a selection file, ``selection`` (``selector``,
        ``reason``: why its selected@k is null, else null)), ``pairs`` (per metric and
        pair a < b: ``metric``, ``a``, ``b``, ``n``, ``a_only``, ``b_only``, ``difference`` (a minus
        b, ``(a_only - b_only) / n``), ``p``, ``p_holm``), ``groups``, ``unpriced``, ``frontier``
        (frontier runs by cost), ``compatibility``, ``methods`` and ``provenance`` (per run its input
        hashes, as in its metrics.json).

    Raises
    ------
    ValueError
        Fewer than 2 runs, an option out of range, or ``selected@k`` as the metric while some run has
        none (one sentence).
    TypeError
        Something else than a loaded Run among ``runs``.
    """
    check_board_options(metric=metric, alpha=alpha, seed=seed, resamples=resamples, runs=len(runs))
    loaded = _loaded(runs)
    check_board_metric(loaded, metric)
    with shared_preparation():  # one preparation per run for every number below
        common, left_out, k = common_ground(loaded)
        outcomes = [board_outcomes(run, common, k) for run in loaded]
        selection = any(run.selection is not None for run in loaded)
        picks = [board_selection(run, common, k) if selection else None for run in loaded]
        entries = [_run_entry(run, e, s, common, k, pick, selection=selection)
                   for run, (e, s), pick in zip(loaded, outcomes, picks)]
        families = _families(outcomes, picks)
        pairs = [pair for name, family in families.items() for pair in _metric_pairs(name, *family)]
        compatibility = _compatibility(loaded, common, left_out, k)
    groups, flags = _place(entries, pairs, families[metric][1:], metric=metric, alpha=alpha, seed=seed,
                           resamples=resamples)
    on_frontier = sorted((i for i, f in enumerate(flags) if f), key=lambda i: (entries[i]["cost_per_attempt"], i))
    return {
        "schema_version": BOARD_SCHEMA_VERSION,
        "metric": metric,
        "alpha": float(alpha),
        "seed": seed,
        "resamples": resamples,
        "common": {"k": k, "tasks": len(common), "not_common": left_out, "task_ids": common},
        "runs": entries,
        "pairs": pairs,
        "groups": groups,
        "unpriced": [i for i, entry in enumerate(entries) if entry["cost_per_attempt"] is None],
        "frontier": on_frontier,
        "compatibility": compatibility,
        "methods": _methods(alpha, selection),
        "provenance": _provenance(loaded),
    }


def _provenance(runs: list[Run]) -> dict:
    """The toolkit, and per run its input hashes (as in its metrics.json) and reading options."""
    return {
        "toolkit": "capbench-nb",
        "toolkit_version": __version__,
        "inputs": [dict(run.hashes) for run in runs],
        "allow_invalid": [not run.strict for run in runs],
        "evidence_checked": [run.evidence_checked for run in runs],
    }


def _methods(alpha: float, selection: bool) -> dict:
    selected = {"selection": "selected@k: spec section 9's selected@k over the common tasks that enter the run's "
                             "selection metrics (k-eligible, candidates exactly 1..k), a success when the selected "
                             "attempt succeeded, 95% Wilson interval, coverage over the common tasks; null when the run "
                             "has no selection.jsonl or its k is not the common k; pairs: tasks entering in both runs, "
                             "Holm over the pairs of the runs that have one"} if selection else {}
    return {
        "common": "tasks planned in every run, in the first run's plan order, at the smallest k of the runs",
        "value": "pass@1, pass@k or pass^k of spec section 6 at the common k over the common tasks, with the 95% "
                 "Wilson score interval; coverage over the common tasks",
        "test": "pairs: tasks in the metric's denominator in both runs; exact two-sided McNemar test "
                "min(1, 2 * P(X <= min(a_only, b_only))), X ~ Binomial(a_only + b_only, 1/2), 1 without a "
                "discordant task; Holm's step-down correction over the N(N-1)/2 pairs of each metric",
        "groups": f"runs by board value, highest first (null last, ties in input order); the first run not yet in "
                  f"a group anchors the next one, joined by every run not yet in a group whose Holm-adjusted p "
                  f"against the anchor is >= alpha = {float(alpha):g}",
        "rank": "1 + the number of runs with a strictly higher board value; interval: 2.5th and 97.5th "
                "percentiles of the rank over a paired bootstrap of the common tasks (numpy default_rng(seed), "
                "resample b is the b-th integers(0, T, size=T)), rounded outwards",
        "cost": "mean cost over the eligible attempts 1..common k of the common tasks; null (unpriced) when any "
                "of them has no cost; a priced run is dominated when another costs no more and scores no less, "
                "one of them strictly",
        **selected,
    }
