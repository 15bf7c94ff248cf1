"""How well a representative subset estimates and ranks agents, by simulation with known truth (issue 26).

    .venv/bin/python benchmarks/subset_quality.py              # the table of docs/subset.md (7-30 s)
    .venv/bin/python benchmarks/subset_quality.py --seeds 2    # a quick look
    .venv/bin/python benchmarks/subset_quality.py --grid --seeds 32   # the targets over 12 worlds (~5 min)
    .venv/bin/python benchmarks/subset_quality.py --calibrate  # this world's task spread beside tau-bench's

The world (seeded; the same arguments print the same table): T = 116 tasks (AndroidWorld's count) in 12
apps of unequal size; task t has difficulty ``b_t ~ N(0, 1.3^2)`` (``--difficulty-sd``) and discrimination
``a_t ~ LogNormal(0, 0.35^2)`` (so the toolkit's Rasch model is *misspecified*: it assumes a_t = 1);
agent i has ability ``theta_i ~ N(0, 1)`` (``--ability-sd``) and an app effect ``u_i,app``; the success probability of
every attempt is ``p_it = sigmoid(a_t (theta_i + u_i,app(t) - b_t))`` and 5% of attempts are not
agent-eligible (they enter no denominator).  The truth of an agent is its expected full-suite pass@1,
``mean_t p_it``.  Six training agents run every task k = 3 times, with app effects ``N(0, 0.3^2)``; twelve
held-out agents follow: six like the training ones, and six "new scaffolds" whose app profile no training
agent has (a third of the apps +1.2 logits, a third -1.2, the rest N(0, 0.3^2)).

Estimators of a held-out agent's full-suite pass@1, each with a 95% interval:

- ``stratified-rasch`` (the toolkit's, ``suite select --strata app`` + ``suite estimate``): N = 40 tasks
  chosen on the training runs, the agent runs them k = 3 times, per-app abilities shrunk to a global one;
- ``global-rasch``: the same 40 tasks and fit with one ability per agent (tau = 0), the second method;
- baseline ``full suite, k = 1``: every task once (116 attempts, about the subset's 120), the plain
  pass@1 with its Wilson interval;
- baseline ``random 40, plain mean``: 100 random 40-task subsets, each run k = 3 times, the pooled
  success rate with a Wilson interval over the attempts; tau_b and MAE are the median over the 100
  subsets, coverage their mean.

Printed per estimator, averaged over the seeds: Kendall tau_b of the 12 estimates against the 12
truths, the mean absolute error, the interval coverage (all 12 agents, and the six new scaffolds
alone), and the mean interval width.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capbench_nb.metrics.stats import wilson_interval  # noqa: E402
from capbench_nb.metrics.subset_model import (TAU, apportion, choose_tasks, estimate_full, fit_rasch,  # noqa: E402
                                              information, residual_sd)

APP_SIZES = (20, 16, 14, 12, 10, 9, 8, 7, 6, 5, 5, 4)
SIZE, K, TRAIN, HELD, NEW = 40, 3, 6, 12, 6
INELIGIBLE = 0.05
RANDOM_SUBSETS = 100
METHODS = ("stratified-rasch", "global-rasch", "full suite, k = 1", "random 40, plain mean")


#: the world's spreads (logits): task difficulty ``b_t ~ N(0, DIFFICULTY_SD^2)``, agent ability ``N(0, ABILITY_SD^2)``
DIFFICULTY_SD, ABILITY_SD = 1.3, 1.0
#: ``--grid``: the worlds of the sensitivity table, (difficulty sd, ability sd)
GRID = [(b, t) for b in (1.3, 1.8, 2.0, 2.5) for t in (0.5, 0.7, 1.0)]
#: ``--calibrate``: real per-trial results to set the difficulty spread against (tau-bench, gpt-4o, airline:
#: 50 tasks x 4 trials; source and license in tests/data/taubench/README.md)
REAL_TRIALS = Path(__file__).resolve().parents[1] / "tests" / "data" / "taubench" / "gpt-4o-airline.trials.jsonl"


def world(rng: np.random.Generator, difficulty_sd: float = DIFFICULTY_SD, ability_sd: float = ABILITY_SD,
          train: int = TRAIN) -> dict:
    apps = np.repeat(np.arange(len(APP_SIZES)), APP_SIZES)
    b = rng.normal(0.0, difficulty_sd, apps.size)
    a = rng.lognormal(0.0, 0.35, apps.size)
    agents = train + HELD
    theta = rng.normal(0.0, ability_sd, agents)
    effect = rng.normal(0.0, 0.3, (agents, len(APP_SIZES)))
    for i in range(agents - NEW, agents):  # new scaffolds: strong on some apps, weak on others
        order = rng.permutation(len(APP_SIZES))
        third = len(APP_SIZES) // 3
        effect[i, order[:third]] = 1.2
        effect[i, order[third:2 * third]] = -1.2
    p = expit(a[None, :] * (theta[:, None] + effect[:, apps] - b[None, :]))
    return {"apps": apps, "p": p, "truth": p.mean(axis=1)}


def attempts(rng: np.random.Generator, p: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Eligible attempts and successes of ``k`` attempts per cell."""
    eligible = rng.random(p.shape + (k,)) >= INELIGIBLE
    won = eligible & (rng.random(p.shape + (k,)) < p[..., None])
    return eligible.sum(axis=-1).astype(float), won.sum(axis=-1).astype(float)


def tau_b(x, y) -> float:
    return float(kendalltau(x, y).statistic)


def one_seed(seed: int, difficulty_sd: float = DIFFICULTY_SD, ability_sd: float = ABILITY_SD,
             train: int = TRAIN) -> dict:
    rng = np.random.default_rng([26, seed])
    w = world(rng, difficulty_sd, ability_sd, train)
    strata = [str(v) for v in w["apps"]]
    train_n, train_s = attempts(rng, w["p"][:train], K)
    theta, b = fit_rasch(train_n, train_s)
    sigma_e = residual_sd(train_n, train_s)
    counts = {v: strata.count(v) for v in dict.fromkeys(strata)}
    chosen = choose_tasks(b, strata, apportion(counts, SIZE), np.random.default_rng(seed),
                          weights=information(theta, b))
    held_p, truth = w["p"][train:], w["truth"][train:]
    sub_n, sub_s = attempts(rng, held_p[:, chosen], K)
    out = {}
    for name, tau in (("stratified-rasch", TAU), ("global-rasch", 0.0)):
        out[name] = [estimate_full(b, strata, chosen, sub_n[i], sub_s[i], theta_mean=float(theta.mean()),
                                   theta_sd=float(theta.std()), sigma_e=sigma_e, tau=tau, seed=seed)
                     for i in range(HELD)]
    full_n, full_s = attempts(rng, held_p, 1)
    out["full suite, k = 1"] = [(full_s[i].sum() / full_n[i].sum(), *wilson_interval(int(full_s[i].sum()),
                                                                                     int(full_n[i].sum())))
                                for i in range(HELD)]
    figures = {name: summarise(rows, truth) for name, rows in out.items()}
    randoms = []
    for _ in range(RANDOM_SUBSETS):
        pick = np.sort(rng.choice(len(strata), SIZE, replace=False))
        n, s = attempts(rng, held_p[:, pick], K)
        rows = [(s[i].sum() / n[i].sum(), *wilson_interval(int(s[i].sum()), int(n[i].sum()))) for i in range(HELD)]
        randoms.append(summarise(rows, truth))
    figures["random 40, plain mean"] = {
        "tau": float(np.median([r["tau"] for r in randoms])), "mae": float(np.median([r["mae"] for r in randoms])),
        **{key: float(np.mean([r[key] for r in randoms])) for key in ("coverage", "coverage_new", "width", "mae_new")}}
    return figures


def summarise(rows, truth) -> dict:
    value = np.array([r[0] for r in rows])
    low, high = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    hit = (low <= truth) & (truth <= high)
    new = slice(HELD - NEW, HELD)
    return {"tau": tau_b(value, truth), "mae": float(np.abs(value - truth).mean()),
            "mae_new": float(np.abs(value - truth)[new].mean()), "coverage": float(hit.mean()),
            "coverage_new": float(hit[new].mean()), "width": float((high - low).mean())}


def averaged(results: list[dict], name: str) -> dict:
    """The figures of estimator ``name``, averaged over the seeds."""
    return {key: float(np.mean([r[name][key] for r in results])) for key in results[0][name]}


def baselines(results: list[dict]) -> tuple[dict, dict, dict]:
    """The averaged figures of ``stratified-rasch``, the full-suite run and the random subsets."""
    return tuple(averaged(results, n) for n in ("stratified-rasch", "full suite, k = 1", "random 40, plain mean"))


def targets(ours: dict, full: dict, rand: dict) -> tuple[bool, bool, bool, bool]:
    """Issue 26's four targets for ``stratified-rasch``: tau_b >= 0.9 x the full run's, MAE <= the full
    run's, MAE <= 0.8 x the random subsets', coverage >= 0.85."""
    return (ours["tau"] >= 0.9 * full["tau"], ours["mae"] <= full["mae"], ours["mae"] <= 0.8 * rand["mae"],
            ours["coverage"] >= 0.85)


def logit_spread(successes: np.ndarray, trials: int) -> float:
    """The sd ``s`` of the task logits of one agent, ``logit p_t ~ N(mu, s^2)``, by marginal maximum likelihood
    on its per-task success counts out of ``trials`` (a logit-normal binomial mixture, 60-point Gauss-Hermite)."""
    from scipy.optimize import minimize
    from scipy.stats import binom

    x, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()

    def nll(par):
        p = expit(par[0] + np.exp(par[1]) * x)
        return -np.log((binom.pmf(successes[:, None], trials, p[None, :]) * w).sum(axis=1)).sum()

    return float(np.exp(minimize(nll, [0.0, 0.0], method="Nelder-Mead").x[1]))


def calibrate(difficulty_sd: float, ability_sd: float) -> str:
    """The real suite's task-logit spread beside this world's (one agent, 4 attempts per task, both)."""
    import json

    rows = [json.loads(line) for line in REAL_TRIALS.read_text(encoding="utf-8").splitlines() if line.strip()]
    counts = {}
    for row in rows:
        counts[row["task_id"]] = counts.get(row["task_id"], 0) + (row["reward"] == 1.0)
    real = logit_spread(np.array(list(counts.values())), 4)
    rng = np.random.default_rng(26)
    spreads = []
    for _ in range(200):  # one agent of this world on its 116 tasks, 4 attempts each, fitted the same way
        p = world(rng, difficulty_sd, ability_sd)["p"][0]
        spreads.append(logit_spread(rng.binomial(4, p), 4))
    return (f"task-logit spread of one agent (4 attempts per task, logit-normal fit): tau-bench airline gpt-4o "
            f"{real:.2f} ({len(counts)} tasks); this world (difficulty sd {difficulty_sd}, ability sd {ability_sd}) "
            f"{np.median(spreads):.2f} (median of 200 agents, 116 tasks)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="worlds simulated (default 8)")
    parser.add_argument("--difficulty-sd", type=float, default=DIFFICULTY_SD, help="task difficulty sd, logits")
    parser.add_argument("--ability-sd", type=float, default=ABILITY_SD, help="agent ability sd, logits")
    parser.add_argument("--training-runs", type=int, default=TRAIN, help=f"training runs (default {TRAIN})")
    parser.add_argument("--grid", action="store_true", help="the targets over a grid of the two spreads instead")
    parser.add_argument("--calibrate", action="store_true", help="the world's task-logit spread beside a real suite's")
    args = parser.parse_args(argv)
    if args.calibrate:
        print(calibrate(args.difficulty_sd, args.ability_sd))
        return 0
    if args.grid:
        return grid(args.seeds)
    results = [one_seed(seed, args.difficulty_sd, args.ability_sd, args.training_runs) for seed in range(args.seeds)]
    print(f"subset quality: T = {sum(APP_SIZES)} tasks in {len(APP_SIZES)} apps, N = {SIZE}, k = {K}, "
          f"{args.training_runs} training runs, {HELD} held-out agents ({NEW} new app profiles), {args.seeds} seeds, "
          f"difficulty sd {args.difficulty_sd}, ability sd {args.ability_sd}")
    print(f"{'estimator':<24} {'tau_b':>6} {'MAE':>7} {'MAE new':>8} {'cover':>6} {'cover new':>9} {'width':>6}")
    for name in METHODS:
        m = averaged(results, name)
        print(f"{name:<24} {m['tau']:6.3f} {m['mae']:7.4f} {m['mae_new']:8.4f} {m['coverage']:6.1%} "
              f"{m['coverage_new']:9.1%} {m['width']:6.3f}")
    print("targets (tau_b, MAE vs full, MAE vs 0.8 random, coverage): "
          + ", ".join("met" if ok else "NOT met" for ok in targets(*baselines(results))))
    return 0


def grid(seeds: int) -> int:
    """The sensitivity table: per world of :data:`GRID`, the method's MAE, both MAE lines and the targets."""
    print(f"subset quality over worlds ({seeds} seeds each): stratified-rasch against issue 26's targets")
    print(f"{'difficulty sd':>13} {'ability sd':>10} {'tau_b':>6} {'MAE':>7} {'full MAE':>8} {'0.8 rand':>8} "
          f"{'cover':>6}  targets met")
    for difficulty_sd, ability_sd in GRID:
        results = [one_seed(seed, difficulty_sd, ability_sd) for seed in range(seeds)]
        ours, full, rand = baselines(results)
        met = targets(ours, full, rand)
        print(f"{difficulty_sd:>13} {ability_sd:>10} {ours['tau']:6.3f} {ours['mae']:7.4f} {full['mae']:8.4f} "
              f"{0.8 * rand['mae']:8.4f} {ours['coverage']:6.1%}  {'all' if all(met) else f'{sum(met)} of 4'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
