"""cb.campaign on DuckDB (spec section 14): per-run rates equal metrics.json; the board equals the directories' one."""

from __future__ import annotations

from pathlib import Path

import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics.campaign import Campaign
from capbench_nb.metrics.campaign_rules import run_counts
from capbench_nb.outputs.campaign_export import export_campaign, metrics_sha256
from capbench_nb.simulation.writer import simulate_run
from conftest import manifest, record, with_run_id, write_run

METRICS = ("pass@1", "pass@k", "pass^k")
RATE_KEYS = ("value", "successes", "n", "ci_low", "ci_high", "coverage")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """Runs of several shapes (k 2 to 5, missing and extra attempts, empty tasks), run_ids that need escaping."""
    base = tmp_path_factory.mktemp("campaign")
    shapes = [dict(tasks=30, repeats=3, seed=1), dict(tasks=25, repeats=5, seed=2, missing_attempts=6),
              dict(tasks=40, repeats=2, seed=3, empty_tasks=3, extra_attempts=4),
              dict(tasks=20, repeats=4, seed=4, short_tasks=4, judge=False)]
    ids = ["plain", "a/b=c", "100", "päss %2F #?"]
    return [with_run_id(simulate_run(base / f"r{i}", **shape), rid) for i, (shape, rid) in enumerate(zip(shapes, ids))]


@pytest.fixture(scope="module")
def store(runs, tmp_path_factory) -> Path:
    return export_campaign(runs, tmp_path_factory.mktemp("store") / "s")


def assert_rates_match(rates: dict, runs: list[Path]) -> None:
    for path in runs:
        run = cb.load_run(path)
        doc = cb.compute_metrics(run)
        for metric in METRICS:
            expected, got = doc["metrics"][metric], rates[run.run_id][metric].to_dict()
            assert got["successes"] == expected["successes"] and got["n"] == expected["n"]
            for key in RATE_KEYS:
                if expected[key] is None:
                    assert got[key] is None
                else:
                    assert got[key] == pytest.approx(expected[key], abs=1e-12, rel=0)


def test_rates_equal_each_runs_metrics_json(runs, store):
    c = cb.campaign(store)
    assert isinstance(c, Campaign) and c.engine == "duckdb"
    assert c.run_ids == [cb.load_run(p).run_id for p in runs]
    assert_rates_match(c.rates(), runs)
    frame = c.metrics()
    assert list(frame["metric"][:3]) == list(METRICS) and len(frame) == 3 * len(runs)
    assert str(frame["value"].dtype) == "Float64"


#: run_ids an engine could read as a null partition value, or that need escaping: each is read back by DuckDB
NULL_LIKE_IDS = ["__HIVE_DEFAULT_PARTITION__", "%5F_HIVE_DEFAULT_PARTITION__", "null", "NULL", "None", "nan", " ",
                 "%", "=", "/", "=/%", "%5F"]


def test_run_ids_that_look_null_or_need_escaping_keep_their_rates(tmp_path):
    runs = [with_run_id(simulate_run(tmp_path / f"r{i}", tasks=5 + i, repeats=2, seed=40 + i), rid)
            for i, rid in enumerate(NULL_LIKE_IDS)]
    c = cb.campaign(export_campaign(runs, tmp_path / "s"))
    assert list(c.counts()["run_id"]) == NULL_LIKE_IDS  # none lost, none read as a null
    assert_rates_match(c.rates(), runs)
    assert all(c.rates()[rid]["pass@1"].n > 0 for rid in NULL_LIKE_IDS)


def test_hand_computed_counts(tmp_path):
    # k = 3.  t1: S A S; t2: A A A; t3: E S S (attempt 1 ineligible); t4: attempts 2, 3 only; t5: S S S, and
    # an attempt 4 above its planned repeats (an anomaly: not in the store)
    doc = manifest([("t1", 3), ("t2", 3), ("t3", 3), ("t4", 3), ("t5", 3)])
    codes = {"t1": "SAS", "t2": "AAA", "t3": "ESS", "t5": "SSSS"}
    records = [record(t, i + 1, c) for t, seq in codes.items() for i, c in enumerate(seq)]
    records += [record("t4", 2), record("t4", 3)]
    run_dir = write_run(tmp_path / "r", doc, records)
    store = export_campaign([run_dir], tmp_path / "s")
    counts = cb.campaign(store).counts().iloc[0].to_dict()
    # pass@1: t1, t2, t5 in the denominator, t1 and t5 succeeded; k-eligible: t1, t2, t5;
    # at least one success: t1, t5; all three: t5
    assert {k: counts[k] for k in ("k", "tasks_planned", "pass1_n", "pass1_successes", "passk_n",
                                   "passk_successes", "passhatk_successes")} == {
        "k": 3, "tasks_planned": 5, "pass1_n": 3, "pass1_successes": 2, "passk_n": 3, "passk_successes": 2,
        "passhatk_successes": 1}
    rate = cb.campaign(store).rates()["test-run"]["pass^k"]
    assert (rate.successes, rate.n, rate.coverage) == (1, 3, 3 / 5)
    assert rate.metric == "pass^3"


def test_one_expression_compiles_for_both_engines(store):
    import ibis
    assert ibis.pyspark.name == "pyspark"  # loading the backend registers its compiler's options; no session starts

    c = cb.campaign(store)
    expr = run_counts(*c.tables())
    duck = ibis.to_sql(expr, dialect="duckdb")
    spark = ibis.to_sql(expr, dialect="pyspark")
    assert "GROUP BY" in duck and "GROUP BY" in spark and duck != spark


def test_run_from_the_store_is_the_json_run(runs, store):
    c = cb.campaign(store)
    for path in runs:
        run = cb.load_run(path)
        back = c.run(run.run_id)
        assert dumps(cb.compute_metrics(back)) == dumps(cb.compute_metrics(run))
        assert c.runs.set_index("run_id").loc[run.run_id, "metrics_sha256"] == metrics_sha256(run)


def test_board_from_the_store_is_the_board_of_the_directories(runs, store):
    c = cb.campaign(store)
    assert dumps(c.board(resamples=200, seed=3)) == dumps(cb.board(runs, resamples=200, seed=3))
    chosen = [cb.load_run(runs[i]).run_id for i in (2, 0)]
    assert dumps(c.board(chosen, metric="pass@k")) == dumps(cb.board([runs[2], runs[0]], metric="pass@k"))
    with pytest.raises(ValueError, match="at least 2 runs, got 0"):  # an empty choice is no runs, not all
        c.board([])


def test_unknown_engine_and_store(tmp_path, store):
    with pytest.raises(ValueError, match="engine"):
        cb.campaign(store, engine="polars")
    with pytest.raises(cb.InvalidRunError) as exc:
        cb.campaign(tmp_path)
    assert exc.value.rule == "campaign-not-a-store"
    with pytest.raises(cb.InvalidRunError) as exc:
        cb.campaign(store).run("missing")
    assert exc.value.rule == "campaign-unknown-run"


def test_latest_run_per_model_by_created_at(tmp_path):
    # (run_id, model, created_at) in store order: times compared as instants, offsets honoured; an undated run is
    # older than a dated one; equal instants go to the later run in the store; no model is a model of its own
    stamps = [("a-old", "m-a", "2026-09-01T10:00:00Z"), ("b-undated", "m-b", None),
              ("a-new", "m-a", "2026-09-02T01:00:00+02:00"),  # 2026-09-01T23:00Z: later than a-old
              ("b-dated", "m-b", "2026-01-01T00:00:00Z"), ("a-late-offset", "m-a", "2026-09-02T08:00:00+09:00"),
              ("none-1", None, "2026-10-01T00:00:00Z"), ("a-tie", "m-a", "2026-09-01T23:00:00Z"),
              ("none-2", None, "not a date"), ("c-only", "m-c", "garbage")]
    runs = []
    for i, (rid, model, created) in enumerate(stamps):
        doc = manifest([("t1", 1)])
        doc.update(run_id=rid, created_at=created, config={"model": model} if model else {})
        runs.append(write_run(tmp_path / f"r{i}", doc, [record("t1", 1, "S")]))
    c = cb.campaign(export_campaign(runs, tmp_path / "s"))
    # m-a: a-new and a-tie are the same instant (a-late-offset is 2026-09-01T23:00Z too, earlier in the store)
    assert c.latest() == ["b-dated", "none-1", "a-tie", "c-only"]
    assert c.latest(by="suite_name") == ["none-1"]  # one suite: the latest run of the store
    assert c.latest("status") == c.latest(by="suite_name")
    with pytest.raises(ValueError, match="column of runs.parquet"):
        c.latest(by="provider")
    board = c.board(c.latest(), resamples=0)
    assert [r["run_id"] for r in board["runs"]] == ["b-dated", "none-1", "a-tie", "c-only"]


def test_an_open_campaign_follows_an_append_and_a_replace(tmp_path):
    def run(i: int, code: str, rid: str) -> Path:
        return write_run(tmp_path / f"r{i}", {**manifest([("t1", 1), ("t2", 1)]), "run_id": rid},
                         [record("t1", 1, code), record("t2", 1, "S")])

    store = export_campaign([run(0, "S", "first")], tmp_path / "s")
    c = cb.campaign(store)
    assert c.run_ids == ["first"] and c.rates()["first"]["pass@1"].successes == 2
    export_campaign([run(1, "A", "second")], store, append=True)
    # the run list, runs.parquet and the counts all come from the new store, in its order
    assert c.run_ids == ["first", "second"] and list(c.runs["run_id"]) == ["first", "second"]
    assert list(c.counts()["run_id"]) == ["first", "second"]
    assert c.rates()["second"]["pass@1"].successes == 1
    assert list(c.metrics()["run_id"].unique()) == ["first", "second"] and c.latest() == ["second"]
    export_campaign([run(2, "A", "first")], store, append=True, replace=True)
    assert c.rates()["first"]["pass@1"].successes == 1  # the replaced run's new attempts
    assert c.run("first").records["success"].sum() == 1
