"""The simulated selector (simulation.selector, ``simulate --selector``): its file, its truth, and the
estimates of spec section 9 recovering that truth."""

from __future__ import annotations

import json

import pytest

import capbench_nb as cb
from capbench_nb.metrics.selection import selection_metrics
from capbench_nb.metrics.stats import wilson_interval
from capbench_nb.simulation.writer import build_run, simulate_run
from conftest import cli


def test_without_a_selector_nothing_changes_and_with_one_only_the_selection_is_added(tmp_path):
    plain = simulate_run(tmp_path / "plain", tasks=12, repeats=3, seed=5)
    rc, _, _ = cli("simulate", "--tasks", 12, "--repeats", 3, "--seed", 5, "--out", tmp_path / "cli")
    assert rc == 0
    for name in ("manifest.json", "results.jsonl", "simulation.json"):
        assert (tmp_path / "cli" / name).read_bytes() == (plain / name).read_bytes()
    assert sorted(p.name for p in plain.iterdir()) == ["manifest.json", "results.jsonl", "simulation.json"]
    rc, _, _ = cli("simulate", "--tasks", 12, "--repeats", 3, "--seed", 5, "--out", tmp_path / "sel", "--selector", 0.6)
    assert rc == 0
    for name in ("manifest.json", "results.jsonl"):  # the same attempts, byte for byte
        assert (tmp_path / "sel" / name).read_bytes() == (plain / name).read_bytes()
    truth = json.loads((tmp_path / "sel" / "simulation.json").read_text(encoding="utf-8"))
    before = json.loads((plain / "simulation.json").read_text(encoding="utf-8"))
    assert truth.pop("selection")["accuracy"] == 0.6 and truth["parameters"].pop("selector_accuracy") == 0.6
    assert truth == before
    assert cli("metrics", tmp_path / "sel")[0] == 0 and cli("verify", tmp_path / "sel")[0] == 0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "x"])
def test_a_bad_accuracy_is_a_usage_error(tmp_path, value):
    rc, _, err = cli("simulate", "--tasks", 2, "--repeats", 1, "--seed", 1, "--out", tmp_path / "r", "--selector", value)
    assert rc == 2 and "--selector" in err and not (tmp_path / "r").exists()


def test_the_estimates_recover_the_truth(tmp_path):
    """400 tasks, k = 3, accuracy 0.8: the metrics' picks are the truth's, and the estimates lie where the
    population rates put them (within three standard errors)."""
    run_dir = simulate_run(tmp_path / "run", tasks=400, repeats=3, seed=11, selector_accuracy=0.8)
    truth = json.loads((run_dir / "simulation.json").read_text(encoding="utf-8"))["selection"]
    got = selection_metrics(cb.load_run(run_dir))
    eligible = set(got.per_task["task_id"])
    picks = {x["task_id"]: x["selected_success"] for x in truth["lines"]}
    assert got.per_task["selected_success"].tolist() == [picks[t] for t in got.per_task["task_id"]]
    assert eligible <= set(picks) and got.entering > 300 and got.other_candidates == 0
    for name in ("selection_accuracy", "selected@k", "pass@k", "pass@1"):
        rate, want = got.rates[name], truth["population"][name]
        se = (want * (1 - want) / rate.n) ** 0.5
        assert abs(rate.value - want) < 3 * se, (name, rate.value, want)
    assert len(got.curve) == 3 and got.curve[-1]["value"] >= got.rates["selected@k"].value  # abstentions
    assert got.curve[0]["value"] == pytest.approx(got.rates["pass@1"].value, abs=0.06)  # j = 1: a random attempt


def test_wilson_interval_of_selected_at_k_covers_the_truth_about_95_percent():
    """250 seeded runs of 16 tasks x 3 at accuracy 0.7: how often the 95% Wilson intervals of selected@k and
    of selection accuracy cover their population values (the entering tasks are i.i.d. draws).  The
    simulator's trajectories are the cost, so the runs are small; 1,200 runs of 30 tasks gave 0.953 and
    0.948 for selected@k and pass@k."""
    runs, cover_selected, cover_accuracy = 250, 0, 0
    for seed in range(runs):
        sim = build_run(tasks=16, repeats=3, seed=seed, selector_accuracy=0.7)
        truth = sim.truth
        eligible = {}
        for x in truth["attempts"]:
            if x["attempt"] <= 3:
                eligible.setdefault(x["task_id"], []).append(x["record"]["agent_eligible"])
        lines = [x for x in truth["selection"]["lines"] if eligible.get(x["task_id"]) == [True, True, True]]
        picked = sum(x["selected_success"] for x in lines)
        anyone = sum(x["any_success"] for x in lines)
        population = truth["selection"]["population"]
        low, high = wilson_interval(picked, len(lines))
        cover_selected += low <= population["selected@k"] <= high
        low, high = wilson_interval(picked, anyone)
        cover_accuracy += low <= population["selection_accuracy"] <= high
    print(f"\nselected@k 95% Wilson coverage over {runs} runs: {cover_selected / runs:.3f}; "
          f"selection accuracy: {cover_accuracy / runs:.3f}")
    assert 0.91 <= cover_selected / runs <= 0.99
    assert 0.91 <= cover_accuracy / runs <= 0.99
