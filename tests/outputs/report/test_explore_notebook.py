"""notebooks/explore.ipynb: the API tour runs top to bottom with papermill and shows what it teaches."""

from __future__ import annotations

import ast
import json

import nbformat
import pytest

import capbench_nb as cb
from capbench_nb.outputs import build
from capbench_nb.outputs.report import run as reportrun

from conftest import REPO, SAMPLE_RUN, manifest, notebook_imports, outcomes, write_run

NOTEBOOK = REPO / "notebooks" / "explore.ipynb"


def execute(tmp_path, monkeypatch, **parameters) -> dict[str, list]:
    """Run the notebook from its folder (Jupyter's working directory); outputs by cell id."""
    import papermill

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the kernel's tempfile folder: checked empty afterwards
    with build.own_kernel() as kernel:
        nb = papermill.execute_notebook(str(NOTEBOOK), str(tmp_path / "explore.ipynb"), parameters=parameters,
                                        kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOK.parent))
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert list(scratch.iterdir()) == [], "the simulated run of the comparison was left behind"
    return {c.get("id"): c.outputs for c in code}


def text_of(outputs: list, kind: str = "text/plain") -> str:
    return "".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get(kind, "")
                   for o in outputs)


@pytest.fixture(scope="module")
def notebook():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_one_typed_commented_parameters_cell(notebook):
    import papermill

    assert len([c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]) == 1
    params = papermill.inspect_notebook(str(NOTEBOOK))
    assert {name: p["inferred_type_name"] for name, p in params.items()} == {
        "run_dir": "str", "other_seed": "int", "other_model": "str", "top": "int"}
    assert all(p["help"] for p in params.values())
    assert (NOTEBOOK.parent / json.loads(params["run_dir"]["default"]) / "manifest.json").is_file()


def test_it_only_calls_into_the_package_and_teaches_every_part_of_the_api(notebook):
    imported = notebook_imports(notebook)
    source = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert imported <= {"capbench_nb", "pandas", "pathlib", "tempfile"}
    for call in ("cb.load_run(", "run.attempts_view(", "cb.pass_at_1(run)", "cb.compute_metrics(", "cb.per_task(run)",
                 "cb.metrics_by(", "cb.register_slice(", "cb.compare_runs(", "run.evidence(", "cb.explore(run)",
                 "float(rate)", "rate.ci", "doc.to_frame()", "comparison.to_frame()", "cb.board(", "board.to_frame()"):
        assert call in source, call


def test_the_sample_run_top_to_bottom(tmp_path, monkeypatch):
    out = execute(tmp_path, monkeypatch)
    run = cb.load_run(SAMPLE_RUN)
    assert text_of(out["load"]) == repr(run) and "Run sim-4759" in text_of(out["load"], "text/html")
    assert "outcome" in text_of(out["attempts"]) and "line" not in text_of(out["attempts"]).split("\n")[0]
    assert text_of(out["headline"]) == repr(cb.pass_at_1(run))
    assert "95% CI" in text_of(out["headline"], "text/html")
    assert text_of(out["headline-all"]).splitlines() == [
        repr(cb.pass_at_1(run)), repr(cb.pass_at_k(run)), repr(cb.pass_hat_k(run)), repr(cb.oracle_best_score_at_k(run))]
    doc = cb.compute_metrics(run)
    assert text_of(out["rate-float"]) == repr(f"pass@1 = {float(cb.pass_at_1(run)):.1%}, 95% CI "
                                              f"{cb.pass_at_1(run).ci[0]:.1%} to {cb.pass_at_1(run).ci[1]:.1%}")
    assert text_of(out["document"]) == repr(doc) and 'class="cb-card"' in text_of(out["document"], "text/html")
    assert len(text_of(out["document"])) < 300  # the document's short repr, not 17,000 characters of dict
    assert "oracle_best_score@k" in text_of(out["doc-frame"])
    explorer = text_of(out["explorer"], "text/html")
    assert all(task in explorer for task in run.plan["task_id"])  # the report's explorer, every task
    by_app = text_of(out["slices"])
    for app in run.plan["app"].unique():
        assert app in by_app and app in text_of(out["register"])  # family = the task id's first part = app here
    assert "pass@1" in text_of(out["slices-values"]) and "successes" in text_of(out["slices-one"])
    app_entry = cb.compute_metrics(run, slices=["app"])["slices"]["app"][0]  # the family is the app in the sample
    assert ast.literal_eval(text_of(out["register-doc"])) == (app_entry["value"], app_entry["tasks"], app_entry["pass@1"])
    assert "different models" in text_of(out["compare-warnings"]) and "m-small" in text_of(out["compare-warnings"])
    assert text_of(out["compare-paired"]).startswith("<comparison ") and "McNemar" in text_of(out["compare-paired"],
                                                                                                 "text/html")
    assert "mcnemar_p" in text_of(out["comparison-frame"])
    assert text_of(out["board"]).startswith("<board of 2 runs by pass@1 ") and "rank_low" in text_of(out["board-frame"])
    evidence = text_of(out["evidence"])
    assert "clock.timer.start attempt 3 (environment, setup):" in evidence
    assert "attempt.json#/setup -> {'status': 'failed'" in evidence and "adb: device not found after reboot" in evidence
    for row in run.attempts_view().query("evidence.str.len() > 0").itertuples():  # every one, resolved
        for reference, value in run.evidence(row.task_id, row.attempt).items():
            assert f"  {reference} -> {value}" in evidence


def test_a_run_without_labels_or_evidence_runs_too(tmp_path, monkeypatch):
    run_dir = write_run(tmp_path / "run", manifest([("a.one", 2), ("a.two", 2), ("b.one", 2)]),
                        outcomes({"a.one": "SA", "a.two": "AA", "b.one": "SS"}))
    out = execute(tmp_path, monkeypatch, run_dir=str(run_dir), other_model="other-model", top=2)
    assert "Rate(pass@1 = 0.667" in text_of(out["headline"])
    slices = text_of(out["slices"])  # one slice, the config's model, as the report's table writes it
    assert slices.startswith("model ") and "\n    m 3 (small) 66.7% (2/3) [20.8%, 93.9%]" in slices
    family = text_of(out["register"])
    assert "family" in family and "a " in family and "b " in family
    assert "no attempt of this run names evidence" in text_of(out["evidence"])
