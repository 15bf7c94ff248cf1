"""Peak memory of loading 10 million valid attempts (issue 14): target under 6 GB.

    nice .venv/bin/python benchmarks/memory_benchmark.py                      # 10,000,000 attempts
    .venv/bin/python benchmarks/memory_benchmark.py --attempts 1000000 --keep DIR

The run is :func:`benchmarks.generate.big_run` with 40 repeats per task: 250,000 tasks for 10
million attempts (a plan of 1,000,000 tasks x 10 would not fit MAX_MANIFEST_BYTES with the
generator's labels and indentation; the records, which hold the memory, are the same either way).
Each figure comes from a fresh process (``_measure.py``): ``load_run`` alone, then ``load_run`` plus
``compute_metrics``, each with its peak resident memory (``ru_maxrss``) and its wall time.  The
results.jsonl is about 9 GB; it is generated into a temporary folder (``--workdir`` to choose where)
and removed afterwards unless ``--keep``.  Prints the figures, asserts nothing (exit 1 when a peak is
above the target).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from run_all import measure  # noqa: E402

TARGET_MB = 6000
REPEATS = 40


def figures(attempts: int, workdir: str | None = None, keep: str | None = None) -> list[tuple]:
    """``(label, seconds, peak MB, within the target)`` for load_run, then load_run + compute_metrics."""
    tasks = attempts // REPEATS
    out = []
    with tempfile.TemporaryDirectory(prefix="capbench-memory-", dir=workdir) as tmp:
        run = Path(keep) if keep else Path(tmp) / "run"
        if not (run / "results.jsonl").is_file():
            start = time.perf_counter()
            template = generate.template_run(Path(tmp) / "template", repeats=REPEATS)
            generate.big_run(run, tasks=tasks, repeats=REPEATS, template=template)
            print(f"generated {tasks:,} tasks x {REPEATS} in {time.perf_counter() - start:.0f} s")
        size = (run / "results.jsonl").stat().st_size
        print(f"{tasks * REPEATS:,} attempts, results.jsonl {size / 1e9:.2f} GB, "
              f"manifest.json {(run / 'manifest.json').stat().st_size / 1e6:.1f} MB")
        for mode, label in (("load", "load_run"), ("ours", "load_run + compute_metrics")):
            r = measure(mode, run, 1)
            within = r["maxrss_mb"] <= TARGET_MB
            print(f"  {label:<28} {r['best']:7.1f} s   peak {r['maxrss_mb']:7,.0f} MB   "
                  f"target <= {TARGET_MB:,} MB   {'PASS' if within else 'FAIL'}")
            out.append((f"{label}, {tasks * REPEATS:,}", r["best"], r["maxrss_mb"], within))
        if not keep:
            shutil.rmtree(run)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10_000_000, help=f"a multiple of {REPEATS}")
    parser.add_argument("--workdir", help="where to generate the run (default: a temporary folder)")
    parser.add_argument("--keep", metavar="DIR", help="generate the run into DIR and keep it (reused when present)")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    ok = all(r[-1] for r in figures(args.attempts, args.workdir, args.keep))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
