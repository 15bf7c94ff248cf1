"""A simulated best-of-k selector of known accuracy: the lines of selection.jsonl and their truth (spec section 9).

With ``selector_accuracy = a`` (``capbench-nb simulate --selector A``), every planned task whose
attempts 1..k all ran gets one selection line with candidates 1..k.  The selector ranks the
candidates and its top pick is ``selected``:

- on a task with a success among the candidates it is *right* with probability ``a``: it ranks the
  successes (in random order) above the failures, so its pick is a success; otherwise it ranks
  the failures first and picks one, or, when every candidate succeeded, ranks them at random and
  abstains (``selected`` null: it trusts none);
- on a task without a success it ranks the candidates at random and picks the top one.

So on every task with a success its pick succeeds with probability exactly ``a``: selection
accuracy is ``a`` whatever the tasks, and selected@k is ``a`` times pass@k.  Over the population
of tasks (latent success probability p ~ Beta(alpha, beta), each eligible attempt a success with
probability p, eligibility independent of p) pass@1 is ``alpha / (alpha + beta)``, pass@k is
``1 - B(alpha, beta + k) / B(alpha, beta)`` and selected@k is ``a`` times that: the truth file states
them (``selection.population``) so that tests can hold the estimates and their intervals to them.
The scores are distinct, descending with the rank.  Every draw comes from a stream of its own
(``seed``, ``"selector"``, task), so a run drawn with a selector has the same attempts, byte for
byte, as the run drawn without one.
"""

from __future__ import annotations

import math
import random

from capbench_nb.simulation.generator import PlannedTask
from capbench_nb.simulation.options import SIMULATOR_VERSION, SimulationOptions

__all__ = ["SELECTOR", "MODEL", "selection_line", "population_rates", "selection_truth"]

#: The simulated selector's name and version (the ``selector`` of every line).
SELECTOR = {"name": "capbench-sim-verifier", "version": SIMULATOR_VERSION}
#: The selector's model in one sentence (``selection.model`` of the truth file).
MODEL = ("on a task with a success among its candidates the selector's top pick is a success with probability "
         "accuracy (successes ranked above failures); otherwise it picks a failure, or abstains when every "
         "candidate succeeded; on a task without a success it picks a random candidate")


def _stream(seed: int, task: PlannedTask) -> random.Random:
    return random.Random("/".join(["capbench-sim", str(seed), "selector", str(task.index)]))


def selection_line(task: PlannedTask, successes: list[bool], seed: int, opt: SimulationOptions) -> dict:
    """The selection.jsonl line of a task whose attempts 1..k succeeded as ``successes`` says."""
    rng = _stream(seed, task)
    k = len(successes)
    won = [j + 1 for j in range(k) if successes[j]]
    lost = [j + 1 for j in range(k) if not successes[j]]
    rng.shuffle(won)
    rng.shuffle(lost)
    right = rng.random() < opt.selector_accuracy
    if not won:
        ranking, selected = lost, lost[0]
    elif right:
        ranking, selected = won + lost, won[0]
    elif lost:
        ranking, selected = lost + won, lost[0]
    else:
        ranking, selected = won, None  # every candidate succeeded and the selector trusts none
    scale = 1000 if k < 1000 else 10 ** (len(str(k)) + 3)  # distinct scores with few decimals
    scores = sorted(rng.sample(range(1, scale), k), reverse=True)
    tokens = sum(rng.randint(600, 1400) for _ in range(k)) + rng.randint(150, 300)
    wall = max(1, int(round(rng.lognormvariate(math.log(700 + 350 * k), 0.3))))
    cost, source = None, None
    table = opt.price_table
    if table is not None and opt.model in table.models:
        cost, source = round(tokens * table.models[opt.model]["input"], 12), f"{table.name}@{table.version}"
    return {
        "task_id": task.task_id,
        "candidates": list(range(1, k + 1)),
        "selected": selected,
        "scores": {str(attempt): score / scale for attempt, score in zip(ranking, scores)},
        "selector": dict(SELECTOR),
        "selector_ms": wall,
        "selector_tokens": tokens,
        "selector_cost": cost,
        "selector_cost_source": source,
    }


def population_rates(opt: SimulationOptions, k: int) -> dict:
    """pass@1, pass@k, selected@k and selection accuracy of the task population (see the module docstring)."""
    alpha, beta = opt.success_alpha, opt.success_beta
    none = math.prod((beta + i) / (alpha + beta + i) for i in range(k))  # E[(1 - p)^k] = B(a, b + k) / B(a, b)
    return {"pass@1": alpha / (alpha + beta), "pass@k": 1.0 - none, "selected@k": opt.selector_accuracy * (1.0 - none),
            "selection_accuracy": opt.selector_accuracy}


def selection_truth(opt: SimulationOptions, k: int, lines: list[dict], successes: dict[str, list[bool]]) -> dict:
    """The ``selection`` entry of the truth file: the selector, its model and accuracy, the population
    rates, and per line whether the pick succeeded."""
    return {
        "selector": dict(SELECTOR),
        "accuracy": opt.selector_accuracy,
        "model": MODEL,
        "k": k,
        "population": population_rates(opt, k),
        "lines": [{"task_id": line["task_id"], "selected": line["selected"],
                   "selected_success": line["selected"] is not None
                   and successes[line["task_id"]][line["selected"] - 1],
                   "any_success": any(successes[line["task_id"]])} for line in lines],
    }
