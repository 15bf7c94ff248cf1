"""The package's public names: all there, imported on first use (``import capbench_nb`` stays cheap)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import capbench_nb


def test_all_lists_exactly_the_lazy_names_and_the_eager_ones():
    assert set(capbench_nb.__all__) == set(capbench_nb._EXPORTS) | {"__version__", *capbench_nb._DEFINED}
    assert capbench_nb._DEFINED == ("build_report", "board", "gate", "compute_metrics", "compare_runs", "explore",
                                    "metrics_by")
    assert len(capbench_nb.__all__) == len(set(capbench_nb.__all__))


@pytest.mark.parametrize("name", sorted(capbench_nb._EXPORTS))
def test_every_public_name_resolves_to_its_module_object(name):
    import importlib

    module = importlib.import_module(capbench_nb._EXPORTS[name], "capbench_nb")
    assert getattr(capbench_nb, name) is getattr(module, name)
    assert name in dir(capbench_nb)


def test_dir_shows_exactly_the_public_names():
    assert dir(capbench_nb) == sorted(capbench_nb.__all__)
    assert not any(name in dir(capbench_nb) for name in ("importlib", "Any", "_EXPORTS", "annotations"))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        capbench_nb.no_such_name  # noqa: B018


def test_import_costs_no_pandas_and_the_report_path_no_scipy():
    code = (
        "import sys, capbench_nb\n"
        "assert 'pandas' not in sys.modules, 'import capbench_nb loaded pandas'\n"
        "from capbench_nb.io import atomic\n"
        "from capbench_nb.outputs import export\nfrom capbench_nb.outputs.report import page as reporting\n"
        "run = capbench_nb.load_run('data/sample-run')\n"
        "capbench_nb.compute_metrics(run)\n"
        "assert not any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules), 'the report path loaded scipy'\n"
    )
    from conftest import REPO

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["pass_at_1", "pass_at_k", "pass_hat_k", "oracle_best_score_at_k", "per_task",
                                  "attempt_counts", "telemetry_aggregates", "prefix_curve", "unbiased_curve",
                                  "task_health", "inconsistent_share", "mean_quality_score", "all_attempts_pass_rate"])
def test_every_metric_function_takes_a_loaded_run(name):
    from conftest import SAMPLE_RUN

    run = capbench_nb.load_run(SAMPLE_RUN)
    function = getattr(capbench_nb, name)
    table_form = {"plan": run.plan, **({"k": run.k} if name not in ("attempt_counts", "telemetry_aggregates",
                                                                     "unbiased_curve", "pass_at_1",
                                                                     "mean_quality_score",
                                                                     "all_attempts_pass_rate") else {})}
    by_run, by_table = function(run), function(run.attempts, **table_form)
    if hasattr(by_run, "equals"):
        assert by_run.equals(by_table)
    else:
        assert by_run == by_table


def test_compute_metrics_in_a_script_loads_no_notebook_display():
    """cb.compute_metrics returns a document that shows itself in Jupyter; its HTML helpers (IPython) load
    only when it is shown."""
    code = ("import sys, capbench_nb as cb\n"
            "doc = cb.compute_metrics(cb.load_run('data/sample-run'))\n"
            "assert 'IPython' not in sys.modules, 'cb.compute_metrics loaded IPython'\n"
            "doc._repr_html_()\n"
            "assert 'IPython' in sys.modules\n")
    from conftest import REPO

    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
