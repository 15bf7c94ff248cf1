"""inspect_ai log folders, eval sets, eval_retry chains, dict-valued and partial-credit scores, merged epochs.

Every log here was written by inspect_ai 0.3.285 itself (``scripts/make_inspect_logs.py``, mockllm,
offline; tests/data/inspect/README.md lists the cases and the numbers inspect reports). Each test
reads what inspect recorded in the log (``results.scores``) and checks ours against it wherever the
conventions agree (docs/importers.md has the table).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import TESTS, check_error, cli

import capbench_nb as cb
from capbench_nb.metrics.curves import unbiased_curve
from capbench_nb.records.importers.inspect_logs import eval_reader_available, read_log

DATA = TESTS / "data" / "inspect"
FOLDER, EVAL_SET, RETRY = DATA / "folder", DATA / "eval_set", DATA / "retry"
DICT_LOG = next((DATA / "dict_scores").glob("*.json"))
PARTIAL_LOG = next((DATA / "partial").glob("*.eval"))
STOPPED, RETRIED = sorted(RETRY.glob("*.eval"))  # inspect names logs by their creation time

pytestmark = pytest.mark.skipif(not eval_reader_available(),
                                reason="reading .eval logs needs the optional extra capbench-nb[inspect]")


def reported(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """What inspect recorded: (score name, epoch reducer) -> {metric: value}."""
    return {(s["name"], s["reducer"]): {m: v["value"] for m, v in s["metrics"].items()}
            for s in read_log(path).header["results"]["scores"]}


#: What inspect reported for each log (tests/data/inspect/README.md): (case, task, score name) -> reducer values.
INSPECT_REPORTED = {
    ("folder", "five_epochs", "pattern_scorer"): dict(
        mean=0.5333333333333333, pass_at_1=0.5333333333333333, pass_at_3=0.6666666666666666,
        pass_at_5=0.6666666666666666, pass_k_3=0.3666666666666667, pass_k_5=0.3333333333333333),
    ("folder", "three_epochs", "pattern_scorer"): dict(
        mean=0.5, pass_at_1=0.49999999999999994, pass_at_2=0.8333333333333333, pass_at_3=1.0,
        pass_k_2=0.16666666666666666, pass_k_3=0.0, max=1.0),
    ("retry", "retried", "pattern_scorer"): dict(
        mean=0.5, pass_at_1=0.5, pass_at_2=0.75, pass_at_3=0.75, pass_k_2=0.25, pass_k_3=0.0, max=0.75),
    ("dict_scores", "dict_scores", "answer"): dict(
        mean=0.6666666666666666, pass_at_1=0.6666666666666666, pass_at_2=0.8888888888888888, pass_at_3=1.0,
        pass_k_2=0.4444444444444444, pass_k_3=0.3333333333333333, max=1.0),
    ("dict_scores", "dict_scores", "format"): dict(
        mean=0.6666666666666666, pass_at_1=0.6666666666666666, pass_at_2=1.0, pass_at_3=1.0,
        pass_k_2=0.3333333333333333, pass_k_3=0.0, max=1.0),
    ("partial", "partial_scores", "pattern_scorer"): dict(
        mean=0.5, pass_at_1=0.33333333333333326, pass_at_3=0.75, pass_k_3=0.0, max=0.75),
    ("partial", "partial_scores", "numeric_scorer"): dict(
        mean=0.6666666666666666, pass_at_1=0.33333333333333326, pass_at_3=0.75, pass_k_3=0.0, max=0.8125),
}
INSPECT_REPORTED[("eval_set", "five_epochs", "pattern_scorer")] = INSPECT_REPORTED[("folder", "five_epochs",
                                                                                   "pattern_scorer")]
INSPECT_REPORTED[("eval_set", "three_epochs", "pattern_scorer")] = INSPECT_REPORTED[("folder", "three_epochs",
                                                                                    "pattern_scorer")]


def test_the_logs_hold_what_inspect_reported():
    """The pinned numbers are the logs' own: a regenerated log that reports otherwise fails here first."""
    found = {}
    for case in ("folder", "eval_set", "retry", "dict_scores", "partial"):
        for path in sorted((DATA / case).iterdir()):
            if path.name in ("eval-set.json", "logs.json", ".eval-set-id") or path == STOPPED:
                continue
            task = read_log(path).header["eval"]["task"]
            for (name, reducer), metrics in reported(path).items():
                found.setdefault((case, task, name), {})[reducer] = next(iter(metrics.values()))
    assert found == INSPECT_REPORTED
    assert "results" not in read_log(STOPPED).header or not read_log(STOPPED).header["results"]  # it stopped


def agree_with_inspect(run, path: Path, name: str, task: str | None = None) -> set[str]:
    """Every reducer inspect reported for score ``name`` of the log against ours; the reducers checked.

    pass_at_j, pass_k_j: the unbiased pass@j, pass^j; max: oracle_best_score@k with k = the log's
    epochs (every sample here has all its epochs scored); mean: spec section 11's mean_quality_score
    (:func:`test_inspect_mean_is_the_mean_quality_score`).
    """
    plan, attempts = run.plan, run.attempts
    if task is not None:
        plan = plan[plan["inspect_task"] == task]
        attempts = attempts[attempts["task_id"].isin(plan["task_id"])]
    curve = unbiased_curve(attempts, plan=plan).set_index("j")
    epochs = int(plan["planned_repeats"].min())
    checked = set()
    for (score, reducer), metrics in reported(path).items():
        if score != name or reducer == "mean":
            continue
        value = next(iter(metrics.values()))  # "accuracy", or "mean" for a mean() metric
        if reducer.startswith(("pass_at_", "pass_k_")):
            j = int(reducer.rsplit("_", 1)[1])
            ours = curve.loc[j, "pass@j" if reducer.startswith("pass_at_") else "pass^j"]
        else:
            assert reducer == "max", reducer
            ours = cb.oracle_best_score_at_k(attempts, plan=plan, k=epochs).value
        assert ours == pytest.approx(value, abs=1e-12), (path.name, name, reducer)
        checked.add(reducer)
    return checked


def imported(tmp_path: Path, *inputs, name: str = "run", extra=()) -> tuple[object, list[str]]:
    """``import inspect INPUTS --out tmp/NAME``: the loaded run and the notes printed on stderr."""
    rc, stdout, err = cli("import", "inspect", *inputs, "--out", tmp_path / name, *extra)
    assert rc == 0 and stdout.strip() == str(tmp_path / name), err
    lines = err.splitlines()
    assert lines[-1].startswith("capbench-nb: imported ") and all(x.startswith("capbench-nb: note: ") for x in lines[:-1])
    return cb.load_run(tmp_path / name), [x[len("capbench-nb: note: "):] for x in lines[:-1]]


def results_bytes(tmp_path: Path, name: str = "run") -> bytes:
    return (tmp_path / name / "results.jsonl").read_bytes()


def test_a_folder_plans_each_task_by_its_own_epochs(tmp_path):
    run, notes = imported(tmp_path, FOLDER)
    repeats = run.plan.set_index("task_id")["planned_repeats"].to_dict()
    assert repeats == {"five_epochs/a0": 5, "five_epochs/a1": 5, "five_epochs/a2": 5,
                       "three_epochs/b0": 3, "three_epochs/b1": 3}
    assert run.k == 3 and len(run.records) == 3 * 5 + 2 * 3
    assert notes == ['the logs have different epochs ("five_epochs" 5, "three_epochs" 3): each task is planned '
                     "with its own log's epochs, and k = 3, the smallest (pass@k and pass^k read attempts 1..3 of "
                     "every task)"]
    logs = {read_log(p).header["eval"]["task"]: p for p in sorted(FOLDER.iterdir())}
    assert {p.suffix for p in logs.values()} == {".eval", ".json"}
    assert agree_with_inspect(run, logs["five_epochs"], "pattern_scorer", "five_epochs") == {
        "pass_at_1", "pass_at_3", "pass_at_5", "pass_k_3", "pass_k_5"}
    assert agree_with_inspect(run, logs["three_epochs"], "pattern_scorer", "three_epochs") == {
        "pass_at_1", "pass_at_2", "pass_at_3", "pass_k_2", "pass_k_3", "max"}
    # anything else in the folder is skipped, and said so
    copy = tmp_path / "logs"
    shutil.copytree(FOLDER, copy)
    (copy / "notes.txt").write_text("mine")
    (copy / "older").mkdir()
    _, notes = imported(tmp_path, copy, name="copy")
    assert notes[0] == f"{copy}: skipped 2 entries that are no .eval or .json log: 'notes.txt', 'older'"
    assert results_bytes(tmp_path, "copy") == results_bytes(tmp_path)


def test_an_eval_set_folder(tmp_path):
    run, notes = imported(tmp_path, EVAL_SET)
    manifest = json.loads((EVAL_SET / "eval-set.json").read_text())
    assert notes[0] == (f'{EVAL_SET}: eval set "{manifest["eval_set_id"]}" of 2 task(s), each with a log here; '
                        "skipped .eval-set-id, eval-set.json, logs.json, inspect's side file(s), not logs")
    assert len(notes) == 2 and notes[1].startswith("the logs have different epochs")
    for log in EVAL_SET.glob("*.eval"):
        task = read_log(log).header["eval"]["task"]
        assert agree_with_inspect(run, log, "pattern_scorer", task)
    # the folder globbed (logs/*: no dot files) reads the same
    imported(tmp_path, *sorted(p for p in EVAL_SET.iterdir() if not p.name.startswith(".")), name="globbed")
    assert results_bytes(tmp_path, "globbed") == results_bytes(tmp_path)
    # a task of the eval set without its log: the note says which
    partial = tmp_path / "set"
    shutil.copytree(EVAL_SET, partial)
    next(partial.glob("*three-epochs*")).unlink()
    _, notes = imported(tmp_path, partial, name="partial")
    assert "of 2 task(s), 1 of them without a log here: 'three_epochs'" in notes[0]
    # an older inspect's eval-set.json lists its tasks without task_id: counted, and said not to be matched
    older = tmp_path / "older-set"
    shutil.copytree(EVAL_SET, older)
    doc = json.loads((older / "eval-set.json").read_text())
    for task in doc["tasks"]:
        task.pop("task_id")
    (older / "eval-set.json").write_text(json.dumps(doc))
    _, notes = imported(tmp_path, older, name="older")
    assert (f'eval set "{doc["eval_set_id"]}" of 2 task(s); 2 listed without a task_id (an older inspect\'s '
            "eval-set.json), so not matched to the logs; skipped") in notes[0]


def as_json_log(path: Path, out: Path, change=None) -> Path:
    """A log rewritten as a .json log (header and samples), optionally changed: to build chains of real logs."""
    log = read_log(path)
    doc = dict(log.header, samples=log.samples)
    if change is not None:
        change(doc)
    out.write_text(json.dumps(doc))
    return out


def test_an_eval_retry_chain_lets_the_newest_log_stand(tmp_path):
    run, notes = imported(tmp_path, RETRY)
    task_id = read_log(RETRIED).header["eval"]["task_id"]
    assert notes == [f'eval_retry: 2 logs of task "retried" (eval task id "{task_id}"): the newest, {RETRIED.name}, '
                     "stands for the 12 sample epoch(s) it holds (4 in older logs replaced; 0 of theirs kept)"]
    assert run.manifest["status"] == "completed"  # the chain's newest log succeeded
    sources = {s["file"]: s for s in run.manifest["import"]["sources"]}
    assert sources[STOPPED.name]["replaced_by_newer"] == 4 and "replaced_by_newer" not in sources[RETRIED.name]
    imported(tmp_path, RETRIED, name="newest")
    assert results_bytes(tmp_path) == results_bytes(tmp_path, "newest")
    assert agree_with_inspect(run, RETRIED, "pattern_scorer") == {
        "pass_at_1", "pass_at_2", "pass_at_3", "pass_k_2", "pass_k_3", "max"}
    # the stopped log alone: an aborted run, its errored epochs ineligible (r3's was cancelled by r2's error)
    stopped, _ = imported(tmp_path, STOPPED, name="stopped")
    assert stopped.manifest["status"] == "aborted"
    errored = stopped.records[~stopped.records["agent_eligible"]]
    assert sorted(zip(errored["task_id"], errored["attempt"])) == [("r2", 1), ("r3", 1)]
    assert set(errored["failure_class"]) == {"unknown"}


def test_an_older_log_keeps_what_no_newer_one_holds(tmp_path):
    older = as_json_log(STOPPED, tmp_path / "a.json")
    newer = as_json_log(RETRIED, tmp_path / "b.json",
                        lambda d: d.update(samples=[s for s in d["samples"] if (s["id"], s["epoch"]) != ("r1", 1)]))
    run, notes = imported(tmp_path, older, newer)
    assert notes[0].endswith("(3 in older logs replaced; 1 of theirs kept)"), notes
    kept = run.records[(run.records["task_id"] == "r1") & (run.records["attempt"] == 1)]
    assert kept["artifact_dir"].tolist() == ["attempts/r1/1"] and len(run.records) == 12
    # two logs of one task id created at the same time cannot be ordered
    tie = as_json_log(RETRIED, tmp_path / "c.json",
                      lambda d: d["eval"].update(created=read_log(STOPPED).header["eval"]["created"]))
    rc, _, err = cli("import", "inspect", older, tie, "--out", tmp_path / "tie")
    assert rc == 2 and check_error(err, rule="duplicate-attempt") and "is also in" in err
    assert "two independent evals of one sample set go into a run each" in err


def test_dict_valued_scores(tmp_path):
    rc, _, err = cli("import", "inspect", DICT_LOG, "--out", tmp_path / "none")
    assert rc == 2 and check_error(err, rule="inspect-score-value")
    assert '(keys ["answer", "format"]); choose one key with --scorer dict_scorer.answer' in err
    run, _ = imported(tmp_path, DICT_LOG, extra=["--scorer", "dict_scorer.answer"])
    assert run.manifest["config"]["scorer"] == "dict_scorer.answer"
    assert agree_with_inspect(run, DICT_LOG, "answer") == {
        "pass_at_1", "pass_at_2", "pass_at_3", "pass_k_2", "pass_k_3", "max"}
    imported(tmp_path, DICT_LOG, name="by-key", extra=["--scorer", "answer"])  # the name inspect reports it by
    assert results_bytes(tmp_path, "by-key") == results_bytes(tmp_path)
    fmt, _ = imported(tmp_path, DICT_LOG, name="format", extra=["--scorer", "dict_scorer.format"])
    assert agree_with_inspect(fmt, DICT_LOG, "format")
    rec = json.loads((tmp_path / "format" / "results.jsonl").read_text().splitlines()[1])
    assert (rec["task_id"], rec["attempt"], rec["failure_class"]) == ("d0", 2, "agent")  # format "I" in epoch 2
    rc, _, err = cli("import", "inspect", DICT_LOG, "--out", tmp_path / "nope", "--scorer", "dict_scorer.nope")
    assert rc == 2 and check_error(err, rule="inspect-scorer") and "its keys: 'answer', 'format'" in err


@pytest.mark.parametrize("scorer", ["pattern_scorer", "numeric_scorer"])
def test_partial_credit_and_numeric_scores(tmp_path, scorer):
    run, _ = imported(tmp_path, PARTIAL_LOG, extra=["--scorer", scorer])
    assert agree_with_inspect(run, PARTIAL_LOG, scorer) == {"pass_at_1", "pass_at_3", "pass_k_3", "max"}
    quality = run.records.set_index(["task_id", "attempt"])["quality_score"]
    expected = {"pattern_scorer": 0.5, "numeric_scorer": 0.75}[scorer]  # "P" is 0.5; the numeric 'p' is 0.75
    assert (float(quality[("p1", 1)]), bool(run.records.set_index(["task_id", "attempt"])["success"][("p1", 1)])) \
        == (expected, False)


MEAN_CASES = [
    (DATA / "mock_pass_k_clean.eval", None, "pattern_scorer"),
    (DATA / "mock_pass_k_with_error.json", None, "pattern_scorer"),
    (PARTIAL_LOG, "pattern_scorer", "pattern_scorer"),
    (PARTIAL_LOG, "numeric_scorer", "numeric_scorer"),
    (DICT_LOG, "dict_scorer.format", "format"),
    (RETRIED, None, "pattern_scorer"),
]


@pytest.mark.parametrize(("log", "option", "name"), MEAN_CASES,
                         ids=["clean", "errored-epoch", "partial-credit", "numeric", "dict-key", "retried"])
def test_inspect_mean_is_the_mean_quality_score(tmp_path, log, option, name):
    """inspect's ``mean`` reducer (per sample the mean of its scored epochs' values, then the mean over
    samples, with stderr = sample sd / sqrt(n)) is spec section 11's health.mean_quality_score."""
    run, _ = imported(tmp_path, log, extra=["--scorer", option] if option else [])
    doc = cb.compute_metrics(run)
    if "health" not in doc:
        pytest.skip("compute_metrics has no health block yet (spec section 11, the task-health issue)")
    ours, theirs = doc["health"]["mean_quality_score"], reported(log)[(name, "mean")]
    value, stderr = theirs.get("accuracy", theirs.get("mean")), theirs["stderr"]
    assert (ours["value"], ours["se"]) == (pytest.approx(value, abs=1e-12), pytest.approx(stderr, abs=1e-12))
    assert ours["n"] == len(run.plan)


def test_a_log_without_samples_says_so(tmp_path):
    """A header-only log (an eval still running, or logged without samples): the dataset's sample ids are the
    plan, every attempt is missing, and the import says why there are 0 attempts."""
    doc = json.loads((DATA / "mock_pass_k_with_error.json").read_text(encoding="utf-8"))
    doc.pop("samples")
    (tmp_path / "header.json").write_text(json.dumps(doc), encoding="utf-8")
    run, notes = imported(tmp_path, tmp_path / "header.json")
    assert len(run.plan) == 8 and len(run.attempts) == 0 and run.manifest["status"] == "completed"
    assert notes == ["the log holds no samples (a header only: an eval still running, or logged without samples); "
                     "every planned attempt is missing"]
    assert cb.pass_at_1(run).value is None  # no eligible attempt: undefined, not 0
