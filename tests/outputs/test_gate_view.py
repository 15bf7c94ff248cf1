"""The comparison page shows the gate's verdict when a gate.json for the same runs sits beside it."""

from __future__ import annotations

import json

import capbench_nb as cb
from capbench_nb.outputs.gate.files import write_gate
from capbench_nb.outputs.gate.view import gate_beside_html, gate_html, same_runs
from conftest import cli, manifest, outcomes, write_run


def pair(tmp_path, *, lost=12, tasks=40, model_b="m<script>x</script>"):
    ids = [(f"t{i:02d}", 1) for i in range(tasks)]
    doc_b = manifest(ids, k=1)
    doc_b["config"]["model"] = model_b
    a = write_run(tmp_path / "base", manifest(ids, k=1), outcomes({t: "S" for t, _ in ids}))
    b = write_run(tmp_path / "cand", doc_b, outcomes({t: ("A" if i < lost else "S") for i, (t, _) in enumerate(ids)}))
    return a, b


def test_no_gate_json_shows_nothing(tmp_path):
    a, b = pair(tmp_path)
    doc = cb.compare_runs(cb.load_run(a), cb.load_run(b), n_boot=0)
    assert gate_beside_html(tmp_path / "nowhere", doc) == ""


def test_the_verdict_of_the_same_runs_is_shown_escaped(tmp_path):
    a, b = pair(tmp_path)
    ra, rb = cb.load_run(a), cb.load_run(b)
    write_gate(cb.gate(ra, rb).document, tmp_path / "out")
    doc = cb.compare_runs(ra, rb, n_boot=0)
    html = gate_beside_html(tmp_path / "out", doc)
    assert "Regression gate: incompatible" in html and "<b>fail</b>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # the model warning's message, as text


def test_a_gate_of_other_runs_or_a_damaged_file_is_named_not_shown(tmp_path):
    a, b = pair(tmp_path)
    ra, rb = cb.load_run(a), cb.load_run(b)
    write_gate(cb.gate(rb, ra).document, tmp_path / "out")  # baseline and candidate swapped
    doc = cb.compare_runs(ra, rb, n_boot=0)
    assert not same_runs(json.loads((tmp_path / "out" / "gate.json").read_text()), doc)
    assert "about other runs" in gate_beside_html(tmp_path / "out", doc)
    (tmp_path / "out" / "gate.json").write_text("{not json")
    assert "could not be read" in gate_beside_html(tmp_path / "out", doc)


def test_same_run_note_on_the_page(tmp_path):
    a, _ = pair(tmp_path)
    html = gate_html(cb.gate(a, a).document)
    assert "Regression gate: pass" in html and "passes trivially" in html


def test_compare_after_gate_puts_the_verdict_on_comparison_html(tmp_path):
    a, b = pair(tmp_path, model_b="m")
    out = tmp_path / "out"
    assert cli("gate", a, b, "--out", out)[0] == 1
    rc, _, err = cli("compare", a, b, "--out", out)
    assert rc == 0, err
    page = (out / "comparison.html").read_text(encoding="utf-8")
    assert "Regression gate: fail" in page and (out / "gate.json").is_file()
