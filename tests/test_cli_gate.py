"""``capbench-nb gate`` (spec section 15): exit codes, outputs, and one line with exit 2 for bad input."""

from __future__ import annotations

import json
import os

import pytest

from conftest import SAMPLE_RUN, cli, manifest, outcomes, write_run


def pair(tmp_path, *, cand: str = "A", lost: int = 12, tasks: int = 40, model_b: str = "m"):
    ids = [(f"t{i:02d}", 1) for i in range(tasks)]
    spec_a = {t: "S" for t, _ in ids}
    spec_b = {t: (cand if i < lost else "S") for i, (t, _) in enumerate(ids)}
    doc_b = manifest(ids, k=1)
    doc_b["config"]["model"] = model_b
    a = write_run(tmp_path / "base", manifest(ids, k=1), outcomes(spec_a))
    b = write_run(tmp_path / "cand", doc_b, outcomes(spec_b))
    return a, b


def one_error_line(err: str) -> str:
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("capbench-nb: error: ") and "Traceback" not in err, err
    return lines[0]


def test_fail_exits_1_and_writes_three_files(tmp_path):
    a, b = pair(tmp_path)
    out = tmp_path / "g"
    rc, stdout, err = cli("gate", a, b, "--out", out)
    assert rc == 1, err
    assert stdout.strip() == str(out / "gate.json")
    assert sorted(p.name for p in out.iterdir()) == ["gate.json", "gate.md", "junit.xml"]
    doc = json.loads((out / "gate.json").read_text(encoding="utf-8"))
    assert doc["decision"] == "fail" and len(doc["metrics"][0]["regressions"]) == 12
    assert "gate: fail" in err


def test_pass_exits_0(tmp_path):
    a, b = pair(tmp_path, lost=0, tasks=200)
    rc, _, err = cli("gate", a, b, "--out", tmp_path / "g")
    assert rc == 0, err


def test_inconclusive_exits_4(tmp_path):
    a, b = pair(tmp_path, lost=1, tasks=20)
    rc, _, err = cli("gate", a, b, "--out", tmp_path / "g")
    assert rc == 4, err
    doc = json.loads((tmp_path / "g" / "gate.json").read_text(encoding="utf-8"))
    assert doc["metrics"][0]["needed_tasks"] > 20


def test_incompatible_exits_5_unless_allowed(tmp_path):
    a, b = pair(tmp_path, lost=0, tasks=200, model_b="other")
    rc, _, err = cli("gate", a, b, "--out", tmp_path / "g")
    assert rc == 5 and "[model]" in err
    rc, _, err = cli("gate", a, b, "--out", tmp_path / "g", "--allow-diff", "model")
    assert rc == 0, err


def test_default_out_is_gate_in_the_working_directory(tmp_path, monkeypatch):
    a, b = pair(tmp_path)
    monkeypatch.chdir(tmp_path)
    rc, stdout, _ = cli("gate", a, b)
    assert rc == 1 and (tmp_path / "gate" / "gate.json").is_file()


def test_same_directory_twice_passes_and_says_so(tmp_path):
    a, _ = pair(tmp_path)
    rc, _, err = cli("gate", a, a, "--out", tmp_path / "g", "--metric", "pass@1", "--metric", "pass^k")
    assert rc == 0 and "passes trivially" in err
    assert "passes trivially" in (tmp_path / "g" / "gate.md").read_text(encoding="utf-8")


def test_reruns_are_byte_identical(tmp_path):
    a, b = pair(tmp_path)
    cli("gate", a, b, "--out", tmp_path / "one")
    cli("gate", os.path.relpath(a), os.path.relpath(b), "--out", tmp_path / "two")
    for name in ("gate.json", "gate.md", "junit.xml"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


@pytest.mark.parametrize("extra, words", [
    (["--margin", "abc"], "--margin takes a number"),
    (["--margin", "nan"], "--margin takes a number"),
    (["--margin", "1"], "margin must lie in [0, 1)"),
    (["--margin", "-0.1"], "margin must lie in [0, 1)"),
    (["--margin", "inf"], "finite"),
    (["--alpha", "0"], "alpha must lie in (0, 0.5)"),
    (["--alpha", "0.5"], "alpha must lie in (0, 0.5)"),
    (["--alpha", "x"], "--alpha takes a number"),
    (["--metric", "pass@5"], "unknown metric"),
    (["--metric", "selected@k"], "selection.jsonl"),
    (["--allow-diff", "nope"], "unknown warning kind"),
])
def test_bad_input_one_line_exit_2_and_nothing_written(tmp_path, extra, words):
    a, b = pair(tmp_path)
    rc, _, err = cli("gate", a, b, "--out", tmp_path / "g", *extra)
    assert rc == 2
    assert words in one_error_line(err)
    assert not (tmp_path / "g").exists()


def test_a_bad_run_is_one_line_exit_2(tmp_path):
    a, _ = pair(tmp_path)
    rc, _, err = cli("gate", a, tmp_path / "missing", "--out", tmp_path / "g")
    assert rc == 2 and "missing" in one_error_line(err)


def test_sample_run_against_itself(tmp_path):
    rc, _, err = cli("gate", SAMPLE_RUN, SAMPLE_RUN, "--out", tmp_path / "g", "--metric", "pass@k")
    assert rc == 0, err
