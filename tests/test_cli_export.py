"""``capbench-nb export`` and ``capbench-nb board --campaign`` (spec section 14)."""

from __future__ import annotations

import json
from pathlib import Path

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
