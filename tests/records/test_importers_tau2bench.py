"""``capbench-nb import tau2-bench``: real tau2-bench results as runs, agreeing with tau2's own numbers.

The reference files are real ``tau2 run`` results (tests/data/tau2/README.md): airline, grok-3, one
run of 4 tasks x 4 trials and one stopped early (50 tasks planned x 4 trials, 41 simulations). tau2's
``compute_metrics`` (src/tau2/metrics/agent_metrics.py) reports for them the numbers pinned below.
"""

from __future__ import annotations

import hashlib

import json
import math
from pathlib import Path

import pytest
from conftest import TESTS, check_error, cli

import capbench_nb as cb
from capbench_nb.metrics.curves import unbiased_curve
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.importers.tau2bench import import_tau2bench

DATA = TESTS / "data" / "tau2"
FULL = DATA / "grok-3-airline-4x4.json"
PARTIAL = DATA / "grok-3-airline-partial.json"
FULL_DOC = json.loads(FULL.read_text())


def pass_hat(run) -> list[float]:
    return unbiased_curve(run)["pass^j"].tolist()


def records(out: Path) -> dict[tuple[str, int], dict]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {(r["task_id"], r["attempt"]): r for r in map(json.loads, lines)}


def test_a_complete_run_agrees_with_tau2(tmp_path):
    rc, stdout, err = cli("import", "tau2-bench", FULL, "--out", tmp_path / "run")
    assert rc == 0 and stdout.strip() == str(tmp_path / "run"), err
    run = cb.load_run(tmp_path / "run")
    # tau2's compute_metrics: pass_hat_k per task C(c, k)/C(n, k), mean over tasks; avg_reward 0.4375
    assert pass_hat(run) == pytest.approx([0.4375, 0.25, 0.25, 0.25], abs=1e-12)
    assert run.manifest["plan"]["tasks"] == [{"task_id": t["id"], "repeats": 4} for t in FULL_DOC["tasks"]]
    assert (run.k, run.manifest["status"], run.manifest["suite"]) == (4, "completed", {"name": "airline"})
    assert run.manifest["config"] == {"model": "xai/grok-3", "user_model": "xai/grok-3"}
    # a default run id that says what the run is: tool, agent model, domain, date, 8 hex digits of the source
    digest = hashlib.sha256(hashlib.sha256(FULL.read_bytes()).hexdigest().encode()).hexdigest()
    assert run.run_id == f"tau2-bench-xai-grok-3-airline-{FULL_DOC['timestamp'][:10]}-{digest[:8]}"
    assert run.manifest["runner"] == {"name": "tau2-bench", "version": FULL_DOC["info"]["git_commit"]}
    assert run.manifest["created_at"] == FULL_DOC["timestamp"]
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["value"] == 0.25 and doc["metrics"]["pass^k"]["coverage"] == 1.0
    rewards = [s["reward_info"]["reward"] for s in FULL_DOC["simulations"]]
    assert doc["attempts"]["by_failure_class"]["success"] == sum(r == 1.0 for r in rewards) == 7
    assert math.fsum(rewards) / len(rewards) == 0.4375  # tau2's avg_reward: the mean over simulations
    if "health" in doc:  # spec section 11 (the task-health issue): equal here, every task has 4 trials
        assert doc["health"]["mean_quality_score"]["value"] == 0.4375


def test_simulation_to_attempt(tmp_path):
    import_tau2bench(FULL, tmp_path / "run")
    sim = FULL_DOC["simulations"][0]
    rec = records(tmp_path / "run")[(sim["task_id"], sim["trial"] + 1)]
    assert json.loads((tmp_path / "run" / rec["artifact_dir"] / "record.json").read_text()) == sim
    agent = [m for m in sim["messages"] if m["role"] == "assistant"]
    used = [m["usage"] for m in agent if m["usage"] is not None]
    tel = rec["telemetry"]
    assert tel["task_wall_ms"] == pytest.approx(sim["duration"] * 1000, abs=1e-3)
    assert (tel["llm_calls"], tel["tool_calls"]) == (len(used), sum(len(m["tool_calls"] or []) for m in agent))
    assert tel["input_tokens"] == sum(u["prompt_tokens"] for u in used)
    assert tel["total_tokens"] == tel["input_tokens"] + sum(u["completion_tokens"] for u in used)
    assert rec["telemetry_source"]["task_wall_ms"] == "record.json#/duration"
    assert (rec["quality_score"], rec["success"]) == (sim["reward_info"]["reward"], False)
    assert (rec["cost"], rec["cost_source"]) == (None, None)  # the file does not name its price source
    import_tau2bench(FULL, tmp_path / "priced", cost_source="litellm@1.72.0")
    priced = records(tmp_path / "priced")[(sim["task_id"], sim["trial"] + 1)]
    assert (priced["cost"], priced["cost_source"]) == (sim["agent_cost"], "litellm@1.72.0")


def test_a_stopped_run_is_partial_with_its_coverage(tmp_path):
    import_tau2bench(PARTIAL, tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    assert (run.manifest["status"], run.k, len(run.plan)) == ("partial", 4, 50)
    # tau2 lowers its k to the fewest trials of a task (1) and reports pass^1 = 0.55 over 40 tasks
    assert pass_hat(run) == pytest.approx([0.55], abs=1e-12)
    doc = cb.compute_metrics(run)
    metrics = doc["metrics"]
    assert {k: metrics["pass@1"][k] for k in ("value", "n", "coverage")} == {"value": 0.55, "n": 40, "coverage": 0.8}
    assert {k: metrics["pass^k"][k] for k in ("value", "n", "coverage")} == {"value": None, "n": 0, "coverage": 0.0}
    # tau2's avg_reward 0.5609756097560976 is the mean over its 41 simulations, not over tasks
    rewards = [float(q) for q in run.records["quality_score"]]
    assert math.fsum(rewards) / len(rewards) == pytest.approx(0.5609756097560976, abs=1e-15)
    if "health" in doc:  # the mean over tasks of each task's mean
        assert doc["health"]["mean_quality_score"]["value"] == pytest.approx(0.55, abs=1e-15)


def with_simulations(doc: dict, change) -> dict:
    doc = json.loads(json.dumps(doc))
    for sim in doc["simulations"]:
        change(sim)
    return doc


def test_infrastructure_errors_are_ineligible_and_a_missing_reward_is_an_evaluation_failure(tmp_path):
    """tau2 leaves infrastructure_error simulations out of its metrics (and reruns them on resume)."""
    def damage(sim):
        if (sim["task_id"], sim["trial"]) == ("8", 2):  # as tau2 records a unit that died: no reward, no messages
            sim.update(termination_reason="infrastructure_error", reward_info=None, messages=[],
                       info={"error": "worker died", "error_type": "WorkerFailure"})
        if (sim["task_id"], sim["trial"]) == ("11", 3):
            sim["reward_info"] = None

    src = tmp_path / "results.json"
    src.write_text(json.dumps(with_simulations(FULL_DOC, damage)))
    import_tau2bench(src, tmp_path / "run")
    recs = records(tmp_path / "run")
    infra, unscored = recs[("8", 3)], recs[("11", 4)]
    assert (infra["failure_class"], infra["agent_eligible"], infra["quality_score"]) == ("environment", False, None)
    assert infra["evidence"] == ["record.json#/termination_reason", "record.json#/info/error"]
    resolver = EvidenceResolver(tmp_path / "run")
    assert resolver.resolve(infra["artifact_dir"], infra["evidence"][0]) == "infrastructure_error"
    assert (unscored["failure_class"], unscored["failure_stage"]) == ("evaluation", "evaluation")
    run = cb.load_run(tmp_path / "run")
    # task 8 (4 successes) keeps 3 trials, task 11 (1 success in trial 0) 3: tau2's pass^1 over the rest
    assert pass_hat(run)[0] == pytest.approx((1 + 1 / 3 + 1 / 4 + 1 / 4) / 4, abs=1e-12)
    metrics = cb.compute_metrics(run)["metrics"]
    assert (metrics["pass^k"]["n"], metrics["pass^k"]["coverage"]) == (2, 0.5)


def split(doc: dict, tasks: list[str]) -> dict:
    part = json.loads(json.dumps(doc))
    part["tasks"] = [t for t in part["tasks"] if t["id"] in tasks]
    part["simulations"] = [s for s in part["simulations"] if s["task_id"] in tasks]
    return part


def test_dir_format_and_a_folder_of_results_files(tmp_path):
    import_tau2bench(FULL, tmp_path / "one")
    expected = (tmp_path / "one" / "results.jsonl").read_bytes()
    # tau2's "dir" format: results.json without the simulations, one simulations/<id>.json each
    folder = tmp_path / "dir"
    (folder / "simulations").mkdir(parents=True)
    meta = {k: v for k, v in FULL_DOC.items() if k != "simulations"}
    meta["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]}
                                for s in FULL_DOC["simulations"]]
    (folder / "results.json").write_text(json.dumps(meta))
    for sim in FULL_DOC["simulations"]:
        (folder / "simulations" / f"{sim['id']}.json").write_text(json.dumps(sim))
    import_tau2bench(folder, tmp_path / "from-dir")
    assert (tmp_path / "from-dir" / "results.jsonl").read_bytes() == expected
    (folder / "simulations" / f"{FULL_DOC['simulations'][0]['id']}.json").unlink()
    rc, _, err = cli("import", "tau2-bench", folder, "--out", tmp_path / "broken")
    assert rc == 2 and check_error(err, rule="tau2-bench-format") and "simulation files missing" in err, err
    # a folder of results files of one model and domain: one run, plan in file order
    ids = [t["id"] for t in FULL_DOC["tasks"]]
    files = tmp_path / "files"
    files.mkdir()
    (files / "a.json").write_text(json.dumps(split(FULL_DOC, ids[:2])))
    (files / "b.json").write_text(json.dumps(split(FULL_DOC, ids[2:])))
    (files / "notes.txt").write_text("mine")
    rc, _, err = cli("import", "tau2-bench", files, "--out", tmp_path / "merged")
    assert rc == 0 and "capbench-nb: note: " in err and "notes.txt" in err, err
    assert (tmp_path / "merged" / "results.jsonl").read_bytes() == expected
    assert cb.load_run(tmp_path / "merged").plan["task_id"].tolist() == ids
    other = split(FULL_DOC, ids[2:])
    other["info"]["agent_info"]["llm"] = "gpt-4.1"
    (files / "b.json").write_text(json.dumps(other))
    rc, _, err = cli("import", "tau2-bench", files, "--out", tmp_path / "mixed")
    assert rc == 2 and check_error(err, rule="tau2-bench-runs") and "its own run" in err


def test_import_is_deterministic(tmp_path):
    import_tau2bench(FULL, tmp_path / "a")
    import_tau2bench(FULL, tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 18
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


@pytest.mark.parametrize(("change", "words", "rule"), [
    (lambda d: d["info"].update(num_trials="4"), "info.num_trials must be an integer", "tau2-bench-format"),
    (lambda d: d["simulations"][0].update(task_id="no-such-task"), "simulation 0: task_id", "tau2-bench-format"),
    (lambda d: d["simulations"][1].update(task_id=d["simulations"][0]["task_id"], trial=d["simulations"][0]["trial"]),
     "also recorded", "duplicate-attempt"),
    (lambda d: d["simulations"][0].update(trial=None), "trial must be an integer", "tau2-bench-format"),
    (lambda d: d["tasks"].append(dict(d["tasks"][0])), "defined twice", "tau2-bench-format"),
    (lambda d: d.pop("simulations"), "with info, tasks, simulations", "tau2-bench-format"),
])
def test_bad_results_are_one_line(tmp_path, change, words, rule):
    doc = json.loads(json.dumps(FULL_DOC))
    change(doc)
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc))
    rc, stdout, err = cli("import", "tau2-bench", src, "--out", tmp_path / "run")
    assert rc == 2 and stdout == "" and check_error(err, rule=rule) and words in err, err
    assert not (tmp_path / "run").exists()


def test_each_importer_names_the_other_format(tmp_path):
    rc, _, err = cli("import", "tau-bench", FULL, "--out", tmp_path / "a")
    assert rc == 2 and "import tau2-bench" in err, err
    tau = TESTS / "data" / "taubench" / "gpt-4o-airline.trials.jsonl"
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([json.loads(line) for line in tau.read_text().splitlines()[:3]]))
    rc, _, err = cli("import", "tau2-bench", listed, "--out", tmp_path / "b")
    assert rc == 2 and "import tau-bench" in err, err
