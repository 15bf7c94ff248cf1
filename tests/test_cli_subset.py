"""``capbench-nb suite select`` / ``suite estimate`` (spec section 13): outputs, the lock, and exit 2 on bad input."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785

from conftest import cli, manifest, outcomes, write_run
from capbench_nb.simulation.writer import simulate_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-subset")
    out = []
    for seed in (1, 2, 3):
        simulate_run(root / f"r{seed}", tasks=30, repeats=3, seed=seed)
        out.append(root / f"r{seed}")
    return out


def one_error_line(err: str) -> str:
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("capbench-nb: error: ") and "Traceback" not in err, err
    return lines[0]


def test_select_then_estimate(runs, tmp_path):
    out = tmp_path / "sub"
    rc, stdout, err = cli("suite", "select", *runs, "--size", "8", "--strata", "app", "--out", out, "--no-html")
    assert rc == 0, err
    assert stdout.strip() == str(out / "subset.json")
    doc = json.loads((out / "subset.json").read_text(encoding="utf-8"))
    assert len(doc["tasks"]) == 8
    md = (out / "subset.md").read_text(encoding="utf-8")
    assert all(t.replace("_", "\\_") in md for t in doc["tasks"]) and "Kendall tau_b" in md
    first = (out / "subset.json").read_bytes()
    assert cli("suite", "select", *runs, "--size", "8", "--strata", "app", "--out", out, "--no-html")[0] == 0
    assert (out / "subset.json").read_bytes() == first
    rc, stdout, err = cli("suite", "estimate", runs[0], "--subset", out, "--out", tmp_path / "est")
    assert rc == 0, err
    path, line = stdout.splitlines()
    est = json.loads((tmp_path / "est" / "estimate.json").read_text(encoding="utf-8"))["pass@1"]
    assert path == str(tmp_path / "est" / "estimate.json")
    assert line.startswith(f"pass@1 on the subset: {100 * est['subset']['value']:.1f}% ")
    assert f"estimated full-suite pass@1: {100 * est['full_suite']['value']:.1f}% [" in line
    assert cli("suite", "estimate", runs[0], "--subset", out, "--out", tmp_path / "est", "--quiet")[1] == path + "\n"
    first_estimate = (tmp_path / "est" / "estimate.json").read_bytes()
    assert cli("suite", "estimate", runs[0], "--subset", out / "subset.json", "--out", tmp_path / "est")[0] == 0
    assert (tmp_path / "est" / "estimate.json").read_bytes() == first_estimate  # seeded draws: the same bytes
    est = json.loads(first_estimate)
    assert est["schema_version"] == "capbench.estimate/1" and est["run_id"] == "sim-1"
    assert set(est["pass@1"]["full_suite"]) == {"value", "ci_low", "ci_high", "method"}


def test_lock_is_restricted_with_a_new_digest(runs, tmp_path):
    tasks = json.loads((runs[0] / "manifest.json").read_text(encoding="utf-8"))["plan"]["tasks"]
    lock = {"schema_version": "capbench.suite-lock/1", "suite": {"name": "mobile-core-sim", "version": "2026.11"},
            "run_policy": {"k": 3}, "selection": None,
            "tasks": [{"task_id": t["task_id"], "labels": {"app": t["app"]}} for t in tasks]}
    lock["digest"] = "sha256:" + hashlib.sha256(rfc8785.dumps(lock)).hexdigest()
    (tmp_path / "lock.json").write_text(json.dumps(lock), encoding="utf-8")
    out = tmp_path / "sub"
    rc, _, err = cli("suite", "select", *runs, "--size", "6", "--out", out, "--lock", tmp_path / "lock.json", "--no-html")
    assert rc == 0, err
    doc = json.loads((out / "subset.json").read_text(encoding="utf-8"))
    new = json.loads((out / "suite.lock.json").read_text(encoding="utf-8"))
    assert new["suite"]["version"] == "2026.11+subset6"
    assert [t["task_id"] for t in new["tasks"]] == doc["tasks"]
    assert new["selection"] == {k: v for k, v in doc.items() if k != "validation"}
    body = {k: v for k, v in new.items() if k != "digest"}
    assert new["digest"] == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest() != lock["digest"]


def test_fewer_than_three_runs(runs, tmp_path):
    rc, _, err = cli("suite", "select", *runs[:2], "--size", "5", "--out", tmp_path / "o", "--no-html")
    assert rc == 2 and "at least 3 runs" in one_error_line(err)


def test_runs_of_different_suites(runs, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    doc = json.loads((runs[2] / "manifest.json").read_text(encoding="utf-8"))
    doc["suite"]["name"] = "another-suite"
    (other / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    (other / "results.jsonl").write_bytes((runs[2] / "results.jsonl").read_bytes())
    rc, _, err = cli("suite", "select", runs[0], runs[1], other, "--size", "5", "--out", tmp_path / "o", "--no-html")
    assert rc == 2 and "different suites" in one_error_line(err)


@pytest.mark.parametrize("size", ["30", "31"])
def test_size_not_below_common_tasks(runs, tmp_path, size):
    rc, _, err = cli("suite", "select", *runs, "--size", size, "--out", tmp_path / "o", "--no-html")
    assert rc == 2 and "below the 30 common tasks" in one_error_line(err)
    assert not (tmp_path / "o").exists()


def test_subset_task_missing_from_the_estimated_run(runs, tmp_path):
    out = tmp_path / "sub"
    assert cli("suite", "select", *runs, "--size", "5", "--out", out, "--no-html")[0] == 0
    tasks = json.loads((out / "subset.json").read_text(encoding="utf-8"))["tasks"]
    small = write_run(tmp_path / "small", manifest([(t, 1) for t in tasks[1:]], k=1),
                      outcomes({t: "S" for t in tasks[1:]}))
    rc, _, err = cli("suite", "estimate", small, "--subset", out / "subset.json", "--out", tmp_path / "e")
    assert rc == 2 and "missing from the run's plan" in one_error_line(err)
    assert not (tmp_path / "e").exists()


def test_size_below_one_and_a_strata_that_is_not_a_label(runs, tmp_path):
    rc, _, err = cli("suite", "select", *runs, "--size", "0", "--out", tmp_path / "o", "--no-html")
    assert rc == 2 and "--size: must be at least 1" in one_error_line(err)
    rc, _, err = cli("suite", "select", *runs, "--size", "5", "--strata", "nope", "--out", tmp_path / "o", "--no-html")
    assert rc == 2 and "--strata 'nope'" in one_error_line(err) and "[rule: subset]" in err
    assert not (tmp_path / "o").exists()


def test_runs_with_no_eligible_attempt_on_most_tasks(tmp_path):
    plan = [(f"t{i:02d}", 3) for i in range(20)]
    paths = [write_run(tmp_path / f"r{j}", manifest(plan), outcomes(
        {t: ("SAS" if j else "ASA") if i < 4 else "EEE" for i, (t, _) in enumerate(plan)})) for j in range(3)]
    rc, _, err = cli("suite", "select", *paths, "--size", "3", "--out", tmp_path / "o", "--no-html")
    line = one_error_line(err)
    assert rc == 2 and "4 of 20" in line, line
    assert not (tmp_path / "o").exists()


DAMAGES = {  # a hand edit of subset.json, and the words of its one error line
    "schema": (lambda d: d.update(schema_version="capbench.subset/9"), "capbench.subset/1"),
    "unknown-task": (lambda d: d["tasks"].__setitem__(0, "no.such.task"), "'no.such.task'"),
    "repeated-task": (lambda d: d["tasks"].__setitem__(1, d["tasks"][0]), "/tasks/1 repeats"),
    "size": (lambda d: d.update(size=99), "/tasks has 5 task_ids, /size says 99"),
    "no-full-suite": (lambda d: d["estimator"].update(full_suite=[]), "/estimator/full_suite has 0 tasks"),
    "text-ability": (lambda d: d["estimator"].update(theta_mean="abc"), "/estimator/theta_mean must be a number"),
    "no-draws": (lambda d: d["estimator"].update(draws=0), "/estimator/draws must be >= 1"),
    "negative-sd": (lambda d: d["estimator"].update(sigma_e=-1), "/estimator/sigma_e must be >= 0"),
    "null-difficulty": (lambda d: d["estimator"]["full_suite"][0].update(difficulty=None), "must be a number, not null"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_subset_of_another_schema_or_with_unknown_tasks(runs, tmp_path, damage):
    out = tmp_path / "sub"
    assert cli("suite", "select", *runs, "--size", "5", "--out", out, "--no-html")[0] == 0
    doc = json.loads((out / "subset.json").read_text(encoding="utf-8"))
    edit, words = DAMAGES[damage]
    edit(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    rc, _, err = cli("suite", "estimate", runs[0], "--subset", tmp_path / "bad.json", "--out", tmp_path / "e")
    line = one_error_line(err)
    assert rc == 2 and "[rule: subset]" in line and words in line, line
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("seed, says", [
    ("-1", "argument --seed: must be at least 0, got -1"),  # before: numpy's ValueError as a traceback, exit 1
    ("9007199254740992", "argument --seed: must be at most 9,007,199,254,740,991 (MAX_SAFE_NUMBER)"),
    ("x", "argument --seed: 'x' is not an integer"),
])
def test_a_seed_out_of_range_is_a_usage_error(runs, tmp_path, seed, says):
    rc, out, err = cli("suite", "select", *runs, "--size", "5", "--seed", seed, "--out", tmp_path / "o")
    line = one_error_line(err)
    assert (rc, out) == (2, "") and says in line and line.endswith(" [rule: usage]")
    assert not (tmp_path / "o").exists()
