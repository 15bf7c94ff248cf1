"""The comparison as files and displays (capbench_nb.outputs.comparison.files): comparison.md, the two
files written, the notebook's tables, and the comparison notebook executed with papermill."""

from __future__ import annotations

import json
import os
import sys

import pytest

import capbench_nb as cb
from capbench_nb.metrics.comparison import compare_runs
from capbench_nb.outputs.comparison.files import (
    compatibility_summary,
    comparison_markdown,
    flips_frame,
    paired_frame,
    plot_differences,
    telemetry_frame,
    warnings_frame,
    write_comparison,
)
from capbench_nb.outputs.comparison.page import verdicts
from capbench_nb.outputs.html.escaping import html_escape, md_escape
from capbench_nb.simulation.writer import simulate_run

from conftest import REPO, manifest, outcomes, write_run

PAIRED_A = {"t1": "SS", "t2": "AS", "t3": "SA", "t4": "AA", "t5": "ES", "t6": "S.", "t7": "AA"}
PAIRED_B = {"t1": "AS", "t2": "SS", "t3": "SS", "t4": "AA", "t5": "SS", "t6": "SS", "t7": "SS"}


@pytest.fixture
def paired_runs(tmp_path):
    doc = manifest([(t, 2) for t in PAIRED_A])
    return (cb.load_run(write_run(tmp_path / "a", doc, outcomes(PAIRED_A))),
            cb.load_run(write_run(tmp_path / "b", doc, outcomes(PAIRED_B))))


def test_markdown_escapes_run_supplied_strings(tmp_path):
    weird = "a|b`c*d<e_f[g]"
    doc = manifest([(weird, 1), ("plain", 1)])
    doc["run_id"] = "run|`x`"
    a = cb.load_run(write_run(tmp_path / "a", doc, outcomes({weird: "S", "plain": "A"})))
    b = cb.load_run(write_run(tmp_path / "b", doc, outcomes({weird: "A", "plain": "S"})))
    md = comparison_markdown(compare_runs(a, b))
    assert md_escape(weird) == r"a\|b\`c\*d\<e\_f\[g\]"
    assert md_escape(weird) in md and weird not in md
    assert r"run\|\`x\`" in md and "run|`x`" not in md
    assert md_escape("x\ny\u202e") == r"x\\ny\\u202e"
    # every table row keeps its column count
    for line in md.splitlines():
        if line.startswith("| run |") or line.startswith("| A |") or line.startswith("| B |"):
            assert line.replace("\\|", "").count("|") == 8


def test_write_comparison_byte_identical(tmp_path, paired_runs):
    a, b = paired_runs
    p1 = write_comparison(compare_runs(a, b), tmp_path / "out1")
    p2 = write_comparison(compare_runs(a, b), tmp_path / "out2")
    assert [p.name for p in p1] == ["comparison.json", "comparison.md"]
    for x, y in zip(p1, p2):
        assert x.read_bytes() == y.read_bytes()
    text = p1[0].read_text(encoding="ascii")
    assert json.loads(text) == json.loads(json.dumps(compare_runs(a, b)))
    assert not [f for f in os.listdir(tmp_path / "out1") if f.startswith(".")]


def test_notebook_tables_and_summary(paired_runs):
    a, b = paired_runs
    doc = compare_runs(a, b, n_boot=50)
    paired = paired_frame(doc)
    assert list(paired["metric"]) == ["pass@1", "pass@k", "pass^k"]
    for _, row in paired.iterrows():
        entry = doc["paired"][row["metric"]]
        assert row["n_pairs"] == entry["n_pairs"] and row["a_only"] == entry["a_only"]
        assert row["difference"] == entry["difference"]
    flips = flips_frame(doc)
    for name, f in doc["flips"].items():
        sub = flips[flips["metric"] == name]
        assert list(sub.loc[sub["flip"] == "A only", "task_id"]) == f["a_only"]
        assert list(sub.loc[sub["flip"] == "B only", "task_id"]) == f["b_only"]
    tele = telemetry_frame(doc)
    assert list(tele["field"]) == list(doc["telemetry"])
    unchecked = doc["compatibility"]["unchecked"]
    assert unchecked  # no artifacts: the evaluation contract is not checked
    assert list(warnings_frame(doc)["code"]) == [f"not checked: {u['code']}" for u in unchecked]
    summary = compatibility_summary(doc)
    assert summary.startswith("**No compatibility warning**") and "Not checked: " + md_escape("evaluation_contract") in summary
    fig = plot_differences(doc)
    assert len(fig.axes) == 1 and len(fig.axes[0].get_yticklabels()) == 3


def test_warnings_in_the_summary_and_frame(tmp_path):
    doc_a = manifest([("t1", 1)])
    doc_b = manifest([("t1", 1)])
    doc_b["config"]["model"] = "m|other"
    a = cb.load_run(write_run(tmp_path / "a", doc_a, outcomes({"t1": "S"})))
    b = cb.load_run(write_run(tmp_path / "b", doc_b, outcomes({"t1": "A"})))
    doc = compare_runs(a, b, n_boot=0)
    assert list(warnings_frame(doc)["code"]) == ["model"] + [f"not checked: {u['code']}"
                                                            for u in doc["compatibility"]["unchecked"]]
    text = compatibility_summary(doc, strict=True)
    assert "**1 compatibility warning**" in text and "`model`" in text and "Strict mode" in text
    assert "m|other" not in comparison_markdown(doc) and md_escape("m|other") in comparison_markdown(doc)


# =========================================================================== the notebook


@pytest.fixture
def kernel_name(tmp_path, monkeypatch):
    """A kernelspec that starts this very Python, found through JUPYTER_PATH for the test only."""
    name = "capbench-nb-test"
    spec_dir = tmp_path / "jupyter" / "kernels" / name
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "capbench-nb test", "language": "python",
        "env": {"MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    }), encoding="utf-8")
    previous = os.environ.get("JUPYTER_PATH")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter") + (os.pathsep + previous if previous else ""))
    return name


def test_notebook_executes_with_papermill(tmp_path, kernel_name):
    papermill = pytest.importorskip("papermill")
    nb_path = REPO / "notebooks" / "compare_runs.ipynb"
    source = json.loads(nb_path.read_text(encoding="utf-8"))
    # committed without outputs or execution counts; one cell tagged parameters
    code = [c for c in source["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    for name in ("run_a: str", "run_b: str", "out_dir: str", "strict: bool", "seed: int"):
        assert name in "".join(params[0]["source"])

    a = simulate_run(tmp_path / "a", tasks=12, repeats=2, seed=5)
    b = simulate_run(tmp_path / "b", tasks=12, repeats=2, seed=6, model="m-small")
    out = tmp_path / "out"
    executed = papermill.execute_notebook(
        str(nb_path), str(tmp_path / "executed.ipynb"), kernel_name=kernel_name, progress_bar=False,
        parameters={"run_a": str(a), "run_b": str(b), "out_dir": str(out), "strict": True, "seed": 7},
        cwd=str(nb_path.parent), log_output=False)
    written = json.loads((out / "comparison.json").read_text())
    expected = compare_runs(cb.load_run(a), cb.load_run(b), seed=7)
    assert written == json.loads(json.dumps(expected))
    assert (out / "comparison.md").read_text() == comparison_markdown(expected)
    assert [w["code"] for w in written["compatibility"]["warnings"]] == ["model"]
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert 'class="cbc-forest"' in html and '<script type="application/json" id="cbc-' in html  # the interval chart, the flipped tasks
    for line in verdicts(expected):
        assert html_escape(line, max_len=None) in html
    assert "Strict mode: 1 of them is not of a kind allowed with --allow-diff and fails the comparison" in html
