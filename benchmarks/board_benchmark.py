"""The board at scale (issue 18): 50 runs of 1,000 tasks x 5 attempts, 2,000 bootstrap resamples.

    .venv/bin/python benchmarks/board_benchmark.py                  # 50 runs, 1,000 tasks, 5 attempts
    .venv/bin/python benchmarks/board_benchmark.py --runs 20 --tasks 500 --keep /tmp/board-runs

Target: the board (``capbench_nb.board`` on the loaded runs: common ground, values, every pair of
every metric with McNemar and Holm, groups, the rank bootstrap, cost and frontier, the
compatibility warnings of each run against the first) within 2x the time of loading those runs
(``load_run`` of each, validation included) -- that is, loading plus the board in at most twice
the loading alone.  Also timed, for information: board.md, and the page data of board.html
(the two interactive sections).

The runs are simulated (``simulate_run``, seeded, without artifacts) into a temporary folder: 40
priced with the example price table and 10 of a model the table does not price, so that the
frontier and the unpriced list are both exercised; each run has its own difficulty (the Beta's
alpha), so the board has real differences to find.  Timings are the best of ``--repeats`` runs in
this process, after one warm-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _measure import best_of as best  # noqa: E402  (the best wall time of N runs, as every benchmark here)
PRICES = REPO / "data" / "prices-example.json"


def make_run(args: tuple[Path, int, int, int, bool]) -> Path:
    from capbench_nb.records.prices import load_price_table
    from capbench_nb.simulation.writer import simulate_run

    path, index, tasks, repeats, priced = args
    options = {"price_table": load_price_table(PRICES), "episode_missing_rate": 0.0, "run_metrics_gap_rate": 0.0,
               "history_usage_missing_rate": 0.0}
    return simulate_run(path, tasks=tasks, repeats=repeats, seed=1000 + index, model="m-large" if priced else "m-other",
                        success_alpha=1.0 + 0.04 * index, **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5, help="planned attempts per task")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--timing-repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="generate into (or reuse) this folder")
    args = parser.parse_args(argv)

    import capbench_nb as cb
    from capbench_nb.outputs.board.files import board_markdown
    from capbench_nb.outputs.board.page import pairs_data, runs_data

    root = args.keep or Path(tempfile.mkdtemp(prefix="capbench-board-"))
    paths = [root / f"run-{i:02d}" for i in range(args.runs)]
    todo = [(p, i, args.tasks, args.repeats, i < args.runs * 4 // 5) for i, p in enumerate(paths)
            if not (p / "results.jsonl").is_file()]
    if todo:
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            list(pool.map(make_run, todo))
        print(f"generated {len(todo)} runs in {time.perf_counter() - start:.1f} s under {root}")
    try:
        cb.board([cb.load_run(p) for p in paths[:2]], resamples=10)  # warm-up: imports, scipy
        load, runs = best(args.timing_repeats, lambda: [cb.load_run(p) for p in paths])
        board, doc = best(args.timing_repeats, lambda: cb.board(runs, resamples=args.resamples))
        markdown, _ = best(args.timing_repeats, lambda: board_markdown(doc))
        page, _ = best(1, lambda: (runs_data(doc, runs), pairs_data(doc, runs)))
        attempts = sum(len(r.attempts) for r in runs)
        print(f"{args.runs} runs, {args.tasks:,} tasks x {args.repeats} attempts ({attempts:,} attempts), "
              f"{args.resamples:,} resamples; {doc['common']['tasks']:,} common tasks, "
              f"{len(doc['groups'])} groups, {len(doc['frontier'])} on the frontier, {len(doc['unpriced'])} unpriced")
        print(f"  load_run of every run        {load:8.3f} s")
        print(f"  board (cb.board)             {board:8.3f} s  ({board / load:.2f} x loading)")
        print(f"  loading + board              {load + board:8.3f} s  ({(load + board) / load:.2f} x loading; "
              f"target <= 2: {'PASS' if load + board <= 2 * load else 'FAIL'})")
        print(f"  board.md                     {markdown:8.3f} s")
        print(f"  page data (table and matrix) {page:8.3f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
