"""Writing an imported run (capbench_nb.records.importers.common.write_imported_run): ``import --force``
never loses the run, and a kill at its commit point is repaired by the next command on the directory."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLI_SCRIPT, TESTS, cli, tree_hashes

TAU = TESTS / "data" / "taubench" / "gpt-4o-airline.trials.jsonl"


@pytest.fixture(scope="module")
def two_imports(tmp_path_factory) -> dict:
    """The same trials imported as two runs that differ (another run id), with their trees."""
    root = tmp_path_factory.mktemp("imports")
    old, new = root / "old", root / "new"
    assert cli("import", "tau-bench", TAU, "--out", old, "--run-id", "old")[0] == 0
    assert cli("import", "tau-bench", TAU, "--out", new, "--run-id", "new")[0] == 0
    return {"old": old, "new": new, "old_tree": tree_hashes(old), "new_tree": tree_hashes(new)}


def _beside(run: Path) -> list[str]:
    return sorted(p.name for p in run.parent.iterdir() if p.name != run.name)


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_a_kill_at_the_commit_point_of_import_force_loses_nothing(two_imports, tmp_path, mode):
    """SIGKILL right after the folder exchange: the new run is in place and the old one waits in a staging
    folder, removed by the next import.  The exchange unsupported, SIGKILL between the two renames: RUN is
    missing and the old run waits in a ``.previous`` folder, which any command on RUN puts back first."""
    run = tmp_path / "work" / "run"
    run.parent.mkdir()
    shutil.copytree(two_imports["old"], run)
    env = dict(os.environ, CAPBENCH_TEST_KILL=f"{mode}:{run}")
    proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT, "import", "tau-bench", str(TAU), "--out", str(run),
                           "--force", "--run-id", "new"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    left = {name.rsplit(".", 1)[1]: run.parent / name for name in _beside(run)}
    assert all(name.startswith(".run.capbench-import-") for name in _beside(run)), _beside(run)
    if mode == "exchange":
        assert sorted(left) == ["partial"]
        assert tree_hashes(run) == two_imports["new_tree"] and tree_hashes(left["partial"]) == two_imports["old_tree"]
    else:
        assert sorted(left) == ["partial", "previous"] and not os.path.lexists(run)
        assert tree_hashes(left["previous"]) == two_imports["old_tree"]
        rc, _, err = cli("metrics", run, "--out", tmp_path / "metrics")
        assert rc == 0, err
        assert tree_hashes(run) == two_imports["old_tree"]
    rc, _, err = cli("import", "tau-bench", TAU, "--out", run, "--force", "--run-id", "old")
    assert rc == 0, err
    assert tree_hashes(run) == two_imports["old_tree"] and _beside(run) == []


def test_leftovers_of_the_earlier_two_renames_are_restored(two_imports, tmp_path):
    """What a kill left with the names the importer used before (RUN missing, ``.RUN.replaced-*`` holding
    the old run, ``.RUN.import-*`` the new one): the next import puts the old run back, then replaces it."""
    run = tmp_path / "run"
    shutil.copytree(two_imports["old"], tmp_path / ".run.replaced-k2j4")
    shutil.copytree(two_imports["new"], tmp_path / ".run.import-9xq1")
    rc, _, err = cli("import", "tau-bench", TAU, "--out", run, "--run-id", "new")
    assert rc == 2 and "[rule: output-exists]" in err  # the old run is back: not replaced without --force
    assert tree_hashes(run) == two_imports["old_tree"] and _beside(run) == []
    assert cli("import", "tau-bench", TAU, "--out", run, "--run-id", "new", "--force")[0] == 0
    assert tree_hashes(run) == two_imports["new_tree"] and _beside(run) == []


@pytest.mark.parametrize("command", ["board", "verify-board"])
def test_board_commands_put_back_every_run_moved_aside(two_imports, tmp_path, command):
    """RUN missing and its old run in a ``.previous`` folder, for the second and third runs of a board: both are
    put back before the command does anything else (here it then stops on a bad option / a missing board)."""
    runs = [tmp_path / f"run{i}" for i in range(3)]
    shutil.copytree(two_imports["old"], runs[0])
    for run in runs[1:]:
        shutil.copytree(two_imports["new"], tmp_path / f".{run.name}.capbench-import-k2j4.previous")
    out = tmp_path / "out"
    argv = ["board", *runs, "--out", out, "--resamples", "-1"] if command == "board" else ["verify-board", out, *runs]
    rc, _, err = cli(*argv)
    assert rc == 2 and f"[rule: {'board-options' if command == 'board' else 'board-missing'}]" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run0", "run1", "run2"]  # nothing left beside
    assert [tree_hashes(run) for run in runs] == [two_imports["old_tree"]] + [two_imports["new_tree"]] * 2


def test_an_input_inside_the_run_to_replace_is_refused(two_imports, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(two_imports["old"], run)
    shutil.copy(TAU, run / "trials.jsonl")
    before = tree_hashes(run)
    rc, out, err = cli("import", "tau-bench", run / "trials.jsonl", "--out", run, "--force")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"capbench-nb: error: {run / 'trials.jsonl'}: ") and "[rule: import-source-in-output]" in err
    assert tree_hashes(run) == before and _beside(run) == []
    link = tmp_path / "link"  # the same file reached through a symlink to the run
    link.symlink_to(run)
    assert cli("import", "tau-bench", link / "trials.jsonl", "--out", run, "--force")[0] == 2
    assert tree_hashes(run) == before
