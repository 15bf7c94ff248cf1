"""docs/ci.md: the GitHub Actions job's shell steps, run with bash on sample runs.

The workflow is read from the first ``yaml`` block of docs/ci.md; every ``run:`` step is run in
order as GitHub runs it (``bash --noprofile --norc -eo pipefail``), with the job's ``env``,
``$GITHUB_STEP_SUMMARY`` and ``$GITHUB_OUTPUT`` as files and ``${{ steps.gate.outputs.status }}``
read from the latter.  Not run: ``pip install`` (the package is installed in this venv) and the
benchmark itself, whose run is written here instead.  A step with ``if: always()`` runs after a
failed step, as on GitHub.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, manifest, outcomes, write_run

DOC = REPO / "docs" / "ci.md"
BIN = Path(sys.executable).parent


def workflow() -> dict:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    return yaml.safe_load(block)


def write_runs(root: Path, lost: int, tasks: int) -> tuple[Path, Path]:
    ids = [(f"t{i:02d}", 1) for i in range(tasks)]
    base = write_run(root / "baselines" / "main", manifest(ids, k=1), outcomes({t: "S" for t, _ in ids}))
    cand = write_run(root / "out" / "run", manifest(ids, k=1),
                     outcomes({t: ("A" if i < lost else "S") for i, (t, _) in enumerate(ids)}))
    return base, cand


def run_job(root: Path, *, skip: tuple[str, ...] = ()) -> tuple[bool, list[tuple[str, int]], str]:
    """Run the job's steps in ``root``: (job succeeded, (name, exit status) of each step run, the step summary)."""
    job = workflow()["jobs"]["gate"]
    summary, output = root / "summary.md", root / "output.txt"
    summary.write_text("")
    output.write_text("")
    env = {**os.environ, **{k: str(v) for k, v in job["env"].items()},
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)}
    ok, ran = True, []
    for step in job["steps"]:
        script = step.get("run")
        if script is None or step.get("id") == "benchmark" or script.startswith("pip install"):
            continue
        if step.get("name") in skip or (not ok and step.get("if") != "always()"):
            continue
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        script = script.replace("${{ steps.gate.outputs.status }}", outputs.get("status", ""))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
        ran.append((step["name"], done.returncode))
        ok = ok and done.returncode == 0
    return ok, ran, summary.read_text(encoding="utf-8")


def test_the_workflow_declares_what_the_doc_says():
    job = workflow()["jobs"]["gate"]
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "out/report/report.html" in uploads[0]["with"]["path"]
    assert "out/compare/comparison.html" in uploads[0]["with"]["path"]
    assert any("capbench-nb gate" in str(s.get("run")) for s in job["steps"])


def test_a_failing_gate_fails_the_job_after_the_pages_are_built(tmp_path):
    write_runs(tmp_path, lost=12, tasks=40)
    ok, ran, summary = run_job(tmp_path)
    assert not ok
    assert ran == [("Report", 0), ("Gate", 0), ("Compare", 0), ("Decide", 1)]  # the pages first, then the verdict
    assert summary.startswith("# capbench-nb gate: fail")
    assert (tmp_path / "out" / "report" / "report.html").is_file()
    assert (tmp_path / "out" / "compare" / "comparison.html").is_file()
    assert (tmp_path / "out" / "compare" / "gate.json").is_file()  # compare keeps the gate's files
    page = (tmp_path / "out" / "compare" / "comparison.html").read_text(encoding="utf-8")
    assert "Regression gate: fail" in page  # and its page shows the verdict


@pytest.mark.parametrize("lost, tasks, decision", [(0, 300, "pass"), (1, 20, "inconclusive")])
def test_pass_and_inconclusive_keep_the_job_green(tmp_path, lost, tasks, decision):
    write_runs(tmp_path, lost=lost, tasks=tasks)
    ok, ran, summary = run_job(tmp_path, skip=("Report", "Compare"))
    assert ok and ran == [("Gate", 0), ("Decide", 0)]
    assert summary.startswith(f"# capbench-nb gate: {decision}")


def test_bad_input_fails_the_job(tmp_path):
    write_runs(tmp_path, lost=0, tasks=10)
    shutil.rmtree(tmp_path / "baselines")  # a missing baseline: exit 2, not tolerated
    ok, ran, summary = run_job(tmp_path, skip=("Report", "Compare"))
    assert not ok and ran == [("Gate", 0), ("Decide", 1)] and summary == ""
