"""``export --format eee`` (spec section 14): records the every_eval_ever validator accepts, and pass@k from them alone."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.errors import InvalidRunError
from capbench_nb.outputs.eee_export import export_eee, path_component
from capbench_nb.simulation.writer import simulate_run
from conftest import SAMPLE_RUN, check_error, cli, manifest, record, write_run

validate = pytest.importorskip("every_eval_ever.validator.validate",
                               reason="every-eval-ever (dev extra) is not installed")


def _validate(paths: list[Path]) -> tuple[int, list]:
    """The EEE validator's CLI (``eee-validate --format json``) on ``paths``: exit code and reports."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = validate.main(["--format", "json", *map(str, paths)])
    return code, json.loads(out.getvalue())


def _files(aggregate: Path) -> list[Path]:
    return [aggregate, aggregate.with_name(aggregate.stem + "_samples.jsonl")]


def recompute(aggregate: Path) -> dict:
    """pass@1, pass@k, pass^k (successes, n) of spec section 6 from the exported files alone."""
    doc = json.loads(aggregate.read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in
            (aggregate.parent / Path(doc["detailed_evaluation_results"]["file_path"]).name).read_text().splitlines()]
    k = int(rows[0]["metadata"]["k"])
    tasks: dict[str, dict[int, tuple[bool, bool]]] = defaultdict(dict)
    for row in rows:
        meta = row["metadata"]
        tasks[row["sample_id"]][int(meta["attempt"])] = (meta["agent_eligible"] == "true", row["evaluation"]["is_correct"])
    first = [t[1] for t in tasks.values() if 1 in t and t[1][0]]
    prefixes = [[t[j][1] for j in range(1, k + 1)] for t in tasks.values()
                if all(j in t and t[j][0] for j in range(1, k + 1))]
    return {"pass@1": (sum(s for _, s in first), len(first)),
            "pass@k": (sum(any(p) for p in prefixes), len(prefixes)),
            "pass^k": (sum(all(p) for p in prefixes), len(prefixes))}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("eee")
    odd = simulate_run(base / "odd", tasks=15, repeats=4, seed=9, missing_attempts=3, extra_attempts=2)
    doc = json.loads((odd / "manifest.json").read_text(encoding="utf-8"))
    doc["suite"]["name"] = "suite: a/b <x>"
    doc["config"]["model"] = "org/model:v1?"
    (odd / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    return [SAMPLE_RUN, simulate_run(base / "plain", tasks=30, repeats=3, seed=8), odd]


def test_the_validator_accepts_the_export_without_warnings(runs, tmp_path):
    for i, run_dir in enumerate(runs):
        aggregate = export_eee(run_dir, tmp_path / f"out{i}")
        code, reports = _validate(_files(aggregate))
        assert code == 0, reports
        assert [r["valid"] for r in reports] == [True, True]
        assert all(r["errors"] == [] and r["warnings"] == [] for r in reports)


def test_pass_rates_recomputed_from_the_export_equal_metrics_json(runs, tmp_path):
    for i, run_dir in enumerate(runs):
        run = cb.load_run(run_dir)
        aggregate = export_eee(run, tmp_path / f"out{i}")
        doc = cb.compute_metrics(run)
        got = recompute(aggregate)
        for metric in ("pass@1", "pass@k", "pass^k"):
            assert got[metric] == (doc["metrics"][metric]["successes"], doc["metrics"][metric]["n"])
        rows = aggregate.with_name(aggregate.stem + "_samples.jsonl").read_text().splitlines()
        assert len(rows) == len(run.attempts)  # one row per counted attempt; anomalies stay out
        # each attempt's cost and its source in the row's metadata; no cost, no key (never a 0)
        costs = [(json.loads(r)["metadata"].get("cost"), json.loads(r)["metadata"].get("cost_source")) for r in rows]
        expected = [(None if pd.isna(c) else repr(float(c)), None if pd.isna(src) else str(src))
                    for c, src in zip(run.attempts["cost"], run.attempts["cost_source"])]
        assert costs == expected and (i > 0 or any(c is not None for c, _ in costs))
        exported = {r["evaluation_result_id"]: r["score_details"]
                    for r in json.loads(aggregate.read_text())["evaluation_results"]}
        k = doc["k"]
        assert exported["pass@1"]["score"] == doc["metrics"]["pass@1"]["value"]
        assert exported[f"pass^{k}"]["uncertainty"]["confidence_interval"]["lower"] == doc["metrics"]["pass^k"]["ci_low"]


def test_same_run_same_bytes_and_hostile_names_stay_portable(runs, tmp_path):
    a = export_eee(runs[2], tmp_path / "a")
    b = export_eee(runs[2], tmp_path / "b")
    assert a.relative_to(tmp_path / "a") == b.relative_to(tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    assert a.relative_to(tmp_path / "a").parts[:4] == ("data", "suite_ a_b _x_", "p1", "org_model_v1_")
    assert path_component(None) == "unspecified" and path_component("..") == "unspecified"
    assert path_component("CON") == "_CON" and path_component("data") == "data_"


def test_a_created_at_without_an_offset_is_read_as_utc(runs, tmp_path, monkeypatch):
    from capbench_nb.outputs.eee_export import _epoch

    monkeypatch.setenv("TZ", "America/Los_Angeles")
    __import__("time").tzset()
    try:
        assert _epoch("2026-11-28T10:00:00") == _epoch("2026-11-28T10:00:00Z") == "1795860000"
        assert _epoch("2026-11-28T10:00:00+01:00") == "1795856400" and _epoch("yesterday") == "0"
    finally:
        monkeypatch.delenv("TZ")
        __import__("time").tzset()


@pytest.mark.parametrize("records", [
    [],  # an empty results.jsonl: a valid run, every rate n/a
    [record("t1", 3), record("gone", 1)],  # only anomalies: beyond t1's planned repeats, a task not planned
], ids=["empty", "only-anomalies"])
def test_a_run_without_counted_attempts_is_refused_one_line_nothing_written(tmp_path, records):
    run_dir = write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)]), records)
    assert len(cb.load_run(run_dir).attempts) == 0
    with pytest.raises(InvalidRunError) as err:
        export_eee(run_dir, tmp_path / "eee")
    assert err.value.rule == "eee-no-attempts" and err.value.file == str(run_dir / "results.jsonl")
    rc, out, err = cli("export", run_dir, "--format", "eee", "--out", tmp_path / "eee")
    assert (rc, out) == (2, "")
    check_error(err, rule="eee-no-attempts")
    assert "no counted attempts" in err and not (tmp_path / "eee").exists()


def test_eee_has_no_form_for_zero_instances(runs, tmp_path):
    # why the refusal: the validator fails an aggregate whose samples file has no row, and the file itself
    aggregate = export_eee(runs[1], tmp_path / "out")
    samples = aggregate.with_name(aggregate.stem + "_samples.jsonl")
    samples.write_text("")
    doc = json.loads(aggregate.read_text())
    doc["detailed_evaluation_results"].update(checksum=hashlib.sha256(b"").hexdigest(), total_rows=0)
    aggregate.write_text(json.dumps(doc))
    code, reports = _validate(_files(aggregate))
    assert code != 0 and [r["valid"] for r in reports] == [False, False]
    assert all("at least one JSONL row" in " ".join(map(str, r["errors"])) for r in reports)
