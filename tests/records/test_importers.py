"""Importers: inspect_ai logs and tau-bench results as ordinary runs, agreeing with the tools' own numbers.

The reference files are real peer outputs (tests/data/taubench, tests/data/inspect: see their READMEs):
tau-bench's gpt-4o airline trials with the numbers tau-bench publishes, and logs written by inspect_ai
itself, whose epoch reducers recorded the values we must reproduce.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from conftest import TESTS

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.importers import import_inspect, import_taubench
from capbench_nb.records.importers import inspect_logs
from capbench_nb.records.importers.inspect_logs import eval_reader_available, read_log, score_outcome
from capbench_nb.metrics.curves import unbiased_curve

DATA = TESTS / "data"
TAU = DATA / "taubench" / "gpt-4o-airline.trials.jsonl"
CLEAN_EVAL = DATA / "inspect" / "mock_pass_k_clean.eval"
ERROR_JSON = DATA / "inspect" / "mock_pass_k_with_error.json"

needs_eval_reader = pytest.mark.skipif(
    not eval_reader_available(),
    reason="reading .eval logs needs the optional extra: pip install 'capbench-nb[inspect]' (backports.zstd)",
)


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("capbench-nb: error: "), err
    assert "Traceback" not in err
    return err


def inspect_values(path: Path) -> dict[str, float]:
    """The reducer values inspect recorded: ``results.scores[].metrics.accuracy.value`` by reducer."""
    log = read_log(path)
    return {s["reducer"]: s["metrics"]["accuracy"]["value"] for s in log.header["results"]["scores"]}


def curve(run) -> dict[int, dict]:
    return {int(r["j"]): r for r in unbiased_curve(run.attempts, plan=run.plan).to_dict("records")}


# --------------------------------------------------------------------------- tau-bench


def test_taubench_gpt4o_airline_agrees_with_tau_bench(tmp_path, capsys):
    out = tmp_path / "tau"
    assert main(["import", "tau-bench", str(TAU), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    run = cb.load_run(out)
    assert run.k == 4 and len(run.plan) == 50
    assert run.plan["task_id"].tolist() == [str(i) for i in range(50)]  # numeric order, as strings
    assert run.manifest["status"] == "completed"
    assert run.run_id == f"tau-bench-{hashlib.sha256(TAU.read_bytes()).hexdigest()[:8]}"  # no --model or --suite given
    named = tmp_path / "named"
    assert main(["import", "tau-bench", str(TAU), "--out", str(named), "--model", "gpt-4o", "--suite", "airline"]) == 0
    assert cb.load_run(named).run_id == f"tau-bench-gpt-4o-airline-{hashlib.sha256(TAU.read_bytes()).hexdigest()[:8]}"
    capsys.readouterr()
    # tau-bench README, Airline, "TC (gpt-4o)", and display_metrics in tau_bench/run.py
    c = curve(run)
    assert [c[j]["pass^j"] for j in (1, 2, 3, 4)] == pytest.approx([0.42, 0.2733333333333333, 0.22, 0.2], abs=1e-12)
    assert [c[j]["pass@j"] for j in (1, 2, 3, 4)] == pytest.approx([0.42, 17 / 30, 0.66, 0.72], abs=1e-12)
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["value"] == pytest.approx(0.2, abs=1e-12)
    assert doc["metrics"]["pass@k"]["value"] == pytest.approx(0.72, abs=1e-12)
    assert doc["metrics"]["pass^k"]["coverage"] == 1.0
    # trial -> attempt (1-based), quality_score = reward, record.json holds the trial
    source = [json.loads(line) for line in TAU.read_text().splitlines()]
    first = source[0]
    row = run.attempts[(run.attempts.task_id == str(first["task_id"])) & (run.attempts.attempt == first["trial"] + 1)]
    assert float(row["quality_score"].iloc[0]) == first["reward"]
    assert json.loads((out / row["artifact_dir"].iloc[0] / "record.json").read_text()) == first
    assert sum(doc["attempts"]["by_failure_class"].values()) == 200 and doc["attempts"]["by_failure_class"]["success"] == 84


def test_taubench_full_format_exceptions_are_ineligible(tmp_path):
    trials = [
        {"task_id": 0, "trial": 0, "reward": 1.0, "info": {"task": {"user_id": "u0"}}, "traj": [{"role": "user"}]},
        {"task_id": 0, "trial": 1, "reward": 0.0,
         "info": {"error": "litellm.RateLimitError: too many requests", "traceback": "Traceback ..."}, "traj": []},
        {"task_id": 1, "trial": 0, "reward": 0.9999995, "info": {}, "traj": []},  # within 1e-6 of 1
        {"task_id": 1, "trial": 1, "reward": 0.5, "info": {"reward_info": {"r_actions": 0.5}}, "traj": []},
        {"task_id": 2, "trial": 0, "reward": 0.0, "info": {"error": None, "traceback": "Traceback ..."}, "traj": []},
        {"task_id": 2, "trial": 1, "reward": 1.0, "info": {}, "traj": []},
    ]
    src = tmp_path / "tool-calling-gpt-4o.json"
    src.write_text(json.dumps(trials, indent=2))
    out = tmp_path / "run"
    report = import_taubench(src, out, suite="tau-bench-retail", model="gpt-4o")
    assert (report.tasks, report.attempts, report.ineligible) == (3, 6, 2)
    run = cb.load_run(out)
    assert run.manifest["suite"] == {"name": "tau-bench-retail"} and run.manifest["config"] == {"model": "gpt-4o"}
    recs = {(r["task_id"], r["attempt"]): r for r in run.records.to_dict("records")}
    crashed = recs[("0", 2)]
    assert (crashed["success"], crashed["agent_eligible"], crashed["failure_class"]) == (False, False, "unknown")
    assert pd_na(crashed["quality_score"])
    resolver = EvidenceResolver(out)
    assert json.loads(crashed["evidence"]) == ["record.json#/info/error"]
    assert resolver.resolve(crashed["artifact_dir"], "record.json#/info/error").startswith("litellm.RateLimitError")
    assert json.loads(recs[("2", 1)]["evidence"]) == ["record.json#/info/traceback"]  # error null, traceback set
    assert recs[("1", 1)]["success"] and recs[("1", 1)]["quality_score"] == pytest.approx(0.9999995)
    partial = recs[("1", 2)]
    assert (partial["success"], partial["failure_class"], partial["quality_score"]) == (False, "agent", 0.5)
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["n"] == 1 and doc["metrics"]["pass^k"]["coverage"] == pytest.approx(1 / 3)
    assert doc["attempts"]["by_failure_class"]["unknown"] == 2
    # the full trial, traj included, is the attempt's record.json
    assert json.loads((out / "attempts" / "0" / "1" / "record.json").read_text()) == trials[0]


def pd_na(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def test_taubench_import_is_deterministic(tmp_path):
    import_taubench(TAU, tmp_path / "a")
    import_taubench(TAU, tmp_path / "b")
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert len(a) == 202 and a == b
    assert main(["import", "tau-bench", str(TAU), "--out", str(tmp_path / "a"), "--force"]) == 0
    assert tree_bytes(tmp_path / "a") == b


def test_taubench_incomplete_file_is_a_partial_run(tmp_path):
    lines = TAU.read_text().splitlines()[:-10]  # the last trial cut short: 40 of its 50 tasks
    src = tmp_path / "cut.jsonl"
    src.write_text("\n".join(lines) + "\n")
    import_taubench(src, tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    assert run.manifest["status"] == "partial" and run.k == 4
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["n"] == 40 and doc["metrics"]["pass^k"]["coverage"] == 0.8


# --------------------------------------------------------------------------- inspect_ai


@pytest.mark.parametrize("log", [pytest.param(CLEAN_EVAL, marks=needs_eval_reader), ERROR_JSON], ids=["eval", "json"])
def test_inspect_agrees_with_inspect_reducers(tmp_path, log):
    expected = inspect_values(log)
    import_inspect(log, tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    assert run.k == 4 and len(run.plan) == 8
    doc = cb.compute_metrics(run)
    c = curve(run)
    # inspect's pass_at_j / pass_k_j are the unbiased estimators over each sample's scored epochs
    for name in ("mean", "pass_at_1"):
        assert c[1]["pass@j"] == pytest.approx(expected[name], abs=1e-12)
    assert c[2]["pass@j"] == pytest.approx(expected["pass_at_2"], abs=1e-12)
    assert c[2]["pass^j"] == pytest.approx(expected["pass_k_2"], abs=1e-12)
    # ... and at j = epochs = k they drop the samples with fewer scored epochs: our k-eligible tasks
    assert doc["metrics"]["pass@k"]["value"] == pytest.approx(expected["pass_at_4"], abs=1e-12)
    assert doc["metrics"]["pass^k"]["value"] == pytest.approx(expected["pass_k_4"], abs=1e-12)
    scored = {s["reducer"]: s["scored_samples"] for s in read_log(log).header["results"]["scores"]}
    assert doc["metrics"]["pass@k"]["n"] == doc["metrics"]["pass^k"]["n"] == scored["pass_at_4"] == scored["pass_k_4"]


@needs_eval_reader
def test_inspect_clean_eval_values(tmp_path):
    import_inspect(CLEAN_EVAL, tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass@k"]["value"] == pytest.approx(0.875, abs=1e-12)
    assert doc["metrics"]["pass^k"]["value"] == pytest.approx(0.125, abs=1e-12)
    assert doc["metrics"]["pass@k"]["coverage"] == 1.0
    expected = inspect_values(CLEAN_EVAL)
    c = curve(run)
    assert c[4]["pass@j"] == pytest.approx(expected["pass_at_4"], abs=1e-12)  # every sample has 4 epochs here
    assert c[4]["pass^j"] == pytest.approx(expected["pass_k_4"], abs=1e-12)
    for name in ("at_least_1", "max"):
        assert doc["metrics"]["pass@k"]["value"] == pytest.approx(expected[name], abs=1e-12)
    assert doc["attempts"]["eligible"] == 32 and doc["attempts"]["by_failure_class"]["success"] == 16
    assert run.manifest["status"] == "completed"
    assert run.manifest["import"]["sources"][0]["format"] == "eval"


def test_inspect_errored_epoch_is_ineligible_with_evidence(tmp_path):
    assert b"NaN" in ERROR_JSON.read_bytes()  # the JSON log holds bare NaN tokens
    out = tmp_path / "run"
    import_inspect(ERROR_JSON, out)
    run = cb.load_run(out)
    doc = cb.compute_metrics(run)
    for name, value in (("pass@k", Fraction(6, 7)), ("pass^k", Fraction(1, 7))):
        m = doc["metrics"][name]
        assert m["value"] == pytest.approx(float(value), abs=1e-12)
        assert (m["n"], m["coverage"]) == (7, 7 / 8)  # inspect leaves coverage unreported
    assert doc["metrics"]["pass@k"]["value"] == pytest.approx(0.8571428571428571, abs=1e-12)
    assert doc["metrics"]["pass^k"]["value"] == pytest.approx(0.14285714285714285, abs=1e-12)
    t5 = run.records[(run.records.task_id == "t5") & (run.records.attempt == 3)].to_dict("records")[0]
    assert (t5["success"], t5["agent_eligible"], t5["failure_class"]) == (False, False, "unknown")
    assert pd_na(t5["failure_stage"]) and pd_na(t5["quality_score"])
    assert json.loads(t5["evidence"]) == ["record.json#/error"]
    error = EvidenceResolver(out).resolve(t5["artifact_dir"], "record.json#/error")
    assert "deliberate failure for sample t5 epoch 3" in error["message"]
    assert doc["attempts"]["by_failure_class"]["unknown"] == 1 and doc["attempts"]["eligible"] == 31
    per_task = {t["task_id"]: t for t in doc["per_task"]}
    assert per_task["t5"]["k_eligible"] is False and per_task["t5"]["eligible"] == 3


def test_inspect_telemetry_labels_and_record(tmp_path):
    out = tmp_path / "run"
    import_inspect(ERROR_JSON, out)
    run = cb.load_run(out)
    source = read_log(ERROR_JSON)
    sample = next(s for s in source.samples if s["id"] == "t0" and s["epoch"] == 1)
    rec = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert (rec["task_id"], rec["attempt"], rec["artifact_dir"]) == ("t0", 1, "attempts/t0/1")
    usage = sample["model_usage"]["mockllm/model"]
    tel = rec["telemetry"]
    assert (tel["input_tokens"], tel["output_tokens"], tel["total_tokens"]) == (
        usage["input_tokens"], usage["output_tokens"], usage["total_tokens"])
    assert tel["task_wall_ms"] == pytest.approx(sample["working_time"] * 1000)
    assert rec["telemetry_source"]["task_wall_ms"] == "record.json#/working_time"
    assert rec["telemetry_source"]["total_tokens"] == "record.json#/model_usage"
    assert tel["cached_input_tokens"] is None and tel["setup_ms"] is None and tel["llm_calls"] is None
    # the errored epoch used no model: its tokens are unknown, not 0
    t5 = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()
          if json.loads(x)["task_id"] == "t5" and json.loads(x)["attempt"] == 3][0]
    assert t5["telemetry"]["total_tokens"] is None
    # record.json: the sample without its event transcript, as strict JSON
    kept = json.loads((out / "attempts/t0/1/record.json").read_text(),
                      parse_constant=lambda c: pytest.fail(f"non-strict JSON token {c}"))
    assert kept == {k: v for k, v in sample.items() if k not in ("events", "events_data")}
    # dataset metadata -> plan labels, usable as a slice dimension
    assert run.plan.set_index("task_id")["pattern"].to_dict()["t5"] == "1110"
    by = cb.metrics_by(run, by="pattern")
    assert len(by) == 8
    assert run.manifest["config"] == {"model": "mockllm/model", "scorer": "pattern_scorer"}
    assert run.manifest["runner"] == {"name": "inspect_ai", "version": "0.3.285"}
    assert run.manifest["created_at"] == source.header["eval"]["created"]
    assert run.manifest["run_id"] == "inspect-" + source.header["eval"]["run_id"]


@pytest.mark.parametrize("log", [pytest.param(CLEAN_EVAL, marks=needs_eval_reader), ERROR_JSON], ids=["eval", "json"])
def test_inspect_import_is_deterministic(tmp_path, log):
    import_inspect(log, tmp_path / "a")
    import_inspect(log, tmp_path / "b")
    a = tree_bytes(tmp_path / "a")
    assert len(a) == 34 and a == tree_bytes(tmp_path / "b")


def test_deflated_eval_log_still_being_written_reads_without_the_extra(tmp_path, monkeypatch):
    """Older inspect wrote .eval members with deflate; a log still being written has no header.json yet."""
    import zipfile

    monkeypatch.setattr(inspect_logs, "_zstd_zipfile", lambda: None)
    doc = load_json_log()
    log = tmp_path / "running.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": doc["eval"], "plan": doc["plan"]}))
        for sample in doc["samples"][:12]:  # epochs 1 and half of 2 done so far
            archive.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
    import_inspect(log, tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    assert run.manifest["status"] == "partial" and run.k == 4 and len(run.plan) == 8
    assert len(run.records) == 12
    assert cb.compute_metrics(run)["metrics"]["pass@1"]["n"] == 8


def test_eval_log_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(inspect_logs, "_zstd_zipfile", lambda: None)
    with pytest.raises(cb.InvalidRunError) as info:
        import_inspect(CLEAN_EVAL, tmp_path / "run")
    assert info.value.rule == "inspect-extra-missing"
    assert main(["import", "inspect", str(CLEAN_EVAL), "--out", str(tmp_path / "run")]) == 2
    assert "pip install 'capbench-nb[inspect]'" in one_line_error(capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("value", "outcome", "quality"), [
    ("C", "success", 1.0), ("I", "failure", 0.0), ("P", "failure", 0.5), ("N", "failure", 0.0),
    (1, "success", 1.0), (1.0000000001, "success", 1.0), (0.25, "failure", 0.25), (0, "failure", 0.0),
    (True, "success", 1.0), (False, "failure", 0.0), ("yes", "success", 1.0), ("False", "failure", 0.0),
    ("1.0", "success", 1.0), ("0.5", "failure", 0.5), (7, "failure", None), (-1, "failure", None),
    ("banana", "failure", None), (None, "failure", None), (float("nan"), "invalid", None),
])
def test_score_value_rule(value, outcome, quality):
    assert score_outcome(value) == (outcome, quality)


def load_json_log(path: Path = ERROR_JSON) -> dict:
    return json.loads(path.read_text())


def write_json_log(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))  # NaN written back as NaN, as inspect does
    return path


def test_inspect_several_tasks_make_one_run(tmp_path):
    other = load_json_log()
    other["eval"].update(task="other_task", eval_id="E2", run_id="R2", created="2026-12-01T00:00:00+00:00")
    second = write_json_log(tmp_path / "other.json", other)
    import_inspect([second, ERROR_JSON], tmp_path / "a")
    import_inspect([ERROR_JSON, second], tmp_path / "b")  # order of the arguments does not matter
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    run = cb.load_run(tmp_path / "a")
    assert run.plan["task_id"].tolist()[:2] == ["mock_pass_k/t0", "mock_pass_k/t1"]
    assert len(run.plan) == 16 and set(run.plan["inspect_task"]) == {"mock_pass_k", "other_task"}
    assert run.manifest["suite"]["name"] == "mock_pass_k+other_task"
    assert (tmp_path / "a" / "attempts" / "other_task%2Ft5" / "3" / "record.json").is_file()
    doc = cb.compute_metrics(run)
    assert doc["metrics"]["pass^k"]["n"] == 14


def test_inspect_unscored_and_invalid_scores(tmp_path):
    doc = load_json_log()
    by_key = {(s["id"], s["epoch"]): s for s in doc["samples"]}
    by_key[("t0", 1)]["scores"] = {}  # no score, no error (e.g. cancelled before scoring)
    by_key[("t1", 1)]["scores"]["pattern_scorer"]["value"] = float("nan")
    import_inspect(write_json_log(tmp_path / "log.json", doc), tmp_path / "run")
    run = cb.load_run(tmp_path / "run")
    recs = {(r["task_id"], r["attempt"]): r for r in run.records.to_dict("records")}
    assert (recs[("t0", 1)]["failure_class"], recs[("t0", 1)]["agent_eligible"]) == ("unknown", False)
    assert json.loads(recs[("t0", 1)]["evidence"]) == ["record.json#/scores"]
    invalid = recs[("t1", 1)]
    assert (invalid["failure_class"], invalid["failure_stage"], invalid["agent_eligible"]) == ("evaluation", "evaluation", False)
    assert EvidenceResolver(tmp_path / "run").resolve(invalid["artifact_dir"], json.loads(invalid["evidence"])[0]) == "NaN"


def test_inspect_scorer_option(tmp_path, capsys):
    assert main(["import", "inspect", str(ERROR_JSON), "--out", str(tmp_path / "r"), "--scorer", "nope"]) == 2
    assert "no scorer 'nope'" in one_line_error(capsys)
    assert main(["import", "inspect", str(ERROR_JSON), "--out", str(tmp_path / "r"), "--scorer", "pattern_scorer"]) == 0


# --------------------------------------------------------------------------- imported runs are ordinary runs


def test_imported_runs_work_with_metrics_verify_compare_and_report(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["import", "inspect", str(ERROR_JSON), "--out", str(a)]) == 0
    shutil.copytree(a, b)
    for run_dir in (a, b):
        assert main(["metrics", str(run_dir), "--slice", "pattern"]) == 0
        assert main(["verify", str(run_dir)]) == 0
    comparison = cb.compare_runs(cb.load_run(a), cb.load_run(b))
    assert comparison["paired"]["pass^k"]["n_pairs"] == 7 and comparison["paired"]["pass^k"]["difference"] == 0
    out = tmp_path / "report"
    assert main(["report", str(a), "--out", str(out), "--no-progress"]) == 0
    assert (out / "report.html").is_file()
    assert main(["verify", str(a), "--out", str(out)]) == 0


# --------------------------------------------------------------------------- bad input: one line, exit 2


def _inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    def put(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    trial = {"task_id": 1, "trial": 0, "reward": 1.0}
    not_run = tmp_path / "not-a-run"
    not_run.mkdir()
    (not_run / "notes.txt").write_text("mine")
    no_logs = tmp_path / "no-logs"
    no_logs.mkdir()
    (no_logs / "notes.txt").write_text("not a log")
    return {
        "tau missing file": (["tau-bench", str(tmp_path / "nope.json")], "no such"),
        "tau not json": (["tau-bench", put("x.json", "[{oops")], "not valid JSON"),
        "tau no trial": (["tau-bench", put("x.jsonl", json.dumps({"task_id": 1, "reward": 1.0}) + "\n")], "no 'trial'"),
        "tau bad reward": (["tau-bench", put("nan.jsonl", '{"task_id": 1, "trial": 0, "reward": NaN}\n')], "finite number"),
        "tau duplicate": (["tau-bench", put("dup.jsonl", (json.dumps(trial) + "\n") * 2)], "also recorded"),
        "tau bool task": (["tau-bench", put("b.jsonl", json.dumps(dict(trial, task_id=True)) + "\n")], "task_id"),
        "tau empty": (["tau-bench", put("empty.json", "[]")], "no trials"),
        "inspect not json": (["inspect", put("log.json", "{")], "not valid JSON"),
        "inspect no eval": (["inspect", put("log2.json", '{"samples": []}')], "no 'eval'"),
        "inspect bad zip": (["inspect", put("log.eval", "PK\x03\x04 not really")], "zip"),
        "inspect same log twice": (["inspect", str(ERROR_JSON), str(ERROR_JSON)], "given twice"),
        "inspect a directory": (["inspect", str(no_logs)], "a directory with no .eval or .json log in it"),
        "force on a non-run": (["tau-bench", str(TAU), "--force", "--out", str(not_run)], "holds no run"),
        "non-empty out": (["tau-bench", str(TAU), "--out", str(not_run)], "not empty"),
    }


@pytest.mark.parametrize("case", [
    "tau missing file", "tau not json", "tau no trial", "tau bad reward", "tau duplicate", "tau bool task",
    "tau empty", "inspect not json", "inspect no eval", "inspect bad zip", "inspect same log twice",
    "inspect a directory", "force on a non-run", "non-empty out",
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, case):
    args, words = _inputs(tmp_path)[case]
    if "--out" not in args:
        args = args + ["--out", str(tmp_path / "run")]
    assert main(["import", *args]) == 2
    assert words in one_line_error(capsys)
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run.")]  # no temporary left behind
    assert (tmp_path / "not-a-run" / "notes.txt").read_text() == "mine"


def test_inspect_dict_score_values_are_refused(tmp_path, capsys):
    doc = load_json_log()
    doc["samples"][0]["scores"]["pattern_scorer"]["value"] = {"a": 1, "b": 0}
    log = write_json_log(tmp_path / "dict.json", doc)
    assert main(["import", "inspect", str(log), "--out", str(tmp_path / "run")]) == 2
    assert "[rule: inspect-score-value]" in one_line_error(capsys)


def test_inspect_merging_the_same_samples_twice_is_refused(tmp_path, capsys):
    copy = load_json_log()
    copy["eval"]["eval_id"] = "another"
    log = write_json_log(tmp_path / "copy.json", copy)
    assert main(["import", "inspect", str(ERROR_JSON), str(log), "--out", str(tmp_path / "run")]) == 2
    assert "[rule: duplicate-attempt]" in one_line_error(capsys)
