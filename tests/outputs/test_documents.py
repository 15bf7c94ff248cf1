"""What ``cb.compute_metrics``, ``cb.compare_runs``, ``cb.board`` and ``cb.explore`` give a notebook
(capbench_nb.outputs.documents): the same documents, read-only, with a short repr, an HTML view and tidy
frames; the functions of capbench_nb.metrics keep returning plain dicts."""

from __future__ import annotations

import copy
import json
import pickle

import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics import board as boards, comparison, document
from capbench_nb.outputs.documents import BoardDocument, ComparisonDocument, MetricsDocument

from conftest import manifest, outcomes, write_run

HOSTILE = "<img src=x onerror=alert('id')>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("documents")
    plan = [(f"t{i}", 2) for i in range(1, 9)]
    a, b = manifest(plan), manifest(plan)
    a["run_id"], b["run_id"] = HOSTILE, "run-b"
    recs_a = outcomes({f"t{i}": "SS" if i < 5 else "AS" if i < 7 else "AA" for i in range(1, 9)})
    recs_b = outcomes({f"t{i}": "SA" if i < 3 else "SS" for i in range(1, 9)})
    return cb.load_run(write_run(root / "a", a, recs_a)), cb.load_run(write_run(root / "b", b, recs_b))


def test_the_metrics_document_is_the_plain_one_read_only(runs):
    run = runs[0]
    doc, plain = cb.compute_metrics(run), document.compute_metrics(run)
    assert type(plain) is dict and isinstance(doc, MetricsDocument) and isinstance(doc, dict)
    assert doc == plain and dumps(doc) == dumps(plain) and json.loads(json.dumps(doc)) == json.loads(dumps(plain))
    assert doc["metrics"]["pass@1"]["value"] == plain["metrics"]["pass@1"]["value"]
    for change in (lambda d: d.__setitem__("k", 9), lambda d: d.pop("k"), lambda d: d.update(k=9),
                   lambda d: d.clear(), lambda d: d.__delitem__("k"), lambda d: d.setdefault("x", 1)):
        with pytest.raises(TypeError, match="read-only; dict\\(doc\\) gives a copy"):
            change(doc)
    assert doc == plain  # nothing was changed
    mine = dict(doc)
    mine["k"] = 9  # a copy to change
    assert copy.deepcopy(doc) == plain and type(pickle.loads(pickle.dumps(doc))) is MetricsDocument
    assert cb.compute_metrics(run, quarantine_threshold=0.7)["health"]["quarantine_threshold"] == 0.7  # the options


def test_the_metrics_document_shows_itself(runs):
    doc = cb.compute_metrics(runs[0])
    text = repr(doc)
    assert text.startswith(f"<metrics {HOSTILE}: pass@1 50.0% [") and "pass@k (k = 2) 75.0%" in text
    assert len(text) < 300
    html = doc._repr_html_()
    assert HOSTILE not in html and "&lt;img src=x" in html  # the run id is text
    assert html.startswith("<style>") and 'class="cb-card"' in html and "75.0%" in html and "50.0%" in html
    frame = doc.to_frame()
    assert list(frame["metric"]) == ["pass@1", "pass@k", "pass^k", "oracle_best_score@k"]
    assert frame.loc[0, "value"] == doc["metrics"]["pass@1"]["value"] and frame.loc[0, "successes"] == 4
    assert str(frame["n"].dtype) == "Int64" and str(frame["value"].dtype) == "Float64"
    assert frame.loc[3, "ci_low"] is pd.NA  # a mean has no interval: missing, not 0
    tasks = doc.to_frame("per_task")
    assert list(tasks["task_id"]) == [f"t{i}" for i in range(1, 9)]
    assert str(tasks["first_success_attempt"].dtype) == "Int64" and tasks["first_success_attempt"].isna().sum() == 2
    assert "cost_to_first_success_total_tokens" in tasks.columns
    with pytest.raises(ValueError, match="'headline' or 'per_task'"):
        doc.to_frame("tasks")


def test_the_comparison_document(runs):
    a, b = runs
    doc, plain = cb.compare_runs(a, b, n_boot=0), comparison.compare_runs(a, b, n_boot=0)
    assert isinstance(doc, ComparisonDocument) and doc == plain and type(plain) is dict
    assert repr(doc).startswith("<comparison run-b (B) vs ") and len(repr(doc)) < 400
    assert len(doc.verdicts()) == 3 and all(v in doc._repr_html_() for v in doc.verdicts())
    frame = doc.to_frame()
    assert list(frame["metric"]) == ["pass@1", "pass@k", "pass^k"]
    assert frame.loc[0, "n_pairs"] == 8 and frame.loc[0, "difference"] == plain["paired"]["pass@1"]["difference"]
    assert str(frame["a_only"].dtype) == "Int64"


def test_the_board_document(runs):
    doc = cb.board(list(runs), resamples=50)
    assert isinstance(doc, BoardDocument) and doc == boards.board(list(runs), resamples=50)
    assert repr(doc).startswith("<board of 2 runs by pass@1 on 8 common tasks: group 1 ")
    frame = doc.to_frame()
    assert list(frame["run_id"]) == ["run-b", HOSTILE]  # board order: B's pass@1 100% first
    assert list(frame["position"]) == [2, 1] and str(frame["pass@1_n"].dtype) == "Int64"
    assert frame.loc[0, "pass@1"] == 1.0 and frame["frontier"].isna().all()  # no cost: not on a frontier
    html = doc._repr_html_()
    assert HOSTILE not in html and "Board of 2 runs" in html and "#2 run-b" in html


def test_explore_shows_the_explorer_inline(runs):
    view = cb.explore(runs[0])
    assert repr(view) == f"<explorer of {HOSTILE}: 8 planned tasks>"
    html = view._repr_html_()
    assert '<script type="application/json"' in html and HOSTILE not in html
    assert repr(cb.explore(runs[0].path)) == repr(view)  # a directory is loaded
