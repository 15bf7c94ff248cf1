"""Command line for slices and comparison: --slice, verify with slices, compare (--strict)."""

from __future__ import annotations

import json
import re

import pytest

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.io.atomic import dumps
from capbench_nb.simulation.simulator import simulate_run

from conftest import SAMPLE_RUN, manifest, outcomes, write_run


def test_metrics_with_slices_writes_them_and_verify_agrees(tmp_path, capsys):
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "app", "--slice", "app",
                 "--slice", "platform"]) == 0
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert list(doc["slices"]) == ["app", "platform"]  # repeated dimensions once, in order
    assert doc["provenance"]["options"]["slices"] == ["app", "platform"]
    expected = cb.compute_metrics(cb.load_run(SAMPLE_RUN), slices=["app", "platform"])
    assert (tmp_path / "metrics.json").read_text() == dumps(expected)
    capsys.readouterr()
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 0
    doc["slices"]["app"][0]["pass@1"]["successes"] += 1
    (tmp_path / "metrics.json").write_text(json.dumps(doc))
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 1
    assert "/slices/app/0/pass@1/successes" in capsys.readouterr().out


def test_unknown_slice_is_one_line_exit_2(tmp_path, capsys):
    assert main(["metrics", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "colour"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown slice dimension 'colour'" in err[0] and "app" in err[0]
    assert not (tmp_path / "metrics.json").exists()
    assert main(["report", str(SAMPLE_RUN), "--out", str(tmp_path), "--slice", "colour"]) == 2
    assert not list(tmp_path.iterdir())


def test_verify_reports_a_slice_it_cannot_recompute(tmp_path, capsys):
    run = cb.load_run(SAMPLE_RUN)
    cb.register_slice("family", lambda r: r.plan["task_id"].str.split(".").str[0])
    try:
        (tmp_path / "metrics.json").write_text(dumps(cb.compute_metrics(run, slices=["family"])))
    finally:
        from capbench_nb.metrics.slices import unregister_slice

        unregister_slice("family")
    assert main(["verify", str(SAMPLE_RUN), "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "/slices/family" in out and "recomputed nothing" in out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    a = simulate_run(base / "a", tasks=24, repeats=2, seed=1)
    b = simulate_run(base / "b", tasks=24, repeats=2, seed=2)
    return a, b


def test_compare_writes_the_three_outputs(two_runs, tmp_path, capsys):
    a, b = two_runs
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["comparison.json", "comparison.md", "comparison.html", "comparison.ipynb"])
    doc = json.loads((out / "comparison.json").read_text())
    expected = cb.compare_runs(cb.load_run(a), cb.load_run(b), seed=0)
    assert doc == json.loads(dumps(expected))
    for metric in ("pass@1", "pass@k", "pass^k"):
        p = doc["paired"][metric]
        assert p["both"] + p["a_only"] + p["b_only"] + p["neither"] == p["n_pairs"]
    html = (out / "comparison.html").read_text()
    assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//", html)
    assert capsys.readouterr().out.strip().endswith("comparison.html")


def test_compare_strict_exits_1_on_warnings(tmp_path, capsys):
    a = write_run(tmp_path / "a", manifest([("t1", 2), ("t2", 2)]), outcomes({"t1": "SS", "t2": "AS"}))
    other = manifest([("t1", 2), ("t3", 2)])
    other["suite"]["version"] = "2"
    b = write_run(tmp_path / "b", other, outcomes({"t1": "SA", "t3": "SS"}))
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "[suite_version]" in err and "[task_set]" in err
    assert main(["compare", str(a), str(b), "--out", str(out), "--strict", "--no-progress"]) == 1
    assert "with --strict" in capsys.readouterr().err


def test_compare_bad_input_is_exit_2_before_any_notebook(tmp_path, capsys):
    a = write_run(tmp_path / "a", manifest([("t1", 2)]), outcomes({"t1": "SS"}))
    b = write_run(tmp_path / "b", manifest([("t1", 2)]), ['{"task_id": "t1", "attempt": 1'], trailing_newline=False)
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "truncated-line" in err[0]
    assert not out.exists() or not list(out.iterdir())
