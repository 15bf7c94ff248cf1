"""The run simulator: round trips through ingest and the loader, determinism, ground truth, calibration."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.records.prices import PriceTable, load_tool_config
from capbench_nb.records.ingest import ingest_run
from capbench_nb.format import CLASS_KEYS, RECORD, TELEMETRY, TELEMETRY_FIELDS
from capbench_nb.simulation.expected import expected_metrics
from capbench_nb.simulation.generator import CATALOGUE, DEVICE_TOOLS
from capbench_nb.simulation.options import CAUSES
from capbench_nb.simulation.truth import TRUTH_FILE
from capbench_nb.simulation.writer import build_run, simulate_run
from capbench_nb.metrics.stats import wilson_interval

from conftest import REPO, SAMPLE_RUN

PRICES = PriceTable("prices/p1", "2026-10-01", "2026-10-01",
                    {"m-large": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07}})
SHAPE = dict(short_tasks=2, missing_attempts=2, empty_tasks=1, extra_attempts=2)
# Every missing-source case often enough that a small run meets each of them.
HEAVY = dict(episode_missing_rate=0.3, history_missing_rate=0.4, history_usage_missing_rate=0.2,
             run_metrics_gap_rate=0.4, screenshot_gap_rate=0.3, recovery_key_missing_rate=0.2,
             crash_rate=0.08, judge_error_rate=0.08, setup_failure_rate=0.05, skip_rate=0.1,
             provider_unavailable_rate=0.04, not_started_rate=0.04,
             transient_device_error_rate=0.3, device_error_rate=0.3, tool_error_rate=0.15)
NO_INELIGIBLE = dict(skip_rate=0, setup_failure_rate=0, provider_unavailable_rate=0, not_started_rate=0,
                     crash_rate=0, judge_error_rate=0)


def truth_of(run_dir: Path) -> dict:
    return json.loads((run_dir / TRUTH_FILE).read_text(encoding="utf-8"))


def results_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def digests(run_dir: Path) -> dict[str, str]:
    return {p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def assert_metrics_match_truth(doc: dict, truth: dict) -> None:
    exp = expected_metrics(truth)
    assert doc["k"] == exp["k"]
    assert doc["tasks"] == exp["tasks"]
    assert doc["attempts"] == exp["attempts"]
    for name in ("pass@1", "pass@k", "pass^k"):
        x, n = exp[name]
        assert (doc["metrics"][name]["successes"], doc["metrics"][name]["n"]) == (x, n), name
    assert [(a["task_id"], a["attempt"]) for a in doc["anomalies"]] == exp["anomalies"]
    assert all(a["kind"] == "above_planned_repeats" for a in doc["anomalies"])


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    "options",
    [
        dict(SHAPE, price_table=PRICES),
        dict(SHAPE, **HEAVY),
        dict(HEAVY, judge=False, reasoning_tokens=True, price_table=PRICES),
    ],
    ids=["defaults+shape+prices", "missing-sources", "no-judge+reasoning"],
)
def test_round_trip_through_ingest_equals_the_truth(tmp_path, options):
    run_dir = simulate_run(tmp_path / "run", tasks=30, repeats=3, seed=11, artifacts=True, **options)
    assert not (run_dir / "results.jsonl").exists()
    report = ingest_run(run_dir, prices=options.get("price_table"), progress=False)
    truth = truth_of(run_dir)
    derived = results_of(run_dir)
    intended = [a["record"] for a in truth["attempts"]]
    assert report.records == len(intended) == len(derived)
    for got, want in zip(derived, intended):  # every field of every record
        assert got == want, (got["task_id"], got["attempt"], {k: (got[k], want[k]) for k in got if got[k] != want[k]})
    run = cb.load_run(run_dir)
    assert len(run.records) == len(intended)
    assert_metrics_match_truth(cb.compute_metrics(run), truth)


def test_round_trip_covers_every_case(tmp_path):
    """A round trip is only as good as the cases it meets: this one meets them all."""
    run_dir = simulate_run(tmp_path / "run", tasks=60, repeats=3, seed=11, artifacts=True, **SHAPE, **HEAVY)
    ingest_run(run_dir, progress=False)
    attempts = truth_of(run_dir)["attempts"]
    records = [a["record"] for a in attempts]
    assert results_of(run_dir) == records
    assert set(CAUSES) == {a["cause"] for a in attempts}
    assert {r["failure_class"] for r in records} == set(CLASS_KEYS) - {"success"} | {""}
    assert {r["failure_stage"] for r in records} == {None, "setup", "evaluation", "device_execution"}
    assert any(len(r["evidence"]) > 1 for r in records)  # two device errors in one attempt
    sources = Counter(src for r in records for src in r["telemetry_source"].values())
    assert sources["history.json#/messages"] and sources["episode.json#/run_metrics/total_tokens"]
    started = [r for r in records if r["telemetry"]["task_wall_ms"] is not None]
    for name in TELEMETRY_FIELDS:  # every field is sometimes missing where the agent ran, and sometimes not
        values = [r["telemetry"][name] for r in started]
        assert None in values or name in ("task_wall_ms", "setup_ms"), name
        assert any(v is not None for v in values) or name == "reasoning_tokens", name
    assert any(r["telemetry"]["llm_calls"] == 0 for r in records)  # a history without usage
    assert {r["telemetry"]["recovery_succeeded"] for r in records} == {True, False, None}
    # missing telemetry is null, never 0: token totals and wall times are positive whenever present
    for r in records:
        for name in ("task_wall_ms", "setup_ms", "input_tokens", "output_tokens", "total_tokens"):
            assert r["telemetry"][name] is None or r["telemetry"][name] > 0
        assert set(r["telemetry_source"]) == {k for k, v in r["telemetry"].items() if v is not None}


def test_cli_simulate_ingest_metrics_verify(tmp_path, capsys):
    run_dir = tmp_path / "cli-run"
    assert main(["simulate", "--tasks", "8", "--repeats", "3", "--seed", "5", "--out", str(run_dir),
                 "--artifacts"]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir)
    assert (run_dir / "attempts").is_dir() and not (run_dir / "results.jsonl").exists()
    assert main(["ingest", str(run_dir)]) == 0
    assert main(["metrics", str(run_dir)]) == 0
    assert main(["verify", str(run_dir)]) == 0
    doc = json.loads((run_dir / "metrics.json").read_text())
    truth = truth_of(run_dir)
    assert_metrics_match_truth(doc, truth)
    assert results_of(run_dir) == [a["record"] for a in truth["attempts"]]
    # the output directory is refused once it holds a run
    assert main(["simulate", "--tasks", "2", "--repeats", "1", "--seed", "5", "--out", str(run_dir)]) == 2
    assert "output-exists" in capsys.readouterr().err


def test_without_artifacts_results_load_and_match_the_truth(tmp_path):
    run_dir = simulate_run(tmp_path / "run", tasks=40, repeats=3, seed=3, price_table=PRICES, **SHAPE, **HEAVY)
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "results.jsonl", TRUTH_FILE]
    truth = truth_of(run_dir)
    records = results_of(run_dir)
    assert records == [a["record"] for a in truth["attempts"]]
    assert [(r["task_id"], r["attempt"]) for r in records] == sorted((r["task_id"], r["attempt"]) for r in records)
    for r in records:  # no files to cite: no evidence, no stage
        assert r["artifact_dir"] is None and r["evidence"] == [] and r["failure_stage"] is None
        assert list(r["telemetry"]) == list(TELEMETRY_FIELDS)
    assert {a["cause"] for a in truth["attempts"]} >= {"setup_failed", "judge_error", "device_error"}
    assert any(r["cost"] is not None for r in records) and any(r["cost"] is None for r in records)
    run = cb.load_run(run_dir)
    assert_metrics_match_truth(cb.compute_metrics(run), truth)


# --------------------------------------------------------------------------- determinism


def test_same_arguments_same_bytes_other_seed_other_bytes(tmp_path):
    kwargs = dict(tasks=12, repeats=3, artifacts=True, price_table=PRICES, **SHAPE)
    a = digests(simulate_run(tmp_path / "a", seed=42, **kwargs))
    b = digests(simulate_run(tmp_path / "deeper" / "b", seed=42, **kwargs))
    c = digests(simulate_run(tmp_path / "c", seed=43, **kwargs))
    assert a == b
    assert len(a) > 30
    assert a != c and a["simulation.json"] != c["simulation.json"]
    assert sum(a.get(name) == digest for name, digest in c.items()) < len(a) // 2
    plain_a = digests(simulate_run(tmp_path / "pa", tasks=12, repeats=3, seed=42))
    plain_b = digests(simulate_run(tmp_path / "pb", tasks=12, repeats=3, seed=42))
    assert plain_a == plain_b and plain_a["results.jsonl"] != digests(
        simulate_run(tmp_path / "pc", tasks=12, repeats=3, seed=7))["results.jsonl"]


def test_bytes_do_not_depend_on_hash_randomisation(tmp_path):
    code = ("import sys; from capbench_nb.simulation.writer import simulate_run; "
            "simulate_run(sys.argv[1], tasks=10, repeats=2, seed=9, artifacts=True, short_tasks=1, extra_attempts=1)")
    for hashseed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        subprocess.run([sys.executable, "-c", code, str(tmp_path / hashseed)], check=True, env=env, cwd=REPO)
    assert digests(tmp_path / "1") == digests(tmp_path / "2")


def test_created_at_and_run_id_are_fixed(tmp_path):
    manifest = build_run(tasks=3, repeats=2, seed=77).manifest
    assert manifest["run_id"] == "sim-77"
    assert manifest["created_at"] == "2026-11-28T10:00:00Z"
    assert manifest["schema_version"] == "capbench.run/1"
    assert set(manifest["config"]) == {"model", "provider", "platform", "judge"}
    assert all(set(t) == {"task_id", "repeats", "app", "platform"} for t in manifest["plan"]["tasks"])


# --------------------------------------------------------------------------- plan shape and truth file


def test_plan_shape_options(tmp_path):
    run = build_run(tasks=20, repeats=4, seed=8, short_tasks=3, missing_attempts=2, empty_tasks=2, extra_attempts=1)
    plan = run.manifest["plan"]
    assert run.manifest["status"] == "partial"
    assert Counter(t["repeats"] for t in plan["tasks"]) == {4: 17, 3: 3}
    assert plan["k"] == 3
    tasks = run.truth["tasks"]
    assert sum(not t["attempts"] for t in tasks) == 2
    assert all(t["missing_attempts"] == list(range(1, t["planned_repeats"] + 1)) for t in tasks if not t["attempts"])
    partial = [t for t in tasks if t["attempts"] and t["missing_attempts"]]
    assert len(partial) == 2 and all(t["missing_attempts"] == [t["planned_repeats"]] for t in partial)
    above = [a for a in run.truth["attempts"] if a["above_planned_repeats"]]
    assert len(above) == 1
    assert expected_metrics(run.truth)["anomalies"] == [(above[0]["task_id"], above[0]["attempt"])]
    assert build_run(tasks=5, repeats=2, seed=1).manifest["status"] == "completed"
    ids = [t["task_id"] for t in build_run(tasks=2 * len(CATALOGUE) + 1, repeats=1, seed=1).manifest["plan"]["tasks"]]
    assert len(set(ids)) == len(ids)


def test_truth_file_format(tmp_path):
    run_dir = simulate_run(tmp_path / "run", tasks=10, repeats=2, seed=4, artifacts=True, extra_attempts=1)
    truth = truth_of(run_dir)
    assert truth["schema_version"] == "capbench.simulation/1"
    params = truth["parameters"]
    assert (params["tasks"], params["repeats"], params["seed"], params["artifacts"]) == (10, 2, 4, True)
    assert params["price_table"] is None and params["extra_attempts"] == 1
    for task in truth["tasks"]:
        assert 0 <= task["p_success"] <= 1
        assert set(task) == {"task_id", "app", "planned_repeats", "p_success", "skipped", "attempts", "missing_attempts"}
    for a in truth["attempts"]:
        assert set(a) == {"task_id", "attempt", "above_planned_repeats", "cause", "files", "record"}
        assert a["cause"] in CAUSES
        assert a["files"][0] == "attempt.json"
        assert sorted(p.name for p in (run_dir / a["record"]["artifact_dir"]).iterdir()) == sorted(a["files"])


def test_truth_records_have_the_formats_fields_and_sources(tmp_path):
    """Every truth record has exactly the record fields of the format description, every telemetry
    field, and each source where the format says it comes from (history usage for tokens aside)."""
    sources = {t.name: t.source for t in TELEMETRY}
    run = build_run(tasks=40, repeats=3, seed=3, artifacts=True, **SHAPE, **HEAVY)
    fallback = 0
    for a in run.truth["attempts"]:
        record = a["record"]
        assert set(record) == {f.name for f in RECORD}
        assert tuple(record["telemetry"]) == TELEMETRY_FIELDS
        for name, source in record["telemetry_source"].items():
            if source != sources[name]:
                assert (name, source) in {("recovery_attempted", "attempt.json#/recovery")} or (
                    name in ("input_tokens", "output_tokens", "total_tokens") and source == "history.json#/messages"
                ), (name, source)
                fallback += source == "history.json#/messages"
    assert fallback  # the heavy options meet the history fallback


def test_refuses_a_non_empty_output_directory(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(cb.InvalidRunError) as info:
        simulate_run(tmp_path / "full", tasks=2, repeats=1, seed=1)
    assert info.value.rule == "output-exists"
    (tmp_path / "file").write_text("")
    with pytest.raises(cb.InvalidRunError):
        simulate_run(tmp_path / "file", tasks=2, repeats=1, seed=1)
    (tmp_path / "empty").mkdir()
    assert simulate_run(tmp_path / "empty", tasks=2, repeats=1, seed=1) == tmp_path / "empty"


def test_bad_options_are_refused(tmp_path):
    with pytest.raises(TypeError, match="unknown simulation option"):
        build_run(tasks=2, repeats=1, seed=1, crash_probability=0.1)
    with pytest.raises(ValueError, match="crash_rate"):
        build_run(tasks=2, repeats=1, seed=1, crash_rate=1.5)
    with pytest.raises(ValueError, match="short_tasks"):
        build_run(tasks=2, repeats=1, seed=1, short_tasks=1)
    with pytest.raises(ValueError):
        build_run(tasks=2, repeats=2, seed=1, missing_attempts=2, extra_attempts=1)
    with pytest.raises(ValueError):
        build_run(tasks=0, repeats=1, seed=1)
    # the message names the class where it really lives
    with pytest.raises(ValueError, match=r"capbench_nb\.records\.prices\.PriceTable$"):
        build_run(tasks=2, repeats=1, seed=1, price_table={"m-large": 1.0})
    assert not any(tmp_path.iterdir())


def test_catalogue_critical_steps_are_device_actions():
    for task_id, app, package, prompt, steps, critical, assertions in CATALOGUE:
        assert steps[critical][0] in DEVICE_TOOLS, task_id
        assert assertions and task_id.startswith(app + ".")
    assert load_tool_config().device_actions == DEVICE_TOOLS  # the spec's list, the package's default


def test_telemetry_distributions_are_plausible():
    run = build_run(tasks=80, repeats=3, seed=21)
    tel = [a["record"]["telemetry"] for a in run.truth["attempts"] if a["cause"] in ("success", "wrong_outcome")]

    def median(name):
        values = sorted(t[name] for t in tel if t[name] is not None)
        return values[len(values) // 2]

    assert 8_000 < median("task_wall_ms") < 60_000
    assert 2_000 < median("setup_ms") < 5_000
    assert 5_000 < median("total_tokens") < 60_000
    assert 300 < median("time_to_first_token_ms") < 1_500
    assert 500 < median("device_execution_ms") < 10_000
    assert 3 <= median("tool_calls") <= 15
    timeouts = [a["record"]["telemetry"] for a in run.truth["attempts"] if a["cause"] == "timeout"]
    assert timeouts and all(t["task_wall_ms"] >= 180_000 for t in timeouts)


# --------------------------------------------------------------------------- calibration


def test_pass_at_1_wilson_interval_covers_the_mean_success_probability():
    """Over 400 seeded runs of 40 tasks x 1 repeat (default rates, so with ineligible outcomes,
    which are drawn independently of difficulty), the 95% Wilson interval of pass@1 should cover
    the mean success probability over tasks about 95% of the time.

    Which mean?  The Wilson interval models the n tasks of the pass@1 denominator as independent
    Bernoulli(theta) outcomes.  That holds exactly for theta = E[p], the mean success probability
    of the task population the suite is drawn from (the Beta mean, 0.6): there coverage should be
    nominal.  For the mean latent probability of the run's own eligible tasks the outcomes are
    Poisson-binomial, with less variance than the binomial, so the interval is conservative and
    coverage is above 95%.  Both figures are printed (``pytest -s``).
    """
    runs, population_mean = 400, 1.5 / (1.5 + 1.0)
    cover_population = cover_suite = 0
    sizes = []
    for seed in range(runs):
        truth = build_run(tasks=40, repeats=1, seed=seed).truth
        p = {t["task_id"]: t["p_success"] for t in truth["tasks"]}
        first = [a["record"] for a in truth["attempts"] if a["attempt"] == 1 and a["record"]["agent_eligible"]]
        x, n = sum(r["success"] for r in first), len(first)
        low, high = wilson_interval(x, n)
        suite_mean = sum(p[r["task_id"]] for r in first) / n
        cover_population += low <= population_mean <= high
        cover_suite += low <= suite_mean <= high
        sizes.append(n)
    population, suite = cover_population / runs, cover_suite / runs
    print(f"\npass@1 95% Wilson coverage over {runs} runs of 40 tasks (mean n {sum(sizes) / runs:.1f}): "
          f"population mean {population:.3f}, suite mean {suite:.3f}")
    assert min(sizes) < 40  # ineligible outcomes did occur
    assert 0.90 <= population <= 0.985
    assert 0.94 <= suite <= 1.0


# --------------------------------------------------------------------------- the bundled sample


def test_bundled_sample_is_the_simulators_output(tmp_path):
    spec = importlib.util.spec_from_file_location("make_sample_run", REPO / "scripts" / "make_sample_run.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["make_sample_run.py", str(tmp_path / "sample")]) == 0
    assert digests(tmp_path / "sample") == digests(SAMPLE_RUN), "regenerate: python scripts/make_sample_run.py"
    total = sum(p.stat().st_size for p in SAMPLE_RUN.rglob("*") if p.is_file())
    assert total < 250_000


def test_bundled_sample_meets_its_requirements():
    truth = truth_of(SAMPLE_RUN)
    plan = {t["task_id"]: t["planned_repeats"] for t in truth["tasks"]}
    counted = [a["record"] for a in truth["attempts"] if a["attempt"] <= plan[a["task_id"]]]
    assert len(plan) >= 12 and sorted(set(plan.values())) == [2, 3] and list(plan.values()).count(2) == 1
    assert {r["failure_class"] for r in counted} == {"", "agent", "environment", "evaluation", "skipped", "unknown"}
    assert {r["failure_stage"] for r in counted if r["evidence"]} == {"setup", "evaluation", "device_execution"}
    assert any(v is None for r in counted if r["agent_eligible"] for v in r["telemetry"].values())
    assert sum(a["above_planned_repeats"] for a in truth["attempts"]) == 1
    assert any(not t["attempts"] for t in truth["tasks"])
    assert any(t["attempts"] and t["missing_attempts"] for t in truth["tasks"])
    assert any(r["cost"] is not None for r in counted)
    assert json.loads((SAMPLE_RUN / "manifest.json").read_text())["status"] == "partial"
