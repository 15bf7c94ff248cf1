"""``capbench-nb import tau-bench``: tau-bench result files as a run.

Input: what tau-bench's ``run.py`` writes, a JSON list of trials
``{"task_id", "trial", "reward", "info", "traj"}`` (``EnvRunResult``), or the
reduced JSON-lines form with one ``{"task_id", "trial", "reward"}`` per line.

Mapping (docs/importers.md has the table):

- task ``task_id`` -> ``str(task_id)``; the plan lists the distinct tasks
  (integers in numeric order, then strings);
- ``trial`` (0-based) -> ``attempt = trial + 1``; planned repeats for every
  task = the number of distinct trial ids (``num_trials``, as tau-bench's own
  ``display_metrics`` counts it);
- success = reward within 1e-6 of 1 (tau-bench's ``is_successful``);
  ``quality_score`` = reward (clipped to [0, 1] when within 1e-6 of it);
- a trial whose ``info`` records an exception (tau-bench's ``run.py`` writes
  ``info = {"error": str(e), "traceback": ...}`` with reward 0 when the agent
  loop raised) -> ``unknown``, not agent-eligible, evidence
  ``record.json#/info/error``.  tau-bench itself counts such a trial as a
  failure; here it leaves the task's denominators, like any crash (spec
  section 4, rule 3), and coverage shows it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError
from capbench_nb.format import MAX_REPEATS, MAX_SAFE_NUMBER, RUN_SCHEMA_VERSION
from capbench_nb.io.jsonparse import JsonMessages, json_error, parse_document
from capbench_nb.records.importers import common

__all__ = ["import_taubench", "read_trials"]

_KIND = "tau-bench results file"
#: The file as a whole that does not parse (or decode).
_FILE_MESSAGES = JsonMessages(utf8_rule="utf-8")
#: A line of the JSON-lines form that does not parse.
_LINE_MESSAGES = JsonMessages(syntax="not valid JSON: {msg} (column {colno}); expected a JSON list of trials "
                                     "or one trial object per line")


def _bad(file: str, message: str, *, line: int | None = None, rule: str = "tau-bench-format") -> InvalidRunError:
    return InvalidRunError(file, rule, message, line=line)


def read_trials(path: str | os.PathLike) -> tuple[list[tuple[int | None, dict]], str, bytes]:
    """Parse a tau-bench results file.

    Returns
    -------
    trials : list of (line, trial)
        Each trial object with the physical line it starts on (JSON lines)
        or None (JSON list, where its index names it).
    form : str
        ``"json"`` (a list of trials) or ``"jsonl"``.
    raw : bytes
        The file's bytes (its sha256 identifies the run).
    """
    file = str(path)
    raw = common.read_source_bytes(path, _KIND)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise json_error(exc, file=file, messages=_FILE_MESSAGES) from None
    if text.lstrip().startswith("["):  # tau-bench's own output: one list (its values checked by parse_document)
        doc = parse_document(text, file=file, messages=_FILE_MESSAGES, values=True)
        return [(None, t) for t in doc], "json", raw
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        doc = None  # JSON lines (or damage), read one by one below
    if isinstance(doc, list):  # a list after all (\ufeff or odd whitespace before it)
        doc = parse_document(text, file=file, messages=_FILE_MESSAGES, values=True)
        return [(None, t) for t in doc], "json", raw
    if doc is not None and not (isinstance(doc, dict) and "task_id" in doc):
        shown = f"an object with keys {common.describe(sorted(doc)[:6])}" if isinstance(doc, dict) \
            else common.describe(doc)
        hint = ("; a tau2-bench results file? use `capbench-nb import tau2-bench`"
                if isinstance(doc, dict) and "simulations" in doc and "info" in doc else "")
        raise _bad(file, f"expected a JSON list of trials or one trial object per line, found {shown}{hint}")
    trials = []
    for lineno, line in enumerate(text.split("\n"), start=1):  # "\n" only: U+2028 or \x85 may be inside a string
        if not line.strip():
            continue
        trials.append((lineno, parse_document(line, file=file, messages=_LINE_MESSAGES, line=lineno, values=True)))
    return trials, "jsonl", raw


def _checked_trials(file: str, trials: list) -> tuple[list[tuple[str, int, float, dict]], dict[str, int | str]]:
    """Every trial as ``(task_id, trial, reward, trial object)``, checked, and the task ids as the file has them.

    Raises InvalidRunError naming the trial (or line) for a trial that is no object, lacks a key,
    has a value of the wrong type, or repeats a (task, trial).
    """
    seen: dict[tuple[str, int], str] = {}
    ids: dict[str, int | str] = {}
    parsed = []
    for index, (line, trial) in enumerate(trials):
        where = f"trial {index}" if line is None else "this line"
        if not isinstance(trial, dict):
            raise _bad(file, f"{where}: a trial must be an object, found {common.describe(trial)}", line=line)
        for key in ("task_id", "trial", "reward"):
            if key not in trial:
                raise _bad(file, f"{where}: the trial has no {key!r}", line=line)
        tid, number, reward = trial["task_id"], trial["trial"], trial["reward"]
        if not (type(tid) is int or (isinstance(tid, str) and tid)):
            raise _bad(file, f"{where}: task_id must be an integer or a non-empty string, found "
                             f"{common.describe(tid)}", line=line)
        if type(number) is not int or not 0 <= number < MAX_SAFE_NUMBER:
            raise _bad(file, f"{where}: trial must be an integer from 0 to 2**53-2, found {common.describe(number)}",
                       line=line)
        if type(reward) is int and abs(reward) > MAX_SAFE_NUMBER:  # float() would overflow (or round)
            raise _bad(file, f"{where}: reward {common.describe(reward)} is an integer beyond 2**53-1", line=line,
                       rule="number-too-large")
        if type(reward) not in (int, float) or not math.isfinite(reward):
            raise _bad(file, f"{where}: reward must be a finite number, found {common.describe(reward)}", line=line)
        task_id = str(tid)
        if task_id in ids and ids[task_id] != tid:
            raise _bad(file, f"{where}: task_id {common.describe(tid)} and {common.describe(ids[task_id])} "
                             f"both read as task {task_id!r}",
                       line=line)
        ids[task_id] = tid
        label = where if line is None else f"line {line}"
        if (task_id, number) in seen:
            raise _bad(file, f"{where}: task {task_id!r} trial {number} is also recorded at {seen[(task_id, number)]}",
                       line=line, rule="duplicate-attempt")
        seen[(task_id, number)] = label
        parsed.append((task_id, number, float(reward), trial))
    return parsed, ids


def _attempt(task_id: str, number: int, reward: float, trial: dict) -> common.ImportedAttempt:
    """One trial as an attempt: an errored one ``unknown`` and ineligible, else success by its reward."""
    rec = common.base_record(task_id, number + 1)
    key = _error_key(trial.get("info"))
    if key is not None:
        rec.update(success=False, agent_eligible=False, failure_class="unknown",
                   evidence=[common.RECORD_FILE + "#" + common.pointer("info", key)])
    else:
        success = abs(reward - 1.0) <= common.SUCCESS_TOLERANCE
        rec.update(success=success, agent_eligible=True, failure_class="" if success else "agent",
                   quality_score=common.unit_score(reward))
    return common.ImportedAttempt(rec, trial)


def _error_key(info: Any) -> str | None:
    """The ``info`` key recording an exception (``error``, else ``traceback``), or None."""
    if not isinstance(info, dict):
        return None
    for key in ("error", "traceback"):
        value = info.get(key)
        if value not in (None, "", False, [], {}):
            return key
    return None


def _task_order(task_id: int | str) -> tuple:
    return (0, task_id, "") if isinstance(task_id, int) else (1, 0, task_id.encode("utf-8", "surrogatepass"))


def import_taubench(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    force: bool = False,
    suite: str | None = None,
    model: str | None = None,
    run_id: str | None = None,
) -> common.ImportReport:
    """Import a tau-bench results file as a run directory at ``out``.

    Parameters
    ----------
    path : path-like
        A JSON list of trials (tau-bench's output) or its reduced JSON-lines form.
    out : path-like
        The run directory to write (must be absent or empty; with ``force``, a
        previous run directory there is replaced).
    suite, model, run_id : str, optional
        What the file does not record: the suite name (default ``tau-bench``),
        ``config.model`` (default absent) and the run id (default
        ``tau-bench-`` + the first 16 hex digits of the file's sha256).

    Raises
    ------
    InvalidRunError
        Unreadable input, a trial without an integer ``trial`` >= 0, a
        ``task_id`` that is not an integer or non-empty string, a reward that
        is not a finite number, a duplicate (task, trial), or an output that
        must not be replaced.
    """
    file = str(path)
    with common.guarded(file, _KIND):
        return _import(file, out, force=force, suite=suite, model=model, run_id=run_id)


def _import(file: str, out: str | os.PathLike, *, force: bool, suite: str | None, model: str | None,
            run_id: str | None) -> common.ImportReport:
    trials, form, raw = read_trials(file)
    if not trials:
        raise _bad(file, "the file holds no trials")

    parsed, ids = _checked_trials(file, trials)

    trial_ids = sorted({number for _, number, _, _ in parsed})
    repeats = len(trial_ids)
    if repeats > MAX_REPEATS:
        raise _bad(file, f"the file has {repeats} distinct trial ids, above the limit of {MAX_REPEATS} planned "
                         "repeats (MAX_REPEATS)", rule="repeats-too-large")
    order = sorted(ids.values(), key=_task_order)
    attempts = [_attempt(task_id, number, reward, trial) for task_id, number, reward, trial in parsed]

    complete = len(parsed) == len(order) * repeats and trial_ids == list(range(repeats))
    digest = common.sha256_hex(raw)
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id or common.readable_run_id("tau-bench", [model, suite], digest),
        "suite": {"name": suite or "tau-bench"},
        "status": "completed" if complete else "partial",
        "runner": {"name": "tau-bench"},
        "config": {"model": model} if model else {},
        "plan": {
            "repeats_override": None,
            "k": repeats,
            "tasks": [{"task_id": str(t), "repeats": repeats} for t in order],
        },
        "import": {
            "from": "tau-bench",
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "sources": [{"file": Path(file).name, "sha256": digest, "format": form, "trials": len(parsed)}],
            "record_file": common.RECORD_FILE,
        },
    }
    return common.write_imported_run(out, manifest, attempts, force=force, sources=[file])
