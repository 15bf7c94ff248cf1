"""subset.json, subset.md, the restricted lock and estimate.json as files (spec section 13).

:func:`capbench_nb.metrics.subset.select_subset` computes the subset document; here it becomes
``subset.md`` (:func:`subset_markdown`, which only reads the document) and the files of
:func:`write_subset` (with the restricted lock :func:`capbench_nb.metrics.subset.subset_lock` made);
:func:`write_estimate` writes estimate.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.lock import LOCK_FILE
from capbench_nb.format.subset import SUBSET_FILE
from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.metrics.subset import RULE
from capbench_nb.records.lock import dumps_lock
from capbench_nb.outputs.html.escaping import md_escape
from capbench_nb.outputs.html.formatting import fmt_interval, fmt_pct

__all__ = ["SUBSET_FILE", "SUBSET_MARKDOWN", "ESTIMATE_FILE", "LOCK_FILE", "subset_markdown", "write_subset",
           "read_handed", "write_estimate", "estimate_line"]

SUBSET_MARKDOWN = "subset.md"
ESTIMATE_FILE = "estimate.json"


def _num(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def subset_markdown(doc: dict, run_ids: Sequence[str] | None = None) -> str:
    """subset.md: the method, the strata, the validation figures and the chosen tasks with their pass rates."""
    runs = [e["run_id"] for e in doc["from_runs"]] if run_ids is None else list(run_ids)
    suite = doc["suite"] or {}
    v = doc["validation"]
    loo, rnd = v["leave_one_run_out"], v["random_subsets"]
    lines = [f"# Representative subset: {doc['size']} of {doc['full_tasks']} tasks of "
             f"{md_escape(suite.get('name'))} {md_escape(suite.get('version'))}", "",
             f"- Method: {md_escape(doc['method']['name'])} (seed {doc['method']['seed']}, k = {doc['method']['k']}); "
             "see docs/subset.md.",
             f"- Input runs: {', '.join(md_escape(r) for r in runs)}."]
    for dim, counts in doc["strata"].items():
        lines.append(f"- Strata by {md_escape(dim)}: " + ", ".join(f"{md_escape(k)} {n}" for k, n in counts.items()) + ".")
    lines += ["", "## Validation (leave one run out)", "",
              "| estimator | Kendall tau_b vs full-suite pass@1 | mean absolute error |", "|---|---|---|",
              f"| {md_escape(doc['method']['name'])} on the chosen tasks | {_num(loo['kendall_tau_b'])} | {_num(loo['mae'])} |",
              f"| plain mean, median of {rnd['count']} random {doc['size']}-task subsets | {_num(rnd['kendall_tau_b'])} | "
              f"{_num(rnd['mae'])} |", "",
              "| left-out run | estimate | 95% interval | full-suite pass@1 |", "|---|---|---|---|"]
    for e in loo["runs"]:
        lines.append(f"| {md_escape(runs[e['run']])} | {fmt_pct(e['estimate'])} | {fmt_interval(e['ci_low'], e['ci_high'])} | "
                     f"{fmt_pct(e['full_suite'])} |")
    lines += ["", "## Chosen tasks", "", "Pass rate: successes over eligible attempts 1..k in each input run.", "",
              "| task | stratum | difficulty (logits) | " + " | ".join(md_escape(r) for r in runs) + " |",
              "|" + "---|" * (3 + len(runs))]
    for e in doc["chosen"]:
        lines.append(f"| {md_escape(e['task_id'])} | {md_escape(e['stratum'])} | {e['difficulty']:.2f} | "
                     + " | ".join(fmt_pct(p) for p in e["pass_rate"]) + " |")
    return "\n".join(lines) + "\n"


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidRunError(str(path), RULE, f"cannot read JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidRunError(str(path), RULE, "not a JSON object")
    return doc


def write_subset(doc: dict, out_dir: str | os.PathLike, *, lock: dict | None = None) -> Path:
    """Write subset.json and subset.md into ``out_dir``, and ``lock`` (the subset's restricted lock,
    :func:`capbench_nb.metrics.subset.subset_lock`), when given, as suite.lock.json."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / SUBSET_FILE, dumps(doc))
    write_atomic(out / SUBSET_MARKDOWN, subset_markdown(doc))
    if lock is not None:
        write_atomic(out / LOCK_FILE, dumps_lock(lock))
    return out / SUBSET_FILE


def read_handed(path: str | os.PathLike | None) -> dict | None:
    """A JSON document the CLI handed to the subset notebook as a file (None for None)."""
    return None if path is None else _read_json(Path(path))


def write_estimate(doc: dict, out_dir: str | os.PathLike) -> Path:
    """Write estimate.json into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(out / ESTIMATE_FILE, dumps(doc))


def estimate_line(doc: dict) -> str:
    """estimate.json in one line: the run's pass@1 on the subset tasks, and the estimated full-suite pass@1."""
    rates = doc["pass@1"]
    subset, full = rates["subset"], rates["full_suite"]
    on_subset = ("n/a (no eligible task)" if subset["value"] is None else
                 f"{fmt_pct(subset['value'])} ({subset['successes']}/{subset['n']} tasks) "
                 f"{fmt_interval(subset['ci_low'], subset['ci_high'])}")
    return (f"pass@1 on the subset: {on_subset}; estimated full-suite pass@1: {fmt_pct(full['value'])} "
            f"{fmt_interval(full['ci_low'], full['ci_high'])} ({full['method']})")
