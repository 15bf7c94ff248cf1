"""Shared helpers: build small run directories from compact descriptions."""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import io
import json
import os
import re
import signal
import stat
from pathlib import Path

import pytest

from capbench_nb.format import TELEMETRY_FIELDS, new_record

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SAMPLE_RUN = REPO / "data" / "sample-run"

# Outcome codes: S success, A agent failure, E environment, V evaluation,
# K skipped, U unknown (eligible), X unknown (not eligible).
_CODES = {
    "S": (True, True, ""),
    "A": (False, True, "agent"),
    "E": (False, False, "environment"),
    "V": (False, False, "evaluation"),
    "K": (False, False, "skipped"),
    "U": (False, True, "unknown"),
    "X": (False, False, "unknown"),
}


def record(task_id: str = "t1", attempt: int = 1, code: str = "S", /, *, telemetry: dict | None = None,
           source: str = "test", **fields) -> dict:
    """The one builder of a test record: a valid attempt record of outcome ``code``, from
    :func:`capbench_nb.format.new_record` (section-3 key order), then ``fields`` over it.

    Telemetry is all null but for ``telemetry``; each non-null value has the source ``source``
    (``{name}`` in it stands for the field's name).  ``fields`` replace values after the record is
    built and checked, so a test can give one a value the format refuses (a new key goes last);
    so do ``task_id`` and ``attempt``.
    """
    success, eligible, fclass = _CODES[code]
    tel = dict.fromkeys(TELEMETRY_FIELDS)
    tel.update(telemetry or {})
    rec = new_record(task_id="t1", attempt=1, success=success, agent_eligible=eligible, failure_class=fclass,
                     telemetry=tel,
                     telemetry_source={name: source.format(name=name) for name, value in tel.items() if value is not None})
    rec.update(task_id=task_id, attempt=attempt, **fields)  # (tests of the readers give ids such as 5 or 1.0)
    return rec


def manifest(tasks, *, k=None, repeats_override=None, status="completed", judge=True) -> dict:
    """A valid manifest; ``tasks`` is a list of (task_id, repeats) or plan-task dicts."""
    plan_tasks = [t if isinstance(t, dict) else {"task_id": t[0], "repeats": t[1]} for t in tasks]
    return {
        "schema_version": "capbench.run/1",
        "run_id": "test-run",
        "suite": {"name": "unit", "version": "1"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": status,
        "runner": {"name": "tests", "version": "0"},
        "config": {"model": "m", "judge": judge},
        "plan": {"repeats_override": repeats_override, "k": k, "tasks": plan_tasks},
    }


def with_run_id(path: Path, run_id: str) -> Path:
    """Give the run at ``path`` the run_id ``run_id`` (its manifest rewritten); returns ``path``."""
    doc = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    doc["run_id"] = run_id
    (path / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    return path


def write_run(path: Path, manifest_doc: dict, records: list, *, trailing_newline: bool = True) -> Path:
    """Write manifest.json and results.jsonl; records may be dicts or raw line strings."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text(json.dumps(manifest_doc, indent=2), encoding="utf-8")
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    (path / "results.jsonl").write_text(text, encoding="utf-8")
    return path


def outcomes(spec: dict[str, str]) -> list[dict]:
    """Records from ``{"t1": "SAS", "t2": "E.S"}``; ``.`` is a missing attempt."""
    out = []
    for task_id, codes in spec.items():
        for i, code in enumerate(codes, start=1):
            if code != ".":
                out.append(record(task_id, i, code))
    return out


@pytest.fixture
def sample_run_dir() -> Path:
    return SAMPLE_RUN


class Hang(BaseException):
    """Raised by :func:`deadline`: not an Exception, so no handler under test can turn it into an answer."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Raise :class:`Hang` in the block after ``seconds`` (a test that would block fails instead;
    not a timing assertion: the work takes milliseconds)."""

    def handler(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- end-to-end helpers
# Used by the corpus/fuzz suite (test_damaged_inputs.py) and the end-to-end tests of the loader,
# evidence, publishing and report modules.

#: ``CAPBENCH_FUZZ=long`` runs many more examples, and the slow end-to-end tests.
LONG = os.environ.get("CAPBENCH_FUZZ", "").strip().lower() in ("long", "1", "yes", "true")

#: Path fragments that would run a command if a path were spliced into shell or Python source.
PAYLOADS = ("$(touch $CAPBENCH_PWNED) `touch $CAPBENCH_PWNED` $HOME %s %(run_dir)s \\x "
            "\"+__import__('os').system('touch $CAPBENCH_PWNED')+\" "
            "'+__import__('os').system('touch $CAPBENCH_PWNED')+' \"\"\" '''")


def cli(*argv) -> tuple[int, str, str]:
    """``capbench-nb ARGV`` in-process: (exit code, stdout, stderr).  Exceptions propagate (a crash is a failure)."""
    from capbench_nb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def tree_hashes(root: Path) -> dict:
    """Every entry under ``root`` (symlinks not followed, special files not opened): path -> digest or kind."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            st_ = os.lstat(path)
            if stat.S_ISLNK(st_.st_mode):
                out[rel] = "symlink:" + os.readlink(path)
            elif stat.S_ISDIR(st_.st_mode):
                out[rel] = "dir"
            elif stat.S_ISREG(st_.st_mode):
                if st_.st_mode & 0o444 == 0:
                    out[rel] = f"unreadable:{st_.st_size}:{st_.st_mtime_ns}"
                else:
                    out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = f"special:{stat.S_IFMT(st_.st_mode)}"
    return out


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def check_error(err: str, run_dir: Path | None = None, where: str | None = None, rule=None) -> str:
    """The stderr of a rejected input: one line, no traceback, names the location and the rule.

    ``where`` is the location after the run directory (``results.jsonl:3``,
    ``manifest.json#/plan/k``); ``rule`` a rule id, a list of acceptable ids, or None.
    Returns the rule found.
    """
    assert "Traceback" not in err, err
    assert err.endswith("\n"), repr(err)
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    line = lines[0]
    assert line.startswith("capbench-nb: error: "), line
    assert not _CONTROL.search(line), f"raw control or bidi character in {line!r}"
    if run_dir is not None and where is not None:
        assert f"{run_dir}/{where}: " in line, f"expected location {run_dir}/{where} in {line!r}"
    found = re.search(r"\[rule: ([a-z0-9-]+)\]$", line)
    assert found, f"no [rule: ...] at the end of {line!r}"
    if rule is not None:
        allowed = [rule] if isinstance(rule, str) else list(rule)
        assert found.group(1) in allowed, f"rule {found.group(1)!r}, expected one of {allowed}: {line!r}"
    return found.group(1)


def read_doc(out_dir: Path) -> dict:
    """The metrics.json document in ``out_dir``."""
    return json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))


def comparable(doc: dict) -> dict:
    """metrics.json without what legitimately differs between equivalent inputs: provenance and anomalies."""
    doc = copy.deepcopy(doc)
    for key in ("provenance", "anomalies", "anomaly_counts"):
        doc.pop(key, None)
    return doc


def compact(obj) -> bytes:
    """Compact JSON of ``obj`` as UTF-8 bytes (one results.jsonl line without its newline)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write(run: Path, manifest_doc: dict | bytes, results: bytes) -> Path:
    """A run directory from raw bytes: manifest.json (a document, or bytes as they are) and results.jsonl."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "manifest.json").write_bytes(
        manifest_doc if isinstance(manifest_doc, bytes) else json.dumps(manifest_doc, indent=2).encode())
    (run / "results.jsonl").write_bytes(results)
    return run


# --------------------------------------------------------------------------- artifacts of one attempt
# attempt.json, episode.json and history.json as the spec's examples have them, for the derivation tests.

def attempt_doc(**changes) -> dict:
    """A completed, judged, successful attempt.json; ``changes`` replace top-level keys."""
    doc = {
        "task_id": "settings.wifi.toggle",
        "attempt": 2,
        "setup": {"status": "ok", "duration_ms": 2310, "error": None},
        "provider": {"available": True, "error": None},
        "skip": None,
        "agent": {"status": "completed", "task_wall_ms": 48210},
        "recovery": {"attempted": True, "succeeded": True},
        "screenshots": [{"capture_ms": 112}, {"capture_ms": 98}],
        "evaluation": {
            "judge_enabled": True,
            "hard_assertions": [{"name": "wifi_off", "passed": True}],
            "judge": {"status": "ok", "verdict": "pass", "score": 0.9, "error": None},
            "quality_score": 0.9,
        },
    }
    doc.update(copy.deepcopy(changes))
    return doc


def with_eval(doc: dict | None = None, **changes) -> dict:
    """``doc`` (default attempt_doc()) with evaluation keys replaced."""
    doc = copy.deepcopy(doc or attempt_doc())
    doc["evaluation"].update(copy.deepcopy(changes))
    return doc


def judge(status="ok", verdict="pass") -> dict:
    return {"status": status, "verdict": verdict, "score": 0.5, "error": "boom" if status == "error" else None}


FAILED_SETUP = {"status": "failed", "duration_ms": 900, "error": "adb: device not found"}
NO_PROVIDER = {"available": False, "error": "503"}
CRASHED = {"status": "crashed", "task_wall_ms": 5000}
NOT_STARTED = {"status": "not_started", "task_wall_ms": None}
TIMEOUT = {"status": "timeout", "task_wall_ms": 180000}


def episode_doc(events=None, **run_metrics) -> dict:
    rm = {"input_tokens": 9100, "output_tokens": 840, "total_tokens": 9940,
          "cached_input_tokens": 6000, "reasoning_tokens": None, "time_to_first_token_ms": 640}
    rm.update(run_metrics)
    return copy.deepcopy({"run_metrics": rm, "events": SPEC_EVENTS if events is None else events})


#: The events of the spec's episode.json example.
SPEC_EVENTS = [
    {"type": "tool_call", "name": "tap", "call_id": "c1", "t_ms": 1200},
    {"type": "device_action", "name": "tap", "call_id": "c1", "start_ms": 1210, "end_ms": 1530, "status": "ok"},
    {"type": "device_action", "name": "swipe", "call_id": "c4", "start_ms": 9000, "end_ms": None,
     "status": "error", "error": "device offline"},
    {"type": "tool_error", "call_id": "c3", "message": "element not found"},
    {"type": "replan", "t_ms": 20400},
]

#: Several device action errors among other events (indexes 1, 3 and 5 are errors).
ERROR_EVENTS = [
    {"type": "device_action", "name": "tap", "start_ms": 0, "end_ms": 10, "status": "ok"},
    {"type": "device_action", "name": "swipe", "start_ms": 20, "end_ms": 50, "status": "error", "error": "x"},
    {"type": "tool_error", "call_id": "c3", "message": "element not found", "status": "error"},
    {"type": "device_action", "name": "tap", "start_ms": 60, "end_ms": None, "status": "error", "error": "y"},
    {"type": "replan", "t_ms": 70, "status": "error"},
    {"type": "device_action", "name": "type_text", "start_ms": 80, "end_ms": 90, "status": "error", "error": "z"},
]


def history_doc(*messages) -> dict:
    return {"messages": list(messages)}


def assistant(*tools, usage=None) -> dict:
    msg = {"role": "assistant", "content": "",
           "tool_calls": [{"id": f"c{i}", "name": name, "arguments": {}} for i, name in enumerate(tools)]}
    if usage is not None:
        msg["usage"] = usage
    return msg


#: The spec's history.json example.
SPEC_HISTORY = history_doc(
    {"role": "user", "content": "Turn off Wi-Fi"},
    assistant("tap", usage={"input_tokens": 3000, "output_tokens": 120}),
    {"role": "tool", "tool_call_id": "c0", "content": "ok"},
)


def write_attempt(directory: Path, attempt: dict | str | None, episode=None, history=None) -> Path:
    """Write the artifact files (dicts as JSON, strings verbatim); None leaves a file out."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, doc in (("attempt.json", attempt), ("episode.json", episode), ("history.json", history)):
        if doc is not None:
            text = doc if isinstance(doc, str) else json.dumps(doc)
            (directory / name).write_text(text, encoding="utf-8")
    return directory


#: A price table (``load_price_table`` reads it from the ``price_table`` fixture's file).
PRICES = {"name": "prices/p1", "version": "2026-10-01", "effective_date": "2026-10-01",
          "models": {"m-large": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07},
                     "m-small": {"input": 1e-06, "output": 2e-06}}}


@pytest.fixture
def price_table(tmp_path):
    """:data:`PRICES` as loaded from a file."""
    from capbench_nb.records.prices import load_price_table

    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES), encoding="utf-8")
    return load_price_table(path)


# --------------------------------------------------------------------------- runs of attempt directories
# A run of ``attempts/<task>/<attempt>/`` directories for ingest: compact outcome codes S, A, E, K, V.


def ingest_manifest_doc(tasks, *, judge=True, model="m-large") -> dict:
    return {
        "schema_version": "capbench.run/1",
        "run_id": "ingest-test",
        "suite": {"name": "unit", "version": "1"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": "completed",
        "runner": {"name": "tests", "version": "0"},
        "config": {"model": model, "provider": "p1", "judge": judge},
        "plan": {"repeats_override": None, "tasks": [{"task_id": t, "repeats": r} for t, r in tasks]},
    }


def ingest_attempt_doc(task_id, attempt, outcome="S") -> dict:
    """attempt.json of outcome S (success), A (agent failure), E (setup failure), K (skipped), V (judge error)."""
    doc = {
        "task_id": task_id, "attempt": attempt,
        "setup": {"status": "ok", "duration_ms": 1000 + attempt, "error": None},
        "provider": {"available": True, "error": None},
        "skip": None,
        "agent": {"status": "completed", "task_wall_ms": 20000 + attempt},
        "recovery": None,
        "screenshots": [{"capture_ms": 100}],
        "evaluation": {"judge_enabled": True, "hard_assertions": [{"name": "h", "passed": True}],
                       "judge": {"status": "ok", "verdict": "pass", "score": 0.9, "error": None},
                       "quality_score": 0.9},
    }
    if outcome == "A":
        doc["evaluation"]["judge"]["verdict"] = "fail"
        doc["evaluation"]["quality_score"] = 0.2
    elif outcome == "E":
        doc["setup"] = {"status": "failed", "duration_ms": 500, "error": "adb"}
        doc["agent"] = {"status": "not_started", "task_wall_ms": None}
        doc["evaluation"] = None
    elif outcome == "K":
        doc["skip"] = {"reason": "not applicable"}
    elif outcome == "V":
        doc["evaluation"]["judge"] = {"status": "error", "verdict": None, "score": None, "error": "timeout"}
    return doc


INGEST_EPISODE = {
    "run_metrics": {"input_tokens": 9100, "output_tokens": 840, "total_tokens": 9940,
                    "cached_input_tokens": 6000, "reasoning_tokens": None, "time_to_first_token_ms": 640},
    "events": [
        {"type": "device_action", "name": "tap", "call_id": "c1", "start_ms": 1210, "end_ms": 1530, "status": "ok"},
        {"type": "device_action", "name": "swipe", "call_id": "c4", "start_ms": 9000, "end_ms": None,
         "status": "error", "error": "device offline"},
        {"type": "tool_error", "call_id": "c3", "message": "element not found"},
    ],
}
INGEST_HISTORY = {"messages": [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": "", "usage": {"input_tokens": 3000, "output_tokens": 120},
     "tool_calls": [{"id": "c1", "name": "tap"}, {"id": "c2", "name": "screenshot"}, {"id": "c3", "name": "pinch"}]},
]}


def put_attempt(run: Path, rel: str, attempt=None, episode=None, history=None) -> Path:
    """Write one attempt directory ``run/attempts/<rel>``; dicts as JSON, strings verbatim."""
    d = run / "attempts" / rel
    d.mkdir(parents=True, exist_ok=True)
    for name, doc in (("attempt.json", attempt), ("episode.json", episode), ("history.json", history)):
        if doc is not None:
            (d / name).write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1), encoding="utf-8")
    return d


def make_artifact_run(path: Path, attempts: dict, *, tasks=None, judge=True) -> Path:
    """``attempts`` maps ``"dir/dir"`` to (task_id, attempt, outcome[, episode[, history]])."""
    path.mkdir(parents=True, exist_ok=True)
    if tasks is None:
        seen = {}
        for spec in attempts.values():
            seen[spec[0]] = max(seen.get(spec[0], 1), spec[1])
        tasks = sorted(seen.items())
    (path / "manifest.json").write_text(json.dumps(ingest_manifest_doc(tasks, judge=judge), indent=2), encoding="utf-8")
    for rel, spec in attempts.items():
        task_id, number, outcome, *rest = spec
        episode = rest[0] if rest else None
        history = rest[1] if len(rest) > 1 else None
        put_attempt(path, rel, ingest_attempt_doc(task_id, number, outcome), episode, history)
    return path


def simple_artifact_run(path: Path) -> Path:
    return make_artifact_run(path, {
        "t1/1": ("t1", 1, "S", INGEST_EPISODE, INGEST_HISTORY),
        "t1/2": ("t1", 2, "A", INGEST_EPISODE),
        "t2/1": ("t2", 1, "E"),
    })


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- cases from the format description

#: A value of another JSON type than each of the format's types.
WRONG_TYPE = {"string": 5, "integer": "1", "number": "x", "boolean": 1, "object": [], "array": {}}
ABSENT = object()  # a case value: the key is removed


def record_field_cases() -> list[tuple[str, dict, str, str]]:
    """One invalid record per check of every row of ``RECORD`` and ``RECORD_TELEMETRY``.

    ``(case id, record, rule, message)``: :func:`record` ``("t1", 2)`` with one value replaced (a
    wrong JSON type, null, a wrong item, a value outside the vocabulary, below the minimum, above
    the maximum, an absolute path, the key removed), and the rule and message the row says.
    """
    from capbench_nb.format import MAX_SAFE_NUMBER, RECORD, RECORD_TELEMETRY, TELEMETRY_FIELDS
    from capbench_nb.io.jsonparse import json_type_name, short

    cases = []
    for f in RECORD + RECORD_TELEMETRY:
        integer = f.json_type == "integer"
        checks = [("type", WRONG_TYPE[f.json_type], f.type_rule, f.type_message)]
        if not f.nullable:
            checks.append(("null", None, f.type_rule, f.type_message))
        if f.items:
            checks.append(("items", [1] if f.json_type == "array" else {TELEMETRY_FIELDS[0]: 1}, f.type_rule,
                           f.type_message))
        if f.vocabulary:
            checks.append(("vocabulary", "nope", f.vocabulary_rule, f.vocabulary_message))
        if f.minimum is not None:
            checks.append(("below", f.minimum - 1 if integer else f.minimum - 0.5, f.low_rule, f.low_message))
        if f.maximum is not None:
            above = f.maximum + 1 if integer else 2.0 ** 53 if f.maximum == MAX_SAFE_NUMBER else f.maximum + 0.5
            checks.append(("above", above, f.high_rule, f.high_message))
        if f.path_rule:
            checks.append(("path", "/abs", f.path_rule, f"{f.name} '/abs' must be a relative path"))
        if f.required:
            checks.append(("missing", ABSENT, "missing-field", f"the required field {f.name!r} is missing"))
        for kind, value, rule, message in checks:
            rec = record("t1", 2)
            if f.name.startswith("telemetry."):
                target, key = rec["telemetry"], f.name.split(".", 1)[1]
            else:
                target, key = rec, f.name
            if value is ABSENT:
                del target[key]
            else:
                target[key] = value
            text = message if value is ABSENT else message.format(where=f.name, type=json_type_name(value),
                                                                  value=short(value))
            cases.append((f"{f.name}-{kind}", rec, rule, text))
    return cases


#: A record breaking exactly one invariant of ``INVARIANTS``, by rule id.
INVARIANT_OVERRIDES = {
    "success-implies-eligible": dict(agent_eligible=False),
    "success-implies-no-class": dict(failure_class="agent"),
    "failure-needs-class": dict(success=False),
    "class-implies-ineligible": dict(success=False, failure_class="environment"),
    "agent-implies-eligible": dict(success=False, failure_class="agent", agent_eligible=False),
    "stage-needs-evidence": dict(success=False, failure_class="agent", failure_stage="device_execution"),
    "cost-needs-source": dict(cost=1.5),
}


def invariant_cases() -> list[tuple[str, dict, str, str]]:
    """``(rule id, record, rule id, message)`` for every rule of ``INVARIANTS`` (a KeyError: a rule
    without a case)."""
    from capbench_nb.format import INVARIANTS

    out = []
    for rule in INVARIANTS:
        rec = record("t1", 2, **INVARIANT_OVERRIDES[rule.id])
        out.append((rule.id, rec, rule.id, rule.message.format(**rec)))
    return out


# --------------------------------------------------------------------------- full records and runs of tests/records

FULL_TELEMETRY = {
    "task_wall_ms": 48210, "setup_ms": 2310.5, "tool_calls": 4, "device_actions": 3,
    "llm_calls": 5, "input_tokens": 9100, "output_tokens": 840, "total_tokens": 9940,
    "cached_input_tokens": 6000, "reasoning_tokens": None, "time_to_first_token_ms": 640,
    "device_execution_ms": 320, "screenshot_capture_ms": 210, "tool_errors": 1,
    "replan_count": 0, "recovery_attempted": True, "recovery_succeeded": True,
}

ARTIFACT_DIR = "attempts/t1/1"
#: attempt.json of ARTIFACT_DIR: keys chosen to exercise RFC 6901 escaping.
ATTEMPT_JSON = {
    "setup": {"status": "failed", "error": "adb"},
    "list": [10, 20],
    "a/b": "slash",
    "m~n": "tilde",
    "~1": "tilde-one",
    "a b": "space",
    "x#y": "hash",
    "": "empty key",
}
EPISODE_JSON = {"events": [{"type": "device_action", "status": "error", "start_ms": 1, "end_ms": None}]}


def full_record(task_id="t1", attempt=1, /, *, base_telemetry: dict = FULL_TELEMETRY, **overrides) -> dict:
    """:func:`record`: a successful attempt with every telemetry field of ``base_telemetry`` (sourced
    ``attempt.json#/NAME``) and quality_score 0.9; ``overrides`` win (a ``telemetry`` among them
    replaces the object, not the sources)."""
    rec = record(task_id, attempt, "S", telemetry=base_telemetry, source="attempt.json#/{name}", quality_score=0.9)
    rec.update(overrides)
    return rec


def failed_record(task_id="t1", attempt=1, /, **overrides) -> dict:
    """:func:`full_record` of a valid agent failure (eligible, class ``agent``, quality_score 0.2)."""
    fields = {"success": False, "agent_eligible": True, "failure_class": "agent", "quality_score": 0.2}
    fields.update(overrides)
    return full_record(task_id, attempt, **fields)


def without(rec: dict, key: str) -> dict:
    rec = dict(rec)
    del rec[key]
    return rec


def with_telemetry(**values) -> dict:
    tele = dict(FULL_TELEMETRY)
    tele.update(values)
    return full_record("t2", 1, telemetry=tele)


def full_manifest(tasks=(("t1", 3), ("t2", 3)), **plan_overrides) -> dict:
    """A valid manifest; ``plan_overrides`` replace keys of ``plan``."""
    plan = {
        "repeats_override": None,
        "k": min(r for _, r in tasks),
        "tasks": [{"task_id": tid, "repeats": r, "app": "settings"} for tid, r in tasks],
    }
    plan.update(plan_overrides)
    return {
        "schema_version": "capbench.run/1",
        "run_id": "run-1",
        "suite": {"name": "core", "version": "1"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": "completed",
        "runner": {"name": "capbench-runner", "version": "0.9.2"},
        "config": {"model": "m", "judge": True},
        "plan": plan,
    }


def encode_lines(lines) -> bytes:
    """dict -> one JSON line; str -> that text plus a newline; bytes -> verbatim."""
    out = b""
    for item in lines:
        if isinstance(item, bytes):
            out += item
        elif isinstance(item, str):
            out += item.encode("utf-8") + b"\n"
        else:
            out += json.dumps(item).encode("utf-8") + b"\n"
    return out


def write_full_run(root: Path, lines=(), *, manifest_doc=None, manifest_text=None, name="run") -> Path:
    """Write RUN_DIR under ``root``: manifest, results.jsonl and ARTIFACT_DIR's files."""
    run = root / name
    run.mkdir()
    if manifest_text is None:
        manifest_text = json.dumps(full_manifest() if manifest_doc is None else manifest_doc, indent=2)
    (run / "manifest.json").write_text(manifest_text, encoding="utf-8")
    (run / "results.jsonl").write_bytes(encode_lines(lines))
    art = run / ARTIFACT_DIR
    art.mkdir(parents=True)
    (art / "attempt.json").write_text(json.dumps(ATTEMPT_JSON), encoding="utf-8")
    (art / "episode.json").write_text(json.dumps(EPISODE_JSON), encoding="utf-8")
    (art / "notjson.json").write_text("{oops", encoding="utf-8")
    (art / "subdir").mkdir()
    return run


def third_line(bad) -> list:
    """A valid line, a blank line, then ``bad`` (line 3)."""
    return [full_record("t1", 1), "", bad]


RECORD_TYPE_CASES = [
    ("task_id", 5), ("task_id", None), ("task_id", ["t2"]),
    ("success", "true"), ("success", 1), ("success", None),
    ("agent_eligible", 0), ("agent_eligible", "yes"), ("agent_eligible", None),
    ("failure_class", None), ("failure_class", 0), ("failure_class", ["agent"]),
    ("artifact_dir", 5), ("artifact_dir", ["attempts"]), ("artifact_dir", True),
    ("evidence", "attempt.json#/setup"), ("evidence", [1]), ("evidence", [None]), ("evidence", {"a": 1}),
    ("quality_score", "0.5"), ("quality_score", True), ("quality_score", [0.5]),
    ("cost_source", 5), ("cost_source", True),
    ("telemetry", []), ("telemetry", "fast"), ("telemetry", 3), ("telemetry", None),
    ("telemetry_source", []), ("telemetry_source", "episode.json"),
    ("telemetry_source", {"task_wall_ms": 5}), ("telemetry_source", {"task_wall_ms": ["attempt.json"]}),
]


TELEMETRY_TYPE_CASES = [
    ("task_wall_ms", "48210"), ("setup_ms", True), ("time_to_first_token_ms", [640]),
    ("tool_calls", 1.0), ("tool_calls", 2.5), ("tool_calls", True), ("tool_calls", "4"),
    ("input_tokens", 9100.0), ("total_tokens", False), ("replan_count", {"n": 1}),
    ("recovery_attempted", 1), ("recovery_attempted", "true"), ("recovery_succeeded", 0.0),
]


NEGATIVE_CASES = [
    ("task_wall_ms", -1), ("setup_ms", -0.001), ("tool_calls", -1), ("total_tokens", -5),
    ("device_execution_ms", -20.5), ("replan_count", -1),
]


TOO_LARGE_CASES = [
    ("tool_calls", 2**53), ("input_tokens", 2**64), ("task_wall_ms", 2**53),
    ("task_wall_ms", 1e16), ("setup_ms", 1e300),
]


RECORD_INVARIANT_CASES = [
    pytest.param(full_record("t2", 1, agent_eligible=False), "success-implies-eligible", id="success-ineligible"),
    pytest.param(full_record("t2", 1, agent_eligible=False, failure_class="environment"), "success-implies-eligible",
                 id="success-ineligible-with-class"),
    pytest.param(full_record("t2", 1, failure_class="agent"), "success-implies-no-class", id="success-with-agent-class"),
    pytest.param(full_record("t2", 1, failure_class="unknown"), "success-implies-no-class", id="success-with-unknown-class"),
    pytest.param(failed_record("t2", 1, failure_class=""), "failure-needs-class", id="failure-without-class"),
    pytest.param(failed_record("t2", 1, failure_class="environment", agent_eligible=True), "class-implies-ineligible",
                 id="environment-eligible"),
    pytest.param(failed_record("t2", 1, failure_class="evaluation", agent_eligible=True), "class-implies-ineligible",
                 id="evaluation-eligible"),
    pytest.param(failed_record("t2", 1, failure_class="skipped", agent_eligible=True), "class-implies-ineligible",
                 id="skipped-eligible"),
    pytest.param(failed_record("t2", 1, failure_class="agent", agent_eligible=False), "agent-implies-eligible",
                 id="agent-ineligible"),
    pytest.param(failed_record("t2", 1, failure_stage="device_execution", evidence=[]), "stage-needs-evidence",
                 id="stage-empty-evidence"),
    pytest.param(without(failed_record("t2", 1, failure_stage="setup", failure_class="environment", agent_eligible=False),
                         "evidence"), "stage-needs-evidence", id="stage-evidence-absent"),
    pytest.param(full_record("t2", 1, cost=0.5, cost_source=None), "cost-needs-source", id="cost-null-source"),
    pytest.param(without(full_record("t2", 1, cost=0.5), "cost_source"), "cost-needs-source", id="cost-absent-source"),
]


EVIDENCE_CASES = [
    pytest.param(ARTIFACT_DIR, ["missing.json#/setup"], id="missing-file"),
    pytest.param("attempts/t9/9", ["attempt.json#/setup"], id="missing-artifact-dir"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/nope"], id="missing-key"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/a/b"], id="unescaped-slash-is-two-tokens"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/a%20b"], id="no-percent-decoding"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/list/2"], id="index-past-end"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/list/-"], id="dash-index"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/list/01"], id="leading-zero-index"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/list/-1"], id="negative-index"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/setup/status/x"], id="step-into-string"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/~2"], id="bad-tilde-escape"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#setup"], id="pointer-without-slash"),
    pytest.param(ARTIFACT_DIR, ["attempt.json"], id="no-hash"),
    pytest.param(ARTIFACT_DIR, ["#/setup"], id="no-file"),
    pytest.param(ARTIFACT_DIR, ["notjson.json#"], id="file-not-json"),
    pytest.param(ARTIFACT_DIR, ["subdir#"], id="file-is-a-directory"),
    pytest.param(ARTIFACT_DIR, ["../1/attempt.json#/setup"], id="dotdot-in-reference"),
    pytest.param(ARTIFACT_DIR, ["../../../manifest.json#/run_id"], id="dotdot-to-manifest"),
    pytest.param(ARTIFACT_DIR, ["/etc/hostname#"], id="absolute-reference"),
    pytest.param(None, ["attempt.json#/setup"], id="artifact-dir-null"),
    pytest.param(ARTIFACT_DIR, ["attempt.json#/setup", "attempt.json#/nope"], id="second-reference-broken"),
]


# --------------------------------------------------------------------------- pages in a real browser
#
# Page tests drive Debian's chromium through Playwright for Python (launched by path: Playwright's
# own browser download is never used).  `make test` installs chromium and sets CAPBENCH_CHROMIUM,
# so there a missing browser fails; run by hand without it, the page tests are skipped.

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def chromium():
    """A headless Chromium browser (Playwright ``Browser``), shared by the session's page tests."""
    import os

    executable = os.environ.get("CAPBENCH_CHROMIUM") or "/usr/bin/chromium"
    if not Path(executable).is_file():
        if os.environ.get("CAPBENCH_CHROMIUM"):
            pytest.fail(f"CAPBENCH_CHROMIUM={executable} does not exist (make browser installs it)")
        pytest.skip("no chromium at /usr/bin/chromium (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


class PageVisit:
    """An open page: the Playwright ``page``, and what it tried to fetch from outside the file system."""

    def __init__(self, page, requests: list[str], errors: list[str], dialogs: list[str]) -> None:
        self.page, self.requests, self.errors, self.dialogs = page, requests, errors, dialogs


@pytest.fixture
def open_page(chromium):
    """``open_page(path, width=1400)``: load a local HTML file with every network request refused.

    Returns a :class:`PageVisit`; ``requests`` lists each non-``file:``/``data:`` URL the page asked
    for (refused), ``errors`` uncaught script errors, ``dialogs`` any alert/confirm/prompt opened.
    """
    contexts = []

    def visit(path, width: int = 1400, height: int = 900) -> PageVisit:
        context = chromium.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        requests: list[str] = []
        errors: list[str] = []
        dialogs: list[str] = []

        def route(r):
            url = r.request.url
            if url.startswith(("file:", "data:", "blob:", "about:")):
                r.continue_()
            else:
                requests.append(url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(Path(path).resolve().as_uri())
        return PageVisit(page, requests, errors, dialogs)

    yield visit
    for context in contexts:
        context.close()


# --------------------------------------------------------------------------- hostile run data for pages
#
# Strings a run may carry (task ids, labels, config values, evidence values, artifact directory names)
# that would run or break markup if a page inserted them as HTML or script.

HOSTILE_TEXTS = [
    "</script><script>alert('island')</script>",
    "<img src=x onerror=alert('img')>",
    "line\u2028sep\u2029para",
    "rtl\u202eevil\u202c",
    "<!-- comment --> & &amp; \"q\" 'a'",
    "非拉丁 текст 😀",
]


def hostile_page_run(path: Path) -> Path:
    """A run whose task ids, labels, config value, evidence value and artifact directory are hostile."""
    tasks = [{"task_id": tid, "repeats": 2, "app": HOSTILE_TEXTS[(i + 1) % len(HOSTILE_TEXTS)]}
             for i, tid in enumerate(HOSTILE_TEXTS)]
    man = manifest(tasks)
    man["config"]["model"] = "m</script><script>alert('model')</script>"
    records = []
    for i, tid in enumerate(HOSTILE_TEXTS):
        records.append(record(tid, 1, "S", quality_score=0.5))
        adir = f"attempts/<b>{i}</b>?x#y/2"
        (path / adir).mkdir(parents=True, exist_ok=True)
        (path / adir / "episode.json").write_text(json.dumps(
            {"events": [{"type": "device_action", "status": "error", "error": HOSTILE_TEXTS[i]}]}), encoding="utf-8")
        records.append(record(tid, 2, "A", artifact_dir=adir, failure_stage="device_execution",
                              evidence=["episode.json#/events/0"]))
    return write_run(path, man, records)


# --------------------------------------------------------------------------- processes, kills and signals
# Used by the tests that kill or interrupt commands (tests/io/test_publish_kill.py, tests/io/test_interrupts.py,
# tests/records/test_importers.py).

#: A minimal report notebook (the real one's parameters; writes metrics.json and summary.md like it): building,
#: publishing and interrupting are the same, and a kernel running it costs a second or two instead of a report.
def _two_cell_notebook(parameters: str, work: str) -> dict:
    """A Python notebook of a ``parameters`` cell and one cell of work (the tests' stand-ins for the real ones)."""
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "code", "id": "params", "metadata": {"tags": ["parameters"]}, "execution_count": None,
             "outputs": [], "source": parameters},
            {"cell_type": "code", "id": "work", "metadata": {}, "execution_count": None, "outputs": [], "source": work},
        ],
    }


TINY_REPORT_NOTEBOOK = _two_cell_notebook(
    'run_dir = ""\nout_dir = ""\nreport_dir = ""\nallow_invalid = False\nslices = []\n',
    "from pathlib import Path\nimport capbench_nb\nfrom capbench_nb.io import atomic\n"
    "from capbench_nb.outputs.report import page as reporting\n"
    "run = capbench_nb.load_run(run_dir, strict=not allow_invalid)\n"
    "doc = capbench_nb.compute_metrics(run, slices=slices)\n"
    "atomic.write_atomic(Path(out_dir) / 'metrics.json', atomic.dumps(doc))\n"
    "atomic.write_atomic(Path(out_dir) / 'summary.md', reporting.summary_markdown(doc))\n")


def notebook_imports(notebook) -> set[str]:
    """The top-level modules a notebook's code cells import; asserts the cells define no function or class and
    hold no while loop (a notebook holds no logic beyond calls into the package)."""
    imported, source = set(), "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
        assert not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.While)), ast.dump(node)[:200]
    return imported


#: A comparison notebook of two cells: comparison.json and comparison.md exactly as compare_runs.ipynb writes them,
#: no page sections; for the tests of ``compare``'s exit codes and warnings (``tiny_comparison`` puts it in place).
TINY_COMPARE_NOTEBOOK = _two_cell_notebook(
    'run_a = ""\nrun_b = ""\nout_dir = ""\nreport_dir = ""\nstrict = False\nallow_diff = []\nseed = 0\nn_boot = 2000\n'
    'allow_invalid = False\nskip_evidence = False\n',
    "import capbench_nb\nfrom capbench_nb.outputs.comparison import files as comparison\n"
    "a = capbench_nb.load_run(run_a, strict=not allow_invalid, skip_evidence=skip_evidence)\n"
    "b = capbench_nb.load_run(run_b, strict=not allow_invalid, skip_evidence=skip_evidence)\n"
    "comparison.write_comparison(comparison.compare_runs(a, b, seed=seed, n_boot=n_boot), out_dir)\n")


@pytest.fixture
def tiny_comparison(tmp_path_factory, monkeypatch):
    """``compare`` runs TINY_COMPARE_NOTEBOOK in place of compare_runs.ipynb (the page is tested elsewhere)."""
    from capbench_nb.outputs.comparison import run as comparison_run

    notebook = tmp_path_factory.mktemp("tiny-compare") / "tiny.ipynb"
    notebook.write_text(json.dumps(TINY_COMPARE_NOTEBOOK), encoding="utf-8")
    monkeypatch.setattr(comparison_run, "find_notebook", lambda name=None: notebook)
    return notebook


#: ``python -c CLI_SCRIPT ARGV...`` runs ``capbench-nb ARGV`` with two test hooks from the environment:
#: ``CAPBENCH_TEST_NOTEBOOK``, a report notebook run in place of run_report.ipynb; ``CAPBENCH_TEST_KILL=MODE:DIR``,
#: a SIGKILL at the commit point of a folder switch: right after the exchange (MODE ``exchange``), or, the exchange
#: made unsupported, right after DIR is renamed aside, between the fallback's two renames (MODE ``renames``).
CLI_SCRIPT = """
import errno, os, signal, sys
from pathlib import Path
from capbench_nb.io import publish
from capbench_nb.outputs import build
from capbench_nb.outputs.report import run as reportrun
if os.environ.get("CAPBENCH_TEST_NOTEBOOK"):
    reportrun.find_notebook = lambda name=None: Path(os.environ["CAPBENCH_TEST_NOTEBOOK"])
mode, _, target = os.environ.get("CAPBENCH_TEST_KILL", "").partition(":")
if mode == "exchange":
    real_exchange = publish.rename_exchange
    def exchange(a, b):
        real_exchange(a, b)
        os.kill(os.getpid(), signal.SIGKILL)
    publish.rename_exchange = exchange
elif mode == "renames":
    def unsupported(a, b):
        raise OSError(errno.EINVAL, "exchange unsupported (test)")
    publish.rename_exchange = unsupported
    real_rename = os.rename
    def rename(src, dst, *args, **kwargs):
        real_rename(src, dst, *args, **kwargs)
        if Path(src).absolute() == Path(target).absolute():
            os.kill(os.getpid(), signal.SIGKILL)
    os.rename = rename
from capbench_nb.cli import main
sys.exit(main(sys.argv[1:]))
"""


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children of every thread, recursively), from /proc."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                children = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except OSError:
                continue
            for c in map(int, children):
                if c not in found:
                    found.add(c)
                    todo.append(c)
    return found


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --------------------------------------------------------------------------- selection.jsonl (spec section 9)

SELECTOR = {"name": "verifier", "version": "1"}


def pick(task_id: str, selected, candidates=(1, 2, 3), *, scores=None, selector=None, **fields) -> dict:
    """A selection line: ``task_id`` shown ``candidates``, ``selected`` picked (None: abstained);
    ``scores`` a list in candidate order (or a dict as written)."""
    if isinstance(scores, (list, tuple)):
        scores = {str(c): s for c, s in zip(candidates, scores)}
    return {"task_id": task_id, "candidates": list(candidates), "selected": selected, "scores": scores,
            "selector": dict(selector or SELECTOR), **fields}


def write_selection(run: Path, lines: list) -> Path:
    """``run/selection.jsonl`` from lines (dicts, or raw strings as they are); returns the run directory."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    (run / "selection.jsonl").write_text(text, encoding="utf-8")
    return run


#: Hand-made runs for boards with a selector: ``{name: (attempt codes per task, selection lines or None)}``.
#: A and B (k = 3) plan t1..t8 (A also "x"); C has no selection.jsonl; D has one but k = 4.  Board
#: selected@3, common tasks t1..t8: A enters t1-t5 and t8 (t6 is not k-eligible, t7 was shown (1, 2))
#: and its pick succeeds on t1 only: 1/6 (its own selected@3 counts x too: 2/7); B enters all 8, its
#: pick succeeds on t2-t6: 5/8.  Paired on the 6 tasks entering in both: A only t1, B only t2-t5.
SELECTION_BOARD = {
    "A": ({"t1": "SAA", "t2": "ASA", "t3": "AAS", "t4": "SSS", "t5": "SAA", "t6": "SAE", "t7": "ASS", "t8": "AAA",
           "x": "SSS"},
          [pick("t1", 1), pick("t2", 1), pick("t3", 1), pick("t4", None), pick("t5", 2), pick("t6", 1),
           pick("t7", 2, (1, 2)), pick("t8", 1), pick("x", 1)]),
    "B": ({"t1": "AAA", "t2": "SSA", "t3": "AAS", "t4": "SAA", "t5": "SAS", "t6": "SSS", "t7": "AAA", "t8": "AAA"},
          [pick("t1", 1), pick("t2", 1), pick("t3", 3), pick("t4", 1), pick("t5", 3, (3, 1, 2)), pick("t6", 2),
           pick("t7", None), pick("t8", 2)]),
    "C": ({f"t{i}": "SSA" for i in range(1, 9)}, None),
    "D": ({f"t{i}": "SAAA" for i in range(1, 9)}, [pick(f"t{i}", 1, (1, 2, 3, 4)) for i in range(1, 9)]),
}


def selection_board(root: Path, names: str = "ABCD") -> list[Path]:
    """The runs ``names`` of :data:`SELECTION_BOARD` written under ``root`` (run id = name), in that order."""
    paths = []
    for name in names:
        spec, lines = SELECTION_BOARD[name]
        doc = manifest([(t, len(c)) for t, c in spec.items()])
        doc["run_id"] = name
        path = write_run(root / name, doc, outcomes(spec))
        paths.append(write_selection(path, lines) if lines is not None else path)
    return paths


# --------------------------------------------------------------------------- report displays


@pytest.fixture
def captured(monkeypatch):
    """Everything the report's sections display, in order (``capbench_nb.outputs.html.tables.display`` replaced:
    every section and figure goes through it)."""
    from capbench_nb.outputs.html import tables

    shown: list = []
    monkeypatch.setattr(tables, "display", lambda obj, *a, **kw: shown.append(obj))
    return shown


def html_of(shown) -> str:
    """The HTML of displays captured by :func:`captured`."""
    from IPython.display import HTML

    assert all(isinstance(o, HTML) for o in shown)
    return "\n".join(o.data for o in shown)
