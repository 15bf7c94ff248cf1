"""``capbench-nb simulate`` (capbench_nb/cli_simulate.py): the options reach the run, the defaults give the bytes
the simulator's own defaults give, and bad values are one line, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

import capbench_nb as cb
from capbench_nb.simulation.writer import CREATED_AT, simulate_run
from conftest import check_error, cli, tree_hashes

BASE = ["simulate", "--tasks", "8", "--repeats", "2", "--seed", "5"]


def test_without_the_new_options_the_run_is_the_simulators_default(tmp_path):
    rc, out, err = cli(*BASE, "--out", tmp_path / "cli")
    assert (rc, err, out.strip()) == (0, "", str(tmp_path / "cli"))
    simulate_run(tmp_path / "api", tasks=8, repeats=2, seed=5)
    assert tree_hashes(tmp_path / "cli") == tree_hashes(tmp_path / "api")
    manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["run_id"], manifest["created_at"], manifest["config"]["model"]) == ("sim-5", CREATED_AT, "m-large")


def test_model_run_id_and_created_at_reach_the_manifest_and_change_no_draw(tmp_path):
    rc, _, err = cli(*BASE, "--out", tmp_path / "r", "--model", "m-small", "--run-id", "m-small/2026-10",
                     "--created-at", "2026-10-01T09:00:00+02:00")
    assert rc == 0, err
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["run_id"], manifest["created_at"], manifest["config"]["model"]) == (
        "m-small/2026-10", "2026-10-01T09:00:00+02:00", "m-small")
    cli(*BASE, "--out", tmp_path / "default")
    assert (tmp_path / "r" / "results.jsonl").read_bytes() == (tmp_path / "default" / "results.jsonl").read_bytes()
    assert cb.load_run(tmp_path / "r").run_id == "m-small/2026-10"


def test_success_mean_sets_the_latent_mean(tmp_path):
    for mean in ("0.2", "0.9"):
        assert cli(*BASE, "--tasks", "200", "--out", tmp_path / mean, "--success-mean", mean)[0] == 0
    truths = {m: json.loads((tmp_path / m / "simulation.json").read_text(encoding="utf-8")) for m in ("0.2", "0.9")}
    assert truths["0.2"]["parameters"]["success_alpha"] == pytest.approx(0.25)  # Beta(P/(1-P), 1): mean P
    assert truths["0.9"]["parameters"]["success_alpha"] == pytest.approx(9.0)
    latent = {m: sum(t["p_success"] for t in doc["tasks"]) / len(doc["tasks"]) for m, doc in truths.items()}
    assert latent["0.2"] == pytest.approx(0.2, abs=0.05) and latent["0.9"] == pytest.approx(0.9, abs=0.05)
    # the default mean, given explicitly, is the default run
    assert cli(*BASE, "--out", tmp_path / "0.6", "--success-mean", "0.6")[0] == 0
    cli(*BASE, "--out", tmp_path / "default")
    assert tree_hashes(tmp_path / "0.6") == tree_hashes(tmp_path / "default")


@pytest.mark.parametrize("option,value,says", [
    ("--created-at", "yesterday", "not an ISO 8601 time"),
    ("--created-at", "2026-13-01", "not an ISO 8601 time"),
    ("--run-id", "", "must not be empty"),
    ("--model", "", "must not be empty"),
    ("--success-mean", "1", "strictly between 0 and 1"),
    ("--success-mean", "0", "strictly between 0 and 1"),
    ("--success-mean", "nan", "probability"),
    ("--success-mean", "half", "not a number"),
])
def test_bad_values_are_one_line_exit_2_and_write_nothing(tmp_path, option, value, says):
    rc, out, err = cli(*BASE, "--out", tmp_path / "r", option, value)
    assert rc == 2 and out == "" and says in err and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("capbench-nb simulate: error:") or err.startswith("capbench-nb: error:")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("option,value,says", [
    ("--repeats", "10001", "argument --repeats: must be at most 10,000 (MAX_REPEATS), got 10001"),
    ("--tasks", "1000001", "argument --tasks: must be at most 1,000,000 (MAX_PLAN_TASKS), got 1000001"),
    ("--repeats", "0", "argument --repeats: must be at least 1, got 0"),
])
def test_a_run_above_the_limits_metrics_holds_it_to_is_a_usage_error(tmp_path, option, value, says):
    """Before, --repeats 10001 wrote a run that `metrics` then refused (repeats-too-large)."""
    from capbench_nb.format import MAX_PLAN_TASKS, MAX_REPEATS

    assert (MAX_REPEATS, MAX_PLAN_TASKS) == (10_000, 1_000_000)  # the numbers the messages show
    rc, out, err = cli(*BASE, "--out", tmp_path / "r", option, value)
    assert rc == 2 and out == "" and check_error(err, rule="usage") and says in err
    assert not (tmp_path / "r").exists()


def test_the_help_states_the_limits(capsys):
    rc, out, _ = cli("simulate", "--help")
    text = " ".join(out.split())
    assert rc == 0 and "at most 10,000 (MAX_REPEATS)" in text and "at most 1,000,000 (MAX_PLAN_TASKS)" in text
