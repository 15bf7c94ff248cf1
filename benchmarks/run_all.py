"""Every performance figure of capbench-nb, each against its floor, with the ratio and the target.

    .venv/bin/python benchmarks/run_all.py                 # 10k, 100k and 1M attempts, ingest, report
    .venv/bin/python benchmarks/run_all.py --sizes 10000,100000 --skip-report
    .venv/bin/python benchmarks/run_all.py --verify        # also: same metrics.json with the exact reader

Inputs are generated at run time into a temporary folder (``benchmarks/generate.py``), nothing big
is committed.  Every timing runs in a fresh subprocess (``benchmarks/_measure.py``) that reports
the best wall time of its repeats and its peak resident memory (``ru_maxrss``), imports excluded
from the time.  The file is in the page cache for the floor and for us alike.

1. Metrics: ``load_run`` (validation included) plus every metric of ``compute_metrics`` on a
   results.jsonl of N attempts (N/10 tasks x 10), against the floor of parsing the same file into
   a table with the fastest JSON reader at hand: the faster of pyarrow's ``read_json`` (its default
   threads, and one thread) and orjson line by line.  Target: at most 2x, and at most 3 GB peak
   memory at 1M; the time per 100k attempts shows the growth.
2. Ingest: ``ingest_run`` on 20,000 attempt directories (5,000 tasks x 4) against the floor of
   reading and parsing the same files (stdlib json, and orjson).  Target: at most 2x.
3. Report: the sample run's report against an empty notebook through papermill and nbconvert
   (``report_benchmark.py``'s floor), target at most 2x; a 100k-attempt run's report, target under
   60 s.
4. Memory (``--memory``, not by default): the peak of loading 10 million attempts, with and without
   ``compute_metrics`` (``memory_benchmark.py``), target at most 6 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

PYTHON = sys.executable
MEASURE = HERE / "_measure.py"


def measure(mode: str, path: Path, repeats: int, *extra: str) -> dict:
    done = subprocess.run([PYTHON, str(MEASURE), mode, str(path), str(repeats), *extra],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{mode} on {path} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def line(label: str, seconds: float, extra: str = "") -> None:
    print(f"  {label:<44} {seconds:8.3f} s  {extra}")


def verdict(ok: bool | None) -> str:
    return "info" if ok is None else "PASS" if ok else "FAIL"


def metrics_section(work: Path, sizes: list[int], repeats: int, verify: bool, results: list) -> None:
    print("\n== metrics: load_run + compute_metrics against the JSON floor ==")
    template = generate.template_run(work / "template")
    for n in sizes:
        run = work / f"run-{n}"
        t = time.perf_counter()
        generate.big_run(run, tasks=n // 10, repeats=10, template=template)
        size = (run / "results.jsonl").stat().st_size
        print(f"\n{n:,} attempts ({size / 1e6:,.0f} MB results.jsonl, generated in {time.perf_counter() - t:.1f} s)")
        reps = repeats if n < 1_000_000 else max(1, min(repeats, 2))
        floors = {mode: measure(mode, run, reps) for mode in ("pyarrow", "pyarrow-1thread", "orjson")}
        ours = measure("ours", run, reps)
        floor_mode = min(floors, key=lambda m: floors[m]["best"])
        floor = floors[floor_mode]["best"]
        for mode, r in floors.items():
            line(f"floor: {mode}", r["best"], f"peak {r['maxrss_mb']:,.0f} MB")
        ratio = ours["best"] / floor
        per = ours["best"] / n * 100_000
        line("ours: load_run + compute_metrics", ours["best"],
             f"peak {ours['maxrss_mb']:,.0f} MB  (load {ours['load']:.3f} s, metrics {ours['metrics']:.3f} s; "
             f"{per:.3f} s per 100k attempts)")
        # the targets are set at 1M attempts; smaller sizes show the growth (fixed costs weigh more there)
        ok = ratio <= 2.0 and ours["maxrss_mb"] <= 3000 if n >= 1_000_000 else None
        print(f"  ratio ours / floor ({floor_mode}): {ratio:.2f}   "
              + ("target <= 2.0 and peak <= 3 GB" if ok is not None else "(the targets apply at 1M)")
              + f"   {verdict(ok)}")
        results.append((f"metrics {n:,} attempts", ours["best"], floor, ratio, ours["maxrss_mb"], ok))
        if verify:
            exact = measure("verify", run, 1)
            print(f"  metrics.json with the exact (streaming) reader: {'identical' if exact['identical'] else 'DIFFERENT'}")
            if not exact["identical"]:
                results.append((f"metrics {n:,} identical to exact reader", 0, 0, 0, 0, False))
        shutil.rmtree(run)


def ingest_section(work: Path, repeats: int, results: list) -> None:
    print("\n== ingest: 20,000 attempt directories against reading and parsing their files ==")
    run = work / "ingest-run"
    t = time.perf_counter()
    generate.artifact_run(run, tasks=5000, repeats=4)
    print(f"generated in {time.perf_counter() - t:.1f} s")
    try:  # ingest parses artifact files with orjson when it is installed (same documents either way)
        import orjson

        print(f"ingest parses with orjson {orjson.__version__}")
    except ImportError:
        print("orjson not installed: ingest parses with the standard library (and read-orjson cannot run)")
    floors = {mode: measure(mode, run, repeats) for mode in ("read-json", "read-orjson")}
    ours = {w: measure("ingest", run, repeats, str(w)) for w in ("1", "auto")}
    for mode, r in floors.items():
        line(f"floor: {mode} ({r['files']:,} files)", r["best"])
    for w, r in ours.items():
        line(f"ours: ingest_run, workers={w}", r["best"], f"peak {r['maxrss_mb']:,.0f} MB")
    best = min(r["best"] for r in ours.values())
    for mode, r in floors.items():
        ratio = best / r["best"]
        print(f"  ratio ours / floor ({mode}): {ratio:.2f}   target <= 2.0   {verdict(ratio <= 2.0)}")
        results.append((f"ingest vs {mode}", best, r["best"], ratio, ours["auto"]["maxrss_mb"], ratio <= 2.0))
    shutil.rmtree(run)


def report_section(work: Path, repeats: int, results: list) -> None:
    print("\n== report ==")
    sample = HERE.parent / "data" / "sample-run"
    r = measure("report-sample", sample, repeats)
    line("floor: empty notebook (papermill + nbconvert)", r["floor"])
    line("ours: the sample run's report", r["report"])
    ratio = r["report"] / r["floor"]
    print(f"  ratio ours / floor: {ratio:.2f}   target <= 2.0   {verdict(ratio <= 2.0)}")
    results.append(("report, sample run", r["report"], r["floor"], ratio, 0, ratio <= 2.0))
    run = work / "report-100k"
    generate.big_run(run, tasks=10_000, repeats=10, template=generate.template_run(work / "template-report"))
    r = measure("report", run, 1)
    line("ours: report of a 100,000-attempt run", r["best"])
    print(f"  target < 60 s   {verdict(r['best'] < 60)}")
    results.append(("report, 100k attempts", r["best"], 60.0, r["best"] / 60.0, 0, r["best"] < 60))
    shutil.rmtree(run)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="attempt counts (multiples of 10)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure, best taken (1M: at most 2)")
    parser.add_argument("--skip-metrics", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--memory", action="store_true",
                        help="also the peak memory of loading 10 million attempts (memory_benchmark.py: about "
                             "15 GB of disk and several minutes)")
    parser.add_argument("--verify", action="store_true", help="check metrics.json against the exact reader")
    parser.add_argument("--workdir", help="where to generate inputs (default: a temporary folder)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    results: list = []
    with tempfile.TemporaryDirectory(prefix="capbench-bench-", dir=args.workdir) as tmp:
        work = Path(tmp)
        if not args.skip_metrics:
            metrics_section(work, sizes, args.repeats, args.verify, results)
        if not args.skip_ingest:
            ingest_section(work, args.repeats, results)
        if not args.skip_report:
            report_section(work, args.repeats, results)
        if args.memory:
            import memory_benchmark

            print("\n== memory: 10,000,000 attempts, target peak <= 6 GB ==")
            for label, seconds, peak, ok in memory_benchmark.figures(10_000_000, workdir=args.workdir):
                results.append((label, seconds, 0.0, 0.0, peak, ok))
    print("\n== summary ==")
    print(f"  {'figure':<34} {'ours s':>8} {'floor s':>8} {'ratio':>6} {'peak MB':>8}")
    for name, ours, floor, ratio, rss, ok in results:
        print(f"  {name:<34} {ours:8.2f} {floor:8.2f} {ratio:6.2f} {rss:8,.0f}  {verdict(ok)}")
    print(f"load average at the end {os.getloadavg()[0]:.2f} (other processes on the machine slow both sides)")
    return 0 if all(r[-1] is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
