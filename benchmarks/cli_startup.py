"""Start-up time of the command line: ``capbench-nb --help`` and ``--version`` (issue 24 item 5).

Each runs in a fresh ``python -m capbench_nb.cli`` subprocess; prints the best wall time of 5,
and the import of ``capbench_nb.cli`` alone. The target: both under 0.3 s (they took ~4 s while
the CLI imported pandas at module level). Prints, asserts nothing.

    .venv/bin/python benchmarks/cli_startup.py
"""

from __future__ import annotations

import subprocess
import sys
import time

REPEATS = 5
TARGET_S = 0.3


def best_of(argv: list[str], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    python = [sys.executable]
    baseline = best_of([*python, "-c", "pass"])
    cases = {
        "python -c pass (interpreter alone)": [*python, "-c", "pass"],
        "import capbench_nb.cli": [*python, "-c", "import capbench_nb.cli"],
        "capbench-nb --help": [*python, "-m", "capbench_nb.cli", "--help"],
        "capbench-nb --version": [*python, "-m", "capbench_nb.cli", "--version"],
    }
    print(f"best of {REPEATS} wall times (target for --help and --version: < {TARGET_S} s)")
    for name, argv in cases.items():
        seconds = baseline if argv == [*python, "-c", "pass"] else best_of(argv)
        print(f"{name:40s} {seconds:6.3f} s")


if __name__ == "__main__":
    main()
