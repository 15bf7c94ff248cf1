"""``ingest``'s fast reading of artifact files gives the records and the errors it always gave.

Artifact files are opened without following a symlink first (a symlink is then resolved and must
stay inside its attempt directory), parsed with orjson when it is installed (the standard library
otherwise, and whenever orjson refuses a file or it could differ), and type-checked by one checker
that formats a JSON pointer only for the value that breaks a rule.  These tests pin the errors
(file, rule, message, pointer, line) of every type rule, check that both parsers give the same
documents, records and errors, that a FIFO in place of an artifact is refused instead of waited
for, and that a process pool derives what one process does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import INGEST_EPISODE as EPISODE
from conftest import INGEST_HISTORY as HISTORY
from conftest import deadline as _deadline
from conftest import make_artifact_run as make_run
from conftest import read_jsonl as read_lines
from conftest import simple_artifact_run as simple_run
from capbench_nb import InvalidRunError
from capbench_nb.records import derivation
from capbench_nb.records.derivation import derive_record, read_artifacts
from capbench_nb.records.ingest import ingest_run


# (file, its text, (rule, message, pointer, line) of the error, or None when the file is accepted)
# with attempt.json = {"task_id": "t", "attempt": 1} unless attempt.json is the file.  The
# expected errors are those the checks gave before they were merged into one checker.
CASES = [
    ('attempt.json', '[]', ('artifact-type', 'the document must be an object', '', None)),
    ('attempt.json', '{"task_id": "", "attempt": 1}', ('artifact-type', '/task_id must be a non-empty string', '/task_id', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 0}', ('artifact-type', '/attempt must be an integer >= 1', '/attempt', None)),
    ('attempt.json', '{"task_id": "t", "attempt": true}', ('artifact-type', '/attempt must be an integer >= 1', '/attempt', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": []}', ('artifact-type', '/setup must be an object or null', '/setup', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": {"status": "maybe"}}', ('artifact-type', '/setup/status must be one of ok, failed', '/setup/status', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": -1}}', ('artifact-type', '/setup/duration_ms must be a non-negative number or null', '/setup/duration_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": 9007199254740992}}', ('number-too-large', '/setup/duration_ms is 9007199254740992, above 2**53-1, the largest exactly representable value', '/setup/duration_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": NaN}}', ('artifact-type', '/setup/duration_ms must be a non-negative number or null', '/setup/duration_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": 1e400}}', ('artifact-type', '/setup/duration_ms must be a non-negative number or null', '/setup/duration_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "provider": {"available": "yes"}}', ('artifact-type', '/provider/available must be true or false or null', '/provider/available', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "skip": 3}', ('artifact-type', '/skip must be an object or null', '/skip', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "agent": {"status": "exploded"}}', ('artifact-type', '/agent/status must be one of completed, timeout, crashed, not_started', '/agent/status', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "agent": {"task_wall_ms": "5"}}', ('artifact-type', '/agent/task_wall_ms must be a non-negative number or null', '/agent/task_wall_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "recovery": {"attempted": 1}}', ('artifact-type', '/recovery/attempted must be true or false or null', '/recovery/attempted', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "recovery": {"succeeded": 0}}', ('artifact-type', '/recovery/succeeded must be true or false or null', '/recovery/succeeded', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "screenshots": {}}', ('artifact-type', '/screenshots must be a list', '/screenshots', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "screenshots": [{"capture_ms": 1}, 5]}', ('artifact-type', '/screenshots/1 must be an object', '/screenshots/1', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "screenshots": [{"capture_ms": 1}, {"capture_ms": -0.5}]}', ('artifact-type', '/screenshots/1/capture_ms must be a non-negative number or null', '/screenshots/1/capture_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "screenshots": [{"capture_ms": 18446744073709551616}]}', ('number-too-large', '/screenshots/0/capture_ms is 18446744073709551616, above 2**53-1, the largest exactly representable value', '/screenshots/0/capture_ms', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"judge_enabled": "no"}}', ('artifact-type', '/evaluation/judge_enabled must be true or false or null', '/evaluation/judge_enabled', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"hard_assertions": [{"passed": true}, {"passed": null}]}}', ('artifact-type', '/evaluation/hard_assertions/1/passed must be true or false', '/evaluation/hard_assertions/1/passed', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"hard_assertions": [[]]}}', ('artifact-type', '/evaluation/hard_assertions/0 must be an object', '/evaluation/hard_assertions/0', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"judge": {"status": "late"}}}', ('artifact-type', '/evaluation/judge/status must be one of ok, error', '/evaluation/judge/status', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"judge": {"verdict": "maybe"}}}', ('artifact-type', '/evaluation/judge/verdict must be one of pass, fail', '/evaluation/judge/verdict', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1, "evaluation": {"quality_score": 1.5}}', ('artifact-type', '/evaluation/quality_score must be a number in [0, 1] or null', '/evaluation/quality_score', None)),
    ('attempt.json', '{"task_id": "t", "attempt": 1,}', ('artifact-json', 'not valid JSON: Expecting property name enclosed in double quotes (column 31)', None, 1)),
    ('attempt.json', '\ufeff{"task_id": "t", "attempt": 1}', ('artifact-json', 'not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)', None, 1)),
    ('attempt.json', '{"task_id": "t",\n "attempt": 1\n "x": 2}', ('artifact-json', "not valid JSON: Expecting ',' delimiter (column 2)", None, 3)),
    ('episode.json', '"episode"', ('artifact-type', 'the document must be an object', '', None)),
    ('episode.json', '{"run_metrics": 5}', ('artifact-type', '/run_metrics must be an object or null', '/run_metrics', None)),
    ('episode.json', '{"run_metrics": {"input_tokens": 1.5}}', ('artifact-type', '/run_metrics/input_tokens must be a non-negative integer or null', '/run_metrics/input_tokens', None)),
    ('episode.json', '{"run_metrics": {"cached_input_tokens": -3}}', ('artifact-type', '/run_metrics/cached_input_tokens must be a non-negative integer or null', '/run_metrics/cached_input_tokens', None)),
    ('episode.json', '{"run_metrics": {"reasoning_tokens": 9007199254740993}}', ('number-too-large', '/run_metrics/reasoning_tokens is 9007199254740993, above 2**53-1, the largest exactly representable value', '/run_metrics/reasoning_tokens', None)),
    ('episode.json', '{"run_metrics": {"time_to_first_token_ms": "fast"}}', ('artifact-type', '/run_metrics/time_to_first_token_ms must be a non-negative number or null', '/run_metrics/time_to_first_token_ms', None)),
    ('episode.json', '{"events": {"0": {}}}', ('artifact-type', '/events must be a list', '/events', None)),
    ('episode.json', '{"events": [{"type": "x"}, 7]}', ('artifact-type', '/events/1 must be an object', '/events/1', None)),
    ('episode.json', '{"events": [{"type": 7}]}', ('artifact-type', '/events/0/type must be a string', '/events/0/type', None)),
    ('episode.json', '{"events": [{"type": "device_action", "start_ms": -1, "end_ms": 5}]}', ('artifact-type', '/events/0/start_ms must be a non-negative number or null', '/events/0/start_ms', None)),
    ('episode.json', '{"events": [{"type": "device_action", "start_ms": 1, "end_ms": "5"}]}', ('artifact-type', '/events/0/end_ms must be a non-negative number or null', '/events/0/end_ms', None)),
    ('episode.json', '{"events": [{"type": "device_action", "start_ms": 10, "end_ms": 5}]}', ('artifact-type', '/events/0 ends before it starts', '/events/0/end_ms', None)),
    ('history.json', '{"messages": {}}', ('artifact-type', '/messages must be a list', '/messages', None)),
    ('history.json', '{"messages": [1]}', ('artifact-type', '/messages/0 must be an object', '/messages/0', None)),
    ('history.json', '{"messages": [{"usage": []}]}', ('artifact-type', '/messages/0/usage must be an object or null', '/messages/0/usage', None)),
    ('history.json', '{"messages": [{"usage": {"output_tokens": 2.0}}]}', ('artifact-type', '/messages/0/usage/output_tokens must be a non-negative integer or null', '/messages/0/usage/output_tokens', None)),
    ('history.json', '{"messages": [{"usage": {"total_tokens": 99999999999999999999}}]}', ('number-too-large', '/messages/0/usage/total_tokens is 99999999999999999999, above 2**53-1, the largest exactly representable value', '/messages/0/usage/total_tokens', None)),
    ('history.json', '{"messages": [{"tool_calls": {}}]}', ('artifact-type', '/messages/0/tool_calls must be a list', '/messages/0/tool_calls', None)),
    ('history.json', '{"messages": [{"tool_calls": [{"name": "a"}, "b"]}]}', ('artifact-type', '/messages/0/tool_calls/1 must be an object', '/messages/0/tool_calls/1', None)),
    ('history.json', '{"messages": [{}, {"tool_calls": [{"name": 5}]}]}', ('artifact-type', '/messages/1/tool_calls/0/name must be a string', '/messages/1/tool_calls/0/name', None)),
    ('history.json', '{"messages": [{"role": "assistant", "content": "\\ud800"}], "x": NaN}', None),
    ('history.json', '{"messages": [', ('artifact-json', 'not valid JSON: Expecting value (column 15)', None, 1)),
]


@pytest.fixture(params=["orjson", "stdlib"])
def parser(request, monkeypatch):
    """Each test twice: orjson parsing (when installed) and the standard library alone."""
    if request.param == "orjson":
        if derivation._orjson is None:
            pytest.skip("orjson is not installed")
    else:
        monkeypatch.setattr(derivation, "_orjson", None)
    return request.param


def _attempt_dir(tmp_path: Path, name: str, text: str) -> Path:
    d = tmp_path / "run" / "attempts" / "t" / "1"
    d.mkdir(parents=True)
    (d / "attempt.json").write_text('{"task_id": "t", "attempt": 1}', encoding="utf-8")
    (d / name).write_text(text, encoding="utf-8")
    return d


@pytest.mark.parametrize("name, text, expected", CASES, ids=[f"{c[0]}:{c[1][:60]}" for c in CASES])
def test_each_rule_names_file_rule_message_pointer_and_line(tmp_path, parser, name, text, expected):
    d = _attempt_dir(tmp_path, name, text)
    if expected is None:
        read_artifacts(d)
        return
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.file == str(d / name)
    assert (info.value.rule, info.value.message, info.value.pointer, info.value.line) == expected


def _outcome(d: Path, run: Path):
    try:
        art = read_artifacts(d)
        record = derive_record(d, run_dir=run, judge_default=True, model="m-large", artifacts=art)
    except InvalidRunError as exc:
        return ("error", exc.file, exc.rule, exc.message, exc.pointer, exc.line)
    except (ValueError, OverflowError) as exc:  # what the checks never turned into InvalidRunError
        return (type(exc).__name__, str(exc))
    return ("ok", repr((art.attempt, art.episode, art.history)), json.dumps(record, allow_nan=True))


# documents orjson reads differently from the standard library, or not at all
ODD = [
    ("attempt.json", '{"task_id": "t", "attempt": 1, "extra": 18446744073709551616}'),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "extra": -9223372036854775809}'),
    ("attempt.json", '{"task_id": "t", "attempt": 18446744073709551617}'),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": 184467440737095516160}}'),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "setup": {"duration_ms": %s}}' % ("9" * 400)),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "extra": %s}' % ("1" * 5000)),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "extra": [NaN, Infinity, -Infinity, 1e400]}'),
    ("attempt.json", '{"task_id": "t\\ud800", "attempt": 1}'),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "a": 1, "a": 2}'),
    ("attempt.json", '{"task_id": "t", "attempt": 1, "extra": %s}' % ("[" * 1500 + "]" * 1500)),
    ("episode.json", '{"run_metrics": {"input_tokens": 12345678901234567890123}}'),
    ("episode.json", '{"events": [{"type": "device_action", "start_ms": 0.1, "end_ms": 0.30000000000000004}]}'),
    ("episode.json", '{"events": [{"type": "device_action", "start_ms": -0.0, "end_ms": 1e-320}]}'),
    ("history.json", '{"messages": [{"usage": {"input_tokens": 1, "output_tokens": 2}, "n": 99999999999999999999}]}'),
]


@pytest.mark.parametrize("name, text", ODD, ids=[f"{c[0]}:{c[1][:60]}" for c in ODD])
def test_orjson_and_the_standard_library_give_the_same_documents_records_and_errors(tmp_path, monkeypatch, name, text):
    if derivation._orjson is None:
        pytest.skip("orjson is not installed")
    d = _attempt_dir(tmp_path, name, text)
    fast = _outcome(d, tmp_path / "run")
    monkeypatch.setattr(derivation, "_orjson", None)
    assert _outcome(d, tmp_path / "run") == fast


def test_big_integers_stay_exact_integers(tmp_path, parser):
    d = _attempt_dir(tmp_path, "history.json", '{"messages": [], "n": 18446744073709551616123}')
    assert read_artifacts(d).history["n"] == 18446744073709551616123


# --------------------------------------------------------------------------- special files


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


@needs_fifo
@pytest.mark.parametrize("name", ["attempt.json", "episode.json", "history.json"])
def test_fifo_in_place_of_an_artifact_is_refused_not_waited_for(tmp_path, name):
    run = simple_run(tmp_path / "run")
    target = run / "attempts" / "t1" / "1" / name
    target.unlink()
    os.mkfifo(target)
    with _deadline(20), pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert info.value.file == str(target)
    assert info.value.rule == "artifact-unreadable"
    assert info.value.message == f"{name} is a named pipe (FIFO), not a regular file"
    assert not (run / "results.jsonl").exists()


@needs_fifo
@pytest.mark.parametrize("name", ["attempt.json", "episode.json"])
def test_fifo_with_allow_invalid_gives_an_unknown_record(tmp_path, name):
    run = simple_run(tmp_path / "run")
    target = run / "attempts" / "t1" / "1" / name
    target.unlink()
    os.mkfifo(target)
    with _deadline(20):
        report = ingest_run(run, allow_invalid=True, progress=False)
    assert (report.records, report.errors) == (3, 1)
    bad = read_lines(run / "results.jsonl")[0]
    assert bad["failure_class"] == "unknown"
    assert bad["ingest_error"]["file"] == name and bad["ingest_error"]["rule"] == "artifact-unreadable"
    # the ids come from attempt.json when it reads, from the directory names when it is the FIFO
    assert bad["ingest_error"]["ids_from"] == ("directory names" if name == "attempt.json" else "attempt.json")


@needs_fifo
def test_symlink_to_a_fifo_inside_the_attempt_directory_is_refused(tmp_path):
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "1"
    os.mkfifo(d / "pipe")
    (d / "history.json").unlink()
    os.symlink("pipe", d / "history.json")
    with _deadline(20), pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert (info.value.file, info.value.rule) == (str(d / "history.json"), "artifact-unreadable")


def test_a_character_device_is_read_like_a_file():
    if not os.path.exists(os.devnull) or os.name != "posix":
        pytest.skip("no /dev/null")
    assert derivation._read_artifact(os.devnull, "null", True, os.path.dirname(os.devnull)) == b""


def test_a_directory_in_place_of_an_artifact(tmp_path):
    run = simple_run(tmp_path / "run")
    target = run / "attempts" / "t1" / "1" / "episode.json"
    target.unlink()
    target.mkdir()
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert (info.value.file, info.value.rule, info.value.message) == (
        str(target), "artifact-unreadable", "episode.json is a directory")


# --------------------------------------------------------------------------- symlinks


def _linked(tmp_path: Path, how: str) -> tuple[Path, Path]:
    run = simple_run(tmp_path / "run")
    d = run / "attempts" / "t1" / "1"
    target = d / "episode.json"
    if how == "inside":
        (d / "sub").mkdir()
        os.replace(target, d / "sub" / "episode.json")
        os.symlink("sub/episode.json", target)
    elif how == "outside":
        (tmp_path / "elsewhere.json").write_text(json.dumps(EPISODE))
        target.unlink()
        os.symlink(tmp_path / "elsewhere.json", target)
    elif how == "sibling":  # another attempt's file: inside the run, outside this attempt
        target.unlink()
        os.symlink("../2/episode.json", target)
    elif how == "dotdot-back-in":  # leaves the directory and comes back: resolves inside
        (d / "sub").mkdir()
        os.replace(target, d / "sub" / "episode.json")
        os.symlink("../1/sub/episode.json", target)
    elif how == "dangling":
        target.unlink()
        os.symlink("nowhere.json", target)
    elif how == "loop":
        target.unlink()
        os.symlink("episode.json", target)
    return run, target


@pytest.mark.parametrize("how, rule", [
    ("inside", None), ("dotdot-back-in", None), ("outside", "artifact-outside"), ("sibling", "artifact-outside"),
    ("dangling", None), ("loop", "artifact-unreadable"),
])
def test_artifact_symlinks(tmp_path, how, rule):
    run, target = _linked(tmp_path, how)
    if rule is None:
        ingest_run(run, progress=False)
        rec = read_lines(run / "results.jsonl")[0]
        # a dangling optional file is an absent one: no token counts from the episode then
        assert (rec["telemetry_source"].get("input_tokens") == "episode.json#/run_metrics/input_tokens") == (how != "dangling")
        return
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert (info.value.file, info.value.rule) == (str(target), rule)
    if rule == "artifact-outside":
        assert info.value.message == "episode.json resolves outside the attempt directory"
    else:  # a link to itself resolves to itself, inside; opening it fails
        assert info.value.message.startswith("cannot read episode.json: ")


# --------------------------------------------------------------------------- process pool


def test_a_process_pool_derives_what_one_process_does(tmp_path):
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork here")
    attempts = {f"t{i:02d}/{a}": (f"t{i:02d}", a, "SAEKV"[(i + a) % 5], EPISODE, HISTORY if a % 2 else None)
                for i in range(30) for a in (1, 2, 3)}
    run = make_run(tmp_path / "run", attempts)
    one = ingest_run(run, out=tmp_path / "one.jsonl", progress=False, workers=1)
    two = ingest_run(run, out=tmp_path / "two.jsonl", progress=False, workers=2)
    assert one.records == two.records == 90
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


def test_a_process_pool_raises_the_first_error_in_directory_order(tmp_path):
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork here")
    attempts = {f"t{i:02d}/1": (f"t{i:02d}", 1, "S", EPISODE) for i in range(40)}
    run = make_run(tmp_path / "run", attempts)
    (run / "attempts" / "t33" / "1" / "episode.json").write_text("{")
    (run / "attempts" / "t07" / "1" / "history.json").write_text("[]")
    errors = []
    for workers in (1, 2, 3):
        with pytest.raises(InvalidRunError) as info:
            ingest_run(run, progress=False, workers=workers)
        errors.append((info.value.file, info.value.rule, info.value.message))
    assert errors[0][0].endswith(os.path.join("t07", "1", "history.json"))
    assert errors == [errors[0]] * 3


# --------------------------------------------------------------------------- numbers no reader can hold


@pytest.mark.parametrize("literal,rule", [
    ("1" + "0" * 400, "number-too-large"),  # beyond a float's range: math.isfinite would overflow
    ("1" * 5000, "number-too-large"),  # beyond Python's digit limit for an int literal
])
def test_huge_integers_in_artifacts_are_one_clear_error(tmp_path, literal, rule):
    run = simple_run(tmp_path / "run")
    target = run / "attempts" / "t1" / "1" / "attempt.json"
    doc = json.loads(target.read_text(encoding="utf-8"))
    doc["setup"]["duration_ms"] = 123456789  # a number field of the format, non-negative, at most 2**53-1
    target.write_text(json.dumps(doc).replace("123456789", literal), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        ingest_run(run, progress=False)
    assert (info.value.file, info.value.rule) == (str(target), rule)
    assert "\n" not in str(info.value)


def test_a_device_other_than_the_null_device_is_refused():
    zero = "/dev/zero"
    if not os.path.exists(zero):
        pytest.skip("no /dev/zero")
    with _deadline(20), pytest.raises(InvalidRunError) as info:
        derivation._read_artifact(zero, "attempt.json", True, os.path.dirname(zero))
    assert (info.value.rule, info.value.message) == ("artifact-unreadable", "attempt.json is a device, not a regular file")
