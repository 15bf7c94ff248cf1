"""The explorer of report.html: every planned task, its attempts and their evidence, as page data.

:func:`page_data` gathers what the explorer shows from the metrics document (``per_task``: counts,
first success, cost to first success, oracle score; ``health.per_task``: consistency,
ineligibility, quarantine; never recomputed) and from the loaded run (each
counted attempt's outcome, stage, quality score, telemetry, evidence and artifact files).
:func:`explorer_html` renders it as one JSON data island (``<script type="application/json">``,
with ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes) followed by the page's own small
inline script (``page_assets/explorer.js``), which reads the island with ``JSON.parse`` and inserts
every run-supplied string as text, never as markup.  Nothing is loaded from the network.

Size policy
-----------
report.html carries every planned task and every counted attempt, with these limits:

- every planned task is in the task table, with its outcome code for each planned attempt
  (``S`` success, ``A`` agent, ``E`` environment, ``V`` evaluation, ``K`` skipped, ``U`` unknown
  and eligible, ``X`` unknown and not eligible, ``.`` no record), none cut;
- up to :data:`FULL_DETAIL_ATTEMPTS` counted attempts, every attempt has its details (stage,
  quality score, cost, telemetry, evidence references, artifact files); in a larger run the
  details of successful attempts are summarised (the attempt grid still shows each one as a
  success), while every failed or ineligible attempt keeps all of its details;
- the artifacts of at most :data:`RESOLVE_BUDGET` attempts are read (failed and ineligible
  attempts first, in plan order): for those, each evidence reference is resolved inline to the
  JSON value its pointer names (shown up to :data:`VALUE_CHARS` characters), the error message of
  an errored or crashed attempt is shown, and artifact files are linked only when they exist;
  beyond the budget the references and files are named and linked unchecked;
- artifact links are relative to the folder the report is read from (``report_dir``), so they
  keep working when the run and the report are moved together; without a ``report_dir`` they are
  relative to the working directory.

Measured with ``benchmarks/report_size.py``: a 100,000-attempt run gives a report of about
10 MB that is interactive in headless Chromium in well under 3 s.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from capbench_nb.format import CLASS_KEYS, FAILURE_STAGES, TELEMETRY
from capbench_nb.io.pointer import EvidenceError
from capbench_nb.metrics.health import CONSISTENCY, INELIGIBLE_KEYS
from capbench_nb.records.evidence import EvidenceResolver

__all__ = [
    "FULL_DETAIL_ATTEMPTS",
    "RESOLVE_BUDGET",
    "VALUE_CHARS",
    "OUTCOME_CODES",
    "outcome_codes",
    "page_data",
    "island_json",
    "explorer_html",
]

#: Counted attempts up to which every attempt keeps its details (beyond: successes are summarised).
FULL_DETAIL_ATTEMPTS = 200_000
#: Attempts whose artifacts are read (evidence values, error messages, file checks).
RESOLVE_BUDGET = 20_000
#: Characters of an evidence value shown inline.
VALUE_CHARS = 2_000
#: Characters of an error message shown.
ERROR_CHARS = 600

#: One character per attempt outcome: success, the failure classes, unknown split by eligibility.
OUTCOME_CODES = {"success": "S", "agent": "A", "environment": "E", "evaluation": "V", "skipped": "K",
                 "unknown": "U", "unknown_ineligible": "X", "missing": "."}

_ASSETS = "page_assets"
_ISLAND_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def outcome_codes(attempts: pd.DataFrame) -> np.ndarray:
    """The outcome code (:data:`OUTCOME_CODES`) of each row of an attempts table, as a ``<U1`` array."""
    n = len(attempts)
    if not n:
        return np.array([], dtype="<U1")
    success = attempts["success"].to_numpy(dtype=bool, na_value=False)
    eligible = attempts["agent_eligible"].to_numpy(dtype=bool, na_value=False)
    fclass = attempts["failure_class"].astype(object).to_numpy()
    codes = np.full(n, "U", dtype="<U1")
    for cls in ("agent", "environment", "evaluation", "skipped"):
        codes[fclass == cls] = OUTCOME_CODES[cls]
    codes[(codes == "U") & ~eligible] = "X"
    codes[success] = "S"
    return codes


def _numbers(column: pd.Series) -> list:
    """A numeric or boolean column as JSON-ready values: integral numbers as ints, booleans as 1/0, nulls as None."""
    if pd.api.types.is_bool_dtype(column.dtype):
        values = column.to_numpy(dtype="float64", na_value=np.nan)
    else:
        values = column.to_numpy(dtype="float64", na_value=np.nan)
    missing = np.isnan(values)
    if not missing.all() and np.all(np.mod(values[~missing], 1) == 0) and np.all(np.abs(values[~missing]) < 2**53):
        out = np.where(missing, 0, values).astype(np.int64).tolist()
    else:
        out = [round(v, 6) for v in np.where(missing, 0, values).tolist()]
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out


def _json_list(text: Any) -> list[str]:
    """An evidence or telemetry_source cell (JSON text, a list, or null) as a list of strings."""
    if text is None or text is pd.NA or (isinstance(text, float) and np.isnan(text)):
        return []
    if isinstance(text, (list, tuple)):
        return [str(v) for v in text]
    if isinstance(text, Mapping):
        return [str(v) for v in text.values()]
    try:
        value = json.loads(str(text))
    except ValueError:
        return [str(text)]
    if isinstance(value, Mapping):
        return [str(v) for v in value.values()]
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _per_category(column: pd.Series, fn) -> list:
    """``fn`` applied once per distinct value of a (category or object) column, mapped back to every row."""
    codes, uniques = pd.factorize(column.astype(object), use_na_sentinel=True)
    mapped = [fn(u) for u in uniques]
    empty = fn(None)
    return [mapped[c] if c >= 0 else empty for c in codes.tolist()]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def _value_text(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, indent=1, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, VALUE_CHARS)


_ATTEMPT_ERRORS = (  # where attempt.json says why an attempt did not run or finish (spec section 4)
    ("skip", "reason", "skipped"),
    ("setup", "error", "setup failed"),
    ("provider", "error", "provider unavailable"),
    ("agent", "error", "agent error"),
    ("evaluation", "judge", "judge error"),
)


def _message_in(value: Any) -> str | None:
    """An error message inside a resolved evidence value (an error object or string)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        for key in ("message", "error", "reason"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
    return None


def _attempt_json_error(doc: Any) -> str | None:
    """The error of an attempt as attempt.json records it, or None."""
    if not isinstance(doc, Mapping):
        return None
    for section, key, what in _ATTEMPT_ERRORS:
        part = doc.get(section)
        if not isinstance(part, Mapping):
            continue
        if section == "evaluation":
            judge = part.get("judge")
            if isinstance(judge, Mapping) and judge.get("status") == "error":
                return f"{what}: {judge.get('error') or 'no message'} (attempt.json#/evaluation/judge)"
            continue
        if isinstance(part.get(key), str) and part[key]:
            return f"{what}: {part[key]} (attempt.json#/{section}/{key})"
    agent = doc.get("agent")
    if isinstance(agent, Mapping) and agent.get("status") in ("crashed", "timeout", "error"):
        return f"the agent {agent['status']} (attempt.json#/agent/status)"
    return None


class _Artifacts:
    """Reads an attempt's artifacts for the page, inside the run only (:class:`EvidenceResolver`)."""

    def __init__(self, run_dir: Path) -> None:
        self.resolver = EvidenceResolver(run_dir, cache_size=2048)

    def evidence(self, adir: str | None, refs: list[str]) -> tuple[list[list], str | None]:
        """Each reference with its value's text (or why it did not resolve), and the first error message in them."""
        out, message = [], None
        for ref in refs:
            try:
                value = self.resolver.resolve(adir, ref)
            except (EvidenceError, OSError, ValueError) as exc:
                out.append([ref, None, str(exc)])
                continue
            out.append([ref, _value_text(value), None])
            found = _message_in(value)
            if message is None and found:
                message = f"{found} ({ref})"
        return out, message

    def exists(self, adir: str, file: str) -> bool:
        try:
            real, _, _ = self.resolver.locate(adir, file + "#")
        except (EvidenceError, OSError, ValueError):
            return False
        return os.path.isfile(real)

    def attempt_error(self, adir: str | None) -> str | None:
        """What attempt.json says went wrong, when the evidence held no message."""
        if adir is None:
            return None
        try:
            return _attempt_json_error(self.resolver.resolve(adir, "attempt.json#"))
        except (EvidenceError, OSError, ValueError):
            return None


def _link_base(run_dir: Path, report_dir: str | os.PathLike | None) -> str:
    """The run directory as a percent-encoded path relative to where the report is read from."""
    start = os.path.abspath(report_dir) if report_dir is not None else os.getcwd()
    rel = posixpath.normpath(os.path.relpath(os.path.abspath(run_dir), start).replace(os.sep, "/"))
    # quote() leaves only unreserved characters and "/": no scheme, query or fragment can appear.
    return "" if rel == "." else quote(rel, safe="/") + "/"


def _aligned(entries: Any, ids: list[str]) -> list[Mapping]:
    """The document's per-task entries in plan order (``{}`` for a task the list lacks)."""
    entries = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    by_id = {e.get("task_id"): e for e in entries}
    return [entries[i] if i < len(entries) and entries[i].get("task_id") == t else by_id.get(t, {})
            for i, t in enumerate(ids)]


def _health_columns(doc: Mapping, ids: list[str]) -> dict:
    """The explorer's suite-health columns from the document's ``health.per_task`` (null without one):
    ``consistency`` an index into :data:`CONSISTENCY` (null: not k-eligible), ``ineligible`` the
    counts by class of :data:`INELIGIBLE_KEYS`, ``quarantine`` 1 or 0."""
    health = doc.get("health") if isinstance(doc.get("health"), Mapping) else {}
    rows = _aligned(health.get("per_task"), ids)
    words = {w: i for i, w in enumerate(CONSISTENCY)}

    def ineligible(e):
        by = e.get("ineligible")
        return [by.get(c) for c in INELIGIBLE_KEYS] if isinstance(by, Mapping) else None

    return {
        "consistency": [words.get(e.get("consistency")) for e in rows],
        "ineligible": [ineligible(e) for e in rows],
        "quarantine": [None if e.get("quarantine") is None else int(bool(e.get("quarantine"))) for e in rows],
    }


def _task_table(doc: Mapping, run, codes_by_task: list[str]) -> dict:
    plan = run.plan
    ids = [str(t) for t in plan["task_id"].astype(object)]
    rows = _aligned(doc.get("per_task"), ids)

    def cost(e, key):
        c = e.get("cost_to_first_success")
        return c.get(key) if isinstance(c, Mapping) else None

    labels = []
    for name in plan.columns:
        if name in ("task_id", "planned_repeats"):
            continue
        values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else str(v)
                  for v in plan[name].astype(object)]
        distinct = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(distinct)}
        labels.append({"name": str(name), "values": distinct, "codes": [index.get(v) for v in values]})
    return {
        "id": ids,
        "labels": labels,
        "planned": [int(p) for p in plan["planned_repeats"]],
        "outcomes": codes_by_task,
        "attempts": [e.get("attempts") for e in rows],
        "eligible": [e.get("eligible") for e in rows],
        "successes": [e.get("successes") for e in rows],
        "k_eligible": [None if e.get("k_eligible") is None else int(bool(e.get("k_eligible"))) for e in rows],
        "first_success": [e.get("first_success_attempt") for e in rows],
        "wall_to_first": [cost(e, "task_wall_ms") for e in rows],
        "tokens_to_first": [cost(e, "total_tokens") for e in rows],
        "cost_to_first": [cost(e, "cost") for e in rows],
        "oracle": [e.get("oracle_best_score") for e in rows],
        **_health_columns(doc, ids),
    }


def _ordered_attempts(run) -> tuple[pd.DataFrame, np.ndarray]:
    """The counted attempts in plan order then attempt order, and each one's task position."""
    a = run.attempts
    pos = pd.Index(run.plan["task_id"].astype(object)).get_indexer(a["task_id"].astype(object))
    order = np.lexsort((a["attempt"].to_numpy(dtype="int64"), pos))
    return a.iloc[order], pos[order]


def _outcome_strings(run, pos: np.ndarray, nums: np.ndarray, codes: np.ndarray) -> list[str]:
    planned = run.plan["planned_repeats"].to_numpy(dtype="int64")
    offsets = np.concatenate([[0], np.cumsum(planned)])
    cells = np.full(int(offsets[-1]), ord("."), dtype=np.uint8)
    if len(codes):
        cells[offsets[pos] + nums - 1] = np.frombuffer("".join(codes.tolist()).encode("ascii"), dtype=np.uint8)
    raw = cells.tobytes().decode("ascii")
    return [raw[offsets[i]:offsets[i + 1]] for i in range(len(planned))]


# long function: one pass over the attempts builds every column of the page's attempt table
def page_data(doc: Mapping, run, *, report_dir: str | os.PathLike | None = None,
              full_detail: int = FULL_DETAIL_ATTEMPTS, resolve_budget: int = RESOLVE_BUDGET) -> dict:
    """The explorer's page data of a run: every planned task and every counted attempt.

    Parameters
    ----------
    doc : dict
        The metrics.json document (``per_task``, ``k``).
    run : Run
        The loaded run (attempt outcomes, stages, telemetry, evidence, artifact directories).
    report_dir : path-like, optional
        The folder report.html is read from: artifact links are relative to it.
    full_detail, resolve_budget : int
        The size policy's limits (see the module docstring).

    Returns
    -------
    dict
        ``tasks`` (one entry per planned task, columns as lists), ``attempts`` (the detailed
        attempts in plan then attempt order, columns as lists: task ``i``'s rows are
        ``start[i]:start[i+1]``; ``code`` and ``stage`` one character per row; ``dir`` null,
        -1 for the conventional ``attempts/<task>/<attempt>`` or an index into ``dirs``;
        ``files`` an index into ``file_sets``, lists of indices into ``files``, negative
        ``-1-i`` when the file was looked for and is missing; ``evidence`` and ``errors`` keyed
        by row), the vocabularies (``classes``, ``stages``, ``telemetry`` with units) and
        ``policy`` (what was summarised or left unresolved).
    """
    a, pos = _ordered_attempts(run)
    nums = a["attempt"].to_numpy(dtype="int64")
    codes = outcome_codes(a)
    tasks = _task_table(doc, run, _outcome_strings(run, pos, nums, codes))
    summarised = len(a) > full_detail
    keep = np.flatnonzero(codes != "S") if summarised else np.arange(len(a))
    d, dpos, dcodes = a.iloc[keep], pos[keep], codes[keep]
    ids = tasks["id"]
    adirs = d["artifact_dir"].astype(object).to_numpy()
    stage_index = {s: i for i, s in enumerate(FAILURE_STAGES)}
    stages = [stage_index.get(s) if isinstance(s, str) else None for s in d["failure_stage"].astype(object)]
    evidence = _per_category(d["evidence"], _json_list)
    sources = _per_category(d["telemetry_source"], lambda v: sorted({r.partition("#")[0] for r in _json_list(v)}))
    files: list[str] = []
    file_index: dict[str, int] = {}
    file_sets: list[list[int]] = []
    set_index: dict[tuple, int] = {}
    dir_values: list[str] = []
    dir_index: dict[str, int] = {}
    artifacts = _Artifacts(run.path)
    dirs, file_of, ev_out, err_out = [], [], {}, {}
    # failed and ineligible attempts first: they are the ones a reader opens
    first = np.concatenate([np.flatnonzero(dcodes != "S"), np.flatnonzero(dcodes == "S")])[:resolve_budget]
    in_budget = np.zeros(len(d), dtype=bool)
    in_budget[first] = True
    dnums = nums[keep].tolist()
    for r in range(len(d)):
        adir = adirs[r] if isinstance(adirs[r], str) else None
        if adir is None:
            dirs.append(None)
        elif adir == f"attempts/{ids[dpos[r]]}/{dnums[r]}":
            dirs.append(-1)  # the conventional directory, rebuilt by the script
        else:
            dirs.append(dir_index.setdefault(adir, len(dir_values)))
            if dirs[-1] == len(dir_values):
                dir_values.append(adir)
        refs = evidence[r]
        resolved = bool(in_budget[r])
        message = None
        if refs and resolved:
            ev_out[r], message = artifacts.evidence(adir, refs)
        elif refs:
            ev_out[r] = [[ref, None, None] for ref in refs]
        if resolved and dcodes[r] != "S":
            message = message or artifacts.attempt_error(adir)
            if message:
                err_out[r] = _clip(message, ERROR_CHARS)
        named = sorted({ref.partition("#")[0] for ref in refs} | set(sources[r]))
        if adir is None or not named:
            file_of.append(None)
            continue
        entry = []
        for f in named:
            i = file_index.setdefault(f, len(files))
            if i == len(files):
                files.append(f)
            entry.append(i if not resolved or artifacts.exists(adir, f) else -1 - i)
        key = tuple(entry)
        file_of.append(set_index.setdefault(key, len(file_sets)))
        if file_of[-1] == len(file_sets):
            file_sets.append(entry)
    starts = np.searchsorted(dpos, np.arange(len(ids) + 1)).tolist() if len(ids) else [0]
    telemetry = [[t.name, t.unit, t.kind] for t in TELEMETRY]
    return {
        "version": 1,
        "k": int(doc.get("k") or run.k),
        "classes": list(CLASS_KEYS),
        "stages": list(FAILURE_STAGES),
        "telemetry": telemetry,
        "files": files,
        "file_sets": file_sets,
        "dirs": dir_values,
        "link_base": _link_base(run.path, report_dir),
        "tasks": tasks,
        "attempts": {
            "start": starts,
            "attempt": dnums,
            "code": "".join(dcodes.tolist()),
            "stage": "".join("." if st is None else str(st) for st in stages),
            "quality": _numbers(d["quality_score"]),
            "cost": _numbers(d["cost"]),
            "telemetry": [_numbers(d[t.name]) for t in TELEMETRY],
            "dir": dirs,
            "evidence": ev_out,
            "errors": err_out,
            "files": file_of,
        },
        "policy": {
            "attempts": int(len(a)),
            "detailed": int(len(d)),
            "successes_summarised": bool(summarised),
            "full_detail": int(full_detail),
            "resolved": int(len(first)),
            "resolve_budget": int(resolve_budget),
        },
    }


def island_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script type="application/json">`` element.

    ASCII only (``\\u`` escapes for every other character, lone surrogates included), and ``<``,
    ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes: no ``</script>``, ``<!--`` or entity can
    appear, and ``JSON.parse`` of the element's text gives back every string exactly.
    """
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for ch, esc in _ISLAND_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def _asset(name: str) -> str:
    return resources.files("capbench_nb.outputs").joinpath(_ASSETS, name).read_text(encoding="utf-8")


def explorer_html(doc: Mapping, run, *, report_dir: str | os.PathLike | None = None,
                  element_id: str = "cb-explorer", **limits) -> str:
    """The explorer as one HTML block: its style, a container, the JSON data island and the script.

    ``element_id`` names the container (the island is ``ELEMENT_ID-data``); it must be a plain
    identifier (letters, digits, ``-`` and ``_``), never run data.
    """
    if not element_id.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"element_id must be a plain identifier, got {element_id!r}")
    data = island_json(page_data(doc, run, report_dir=report_dir, **limits))
    return (
        f"<style>{_asset('explorer.css')}</style>"
        f'<div class="cbx" id="{element_id}" data-island="{element_id}-data">'
        '<p class="cbx-loading">The task explorer needs JavaScript.</p></div>'
        f'<script type="application/json" id="{element_id}-data">{data}</script>'
        f"<script>{_asset('explorer.js')}</script>"
    )
