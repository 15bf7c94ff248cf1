"""One measurement, in a fresh process (called by run_all.py): prints one JSON line.

    python benchmarks/_measure.py MODE PATH REPEATS [ARG]

``best`` is the best wall time of REPEATS runs (imports excluded), ``maxrss_mb`` the process's
peak resident memory.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def best_of(repeats: int, fn) -> tuple[float, object]:
    times, last = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - start)
    return min(times), last


def artifact_files(run: Path) -> list[Path]:
    from capbench_nb.records.ingest import attempt_directories

    files = []
    for directory in attempt_directories(run):
        for name in ("attempt.json", "episode.json", "history.json"):
            path = directory / name
            if path.exists():
                files.append(path)
    return files


def main(mode: str, path: str, repeats: str, *extra: str) -> dict:
    run, repeats = Path(path), int(repeats)
    results = run / "results.jsonl"
    out: dict = {"mode": mode}
    if mode in ("pyarrow", "pyarrow-1thread"):
        import pyarrow.json as pj

        options = pj.ReadOptions(use_threads=mode == "pyarrow")
        out["best"], _ = best_of(repeats, lambda: pj.read_json(results, read_options=options))
    elif mode == "orjson":
        import orjson

        def parse():
            with open(results, "rb") as fh:
                return [orjson.loads(line) for line in fh]

        out["best"], _ = best_of(repeats, parse)
    elif mode == "ours":
        import capbench_nb
        from capbench_nb.metrics.document import compute_metrics

        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            loaded = capbench_nb.load_run(run)
            t1 = time.perf_counter()
            compute_metrics(loaded)
            t2 = time.perf_counter()
            times.append((t2 - t0, t1 - t0, t2 - t1))
            del loaded
        out["best"], out["load"], out["metrics"] = min(times)
    elif mode == "load":  # load_run alone (memory_benchmark.py)
        import capbench_nb

        out["best"], _ = best_of(repeats, lambda: capbench_nb.load_run(run))
    elif mode == "verify":
        import capbench_nb
        from capbench_nb.records import columnar_reader
        from capbench_nb.metrics.document import compute_metrics
        from capbench_nb.io.atomic import dumps

        fast = dumps(compute_metrics(capbench_nb.load_run(run)))
        columnar_reader.read_results_fast = lambda *a, **k: None  # the exact, streaming reader only
        exact = dumps(compute_metrics(capbench_nb.load_run(run)))
        out["identical"], out["best"] = fast == exact, 0.0
    elif mode in ("read-json", "read-orjson"):
        files = artifact_files(run)
        if mode == "read-json":
            import json as parser

            def parse_all():
                for f in files:
                    parser.loads(f.read_bytes().decode("utf-8"))
        else:
            import orjson

            def parse_all():
                for f in files:
                    orjson.loads(f.read_bytes())

        out["files"] = len(files)
        out["best"], _ = best_of(repeats, parse_all)
    elif mode == "ingest":
        from capbench_nb.records.prices import load_price_table
        from capbench_nb.records.ingest import ingest_run

        prices = load_price_table(Path(__file__).resolve().parent.parent / "data" / "prices-example.json")
        workers = None if extra[0] == "auto" else int(extra[0])
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "results.jsonl"
            out["best"], _ = best_of(repeats, lambda: ingest_run(run, out=target, force=True, prices=prices,
                                                                 progress=False, workers=workers))
    elif mode == "report-sample":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import report_benchmark as rb
        from capbench_nb.outputs.report import run as reportrun

        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            notebook = rb.empty_notebook(work / "empty.ipynb")
            rb.floor_once(notebook, work, run)  # warm-up
            out["floor"], _ = best_of(repeats, lambda: rb.floor_once(notebook, work, run))
            count = iter(range(repeats))
            out["report"], _ = best_of(repeats, lambda: reportrun.build_report(run, work / f"out{next(count)}",
                                                                                progress=False))
        out["best"] = out["report"]
    elif mode == "report":
        from capbench_nb.outputs.report import run as reportrun

        with tempfile.TemporaryDirectory() as tmp:
            out["best"], _ = best_of(repeats, lambda: reportrun.build_report(run, Path(tmp) / "out", progress=False))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    out["maxrss_mb"] = peak_mb()
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
