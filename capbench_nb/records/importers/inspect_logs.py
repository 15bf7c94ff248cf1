"""``capbench-nb import inspect``: inspect_ai evaluation logs as a run.

Reads both log formats inspect_ai writes:

- ``.json``: one JSON document (``eval``, ``plan``, ``results``, ``stats``,
  ``samples``, ...).  inspect writes non-finite floats as bare ``NaN`` tokens,
  which are not strict JSON; they are accepted here.
- ``.eval``: a zip archive with ``header.json`` (``_journal/start.json`` for a
  log still being written) and one ``samples/<id>_epoch_<n>.json`` member per
  sample and epoch.  Current inspect_ai compresses the members with Zstandard
  (zip method 93), which Python's ``zipfile`` reads only from 3.14 on; before
  that the optional extra ``capbench-nb[inspect]`` installs ``backports.zstd``,
  the maintained backport of 3.14's ``zipfile``.  Without it, a zstd-compressed
  log is refused with a one-line error naming the extra.

The mapping (docs/importers.md has the table): sample -> task, epoch ->
attempt, ``eval.config.epochs`` -> planned repeats, the chosen scorer's value
-> success (:func:`score_outcome`), an errored epoch -> an ``unknown``,
ineligible attempt with evidence ``record.json#/error``, ``model_usage`` ->
token telemetry, ``working_time`` (else ``total_time``) -> ``task_wall_ms``,
scalar sample metadata -> plan-task labels.  Which logs and samples are read (folders, eval sets,
eval_retry chains) is :mod:`~capbench_nb.records.importers.inspect_sources`'s; how a score becomes
an outcome (``--scorer NAME.KEY`` for dict values) :mod:`~capbench_nb.records.importers.inspect_scores`'s.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError
from capbench_nb.format import MAX_REPEATS, MAX_SAFE_NUMBER, RUN_SCHEMA_VERSION, is_safe_number, limits
from capbench_nb.io.jsonparse import JsonMessages, parse_document
from capbench_nb.records.importers import common, eval_archive, inspect_header, inspect_sources
from capbench_nb.records.importers.inspect_scores import (SampleError, ScorerChoice, choose_scorer, outcome_fields,
                                                          score_outcome)

__all__ = ["import_inspect", "read_log", "score_outcome", "eval_reader_available", "EXTRA_HINT"]

EXTRA_HINT = "pip install 'capbench-nb[inspect]'"
ZIP_ZSTANDARD = 93
#: Sample keys not copied into record.json: the event transcript (inspect's
#: full trace of every model and tool call) dwarfs everything else and is not
#: read by the mapping.  The source log keeps them.
OMITTED_SAMPLE_KEYS = ("events", "events_data")
#: Plan tasks keep string labels up to this length (longer metadata values are not slice dimensions).
MAX_LABEL_CHARS = 200
_RESERVED_LABELS = ("task_id", "repeats")
_STATUS = {"success": "completed", "started": "partial", "error": "aborted", "cancelled": "aborted"}

@dataclass
class InspectLog:
    """One log as read: its header parts and its samples (source order)."""

    file: str
    format: str
    sha256: str
    header: dict
    samples: list[dict] = field(repr=False)


def _bad(file: str, message: str, *, rule: str = "inspect-format", line: int | None = None) -> InvalidRunError:
    return InvalidRunError(file, rule, message, line=line)


# --------------------------------------------------------------------------- reading


def _zstd_zipfile():
    """A ``zipfile`` module that reads zstd members (method 93), or None.

    Python 3.14's own ``zipfile``; before that ``backports.zstd.zipfile`` when
    the ``inspect`` extra is installed.
    """
    if getattr(zipfile, "ZIP_ZSTANDARD", None) == ZIP_ZSTANDARD:
        return zipfile
    try:
        from backports.zstd import zipfile as backport  # the optional extra capbench-nb[inspect]
    except ImportError:
        return None
    return backport


def eval_reader_available() -> bool:
    """Whether zstd-compressed ``.eval`` logs can be read here."""
    return _zstd_zipfile() is not None


#: How a log's JSON fails: the message says line and column (the member of a .eval names the file).
_JSON_MESSAGES = JsonMessages(syntax="not valid JSON: {msg} (line {lineno}, column {colno})", syntax_line=False,
                              utf8_rule="utf-8")
#: The same, for a file not yet known to be a log: its ``what`` does not prefix the refusal of a value.
_FILE_MESSAGES = dataclasses.replace(_JSON_MESSAGES, value_what=False)


def _parse_json(data: bytes, file: str, what: str, messages: JsonMessages = _JSON_MESSAGES) -> Any:
    """JSON as inspect writes it: UTF-8 (a BOM allowed), bare NaN/Infinity tokens accepted (and no
    over-long integer literal or lone surrogate: ``parse_document(values=True)``)."""
    return parse_document(data, file=file, messages=messages, what=what, encoding="utf-8-sig", values=True)


def _open_archive(file: str, fh: BinaryIO) -> Any:
    module = _zstd_zipfile() or zipfile
    try:
        archive = module.ZipFile(fh)
    except (module.BadZipFile, zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError,
            struct.error, OverflowError) as exc:
        raise _bad(file, f"not a readable .eval log (zip archive): {exc}") from None
    if module is zipfile and any(info.compress_type == ZIP_ZSTANDARD for info in archive.infolist()):
        archive.close()
        raise _bad(file, "this .eval log is Zstandard-compressed; reading it needs the optional extra: "
                   f"{EXTRA_HINT}", rule="inspect-extra-missing")
    return archive


def _read_eval(file: str, fh: BinaryIO, size: int) -> tuple[dict, list[dict]]:
    """The header and the samples of a ``.eval`` archive (each sample without its event transcript)."""
    if size > limits.MAX_EVAL_DECOMPRESSED_BYTES:
        raise common.too_large(file, ".eval log (compressed)", size, limits.MAX_EVAL_DECOMPRESSED_BYTES,
                               "MAX_EVAL_DECOMPRESSED_BYTES", rule="eval-too-large")
    eval_archive.check_member_count(file, fh, size)
    fh.seek(0)
    with _open_archive(file, fh) as archive:
        infos = archive.infolist()
        by_name = {info.filename: info for info in infos}
        members = eval_archive.MemberReader(file, archive, parse=_parse_json)
        if "header.json" in by_name:
            header = members.parse(by_name["header.json"])
        elif "_journal/start.json" in by_name:  # a log still being written (or cut off): no header yet
            header = members.parse(by_name["_journal/start.json"])
            header = dict(header, status="started") if isinstance(header, dict) else header
        else:
            raise _bad(file, "no header.json in the archive: not an inspect .eval log")
        samples = []
        for info in infos:
            if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                sample = members.parse(info)
                if isinstance(sample, dict):
                    sample = {k: v for k, v in sample.items() if k not in OMITTED_SAMPLE_KEYS}
                samples.append(sample)
    return header, samples


def read_log(path: str | os.PathLike) -> InspectLog:
    """Read one inspect_ai log, ``.json`` or ``.eval`` (the zip magic decides, not the name).

    A ``.json`` log is at most MAX_IMPORT_LOG_BYTES; a ``.eval`` archive at most MAX_EVAL_MEMBERS
    members, read as streams, MAX_EVAL_DECOMPRESSED_BYTES in total (``capbench_nb.format.limits``).

    Raises
    ------
    InvalidRunError
        Unreadable, malformed or too large logs, and a zstd-compressed ``.eval`` without
        a reader (message naming the ``inspect`` extra).
    """
    file = str(path)
    with common.open_source(path, "inspect log") as fh:
        try:
            magic = fh.read(4)
            size = os.fstat(fh.fileno()).st_size
            if magic == b"PK\x03\x04":
                header, samples = _read_eval(file, fh, size)
                form, digest = "eval", eval_archive.file_sha256(fh)
            else:
                fh.seek(0)
                raw = common.read_limited(fh, file, "inspect log")
                form, digest = "json", common.sha256_hex(raw)
        except OSError as exc:
            raise InvalidRunError(file, "import-unreadable", f"cannot read the inspect log: {exc.strerror or exc}") \
                from None
    if form == "json":
        header, samples = _json_log(file, raw)
    inspect_header.check_header(file, header)
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise _bad(file, f"sample {i} is not an object")
    return InspectLog(file=file, format=form, sha256=digest, header=header, samples=samples)


def _json_log(file: str, raw: bytes) -> tuple[dict, list]:
    doc = _parse_json(raw, file, "not an inspect log (one JSON document, or a .eval archive)", _FILE_MESSAGES)
    if not isinstance(doc, dict):
        raise _bad(file, "not an inspect log: an inspect log is a JSON object with 'eval' and 'samples'")
    samples = doc.get("samples")
    if samples is None:
        samples = []
    if not isinstance(samples, list):
        raise _bad(file, f"'samples' must be a list, not {common.describe(samples)}")
    return {k: v for k, v in doc.items() if k != "samples"}, samples


# --------------------------------------------------------------------------- mapping


def _count(value: Any) -> int | None:
    """A token count: an integer (or integral float) in [0, 2**53-1], else None (unknown)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if is_safe_number(value, integer=True) else None


def _telemetry(sample: dict) -> tuple[dict, dict]:
    """Telemetry values and sources from a sample (``record.json`` keys)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in ("working_time", "total_time"):
        seconds = sample.get(key)
        if seconds is None:
            continue
        if not (is_safe_number(seconds) and is_safe_number(ms := round(seconds * 1000.0, 3))):
            raise SampleError(f"{key} must be a number of seconds from 0 to 2**53-1 ms, "
                             f"found {common.describe(seconds)}")
        if "task_wall_ms" not in values:
            values["task_wall_ms"] = ms
            sources["task_wall_ms"] = common.RECORD_FILE + "#" + common.pointer(key)
    usage = sample.get("model_usage")
    if isinstance(usage, dict) and usage and all(isinstance(u, dict) for u in usage.values()):
        for field_name, key in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                                ("total_tokens", "total_tokens"), ("cached_input_tokens", "input_tokens_cache_read"),
                                ("reasoning_tokens", "reasoning_tokens")):
            counts = [_count(u.get(key)) for u in usage.values()]
            if all(c is not None for c in counts) and is_safe_number(total := sum(counts)):
                values[field_name] = total
                sources[field_name] = common.RECORD_FILE + "#/model_usage"
    messages = sample.get("messages")
    _check_messages(messages)
    if messages is not None:
        values["tool_calls"] = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        values["tool_errors"] = sum(1 for m in messages if m.get("role") == "tool" and m.get("error"))
        sources["tool_calls"] = sources["tool_errors"] = common.RECORD_FILE + "#/messages"
    return values, sources


def _check_messages(messages: Any) -> None:
    """``messages`` is null or a list of objects whose ``tool_calls`` are null or lists."""
    if messages is None:
        return
    if not isinstance(messages, list):
        raise SampleError(f"messages must be a list, found {common.describe(messages)}")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise SampleError(f"messages[{i}] must be an object, found {common.describe(message)}")
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise SampleError(f"messages[{i}].tool_calls must be a list (or null), found {common.describe(calls)}")


def _attempt(task_id: str, sample: dict, scorer: ScorerChoice) -> common.ImportedAttempt:
    rec = common.base_record(task_id, sample["epoch"])
    values, sources = _telemetry(sample)
    rec["telemetry"].update(values)
    rec["telemetry_source"] = sources
    rec.update(outcome_fields(sample, scorer))
    source = {k: v for k, v in sample.items() if k not in OMITTED_SAMPLE_KEYS}
    return common.ImportedAttempt(rec, source)


def _valid_id(sample_id: Any) -> bool:
    return (type(sample_id) is int and abs(sample_id) <= 2**53 - 1) or (isinstance(sample_id, str) and sample_id != "")


def _sample_sort_key(sample_id: Any) -> tuple:
    return (0, sample_id, "") if isinstance(sample_id, int) else (1, 0, str(sample_id))


def _labels(samples: list[dict], reserved: tuple[str, ...]) -> dict:
    """Scalar metadata shared by every epoch of a sample, as plan-task labels (sorted by key)."""
    common: dict | None = None
    for sample in samples:
        meta = sample.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        scalars = {}
        for key, value in meta.items():
            if key in reserved or value is None:
                continue
            if isinstance(value, str) and len(value) <= MAX_LABEL_CHARS:
                scalars[key] = value
            elif isinstance(value, bool) or (isinstance(value, int) and abs(value) <= 2**53 - 1):
                scalars[key] = value
            elif isinstance(value, float) and math.isfinite(value):
                scalars[key] = value
        if common is None:
            common = scalars
        else:
            common = {k: v for k, v in common.items()
                      if k in scalars and scalars[k] == v and type(scalars[k]) is type(v)}
    return dict(sorted((common or {}).items()))


def _created(log: InspectLog) -> tuple:
    text = log.header["eval"].get("created")
    try:
        stamp = datetime.fromisoformat(text).timestamp() if isinstance(text, str) else math.inf
    except (ValueError, OverflowError, OSError):  # not a time, or one outside what the platform represents
        stamp = math.inf
    return (stamp, str(log.header["eval"].get("task")), str(log.header["eval"].get("eval_id")), log.sha256)


def _one_or_joined(values: list[str]) -> str:
    distinct = sorted(set(values))
    return distinct[0] if len(distinct) == 1 else "+".join(distinct)


def _epochs(log: InspectLog) -> int:
    """The log's planned epochs, after checking them and the types of its sample ids and epochs."""
    ev = log.header["eval"]
    epochs = (ev.get("config") or {}).get("epochs", 1)
    if epochs is None:
        epochs = 1
    if type(epochs) is not int or epochs < 1:
        raise _bad(log.file, f"eval.config.epochs must be an integer >= 1, found {common.describe(epochs)}")
    if epochs > MAX_REPEATS:
        raise _bad(log.file, f"eval.config.epochs is {common.describe(epochs)}, above the limit of {MAX_REPEATS} "
                             "planned repeats (MAX_REPEATS)", rule="repeats-too-large")
    dataset_ids = (ev.get("dataset") or {}).get("sample_ids")
    order = list(dataset_ids) if isinstance(dataset_ids, list) else []
    for i, sid in [(None, sid) for sid in order] + [(i, s.get("id")) for i, s in enumerate(log.samples)]:
        if not _valid_id(sid):
            what = "eval.dataset.sample_ids" if i is None else f"sample {i}"
            raise _bad(log.file, f"{what}: sample id {common.describe(sid)} is not an integer or non-empty string")
    for i, sample in enumerate(log.samples):
        epoch = sample.get("epoch")
        if type(epoch) is not int or not 1 <= epoch <= MAX_SAFE_NUMBER:
            raise _bad(log.file, f"sample {i} ({common.describe(sample.get('id'))}): epoch must be an integer from 1 "
                                 f"to 2**53-1, found {common.describe(epoch)}")
    return epochs


def _plan_log(plan: dict[str, dict], log: InspectLog, epochs: int, prefix: str) -> None:
    """Add the log's samples to the plan: dataset order, then the samples not listed there, sorted by id."""
    ev = log.header["eval"]
    dataset_ids = (ev.get("dataset") or {}).get("sample_ids")
    order = list(dataset_ids) if isinstance(dataset_ids, list) else []
    listed = set(order)
    extra = sorted({s["id"] for s in log.samples if s["id"] not in listed}, key=_sample_sort_key)
    for sid in order + extra:
        task_id = prefix + str(sid)
        entry = plan.get(task_id)
        if entry is None:
            plan[task_id] = {"repeats": epochs, "samples": [], "task": ev.get("task"), "file": log.file, "id": sid}
        elif entry["repeats"] != epochs:
            raise _bad(log.file, f"task {task_id!r} is planned with {epochs} epoch(s) here and "
                       f"{entry['repeats']} in {entry['file']}", rule="inspect-epochs")
        elif entry["id"] != sid:
            raise _bad(log.file, f"sample ids {common.describe(entry['id'])} and {common.describe(sid)} "
                                 f"both read as task {task_id!r}")


def _duplicate(key: tuple, log: InspectLog, other: InspectLog) -> InvalidRunError:
    return _bad(log.file, f"sample {common.describe(key[0])} epoch {key[1]} is also in {other.file}; two independent "
                          "evals of one sample set go into a run each (import them one by one and compare the runs)",
                rule="duplicate-attempt")


def _collect_samples(logs: list[InspectLog], kept: dict[int, list[dict]], epochs: list[int], scorer: str | None,
                     multi: bool) -> tuple[dict[str, dict], list[common.ImportedAttempt], list[ScorerChoice]]:
    """The plan (task id -> repeats, samples, source), the attempts of the samples that stand
    (``kept``, by log position; ``epochs`` per log, from :func:`_epochs`), and the scorer chosen per log.

    Raises InvalidRunError for epochs or sample ids of the wrong type, a task planned with different
    epochs in two logs, a (sample, epoch) given twice, or a score value no outcome can be read from.
    """
    plan: dict[str, dict] = {}  # task_id -> {"repeats", "samples": [...], "file"}
    attempts: list[common.ImportedAttempt] = []
    where: dict[tuple[str, int], InspectLog] = {}
    scorers: list[ScorerChoice] = []
    for position, log in enumerate(logs):
        ev = log.header["eval"]
        chosen = choose_scorer(log.file, log.header, log.samples, scorer)
        scorers.append(chosen)
        prefix = f"{ev.get('task')}/" if multi else ""
        _plan_log(plan, log, epochs[position], prefix)
        for sample in kept[position]:
            sid, epoch = sample["id"], sample["epoch"]
            task_id = prefix + str(sid)
            if (task_id, epoch) in where:
                raise _duplicate((sid, epoch), log, where[(task_id, epoch)])
            where[(task_id, epoch)] = log
            try:
                attempts.append(_attempt(task_id, sample, chosen))
            except SampleError as exc:
                raise _bad(log.file, f"sample {common.describe(sid)} epoch {epoch}: {exc}", rule=exc.rule) from None
            plan[task_id]["samples"].append(sample)
    return plan, attempts, scorers


def _manifest(logs: list[InspectLog], model: str, scorers: list[ScorerChoice], plan_tasks: list[dict],
              kept: dict[int, list[dict]], older: set[int]) -> dict[str, Any]:
    """The run's manifest: status (of each eval_retry chain's newest log), run id, suite and versions
    from the logs, the plan, the import provenance (with the samples a newer log replaced, if any)."""
    evs = [log.header["eval"] for log in logs]
    statuses = [_STATUS.get(log.header.get("status"), "partial") for i, log in enumerate(logs) if i not in older]
    status = "aborted" if "aborted" in statuses else "partial" if "partial" in statuses else "completed"
    run_ids = sorted({str(ev.get("run_id")) for ev in evs})
    if len(run_ids) == 1 and evs[0].get("run_id"):
        run_id = f"inspect-{run_ids[0]}"
    else:
        run_id = "inspect-" + common.sha256_hex("\n".join(sorted(log.sha256 for log in logs)).encode())[:16]
    versions = [str((ev.get("packages") or {}).get("inspect_ai")) for ev in evs if (ev.get("packages") or {}).get("inspect_ai")]
    manifest: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "suite": {"name": _one_or_joined([str(ev.get("task")) for ev in evs]),
                  "version": _one_or_joined([str(ev.get("task_version", "")) for ev in evs])},
    }
    created = evs[0].get("created")
    if isinstance(created, str):
        manifest["created_at"] = created
    manifest.update({
        "status": status,
        "runner": {"name": "inspect_ai", **({"version": _one_or_joined(versions)} if versions else {})},
        "config": {"model": model, "scorer": _one_or_joined([choice.label for choice in scorers])},
        "plan": {"repeats_override": None, "k": min(t["repeats"] for t in plan_tasks), "tasks": plan_tasks},
        "import": {
            "from": "inspect_ai",
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "sources": [{"file": Path(log.file).name, "sha256": log.sha256, "format": log.format,
                         "eval_id": log.header["eval"].get("eval_id"), "task": log.header["eval"].get("task"),
                         "status": log.header.get("status"), "samples": len(log.samples),
                         **({"replaced_by_newer": len(log.samples) - len(kept[i])} if i in older else {})}
                        for i, log in enumerate(logs)],
            "record_file": common.RECORD_FILE,
            "record_omits": list(OMITTED_SAMPLE_KEYS),
        },
    })
    return manifest


def import_inspect(
    paths: list[str | os.PathLike] | str | os.PathLike,
    out: str | os.PathLike,
    *,
    scorer: str | None = None,
    force: bool = False,
) -> common.ImportReport:
    """Import inspect_ai logs (``.json`` or ``.eval`` files, or folders of them) as a run directory at ``out``.

    Several logs make one run when they evaluate one model: logs of one task
    are merged (each (sample, epoch) may appear once, except that in an
    eval_retry chain the newest log wins); with several tasks, task ids
    become ``<task>/<sample id>`` and the plan gets an ``inspect_task``
    label, each task planned with its own log's epochs.  The logs are taken
    in the order of their ``eval.created`` time, so the order of ``paths``
    does not matter.  What the import decided is in the report's ``notes``.

    Parameters
    ----------
    scorer : str, optional
        The scorer whose value decides success (``NAME``, or ``NAME.KEY`` for
        one key of a dict-valued score); default: the first scorer the log
        lists (``eval.scorers``).
    force : bool, default False
        Replace a previous run directory at ``out``.

    Raises
    ------
    InvalidRunError
        Unreadable logs, a folder without logs, a missing ``.eval`` reader,
        logs of different models, duplicate (sample, epoch), conflicting
        epochs for one task, a dict score without a key chosen, list values,
        or an output that must not be replaced.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise InvalidRunError("import inspect", "usage", "no log given")
    with common.guarded(str(paths[0]), "inspect log"):
        return _import(paths, out, scorer, force)


def _import(paths: list, out: str | os.PathLike, scorer: str | None, force: bool) -> common.ImportReport:
    files, notes, sides = inspect_sources.log_paths(paths)
    logs = sorted((read_log(p) for p in files), key=_created)
    seen_files: dict[str, str] = {}
    for log in logs:
        if log.sha256 in seen_files:
            raise _bad(log.file, f"the same log is given twice (also {seen_files[log.sha256]})", rule="duplicate-log")
        seen_files[log.sha256] = log.file
    models = sorted({str(log.header["eval"].get("model")) for log in logs})
    if len(models) > 1:
        raise _bad(logs[-1].file, f"the logs evaluate different models ({', '.join(models)}); import each model "
                   "into its own run and compare the runs", rule="inspect-models")
    tasks = sorted({str(log.header["eval"].get("task")) for log in logs})
    multi = len(tasks) > 1

    epochs = [_epochs(log) for log in logs]
    kept, retry_notes, older = inspect_sources.newest_samples(logs, lambda s: (s["id"], s["epoch"]), _duplicate)
    plan, attempts, scorers = _collect_samples(logs, kept, epochs, scorer, multi)
    if not plan:
        raise _bad(logs[0].file, "the log has no samples and no dataset sample ids")
    if not attempts:  # the plan is the dataset's sample ids alone
        notes.append(f"the log{'s hold' if len(logs) > 1 else ' holds'} no samples (a header only: an eval still "
                     "running, or logged without samples); every planned attempt is missing")
    reserved = _RESERVED_LABELS + (("inspect_task",) if multi else ())
    plan_tasks = []
    for task_id, entry in plan.items():
        task = {"task_id": task_id, "repeats": entry["repeats"]}
        if multi:
            task["inspect_task"] = str(entry["task"])
        task.update(_labels(sorted(entry["samples"], key=lambda s: s["epoch"]), reserved))
        plan_tasks.append(task)

    notes += inspect_sources.side_notes(sides, {str(log.header["eval"].get("task_id")) for log in logs})
    notes += retry_notes
    notes += [note] if (note := inspect_sources.epochs_note(plan)) else []
    manifest = _manifest(logs, models[0], scorers, plan_tasks, kept, older)
    return common.with_notes(common.write_imported_run(out, manifest, attempts, force=force, sources=paths), notes)
