"""The campaign store's writer and reader (spec section 14): schema from the field tables, hive paths, atomicity."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

import capbench_nb as cb
from capbench_nb.errors import InvalidRunError
from capbench_nb.format import TELEMETRY
from capbench_nb.format.fields import RECORD_TELEMETRY
from capbench_nb.io.atomic import dumps
from capbench_nb.records.campaign import schema, store as store_module
from capbench_nb.records.campaign.reader import open_store, read_run
from capbench_nb.records.campaign.store import write_store
from capbench_nb.simulation.writer import simulate_run
from conftest import SAMPLE_RUN, manifest, record, tree_hashes, write_run

HOSTILE_IDS = ["a/b", "../up", "x=y%z", "päss #1?", "tab\there", "*[{^}]:\\'\"", "007", ".",
               # values an engine could read as a null: Hive's own null name, null's spellings, the empty-looking
               "__HIVE_DEFAULT_PARTITION__", "%5F_HIVE_DEFAULT_PARTITION__", "null", "NULL", "None", "nan", " ",
               "%", "=", "/", "%5F"]


def _normalised(frame: pd.DataFrame) -> pd.DataFrame:
    """Categoricals reduced to the values present (a filtered view keeps its parent's categories)."""
    frame = frame.reset_index(drop=True).copy()
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].cat.remove_unused_categories()
    return frame


def _renamed(src: Path, dst: Path, run_id: str) -> Path:
    """A copy of a run directory (manifest and results only) under another run_id."""
    doc = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    doc["run_id"] = run_id
    dst.mkdir(parents=True)
    (dst / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    (dst / "results.jsonl").write_bytes((src / "results.jsonl").read_bytes())
    return dst


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("sim")
    return simulate_run(base / "r", tasks=40, repeats=4, seed=11, missing_attempts=5, empty_tasks=2,
                        extra_attempts=3, short_tasks=3)


def test_attempt_columns_and_types_come_from_the_field_tables():
    names = schema.ATTEMPTS_SCHEMA.names
    assert names[:9] == ["task_id", "attempt", "success", "agent_eligible", "failure_class", "failure_stage",
                         "quality_score", "cost", "cost_source"]
    telemetry = names[9:9 + len(TELEMETRY)]
    assert telemetry == [t.name for t in TELEMETRY]
    kinds = {"count": pa.int64(), "ms": pa.float64(), "bool": pa.bool_()}
    for t in TELEMETRY:
        assert schema.ATTEMPTS_SCHEMA.field(t.name).type == kinds[t.kind]
        assert schema.ATTEMPTS_SCHEMA.field(t.name).nullable
    assert names[9 + len(TELEMETRY):] == ["evidence", "artifact_dir", "line", "telemetry_source"]
    assert schema.ATTEMPTS_SCHEMA.field("evidence").type == pa.list_(pa.string())
    assert len(RECORD_TELEMETRY) == len(TELEMETRY)


def test_hive_escape_matches_hive_and_decodes_back():
    assert schema.hive_escape("a/b=c%d") == "a%2Fb%3Dc%25d"
    assert schema.hive_escape("päss é") == "päss é"  # Hive leaves non-ASCII and spaces as they are
    assert schema.hive_escape("\x00\x1f\x7f") == "%00%1F%7F"
    for rid in HOSTILE_IDS:
        name = schema.partition_name(rid)
        assert "/" not in name and name not in (".", "..")
        assert unquote(name.split("=", 1)[1]) == rid


@given(st.text(min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_run_id_gives_one_safe_path_segment(run_id):
    name = schema.partition_name(run_id)
    assert "/" not in name and "\x00" not in name
    assert unquote(name.split("=", 1)[1]) == run_id


def test_a_run_read_back_is_the_run_of_its_directory(sim, tmp_path):
    run = cb.load_run(sim)
    out = write_store(tmp_path / "store", [(run, "sha256:" + "0" * 64)])
    back = read_run(out, run.run_id)
    pd.testing.assert_frame_equal(_normalised(run.attempts), _normalised(back.records))
    pd.testing.assert_frame_equal(run.anomalies, back.anomalies)
    pd.testing.assert_frame_equal(run.plan, back.plan)
    assert (back.manifest, back.k, back.hashes) == (run.manifest, run.k, run.hashes)
    assert len(run.anomalies) > 0 and back.records["anomaly"].isna().all()
    # every metric of metrics.json: the same bytes from the store
    assert dumps(cb.compute_metrics(back)) == dumps(cb.compute_metrics(run))


def test_the_sample_run_round_trips_with_evidence_and_nulls(tmp_path):
    run = cb.load_run(SAMPLE_RUN)
    back = read_run(write_store(tmp_path / "s", [(run, "sha256:x")]), run.run_id)
    table = pq.read_table(tmp_path / "s" / "attempts" / schema.partition_name(run.run_id) / "part-0.parquet")
    assert table.schema.equals(schema.ATTEMPTS_SCHEMA)
    assert table.num_rows == len(run.attempts)
    # a null telemetry value stays null (never 0)
    for name in ("tool_calls", "task_wall_ms", "recovery_succeeded"):
        assert table.column(name).null_count == int(run.attempts[name].isna().sum())
    lists = table.column("evidence").to_pylist()
    assert lists == [json.loads(t) for t in run.attempts["evidence"].astype(str)]
    assert dumps(cb.compute_metrics(back)) == dumps(cb.compute_metrics(run))


def test_runs_and_tasks_tables(tmp_path):
    doc = manifest([{"task_id": "t|1", "repeats": 2, "app": "mail", "tier": 3}, ("t2", 3)], k=2)
    doc["suite"]["lock"] = "sha256:" + "a" * 64
    run_dir = write_run(tmp_path / "r", doc, [record("t|1", 1), record("t|1", 2, "A"), record("t2", 1, "E")])
    out = write_store(tmp_path / "s", [(cb.load_run(run_dir), "sha256:abc")])
    runs = pq.read_table(out / "runs.parquet").to_pylist()
    assert len(runs) == 1
    row = runs[0]
    assert {k: row[k] for k in ("run_id", "suite_name", "suite_version", "lock", "k", "status", "created_at",
                                 "model", "tasks_planned", "metrics_sha256")} == {
        "run_id": "test-run", "suite_name": "unit", "suite_version": "1", "lock": "sha256:" + "a" * 64, "k": 2,
        "status": "completed", "created_at": "2026-11-28T10:00:00Z", "model": "m", "tasks_planned": 2,
        "metrics_sha256": "sha256:abc"}
    assert json.loads(row["config"]) == {"model": "m", "judge": True}
    tasks = pq.read_table(out / "tasks.parquet").to_pylist()
    assert [(t["task_id"], t["position"], t["planned_repeats"]) for t in tasks] == [("t|1", 0, 2), ("t2", 1, 3)]
    assert [dict(t["labels"]) for t in tasks] == [{"app": "mail", "tier": "3"}, {}]


def test_hostile_run_ids_are_stored_and_read_back(sim, tmp_path):
    runs = [cb.load_run(_renamed(sim, tmp_path / f"r{i}", rid)) for i, rid in enumerate(HOSTILE_IDS)]
    out = write_store(tmp_path / "store", [(r, "sha256:x") for r in runs])
    assert sorted(os.listdir(out / "attempts")) == sorted(schema.partition_name(r) for r in HOSTILE_IDS)
    assert open_store(out).run_ids == HOSTILE_IDS
    for rid in HOSTILE_IDS:
        assert read_run(out, rid).run_id == rid
    # read as the Hive-partitioned dataset it is, by pyarrow itself; pyarrow alone decodes a value before it
    # compares it with Hive's null name, so that one run_id is a null there (DuckDB and Spark read it back)
    dataset = pq.read_table(out / "attempts", partitioning="hive")
    found = [None if rid == schema.HIVE_NULL_PARTITION else rid for rid in HOSTILE_IDS]
    assert set(dataset.column("run_id").to_pylist()) == set(found) and len(found) == len(set(found))


def test_hives_null_name_is_escaped_so_duckdb_reads_the_run_id_back(sim, tmp_path):
    assert schema.partition_name("__HIVE_DEFAULT_PARTITION__") == "run_id=%5F_HIVE_DEFAULT_PARTITION__"
    assert schema.partition_name("__HIVE_DEFAULT_PARTITION__x") == "run_id=__HIVE_DEFAULT_PARTITION__x"
    run = cb.load_run(_renamed(sim, tmp_path / "r", "__HIVE_DEFAULT_PARTITION__"))
    out = write_store(tmp_path / "store", [(run, "sha256:x")])
    counts = cb.campaign(out).counts()
    assert list(counts["run_id"]) == ["__HIVE_DEFAULT_PARTITION__"]
    assert counts.loc[0, "pass1_n"] == cb.compute_metrics(run)["metrics"]["pass@1"]["n"] > 0


def test_a_store_written_before_the_escape_is_read_and_renamed_by_an_append(sim, tmp_path):
    run = cb.load_run(_renamed(sim, tmp_path / "r", "__HIVE_DEFAULT_PARTITION__"))
    out = write_store(tmp_path / "store", [(run, "sha256:x")])
    attempts = out / "attempts"
    (attempts / "run_id=%5F_HIVE_DEFAULT_PARTITION__").rename(attempts / "run_id=__HIVE_DEFAULT_PARTITION__")
    assert dumps(cb.compute_metrics(read_run(out, run.run_id))) == dumps(cb.compute_metrics(run))
    other = cb.load_run(_renamed(sim, tmp_path / "o", "other"))
    write_store(out, [(other, "sha256:y")], append=True)
    assert sorted(os.listdir(attempts)) == ["run_id=%5F_HIVE_DEFAULT_PARTITION__", "run_id=other"]
    assert list(cb.campaign(out).counts()["run_id"]) == ["__HIVE_DEFAULT_PARTITION__", "other"]


def test_append_replace_and_refusals(sim, tmp_path):
    a = cb.load_run(_renamed(sim, tmp_path / "a", "run-a"))
    b = cb.load_run(_renamed(sim, tmp_path / "b", "run-b"))
    out = tmp_path / "store"
    write_store(out, [(a, "sha256:1")])
    with pytest.raises(InvalidRunError) as exc:
        write_store(out, [(b, "sha256:2")])
    assert exc.value.rule == "campaign-exists"
    write_store(out, [(b, "sha256:2")], append=True)
    assert open_store(out).run_ids == ["run-a", "run-b"]
    before = tree_hashes(out)
    with pytest.raises(InvalidRunError) as exc:
        write_store(out, [(a, "sha256:3")], append=True)
    assert exc.value.rule == "campaign-run-exists"
    assert tree_hashes(out) == before
    write_store(out, [(a, "sha256:3")], append=True, replace=True)
    store = open_store(out)
    assert store.run_ids == ["run-a", "run-b"]
    assert list(store.runs["metrics_sha256"]) == ["sha256:3", "sha256:2"]
    with pytest.raises(InvalidRunError) as exc:
        write_store(tmp_path / "s2", [(a, "x"), (a, "y")])
    assert exc.value.rule == "campaign-duplicate-run"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InvalidRunError) as exc:
        write_store(tmp_path / "other", [(a, "x")])
    assert exc.value.rule == "campaign-not-a-store"
    long_run = cb.load_run(_renamed(sim, tmp_path / "long", "/" * 90))
    with pytest.raises(InvalidRunError) as exc:
        write_store(tmp_path / "s3", [(long_run, "x")])
    assert exc.value.rule == "campaign-run-id-too-long"


def test_an_interrupted_export_leaves_the_store_as_it_was(sim, tmp_path, monkeypatch):
    a = cb.load_run(_renamed(sim, tmp_path / "a", "run-a"))
    b = cb.load_run(_renamed(sim, tmp_path / "b", "run-b"))
    c = cb.load_run(_renamed(sim, tmp_path / "c", "run-c"))
    out = write_store(tmp_path / "store", [(a, "sha256:1")])
    before = tree_hashes(out)
    real = store_module.attempts_table
    calls = []

    def interrupted(run):
        calls.append(run.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt  # a signal in the middle of the second run
        return real(run)

    monkeypatch.setattr(store_module, "attempts_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_store(out, [(b, "sha256:2"), (c, "sha256:3")], append=True)
    assert calls == ["run-b", "run-c"]
    assert tree_hashes(out) == before
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []  # no staging folder left
    monkeypatch.setattr(store_module, "attempts_table", real)
    # a kill (no clean-up at all) leaves a staging folder beside the store: the next export removes it
    staging = out.parent / f"{store_module.publish.sibling_prefix(out)}killed{store_module.publish.PARTIAL}"
    staging.mkdir()
    write_store(out, [(b, "sha256:2")], append=True)
    assert not staging.exists()
    assert open_store(out).run_ids == ["run-a", "run-b"]


def test_a_run_without_counted_attempts(tmp_path):
    run_dir = write_run(tmp_path / "r", manifest([("t1", 2)]), [record("zz", 1)])
    run = cb.load_run(run_dir)
    back = read_run(write_store(tmp_path / "s", [(run, "x")]), run.run_id)
    assert len(back.records) == 0 and len(back.anomalies) == 1
    assert dumps(cb.compute_metrics(back)) == dumps(cb.compute_metrics(run))


def test_a_partition_of_many_row_groups_reads_the_same(tmp_path):
    from capbench_nb.records.campaign.reader import read_records

    run = cb.load_run(SAMPLE_RUN)
    table = store_module.attempts_table(run)
    pq.write_table(table, tmp_path / "one.parquet")
    pq.write_table(table, tmp_path / "many.parquet", row_group_size=4)  # several dictionaries per column
    assert pq.ParquetFile(tmp_path / "many.parquet").metadata.num_row_groups > 1
    pd.testing.assert_frame_equal(read_records(tmp_path / "one.parquet"), read_records(tmp_path / "many.parquet"))
    pd.testing.assert_frame_equal(_normalised(read_records(tmp_path / "many.parquet")), _normalised(run.attempts))
