#!/usr/bin/env python3
"""Regenerate the bundled sample run with the simulator (run format v1).

Usage:
    python scripts/make_sample_run.py [OUT_DIR]

OUT_DIR defaults to ``data/sample-run`` under the repository root.  The
directory is deleted and recreated, then filled in three steps:

1. ``capbench_nb.simulation.writer.simulate_run`` writes ``manifest.json``,
   ``attempts/<task_id>/<attempt>/`` and the ground truth ``simulation.json``
   (seed and options below: chosen so that the sample shows every failure
   class, all three failure stages, missing telemetry, a short task, a missing
   attempt, a task without attempts and one attempt above the planned repeats);
2. ``capbench_nb.records.ingest.ingest_run`` derives ``results.jsonl`` from the
   attempt directories, pricing tokens with ``data/prices-example.json``;
3. ``capbench_nb.simulation.describe.describe_run`` writes ``README.md``: the tasks,
   every record and the expected headline numbers, for checking by hand.

Deterministic: the same code gives byte-identical files.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from capbench_nb.records.prices import load_price_table  # noqa: E402
from capbench_nb.records.ingest import ingest_run  # noqa: E402
from capbench_nb.simulation.describe import describe_run  # noqa: E402
from capbench_nb.simulation.writer import simulate_run  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "data" / "sample-run"
PRICES = REPO_ROOT / "data" / "prices-example.json"
COMMAND = "python scripts/make_sample_run.py data/sample-run"

TASKS, REPEATS, SEED = 13, 3, 4759
OPTIONS = {
    "short_tasks": 1,
    "missing_attempts": 1,
    "empty_tasks": 1,
    "extra_attempts": 1,
    # harness and environment trouble well above the defaults, so that a small run shows every case
    "skip_rate": 0.08,
    "setup_failure_rate": 0.04,
    "provider_unavailable_rate": 0.03,
    "not_started_rate": 0.01,
    "crash_rate": 0.04,
    "judge_error_rate": 0.04,
    "device_error_rate": 0.3,
    "transient_device_error_rate": 0.1,
    "episode_missing_rate": 0.12,
    "history_usage_missing_rate": 0.08,
    "run_metrics_gap_rate": 0.1,
    "screenshot_gap_rate": 0.05,
    "recovery_key_missing_rate": 0.03,
}


def target(argv: list[str], default: Path) -> Path | None:
    """The directory to (re)create: ARGV's first argument or ``default``, absolute; None (said on stderr) for
    a file system root, the repository or one of its parents, which are never deleted."""
    out_abs = (Path(argv[1]) if len(argv) > 1 else default).resolve()
    if out_abs == Path(out_abs.anchor) or out_abs in (REPO_ROOT, *REPO_ROOT.parents):
        print(f"refusing to delete {out_abs}", file=sys.stderr)
        return None
    return out_abs


def fill(out_abs: Path, *, command: str, title: str, prices=None, **simulation) -> int:
    """Delete ``out_abs``, simulate the run into it with attempt artifacts, ingest it and describe it in
    README.md; returns the number of records written."""
    if out_abs.exists():
        shutil.rmtree(out_abs)
    simulate_run(out_abs, artifacts=True, **simulation)
    report = ingest_run(out_abs, prices=prices, progress=False)
    with open(out_abs / "README.md", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(describe_run(out_abs, command=command, title=title))
    return report.records


def main(argv: list[str]) -> int:
    out_abs = target(argv, DEFAULT_OUT)
    if out_abs is None:
        return 2
    prices = load_price_table(PRICES)
    records = fill(out_abs, command=COMMAND, title="Sample run", prices=prices, tasks=TASKS, repeats=REPEATS,
                   seed=SEED, price_table=prices, **OPTIONS)
    print(f"wrote {records} records to {out_abs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
