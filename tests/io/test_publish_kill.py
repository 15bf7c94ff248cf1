"""Publishing a report is atomic: a report killed with SIGKILL leaves the previous outputs or complete new
ones, never a half-written metrics.json, and no kernel running; the next report cleans up
(``io.publish`` through ``capbench-nb report``)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLI_SCRIPT, LONG, TINY_REPORT_NOTEBOOK, alive, cli, descendants
from capbench_nb.outputs.report.run import OUTPUT_FILES

# =========================================================================== kill mid-report

def _report_cmd(run: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "capbench_nb.cli", "report", str(run), "--out", str(out), "--no-progress"]


def _outputs(out: Path) -> dict:
    return {name: (out / name).read_bytes() for name in OUTPUT_FILES if (out / name).exists()}


def _staging(out: Path) -> list[str]:
    """Staging folders of reports into ``out``: beside it (``.OUT.capbench-*``) or, shared, inside it."""
    beside = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.capbench-")]
    inside = [p for p in out.iterdir() if p.name.startswith(".capbench-report-")] if out.is_dir() else []
    return sorted(str(p.relative_to(out.parent)) for p in beside + inside)


def _two_runs(root: Path) -> tuple[Path, Path]:
    old = root / "run-old"
    new = root / "run-new"
    for run, seed in ((old, 1), (new, 2)):
        rc, _, err = cli("simulate", "--tasks", "12", "--repeats", "3", "--seed", str(seed), "--out", run)
        assert rc == 0, err
    return old, new


@pytest.fixture(scope="module")
def killed_reports(tmp_path_factory):
    """Over complete outputs of run-old: ``capbench-nb report`` of run-new killed (SIGKILL) at random moments;
    then, in another copy, a report killed between two renames of the publishing step, and a normal report
    over what that left."""
    from capbench_nb.outputs.report.run import build_report

    root = tmp_path_factory.mktemp("kill")
    old, new = _two_runs(root)
    notebook = root / "tiny.ipynb"
    notebook.write_text(json.dumps(TINY_REPORT_NOTEBOOK), encoding="utf-8")
    out = root / "out"
    build_report(old, out, progress=False, notebook=notebook)
    previous = _outputs(out)
    assert sorted(previous) == sorted(OUTPUT_FILES)
    out_previous = root / "out-previous"
    shutil.copytree(out, out_previous)

    rng = random.Random(int(os.environ.get("CAPBENCH_FUZZ_SEED", "8")))
    observations = []
    # A report takes ~5-10 s here: loading, kernel start, the cells, nbconvert, publishing.  By default one kill
    # while the kernel runs and one later (nbconvert or publishing, or after the end: then the new report is
    # complete); CAPBENCH_FUZZ=long adds ten more anywhere.
    windows = [(1.0, 3.5), (3.5, 7.0)] + ([(0.2, 9.0)] * 10 if LONG else [])
    for low, high in windows:
        delay = rng.uniform(low, high)
        child = subprocess.Popen(_report_cmd(new, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        family = descendants(child.pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(alive(p) for p in family):
            time.sleep(0.2)
        orphans = [p for p in family if alive(p)]
        for p in orphans:  # processes this test started (through the report): end them by pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        observations.append({"delay": delay, "outputs": _outputs(out), "staging": _staging(out), "orphans": orphans,
                             "family": sorted(family),
                             "staging_files": {s: sorted(q.name for q in (out.parent / s).iterdir())
                                               for s in _staging(out)}})

    publish, recovery = {}, {}
    for mode in ("exchange", "renames"):
        target = root / f"publish-out-{mode}"
        shutil.copytree(out_previous, target)
        env = dict(os.environ, CAPBENCH_TEST_NOTEBOOK=str(notebook), CAPBENCH_TEST_KILL=f"{mode}:{target}")
        proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT, "report", str(new), "--out", str(target),
                               "--no-progress"], env=env, check=False, capture_output=True, text=True, timeout=300)
        publish[mode] = {"rc": proc.returncode, "stderr": proc.stderr, "outputs": _outputs(target),
                         "staging": _staging(target), "out": target}
        try:
            build_report(new, target, progress=False, notebook=notebook)
            recovery[mode] = {"error": None}
        except Exception as exc:  # noqa: BLE001 - reported by test_report_after_a_kill_succeeds
            recovery[mode] = {"error": repr(exc)}
        recovery[mode].update(outputs=_outputs(target), staging=_staging(target), out=target)
    return {"old": old, "new": new, "out": out, "previous": previous,
            "observations": observations, "publish": publish, "recovery": recovery}


def _classify(outputs: dict, previous: dict, new_run: Path, out: Path) -> str:
    """'previous', 'new' (complete and verified against the new run), or a description of the mix."""
    if outputs == previous:
        return "previous"
    if not outputs:
        return "none"
    if sorted(outputs) == sorted(OUTPUT_FILES) and all(outputs[n] != previous[n] for n in ("metrics.json", "summary.md")):
        rc, _, err = cli("verify", new_run, "--out", out)
        return "new" if rc == 0 else f"new but verify fails: {err.strip()}"
    same = sorted(n for n in outputs if outputs[n] == previous.get(n))
    return f"mixed: previous {same}, changed {sorted(set(outputs) - set(same))}"


def test_killed_report_leaves_previous_or_complete_outputs(killed_reports):
    k = killed_reports
    for obs in k["observations"]:
        if "metrics.json" in obs["outputs"]:
            json.loads(obs["outputs"]["metrics.json"])  # never half-written
        state = _classify(obs["outputs"], k["previous"], k["new"], k["out"]) if obs["outputs"] != k["previous"] \
            else "previous"
        assert state in ("previous", "new"), (round(obs["delay"], 2), state)
        for files in obs["staging_files"].values():  # a leftover staging folder holds the partial files, not out/
            assert not set(files) - set(OUTPUT_FILES) - {".previous"}, files


def test_killed_report_leaves_no_kernel_running(killed_reports):
    for obs in killed_reports["observations"]:
        assert obs["orphans"] == [], f"kernel processes outlived the killed report by 15 s: {obs['orphans']}"


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_kill_at_the_commit_point_does_not_mix_two_reports(killed_reports, mode):
    """Killed right after the folder exchange: the new report, complete.  Killed between the fallback's two
    renames: no outputs (the previous ones wait in a hidden folder beside, restored by the next build)."""
    publish = killed_reports["publish"][mode]
    assert publish["rc"] == -signal.SIGKILL, publish["stderr"][-2000:]
    state = _classify(publish["outputs"], killed_reports["previous"], killed_reports["new"], publish["out"])
    assert state == {"exchange": "new", "renames": "none"}[mode], state
    if mode == "renames":
        assert [s for s in publish["staging"] if s.endswith(".previous")], publish["staging"]


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_report_after_a_kill_succeeds(killed_reports, mode):
    recovery = killed_reports["recovery"][mode]
    assert recovery["error"] is None, recovery["error"]
    assert _classify(recovery["outputs"], killed_reports["previous"], killed_reports["new"], recovery["out"]) == "new"


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_stale_staging_folders_are_removed_by_the_next_report(killed_reports, mode):
    assert killed_reports["publish"][mode]["staging"], "the killed publish left no staging folder (test premise)"
    assert killed_reports["recovery"][mode]["staging"] == []


def test_a_shared_output_directory_is_published_file_by_file(tmp_path):
    """An output directory holding other files (here the run itself) is never swapped: only the outputs change."""
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "3", "--repeats", "1", "--seed", "1", "--out", run)
    assert rc == 0, err
    before = {p.name: p.stat().st_ino for p in run.iterdir()}
    rc, _, err = cli("report", run, "--no-progress")
    assert rc == 0, err
    after = {p.name: p.stat().st_ino for p in run.iterdir()}
    assert {n: after[n] for n in before} == before  # same files, same inodes: nothing moved
    assert set(after) - set(before) == set(OUTPUT_FILES) and not _staging(run)
