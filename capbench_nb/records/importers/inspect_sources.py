"""Which inspect_ai logs one import reads, and which of their samples stand.

- **Folders.** A folder given as input stands for every ``.eval`` and ``.json`` file directly in it,
  in name order; anything else (subfolders, other files) is skipped with a note.  The files inspect
  writes beside the logs of an ``eval_set`` (``eval-set.json``, the ``logs.json`` listing and
  ``.eval-set-id``) are no logs: they are skipped with a note wherever they are named, so that
  ``logs/*`` works too, and ``eval-set.json`` is read for that note (its tasks without a log).
- **eval_retry chains.** ``eval_retry`` (and ``eval_set``'s retries) write a new log of the same
  ``eval.task_id``, holding the samples the old one completed and the reruns of the rest; the stopped
  log stays beside it.  In logs of one task id the newest (``eval.created``) wins for each (sample,
  epoch) it holds; an older log keeps only what no newer one holds.  One note per chain says so.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.jsonparse import JsonMessages, parse_document
from capbench_nb.records.importers import common

__all__ = ["SIDE_FILES", "log_paths", "side_notes", "newest_samples", "epochs_note"]

#: Files inspect writes into a log folder that are not logs: the eval set's manifest, the folder's
#: listing of log headers, and the eval set's id.
SIDE_FILES = ("eval-set.json", "logs.json", ".eval-set-id")
LOG_SUFFIXES = (".eval", ".json")
#: eval-set.json is read only for a note; a larger one is not read.
_MAX_EVAL_SET_BYTES = 4 << 20


def _names(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(repr(i) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def log_paths(paths: list[str | os.PathLike]) -> tuple[list[str], list[str], list[list[Path]]]:
    """The log files ``paths`` name (folders expanded), the notes on what was skipped, and the
    inspect side files met (one group per folder, or one named alone), for :func:`side_notes`.

    Raises InvalidRunError for a folder without any log in it, and when no log is left at all.
    """
    files: list[str] = []
    notes: list[str] = []
    sides: list[list[Path]] = []
    for path in paths:
        here = Path(path)
        if here.name in SIDE_FILES and not here.is_dir():  # e.g. logs/* named it
            sides.append([here])
            continue
        if not here.is_dir():
            files.append(str(path))
            continue
        entries = sorted(os.listdir(here))
        found = [n for n in entries if n.endswith(LOG_SUFFIXES) and n not in SIDE_FILES and (here / n).is_file()]
        side = [n for n in entries if n in SIDE_FILES]
        other = [n for n in entries if n not in side and n not in found]
        if not found:
            raise InvalidRunError(str(path), "import-missing", "a directory with no .eval or .json log in it")
        files.extend(str(here / n) for n in found)
        if side:
            sides.append([here / n for n in side])
        if other:
            notes.append(f"{path}: skipped {len(other)} entr{'y' if len(other) == 1 else 'ies'} that "
                         f"{'is' if len(other) == 1 else 'are'} no .eval or .json log: {_names(other)}")
    if not files:
        raise InvalidRunError(str(paths[0]), "import-missing", "no inspect log among the inputs")
    return files, notes, sides


def side_notes(sides: list[list[Path]], task_ids: set[str]) -> list[str]:
    """One note per group of inspect side files: skipped, and what ``eval-set.json`` says (the eval set's
    id and tasks, and those with no log among the inputs).  The file is only described, never trusted:
    one that cannot be read says so in its note."""
    notes = []
    for group in sides:
        names = ", ".join(p.name for p in group)
        place = group[0].parent if len(group) > 1 or group[0].name != "eval-set.json" else group[0]
        about = ""
        if any(p.name == "eval-set.json" for p in group):
            about = _eval_set(next(p for p in group if p.name == "eval-set.json"), task_ids) + "; "
        notes.append(f"{place}: {about}skipped {names}, inspect's side file(s), not logs")
    return notes


def _eval_set(path: Path, task_ids: set[str]) -> str:
    try:
        raw = common.read_source_bytes(path, "eval-set.json", limit=_MAX_EVAL_SET_BYTES)
        doc = parse_document(raw, file=str(path), messages=JsonMessages(), values=True)
    except InvalidRunError as exc:
        return f"eval-set.json not read ({exc.message})"
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list):
        return "eval-set.json holds no list of tasks"
    entries = [t for t in tasks if isinstance(t, dict)]
    listed = [t for t in entries if isinstance(t.get("task_id"), str)]
    missing = [str(t.get("name", t["task_id"])) for t in listed if t["task_id"] not in task_ids]
    set_id = doc.get("eval_set_id")
    named = f" {common.describe(set_id)}" if isinstance(set_id, str) else ""
    tail = (f", {len(missing)} of them without a log here: {_names(missing)}" if missing
            else ", each with a log here" if listed else "")
    unmatched = len(entries) - len(listed)
    if unmatched:  # an older inspect's eval-set.json lists its tasks without their ids
        tail += (f"; {unmatched} listed without a task_id (an older inspect's eval-set.json), so not matched to "
                 "the logs")
    return f"eval set{named} of {len(entries)} task(s){tail}"


def _created(header: dict) -> float:
    text = header["eval"].get("created")
    try:
        return datetime.fromisoformat(text).timestamp() if isinstance(text, str) else float("-inf")
    except (ValueError, OverflowError, OSError):  # not a time, or one outside what the platform represents
        return float("-inf")


def newest_samples(logs: list[Any], key: Callable[[dict], Any], duplicate: Callable[[Any, Any, Any], InvalidRunError]
                   ) -> tuple[dict[int, list[dict]], list[str], set[int]]:
    """The samples that stand in each log (by position in ``logs``), one note per eval_retry chain, and
    the positions of the logs a newer log of their chain follows.

    Logs of one task (``eval.task``) and ``eval.task_id`` (a non-empty string) form a chain, newest
    ``eval.created`` first: a log's samples whose ``key(sample)`` a newer log of its chain holds are
    dropped.  Two logs created at the same time that hold the same key cannot be ordered:
    ``duplicate(key, log, other)`` is raised.
    """
    chains: dict[tuple[Any, str], list[int]] = {}
    for i, log in enumerate(logs):
        task_id = log.header["eval"].get("task_id")
        if isinstance(task_id, str) and task_id:
            chains.setdefault((log.header["eval"].get("task"), task_id), []).append(i)
    kept = {i: list(log.samples) for i, log in enumerate(logs)}
    notes = []
    older: set[int] = set()
    for (_, task_id), members in chains.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: _created(logs[i].header), reverse=True)
        held: dict[Any, tuple[int, float]] = {}
        replaced = 0
        for i in members:
            stamp = _created(logs[i].header)
            mine = []
            for sample in logs[i].samples:
                k = key(sample)
                if k in held:  # a newer log of the chain holds it (one created at the same time: no order)
                    if held[k][1] == stamp:
                        raise duplicate(k, logs[i], logs[held[k][0]])
                    replaced += 1
                    continue
                mine.append(sample)
            held.update((key(s), (i, stamp)) for s in mine)
            kept[i] = mine
        newest = logs[members[0]]
        older.update(members[1:])
        notes.append(f"eval_retry: {len(members)} logs of task {common.describe(newest.header['eval'].get('task'))} "
                     f"(eval task id {common.describe(task_id)}): the newest, {Path(newest.file).name}, stands for "
                     f"the {len(newest.samples)} sample epoch(s) it holds ({replaced} in older logs replaced; "
                     f"{sum(len(kept[i]) for i in members[1:])} of theirs kept)")
    return kept, notes, older


def epochs_note(plan: dict[str, dict]) -> str | None:
    """A note when the merged logs plan different epochs: each task is planned by its own log's."""
    by_task: dict[str, int] = {}
    for entry in plan.values():
        by_task.setdefault(str(entry["task"]), entry["repeats"])
    if len(set(by_task.values())) < 2:
        return None
    shown = ", ".join(f"{common.describe(t)} {n}" for t, n in sorted(by_task.items()))
    k = min(by_task.values())
    return (f"the logs have different epochs ({shown}): each task is planned with its own log's epochs, and "
            f"k = {k}, the smallest (pass@k and pass^k read attempts 1..{k} of every task)")
