"""capbench_nb.metrics.registry: the task outcome of a paired rate is the one list compare, board, gate and
power planning use, and it reproduces the rate of metrics.json."""

from __future__ import annotations

import numpy as np
import pytest

import capbench_nb as cb
from capbench_nb.metrics import board, comparison, gate, power
from capbench_nb.metrics.registry import HEADLINE, TaskOutcome, paired_rates, task_outcome
from capbench_nb.simulation.writer import simulate_run


def test_one_list_of_paired_metrics_everywhere():
    names = tuple(m.name for m in paired_rates())
    assert names == ("pass@1", "pass@k", "pass^k")
    assert comparison.PAIRED_METRICS == board.BOARD_METRICS == power.METRICS == names
    assert gate.GATE_METRICS == names + ("selected@k",)
    assert [m for m in HEADLINE if m.task_outcome is not None] == list(paired_rates())


def test_task_outcomes_say_which_attempts_decide():
    assert task_outcome("pass@1") == TaskOutcome("1", "any") and task_outcome("pass@1").attempts(5) == 1
    assert task_outcome("pass@k").attempts(5) == 5 and task_outcome("pass^k").rule == "all"
    with pytest.raises(ValueError, match="metric must be one of pass@1, pass@k, pass\\^k, got 'oracle_best_score@k'"):
        task_outcome("oracle_best_score@k")
    with pytest.raises(ValueError):
        TaskOutcome("2", "any")
    with pytest.raises(ValueError):
        TaskOutcome("k", "most")


def test_the_task_outcome_reproduces_the_rate(tmp_path):
    """Paired with itself, a run's task outcomes count the rate's successes and denominator of metrics.json;
    the board's rows are the same outcomes."""
    run = cb.load_run(simulate_run(tmp_path / "run", tasks=25, repeats=3, seed=5, missing_attempts=4))
    doc = cb.compute_metrics(run)
    common = run.plan["task_id"].astype(object).tolist()
    eligible, success = board.board_outcomes(run, common, run.k)
    for row, metric in enumerate(paired_rates()):
        tasks, a, b, _ = comparison.run_paired_outcomes(run, run, metric.name)
        rate = doc["metrics"][metric.name]
        assert (len(tasks), int(a.sum())) == (rate["n"], rate["successes"]) and np.array_equal(a, b)
        assert (int(eligible[row].sum()), int(success[row].sum())) == (rate["n"], rate["successes"])
