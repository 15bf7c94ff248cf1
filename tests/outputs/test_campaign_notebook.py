"""notebooks/campaign.ipynb: a campaign store over time, the board of each model's latest run, and DuckDB on the
Parquet files, each number checked against the package.

The notebook runs once with papermill (a kernel costs seconds), on a store of ``capbench-nb simulate`` runs built
here, and the tests below the line read that one execution's outputs. The default (a demo store) is checked by
running its one cell in this process.
"""

from __future__ import annotations

import ast
import json
from io import StringIO
from pathlib import Path

import nbformat
import pandas as pd
import pytest

import capbench_nb as cb
from capbench_nb.cli import main
from capbench_nb.outputs.documents import BoardDocument
from capbench_nb.outputs.notebook import execute_notebook

from conftest import REPO, notebook_imports

NOTEBOOK = REPO / "notebooks" / "campaign.ipynb"
#: (run_id, model, created_at, planned tasks, seed) in store order: not date order; m-c is not in the price
#: table; seed 7 skips every attempt of browser.url.open (no eligible attempt: that run neither solves nor fails it).
RUNS = [("a-sep", "m-a", "2026-09-01T09:00:00Z", 12, 1), ("b-oct", "m-b", "2026-10-01T09:00:00Z", 12, 7),
        ("a-nov", "m-a", "2026-11-01T09:00:00Z", 12, 3), ("c-aug", "m-c", "2026-08-01T09:00:00Z", 10, 4),
        ("b-sep", "m-b", "2026-09-15T11:00:00+02:00", 12, 5), ("a-oct", "m-a", "2026-10-01T09:00:00Z", 12, 6)]
LATEST = ["b-oct", "a-nov", "c-aug"]  # each model's latest run, in store order
PRICES = {"name": "prices/test", "version": "1", "effective_date": "2026-01-01",
          "models": {"m-a": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07},
                     "m-b": {"input": 5e-07, "output": 2e-06}}}
PARAMETERS = {"resamples": 100, "seed": 3}
IMPORTS = {"capbench_nb", "duckdb", "pandas", "matplotlib", "json", "pathlib", "tempfile"}


@pytest.fixture(scope="module")
def notebook():
    return nbformat.read(NOTEBOOK, as_version=4)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Six runs of ``capbench-nb simulate --artifacts``, each given a run_id, model and date, ingested with prices."""
    base = tmp_path_factory.mktemp("campaign-notebook")
    prices = base / "prices.json"
    prices.write_text(json.dumps(PRICES), encoding="utf-8")
    dirs = []
    for run_id, model, created_at, tasks, seed in RUNS:
        run_dir = base / run_id
        assert main(["simulate", "--tasks", str(tasks), "--repeats", "3", "--seed", str(seed), "--artifacts",
                     "--out", str(run_dir)]) == 0
        doc = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        doc.update(run_id=run_id, created_at=created_at)
        doc["config"]["model"] = model
        (run_dir / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
        assert main(["ingest", str(run_dir), "--prices", str(prices), "--no-progress"]) == 0
        dirs.append(run_dir)
    assert main(["export", *map(str, dirs), "--out", str(base / "store")]) == 0
    return base / "store"


@pytest.fixture(scope="module")
def executed(store):
    """The notebook executed once on ``store``: its outputs by cell id."""
    nb = execute_notebook(NOTEBOOK, {"store": str(store), **PARAMETERS}, cwd=NOTEBOOK.parent, progress=False)
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    return {c.get("id"): c.outputs for c in code}


def output(outputs: list, kind: str = "text/plain") -> str:
    return "".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get(kind, "")
                   for o in outputs)


def shown_table(outputs: list) -> pd.DataFrame:
    """The DataFrame a cell showed, read back from its HTML (floats as pandas prints them: 6 digits)."""
    return pd.read_html(StringIO(output(outputs, "text/html")), index_col=0)[0]


def cell(notebook, cell_id: str):
    return next(c for c in notebook.cells if c.get("id") == cell_id)


def query(notebook, store: Path, cell_id: str, *, limit: bool = True) -> pd.DataFrame:
    """The SQL of the notebook's cell ``cell_id`` (the string ``con.sql`` is given) run on the notebook's own views
    (without its LIMIT clause when ``limit`` is False)."""
    namespace = {"store": str(store), "Path": Path}
    exec(cell(notebook, "duckdb").source, namespace)  # the views exactly as the notebook makes them
    calls = [n for n in ast.walk(ast.parse(cell(notebook, cell_id).source))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "sql"]
    assert len(calls) == 1 and isinstance(calls[0].args[0], ast.Constant)
    sql = calls[0].args[0].value
    if not limit:
        assert sql.count("LIMIT") == 1
        sql = sql[:sql.index("LIMIT")]
    try:
        return namespace["con"].sql(sql).df()
    finally:
        namespace["con"].close()


# --------------------------------------------------------------------------- the committed notebook


def test_one_typed_commented_parameters_cell_and_outputs_stripped(notebook):
    import papermill

    assert len([c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]) == 1
    params = papermill.inspect_notebook(str(NOTEBOOK))
    assert {name: p["inferred_type_name"] for name, p in params.items()} == {
        "store": "str", "resamples": "int", "seed": "int"}
    assert all(p["help"] for p in params.values())
    assert json.loads(params["store"]["default"]) == ""  # the demo store by default
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)


def test_it_only_calls_into_the_package_duckdb_pandas_and_matplotlib(notebook):
    imported = notebook_imports(notebook)
    source = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    # the standard library only for the demo store's temporary folder and the dates it writes into manifests
    assert imported <= IMPORTS and {"capbench_nb", "duckdb", "pandas", "matplotlib"} <= imported
    for call in ("cb.campaign(store)", "c.metrics()", "c.runs[", "c.latest(by=\"model\")", "c.board(latest",
                 "duckdb.connect()", "simulate_run(", "export_campaign("):
        assert call in source, call


def test_the_default_builds_a_demo_store_of_three_models_on_three_dates(notebook):
    namespace = {"store": ""}  # the parameter's default; the demo cell alone, in this process (no kernel)
    exec(cell(notebook, "demo").source, namespace)
    try:
        c = cb.campaign(namespace["store"])
        assert len(c.run_ids) == 9 and c.runs["model"].value_counts().to_dict() == {
            "m-large": 3, "m-small": 3, "m-mini": 3}
        assert sorted(set(c.runs["created_at"])) == ["2026-09-01T09:00:00Z", "2026-10-01T09:00:00Z",
                                                     "2026-11-01T09:00:00Z"]
        assert c.latest() == ["m-large-2026-11-01", "m-small-2026-11-01", "m-mini-2026-11-01"]
        assert c.run("m-large-2026-11-01").attempts["cost"].notna().any()  # priced by the demo's table
    finally:
        namespace["workspace"].cleanup()
    assert not Path(namespace["store"]).exists()


# --------------------------------------------------------------------------- one execution on a store


def test_the_store_and_each_models_latest_run(executed, store):
    c = cb.campaign(store)
    assert output(executed["open"]) == repr(c) and "6 runs" in output(executed["open"])
    assert c.latest(by="model") == LATEST
    assert ast.literal_eval(output(executed["latest"])) == LATEST
    board = BoardDocument(c.board(LATEST, **PARAMETERS))
    assert output(executed["board"]) == repr(board)
    assert output(executed["board"]).startswith("<board of 3 runs by pass@1 on 10 common tasks: group 1 ")
    shown = shown_table(executed["board-frame"])
    assert sorted(shown["run_id"]) == sorted(LATEST) and list(shown["run_id"]) == list(board.to_frame()["run_id"])
    assert list(shown["model"]) == list(board.to_frame()["model"])


def test_runs_over_time_are_each_runs_metrics_json(executed, store):
    shown = shown_table(executed["history"])
    ordered = sorted(RUNS, key=lambda r: (r[1], pd.Timestamp(r[2]), r[0]))  # by model, then date
    assert list(shown["run_id"]) == [r[0] for r in ordered] and list(shown["model"]) == [r[1] for r in ordered]
    assert list(pd.to_datetime(shown["created_at"])) == [pd.Timestamp(r[2]).tz_convert("UTC") for r in ordered]
    for row in shown.itertuples():
        rate = cb.compute_metrics(cb.load_run(store.parent / row.run_id))["metrics"]["pass@1"]  # the JSON path
        assert (row.successes, row.n) == (rate["successes"], rate["n"])
        for name in ("value", "ci_low", "ci_high", "coverage"):
            assert getattr(row, name) == pytest.approx(rate[name], abs=5e-6)
    assert "image/png" in executed["history-chart"][0]["data"]  # the chart was drawn


def test_duckdb_pass_at_1_is_the_packages(executed, notebook, store):
    rates = cb.campaign(store).rates()
    got = query(notebook, store, "sql-pass1")
    assert output(executed["sql-pass1"], "text/html") == got._repr_html_()  # the notebook showed this result
    assert sorted(got["run_id"]) == sorted(r[0] for r in RUNS)
    for row in got.itertuples():
        rate = rates[row.run_id]["pass@1"]
        assert (row.successes, row.n) == (rate.successes, rate.n) and row.n > 0
        assert (row.pass_at_1, row.coverage) == (rate.value, rate.coverage)
    assert got["successes"].sum() > 0 and (got["n"] < got["tasks_planned"]).any()  # some tasks left out


def test_duckdb_tasks_that_fail_are_the_per_task_table(executed, notebook, store):
    c = cb.campaign(store)
    runs, failed = {}, {}
    for run_id in c.run_ids:
        tasks = cb.per_task(c.run(run_id))
        for task in tasks[tasks["eligible"] > 0].itertuples():
            runs[task.task_id] = runs.get(task.task_id, 0) + 1
            failed[task.task_id] = failed.get(task.task_id, 0) + (task.successes == 0)
    expected = sorted(runs, key=lambda t: (-failed[t], t))
    got = query(notebook, store, "sql-never", limit=False)  # every task, not the ten shown
    assert output(executed["sql-never"], "text/html") == got.head(10)._repr_html_()
    assert list(got["task_id"]) == expected
    assert list(got["runs"]) == [runs[t] for t in expected] and list(got["failed_in"]) == [failed[t] for t in expected]
    assert list(got["fails_in_every_run"]) == [failed[t] == len(RUNS) for t in expected]
    # browser.url.open is planned in every run, but b-oct skipped it: five runs attempted it
    assert runs["browser.url.open"] == len(RUNS) - 1 and len(RUNS) in set(got["runs"]) and got["failed_in"].max() >= 2


def test_duckdb_tokens_and_cost_per_model_are_the_packages(executed, notebook, store):
    c = cb.campaign(store)
    got = query(notebook, store, "sql-cost").set_index("model")
    shown = shown_table(executed["sql-cost"]).set_index("model")  # 6 decimals shown; DuckDB adds doubles in no
    assert list(shown.columns) == list(got.columns)                # fixed order (a float sum may differ by run)
    for name in got.columns:
        expected = list(got[name].astype("float64"))
        assert list(shown[name]) == pytest.approx(expected, rel=1e-6, abs=6e-7, nan_ok=True), name
    assert list(got.index) == ["m-a", "m-b", "m-c"]
    models = c.runs.set_index("run_id")["model"]
    for model in got.index:
        runs = [c.run(rid) for rid in c.run_ids if models[rid] == model]
        tokens = [cb.telemetry_aggregates(run)["total_tokens"] for run in runs]  # over eligible attempts
        eligible = pd.concat([run.attempts[run.attempts["agent_eligible"]] for run in runs])
        row = got.loc[model]
        assert (row["runs"], row["eligible_attempts"]) == (len(runs), len(eligible))
        assert row["with_tokens"] == sum(t["n"] for t in tokens) > 0
        assert row["mean_total_tokens"] == pytest.approx(sum(t["sum"] for t in tokens) / row["with_tokens"], rel=1e-12)
        priced = eligible["cost"].dropna()
        assert row["priced"] == len(priced)
        if model == "m-c":  # not in the price table: no cost, never a cost of 0
            assert row["priced"] == 0 and pd.isna(row["mean_cost"]) and pd.isna(row["total_cost"])
        else:
            assert row["priced"] > 0 and row["mean_cost"] == pytest.approx(priced.mean(), rel=1e-12)
