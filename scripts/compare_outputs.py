#!/usr/bin/env python3
"""Prove that a change (a refactor, say) altered nothing a user of ``capbench-nb`` sees.

Usage:
    .venv/bin/python scripts/compare_outputs.py [BASE [NEW]] [--seeds 1-20] [--keep DIR] [--jobs N]

BASE (default ``HEAD``) and NEW (default: the working tree at the repository
root, uncommitted changes included) are commits.  Each side runs its own code:
a commit is checked out into a detached ``git worktree`` (removed afterwards;
two worktrees even when BASE and NEW are the same commit, so that a path of
the code leaking into an output shows up), the working tree is used where it
is.  Commands run as ``<this python> -m capbench_nb.cli ...`` with
``PYTHONPATH=<tree>``; before anything else the script checks that
``capbench_nb.__file__`` lies inside that tree (the venv's editable install of
the repository must not win).

The inputs are copied once, from BASE's tree, into one temporary folder that
both sides read, and each case runs side A then side B in the same folder
(A's outputs are moved aside first): paths printed or stored by the
commands are therefore the same on both sides.  The cases:

* ``sample``: ``report`` of ``data/sample-run``, again with ``--slice app
  --slice platform``, and ``verify`` of the first report;
* ``corpus/NAME``, one per folder of ``tests/corpus``: ``metrics`` and
  ``metrics --allow-invalid``, and ``report`` when strict ``metrics`` succeeded;
* ``sim-S`` per seed: ``simulate --tasks 30 --repeats 3 --seed S --artifacts``,
  ``ingest --force`` on it, then ``metrics`` and ``report``;
* ``compare``: ``compare`` of two simulated runs (seeds 1 and 2, simulated by BASE);
* ``import/FILE``: ``import inspect`` / ``import tau-bench`` of each file of
  ``tests/data/inspect`` and ``tests/data/taubench``.

Compared byte for byte: every file a case writes (the simulated runs
included), except the executed notebooks ``report.ipynb`` and
``comparison.ipynb``, which papermill stamps with times and durations; and
``commands.log``, which records for every command its exit code, stdout and
stderr (for ``report`` and ``compare`` only the stderr lines starting with
``capbench-nb:``: the rest is the notebook kernel's own log, which is not
deterministic).

Output: one line per case, ``same`` or ``DIFFERENT: FILE line N col C: A '...' |
B '...'`` (200 characters of each side from just before the first difference;
one more indented line per further differing file), then ``N cases, M files
compared, D differ``.  Exit status 0 when nothing differs, 1 otherwise, 2 when
the comparison could not be set up.  ``--keep DIR`` leaves the inputs and both
sides' outputs in DIR/input, DIR/A and DIR/B.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIP = {"report.ipynb", "comparison.ipynb"}  # executed notebooks: papermill stamps times and durations into them
NOISY = {"report", "compare"}  # stderr holds the kernel's log ("KeyboardInterrupt caught in kernel", now and then)
TIMEOUT = 600  # seconds per command
SIM = ("--tasks", 30, "--repeats", 3)


class Side:
    """The code of one side: a source tree, run with this Python and the tree first on PYTHONPATH."""

    def __init__(self, label: str, tree: Path):
        self.label, self.tree = label, tree
        path = [str(tree)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONDONTWRITEBYTECODE="1")

    def python(self, cwd: Path, *args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=self.env, capture_output=True,
                              text=True, errors="replace", timeout=TIMEOUT)

    def cli(self, cwd: Path, *args) -> tuple[object, str, str]:
        try:
            p = self.python(cwd, "-m", "capbench_nb.cli", *args)
        except subprocess.TimeoutExpired:
            return f"timeout after {TIMEOUT} s", "", ""
        return p.returncode, p.stdout, p.stderr

    def check_import(self, cwd: Path) -> None:
        p = self.python(cwd, "-c", "import capbench_nb; print(capbench_nb.__file__)")
        found = Path(p.stdout.strip()).resolve()
        if p.returncode or not found.is_relative_to(self.tree.resolve()):
            fail(f"side {self.label}: capbench_nb is imported from {p.stdout.strip() or p.stderr.strip()}, "
                 f"not from {self.tree}")


class Run:
    """One side of one case: runs commands in the case's folder, logs what a user sees of each."""

    def __init__(self, side: Side, work: Path, tmp: Path):
        self.side, self.work, self.tmp, self.out, self.log = side, work, tmp, work / "out", []

    def __call__(self, *args):
        rc, out, err = self.side.cli(self.work, *args)
        norm = lambda text: text.replace(str(self.tmp), "$TMP")  # noqa: E731 - same on both sides anyway
        self.log.append(f"$ capbench-nb {norm(' '.join(map(str, args)))}\nexit {rc}\n--- stdout\n{norm(out)}")
        if args[0] in NOISY:  # only the tool's own lines (errors, warnings), not the kernel's log
            err = "".join(line for line in err.splitlines(True) if line.startswith("capbench-nb:"))
        self.log.append(f"--- stderr\n{norm(err)}")
        return rc


# --------------------------------------------------------------------------- the cases: f(run, inputs)


def sample_case(run: Run, inp: Path) -> None:
    run("report", inp / "sample-run", "--out", run.out / "report")
    run("report", inp / "sample-run", "--out", run.out / "report-sliced", "--slice", "app", "--slice", "platform")
    run("verify", inp / "sample-run", "--out", run.out / "report")


def corpus_case(name: str):
    def case(run: Run, inp: Path) -> None:
        folder = inp / "corpus" / name
        if run("metrics", folder, "--out", run.out / "metrics") == 0:
            run("report", folder, "--out", run.out / "report")
        run("metrics", folder, "--out", run.out / "metrics-allow-invalid", "--allow-invalid")
    return case


def sim_case(seed: int):
    def case(run: Run, inp: Path) -> None:
        folder = run.out / "run"
        run("simulate", *SIM, "--seed", seed, "--out", folder, "--artifacts")
        run("ingest", folder, "--force")
        run("metrics", folder, "--out", run.out / "metrics")
        run("report", folder, "--out", run.out / "report")
    return case


def compare_case(run: Run, inp: Path) -> None:
    run("compare", inp / "sim-a", inp / "sim-b", "--out", run.out / "comparison")


def import_case(tool: str, path: Path):
    return lambda run, inp: run("import", tool, inp / path, "--out", run.out / "run")


def build_cases(inp: Path, seeds: list[int]) -> dict:
    cases = {"sample": sample_case}
    cases.update({f"corpus/{p.name}": corpus_case(p.name) for p in sorted((inp / "corpus").iterdir()) if p.is_dir()})
    cases.update({f"sim-{s}": sim_case(s) for s in seeds})
    cases["compare"] = compare_case
    for tool, sub, suffixes in (("inspect", "inspect", (".eval", ".json")), ("tau-bench", "taubench", (".jsonl", ".json"))):
        for p in sorted((inp / sub).iterdir()):
            if p.suffix in suffixes:
                cases[f"import/{p.name}"] = import_case(tool, p.relative_to(inp))
    return cases


def prepare_inputs(base: Side, inp: Path) -> None:
    """One copy of the inputs (BASE's), read by both sides; two simulated runs for ``compare``."""
    for src, dest in (("data/sample-run", "sample-run"), ("tests/corpus", "corpus"),
                      ("tests/data/inspect", "inspect"), ("tests/data/taubench", "taubench")):
        shutil.copytree(base.tree / src, inp / dest, symlinks=True)
    for name, seed in (("sim-a", 1), ("sim-b", 2)):
        rc, _, err = base.cli(inp, "simulate", *SIM, "--seed", seed, "--out", inp / name)
        if rc != 0:
            fail(f"could not simulate the inputs of compare: {err.strip()}")


# --------------------------------------------------------------------------- running and comparing


def run_case(name: str, case, sides: list[Side], tmp: Path) -> tuple[int, list[str]]:
    work = tmp / "work" / name
    for side in sides:  # one after the other, in the same folder: the same paths on both sides
        shutil.rmtree(work, ignore_errors=True)
        run = Run(side, work, tmp)
        run.out.mkdir(parents=True)
        case(run, tmp / "input")
        (run.out / "commands.log").write_text("\n".join(run.log), encoding="utf-8")
        dest = tmp / side.label / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        run.out.rename(dest)
    shutil.rmtree(work)
    return compare_trees(tmp / sides[0].label / name, tmp / sides[1].label / name)


def entries(root: Path) -> dict[str, Path]:
    """Every file and folder under ``root`` (symlinks not followed), by relative path; folders end in '/'."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        found.update({(here / d).relative_to(root).as_posix() + "/": here / d for d in dirnames})
        found.update({(here / f).relative_to(root).as_posix(): here / f for f in filenames if f not in SKIP})
    return found


def compare_trees(a: Path, b: Path) -> tuple[int, list[str]]:
    ea, eb = entries(a), entries(b)
    diffs, files = [], 0
    for rel in sorted(ea.keys() | eb.keys()):
        if rel not in eb or rel not in ea:
            diffs.append(f"{rel} (only in {'A' if rel in ea else 'B'})")
        elif not rel.endswith("/"):
            files += 1
            da, db = read(ea[rel]), read(eb[rel])
            if da != db:
                diffs.append(f"{rel} {first_difference(da, db)}")
    return files, diffs


def read(path: Path) -> bytes:
    return b"symlink:" + os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.decode("utf-8", "replace").splitlines(True), b.decode("utf-8", "replace").splitlines(True)
    i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    x, y = (la[i] if i < len(la) else ""), (lb[i] if i < len(lb) else "")
    col = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
    start = max(0, col - 40)  # long lines (inline images in HTML): show where they part
    show = lambda s: repr(s[start:start + 200]) if s else "<end of file>"  # noqa: E731
    return f"line {i + 1} col {col + 1}: A {show(x)} | B {show(y)}"


# --------------------------------------------------------------------------- the command line


def parse_seeds(text: str) -> list[int]:
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds


def fail(message: str) -> None:
    print(f"compare_outputs: {message}", file=sys.stderr)
    sys.exit(2)


def git(*args) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def resolve(spec: str) -> str:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
    except subprocess.CalledProcessError:
        fail(f"not a commit: {spec}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="HEAD", metavar="BASE_COMMIT", help="side A (default HEAD)")
    parser.add_argument("new", nargs="?", metavar="NEW_COMMIT", help="side B (default: the working tree)")
    parser.add_argument("--seeds", default="1-20", help="seeds of the simulated runs, e.g. 1-20 or 1,4,7-9")
    parser.add_argument("--keep", metavar="DIR", help="keep inputs and both sides' outputs in DIR (new or empty)")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="cases run in parallel (default 2)")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    commits = [resolve(args.base), resolve(args.new) if args.new else None]
    if args.keep:
        tmp = Path(args.keep).resolve()
        tmp.mkdir(parents=True, exist_ok=True)
        if any(tmp.iterdir()):
            fail(f"--keep {tmp}: not empty")
    else:
        tmp = Path(tempfile.mkdtemp(prefix="compare-outputs-"))
    start, worktrees = time.monotonic(), []
    try:
        sides = []
        for label, commit, spec in zip("AB", commits, (args.base, args.new)):
            if commit is None:
                tree, what = REPO, "the working tree"
            else:
                tree, what = tmp / "trees" / label, f"{spec} = {commit[:12]}"
                git("worktree", "add", "--detach", str(tree), commit)
                worktrees.append(tree)
            sides.append(Side(label, tree))
            sides[-1].check_import(tmp)
            print(f"side {label}: {what} ({tree})", flush=True)
        (tmp / "input").mkdir()
        prepare_inputs(sides[0], tmp / "input")
        cases = build_cases(tmp / "input", seeds)
        total_files = total_diffs = 0
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = pool.map(lambda item: run_case(*item, sides, tmp), cases.items())
            for name, (files, diffs) in zip(cases, results):
                total_files, total_diffs = total_files + files, total_diffs + len(diffs)
                print(f"{name}: " + ("same" if not diffs else "DIFFERENT: " + "\n    ".join(diffs)), flush=True)
        print(f"{len(cases)} cases, {total_files} files compared, {total_diffs} differ "
              f"({time.monotonic() - start:.0f} s)")
        return 1 if total_diffs else 0
    finally:
        for tree in worktrees:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
        for leftover in ([tmp / "work", tmp / "trees"] if args.keep else [tmp]):
            shutil.rmtree(leftover, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
