"""subset.json, subset.md, the restricted lock and estimate.json as files (spec section 13).

:func:`capbench_nb.metrics.subset.select_subset` computes the subset document; here it becomes
``subset.md`` (:func:`subset_markdown`, which only reads the document) and the files of
:func:`write_subset`; :func:`write_estimate` writes estimate.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.metrics.subset import RULE
from capbench_nb.records.lock import load_lock, lock_digest
from capbench_nb.outputs.html.escaping import md_escape
from capbench_nb.outputs.html.formatting import fmt_interval, fmt_pct

__all__ = ["SUBSET_FILE", "SUBSET_MARKDOWN", "ESTIMATE_FILE", "LOCK_FILE", "subset_markdown", "write_subset",
           "read_subset", "write_estimate", "restrict_lock", "restrict_lock_file"]

SUBSET_FILE = "subset.json"
SUBSET_MARKDOWN = "subset.md"
ESTIMATE_FILE = "estimate.json"
LOCK_FILE = "suite.lock.json"


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


def restrict_lock(lock_doc: dict, task_ids: Sequence[str], suffix: str, selection: dict | None = None) -> dict:
    """The lock restricted to ``task_ids`` (lock order), ``suite.version`` + ``suffix``, ``selection``, a new digest."""
    wanted = set(task_ids)
    have = {t.get("task_id") for t in lock_doc.get("tasks", [])}
    missing = sorted(wanted - have)
    if missing:
        raise InvalidRunError("suite.lock.json", RULE, f"{len(missing)} subset task(s) not in the lock, "
                              f"e.g. {missing[0]!r}")
    out = json.loads(json.dumps(lock_doc))
    out["suite"] = {**out["suite"], "version": f"{out['suite']['version']}{suffix}"}
    out["tasks"] = [t for t in out["tasks"] if t.get("task_id") in wanted]
    out["selection"] = selection
    out.pop("digest", None)
    out["digest"] = lock_digest(out)
    return out


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidRunError(str(path), RULE, f"cannot read JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidRunError(str(path), RULE, "not a JSON object")
    return doc


def read_subset(path: str | os.PathLike) -> dict:
    """subset.json (a file, or a directory holding one), checked for its schema."""
    path = Path(path)
    path = path / SUBSET_FILE if path.is_dir() else path
    doc = _read_json(path)
    if doc.get("schema_version") != "capbench.subset/1" or not isinstance(doc.get("estimator"), dict):
        raise InvalidRunError(str(path), RULE, "not a capbench.subset/1 document with an estimator")
    return doc


def restrict_lock_file(doc: dict, lock: str | os.PathLike | None) -> dict | None:
    """The lock file ``lock`` restricted to the subset ``doc`` (spec section 13), None without a lock."""
    if lock is None:
        return None
    selection = {k: v for k, v in doc.items() if k != "validation"}
    # the input lock is validated (its digest included) as `suite check` reads it
    return restrict_lock(dict(load_lock(Path(lock))), doc["tasks"], f"+subset{doc['size']}", selection)


def write_subset(doc: dict, out_dir: str | os.PathLike, *, lock: str | os.PathLike | None = None) -> Path:
    """Write subset.json and subset.md (and, with ``lock``, the restricted suite.lock.json) into ``out_dir``."""
    out = Path(out_dir)
    lock_out = restrict_lock_file(doc, lock)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / SUBSET_FILE, dumps(doc))
    write_atomic(out / SUBSET_MARKDOWN, subset_markdown(doc))
    if lock_out is not None:
        write_atomic(out / LOCK_FILE, json.dumps(lock_out, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return out / SUBSET_FILE


def write_estimate(doc: dict, out_dir: str | os.PathLike) -> Path:
    """Write estimate.json into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(out / ESTIMATE_FILE, dumps(doc))
