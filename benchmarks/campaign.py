"""Campaign store benchmarks (issue 27, spec section 14); prints ratios.

    python benchmarks/campaign.py metrics [--runs 1000 --tasks 20000 --repeats 5] [--dir DIR]
    python benchmarks/campaign.py load [--attempts 1000000] [--dir DIR]

``metrics``: a store of runs x tasks x repeats attempts (10^8 by default) generated directly with
pyarrow in the store's layout, then, each in a fresh process (peak memory is the process's
``ru_maxrss``), ``cb.campaign(DIR).rates()`` (the Ibis rules on DuckDB) and a hand-written DuckDB
GROUP BY over the same files computing the same counts.  Target: ratio <= 2, peak < 4 GB.

``load``: a simulated run of that many attempts, exported; then ``cb.campaign(DIR).run(run_id)``
(the Run from Parquet) against ``pyarrow.json.read_json`` of its results.jsonl (the floor of any
JSON reader: parsing only, no checks).  Target: ratio <= 0.3.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HAND_SQL = """
WITH t AS (
  SELECT a.run_id, a.task_id,
         count(*) FILTER (WHERE a.attempt = 1 AND a.agent_eligible) AS e1,
         count(*) FILTER (WHERE a.attempt = 1 AND a.agent_eligible AND a.success) AS w1,
         count(*) FILTER (WHERE a.attempt <= r.k AND a.agent_eligible) AS ek,
         count(*) FILTER (WHERE a.attempt <= r.k AND a.agent_eligible AND a.success) AS wk,
         max(r.k) AS k
  FROM read_parquet('{attempts}', hive_partitioning = true, hive_types_autocast = false) AS a
  JOIN read_parquet('{runs}') AS r ON a.run_id = r.run_id
  GROUP BY a.run_id, a.task_id)
SELECT run_id, count(*) FILTER (WHERE e1 > 0) AS pass1_n, count(*) FILTER (WHERE w1 > 0) AS pass1_successes,
       count(*) FILTER (WHERE ek = k) AS passk_n, count(*) FILTER (WHERE ek = k AND wk > 0) AS passk_successes,
       count(*) FILTER (WHERE ek = k AND wk = k) AS passhatk_successes
FROM t GROUP BY run_id
"""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(store: Path, runs: int, tasks: int, repeats: int, seed: int = 0) -> None:
    """A store of ``runs`` runs x ``tasks`` tasks x ``repeats`` attempts, written directly with pyarrow."""
    from capbench_nb.records.campaign.schema import ATTEMPTS_SCHEMA, RUNS_SCHEMA, TASKS_SCHEMA, partition_name

    rng = np.random.default_rng(seed)
    n = tasks * repeats
    task_ids = pa.array([f"task-{i:06d}" for i in range(tasks)], pa.large_string()).take(
        pa.array(np.repeat(np.arange(tasks), repeats)))
    attempt = pa.array(np.tile(np.arange(1, repeats + 1), tasks), pa.int64())
    null = {name: pa.nulls(n, field.type) for name, field in zip(ATTEMPTS_SCHEMA.names, ATTEMPTS_SCHEMA)}
    plan = [{"task_id": f"task-{i:06d}", "repeats": repeats} for i in range(tasks)]
    (store / "attempts").mkdir(parents=True)
    runs_writer = pq.ParquetWriter(store / "runs.parquet", RUNS_SCHEMA)
    tasks_writer = pq.ParquetWriter(store / "tasks.parquet", TASKS_SCHEMA)
    for r in range(runs):
        run_id = f"run-{r:05d}"
        p = rng.uniform(0.2, 0.8)
        success = rng.random(n) < p
        eligible = success | (rng.random(n) < 0.95)
        fclass = np.where(success, "", np.where(eligible, "agent", "environment"))
        columns = dict(null)
        columns.update({
            "task_id": task_ids, "attempt": attempt, "success": pa.array(success), "agent_eligible": pa.array(eligible),
            "failure_class": pa.array(fclass, pa.string()),
            "task_wall_ms": pa.array(rng.gamma(2.0, 20000.0, n)),
            "evidence": pa.array([[]] * n, pa.list_(pa.string())) if r == 0 else columns_evidence,
            "line": pa.array(np.arange(1, n + 1), pa.int64()), "telemetry_source": pa.array(["{}"] * n, pa.string()),
        })
        columns_evidence = columns["evidence"]
        table = pa.Table.from_arrays([columns[name] for name in ATTEMPTS_SCHEMA.names], schema=ATTEMPTS_SCHEMA)
        (store / "attempts" / partition_name(run_id)).mkdir()
        pq.write_table(table, store / "attempts" / partition_name(run_id) / "part-0.parquet")
        manifest = {"schema_version": "capbench.run/1", "run_id": run_id, "suite": {"name": "bench", "version": "1"},
                    "status": "completed", "plan": {"k": repeats, "tasks": plan}}
        row = {"run_id": run_id, "suite_name": "bench", "suite_version": "1", "lock": None, "k": repeats,
               "status": "completed", "created_at": None, "model": f"m{r % 7}", "config": None,
               "tasks_planned": tasks, "metrics_sha256": "sha256:-", "toolkit_version": "bench",
               "manifest": json.dumps(manifest), "inputs": "{}", "anomalies": "[]", "strict": True,
               "evidence_checked": True}
        runs_writer.write_table(pa.Table.from_pylist([row], schema=RUNS_SCHEMA))
        tasks_writer.write_table(pa.Table.from_pydict({
            "run_id": [run_id] * tasks, "task_id": [t["task_id"] for t in plan], "position": list(range(tasks)),
            "planned_repeats": [repeats] * tasks, "labels": [[]] * tasks}, schema=TASKS_SCHEMA))
    runs_writer.close()
    tasks_writer.close()


def measure(mode: str, store: str, extra: str = "") -> dict:
    """One measurement in this (fresh) process: best of 2 wall times and the peak memory."""
    import duckdb

    config = {"memory_limit": "3GB"}
    times = []
    for _ in range(2):
        start = time.perf_counter()
        if mode == "ours":
            import capbench_nb as cb

            result = cb.campaign(store, duckdb_config=config).rates()
            size = len(result)
        elif mode == "hand":
            con = duckdb.connect(config=config)
            sql = HAND_SQL.format(attempts=f"{store}/attempts/*/part-0.parquet", runs=f"{store}/runs.parquet")
            size = len(con.sql(sql).fetchall())
        elif mode == "load":
            import capbench_nb as cb

            size = len(cb.campaign(store).run(extra).records)
        elif mode == "read_json":
            import pyarrow.json as pj

            size = pj.read_json(extra).num_rows
        times.append(time.perf_counter() - start)
    return {"mode": mode, "best_s": min(times), "rows": size, "peak_mb": peak_mb()}


def fresh(mode: str, store: Path, extra: str = "") -> dict:
    out = subprocess.run([sys.executable, __file__, "_measure", mode, str(store), extra],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_metrics(args) -> None:
    base = Path(args.dir or tempfile.mkdtemp(prefix="capbench-campaign-"))
    store = base / f"store-{args.runs}x{args.tasks}x{args.repeats}"
    if not (store / "runs.parquet").exists():
        start = time.perf_counter()
        generate(store, args.runs, args.tasks, args.repeats)
        print(f"generated {args.runs * args.tasks * args.repeats:,} attempts in {time.perf_counter() - start:.0f} s: {store}")
    ours, hand = fresh("ours", store), fresh("hand", store)
    print(json.dumps({"ours": ours, "hand": hand}))
    print(f"per-run metrics: cb.campaign {ours['best_s']:.2f} s, hand-written DuckDB {hand['best_s']:.2f} s, "
          f"ratio {ours['best_s'] / hand['best_s']:.2f} (target <= 2); peak {ours['peak_mb']:.0f} MB (target < 4096)")


def bench_load(args) -> None:
    from capbench_nb.outputs.campaign_export import export_campaign
    from capbench_nb.simulation.writer import simulate_run

    base = Path(args.dir or tempfile.mkdtemp(prefix="capbench-load-"))
    run = base / f"run-{args.attempts}"
    if not (run / "results.jsonl").exists():
        simulate_run(run, tasks=args.attempts // 5, repeats=5, seed=1)
    store = base / f"store-{args.attempts}"
    if not (store / "runs.parquet").exists():
        export_campaign([run], store)
    run_id = json.loads((run / "manifest.json").read_text())["run_id"]
    ours, floor = fresh("load", store, run_id), fresh("read_json", store, str(run / "results.jsonl"))
    print(json.dumps({"store": ours, "read_json": floor}))
    print(f"load a {ours['rows']:,}-attempt run: from the store {ours['best_s']:.2f} s, pyarrow read_json "
          f"{floor['best_s']:.2f} s, ratio {ours['best_s'] / floor['best_s']:.2f} (target <= 0.3)")


def main() -> None:
    if sys.argv[1:2] == ["_measure"]:
        print(json.dumps(measure(*sys.argv[2:5])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("metrics")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dir")
    p = sub.add_parser("load")
    p.add_argument("--attempts", type=int, default=1_000_000)
    p.add_argument("--dir")
    args = parser.parse_args()
    {"metrics": bench_metrics, "load": bench_load}[args.what](args)


if __name__ == "__main__":
    main()
