"""Notebook parameters are data: run and output paths holding quotes, newlines, braces and ``$(...)``
reach the report notebook as literals, and nothing is executed."""

from __future__ import annotations

import json
import os

import pytest

from conftest import PAYLOADS, cli
from capbench_nb.outputs.report.run import OUTPUT_FILES

# =========================================================================== parameters are data


def test_report_paths_with_quotes_newlines_and_command_substitution(tmp_path, monkeypatch):
    pwned = tmp_path / "pwned"
    monkeypatch.setenv("CAPBENCH_PWNED", str(pwned))  # inherited by the kernel
    weird = tmp_path / ("a\"b'c\nd " + PAYLOADS)
    run = weird / "run"
    rc, _, err = cli("simulate", "--tasks", "4", "--repeats", "2", "--seed", "1", "--out", run)
    assert rc == 0, err
    out = weird / "out $(touch pwned2)"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rc, stdout, err = cli("report", run, "--out", out, "--no-progress")
    finally:
        os.chdir(cwd)
    assert rc == 0, err
    assert stdout.strip() == str(out / "report.html")
    assert not pwned.exists() and not (tmp_path / "pwned2").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [weird.name]
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    rc, _, err = cli("verify", run, "--out", out)
    assert rc == 0, err
    nb = json.loads((out / "report.ipynb").read_text(encoding="utf-8"))
    injected = next(c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec("".join(injected["source"]), namespace)  # noqa: S102 - the parameters cell holds literals: the paths come back exactly
    assert namespace["run_dir"] == str(run.absolute()) and namespace["report_dir"] == str(out.absolute())


@pytest.mark.parametrize("name", ["out{x}", "out{run_dir}"])
def test_report_output_directory_with_braces(tmp_path, name):
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "3", "--repeats", "1", "--seed", "1", "--out", run)
    assert rc == 0, err
    out = tmp_path / name
    rc, _, err = cli("report", run, "--out", out, "--no-progress")
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
