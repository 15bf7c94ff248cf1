"""A Markdown description of a simulated run, for checking its metrics by hand (``data/sample-run/README.md``).

Its per-task pass@1 / pass@k / pass^k columns and expected values come from
:mod:`capbench_nb.simulation.expected` (the metrics' own k-eligibility, on the truth records).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from capbench_nb.format import CLASS_KEYS, TELEMETRY_FIELDS
from capbench_nb.simulation.expected import expected_metrics, task_outcomes
from capbench_nb.simulation.options import SimulationOptions
from capbench_nb.simulation.truth import TRUTH_FILE

__all__ = ["describe_run"]

_LETTERS = {"": "S", "agent": "A", "environment": "E", "evaluation": "V", "skipped": "K", "unknown": "U"}


def _md(value: Any) -> str:
    text = "null" if value is None else str(value)
    for ch in ("\\", "|", "`", "*", "<"):
        text = text.replace(ch, "\\" + ch)
    return text


def _code(x: dict) -> str:
    r = x["record"]
    c = _LETTERS[r["failure_class"]] + ("" if r["agent_eligible"] else "*")
    return f"{x['attempt']}:{c}" + ("!" if x["above_planned_repeats"] else "")


def _rate(exp: dict, name: str) -> str:
    x, n = exp[name]
    return f"{x}/{n}" + (f" = {x / n:.4f}" if n else "")


def _mark(value: bool | None) -> str:
    return "-" if value is None else str(int(value))


@dataclass(frozen=True)
class _Described:
    """What every section reads: the truth and manifest documents, and what follows from them."""

    truth: dict
    manifest: dict
    exp: dict
    params: dict
    plan: dict  # task_id -> truth task entry, plan order
    by_key: dict  # (task_id, attempt) -> truth attempt entry
    k: int


def describe_run(run_dir: str | os.PathLike, *, command: str, title: str | None = None) -> str:
    """A Markdown description of a simulated run for checking its metrics by hand.

    Lists the plan, every task's latent success probability and attempts,
    every record's outcome and key telemetry, and the expected headline
    numbers (:func:`~capbench_nb.simulation.expected.expected_metrics`), all read from
    ``simulation.json``.
    """
    run_dir = Path(run_dir)
    truth = json.loads((run_dir / TRUTH_FILE).read_text(encoding="utf-8"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    exp = expected_metrics(truth)
    c = _Described(truth=truth, manifest=manifest, exp=exp, params=truth["parameters"],
                   plan={t["task_id"]: t for t in truth["tasks"]},
                   by_key={(x["task_id"], x["attempt"]): x for x in truth["attempts"]}, k=exp["k"])
    lines = _intro(c, command, title) + _tasks(c) + _records(c) + _per_task(c) + _expected_values(c)
    return "\n".join(lines)


def _intro(c: _Described, command: str, title: str | None) -> list[str]:
    truth, manifest, exp, params, plan, k = c.truth, c.manifest, c.exp, c.params, c.plan, c.k
    defaults = {f.name: f.default for f in fields(SimulationOptions)}
    changed = {key: value for key, value in params.items()
               if key in defaults and key != "price_table" and value != defaults[key]}
    price = params.get("price_table")
    counted_records = exp["attempts"]["total"]
    total_records = len(truth["attempts"])
    return [
        f"# {title or 'Simulated run'}: `{manifest['run_id']}`",
        "",
        f"Written by the capbench-nb simulator (version {truth['simulator_version']}): "
        f"{params['tasks']} tasks x {params['repeats']} repeats, seed {params['seed']}, model "
        f"`{manifest['config']['model']}` on `{manifest['config']['platform']}`, judge "
        f"{'enabled' if manifest['config']['judge'] else 'disabled'}. Status `{manifest['status']}`.",
        "Options other than the defaults: "
        + (", ".join(f"`{key}={value}`" for key, value in changed.items()) or "none")
        + (f"; price table `{price['name']}@{price['version']}`." if price else "."),
        "",
        "`simulation.json` is the ground truth: every task's latent success probability and, per attempt,",
        "what happened (`cause`) and the record the derivation must give. "
        + ("`results.jsonl` was derived from the attempt directories by `capbench-nb ingest`."
           if params["artifacts"] else "`results.jsonl` was written directly (no artifacts)."),
        "",
        "Regenerate (deterministic, byte-identical; the directory is deleted and recreated):",
        "",
        "```",
        command,
        "```",
        "",
        f"Plan: {len(plan)} tasks; planned repeats "
        + ", ".join(f"{n} for {sum(t['planned_repeats'] == n for t in plan.values())}"
                    for n in sorted({t['planned_repeats'] for t in plan.values()}, reverse=True))
        + f", so `plan.k` = {k}. `results.jsonl` has {total_records} records sorted by task_id then attempt;",
        f"{counted_records} are within their task's planned repeats. Plan order (= `per_task` order) is the",
        "order of the first table.",
        "",
    ]


def _tasks(c: _Described) -> list[str]:
    truth, by_key = c.truth, c.by_key
    lines = [
        "## Tasks",
        "",
        "Attempts: `S` success, `A` agent, `E` environment, `V` evaluation, `K` skipped, `U` unknown;",
        "`*` not agent-eligible; `-` missing (planned, never ran); `!` above planned repeats (anomaly,",
        "enters no metric). p = the task's latent success probability.",
        "",
        "| task_id | app | planned | p | attempts | causes |",
        "|---|---|---|---|---|---|",
    ]
    for t in truth["tasks"]:
        cells = []
        causes = []
        for n in range(1, max([t["planned_repeats"]] + t["attempts"]) + 1):
            x = by_key.get((t["task_id"], n))
            cells.append(_code(x) if x else f"{n}:-")
            if x and x["cause"] != "success":
                causes.append(f"{n}: {x['cause']}")
        lines.append(f"| `{t['task_id']}` | {t['app']} | {t['planned_repeats']} | {t['p_success']} | "
                     f"{' '.join(cells)} | {_md('; '.join(causes)) if causes else '-'} |")
    return lines


def _records(c: _Described) -> list[str]:
    truth, params = c.truth, c.params
    lines = [
        "",
        "## Records",
        "",
        "Files: `a` attempt.json, `e` episode.json, `h` history.json. Missing sources make telemetry",
        "null (never 0): without history.json `tool_calls`, `device_actions` and `llm_calls` are null;",
        "without episode.json the event fields are, and tokens come from history.json when it has `usage`.",
        "Notes list the null telemetry fields of attempts whose agent ran (`reasoning_tokens` is null",
        "throughout when the model does not report it; `recovery_succeeded` is null when no recovery was",
        "attempted) and the runner's timeout recovery.",
        "",
        "| task_id | attempt | files | class | stage | evidence | quality | task_wall_ms | total_tokens | cost | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in truth["attempts"]:
        r = x["record"]
        cls = "success" if r["success"] else r["failure_class"] + ("" if r["agent_eligible"] else " (inelig.)")
        files = " ".join(name[0] for name in x["files"]) or "-"
        tel = r["telemetry"]
        notes = []
        if tel["task_wall_ms"] is None:
            notes.append("agent did not run")
        else:
            nulls = [f for f in TELEMETRY_FIELDS if tel[f] is None
                     and not (f == "reasoning_tokens" and not params["reasoning_tokens"])
                     and not (f == "recovery_succeeded" and tel["recovery_attempted"] is False)]
            if nulls:
                notes.append("null: " + ", ".join(nulls))
        if tel["recovery_attempted"]:
            notes.append("recovery " + ("succeeded" if tel["recovery_succeeded"] else "failed"))
        lines.append(
            f"| `{r['task_id']}` | {r['attempt']}{' !' if x['above_planned_repeats'] else ''} | {files} | {cls} | "
            f"{_md(r['failure_stage'])} | {_md(', '.join(r['evidence'])) if r['evidence'] else '-'} | "
            f"{_md(r['quality_score'])} | {_md(tel['task_wall_ms'])} | {_md(tel['total_tokens'])} | {_md(r['cost'])} | "
            f"{_md('; '.join(notes)) if notes else '-'} |")
    return lines


def _per_task(c: _Described) -> list[str]:
    truth, by_key, k = c.truth, c.by_key, c.k
    outcomes = task_outcomes(truth)
    lines = [
        "",
        f"## Per task (attempts within planned repeats; k = {k})",
        "",
        "`-` in a metric column: the task is not in that metric's denominator (attempt 1 absent or",
        f"ineligible for pass@1; not k-eligible, i.e. attempts 1..{k} not all present and eligible, for",
        "pass@k and pass^k).",
        "",
        "| task_id | attempts | eligible | successes | first success | pass@1 | k-eligible | pass@k | pass^k |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in truth["tasks"]:
        tid, planned = t["task_id"], t["planned_repeats"]
        recs = {n: by_key[(tid, n)]["record"] for n in range(1, planned + 1) if (tid, n) in by_key}
        first = min((n for n, r in recs.items() if r["success"]), default=None)
        o = outcomes[tid]
        lines.append(
            f"| `{tid}` | {len(recs)} | {sum(r['agent_eligible'] for r in recs.values())} | "
            f"{sum(r['success'] for r in recs.values())} | {first if first is not None else '-'} | "
            f"{_mark(o['pass@1'])} | {'yes' if o['k_eligible'] else 'no'} | {_mark(o['pass@k'])} | "
            f"{_mark(o['pass^k'])} |")
    return lines


def _expected_values(c: _Described) -> list[str]:
    truth, exp, plan, k = c.truth, c.exp, c.plan, c.k
    empty = [t["task_id"] for t in truth["tasks"] if not t["attempts"]]
    partly_run = [t for t in truth["tasks"] if t["missing_attempts"] and t["attempts"]]
    bc = exp["attempts"]["by_failure_class"]
    anomalies = ", ".join(f"`{t}` attempt {n}" for t, n in exp["anomalies"])
    return [
        "",
        f"## Expected values (k = {k})",
        "",
        "Counts cover records of planned tasks within planned repeats"
        + (f"; above planned repeats, hence only under `anomalies` (kind `above_planned_repeats`): {anomalies}."
           if exp["anomalies"] else "; there are no anomalies."),
        "",
        f"- tasks: planned {exp['tasks']['planned']}, observed {exp['tasks']['observed']}"
        + (f" (no attempts: {', '.join(f'`{t}`' for t in empty)})" if empty else ""),
        f"- attempts: total {exp['attempts']['total']}, eligible {exp['attempts']['eligible']}",
        "- by_failure_class: " + ", ".join(f"{key} {bc[key]}" for key in CLASS_KEYS),
        "- planned attempts that never ran: "
        + (", ".join(f"`{t['task_id']}` attempt {', '.join(map(str, t['missing_attempts']))}" for t in partly_run)
           or "none"),
        f"- pass@1 = {_rate(exp, 'pass@1')} (coverage {exp['pass@1'][1]}/{len(plan)})",
        f"- pass@k = {_rate(exp, 'pass@k')} (coverage {exp['pass@k'][1]}/{len(plan)})",
        f"- pass^k = {_rate(exp, 'pass^k')} (coverage {exp['pass^k'][1]}/{len(plan)})",
        "",
    ]
