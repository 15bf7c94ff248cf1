"""``capbench-nb import tau2-bench``: tau2-bench results as a run.

tau2-bench (github.com/sierra-research/tau2-bench, the maintained successor of tau-bench) writes a
run's results as one JSON object, ``{"timestamp", "info", "tasks", "simulations"}`` (its
``Results``; ``tau2 run`` writes that by default), or in its "dir" format: ``results.json`` without
the simulations and one ``simulations/<id>.json`` per simulation.  The input is such a file, a
"dir"-format folder, or a folder of results files of one model and domain (merged into one run).

Mapping (docs/importers.md has the table), following tau2's own ``compute_metrics``
(``src/tau2/metrics/agent_metrics.py``):

- plan: the ``tasks`` (their ``id``, in file order) x ``info.num_trials`` (k), so a run that
  stopped early is a partial run whose coverage shows what is missing;
- a simulation is an attempt: ``task_id``, ``trial`` + 1; success when ``reward_info.reward`` is
  within 1e-6 of 1 (tau2's ``is_successful``), ``quality_score`` the reward;
- ``termination_reason`` ``infrastructure_error``: an ineligible ``environment`` attempt (tau2 leaves
  such simulations out of its metrics and reruns them on resume);
- ``duration`` (seconds) -> ``task_wall_ms``; the agent's messages -> tool calls, LLM calls, tokens;
- ``agent_cost`` -> ``cost`` only with a ``cost_source`` naming tau2's price source (tau2 prices
  with litellm's ``completion_cost``, and the file does not say which litellm price map): else null.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError
from capbench_nb.format import MAX_REPEATS, MAX_SAFE_NUMBER, RUN_SCHEMA_VERSION, is_safe_number, limits
from capbench_nb.io.jsonparse import JsonMessages, parse_document
from capbench_nb.records.importers import common

__all__ = ["import_tau2bench", "read_results", "Tau2Source", "INFRASTRUCTURE_ERROR"]

_KIND = "tau2-bench results file"
_MESSAGES = JsonMessages(syntax="not valid JSON: {msg} (line {lineno}, column {colno})", syntax_line=False,
                         utf8_rule="utf-8")
#: The dir format: ``results.json`` (no simulations) beside ``simulations/<id>.json``.
META_FILE = "results.json"
SIMULATIONS_DIR = "simulations"
#: tau2's TerminationReason for a simulation that never ran properly (an API disconnect, a dead worker).
INFRASTRUCTURE_ERROR = "infrastructure_error"


def _bad(file: str, message: str, *, rule: str = "tau2-bench-format") -> InvalidRunError:
    return InvalidRunError(file, rule, message)


@dataclass
class Tau2Source:
    """One tau2 ``Results`` as read: its file, digest and form, its metadata and simulations."""

    file: str
    sha256: str
    form: str
    meta: dict
    #: (file naming the simulation in errors, label such as ``simulation 3``, the simulation)
    simulations: list[tuple[str, str, Any]] = field(repr=False)


# --------------------------------------------------------------------------- reading


_TAU_BENCH_HINT = "a tau-bench (v1) results file? use `capbench-nb import tau-bench`"


def _parse(path: str | os.PathLike, what: str = _KIND) -> tuple[Any, bytes]:
    raw = common.read_source_bytes(path, what)
    try:
        return parse_document(raw, file=str(path), messages=_MESSAGES, encoding="utf-8-sig", values=True), raw
    except InvalidRunError as exc:
        if not _is_trial(raw.split(b"\n", 1)[0]):
            raise
        raise InvalidRunError(exc.file, exc.rule, f"{exc.message}: JSON lines of trials, {_TAU_BENCH_HINT}",
                              line=exc.line, pointer=exc.pointer) from None


def _is_trial(first_line: bytes) -> bool:
    """The first line of a file is one tau-bench trial object (a JSON-lines tau-bench file)."""
    import json

    try:
        doc = json.loads(first_line.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "task_id" in doc and "reward" in doc


def _results_object(file: str, doc: Any, *, with_simulations: bool) -> dict:
    """``doc`` is a tau2 ``Results`` object (``info`` and ``tasks``; ``simulations`` unless the dir format)."""
    if isinstance(doc, list):
        raise _bad(file, f"a JSON list, not a tau2-bench results object: {_TAU_BENCH_HINT}")
    keys = ("info", "tasks", "simulations") if with_simulations else ("info", "tasks")
    if not isinstance(doc, dict) or any(key not in doc for key in keys):
        shown = f"an object with keys {common.describe(sorted(doc)[:6])}" if isinstance(doc, dict) \
            else common.describe(doc)
        hint = f"; {_TAU_BENCH_HINT}" if isinstance(doc, dict) and "task_id" in doc and "reward" in doc else ""
        raise _bad(file, f"expected a tau2-bench results object with {', '.join(keys)}, found {shown}{hint}")
    for key, kind, name in (("info", dict, "an object"), ("tasks", list, "a list"),
                            ("simulations", list, "a list"), ("timestamp", str, "a string")):
        required = key in keys  # a null timestamp (or no simulations in the dir format's results.json) is fine
        if (required or doc.get(key) is not None) and not isinstance(doc.get(key), kind):
            raise _bad(file, f"{key} must be {name}, found {common.describe(doc.get(key))}")
    return doc


def _monolithic(path: str | os.PathLike) -> Tau2Source:
    file = str(path)
    doc, raw = _parse(path)
    if isinstance(doc, dict) and "simulations" not in doc and (Path(file).parent / SIMULATIONS_DIR).is_dir():
        return _dir_format(Path(file).parent, Path(file))
    doc = _results_object(file, doc, with_simulations=True)
    sims = [(file, f"simulation {i}", sim) for i, sim in enumerate(doc["simulations"])]
    meta = {k: v for k, v in doc.items() if k != "simulations"}
    return Tau2Source(file=file, sha256=common.sha256_hex(raw), form="json", meta=meta, simulations=sims)


def _dir_format(folder: Path, meta_file: Path) -> Tau2Source:
    """The dir format: ``results.json`` and ``simulations/*.json`` (file name order, as tau2 reads them)."""
    file = str(meta_file)
    doc, raw = _parse(meta_file)
    doc = _results_object(file, doc, with_simulations=False)
    sims_dir = folder / SIMULATIONS_DIR
    names = sorted(p.name for p in sims_dir.iterdir() if p.name.endswith(".json")) if sims_dir.is_dir() else []
    _check_budget(file, [sims_dir / n for n in names] + [meta_file])
    sims, digests = [], [common.sha256_hex(raw)]
    for name in names:
        sim, sim_raw = _parse(sims_dir / name, "tau2-bench simulation file")
        sims.append((str(sims_dir / name), "the simulation", sim))
        digests.append(name + " " + common.sha256_hex(sim_raw))
    index = doc.get("simulation_index")
    if index is not None:  # tau2's own integrity check of the dir format
        if not isinstance(index, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in index):
            raise _bad(file, "simulation_index must be a list of objects with a string id")
        listed, present = {e["id"] for e in index}, {n[: -len(".json")] for n in names}
        for what, ids in (("missing", listed - present), ("not in simulation_index", present - listed)):
            if ids:
                raise _bad(file, f"dir format integrity: simulation files {what}: "
                                 f"{common.describe(sorted(ids)[:5])} (tau2 refuses this folder too)")
    meta = {k: v for k, v in doc.items() if k not in ("simulations", "simulation_index", "format_version")}
    digest = common.sha256_hex("\n".join(digests).encode("utf-8"))
    return Tau2Source(file=file, sha256=digest, form="dir", meta=meta, simulations=sims)


def _check_budget(file: str, paths: list[Path]) -> None:
    """Refuse files that together exceed MAX_IMPORT_LOG_BYTES (each file is capped on its own as it is read)."""
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # reading it names the problem
    if total > limits.MAX_IMPORT_LOG_BYTES:
        raise common.too_large(file, "set of tau2-bench results files (together)", total,
                               limits.MAX_IMPORT_LOG_BYTES, "MAX_IMPORT_LOG_BYTES")


def read_results(path: str | os.PathLike) -> tuple[list[Tau2Source], list[str]]:
    """The tau2 results at ``path``: a results file, a dir-format folder, or a folder of results files.

    Returns the results (a folder's files in name order) and notes for the user (files skipped).

    Raises
    ------
    InvalidRunError
        A missing or unreadable path, a file that is not a tau2 results object, a folder without one.
    """
    file = str(path)
    folder = Path(path)
    if not folder.is_dir():
        return [_monolithic(path)], []
    if (folder / META_FILE).is_file() and (folder / SIMULATIONS_DIR).is_dir():
        return [_dir_format(folder, folder / META_FILE)], []
    entries = sorted(os.listdir(folder))
    files = [folder / n for n in entries if n.endswith(".json") and (folder / n).is_file()]
    other = [n for n in entries if folder / n not in files]
    if not files:
        raise _bad(file, "no tau2-bench results file (*.json) in this folder", rule="import-unreadable")
    _check_budget(file, files)
    notes = [f"{file}: ignored {len(other)} entr{'y' if len(other) == 1 else 'ies'} that are not *.json files: "
             + ", ".join(other[:5]) + (", ..." if len(other) > 5 else "")] if other else []
    return [_monolithic(p) for p in files], notes


# --------------------------------------------------------------------------- checking


def _text(file: str, value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _bad(file, f"{where} must be a string (or null), found {common.describe(value)}")
    return value


def _info(source: Tau2Source) -> dict:
    """The values of ``info`` the mapping reads, checked: num_trials, domain, agent and user LLMs, git commit."""
    file, info = source.file, source.meta["info"]
    trials = info.get("num_trials")
    if type(trials) is not int or trials < 1:
        raise _bad(file, f"info.num_trials must be an integer >= 1, found {common.describe(trials)}")
    if trials > MAX_REPEATS:
        raise _bad(file, f"info.num_trials is {trials}, above the limit of {MAX_REPEATS} planned repeats "
                         "(MAX_REPEATS)", rule="repeats-too-large")
    values = {"num_trials": trials, "git_commit": _text(file, info.get("git_commit"), "info.git_commit")}
    for key, part, sub in (("domain", "environment_info", "domain_name"), ("model", "agent_info", "llm"),
                           ("user_model", "user_info", "llm")):
        node = info.get(part)
        if node is not None and not isinstance(node, dict):
            raise _bad(file, f"info.{part} must be an object, found {common.describe(node)}")
        values[key] = _text(file, (node or {}).get(sub), f"info.{part}.{sub}")
    return values


def _task_ids(source: Tau2Source) -> list[str]:
    ids: list[str] = []
    for i, task in enumerate(source.meta["tasks"]):
        tid = task.get("id") if isinstance(task, dict) else None
        if not isinstance(tid, str) or not tid:
            raise _bad(source.file, f"tasks[{i}]: a task must be an object with a non-empty string id, found "
                                    f"{common.describe(tid if isinstance(task, dict) else task)}")
        if tid in ids:
            raise _bad(source.file, f"tasks[{i}]: task id {tid!r} is defined twice")
        ids.append(tid)
    return ids


def _number(value: Any, where: str, *, seconds: bool = False) -> float | None:
    """A non-negative number (seconds: at most 2**53-1 ms), None for null; else InvalidRunError text raised."""
    if value is None:
        return None
    if type(value) is int and abs(value) > MAX_SAFE_NUMBER:
        raise _BadSimulation(f"{where} {common.describe(value)} is an integer beyond 2**53-1", "number-too-large")
    ok = type(value) in (int, float) and is_safe_number(value) and (
        not seconds or is_safe_number(round(value * 1000.0, 3)))
    if not ok:
        unit = "a number of seconds from 0 to 2**53-1 ms" if seconds else "a number from 0 to 2**53-1"
        raise _BadSimulation(f"{where} must be {unit} (or null), found {common.describe(value)}")
    return float(value)


class _BadSimulation(Exception):
    def __init__(self, message: str, rule: str = "tau2-bench-format") -> None:
        super().__init__(message)
        self.rule = rule


def _simulation_key(sim: Any, tasks: set[str]) -> tuple[str, int]:
    if not isinstance(sim, dict):
        raise _BadSimulation(f"a simulation must be an object, found {common.describe(sim)}")
    tid, trial = sim.get("task_id"), sim.get("trial")
    if not isinstance(tid, str) or tid not in tasks:
        raise _BadSimulation(f"task_id {common.describe(tid)} is not the id of one of the tasks")
    if type(trial) is not int or not 0 <= trial < MAX_SAFE_NUMBER:
        raise _BadSimulation(f"trial must be an integer from 0 to 2**53-2, found {common.describe(trial)}")
    reason = sim.get("termination_reason")
    if not isinstance(reason, str):
        raise _BadSimulation(f"termination_reason must be a string, found {common.describe(reason)}")
    info = sim.get("reward_info")
    if info is not None and not isinstance(info, dict):
        raise _BadSimulation(f"reward_info must be an object (or null), found {common.describe(info)}")
    return tid, trial


# --------------------------------------------------------------------------- mapping


def _messages_telemetry(messages: Any) -> tuple[dict, dict]:
    """Tool calls, tool errors, LLM calls and tokens of the agent (``assistant`` messages), from ``messages``.

    As spec section 8 says of a history: with no agent message carrying ``usage`` the tokens stay
    null (``llm_calls`` 0); a token field is null when any usage lacks it.
    """
    if messages is None:
        return {}, {}
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _BadSimulation(f"messages must be a list of objects (or null), found {common.describe(messages)}")
    source = common.RECORD_FILE + "#/messages"
    agent = [m for m in messages if m.get("role") == "assistant"]
    calls = [m.get("tool_calls") for m in agent]
    if any(c is not None and not isinstance(c, list) for c in calls):
        raise _BadSimulation("an assistant message's tool_calls must be a list (or null)")
    usages = [m.get("usage") for m in agent if m.get("usage") is not None]
    if not all(isinstance(u, dict) for u in usages):
        raise _BadSimulation("an assistant message's usage must be an object (or null)")
    values = {"tool_calls": sum(len(c or []) for c in calls),
              "tool_errors": sum(1 for m in messages if m.get("role") == "tool" and m.get("error") is True),
              "llm_calls": len(usages)}
    sources = dict.fromkeys(values, source)
    if usages:
        for name, key in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
            counts = [u.get(key) for u in usages]
            if all(type(c) is int and is_safe_number(c, integer=True) for c in counts) \
                    and is_safe_number(total := sum(counts)):
                values[name], sources[name] = total, source
        if "input_tokens" in values and "output_tokens" in values \
                and is_safe_number(total := values["input_tokens"] + values["output_tokens"]):
            values["total_tokens"], sources["total_tokens"] = total, source
    return values, sources


def _attempt(task_id: str, trial: int, sim: dict, cost_source: str | None) -> common.ImportedAttempt:
    rec = common.base_record(task_id, trial + 1)
    wall = _number(sim.get("duration"), "duration", seconds=True)
    values, sources = _messages_telemetry(sim.get("messages"))
    if wall is not None:
        values["task_wall_ms"], sources["task_wall_ms"] = round(wall * 1000.0, 3), common.RECORD_FILE + "#/duration"
    rec["telemetry"].update(values)
    rec["telemetry_source"] = dict(sorted(sources.items()))
    cost = _number(sim.get("agent_cost"), "agent_cost")
    if cost_source is not None and cost is not None:
        rec.update(cost=cost, cost_source=cost_source)
    info = sim.get("reward_info")
    reward = info.get("reward") if isinstance(info, dict) else None
    if sim["termination_reason"] == INFRASTRUCTURE_ERROR:
        evidence = [common.RECORD_FILE + "#/termination_reason"]
        if isinstance(sim.get("info"), dict) and sim["info"].get("error") not in (None, ""):
            evidence.append(common.RECORD_FILE + "#/info/error")
        rec.update(agent_eligible=False, failure_class="environment", evidence=evidence)
    elif reward is None or (isinstance(reward, float) and not math.isfinite(reward)):
        # no reward: tau2 could not evaluate the simulation (its own metrics fail on it)
        where = ["reward_info", "reward"] if isinstance(info, dict) and "reward" in info else ["reward_info"]
        present = "reward_info" in sim
        rec.update(agent_eligible=False, failure_class="evaluation", failure_stage="evaluation" if present else None,
                   evidence=[common.RECORD_FILE + "#" + common.pointer(*where)] if present else [])
    else:
        if type(reward) not in (int, float):
            raise _BadSimulation(f"reward_info.reward must be a number, found {common.describe(reward)}")
        if type(reward) is int and abs(reward) > MAX_SAFE_NUMBER:  # float() would round (or overflow)
            raise _BadSimulation(f"reward_info.reward {common.describe(reward)} is an integer beyond 2**53-1",
                                 "number-too-large")
        success = abs(reward - 1.0) <= common.SUCCESS_TOLERANCE
        rec.update(success=success, failure_class="" if success else "agent",
                   quality_score=common.unit_score(float(reward)))
    return common.ImportedAttempt(rec, sim)


def _collect(sources: list[Tau2Source], cost_source: str | None) -> tuple[dict, list[str], list]:
    """The checked run facts (info of the first file), the plan's task ids and the attempts of every file."""
    facts = None
    plan: list[str] = []
    attempts = []
    seen: dict[tuple[str, int], str] = {}
    for source in sources:
        info = _info(source)
        if facts is None:
            facts = info
        else:
            for key in ("domain", "model", "num_trials"):
                if info[key] != facts[key]:
                    raise _bad(source.file, f"info {key} is {common.describe(info[key])} here and "
                                            f"{common.describe(facts[key])} in {sources[0].file}: import each run "
                                            "into its own run directory", rule="tau2-bench-runs")
        ids = _task_ids(source)
        plan.extend(t for t in ids if t not in plan)
        known = set(ids)
        for file, label, sim in source.simulations:
            try:
                key = _simulation_key(sim, known)
                if key in seen:
                    raise _BadSimulation(f"task {key[0]!r} trial {key[1]} is also recorded in {seen[key]}",
                                         "duplicate-attempt")
                seen[key] = f"{file} ({label})" if label != "the simulation" else file
                attempts.append(_attempt(*key, sim, cost_source))
            except _BadSimulation as exc:
                raise _bad(file, f"{label}: {exc}", rule=exc.rule) from None
    return facts, plan, attempts


def _manifest(sources: list[Tau2Source], facts: dict, plan: list[str], attempts: list,
              run_id: str | None) -> dict:
    repeats = facts["num_trials"]
    present = {(a.record["task_id"], a.record["attempt"]) for a in attempts}
    complete = all((t, n) in present for t in plan for n in range(1, repeats + 1))
    digest = common.sha256_hex("\n".join(sorted(s.sha256 for s in sources)).encode("utf-8"))
    stamps = sorted(s.meta["timestamp"] for s in sources if isinstance(s.meta.get("timestamp"), str))
    readable = common.readable_run_id("tau2-bench", [facts["model"], facts["domain"], stamps[0][:10] if stamps else None],
                                      digest)
    manifest: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id or readable,
        "suite": {"name": facts["domain"] or "tau2-bench"},
    }
    if stamps:
        manifest["created_at"] = stamps[0]
    manifest.update({
        "status": "completed" if complete else "partial",
        "runner": {"name": "tau2-bench", **({"version": facts["git_commit"]} if facts["git_commit"] else {})},
        "config": {k: facts[k] for k in ("model", "user_model") if facts[k] is not None},
        "plan": {"repeats_override": None, "k": repeats,
                 "tasks": [{"task_id": t, "repeats": repeats} for t in plan]},
        "import": {
            "from": "tau2-bench",
            "toolkit": "capbench-nb",
            "toolkit_version": __version__,
            "sources": [{"file": Path(s.file).name, "sha256": s.sha256, "format": s.form,
                         "simulations": len(s.simulations)} for s in sources],
            "record_file": common.RECORD_FILE,
        },
    })
    return manifest


def import_tau2bench(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    force: bool = False,
    run_id: str | None = None,
    cost_source: str | None = None,
) -> common.ImportReport:
    """Import tau2-bench results (a results file or folder) as a run directory at ``out``.

    Parameters
    ----------
    path : path-like
        A tau2 results JSON file (``info``, ``tasks``, ``simulations``), a dir-format folder
        (``results.json`` and ``simulations/``), or a folder of results files of one model and domain.
    out : path-like
        The run directory to write (absent or empty; with ``force``, a previous run there is replaced).
    run_id : str, optional
        Default ``tau2-bench-`` + 16 hex digits of the sources' sha256.
    cost_source : str, optional
        The versioned price source tau2 priced the run with (it uses litellm's ``completion_cost``;
        e.g. ``litellm@1.72.0``).  Only then does ``agent_cost`` become each attempt's ``cost``.

    Raises
    ------
    InvalidRunError
        Unreadable input, a value of the wrong type, a simulation of no task, a duplicate
        (task, trial), results of different runs in one folder, or an output that must not be replaced.
    """
    file = str(path)
    if cost_source is not None and (not isinstance(cost_source, str) or not cost_source.strip()):
        raise InvalidRunError("import tau2-bench", "usage", "--cost-source must name a versioned price source")
    with common.guarded(file, _KIND):
        sources, notes = read_results(path)
        facts, plan, attempts = _collect(sources, cost_source)
        if not plan:
            raise _bad(sources[0].file, "the results define no task")
        report = common.write_imported_run(out, _manifest(sources, facts, plan, attempts, run_id), attempts,
                                           force=force, sources=[path])
    return common.with_notes(report, notes)
