"""Attempt records derived from per-attempt artifacts (spec sections 4, 5 and 8).

One deterministic function per concern:

- :func:`read_artifacts` reads ``attempt.json`` (required), ``episode.json``
  and ``history.json`` (optional) and checks their types;
- :func:`classify` applies the outcome rules of section 4, in order;
- :func:`extract_telemetry` takes each telemetry field from its
  authoritative source (section 5), naming the source of every non-null value;
- :func:`price_cost` prices tokens with a named, versioned price table;
- :func:`derive_record` puts them together into one results.jsonl record.

Nothing is guessed: a field whose source is absent is null, a count over a
present source with no match is 0, a failure stage is set only with evidence.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import InvalidRunError
from .evidence import EvidenceResolver, EvidenceError
from .schema import MAX_SAFE_NUMBER, TELEMETRY_FIELDS

__all__ = [
    "ToolConfig",
    "load_tool_config",
    "PriceTable",
    "load_price_table",
    "Artifacts",
    "Outcome",
    "read_artifacts",
    "classify",
    "extract_telemetry",
    "price_cost",
    "derive_record",
]

ATTEMPT, EPISODE, HISTORY = "attempt.json", "episode.json", "history.json"
_TOKENS = ("input_tokens", "output_tokens", "total_tokens")
_EPISODE_ONLY = ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ToolConfig:
    """Which tool names are device actions and which are read-only queries (configuration, not code)."""

    device_actions: frozenset[str]
    read_only: frozenset[str] = frozenset()


def load_tool_config(path: str | os.PathLike | None = None) -> ToolConfig:
    """Read a tool configuration: ``{"device_actions": [...], "read_only": [...]}``.

    Without ``path``, the package's defaults (the run format's lists) are used.
    """
    if path is None:
        text = resources.files("capbench_nb").joinpath("data/tools.json").read_text(encoding="utf-8")
        shown = "capbench_nb/data/tools.json"
    else:
        shown = str(path)
        text = _read_text(path, "tools-config")
    doc = _parse(text, shown, "tools-config")
    lists = {}
    for key in ("device_actions", "read_only"):
        value = doc.get(key, []) if isinstance(doc, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidRunError(shown, "tools-config", f"{key} must be a list of tool names", pointer=f"/{key}")
        lists[key] = frozenset(value)
    overlap = lists["device_actions"] & lists["read_only"]
    if overlap:
        raise InvalidRunError(shown, "tools-config", f"tools listed as both device action and read-only: {sorted(overlap)}")
    return ToolConfig(**lists)


@dataclass(frozen=True)
class PriceTable:
    """A named, versioned price table: USD per token, per model.

    File format (JSON)::

        {"name": "prices/p1", "version": "2026-10-01", "effective_date": "2026-10-01",
         "models": {"m-large": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07}}}

    ``cached_input`` is optional; without it cached input tokens are priced as input.
    """

    name: str
    version: str
    effective_date: str
    models: dict = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The ``cost_source`` this table gives: ``NAME@VERSION``."""
        return f"{self.name}@{self.version}"


def load_price_table(path: str | os.PathLike) -> PriceTable:
    """Read and check a price table file (see :class:`PriceTable`)."""
    shown = str(path)
    doc = _parse(_read_text(path, "price-table"), shown, "price-table")
    if not isinstance(doc, dict):
        raise InvalidRunError(shown, "price-table", "a price table must be a JSON object")
    for key in ("name", "version", "effective_date"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise InvalidRunError(shown, "price-table", f"{key} must be a non-empty string", pointer=f"/{key}")
    models = doc.get("models")
    if not isinstance(models, dict) or not models:
        raise InvalidRunError(shown, "price-table", "models must map model names to prices", pointer="/models")
    for model, prices in models.items():
        if not isinstance(prices, dict):
            raise InvalidRunError(shown, "price-table", f"prices of {model!r} must be an object", pointer=f"/models/{model}")
        for key in ("input", "output"):
            if not _is_number(prices.get(key)) or not math.isfinite(prices[key]) or prices[key] < 0:
                raise InvalidRunError(shown, "price-table", f"{model!r} needs a non-negative {key} price per token",
                                      pointer=f"/models/{model}/{key}")
        cached = prices.get("cached_input", 0)
        if not _is_number(cached) or not math.isfinite(cached) or cached < 0:
            raise InvalidRunError(shown, "price-table", f"cached_input price of {model!r} must be a non-negative number",
                                  pointer=f"/models/{model}/cached_input")
    return PriceTable(name=doc["name"], version=doc["version"], effective_date=doc["effective_date"], models=models)


def _read_text(path: str | os.PathLike, rule: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidRunError(str(path), rule, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRunError(str(path), rule, f"cannot read: {exc}") from None


def _parse(text: str, shown: str, rule: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRunError(shown, rule, f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except RecursionError:
        raise InvalidRunError(shown, rule, "JSON nested too deeply") from None


# --------------------------------------------------------------------------- artifacts


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)


def _is_count(v: Any) -> bool:
    return type(v) is int and v >= 0


class _Check:
    """Type checks of one artifact file; the first problem raises InvalidRunError naming file and pointer."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, pointer: str, message: str, rule: str = "artifact-type"):
        raise InvalidRunError(self.file, rule, message, pointer=pointer)

    def obj(self, value: Any, pointer: str, *, nullable: bool = False) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            self.fail(pointer, f"{pointer or 'the document'} must be an object{' or null' if nullable else ''}")

    def lst(self, value: Any, pointer: str) -> None:
        if not isinstance(value, list):
            self.fail(pointer, f"{pointer} must be a list")

    def num(self, value: Any, pointer: str, *, integer: bool = False) -> None:
        if value is None:
            return
        ok = type(value) is int if integer else _is_number(value)
        if not ok or not math.isfinite(value) or value < 0:
            self.fail(pointer, f"{pointer} must be a non-negative {'integer' if integer else 'number'} or null")
        if value > MAX_SAFE_NUMBER:
            self.fail(pointer, f"{pointer} is {value}, above 2**53-1, the largest exactly representable value",
                      "number-too-large")

    def boolean(self, value: Any, pointer: str, *, nullable: bool = True) -> None:
        if value is None and nullable:
            return
        if type(value) is not bool:
            self.fail(pointer, f"{pointer} must be true or false{' or null' if nullable else ''}")

    def choice(self, value: Any, pointer: str, options: tuple, *, nullable: bool = False) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or value not in options:
            self.fail(pointer, f"{pointer} must be one of {', '.join(options)}")

    def string(self, value: Any, pointer: str, *, nullable: bool = True) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str):
            self.fail(pointer, f"{pointer} must be a string")


# The checks below build a JSON pointer for every value they look at, which costs more than the
# checking.  Each ``_*_ok`` function applies the same rules in the same order without pointers and
# only says whether the document passes; when it does not, the ``_check_*`` function runs to find
# the first problem and name it.  (Each ``_*_ok`` must pass exactly the documents its ``_check_*``
# passes: same conditions, same order, so even an exception is raised on the same value.)


def _num_ok(value: Any, integer: bool = False) -> bool:
    if value is None:
        return True
    ok = type(value) is int if integer else _is_number(value)
    return not (not ok or not math.isfinite(value) or value < 0) and not value > MAX_SAFE_NUMBER


def _bool_ok(value: Any, nullable: bool = True) -> bool:
    return (value is None and nullable) or type(value) is bool


def _choice_ok(value: Any, options: tuple, nullable: bool = False) -> bool:
    return (value is None and nullable) or (isinstance(value, str) and value in options)


def _obj_ok(value: Any, nullable: bool = False) -> bool:
    return (value is None and nullable) or isinstance(value, dict)


def _attempt_ok(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if not isinstance(doc.get("task_id"), str) or not doc["task_id"]:
        return False
    if type(doc.get("attempt")) is not int or doc["attempt"] < 1:
        return False
    setup = doc.get("setup")
    if not _obj_ok(setup, True):
        return False
    if setup and not (_choice_ok(setup.get("status"), ("ok", "failed"), True) and _num_ok(setup.get("duration_ms"))):
        return False
    provider = doc.get("provider")
    if not _obj_ok(provider, True) or (provider and not _bool_ok(provider.get("available"))):
        return False
    if not _obj_ok(doc.get("skip"), True):
        return False
    agent = doc.get("agent")
    if not _obj_ok(agent, True):
        return False
    if agent and not (_choice_ok(agent.get("status"), ("completed", "timeout", "crashed", "not_started"), True)
                      and _num_ok(agent.get("task_wall_ms"))):
        return False
    recovery = doc.get("recovery")
    if not _obj_ok(recovery, True):
        return False
    if recovery and not (_bool_ok(recovery.get("attempted")) and _bool_ok(recovery.get("succeeded"))):
        return False
    shots = doc.get("screenshots")
    if shots is not None:
        if not isinstance(shots, list):
            return False
        for shot in shots:
            if not isinstance(shot, dict) or not _num_ok(shot.get("capture_ms")):
                return False
    ev = doc.get("evaluation")
    if not _obj_ok(ev, True):
        return False
    if ev:
        if not _bool_ok(ev.get("judge_enabled")):
            return False
        hard = ev.get("hard_assertions")
        if hard is not None:
            if not isinstance(hard, list):
                return False
            for item in hard:
                if not isinstance(item, dict) or not _bool_ok(item.get("passed"), False):
                    return False
        judge = ev.get("judge")
        if not _obj_ok(judge, True):
            return False
        if judge and not (_choice_ok(judge.get("status"), ("ok", "error"), True)
                          and _choice_ok(judge.get("verdict"), ("pass", "fail"), True)):
            return False
        q = ev.get("quality_score")
        if q is not None and (not _is_number(q) or not 0 <= q <= 1):
            return False
    return True


def _episode_ok(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    metrics = doc.get("run_metrics")
    if not _obj_ok(metrics, True):
        return False
    if metrics:
        for key in _TOKENS + _EPISODE_ONLY:
            if not _num_ok(metrics.get(key), key != "time_to_first_token_ms"):
                return False
    events = doc.get("events")
    if events is not None:
        if not isinstance(events, list):
            return False
        for event in events:
            if not isinstance(event, dict):
                return False
            kind = event.get("type")
            if kind is not None and not isinstance(kind, str):
                return False
            if kind == "device_action":
                start, end = event.get("start_ms"), event.get("end_ms")
                if not _num_ok(start) or not _num_ok(end):
                    return False
                if start is not None and end is not None and end < start:
                    return False
    return True


def _history_ok(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    messages = doc.get("messages")
    if messages is None:
        return True
    if not isinstance(messages, list):
        return False
    for msg in messages:
        if not isinstance(msg, dict):
            return False
        usage = msg.get("usage")
        if not _obj_ok(usage, True):
            return False
        if usage:
            for key in _TOKENS:
                if not _num_ok(usage.get(key), True):
                    return False
        calls = msg.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                return False
            for call in calls:
                if not isinstance(call, dict):
                    return False
                name = call.get("name")
                if name is not None and not isinstance(name, str):
                    return False
    return True


def _check_attempt(doc: Any, file: str) -> None:
    if _attempt_ok(doc):
        return
    c = _Check(file)
    c.obj(doc, "")
    if not isinstance(doc.get("task_id"), str) or not doc["task_id"]:
        c.fail("/task_id", "/task_id must be a non-empty string")
    if type(doc.get("attempt")) is not int or doc["attempt"] < 1:
        c.fail("/attempt", "/attempt must be an integer >= 1")
    setup = doc.get("setup")
    c.obj(setup, "/setup", nullable=True)
    if setup:
        c.choice(setup.get("status"), "/setup/status", ("ok", "failed"), nullable=True)
        c.num(setup.get("duration_ms"), "/setup/duration_ms")
    provider = doc.get("provider")
    c.obj(provider, "/provider", nullable=True)
    if provider:
        c.boolean(provider.get("available"), "/provider/available")
    c.obj(doc.get("skip"), "/skip", nullable=True)
    agent = doc.get("agent")
    c.obj(agent, "/agent", nullable=True)
    if agent:
        c.choice(agent.get("status"), "/agent/status", ("completed", "timeout", "crashed", "not_started"), nullable=True)
        c.num(agent.get("task_wall_ms"), "/agent/task_wall_ms")
    recovery = doc.get("recovery")
    c.obj(recovery, "/recovery", nullable=True)
    if recovery:
        c.boolean(recovery.get("attempted"), "/recovery/attempted")
        c.boolean(recovery.get("succeeded"), "/recovery/succeeded")
    shots = doc.get("screenshots")
    if shots is not None:
        c.lst(shots, "/screenshots")
        for i, shot in enumerate(shots):
            c.obj(shot, f"/screenshots/{i}")
            c.num(shot.get("capture_ms"), f"/screenshots/{i}/capture_ms")
    ev = doc.get("evaluation")
    c.obj(ev, "/evaluation", nullable=True)
    if ev:
        c.boolean(ev.get("judge_enabled"), "/evaluation/judge_enabled")
        hard = ev.get("hard_assertions")
        if hard is not None:
            c.lst(hard, "/evaluation/hard_assertions")
            for i, item in enumerate(hard):
                c.obj(item, f"/evaluation/hard_assertions/{i}")
                c.boolean(item.get("passed"), f"/evaluation/hard_assertions/{i}/passed", nullable=False)
        judge = ev.get("judge")
        c.obj(judge, "/evaluation/judge", nullable=True)
        if judge:
            c.choice(judge.get("status"), "/evaluation/judge/status", ("ok", "error"), nullable=True)
            c.choice(judge.get("verdict"), "/evaluation/judge/verdict", ("pass", "fail"), nullable=True)
        q = ev.get("quality_score")
        if q is not None and (not _is_number(q) or not 0 <= q <= 1):
            c.fail("/evaluation/quality_score", "/evaluation/quality_score must be a number in [0, 1] or null")


def _check_episode(doc: Any, file: str) -> None:
    if _episode_ok(doc):
        return
    c = _Check(file)
    c.obj(doc, "")
    metrics = doc.get("run_metrics")
    c.obj(metrics, "/run_metrics", nullable=True)
    if metrics:
        for key in _TOKENS + _EPISODE_ONLY:
            c.num(metrics.get(key), f"/run_metrics/{key}", integer=key != "time_to_first_token_ms")
    events = doc.get("events")
    if events is not None:
        c.lst(events, "/events")
        for i, event in enumerate(events):
            c.obj(event, f"/events/{i}")
            c.string(event.get("type"), f"/events/{i}/type")
            if event.get("type") == "device_action":
                c.num(event.get("start_ms"), f"/events/{i}/start_ms")
                c.num(event.get("end_ms"), f"/events/{i}/end_ms")
                start, end = event.get("start_ms"), event.get("end_ms")
                if start is not None and end is not None and end < start:
                    c.fail(f"/events/{i}/end_ms", f"/events/{i} ends before it starts")


def _check_history(doc: Any, file: str) -> None:
    if _history_ok(doc):
        return
    c = _Check(file)
    c.obj(doc, "")
    messages = doc.get("messages")
    if messages is None:
        return
    c.lst(messages, "/messages")
    for i, msg in enumerate(messages):
        c.obj(msg, f"/messages/{i}")
        usage = msg.get("usage")
        c.obj(usage, f"/messages/{i}/usage", nullable=True)
        if usage:
            for key in _TOKENS:
                c.num(usage.get(key), f"/messages/{i}/usage/{key}", integer=True)
        calls = msg.get("tool_calls")
        if calls is not None:
            c.lst(calls, f"/messages/{i}/tool_calls")
            for j, call in enumerate(calls):
                c.obj(call, f"/messages/{i}/tool_calls/{j}")
                c.string(call.get("name"), f"/messages/{i}/tool_calls/{j}/name")


@dataclass(frozen=True)
class Artifacts:
    """The parsed artifact files of one attempt; ``None`` for an optional file that is absent."""

    directory: Path
    attempt: dict
    episode: dict | None
    history: dict | None
    #: ``os.path.realpath(directory)`` when read_artifacts computed it (saves resolving it again).
    real_directory: str | None = field(default=None, compare=False, repr=False)


_ABSENT = object()

#: Real paths already known to the caller (``ingest`` fills it for the run and its attempt
#: directories while it derives them), so that they are not resolved again per file.
_KNOWN_REAL: dict[str, str] = {}


def _realpath(path: str | os.PathLike) -> str:
    """``os.path.realpath(path)``, from :data:`_KNOWN_REAL` when the caller knows it."""
    return _KNOWN_REAL.get(os.fspath(path)) or os.path.realpath(path)


def _load_json_file(path: Path, *, required: bool, real_dir: str | None = None) -> Any:
    """Parsed JSON of an artifact file, or ``_ABSENT`` when an optional file does not exist.

    The file must resolve (symlinks followed) inside its attempt directory (whose real path,
    ``real_dir``, the caller may pass).
    """
    if real_dir is None:
        real_dir = os.path.realpath(path.parent)
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # absent (os.path.lexists is False): nothing to check here
        link = False
    # Not a symlink: its real path is real_dir/name, inside.  A symlink: resolve it.
    if link and not os.path.realpath(path).startswith(real_dir.rstrip(os.sep) + os.sep):
        raise InvalidRunError(str(path), "artifact-outside", f"{path.name} resolves outside the attempt directory")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if required:
            raise InvalidRunError(str(path), "artifact-missing", f"the attempt has no {path.name}") from None
        return _ABSENT
    except IsADirectoryError:
        raise InvalidRunError(str(path), "artifact-unreadable", f"{path.name} is a directory") from None
    except OSError as exc:
        raise InvalidRunError(str(path), "artifact-unreadable", f"cannot read {path.name}: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidRunError(str(path), "artifact-json", f"not valid UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise InvalidRunError(str(path), "artifact-json", f"not valid JSON: {exc.msg} (column {exc.colno})",
                              line=exc.lineno) from None
    except RecursionError:
        raise InvalidRunError(str(path), "artifact-json", "JSON nested too deeply") from None


def read_artifacts(directory: str | os.PathLike) -> Artifacts:
    """Read and type-check the artifacts of one attempt directory.

    Raises
    ------
    InvalidRunError
        Naming the file (and a JSON pointer) when attempt.json is missing, a
        file is not JSON, or a value has the wrong type.
    """
    directory = Path(directory)
    real_dir = _realpath(directory)
    attempt_path, episode_path, history_path = directory / ATTEMPT, directory / EPISODE, directory / HISTORY
    attempt = _load_json_file(attempt_path, required=True, real_dir=real_dir)
    _check_attempt(attempt, str(attempt_path))
    episode = _load_json_file(episode_path, required=False, real_dir=real_dir)
    if episode is not _ABSENT:
        _check_episode(episode, str(episode_path))
    history = _load_json_file(history_path, required=False, real_dir=real_dir)
    if history is not _ABSENT:
        _check_history(history, str(history_path))
    return Artifacts(directory, attempt, None if episode is _ABSENT else episode,
                     None if history is _ABSENT else history, real_directory=real_dir)


# --------------------------------------------------------------------------- outcome


@dataclass(frozen=True)
class Outcome:
    """The classification fields of a record (spec section 3)."""

    success: bool
    agent_eligible: bool
    failure_class: str
    failure_stage: str | None = None
    evidence: tuple[str, ...] = ()
    quality_score: float | None = None


def _judge_enabled(evaluation: dict, judge_default: bool | None) -> bool:
    """``evaluation.judge_enabled``, else the manifest's ``config.judge``, else whether a judge result exists."""
    if isinstance(evaluation.get("judge_enabled"), bool):
        return evaluation["judge_enabled"]
    if isinstance(judge_default, bool):
        return judge_default
    return evaluation.get("judge") is not None


def classify(attempt: dict, episode: dict | None = None, *, judge_default: bool | None = None) -> Outcome:
    """Outcome of one attempt by the rules of spec section 4, in order.

    1. ``skip`` set: skipped, not eligible.
    2. setup failed, provider unavailable or agent ``not_started``: environment,
       not eligible; a setup failure gets stage ``setup`` (evidence ``attempt.json#/setup``).
    3. agent ``crashed``: unknown, not eligible, no stage.
    4. judge enabled and judge status ``error``: evaluation, not eligible,
       stage ``evaluation`` (evidence ``attempt.json#/evaluation/judge``), no quality score.
    5. success = every hard assertion passed and (judge disabled or verdict
       ``pass``); a failure is ``agent``, eligible, with stage
       ``device_execution`` and one evidence entry per device action event with
       ``status: error`` (``episode.json#/events/N``), in event order.

    Parameters
    ----------
    attempt, episode : dict
        Parsed attempt.json and episode.json (None when absent).
    judge_default : bool, optional
        The manifest's ``config.judge``, used when the attempt does not say
        whether its judge was enabled.
    """
    if attempt.get("skip") is not None:
        return Outcome(False, False, "skipped")
    setup = attempt.get("setup") or {}
    provider = attempt.get("provider") or {}
    agent = attempt.get("agent") or {}
    if setup.get("status") == "failed":
        return Outcome(False, False, "environment", "setup", (f"{ATTEMPT}#/setup",))
    if provider.get("available") is False or agent.get("status") == "not_started":
        return Outcome(False, False, "environment")
    if agent.get("status") == "crashed":
        return Outcome(False, False, "unknown")
    evaluation = attempt.get("evaluation") or {}
    judge = evaluation.get("judge") or {}
    enabled = _judge_enabled(evaluation, judge_default)
    if enabled and judge.get("status") == "error":
        return Outcome(False, False, "evaluation", "evaluation", (f"{ATTEMPT}#/evaluation/judge",))
    quality = evaluation.get("quality_score")
    hard_ok = all(item.get("passed") is True for item in evaluation.get("hard_assertions") or [])
    if hard_ok and (not enabled or judge.get("verdict") == "pass"):
        return Outcome(True, True, "", quality_score=quality)
    refs = tuple(
        f"{EPISODE}#/events/{i}"
        for i, event in enumerate((episode or {}).get("events") or [])
        if event.get("type") == "device_action" and event.get("status") == "error"
    )
    return Outcome(False, True, "agent", "device_execution" if refs else None, refs, quality)


# --------------------------------------------------------------------------- telemetry


def extract_telemetry(
    attempt: dict, episode: dict | None, history: dict | None, *, tools: ToolConfig | None = None
) -> tuple[dict, dict]:
    """Every telemetry field from its authoritative source (spec sections 5 and 8).

    Returns
    -------
    telemetry : dict
        Every field of section 5, in order; null when its source is absent.
    telemetry_source : dict
        For each non-null field, its source (``FILE#POINTER``).
    """
    tools = tools or load_tool_config()
    tel: dict[str, Any] = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(name: str, value: Any, source: str) -> None:
        if value is not None:
            tel[name] = value
            src[name] = source

    agent, setup = attempt.get("agent"), attempt.get("setup")
    put("task_wall_ms", agent.get("task_wall_ms") if isinstance(agent, dict) else None, f"{ATTEMPT}#/agent/task_wall_ms")
    put("setup_ms", setup.get("duration_ms") if isinstance(setup, dict) else None, f"{ATTEMPT}#/setup/duration_ms")

    history_tokens: dict[str, int | None] = {}
    messages = history.get("messages") if history is not None else None
    if isinstance(messages, list):
        source = f"{HISTORY}#/messages"
        calls = [
            call
            for msg in messages
            if msg.get("role") == "assistant"
            for call in (msg.get("tool_calls") or [])
        ]
        put("tool_calls", len(calls), source)
        put("device_actions", sum(1 for call in calls if call.get("name") in tools.device_actions), source)
        usages = [msg["usage"] for msg in messages if isinstance(msg.get("usage"), dict)]
        put("llm_calls", len(usages), source)
        if usages:  # a history with no usage is no token source (spec section 8)
            for key in ("input_tokens", "output_tokens"):
                values = [u.get(key) for u in usages]
                history_tokens[key] = None if any(v is None for v in values) else sum(values)
            i, o = history_tokens["input_tokens"], history_tokens["output_tokens"]
            history_tokens["total_tokens"] = None if i is None or o is None else i + o

    run_metrics = episode.get("run_metrics") if episode is not None else None
    run_metrics = run_metrics if isinstance(run_metrics, dict) else {}
    for key in _TOKENS:  # fall back one by one to the history's usage
        if run_metrics.get(key) is not None:
            put(key, run_metrics[key], f"{EPISODE}#/run_metrics/{key}")
        else:
            put(key, history_tokens.get(key), f"{HISTORY}#/messages")
    for key in _EPISODE_ONLY:
        put(key, run_metrics.get(key), f"{EPISODE}#/run_metrics/{key}")

    events = episode.get("events") if episode is not None else None
    if isinstance(events, list):
        source = f"{EPISODE}#/events"
        put(
            "device_execution_ms",
            sum(
                e["end_ms"] - e["start_ms"]
                for e in events
                if e.get("type") == "device_action" and e.get("start_ms") is not None and e.get("end_ms") is not None
            ),
            source,
        )
        put("tool_errors", sum(1 for e in events if e.get("type") == "tool_error"), source)
        put("replan_count", sum(1 for e in events if e.get("type") == "replan"), source)

    shots = attempt.get("screenshots")
    if isinstance(shots, list) and all(s.get("capture_ms") is not None for s in shots):
        put("screenshot_capture_ms", sum(s["capture_ms"] for s in shots), f"{ATTEMPT}#/screenshots")

    if "recovery" in attempt:
        recovery = attempt["recovery"]
        if recovery is None:  # none attempted
            put("recovery_attempted", False, f"{ATTEMPT}#/recovery")
        else:
            put("recovery_attempted", recovery.get("attempted"), f"{ATTEMPT}#/recovery/attempted")
            put("recovery_succeeded", recovery.get("succeeded"), f"{ATTEMPT}#/recovery/succeeded")
    return tel, src


def price_cost(telemetry: dict, model: str | None, prices: PriceTable | None) -> tuple[float | None, str | None]:
    """Provider cost from a named price table, or ``(None, None)``: never estimated.

    cost = (input - cached) * input price + cached * cached price + output * output price,
    with cached input tokens priced as input when the table has no cached price
    or the record has no cached count.  Null when the table or the model's
    prices are missing, or input or output tokens are null.
    """
    if prices is None or model is None or model not in prices.models:
        return None, None
    inp, out = telemetry.get("input_tokens"), telemetry.get("output_tokens")
    if inp is None or out is None:
        return None, None
    table = prices.models[model]
    cached = telemetry.get("cached_input_tokens") or 0
    cached = min(cached, inp)
    cached_price = table.get("cached_input", table["input"])
    cost = (inp - cached) * table["input"] + cached * cached_price + out * table["output"]
    return round(cost, 12), prices.source


# --------------------------------------------------------------------------- record


def derive_record(
    directory: str | os.PathLike,
    *,
    run_dir: str | os.PathLike,
    judge_default: bool | None = None,
    model: str | None = None,
    tools: ToolConfig | None = None,
    prices: PriceTable | None = None,
    artifacts: Artifacts | None = None,
) -> dict:
    """The results.jsonl record of one attempt directory.

    Parameters
    ----------
    directory : path-like
        The attempt's artifact directory (inside ``run_dir``).
    run_dir : path-like
        The run directory; ``artifact_dir`` is written relative to it.
    judge_default : bool, optional
        The manifest's ``config.judge``.
    model : str, optional
        The model whose prices apply (the manifest's ``config.model``).
    tools : ToolConfig, optional
        Device-action and read-only tool names; the package defaults otherwise.
    prices : PriceTable, optional
        Without one, ``cost`` and ``cost_source`` are null.
    artifacts : Artifacts, optional
        Already read artifacts (otherwise read from ``directory``).

    Raises
    ------
    InvalidRunError
        For a missing attempt.json, unparseable JSON or wrong types, naming the file.
    """
    art = artifacts or read_artifacts(directory)
    outcome = classify(art.attempt, art.episode, judge_default=judge_default)
    telemetry, sources = extract_telemetry(art.attempt, art.episode, art.history, tools=tools)
    cost, cost_source = price_cost(telemetry, model, prices)
    if art.real_directory is not None and os.fspath(art.directory) == os.fspath(directory) \
            and os.path.isdir(art.real_directory):
        resolved = art.real_directory  # what Path(directory).resolve() gives, already known
    else:
        resolved = Path(directory).resolve()
    known_run = _KNOWN_REAL.get(os.fspath(run_dir))
    artifact_dir = Path(os.path.relpath(resolved, known_run or Path(run_dir).resolve())).as_posix()
    record = {
        "task_id": art.attempt["task_id"],
        "attempt": art.attempt["attempt"],
        "artifact_dir": artifact_dir,
        "success": outcome.success,
        "agent_eligible": outcome.agent_eligible,
        "failure_class": outcome.failure_class,
        "failure_stage": outcome.failure_stage,
        "evidence": list(outcome.evidence),
        "quality_score": outcome.quality_score,
        "telemetry": telemetry,
        "telemetry_source": sources,
        "cost": cost,
        "cost_source": cost_source,
    }
    resolver = EvidenceResolver(run_dir) if record["evidence"] else None
    for ref in record["evidence"]:  # the rule the loader enforces, checked where the reference is made
        try:
            resolver.resolve(artifact_dir, ref)
        except EvidenceError as exc:
            raise InvalidRunError(str(Path(directory) / ref.partition("#")[0]), "evidence", str(exc)) from None
    return record
