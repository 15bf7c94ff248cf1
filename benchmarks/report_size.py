"""Size of report.html and its time to interactive in headless Chromium, for big runs.

For 100,000 attempts (10,000 tasks x 10; with ``--million`` also 1,000,000: 100,000 x 10) made
by :func:`benchmarks.generate.big_run`: builds the report (``build_report``), prints its size,
the build time, and the time from navigation until the task explorer is ready (its data island
parsed and the first page of tasks drawn), then the time to sort every task by a column.
The targets (issue 13): at most 15 MB and interactive within 3 s for 100,000 attempts.
Prints, asserts nothing.

    .venv/bin/python benchmarks/report_size.py [--million]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import big_run, template_run  # noqa: E402

from capbench_nb.outputs.report.run import build_report  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def interactive(html: Path) -> tuple[float, float]:
    """Seconds from navigation until the explorer is ready, and to sort every task by successes."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        start = time.perf_counter()
        page.goto(html.resolve().as_uri(), wait_until="commit", timeout=120_000)
        page.wait_for_selector("#cb-explorer[data-ready]", timeout=120_000)
        ready = time.perf_counter() - start
        start = time.perf_counter()
        page.click("#cb-explorer thead th:has-text('successes') button")
        page.wait_for_function("() => document.querySelector('#cb-explorer th[aria-sort=descending]')")
        sort = time.perf_counter() - start
        browser.close()
    return ready, sort


def measure(tmp: Path, tasks: int, template: Path) -> None:
    run = big_run(tmp / f"run-{tasks}", tasks=tasks, repeats=10, template=template)
    start = time.perf_counter()
    html = build_report(run, tmp / f"report-{tasks}", progress=False)
    built = time.perf_counter() - start
    size = html.stat().st_size
    ready, sort = interactive(html)
    print(f"{tasks * 10:>9,} attempts: report.html {size / 1e6:6.1f} MB (target <= 15 MB for 100,000), "
          f"built in {built:5.1f} s, interactive in {ready:4.2f} s (target <= 3 s), sort by a column {sort:4.2f} s")


def main(argv: list[str]) -> int:
    sizes = [10_000] + ([100_000] if "--million" in argv else [])
    with tempfile.TemporaryDirectory(prefix="capbench-report-size-") as tmp:
        root = Path(tmp)
        template = template_run(root / "template", repeats=10)
        for tasks in sizes:
            measure(root, tasks, template)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
