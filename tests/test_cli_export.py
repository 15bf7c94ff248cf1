"""``capbench-nb export`` and ``capbench-nb board --campaign`` (spec section 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.simulation.writer import simulate_run
from conftest import check_error, cli, tree_hashes, with_run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("cli-export")
    return [with_run_id(simulate_run(base / "r1", tasks=20, repeats=3, seed=5), "run <one>/1"),
            with_run_id(simulate_run(base / "r2", tasks=20, repeats=3, seed=6, missing_attempts=3), "run|two"),
            with_run_id(simulate_run(base / "r3", tasks=18, repeats=4, seed=7), "three")]


def test_export_then_board_from_the_store_equals_the_board_of_the_directories(runs, tmp_path):
    store = tmp_path / "store"
    rc, out, err = cli("export", runs[0], runs[1], "--out", store)
    assert (rc, err) == (0, "") and out.strip() == str(store)
    rc, _, err = cli("export", runs[2], "--out", store, "--append")
    assert (rc, err) == (0, "")
    assert cb.campaign(store).run_ids == ["run <one>/1", "run|two", "three"]
    rc, out, err = cli("board", "--campaign", store, "--out", tmp_path / "bc", "--resamples", "100")
    assert rc == 0, err
    direct = cb.board(runs, resamples=100)
    from capbench_nb.io.atomic import dumps

    assert (tmp_path / "bc" / "board.json").read_text(encoding="utf-8") == dumps(direct)
    rc, _, err = cli("board", "--campaign", store, "three", "run|two", "--out", tmp_path / "b2", "--metric", "pass^k")
    assert rc == 0, err
    assert json.loads((tmp_path / "b2" / "board.json").read_text())["runs"][0]["run_id"] == "three"


def test_export_refusals_are_one_line_and_leave_the_store(runs, tmp_path):
    store = tmp_path / "store"
    assert cli("export", runs[0], "--out", store)[0] == 0
    before = tree_hashes(store)
    rc, out, err = cli("export", runs[1], "--out", store)
    assert rc == 2 and out == ""
    check_error(err, rule="campaign-exists")
    rc, _, err = cli("export", runs[0], "--out", store, "--append")
    assert rc == 2
    check_error(err, rule="campaign-run-exists")
    assert tree_hashes(store) == before
    rc, _, err = cli("export", runs[0], "--out", store, "--append", "--replace")
    assert rc == 0, err
    rc, _, err = cli("export", tmp_path / "missing", "--out", tmp_path / "s2")
    assert rc == 2 and not (tmp_path / "s2").exists()
    check_error(err, rule="run-dir")


def test_board_campaign_errors(runs, tmp_path):
    store = tmp_path / "store"
    assert cli("export", *runs, "--out", store)[0] == 0
    rc, _, err = cli("board", "--campaign", store, "three", "nope", "--out", tmp_path / "b")
    assert rc == 2
    check_error(err, rule="campaign-unknown-run")
    rc, _, err = cli("board", "--campaign", store, "three", "--out", tmp_path / "b")
    assert rc == 2
    check_error(err, rule="board-options")
    rc, _, err = cli("board", "--campaign", tmp_path, "--out", tmp_path / "b")
    assert rc == 2
    check_error(err, rule="campaign-not-a-store")
    assert not (tmp_path / "b").exists()


def test_export_format_eee(runs, tmp_path):
    rc, out, err = cli("export", runs[0], "--format", "eee", "--out", tmp_path / "eee")
    assert (rc, err) == (0, "")
    aggregate = Path(out.strip())
    assert aggregate.suffix == ".json" and aggregate.with_name(aggregate.stem + "_samples.jsonl").is_file()
    doc = json.loads(aggregate.read_text(encoding="utf-8"))
    assert doc["source_metadata"]["additional_details"]["run_id"] == "run <one>/1"
    rc, _, err = cli("export", runs[0], runs[1], "--format", "eee", "--out", tmp_path / "eee2")
    assert rc == 2
    check_error(err, rule="export-options")


def test_a_damaged_store_is_named_one_line_exit_2_and_stays_as_it_was(runs, tmp_path):
    import pyarrow.parquet as pq

    from capbench_nb.records.campaign.schema import SCHEMA_KEY, partition_name

    store = tmp_path / "store"
    assert cli("export", *runs, "--out", store)[0] == 0
    # a corrupt part file: board --campaign and cb.campaign name the file
    part = store / "attempts" / partition_name("run|two") / "part-0.parquet"
    part.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])
    before = tree_hashes(store)
    rc, _, err = cli("board", "--campaign", store, "--out", tmp_path / "b")
    assert rc == 2 and not (tmp_path / "b").exists()
    check_error(err, rule="campaign-corrupt")
    assert partition_name("run|two") in err
    with pytest.raises(cb.InvalidRunError) as info:
        cb.campaign(store).metrics()
    assert info.value.rule == "campaign-corrupt" and str(part) in str(info.value)
    # a store of another layout version: refused by the readers and by export --append, never rewritten
    runs_file = store / "runs.parquet"
    table = pq.read_table(runs_file)
    pq.write_table(table.replace_schema_metadata({SCHEMA_KEY: b"capbench.campaign/9"}), runs_file)
    before = tree_hashes(store)
    for argv in (("board", "--campaign", store, "--out", tmp_path / "b"),
                 ("export", runs[0], "--out", store, "--append", "--replace")):
        rc, _, err = cli(*argv)
        assert rc == 2
        check_error(err, rule="campaign-schema")
        assert "capbench.campaign/9" in err and "capbench.campaign/1" in err
    with pytest.raises(cb.InvalidRunError, match="capbench.campaign/9"):
        cb.campaign(store)
    assert tree_hashes(store) == before


def test_a_run_that_fails_validation_writes_nothing_and_out_must_be_a_store(runs, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(runs[2], bad)
    with open(bad / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"task_id": "nope", "attempt": "one"}\n')
    store = tmp_path / "store"
    assert cli("export", runs[0], "--out", store)[0] == 0
    before = tree_hashes(store)
    rc, _, err = cli("export", runs[1], bad, "--out", store, "--append")
    assert rc == 2 and tree_hashes(store) == before  # not even runs[1], which is valid
    check_error(err)
    assert "results.jsonl" in err
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    rc, _, err = cli("export", runs[0], "--out", tmp_path / "notes")
    assert rc == 2 and (tmp_path / "notes" / "todo.txt").read_text() == "keep me"
    check_error(err, rule="campaign-not-a-store")


def test_engine_spark_without_pyspark_says_how_to_install_it(runs, tmp_path, monkeypatch):
    import sys

    store = tmp_path / "store"
    assert cli("export", runs[0], "--out", store)[0] == 0
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"pip install capbench-nb\[spark\]"):
        cb.campaign(store, engine="spark")


def test_runs_with_a_selector_keep_selected_at_k_in_the_store(tmp_path):
    from capbench_nb.io.atomic import dumps
    from capbench_nb.metrics.document import compute_metrics
    from conftest import selection_board

    paths = selection_board(tmp_path / "runs", "ABC")  # A and B with selection.jsonl, C without
    assert cli("export", *paths, "--out", tmp_path / "store")[0] == 0
    c = cb.campaign(tmp_path / "store")
    for path in paths:
        run = cb.load_run(path)
        back = c.run(run.run_id)
        assert (back.selection is None) == (run.selection is None)
        doc = compute_metrics(back)
        assert dumps(doc) == dumps(compute_metrics(run))  # selected@k and its inputs' hashes included
        assert (doc.get("selection") is not None) == (run.selection is not None)
        if run.selection is not None:
            pd.testing.assert_frame_equal(back.selection.lines, run.selection.lines)
    assert dumps(c.board(resamples=50)) == dumps(cb.board(paths, resamples=50))
