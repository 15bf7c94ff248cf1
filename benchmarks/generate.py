"""Fast generators of large, realistic benchmark inputs (written to a temporary folder at run time).

``big_run(out, tasks, repeats)``: a run directory with ``tasks x repeats`` attempt records.  The
records are those of a simulated template run (``simulate_run(..., artifacts=True)`` then
``ingest_run`` with the example price table and reasoning tokens on), so every record has the
realistic shape ``ingest`` writes: every telemetry field, its ``telemetry_source``, cost with its
source, and for failed attempts a failure stage with evidence references that really resolve.
Task ``i`` of the big run copies template task ``i % TEMPLATE_TASKS`` (its id gets a suffix), and its
records keep the template's ``artifact_dir``, so the template's attempt directories (copied into the
run) are what the evidence references resolve in.  Lines are written by string concatenation, not
by a JSON encoder per record, so 1,000,000 records take seconds.

``artifact_run(out, tasks, repeats)``: a simulated run with attempt directories and no results.jsonl
(the ingest benchmark's input).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from capbench_nb.records.prices import load_price_table
from capbench_nb.records.ingest import ingest_run
from capbench_nb.simulation.writer import simulate_run

REPO = Path(__file__).resolve().parent.parent
PRICES = REPO / "data" / "prices-example.json"
TEMPLATE_TASKS = 500
SEED = 11


def _options() -> dict:
    return {"price_table": load_price_table(PRICES), "reasoning_tokens": True}


def template_run(out: Path, *, tasks: int = TEMPLATE_TASKS, repeats: int = 10, seed: int = SEED) -> Path:
    """A simulated run with artifacts and its ingested results.jsonl."""
    simulate_run(out, tasks=tasks, repeats=repeats, seed=seed, artifacts=True, **_options())
    ingest_run(out, prices=load_price_table(PRICES), progress=False)
    return out


def big_run(out: Path, *, tasks: int, repeats: int = 10, template: Path | None = None) -> Path:
    """A run of ``tasks x repeats`` realistic records (see the module docstring).

    ``template``: a :func:`template_run` directory with the same ``repeats`` to reuse (its
    ``attempts/`` is copied); made in ``out`` otherwise.
    """
    out = Path(out)
    if template is None:
        template = template_run(out.parent / (out.name + ".template"), repeats=repeats)
    manifest = json.loads((template / "manifest.json").read_text(encoding="utf-8"))
    t_tasks = manifest["plan"]["tasks"]
    by_task: dict[str, list[str]] = {}
    for line in (template / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True):
        rec = json.loads(line)
        head = '{"task_id": ' + json.dumps(rec["task_id"], ensure_ascii=False)
        assert line.startswith(head)
        if rec["attempt"] <= repeats:
            by_task.setdefault(rec["task_id"], []).append(line[len(head):])
    out.mkdir(parents=True)
    shutil.copytree(template / "attempts", out / "attempts")
    plan = []
    with open(out / "results.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        buf = []
        for i in range(tasks):
            t = t_tasks[i % len(t_tasks)]
            tid = f"{t['task_id']}.r{i:07d}"
            plan.append({"task_id": tid, "repeats": repeats, "app": t.get("app"), "platform": t.get("platform")})
            head = '{"task_id": ' + json.dumps(tid)
            buf.extend(head + rest for rest in by_task.get(t["task_id"], ()))
            if len(buf) >= 50_000:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))
    manifest["run_id"] = f"bench-{tasks}x{repeats}"
    manifest["status"] = "completed"
    manifest["plan"] = {"repeats_override": None, "k": repeats, "tasks": plan}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return out


def artifact_run(out: Path, *, tasks: int, repeats: int, seed: int = SEED) -> Path:
    """A simulated run with ``attempts/<task>/<attempt>/`` directories and no results.jsonl."""
    return simulate_run(out, tasks=tasks, repeats=repeats, seed=seed, artifacts=True, **_options())


if __name__ == "__main__":  # python benchmarks/generate.py OUT TASKS [REPEATS]
    import sys

    big_run(Path(sys.argv[1]), tasks=int(sys.argv[2]), repeats=int(sys.argv[3]) if len(sys.argv) > 3 else 10)
