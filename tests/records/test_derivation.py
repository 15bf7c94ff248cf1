"""The record of one attempt directory (capbench_nb.records.derivation): derive_record, and the checks
read_artifacts makes on the files.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from conftest import (
    attempt_doc,
    with_eval,
    judge,
    FAILED_SETUP,
    NOT_STARTED,
    episode_doc,
    history_doc,
    assistant,
    SPEC_HISTORY,
    write_attempt,
)

from capbench_nb import InvalidRunError
from capbench_nb.io.pointer import resolve_pointer
from capbench_nb.records import derivation
from capbench_nb.records.derivation import DerivationContext, derive_record, read_artifacts
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.prices import ToolConfig

# --------------------------------------------------------------------------- derive_record


def test_derive_record_full(tmp_path, price_table):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "settings.wifi.toggle" / "2",
                      with_eval(judge=judge("ok", "fail"), quality_score=0.25), episode_doc(), SPEC_HISTORY)
    rec = derive_record(d, run_dir=run, judge_default=True, model="m-large", prices=price_table)
    assert list(rec) == ["task_id", "attempt", "artifact_dir", "success", "agent_eligible", "failure_class",
                         "failure_stage", "evidence", "quality_score", "telemetry", "telemetry_source",
                         "cost", "cost_source"]
    assert rec["task_id"] == "settings.wifi.toggle" and rec["attempt"] == 2
    assert rec["artifact_dir"] == "attempts/settings.wifi.toggle/2"
    assert (rec["success"], rec["agent_eligible"], rec["failure_class"]) == (False, True, "agent")
    assert rec["failure_stage"] == "device_execution"
    assert rec["evidence"] == ["episode.json#/events/2"]
    assert rec["quality_score"] == 0.25
    assert rec["telemetry"]["total_tokens"] == 9940
    assert rec["cost"] == pytest.approx(3100 * 2.5e-06 + 6000 * 6.25e-07 + 840 * 1e-05)
    assert rec["cost_source"] == "prices/p1@2026-10-01"
    json.dumps(rec, allow_nan=False)  # serialisable as strict JSON
    assert derive_record(d, run_dir=run, judge_default=True, model="m-large", prices=price_table) == rec


def test_a_context_gives_the_record_derived_without_one(tmp_path):
    """What ingest hands in (known real paths, one shared resolver) changes no record, and no
    evidence check: a broken reference is refused with or without it."""
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc(setup=FAILED_SETUP, agent=NOT_STARTED), episode_doc())
    plain = derive_record(d, run_dir=run)
    known = {os.fspath(run): os.path.realpath(run), os.fspath(d): os.path.realpath(d)}
    context = DerivationContext(os.fspath(run), known, EvidenceResolver(run))
    assert derive_record(d, run_dir=run, context=context) == plain
    assert derive_record(d, run_dir=run, context=context, artifacts=read_artifacts(d, context=context)) == plain
    assert plain["evidence"] == ["attempt.json#/setup"]


def test_a_context_of_another_run_is_ignored(tmp_path):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc())
    elsewhere = tmp_path / "other"
    context = DerivationContext(os.fspath(elsewhere), {os.fspath(run): os.fspath(elsewhere)}, EvidenceResolver(elsewhere))
    assert derive_record(d, run_dir=run, context=context) == derive_record(d, run_dir=run)
    assert derive_record(d, run_dir=run, context=context)["artifact_dir"] == "attempts/t/1"


def test_derivation_keeps_no_state_between_calls():
    """Callers configure a derivation by its arguments only: no module-level cache for them to fill."""
    state = {name: type(value).__name__ for name, value in vars(derivation).items()
             if not name.startswith("__") and isinstance(value, (dict, list, set))}
    assert state == {}


def test_derive_record_without_prices_has_no_cost(tmp_path):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc(task_id="t", attempt=1), episode_doc())
    rec = derive_record(d, run_dir=run, model="m-large")
    assert (rec["cost"], rec["cost_source"]) == (None, None)


def test_derive_record_model_not_priced(tmp_path, price_table):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc(task_id="t", attempt=1), episode_doc())
    assert derive_record(d, run_dir=run, model="other", prices=price_table)["cost"] is None
    assert derive_record(d, run_dir=run, model=None, prices=price_table)["cost_source"] is None


def test_derive_record_tokens_null_cost_null(tmp_path, price_table):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc(task_id="t", attempt=1))
    rec = derive_record(d, run_dir=run, model="m-large", prices=price_table)
    assert (rec["cost"], rec["cost_source"]) == (None, None)


def test_ids_come_from_attempt_json_not_directory_names(tmp_path):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "some-other-name" / "7",
                      attempt_doc(task_id="a/b | *c* <d>", attempt=3))
    rec = derive_record(d, run_dir=run)
    assert (rec["task_id"], rec["attempt"]) == ("a/b | *c* <d>", 3)
    assert rec["artifact_dir"] == "attempts/some-other-name/7"


def test_derive_record_uses_manifest_judge_default(tmp_path):
    run = tmp_path / "run"
    doc = attempt_doc(task_id="t", attempt=1,
                      evaluation={"hard_assertions": [{"name": "a", "passed": True}],
                                  "judge": judge("ok", "fail"), "quality_score": 0.6})
    d = write_attempt(run / "attempts" / "t" / "1", doc)
    assert derive_record(d, run_dir=run, judge_default=False)["success"] is True
    assert derive_record(d, run_dir=run, judge_default=True)["failure_class"] == "agent"


def test_derive_record_setup_failure_evidence_resolves(tmp_path):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1",
                      attempt_doc(task_id="t", attempt=1, setup=FAILED_SETUP, agent=NOT_STARTED, evaluation=None))
    rec = derive_record(d, run_dir=run, judge_default=True)
    assert (rec["failure_class"], rec["failure_stage"], rec["evidence"]) == ("environment", "setup",
                                                                                ["attempt.json#/setup"])
    assert rec["quality_score"] is None
    assert resolve_pointer(json.loads((d / "attempt.json").read_text()), "/setup") == FAILED_SETUP


def test_derive_record_tool_config(tmp_path):
    run = tmp_path / "run"
    d = write_attempt(run / "attempts" / "t" / "1", attempt_doc(task_id="t", attempt=1), None,
                      history_doc(assistant("pinch", "tap")))
    tools = ToolConfig(frozenset({"pinch"}))
    assert derive_record(d, run_dir=run, tools=tools)["telemetry"]["device_actions"] == 1
    assert derive_record(d, run_dir=run)["telemetry"]["device_actions"] == 1  # tap only


# --------------------------------------------------------------------------- read_artifacts


def test_read_artifacts_optional_files(tmp_path):
    d = write_attempt(tmp_path / "a", attempt_doc())
    art = read_artifacts(d)
    assert art.attempt == attempt_doc() and art.episode is None and art.history is None
    write_attempt(d, attempt_doc(), episode_doc(), SPEC_HISTORY)
    art = read_artifacts(d)
    assert art.episode == episode_doc() and art.history == SPEC_HISTORY


def test_unknown_extra_fields_are_kept_and_ignored(tmp_path):
    doc = attempt_doc(runner_note={"anything": [1, 2]}, zzz=None)
    doc["agent"]["extra"] = "x"
    episode = episode_doc() | {"model": "m", "extra": [None]}
    d = write_attempt(tmp_path / "run" / "attempts" / "t" / "1", doc, episode, SPEC_HISTORY | {"meta": {}})
    rec = derive_record(d, run_dir=tmp_path / "run", judge_default=True)
    assert rec["success"] is True and rec["telemetry"]["total_tokens"] == 9940


def test_missing_attempt_json(tmp_path):
    d = write_attempt(tmp_path / "a", None, episode_doc())
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.rule == "artifact-missing"
    assert info.value.file.endswith("attempt.json")


@pytest.mark.parametrize("name", ["attempt.json", "episode.json", "history.json"])
@pytest.mark.parametrize("text", ['{"task_id": ', "not json", "", '{"a": 1} {"b": 2}', "\ufeff{}"])
def test_unparseable_json(tmp_path, name, text):
    files = {"attempt.json": attempt_doc(), "episode.json": episode_doc(), "history.json": SPEC_HISTORY}
    files[name] = text
    d = write_attempt(tmp_path / "a", files["attempt.json"], files["episode.json"], files["history.json"])
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.rule == "artifact-json"
    assert Path(info.value.file) == d / name
    assert name in str(info.value)


def test_non_utf8_artifact(tmp_path):
    d = write_attempt(tmp_path / "a", attempt_doc())
    (d / "episode.json").write_bytes(b'{"events": [], "x": "\xff"}')
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.rule == "artifact-json" and info.value.file.endswith("episode.json")


def test_directory_in_place_of_artifact(tmp_path):
    d = write_attempt(tmp_path / "a", attempt_doc())
    (d / "history.json").mkdir()
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.file.endswith("history.json")


def _set(doc, pointer, value):
    parts = pointer.strip("/").split("/")
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value
    return doc


# (file, pointer to set, bad value, pointer reported)
TYPE_CASES = [
    ("attempt.json", "/task_id", 5, "/task_id"),
    ("attempt.json", "/task_id", "", "/task_id"),
    ("attempt.json", "/attempt", 0, "/attempt"),
    ("attempt.json", "/attempt", "2", "/attempt"),
    ("attempt.json", "/attempt", True, "/attempt"),
    ("attempt.json", "/attempt", 2.0, "/attempt"),
    ("attempt.json", "/setup", "ok", "/setup"),
    ("attempt.json", "/setup/status", "broken", "/setup/status"),
    ("attempt.json", "/setup/duration_ms", -1, "/setup/duration_ms"),
    ("attempt.json", "/setup/duration_ms", "2310", "/setup/duration_ms"),
    ("attempt.json", "/provider/available", "yes", "/provider/available"),
    ("attempt.json", "/skip", "because", "/skip"),
    ("attempt.json", "/skip", True, "/skip"),
    ("attempt.json", "/agent/status", "running", "/agent/status"),
    ("attempt.json", "/agent/task_wall_ms", -5, "/agent/task_wall_ms"),
    ("attempt.json", "/agent/task_wall_ms", True, "/agent/task_wall_ms"),
    ("attempt.json", "/recovery", True, "/recovery"),
    ("attempt.json", "/recovery/attempted", "yes", "/recovery/attempted"),
    ("attempt.json", "/recovery/succeeded", 1, "/recovery/succeeded"),
    ("attempt.json", "/screenshots", {"capture_ms": 1}, "/screenshots"),
    ("attempt.json", "/screenshots/1", 98, "/screenshots/1"),
    ("attempt.json", "/screenshots/1/capture_ms", -98, "/screenshots/1/capture_ms"),
    ("attempt.json", "/evaluation", [], "/evaluation"),
    ("attempt.json", "/evaluation/judge_enabled", "true", "/evaluation/judge_enabled"),
    ("attempt.json", "/evaluation/hard_assertions", {"name": "x"}, "/evaluation/hard_assertions"),
    ("attempt.json", "/evaluation/hard_assertions/0/passed", "yes", "/evaluation/hard_assertions/0/passed"),
    ("attempt.json", "/evaluation/hard_assertions/0/passed", None, "/evaluation/hard_assertions/0/passed"),
    ("attempt.json", "/evaluation/judge", "ok", "/evaluation/judge"),
    ("attempt.json", "/evaluation/judge/status", "failed", "/evaluation/judge/status"),
    ("attempt.json", "/evaluation/judge/verdict", "maybe", "/evaluation/judge/verdict"),
    ("attempt.json", "/evaluation/quality_score", 1.5, "/evaluation/quality_score"),
    ("attempt.json", "/evaluation/quality_score", "0.9", "/evaluation/quality_score"),
    ("episode.json", "/run_metrics", [], "/run_metrics"),
    ("episode.json", "/run_metrics/input_tokens", 1.5, "/run_metrics/input_tokens"),
    ("episode.json", "/run_metrics/output_tokens", -1, "/run_metrics/output_tokens"),
    ("episode.json", "/run_metrics/cached_input_tokens", "6000", "/run_metrics/cached_input_tokens"),
    ("episode.json", "/run_metrics/time_to_first_token_ms", -0.5, "/run_metrics/time_to_first_token_ms"),
    ("episode.json", "/events", {}, "/events"),
    ("episode.json", "/events/3", "tool_error", "/events/3"),
    ("episode.json", "/events/1/start_ms", "1210", "/events/1/start_ms"),
    ("episode.json", "/events/1/end_ms", 1000, "/events/1/end_ms"),   # ends before it starts
    ("history.json", "/messages", {}, "/messages"),
    ("history.json", "/messages/1", "hello", "/messages/1"),
    ("history.json", "/messages/1/usage", 5, "/messages/1/usage"),
    ("history.json", "/messages/1/usage/input_tokens", "3000", "/messages/1/usage/input_tokens"),
    ("history.json", "/messages/1/tool_calls", {"id": "c1"}, "/messages/1/tool_calls"),
    ("history.json", "/messages/1/tool_calls/0", "tap", "/messages/1/tool_calls/0"),
    ("history.json", "/messages/1/tool_calls/0/name", 7, "/messages/1/tool_calls/0/name"),
]


@pytest.mark.parametrize("name, pointer, value, reported", TYPE_CASES,
                         ids=[f"{c[0]}{c[1]}={c[2]!r}" for c in TYPE_CASES])
def test_wrong_types_name_file_and_pointer(tmp_path, name, pointer, value, reported):
    files = {"attempt.json": attempt_doc(), "episode.json": episode_doc(), "history.json": copy.deepcopy(SPEC_HISTORY)}
    _set(files[name], pointer, value)
    d = write_attempt(tmp_path / "a", files["attempt.json"], files["episode.json"], files["history.json"])
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.rule == "artifact-type"
    assert Path(info.value.file) == d / name
    assert info.value.pointer == reported


@pytest.mark.parametrize("name, doc", [("attempt.json", []), ("attempt.json", "x"), ("episode.json", [1]),
                                       ("episode.json", "x"), ("history.json", 3), ("history.json", [])])
def test_artifact_documents_must_be_objects(tmp_path, name, doc):
    files = {"attempt.json": attempt_doc(), "episode.json": episode_doc(), "history.json": SPEC_HISTORY}
    d = write_attempt(tmp_path / "a", files["attempt.json"], files["episode.json"], files["history.json"])
    (d / name).write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.rule == "artifact-type" and Path(info.value.file) == d / name
    assert info.value.pointer == ""


@pytest.mark.parametrize("name", ["attempt.json", "episode.json", "history.json"])
def test_attempt_json_without_ids(tmp_path, name):
    """Only attempt.json must carry the ids; the other files need not."""
    doc = attempt_doc()
    del doc["task_id"]
    d = write_attempt(tmp_path / "a", doc)
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert (info.value.rule, info.value.pointer) == ("artifact-type", "/task_id")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "1e400"])
def test_non_finite_numbers_in_artifacts_are_invalid(tmp_path, token):
    text = json.dumps(attempt_doc()).replace('"duration_ms": 2310', f'"duration_ms": {token}')
    assert token in text
    d = write_attempt(tmp_path / "a", text)
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert info.value.file.endswith("attempt.json")


def test_negative_infinity_is_refused_as_negative(tmp_path):
    text = json.dumps(attempt_doc()).replace('"duration_ms": 2310', '"duration_ms": -Infinity')
    d = write_attempt(tmp_path / "a", text)
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert (info.value.rule, info.value.pointer) == ("artifact-type", "/setup/duration_ms")


@pytest.mark.parametrize("name", ["episode.json", "history.json"])
def test_optional_artifact_that_is_json_null_is_invalid(tmp_path, name):
    d = write_attempt(tmp_path / "a", attempt_doc())
    (d / name).write_text("null", encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        read_artifacts(d)
    assert Path(info.value.file) == d / name
