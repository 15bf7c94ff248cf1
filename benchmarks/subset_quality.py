"""How well a representative subset estimates and ranks agents, by simulation with known truth (issue 26).

    .venv/bin/python benchmarks/subset_quality.py              # the table of docs/subset.md (~1 min)
    .venv/bin/python benchmarks/subset_quality.py --seeds 2    # a quick look

The world (seeded; the same arguments print the same table): T = 116 tasks (AndroidWorld's count) in 12
apps of unequal size; task t has difficulty ``b_t ~ N(0, 1.3^2)`` and discrimination
``a_t ~ LogNormal(0, 0.35^2)`` (so the toolkit's Rasch model is *misspecified*: it assumes a_t = 1);
agent i has ability ``theta_i ~ N(0, 1)`` and an app effect ``u_i,app``; the success probability of
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


def world(rng: np.random.Generator) -> dict:
    apps = np.repeat(np.arange(len(APP_SIZES)), APP_SIZES)
    b = rng.normal(0.0, 1.3, apps.size)
    a = rng.lognormal(0.0, 0.35, apps.size)
    agents = TRAIN + HELD
    theta = rng.normal(0.0, 1.0, agents)
    effect = rng.normal(0.0, 0.3, (agents, len(APP_SIZES)))
    for i in range(TRAIN + HELD - NEW, agents):  # new scaffolds: strong on some apps, weak on others
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


def one_seed(seed: int) -> dict:
    rng = np.random.default_rng([26, seed])
    w = world(rng)
    strata = [str(v) for v in w["apps"]]
    train_n, train_s = attempts(rng, w["p"][:TRAIN], K)
    theta, b = fit_rasch(train_n, train_s)
    sigma_e = residual_sd(train_n, train_s)
    counts = {v: strata.count(v) for v in dict.fromkeys(strata)}
    chosen = choose_tasks(b, strata, apportion(counts, SIZE), np.random.default_rng(seed),
                          weights=information(theta, b))
    held_p, truth = w["p"][TRAIN:], w["truth"][TRAIN:]
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="worlds simulated (default 8)")
    args = parser.parse_args(argv)
    results = [one_seed(seed) for seed in range(args.seeds)]
    print(f"subset quality: T = {sum(APP_SIZES)} tasks in {len(APP_SIZES)} apps, N = {SIZE}, k = {K}, "
          f"{TRAIN} training runs, {HELD} held-out agents ({NEW} new app profiles), {args.seeds} seeds")
    print(f"{'estimator':<24} {'tau_b':>6} {'MAE':>7} {'MAE new':>8} {'cover':>6} {'cover new':>9} {'width':>6}")
    for name in METHODS:
        m = {key: float(np.mean([r[name][key] for r in results])) for key in results[0][name]}
        print(f"{name:<24} {m['tau']:6.3f} {m['mae']:7.4f} {m['mae_new']:8.4f} {m['coverage']:6.1%} "
              f"{m['coverage_new']:9.1%} {m['width']:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
