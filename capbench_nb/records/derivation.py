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
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.pointer import EvidenceError, resolve_pointer
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.io.files import NotARegularFile, checked_stat
from capbench_nb.format import MAX_SAFE_NUMBER, TELEMETRY_FIELDS

try:  # optional: parses artifact files faster, to the same documents (see _parse_artifact)
    import orjson as _orjson
except ImportError:  # pragma: no cover - the standard library alone gives the same results
    _orjson = None

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


# The type rules of the three artifact files, each written once.  A check looks at a value with
# the cheapest test that accepts exactly what the rule accepts; only when it refuses does it build
# the JSON pointer and the message (``_fail``, ``_bad_number``), so a valid document costs no
# string formatting.  The rules run in document order and the first broken one raises.


def _fail(file: str, pointer: str, message: str, rule: str = "artifact-type") -> None:
    raise InvalidRunError(file, rule, message, pointer=pointer)


def _bad_number(file: str, pointer: str, value: Any, integer: bool) -> None:
    """Raise for a number the fast test refused (a non-negative number, or integer, at most 2**53-1).

    The tests run in this order; an integer of any size is finite."""
    ok = type(value) is int if integer else _is_number(value)
    # an int is finite (math.isfinite would raise OverflowError on one beyond a float's range)
    if not ok or (type(value) is float and not math.isfinite(value)) or value < 0:
        _fail(file, pointer, f"{pointer} must be a non-negative {'integer' if integer else 'number'} or null")
    if value > MAX_SAFE_NUMBER:
        _fail(file, pointer, f"{pointer} is {value}, above 2**53-1, the largest exactly representable value",
              "number-too-large")
    raise AssertionError(f"{pointer}: {value!r} passes the number rule")  # pragma: no cover


def _number(file: str, value: Any, pointer: str) -> None:
    """A non-negative number at most 2**53-1, or null."""
    if value is not None and not ((type(value) is int or type(value) is float) and 0 <= value <= MAX_SAFE_NUMBER):
        _bad_number(file, pointer, value, False)


def _count(file: str, value: Any, pointer: str) -> None:
    """A non-negative integer at most 2**53-1, or null."""
    if value is not None and not (type(value) is int and 0 <= value <= MAX_SAFE_NUMBER):
        _bad_number(file, pointer, value, True)


def _object_or_null(file: str, value: Any, pointer: str) -> None:
    if value is not None and not isinstance(value, dict):
        _fail(file, pointer, f"{pointer} must be an object or null")


def _boolean(file: str, value: Any, pointer: str) -> None:
    if value is not None and type(value) is not bool:
        _fail(file, pointer, f"{pointer} must be true or false or null")


def _choice(file: str, value: Any, pointer: str, options: tuple) -> None:
    if value is not None and (not isinstance(value, str) or value not in options):
        _fail(file, pointer, f"{pointer} must be one of {', '.join(options)}")


def _list(file: str, value: Any, pointer: str) -> None:
    if not isinstance(value, list):
        _fail(file, pointer, f"{pointer} must be a list")


def _document(file: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        _fail(file, "", "the document must be an object")


def _check_attempt(doc: Any, file: str) -> None:
    """The types of attempt.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    task_id = doc.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        _fail(file, "/task_id", "/task_id must be a non-empty string")
    number = doc.get("attempt")
    if type(number) is not int or number < 1:
        _fail(file, "/attempt", "/attempt must be an integer >= 1")
    setup = doc.get("setup")
    _object_or_null(file, setup, "/setup")
    if setup:
        _choice(file, setup.get("status"), "/setup/status", ("ok", "failed"))
        _number(file, setup.get("duration_ms"), "/setup/duration_ms")
    provider = doc.get("provider")
    _object_or_null(file, provider, "/provider")
    if provider:
        _boolean(file, provider.get("available"), "/provider/available")
    _object_or_null(file, doc.get("skip"), "/skip")
    agent = doc.get("agent")
    _object_or_null(file, agent, "/agent")
    if agent:
        _choice(file, agent.get("status"), "/agent/status", ("completed", "timeout", "crashed", "not_started"))
        _number(file, agent.get("task_wall_ms"), "/agent/task_wall_ms")
    recovery = doc.get("recovery")
    _object_or_null(file, recovery, "/recovery")
    if recovery:
        _boolean(file, recovery.get("attempted"), "/recovery/attempted")
        _boolean(file, recovery.get("succeeded"), "/recovery/succeeded")
    shots = doc.get("screenshots")
    if shots is not None:
        _list(file, shots, "/screenshots")
        for i, shot in enumerate(shots):
            if not isinstance(shot, dict):
                _fail(file, f"/screenshots/{i}", f"/screenshots/{i} must be an object")
            v = shot.get("capture_ms")
            if v is not None and not ((type(v) is int or type(v) is float) and 0 <= v <= MAX_SAFE_NUMBER):
                _bad_number(file, f"/screenshots/{i}/capture_ms", v, False)
    ev = doc.get("evaluation")
    _object_or_null(file, ev, "/evaluation")
    if ev:
        _boolean(file, ev.get("judge_enabled"), "/evaluation/judge_enabled")
        hard = ev.get("hard_assertions")
        if hard is not None:
            _list(file, hard, "/evaluation/hard_assertions")
            for i, item in enumerate(hard):
                if not isinstance(item, dict):
                    _fail(file, f"/evaluation/hard_assertions/{i}", f"/evaluation/hard_assertions/{i} must be an object")
                if type(item.get("passed")) is not bool:
                    _fail(file, f"/evaluation/hard_assertions/{i}/passed",
                          f"/evaluation/hard_assertions/{i}/passed must be true or false")
        judge = ev.get("judge")
        _object_or_null(file, judge, "/evaluation/judge")
        if judge:
            _choice(file, judge.get("status"), "/evaluation/judge/status", ("ok", "error"))
            _choice(file, judge.get("verdict"), "/evaluation/judge/verdict", ("pass", "fail"))
        q = ev.get("quality_score")
        if q is not None and (not _is_number(q) or not 0 <= q <= 1):
            _fail(file, "/evaluation/quality_score", "/evaluation/quality_score must be a number in [0, 1] or null")


def _check_episode(doc: Any, file: str) -> None:
    """The types of episode.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    metrics = doc.get("run_metrics")
    _object_or_null(file, metrics, "/run_metrics")
    if metrics:
        for key in _TOKENS + _EPISODE_ONLY:
            v = metrics.get(key)
            if key == "time_to_first_token_ms":
                _number(file, v, f"/run_metrics/{key}")
            elif v is not None and not (type(v) is int and 0 <= v <= MAX_SAFE_NUMBER):
                _bad_number(file, f"/run_metrics/{key}", v, True)
    events = doc.get("events")
    if events is not None:
        _list(file, events, "/events")
        for i, event in enumerate(events):
            if not isinstance(event, dict):
                _fail(file, f"/events/{i}", f"/events/{i} must be an object")
            kind = event.get("type")
            if kind is not None and not isinstance(kind, str):
                _fail(file, f"/events/{i}/type", f"/events/{i}/type must be a string")
            if kind == "device_action":
                start, end = event.get("start_ms"), event.get("end_ms")
                if start is not None and not ((type(start) is int or type(start) is float)
                                              and 0 <= start <= MAX_SAFE_NUMBER):
                    _bad_number(file, f"/events/{i}/start_ms", start, False)
                if end is not None and not ((type(end) is int or type(end) is float) and 0 <= end <= MAX_SAFE_NUMBER):
                    _bad_number(file, f"/events/{i}/end_ms", end, False)
                if start is not None and end is not None and end < start:
                    _fail(file, f"/events/{i}/end_ms", f"/events/{i} ends before it starts")


def _check_history(doc: Any, file: str) -> None:
    """The types of history.json (raises InvalidRunError naming the first broken value)."""
    _document(file, doc)
    messages = doc.get("messages")
    if messages is None:
        return
    _list(file, messages, "/messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            _fail(file, f"/messages/{i}", f"/messages/{i} must be an object")
        usage = msg.get("usage")
        if usage is not None:
            if not isinstance(usage, dict):
                _fail(file, f"/messages/{i}/usage", f"/messages/{i}/usage must be an object or null")
            for key in _TOKENS:
                v = usage.get(key)
                if v is not None and not (type(v) is int and 0 <= v <= MAX_SAFE_NUMBER):
                    _bad_number(file, f"/messages/{i}/usage/{key}", v, True)
        calls = msg.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                _fail(file, f"/messages/{i}/tool_calls", f"/messages/{i}/tool_calls must be a list")
            for j, call in enumerate(calls):
                if not isinstance(call, dict):
                    _fail(file, f"/messages/{i}/tool_calls/{j}", f"/messages/{i}/tool_calls/{j} must be an object")
                name = call.get("name")
                if name is not None and not isinstance(name, str):
                    _fail(file, f"/messages/{i}/tool_calls/{j}/name", f"/messages/{i}/tool_calls/{j}/name must be a string")


@dataclass(frozen=True)
class Artifacts:
    """The parsed artifact files of one attempt; ``None`` for an optional file that is absent."""

    directory: Path
    attempt: dict
    episode: dict | None
    history: dict | None
    #: ``os.path.realpath(directory)`` when read_artifacts computed it (saves resolving it again).
    real_directory: str | None = field(default=None, compare=False, repr=False)
    #: Set by read_artifacts only: the directory (``os.fspath``) whose files these documents are.
    _read_from: str | None = field(default=None, compare=False, repr=False)


_ABSENT = object()

#: Real paths already known to the caller (``ingest`` fills it for the run and its attempt
#: directories while it derives them), so that they are not resolved again per file.
_KNOWN_REAL: dict[str, str] = {}

#: One evidence resolver per run directory, for the caller that derives many records of one run
#: (``ingest``, while it runs), instead of one per record.
_RESOLVERS: dict[str, EvidenceResolver] = {}


def _realpath(path: str | os.PathLike) -> str:
    """``os.path.realpath(path)``, from :data:`_KNOWN_REAL` when the caller knows it."""
    return _KNOWN_REAL.get(os.fspath(path)) or os.path.realpath(path)


_OPEN = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_artifact(file: str, name: str, required: bool, real_dir: str) -> int | None:
    """A descriptor open for reading on the artifact file, or None when an optional file is absent.

    The file must resolve (symlinks followed) inside its attempt directory, whose real path is
    ``real_dir``.  A name that is not a symlink is ``real_dir/name``: inside.  So the file is first
    opened without following a symlink; only when that fails for another reason than its absence
    (it is a symlink, or cannot be opened) is it looked at again: a symlink is resolved and must
    stay inside, then the file is opened following it.
    """
    if _NOFOLLOW:
        try:
            return os.open(file, _OPEN | _NONBLOCK | _NOFOLLOW)
        except FileNotFoundError:
            if required:
                raise InvalidRunError(file, "artifact-missing", f"the attempt has no {name}") from None
            return None
        except OSError:
            pass  # a symlink (or an error the checks below report as before)
    try:
        link = stat.S_ISLNK(os.lstat(file).st_mode)
    except OSError:  # absent (os.path.lexists is False): nothing to check here
        link = False
    if link and not os.path.realpath(file).startswith(real_dir.rstrip(os.sep) + os.sep):
        raise InvalidRunError(file, "artifact-outside", f"{name} resolves outside the attempt directory")
    try:
        return os.open(file, _OPEN | _NONBLOCK)
    except FileNotFoundError:
        if required:
            raise InvalidRunError(file, "artifact-missing", f"the attempt has no {name}") from None
        return None
    except IsADirectoryError:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is a directory") from None
    except OSError as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"cannot read {name}: {exc.strerror}") from None


def _read_artifact(file: str, name: str, required: bool, real_dir: str) -> bytes | None:
    """The bytes of an artifact file (see :func:`_open_artifact` and :func:`_read_fd`), or None
    when an optional file is absent."""
    fd = _open_artifact(file, name, required, real_dir)
    return None if fd is None else _read_fd(fd, file, name)


def _read_fd(fd: int, file: str, name: str) -> bytes:
    """Everything ``fd`` (opened with ``O_NONBLOCK``) reads, then closes it; InvalidRunError otherwise.

    A regular file, or the null device, is read to its end.  A FIFO (named pipe), a socket or
    another device is refused (:func:`capbench_nb.evidence.checked_stat`): reading one could wait
    for a writer, maybe forever, or never end.
    """
    try:
        st = checked_stat(fd, file, null_device=True)
        parts = []
        if stat.S_ISREG(st.st_mode):
            data = os.read(fd, st.st_size + 1)
            if len(data) == st.st_size:  # all of it in one read (one byte more was asked for)
                return data
            parts = [data]  # it grew or shrank since fstat, or says size 0 and has content (/proc)
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    except IsADirectoryError:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is a directory") from None
    except NotARegularFile as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is {exc.kind}, not a regular file") from None
    except OSError as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"cannot read {name}: {exc.strerror}") from None
    finally:
        os.close(fd)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_19_DIGITS = b"0" * 19  # an integer orjson may read as a float has at least 19 digits (-2**63 - 1)


def _parse_artifact(raw: bytes, file: str, check) -> Any:
    """The parsed, type-checked document of an artifact file.

    With orjson installed it parses first, and its document is the standard library's: any problem
    (a syntax error, a broken type rule, but also what the standard library reads and orjson does
    not: NaN, infinities, lone surrogates, deep nesting) sends the file to the standard library,
    which gives the document, or the error, it always gave.  orjson reads an integer beyond 64 bits
    as a float, so a file with 19 digits in a row (anywhere: cheaper to find than to tell where)
    goes the standard library's way from the start.
    """
    if _orjson is not None and _19_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            doc = _orjson.loads(raw)
            check(doc, file)
            return doc
        except Exception:  # noqa: BLE001, S110 - whatever it was, the exact reading below decides
            pass
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidRunError(file, "artifact-json", f"not valid UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise InvalidRunError(file, "artifact-json", f"not valid JSON: {exc.msg} (column {exc.colno})",
                              line=exc.lineno) from None
    except ValueError:  # Python's limit on the digits of an integer literal (4300 by default)
        raise InvalidRunError(file, "number-too-large", "an integer literal too long to read (more than "
                              f"{sys.get_int_max_str_digits() or 'the allowed'} digits)") from None
    except RecursionError:
        raise InvalidRunError(file, "artifact-json", "JSON nested too deeply") from None
    check(doc, file)
    return doc


def read_artifacts(directory: str | os.PathLike) -> Artifacts:
    """Read and type-check the artifacts of one attempt directory.

    Raises
    ------
    InvalidRunError
        Naming the file (and a JSON pointer) when attempt.json is missing, a
        file is not JSON, or a value has the wrong type.
    """
    directory = directory if isinstance(directory, Path) else Path(directory)
    real_dir = _realpath(directory)
    shown = str(directory)
    base = "" if shown == "." else shown if shown.endswith(os.sep) else shown + os.sep  # + name: str(directory / name)
    file = base + ATTEMPT
    attempt = _parse_artifact(_read_artifact(file, ATTEMPT, True, real_dir), file, _check_attempt)
    file = base + EPISODE
    raw = _read_artifact(file, EPISODE, False, real_dir)
    episode = None if raw is None else _parse_artifact(raw, file, _check_episode)
    file = base + HISTORY
    raw = _read_artifact(file, HISTORY, False, real_dir)
    history = None if raw is None else _parse_artifact(raw, file, _check_history)
    return Artifacts(directory, attempt, episode, history, real_directory=real_dir, _read_from=shown)


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


_SRC_WALL, _SRC_SETUP = f"{ATTEMPT}#/agent/task_wall_ms", f"{ATTEMPT}#/setup/duration_ms"
_SRC_MESSAGES, _SRC_EVENTS, _SRC_SHOTS = f"{HISTORY}#/messages", f"{EPISODE}#/events", f"{ATTEMPT}#/screenshots"
_SRC_RUN_METRICS = {key: f"{EPISODE}#/run_metrics/{key}" for key in _TOKENS + _EPISODE_ONLY}
_SRC_RECOVERY = f"{ATTEMPT}#/recovery"
_SRC_ATTEMPTED, _SRC_SUCCEEDED = f"{ATTEMPT}#/recovery/attempted", f"{ATTEMPT}#/recovery/succeeded"


def extract_telemetry(
    attempt: dict, episode: dict | None, history: dict | None, *, tools: ToolConfig | None = None
) -> tuple[dict, dict]:
    """Every telemetry field from its authoritative source (spec sections 5 and 8).

    Returns
    -------
    telemetry : dict
        Every field of section 5, in order; null when its source is absent.
    telemetry_source : dict
        For each non-null field, its source (``FILE#POINTER``), in the order of section 5.
    """
    tools = tools or load_tool_config()
    tel: dict[str, Any] = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(name: str, value: Any, source: str) -> None:
        if value is not None:
            tel[name] = value
            src[name] = source

    agent, setup = attempt.get("agent"), attempt.get("setup")
    put("task_wall_ms", agent.get("task_wall_ms") if isinstance(agent, dict) else None, _SRC_WALL)
    put("setup_ms", setup.get("duration_ms") if isinstance(setup, dict) else None, _SRC_SETUP)

    history_tokens: dict[str, int | None] = {}
    messages = history.get("messages") if history is not None else None
    if isinstance(messages, list):
        device = tools.device_actions
        calls = actions = 0  # tool calls of assistant messages; those naming a device action
        usages = []  # every message's usage object
        for msg in messages:  # one pass
            if msg.get("role") == "assistant":
                for call in msg.get("tool_calls") or ():
                    calls += 1
                    if call.get("name") in device:
                        actions += 1
            usage = msg.get("usage")
            if isinstance(usage, dict):
                usages.append(usage)
        put("tool_calls", calls, _SRC_MESSAGES)
        put("device_actions", actions, _SRC_MESSAGES)
        put("llm_calls", len(usages), _SRC_MESSAGES)
        if usages:  # a history with no usage is no token source (spec section 8)
            for key in ("input_tokens", "output_tokens"):
                values = [u.get(key) for u in usages]
                history_tokens[key] = None if None in values else sum(values)
            i, o = history_tokens["input_tokens"], history_tokens["output_tokens"]
            history_tokens["total_tokens"] = None if i is None or o is None else i + o

    run_metrics = episode.get("run_metrics") if episode is not None else None
    run_metrics = run_metrics if isinstance(run_metrics, dict) else {}
    for key in _TOKENS:  # fall back one by one to the history's usage
        if run_metrics.get(key) is not None:
            put(key, run_metrics[key], _SRC_RUN_METRICS[key])
        else:
            put(key, history_tokens.get(key), _SRC_MESSAGES)
    for key in _EPISODE_ONLY:
        put(key, run_metrics.get(key), _SRC_RUN_METRICS[key])

    events = episode.get("events") if episode is not None else None
    if isinstance(events, list):
        spans = []  # end - start of each device action with both
        tool_errors = replans = 0
        for e in events:  # one pass
            kind = e.get("type")
            if kind == "device_action":
                start, end = e.get("start_ms"), e.get("end_ms")
                if start is not None and end is not None:
                    spans.append(end - start)
            elif kind == "tool_error":
                tool_errors += 1
            elif kind == "replan":
                replans += 1
        put("device_execution_ms", sum(spans), _SRC_EVENTS)
        put("tool_errors", tool_errors, _SRC_EVENTS)
        put("replan_count", replans, _SRC_EVENTS)

    shots = attempt.get("screenshots")
    if isinstance(shots, list) and all(s.get("capture_ms") is not None for s in shots):
        put("screenshot_capture_ms", sum(s["capture_ms"] for s in shots), _SRC_SHOTS)

    if "recovery" in attempt:
        recovery = attempt["recovery"]
        if recovery is None:  # none attempted
            put("recovery_attempted", False, _SRC_RECOVERY)
        else:
            put("recovery_attempted", recovery.get("attempted"), _SRC_ATTEMPTED)
            put("recovery_succeeded", recovery.get("succeeded"), _SRC_SUCCEEDED)
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
    read_here = art._read_from is not None and art._read_from == os.fspath(directory)
    if art.real_directory is not None and os.fspath(art.directory) == os.fspath(directory) \
            and (read_here or os.path.isdir(art.real_directory)):
        # what Path(directory).resolve() gives, already known (read_artifacts opened files in it)
        resolved = art.real_directory
    else:
        resolved = Path(directory).resolve()
    real_run = _KNOWN_REAL.get(os.fspath(run_dir)) or str(Path(run_dir).resolve())
    inside = real_run if real_run.endswith(os.sep) else real_run + os.sep
    below = os.sep == "/" and isinstance(resolved, str) and resolved.startswith(inside)
    if below:
        artifact_dir = resolved[len(inside):]  # relpath of a real path below a real path: the rest of it
    else:
        artifact_dir = Path(os.path.relpath(resolved, real_run)).as_posix()
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
    # Every reference must resolve: the rule the loader enforces, checked where the reference is
    # made.  While ingest derives a run (its resolver is registered), a reference into attempt.json
    # or episode.json as read_artifacts just read them from this directory, which lies below the
    # run (artifact_dir is then relative, without ``..``, and those files were checked to resolve
    # inside it), resolves exactly where its pointer resolves in that document.  Any other is
    # resolved by an EvidenceResolver, reading the file again.  (ingest's final check, the loader,
    # resolves every reference of the written file on disk.)
    shared = _RESOLVERS.get(os.fspath(run_dir))
    documents = {ATTEMPT: art.attempt, EPISODE: art.episode} if below and read_here and shared else {}
    resolver = None
    for ref in record["evidence"]:
        file, _, pointer = ref.partition("#")
        if documents.get(file) is not None:
            try:
                resolve_pointer(documents[file], pointer)
                continue
            except EvidenceError:
                pass  # the resolver names the problem
        resolver = resolver or shared or EvidenceResolver(run_dir)
        try:
            resolver.resolve(artifact_dir, ref)
        except EvidenceError as exc:
            raise InvalidRunError(str(Path(directory) / file), "evidence", str(exc)) from None
    return record
