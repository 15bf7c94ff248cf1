"""SIGINT and SIGTERM (capbench_nb.io.interrupts), in-process and on every command: one line
``capbench-nb: interrupted``, exit 130 or 143, the previous outputs or complete new ones, no staging
folder, no process left behind.

The commands run as real processes, each in a session of its own, and are interrupted at named
pause points (``CAPBENCH_PAUSE_AT``): the moment is known, not guessed with a timer.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLI_SCRIPT, TESTS, TINY_REPORT_NOTEBOOK, alive, cli, descendants, tree_hashes
from capbench_nb.io import interrupts

TAU_TRIALS = TESTS / "data" / "taubench" / "gpt-4o-airline.trials.jsonl"

# --------------------------------------------------------------------------- in-process


def test_sigterm_raises_terminated_once_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(interrupts.Terminated) as info:
        with interrupts.handling():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:  # a second signal while the first unwinds does not cut the clean-up short
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)
    assert interrupts.exit_code(info.value) == 143 and interrupts.signalled()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    with pytest.raises(KeyboardInterrupt) as info, interrupts.handling():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    assert type(info.value) is KeyboardInterrupt and interrupts.exit_code(info.value) == 130


def test_a_signal_in_a_critical_section_is_raised_when_it_ends():
    done = []
    with pytest.raises(interrupts.Terminated), interrupts.handling():
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
            done.append("the section finished")
        done.append("not reached")
    assert done == ["the section finished"]


def test_the_program_ignores_signals_once_its_command_returned():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        with interrupts.handling(final=True):
            pass
        assert signal.getsignal(signal.SIGTERM) == signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])


def test_a_signal_is_reported_even_when_the_command_turned_it_into_another_error(monkeypatch):
    """As when the interrupt lands inside a lock of a thread pool: ``RuntimeError: release unlocked lock``."""
    from capbench_nb import cli as cli_module

    def command(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except interrupts.Terminated:
            raise RuntimeError("release unlocked lock") from None

    monkeypatch.setattr(cli_module, "_cmd_verify", command)
    assert cli("verify", "run") == (143, "", "capbench-nb: interrupted\n")


# --------------------------------------------------------------------------- every command, both signals

def _group(leader: int) -> list[int]:
    """Live processes in the process group or session ``leader`` started."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and leader in (int(fields[2]), int(fields[3])):
                found.append(int(entry))
    return found


def interrupted(tmp: Path, argv: list, point: str, signum: int, *, to_group: bool = False,
                tiny: bool = False) -> dict:
    """``capbench-nb ARGV`` in a new session, sent ``signum`` (to it, or to its whole process group
    as a terminal's Ctrl-C is) once it waits at the pause point ``point``."""
    marker = tmp / f"paused-{point}"
    marker.unlink(missing_ok=True)
    env = dict(os.environ, **{interrupts.PAUSE_ENV: f"{point}={marker}"})
    if tiny:
        notebook = tmp / "tiny.ipynb"
        notebook.write_text(json.dumps(TINY_REPORT_NOTEBOOK), encoding="utf-8")
        env["CAPBENCH_TEST_NOTEBOOK"] = str(notebook)
    head = [sys.executable, "-c", CLI_SCRIPT] if tiny else [sys.executable, "-m", "capbench_nb.cli"]
    proc = subprocess.Popen([*head, *map(str, argv)], env=env, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists(), f"never reached {point}: {proc.poll()} {proc.stderr.read() if proc.poll() else ''}"
        family = descendants(proc.pid)
        (os.killpg if to_group else os.kill)(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
        time.sleep(0.05)
        left = sorted({p for p in family if alive(p)} | set(_group(proc.pid)))
    finally:
        for pid in {p for p in family if alive(p)} | set(_group(proc.pid)) | {proc.pid}:
            with contextlib.suppress(ProcessLookupError):  # processes this test started: end them by pid
                os.kill(pid, signal.SIGKILL)
        proc.wait()
    return {"rc": proc.returncode, "stdout": out, "stderr": err, "family": family, "left": left}


def _hidden(directory: Path) -> list[str]:
    """Hidden entries (staging and temporary folders or files) in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def _check(result: dict, signum: int) -> None:
    assert result["stderr"] == "capbench-nb: interrupted\n", result["stderr"][-3000:]
    assert result["stdout"] == ""
    assert result["rc"] == 128 + signum
    assert result["left"] == [], f"processes outlived the command: {result['left']}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("signals")
    small, other = root / "small", root / "other"
    for run, seed in ((small, 1), (other, 2)):
        assert cli("simulate", "--tasks", 3, "--repeats", 2, "--seed", seed, "--out", run)[0] == 0
    many = root / "many"  # enough attempt directories for ingest's process pool
    assert cli("simulate", "--tasks", 400, "--repeats", 5, "--seed", 3, "--out", many, "--artifacts")[0] == 0
    imported = root / "imported"
    assert cli("import", "tau-bench", TAU_TRIALS, "--out", imported)[0] == 0
    return {"small": small, "other": other, "many": many, "imported": imported}


def _previous(out: Path, names: tuple[str, ...]) -> dict:
    """``out`` holding outputs of an earlier build (stand-ins: only their bytes matter)."""
    out.mkdir()
    for name in names:
        (out / name).write_text(f"previous {name}\n", encoding="utf-8")
    return tree_hashes(out)


REPORT = ("metrics.json", "summary.md", "report.ipynb", "report.html")


@pytest.mark.parametrize("point, signum", [("kernel", signal.SIGINT), ("publish", signal.SIGTERM)],
                         ids=["kernel-SIGINT", "publish-SIGTERM"])
def test_report(runs, tmp_path, point, signum):
    """The kernel running: killed with the command, the previous report stays.  During the switch: it
    completes, then the interrupt is reported; the new report is whole."""
    out = tmp_path / "out"
    before = _previous(out, REPORT)
    result = interrupted(tmp_path, ["report", runs["small"], "--out", out, "--no-progress"], point, signum,
                         tiny=point == "publish")
    _check(result, signum)
    if point == "kernel":
        assert result["family"], "no kernel was running when the signal came (test premise)"
        assert tree_hashes(out) == before
    else:
        assert cli("verify", runs["small"], "--out", out)[0] == 0
        assert sorted(p.name for p in out.iterdir()) == sorted(REPORT)
    assert _hidden(tmp_path) == []


def test_compare_while_the_kernel_runs(runs, tmp_path):
    out = tmp_path / "cmp"
    before = _previous(out, ("comparison.json", "comparison.md", "comparison.ipynb", "comparison.html"))
    result = interrupted(tmp_path, ["compare", runs["small"], runs["other"], "--out", out, "--no-progress"],
                         "kernel", signal.SIGTERM)
    _check(result, signal.SIGTERM)
    assert result["family"] and tree_hashes(out) == before and _hidden(tmp_path) == []


@pytest.mark.parametrize("signum, to_group", [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGTERM", "SIGINT-to-the-group"])
def test_ingest_with_its_process_pool(runs, tmp_path, signum, to_group):
    """Pool workers deriving: all of them end with the command (a Ctrl-C reaches them too, silently);
    results.jsonl stays as it was, and no backup or temporary file is left."""
    run = tmp_path / "run"
    shutil.copytree(runs["many"], run, symlinks=True)
    (run / "results.jsonl").write_text("previous\n", encoding="utf-8")
    result = interrupted(tmp_path, ["ingest", run, "--force"], "ingest", signum, to_group=to_group)
    _check(result, signum)
    assert len(result["family"]) >= 2, "no process pool was running (test premise)"
    assert (run / "results.jsonl").read_text(encoding="utf-8") == "previous\n"
    assert sorted(p.name for p in run.iterdir()) == ["attempts", "manifest.json", "results.jsonl", "simulation.json"]


def test_import_force_before_the_switch(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["imported"], run)
    before = tree_hashes(run)
    result = interrupted(tmp_path, ["import", "tau-bench", TAU_TRIALS, "--out", run, "--force"], "import",
                         signal.SIGTERM)
    _check(result, signal.SIGTERM)
    assert tree_hashes(run) == before and _hidden(tmp_path) == []


@pytest.mark.parametrize("point, signum", [("startup", signal.SIGTERM), ("command", signal.SIGINT)],
                         ids=["startup-SIGTERM", "command-SIGINT"])
def test_metrics_early(runs, tmp_path, point, signum):
    """While Python imports the toolkit (the signal is held until the command line takes over), and
    before the run is read: nothing written."""
    result = interrupted(tmp_path, ["metrics", runs["small"], "--out", tmp_path / "out"], point, signum)
    _check(result, signum)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"paused-{point}"]
