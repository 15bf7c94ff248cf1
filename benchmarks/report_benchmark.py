"""How long `build_report` takes on the sample run, against what any papermill report costs.

The floor: an EMPTY notebook (just a parameters cell) executed by papermill
the way build_report does it (same kernel, same settings), then converted to
HTML by the same nbconvert exporter and template.
That is kernel start-up, papermill's bookkeeping and the page template; the
difference is the report itself (loading the run, metrics, figures, tables).
Median of 3 runs each; prints, asserts nothing.

    .venv/bin/python benchmarks/report_benchmark.py [RUN_DIR]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from capbench_nb.outputs import build
from capbench_nb.outputs.report import run as reportrun

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample-run"
REPEATS = 3


def empty_notebook(path: Path) -> Path:
    cell = nbformat.v4.new_code_cell('run_dir: str = "."  # the run directory')
    cell.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.write(nb, path)
    return path


def floor_once(notebook: Path, work: Path, run_dir: Path) -> None:
    """The empty notebook through build_report's own execution and conversion steps."""
    nb = build.execute_notebook(notebook, {"run_dir": str(run_dir)}, cwd=work, progress=False)
    (work / "empty.out.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    (work / "empty.html").write_text(build.notebook_to_html(nb, title="empty"), encoding="utf-8")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    run_dir = Path(argv[0]) if argv else SAMPLE
    with tempfile.TemporaryDirectory(prefix="capbench-bench-") as tmp:
        work = Path(tmp)
        notebook = empty_notebook(work / "empty.ipynb")
        floor_once(notebook, work, run_dir)  # warm-up: imports, file caches
        floor = [timed(lambda: floor_once(notebook, work, run_dir)) for _ in range(REPEATS)]
        report = [timed(lambda i=i: reportrun.build_report(run_dir, work / f"out{i}", progress=False))
                  for i in range(REPEATS)]
    f, r = statistics.median(floor), statistics.median(report)
    print(f"run: {run_dir}")
    print(f"floor  (empty notebook: papermill + nbconvert), median of {REPEATS}: {f:6.2f} s  "
          f"[{', '.join(f'{x:.2f}' for x in floor)}]")
    print(f"report (build_report),                       median of {REPEATS}: {r:6.2f} s  "
          f"[{', '.join(f'{x:.2f}' for x in report)}]")
    print(f"ratio report / floor: {r / f:.2f}   (report's own work: {r - f:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
