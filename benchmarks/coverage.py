"""Coverage of every interval capbench-nb prints, by simulation from the simulator's model (issue 23).

    .venv/bin/python benchmarks/coverage.py                    # the table of docs/coverage.md (~3 min)
    .venv/bin/python benchmarks/coverage.py --runs 500 --rank-runs 100 --resamples 500   # a quick look
    .venv/bin/python benchmarks/coverage.py --only clustered   # one family

Each cell simulates ``--runs`` runs (seeded: the same arguments print the same table) as numpy arrays
of outcomes -- nothing is written to disk -- and calls the toolkit's own interval functions on the
arrays (the functions the metrics use on one run, one path for scalars and arrays):

- **Wilson** (``wilson_interval_array``) on pass@1, pass@k and pass^k (spec section 6);
- **clustered** (``clustered_mean_se`` + ``t_interval_array``): the CR1 standard error of
  all_attempts_pass_rate over G apps and its t interval on G - 1 degrees of freedom (section 11);
- **selected@k** (Wilson over the entering tasks, section 9) with the simulator's selector;
- **Newcombe** (``paired_difference_interval_array``): the paired difference of ``compare``;
- **rank** (``capbench_nb.metrics.board_stats.rank_intervals``): the board's bootstrap rank interval
  (section 10), one call per simulated board of 3 runs (a loop over boards, each bootstrap
  vectorised: 1,000 boards of B = 2,000 resamples per cell by default, the board's own B).

The model is the simulator's (:mod:`capbench_nb.simulation`): a task's latent success probability
p ~ Beta(alpha, beta) with the simulator's concentration alpha + beta = 2.5 (its default 1.5 + 1.0),
each attempt a success with probability p; per task the simulator's skip rate (0.02) and per
attempt its setup, provider, start, crash and judge failure rates (0.08 together) make attempts
ineligible, independently of p.  The truth is the simulator's population rate
(:func:`capbench_nb.simulation.selector.population_rates`: pass@1 = alpha / (alpha + beta), pass@k =
1 - B(alpha, beta + k) / B(alpha, beta), selected@k = accuracy * pass@k; pass^k = B(alpha + k, beta) /
B(alpha, beta)), and the mean of the Beta is chosen so that the metric of the cell is the cell's
rate (0.1, 0.5 or 0.9).  Clustered cells add a between-app effect: an app's mean is drawn from
Beta(mu * 8, (1 - mu) * 8) and its tasks' p from the Beta of concentration 2.5 around it (so the
population mean stays mu; an intraclass correlation of about 0.1 for p); apps have unequal sizes
(the largest about twice the smallest); every attempt is eligible there, so that every run has the
same T tasks (the metric leaves out tasks without an eligible attempt).  Paired and board cells
draw the runs' p for one task from a Gaussian copula with correlation 0.7 (a task hard for one
agent is hard for the other).

Clustered cells also say in how many runs the metrics flag the interval ``approximate``
(:func:`capbench_nb.metrics.health.clustered_caveat`).  Printed per cell: coverage (share of runs whose interval holds the truth; a null interval counts as
not covering), its Monte Carlo standard error sqrt(c (1 - c) / R), and the median width.  Cells
below 93% are marked.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv, ndtr

from capbench_nb.metrics.board_stats import rank_intervals
from capbench_nb.metrics.health import ClusteredError, clustered_caveat, clustered_mean_se
from capbench_nb.metrics.power import beta_mean_for
from capbench_nb.metrics.stats import paired_difference_interval_array, t_interval_array, wilson_interval_array
from capbench_nb.simulation.options import SimulationOptions
from capbench_nb.simulation.selector import population_rates

TASKS = (30, 40, 50, 116)
KS = (1, 3, 5)
RATES = (0.1, 0.5, 0.9)
GROUPS = (4, 8, 12)
#: The simulator's concentration alpha + beta (SimulationOptions' default 1.5 + 1.0).
CONCENTRATION = SimulationOptions().success_alpha + SimulationOptions().success_beta
#: Concentration of the apps' means around mu in the clustered cells (the between-app effect).
APP_CONCENTRATION = 8.0
#: The simulator's selector accuracy in the selected@k cells.
ACCURACY = 0.95
#: Correlation of two runs' latent p on one task (paired and board cells).
TASK_CORRELATION = 0.7
#: Half the gap between neighbouring runs' true values (paired difference; board spacing).
STEP = 0.05
#: A cell is marked when it covers less than this (the issue's threshold).
FLOOR = 0.93


def _ineligible_rates() -> tuple[float, float]:
    """(per task skip rate, per attempt ineligible rate) of the simulator's defaults."""
    o = SimulationOptions()
    per_attempt = (o.setup_failure_rate + o.provider_unavailable_rate + o.not_started_rate + o.crash_rate
                   + (o.judge_error_rate if o.judge else 0.0))
    return o.skip_rate, per_attempt


SKIP, INELIGIBLE = _ineligible_rates()


def options_for(rate: float, metric: str, k: int) -> SimulationOptions:
    """The simulator's options whose population value of ``metric`` is ``rate``."""
    mu = beta_mean_for(rate, metric=metric, k=k, concentration=CONCENTRATION)
    return SimulationOptions(success_alpha=mu * CONCENTRATION, success_beta=(1 - mu) * CONCENTRATION)


def truth(opt: SimulationOptions, metric: str, k: int) -> float:
    """The population value of ``metric`` under ``opt`` (the simulator's ground truth)."""
    if metric == "pass^k":  # E[p^k] = B(alpha + k, beta) / B(alpha, beta)
        a, b = opt.success_alpha, opt.success_beta
        return math.prod((a + j) / (a + b + j) for j in range(k))
    rates = population_rates(opt if opt.selector_accuracy is not None
                             else SimulationOptions(success_alpha=opt.success_alpha, success_beta=opt.success_beta,
                                                    selector_accuracy=1.0), k)
    return rates["pass@1" if metric == "pass@1" else ("selected@k" if metric == "selected@k" else "pass@k")]


@dataclass(frozen=True)
class Cell:
    family: str
    metric: str
    tasks: int
    k: int
    rate: float
    groups: int | None
    runs: int
    coverage: float
    mc_se: float
    width: float
    note: str = ""


def _cell(family, metric, tasks, k, rate, groups, low, high, target, note="") -> Cell:
    low, high = np.asarray(low, float), np.asarray(high, float)
    ok = (low <= target) & (target <= high)  # NaN compares False: a null interval does not cover
    c = float(ok.mean())
    finite = ~np.isnan(low) & ~np.isnan(high)
    width = float(np.median(high[finite] - low[finite])) if finite.any() else float("nan")
    return Cell(family, metric, tasks, k, rate, groups, len(ok), c, math.sqrt(c * (1 - c) / len(ok)), width, note)


def _outcomes(rng, opt: SimulationOptions, runs: int, tasks: int, k: int, p=None):
    """(success, eligible) bool arrays of shape (runs, tasks, k) from the simulator's model."""
    if p is None:
        p = rng.beta(opt.success_alpha, opt.success_beta, (runs, tasks))
    success = rng.random((runs, tasks, k)) < p[..., None]
    eligible = (rng.random((runs, tasks, k)) >= INELIGIBLE) & (rng.random((runs, tasks, 1)) >= SKIP)
    return success, eligible


def _counts(metric: str, success, eligible, k: int):
    """(successes, n) per run of pass@1, pass@k or pass^k (spec section 6)."""
    if metric == "pass@1":
        denominator = eligible[..., 0]
        won = success[..., 0] & denominator
    else:
        denominator = eligible[..., :k].all(axis=-1)
        hit = success[..., :k].any(axis=-1) if metric == "pass@k" else success[..., :k].all(axis=-1)
        won = hit & denominator
    return won, denominator


def wilson_cells(rng, runs: int) -> list[Cell]:
    out = []
    for metric in ("pass@1", "pass@k", "pass^k"):
        for k in ((1,) if metric == "pass@1" else KS[1:]):
            for rate in RATES:
                opt = options_for(rate, metric, k)
                target = truth(opt, metric, k)
                for tasks in TASKS:
                    success, eligible = _outcomes(rng, opt, runs, tasks, k)
                    won, den = _counts(metric, success, eligible, k)
                    low, high = wilson_interval_array(won.sum(axis=1), den.sum(axis=1))
                    out.append(_cell("Wilson", metric, tasks, k, rate, None, low, high, target))
    return out


def _app_codes(tasks: int, groups: int) -> np.ndarray:
    """Unequal app sizes (proportional to 1..2 across apps), every app non-empty, in plan order."""
    weights = np.linspace(1.0, 2.0, groups)
    sizes = np.maximum(1, np.floor(weights / weights.sum() * tasks).astype(int))
    sizes[-1] += tasks - sizes.sum()
    return np.repeat(np.arange(groups), sizes)


def clustered_cells(rng, runs: int) -> list[Cell]:
    out = []
    for rate in RATES:
        mu = rate  # all_attempts_pass_rate's truth is the population pass@1 = mu
        opt = SimulationOptions(success_alpha=mu * CONCENTRATION, success_beta=(1 - mu) * CONCENTRATION)
        target = truth(opt, "pass@1", 1)
        for groups in GROUPS:
            for tasks in TASKS:
                codes = _app_codes(tasks, groups)
                for k in KS:
                    app_mu = rng.beta(mu * APP_CONCENTRATION, (1 - mu) * APP_CONCENTRATION, (runs, groups))
                    m = np.clip(app_mu[:, codes], 1e-9, 1 - 1e-9)
                    p = rng.beta(m * CONCENTRATION, (1 - m) * CONCENTRATION)
                    x = (rng.random((runs, tasks, k)) < p[..., None]).mean(axis=-1)
                    se, g = clustered_mean_se(x, codes)
                    value = x.mean(axis=1)
                    low, high = t_interval_array(value, se, g - 1)
                    flagged = np.mean([clustered_caveat(float(v), ClusteredError(float(s), g, g - 1, float(lo), float(hi)),
                                                        tasks) is not None
                                       for v, s, lo, hi in zip(value, se, low, high)])
                    out.append(_cell("clustered", "all_attempts_pass_rate", tasks, k, rate, groups, low, high, target,
                                     f"flagged approximate in {flagged:.0%} of runs"))
    return out


def selection_cells(rng, runs: int) -> list[Cell]:
    out = []
    for k in KS:
        for rate in RATES:
            base = options_for(rate / ACCURACY, "pass@k", k)
            opt = SimulationOptions(success_alpha=base.success_alpha, success_beta=base.success_beta,
                                    selector_accuracy=ACCURACY)
            target = truth(opt, "selected@k", k)
            for tasks in TASKS:
                success, eligible = _outcomes(rng, opt, runs, tasks, k)
                entering = eligible.all(axis=-1)
                right = rng.random((runs, tasks)) < ACCURACY  # the selector's pick succeeds w.p. a given a success
                picked = success.any(axis=-1) & right & entering
                low, high = wilson_interval_array(picked.sum(axis=1), entering.sum(axis=1))
                out.append(_cell("selected@k", "selected@k", tasks, k, rate, None, low, high, target))
    return out


def _copula_p(rng, opts: list[SimulationOptions], runs: int, tasks: int) -> np.ndarray:
    """Latent p of len(opts) runs on the same tasks, shape (len(opts), runs, tasks): a Gaussian copula
    with correlation TASK_CORRELATION between any two runs, each margin the run's Beta."""
    r = TASK_CORRELATION
    shared = rng.standard_normal((runs, tasks))
    out = []
    for o in opts:
        z = math.sqrt(r) * shared + math.sqrt(1 - r) * rng.standard_normal((runs, tasks))
        out.append(betaincinv(o.success_alpha, o.success_beta, ndtr(z)))
    return np.stack(out)


def _rates_around(rate: float, count: int) -> list[float]:
    """``count`` true values STEP apart, ending at ``rate`` (going down from 0.9, up otherwise)."""
    sign = -1 if rate > 0.5 else 1
    return [rate + sign * STEP * i for i in range(count)]


def paired_cells(rng, runs: int) -> list[Cell]:
    out = []
    for metric in ("pass@1", "pass@k", "pass^k"):
        for k in ((1,) if metric == "pass@1" else KS[1:]):
            for rate in RATES:
                rate_a, rate_b = _rates_around(rate, 2)
                opts = [options_for(rate_a, metric, k), options_for(rate_b, metric, k)]
                target = truth(opts[1], metric, k) - truth(opts[0], metric, k)
                for tasks in TASKS:
                    p = _copula_p(rng, opts, runs, tasks)
                    (sa, ea), (sb, eb) = (_outcomes(rng, o, runs, tasks, k, p=p[i]) for i, o in enumerate(opts))
                    wa, da = _counts(metric, sa, ea, k)
                    wb, db = _counts(metric, sb, eb, k)
                    both_in = da & db
                    a, b = wa & both_in, wb & both_in
                    cells = [(a & b).sum(1), (a & ~b).sum(1), (~a & b).sum(1), (both_in & ~a & ~b).sum(1)]
                    low, high = paired_difference_interval_array(*cells)
                    out.append(_cell("Newcombe", metric, tasks, k, rate, None, low, high, target))
    return out


def rank_cells(rng, runs: int, resamples: int, n_runs: int = 3) -> list[Cell]:
    """The board's rank interval: ``n_runs`` runs whose true pass@1 are STEP apart (true ranks 1..N);
    coverage over runs x boards of 'the true rank is in the interval'; one rank_intervals call per board."""
    out = []
    for rate in RATES:
        values = _rates_around(rate, n_runs)
        opts = [options_for(v, "pass@1", 1) for v in values]
        true_rank = np.argsort(np.argsort(-np.array(values))) + 1
        for tasks in TASKS:
            p = _copula_p(rng, opts, runs, tasks)
            drawn = [_outcomes(rng, o, runs, tasks, 1, p=p[i]) for i, o in enumerate(opts)]
            low = np.empty((runs, n_runs))
            high = np.empty((runs, n_runs))
            for r in range(runs):
                eligible = np.stack([e[r, :, 0] for _, e in drawn])
                success = np.stack([s[r, :, 0] for s, _ in drawn])
                bounds = rank_intervals(eligible, success, resamples=resamples, seed=r)
                low[r], high[r] = zip(*bounds)
            note = f"{runs} boards x {n_runs} runs, B = {resamples}"
            cell = _cell("rank", "rank (pass@1)", tasks, 1, rate, None, (low - true_rank).ravel(),
                         (high - true_rank).ravel(), 0.0, note)
            out.append(cell)
    return out


def table(cells: list[Cell]) -> str:
    lines = ["| interval | metric | T | k | rate | G | runs | coverage | MC se | median width | |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cells:
        flag = f"**below {FLOOR:.0%}**" if c.coverage < FLOOR else ""
        note = "; ".join(x for x in (flag, c.note) if x)
        lines.append(f"| {c.family} | {c.metric} | {c.tasks} | {c.k} | {c.rate:g} | {c.groups or ''} | {c.runs:,} | "
                     f"{c.coverage:.3f} | {c.mc_se:.3f} | {c.width:.3f} | {note} |")
    return "\n".join(lines)


FAMILIES = ("wilson", "clustered", "selection", "paired", "rank")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="simulated runs per cell (default 2000)")
    ap.add_argument("--rank-runs", type=int, default=1000, help="simulated boards per rank cell (default 1000)")
    ap.add_argument("--resamples", type=int, default=2000,
                    help="bootstrap resamples per board (default 2000, the board's own default)")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--only", choices=FAMILIES, action="append", help="only these families (repeatable)")
    args = ap.parse_args(argv)
    if args.runs < 1000:
        print("note: fewer than 1,000 runs per cell", file=sys.stderr)
    families = args.only or list(FAMILIES)
    cells: list[Cell] = []
    for i, family in enumerate(FAMILIES):
        if family not in families:
            continue
        rng = np.random.default_rng([args.seed, i])  # one stream per family: --only gives the same cells
        start = time.perf_counter()
        if family == "wilson":
            cells += wilson_cells(rng, args.runs)
        elif family == "clustered":
            cells += clustered_cells(rng, args.runs)
        elif family == "selection":
            cells += selection_cells(rng, args.runs)
        elif family == "paired":
            cells += paired_cells(rng, args.runs)
        else:
            cells += rank_cells(rng, args.rank_runs, args.resamples)
        print(f"{family}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(table(cells))
    below = [c for c in cells if c.coverage < FLOOR]
    print(f"\n{len(cells)} cells; {len(below)} below {FLOOR:.0%}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
