"""benchmarks/coverage.py (docs/coverage.md) on few runs: seeded, one row per cell, and every clustered
cell it finds short is one the metrics flag as approximate."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "coverage.py"


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("coverage_study", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| interval")]


def test_the_study_is_seeded_and_has_every_cell(study, capsys):
    args = ["--runs", "300", "--only", "wilson", "--only", "clustered", "--only", "selection"]
    assert study.main(args) == 0
    first = capsys.readouterr().out
    assert study.main(args) == 0
    assert capsys.readouterr().out == first  # the same arguments print the same table
    rows = _rows(first)
    # Wilson: pass@1 (k = 1) and pass@k, pass^k (k = 3, 5); clustered: 3 rates x 3 G x 4 T x 3 k; selected@k
    assert len([r for r in rows if r[0] == "Wilson"]) == 3 * 4 * (1 + 2 + 2)
    assert len([r for r in rows if r[0] == "clustered"]) == 3 * 3 * 4 * 3
    assert len([r for r in rows if r[0] == "selected@k"]) == 3 * 3 * 4
    for r in rows:
        assert 0.0 <= float(r[7]) <= 1.0 and float(r[8]) < 0.05 and r[6] == "300"
    # near 0 or 1 the clustered interval is short and flagged in most runs (>= 93% of them at 2,000 runs)
    for r in rows:
        if r[0] == "clustered" and r[4] in ("0.1", "0.9"):
            assert float(r[7]) < 0.95
            assert int(r[10].split("flagged approximate in ")[1].split("%")[0]) >= 80


def test_the_truth_is_the_simulators_population_rate(study):
    from capbench_nb.simulation.selector import population_rates

    opt = study.options_for(0.5, "pass@k", 3)
    assert study.truth(opt, "pass@k", 3) == pytest.approx(0.5, abs=1e-9)
    a, b = opt.success_alpha, opt.success_beta
    assert study.truth(opt, "pass@1", 1) == pytest.approx(a / (a + b))
    # pass^3 = B(a + 3, b) / B(a, b)
    assert study.truth(opt, "pass^k", 3) == pytest.approx(a * (a + 1) * (a + 2) / ((a + b) * (a + b + 1) * (a + b + 2)))
    assert a + b == pytest.approx(2.5)  # the simulator's concentration
    with_selector = type(opt)(success_alpha=a, success_beta=b, selector_accuracy=0.95)
    assert study.truth(with_selector, "selected@k", 3) == pytest.approx(population_rates(with_selector, 3)["selected@k"])
