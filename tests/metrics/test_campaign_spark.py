"""cb.campaign on Apache Spark (local mode, one session for the module): the same numbers as DuckDB and metrics.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import capbench_nb as cb
from capbench_nb.outputs.campaign_export import export_campaign
from capbench_nb.simulation.writer import simulate_run

pytest.importorskip("pyspark", reason="the spark extra (pip install capbench-nb[spark]) is not installed")

pytestmark = pytest.mark.spark

RATE_KEYS = ("value", "successes", "n", "ci_low", "ci_high", "coverage")
#: run_ids Spark could read as a null partition value (Hive's own null name first), or that need escaping
NULL_LIKE = ["__HIVE_DEFAULT_PARTITION__", "null", "NULL", " ", "%", "=/%", "%5F"]


@pytest.fixture(scope="module")
def spark():
    from capbench_nb.metrics.campaign import spark_session

    # a short-lived JVM on tiny data: the C1 compiler only and the serial collector start ~25% faster
    session = spark_session({"spark.master": "local[1]", "spark.ui.enabled": "false",
                             "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
                             "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, list[Path]]:
    base = tmp_path_factory.mktemp("spark")
    runs = []
    for i, (rid, shape) in enumerate([("007", dict(tasks=25, repeats=3, seed=21)),
                                      ("a/b=c %", dict(tasks=20, repeats=4, seed=22, missing_attempts=4)),
                                      ("1e3", dict(tasks=30, repeats=2, seed=23, extra_attempts=3, empty_tasks=2)),
                                      *((rid, dict(tasks=6, repeats=2, seed=30 + j))
                                        for j, rid in enumerate(NULL_LIKE))]):
        path = simulate_run(base / f"r{i}", **shape)
        doc = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        doc["run_id"] = rid  # ids Spark would read as numbers or nulls, or that need escaping
        (path / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
        runs.append(path)
    return export_campaign(runs, base / "store"), runs


def test_spark_counts_equal_duckdb_and_rates_equal_metrics_json(spark, store):
    path, runs = store
    on_spark = cb.campaign(path, engine="spark", spark=spark)
    on_duckdb = cb.campaign(path)
    assert on_spark.counts().equals(on_duckdb.counts())
    assert list(on_spark.counts()["run_id"]) == ["007", "a/b=c %", "1e3", *NULL_LIKE]
    rates = on_spark.rates()
    for run_dir in runs:
        run = cb.load_run(run_dir)
        doc = cb.compute_metrics(run)
        for metric in ("pass@1", "pass@k", "pass^k"):
            got, expected = rates[run.run_id][metric].to_dict(), doc["metrics"][metric]
            for key in RATE_KEYS:
                assert (got[key] is None) == (expected[key] is None)
                if expected[key] is not None:
                    assert got[key] == pytest.approx(expected[key], abs=1e-12, rel=0)


def test_spark_metrics_frame_and_board(spark, store):
    path, runs = store
    c = cb.campaign(path, engine="spark", spark=spark)
    assert c.metrics().equals(cb.campaign(path).metrics())
    from capbench_nb.io.atomic import dumps

    assert dumps(c.board(resamples=50)) == dumps(cb.board(runs, resamples=50))
