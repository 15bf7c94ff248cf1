"""Record derivation from attempt artifacts (spec sections 4, 5 and 8).

Every case is a small hand-made artifact set: the classification rules of
section 4 in order and with their precedence, every telemetry field of the
section 5 table from its authoritative source (null when the source is absent,
0 only over a present source), tool configuration, versioned cost, and the
checks read_artifacts makes on the files.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from capbench_nb import InvalidRunError
from capbench_nb.records.derivation import (
    PriceTable,
    ToolConfig,
    classify,
    derive_record,
    extract_telemetry,
    load_price_table,
    load_tool_config,
    price_cost,
    read_artifacts,
)
from capbench_nb.io.pointer import resolve_pointer
from capbench_nb.format import TELEMETRY_FIELDS

# --------------------------------------------------------------------------- helpers


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


def outcome_tuple(o) -> tuple:
    return (o.success, o.agent_eligible, o.failure_class, o.failure_stage, tuple(o.evidence), o.quality_score)


def write_attempt(directory: Path, attempt: dict | str | None, episode=None, history=None) -> Path:
    """Write the artifact files (dicts as JSON, strings verbatim); None leaves a file out."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, doc in (("attempt.json", attempt), ("episode.json", episode), ("history.json", history)):
        if doc is not None:
            text = doc if isinstance(doc, str) else json.dumps(doc)
            (directory / name).write_text(text, encoding="utf-8")
    return directory


# --------------------------------------------------------------------------- classification (section 4)

SETUP_EV = ("attempt.json#/setup",)
JUDGE_EV = ("attempt.json#/evaluation/judge",)

# (id, attempt.json, episode.json, judge_default,
#  expected (success, eligible, failure_class, failure_stage, evidence, quality_score))
CLASSIFY_CASES = [
    # rule 1: skip, and it beats every later rule
    ("skip", attempt_doc(skip={"reason": "app not installed"}), None, True,
     (False, False, "skipped", None, (), None)),
    ("skip-beats-everything",
     with_eval(attempt_doc(skip={"reason": "x"}, setup=FAILED_SETUP, provider=NO_PROVIDER, agent=CRASHED),
               judge=judge("error", None)),
     episode_doc(ERROR_EVENTS), True,
     (False, False, "skipped", None, (), None)),
    ("skip-empty-object-is-set", attempt_doc(skip={}), None, True,
     (False, False, "skipped", None, (), None)),
    # rule 2: environment
    ("setup-failed", attempt_doc(setup=FAILED_SETUP), None, True,
     (False, False, "environment", "setup", SETUP_EV, None)),
    ("setup-failed-beats-provider-crash-judge",
     with_eval(attempt_doc(setup=FAILED_SETUP, provider=NO_PROVIDER, agent=CRASHED), judge=judge("error", None)),
     episode_doc(ERROR_EVENTS), True,
     (False, False, "environment", "setup", SETUP_EV, None)),
    ("setup-failed-with-not-started", attempt_doc(setup=FAILED_SETUP, agent=NOT_STARTED, evaluation=None), None, True,
     (False, False, "environment", "setup", SETUP_EV, None)),
    ("provider-unavailable", attempt_doc(provider=NO_PROVIDER), None, True,
     (False, False, "environment", None, (), None)),
    ("provider-unavailable-beats-crash", attempt_doc(provider=NO_PROVIDER, agent=CRASHED), episode_doc(ERROR_EVENTS), True,
     (False, False, "environment", None, (), None)),
    ("provider-unavailable-beats-judge-error",
     with_eval(attempt_doc(provider=NO_PROVIDER), judge=judge("error", None)), None, True,
     (False, False, "environment", None, (), None)),
    ("not-started", attempt_doc(agent=NOT_STARTED, evaluation=None, recovery=None), None, True,
     (False, False, "environment", None, (), None)),
    ("not-started-beats-judge-error",
     with_eval(attempt_doc(agent=NOT_STARTED), judge=judge("error", None)), episode_doc(ERROR_EVENTS), True,
     (False, False, "environment", None, (), None)),
    ("provider-available-null-is-not-unavailable", attempt_doc(provider={"available": None, "error": None}), None, True,
     (True, True, "", None, (), 0.9)),
    # rule 3: crash
    ("crashed", attempt_doc(agent=CRASHED), None, True,
     (False, False, "unknown", None, (), None)),
    ("crashed-beats-judge-error", with_eval(attempt_doc(agent=CRASHED), judge=judge("error", None)), None, True,
     (False, False, "unknown", None, (), None)),
    ("crashed-with-device-errors-has-no-stage", attempt_doc(agent=CRASHED), episode_doc(ERROR_EVENTS), True,
     (False, False, "unknown", None, (), None)),
    ("crashed-with-passing-evaluation", attempt_doc(agent=CRASHED), episode_doc(), True,
     (False, False, "unknown", None, (), None)),
    # rule 4: judge error while the judge is enabled
    ("judge-error", with_eval(judge=judge("error", None), quality_score=0.4), None, True,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
    ("judge-error-beats-failed-assertions-and-device-errors",
     with_eval(judge=judge("error", None), hard_assertions=[{"name": "a", "passed": False}]),
     episode_doc(ERROR_EVENTS), True,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
    ("judge-error-with-verdict-pass-still-error", with_eval(judge=judge("error", "pass")), None, True,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
    ("judge-error-on-timeout", with_eval(attempt_doc(agent=TIMEOUT), judge=judge("error", None)), None, True,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
    # rule 5: success or agent failure
    ("success", attempt_doc(), episode_doc(), True,
     (True, True, "", None, (), 0.9)),
    ("success-two-assertions", with_eval(hard_assertions=[{"name": "a", "passed": True}, {"name": "b", "passed": True}]),
     None, True, (True, True, "", None, (), 0.9)),
    ("success-ignores-device-errors", attempt_doc(), episode_doc(ERROR_EVENTS), True,
     (True, True, "", None, (), 0.9)),
    ("hard-assertion-failed", with_eval(hard_assertions=[{"name": "a", "passed": True}, {"name": "b", "passed": False}],
                                        quality_score=0.3), None, True,
     (False, True, "agent", None, (), 0.3)),
    ("verdict-fail", with_eval(judge=judge("ok", "fail"), quality_score=0.2), None, True,
     (False, True, "agent", None, (), 0.2)),
    ("verdict-missing", with_eval(judge=judge("ok", None), quality_score=None), None, True,
     (False, True, "agent", None, (), None)),
    ("judge-enabled-without-result", with_eval(judge=None, quality_score=None), None, True,
     (False, True, "agent", None, (), None)),
    ("agent-failure-device-errors",
     with_eval(judge=judge("ok", "fail"), quality_score=0.1), episode_doc(ERROR_EVENTS), True,
     (False, True, "agent", "device_execution",
      ("episode.json#/events/1", "episode.json#/events/3", "episode.json#/events/5"), 0.1)),
    ("agent-failure-spec-episode",
     with_eval(hard_assertions=[{"name": "wifi_off", "passed": False}], quality_score=0.1), episode_doc(), True,
     (False, True, "agent", "device_execution", ("episode.json#/events/2",), 0.1)),
    ("agent-failure-no-device-errors",
     with_eval(judge=judge("ok", "fail"), quality_score=0.1),
     episode_doc([{"type": "device_action", "name": "tap", "start_ms": 0, "end_ms": 5, "status": "ok"},
                  {"type": "tool_error", "call_id": "c1", "message": "nope", "status": "error"}]), True,
     (False, True, "agent", None, (), 0.1)),
    ("agent-failure-no-episode", with_eval(judge=judge("ok", "fail"), quality_score=0.1), None, True,
     (False, True, "agent", None, (), 0.1)),
    # timeout is an ordinary outcome, decided by assertions and judge
    ("timeout-success", attempt_doc(agent=TIMEOUT), None, True,
     (True, True, "", None, (), 0.9)),
    ("timeout-failure", with_eval(attempt_doc(agent=TIMEOUT), judge=judge("ok", "fail"), quality_score=0.05),
     None, True, (False, True, "agent", None, (), 0.05)),
    ("timeout-failure-device-error", with_eval(attempt_doc(agent=TIMEOUT), judge=judge("ok", "fail"), quality_score=0.05),
     episode_doc(ERROR_EVENTS[:2]), True,
     (False, True, "agent", "device_execution", ("episode.json#/events/1",), 0.05)),
    # --no-judge: evaluation.judge_enabled false ...
    ("no-judge-ignores-verdict-fail", with_eval(judge_enabled=False, judge=judge("ok", "fail")), None, True,
     (True, True, "", None, (), 0.9)),
    ("no-judge-ignores-judge-error", with_eval(judge_enabled=False, judge=judge("error", None)), None, True,
     (True, True, "", None, (), 0.9)),
    ("no-judge-hard-assertion-failed",
     with_eval(judge_enabled=False, judge=judge("error", None), hard_assertions=[{"name": "a", "passed": False}],
               quality_score=0.4),
     episode_doc(ERROR_EVENTS[:2]), True,
     (False, True, "agent", "device_execution", ("episode.json#/events/1",), 0.4)),
    # ... or the manifest's config.judge false when the attempt does not say
    ("manifest-no-judge-ignores-verdict",
     attempt_doc(evaluation={"hard_assertions": [{"name": "a", "passed": True}], "judge": judge("ok", "fail"),
                             "quality_score": 0.7}), None, False,
     (True, True, "", None, (), 0.7)),
    ("manifest-no-judge-ignores-judge-error",
     attempt_doc(evaluation={"hard_assertions": [{"name": "a", "passed": True}], "judge": judge("error", None),
                             "quality_score": 0.7}), None, False,
     (True, True, "", None, (), 0.7)),
    ("manifest-no-judge-judge-enabled-null",
     attempt_doc(evaluation={"judge_enabled": None, "hard_assertions": [{"name": "a", "passed": True}],
                             "judge": judge("error", None), "quality_score": 0.7}), None, False,
     (True, True, "", None, (), 0.7)),
    ("manifest-judge-applies-when-attempt-silent",
     attempt_doc(evaluation={"hard_assertions": [{"name": "a", "passed": True}], "judge": judge("ok", "fail"),
                             "quality_score": 0.7}), None, True,
     (False, True, "agent", None, (), 0.7)),
    ("manifest-judge-error-when-attempt-silent",
     attempt_doc(evaluation={"hard_assertions": [{"name": "a", "passed": True}], "judge": judge("error", None),
                             "quality_score": 0.7}), None, True,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
    # the attempt's own judge_enabled wins over the manifest default, both ways
    ("attempt-judge-disabled-beats-manifest", with_eval(judge_enabled=False, judge=judge("ok", "fail")), None, True,
     (True, True, "", None, (), 0.9)),
    ("attempt-judge-enabled-beats-manifest", with_eval(judge=judge("ok", "fail"), quality_score=0.2), None, False,
     (False, True, "agent", None, (), 0.2)),
    ("attempt-judge-enabled-error-beats-manifest", with_eval(judge=judge("error", None)), None, False,
     (False, False, "evaluation", "evaluation", JUDGE_EV, None)),
]


@pytest.mark.parametrize("attempt, episode, judge_default, expected",
                         [c[1:] for c in CLASSIFY_CASES], ids=[c[0] for c in CLASSIFY_CASES])
def test_classify(attempt, episode, judge_default, expected):
    assert outcome_tuple(classify(attempt, episode, judge_default=judge_default)) == expected


@pytest.mark.parametrize("attempt, episode, judge_default, expected",
                         [c[1:] for c in CLASSIFY_CASES], ids=[c[0] for c in CLASSIFY_CASES])
def test_classification_invariants(attempt, episode, judge_default, expected):
    """Every outcome satisfies the section 3 invariants, and its evidence resolves in the artifacts."""
    o = classify(attempt, episode, judge_default=judge_default)
    if o.success:
        assert o.agent_eligible and o.failure_class == ""
    else:
        assert o.failure_class in ("agent", "environment", "evaluation", "skipped", "unknown")
    if o.failure_class in ("environment", "evaluation", "skipped"):
        assert not o.agent_eligible
    if o.failure_class == "agent":
        assert o.agent_eligible
    if o.failure_class in ("environment", "evaluation", "skipped", "unknown"):
        assert o.quality_score is None  # section 8: no quality score for these
    if o.failure_stage is not None:
        assert o.evidence
    docs = {"attempt.json": attempt, "episode.json": episode}
    for ref in o.evidence:
        file, _, pointer = ref.partition("#")
        resolve_pointer(docs[file], pointer)  # raises if it does not resolve


def test_device_execution_evidence_points_at_error_events():
    o = classify(with_eval(judge=judge("ok", "fail")), episode_doc(ERROR_EVENTS), judge_default=True)
    events = [resolve_pointer({"events": ERROR_EVENTS}, ref.partition("#")[2]) for ref in o.evidence]
    assert [e["error"] for e in events] == ["x", "y", "z"]  # event order
    assert all(e["type"] == "device_action" and e["status"] == "error" for e in events)


def test_no_stage_is_guessed_from_tool_names_or_screenshots():
    """Nothing but device action error events infers a stage (rule 5)."""
    attempt = with_eval(judge=judge("ok", "fail"), quality_score=0.1)
    attempt["screenshots"] = [{"capture_ms": 1, "path": "grounding_error.png"}]
    episode = episode_doc([
        {"type": "tool_call", "name": "planner_error", "status": "error"},
        {"type": "grounding", "status": "error"},
        {"type": "device_action", "name": "tap", "start_ms": 0, "end_ms": 1, "status": "failed"},
    ])
    o = classify(attempt, episode, judge_default=True)
    assert (o.failure_class, o.failure_stage, o.evidence) == ("agent", None, ())


def test_judge_enabled_inferred_when_nothing_says():
    """Neither the attempt nor the manifest says: a judge result means the judge ran."""
    silent = {"hard_assertions": [{"name": "a", "passed": True}], "quality_score": 0.5}
    with_judge = attempt_doc(evaluation=silent | {"judge": judge("error", None)})
    without = attempt_doc(evaluation=silent | {"judge": None})
    assert classify(with_judge).failure_class == "evaluation"
    assert classify(without).success is True


# --------------------------------------------------------------------------- telemetry (section 5)


def check_sources(tel: dict, src: dict, docs: dict) -> None:
    """telemetry_source names exactly the non-null fields, each ``FILE#POINTER`` resolving in FILE."""
    assert list(tel) == list(TELEMETRY_FIELDS)
    assert set(src) == {k for k, v in tel.items() if v is not None}
    for name, ref in src.items():
        file, sep, pointer = ref.partition("#")
        assert sep and file in docs and docs[file] is not None, (name, ref)
        assert ref.startswith(file)
        resolve_pointer(docs[file], pointer)


def telemetry(attempt, episode=None, history=None, **kw):
    tel, src = extract_telemetry(attempt, episode, history, **kw)
    check_sources(tel, src, {"attempt.json": attempt, "episode.json": episode, "history.json": history})
    return tel, src


def test_telemetry_of_the_spec_example():
    tel, src = telemetry(attempt_doc(), episode_doc(), SPEC_HISTORY)
    assert tel == {
        "task_wall_ms": 48210,
        "setup_ms": 2310,
        "tool_calls": 1,
        "device_actions": 1,
        "llm_calls": 1,
        "input_tokens": 9100,
        "output_tokens": 840,
        "total_tokens": 9940,
        "cached_input_tokens": 6000,
        "reasoning_tokens": None,
        "time_to_first_token_ms": 640,
        "device_execution_ms": 320,      # only the tap has both start and end
        "screenshot_capture_ms": 210,
        "tool_errors": 1,
        "replan_count": 1,
        "recovery_attempted": True,
        "recovery_succeeded": True,
    }
    expected_files = {
        "task_wall_ms": "attempt.json", "setup_ms": "attempt.json", "screenshot_capture_ms": "attempt.json",
        "recovery_attempted": "attempt.json", "recovery_succeeded": "attempt.json",
        "tool_calls": "history.json", "device_actions": "history.json", "llm_calls": "history.json",
        "input_tokens": "episode.json", "output_tokens": "episode.json", "total_tokens": "episode.json",
        "cached_input_tokens": "episode.json", "time_to_first_token_ms": "episode.json",
        "device_execution_ms": "episode.json", "tool_errors": "episode.json", "replan_count": "episode.json",
    }
    assert {k: v.partition("#")[0] for k, v in src.items()} == expected_files
    assert src["task_wall_ms"] == "attempt.json#/agent/task_wall_ms"
    assert src["setup_ms"] == "attempt.json#/setup/duration_ms"
    for key in ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "time_to_first_token_ms"):
        assert src[key] == f"episode.json#/run_metrics/{key}"


def test_telemetry_values_are_typed():
    tel, _ = telemetry(attempt_doc(), episode_doc(), SPEC_HISTORY)
    for name in ("tool_calls", "device_actions", "llm_calls", "tool_errors", "replan_count",
                 "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens"):
        assert type(tel[name]) is int, name
    assert type(tel["recovery_attempted"]) is bool


EPISODE_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
                  "time_to_first_token_ms", "device_execution_ms", "tool_errors", "replan_count")
HISTORY_FIELDS = ("tool_calls", "device_actions", "llm_calls")


def test_missing_episode_nulls_its_fields():
    tel, src = telemetry(attempt_doc(), None, history_doc(assistant("tap")))  # no usage in history either
    for name in EPISODE_FIELDS:
        assert tel[name] is None and name not in src, name
    assert tel["tool_calls"] == 1 and tel["llm_calls"] == 0


def test_missing_history_nulls_its_fields():
    tel, src = telemetry(attempt_doc(), episode_doc(), None)
    for name in HISTORY_FIELDS:
        assert tel[name] is None and name not in src, name
    assert tel["input_tokens"] == 9100  # episode still there


def test_no_files_but_attempt():
    tel, src = telemetry(attempt_doc(), None, None)
    assert {k for k, v in tel.items() if v is not None} == {
        "task_wall_ms", "setup_ms", "screenshot_capture_ms", "recovery_attempted", "recovery_succeeded"}


def test_present_sources_with_nothing_matching_give_zero():
    tel, src = telemetry(attempt_doc(screenshots=[]), {"run_metrics": {}, "events": []}, history_doc())
    assert tel["device_execution_ms"] == 0
    assert tel["tool_errors"] == 0
    assert tel["replan_count"] == 0
    assert tel["tool_calls"] == 0
    assert tel["device_actions"] == 0
    assert tel["llm_calls"] == 0
    assert tel["screenshot_capture_ms"] == 0
    for name in ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens",
                 "reasoning_tokens", "time_to_first_token_ms"):
        assert tel[name] is None, name  # keys absent from run_metrics: null, not 0


def test_absent_keys_are_null_not_zero():
    """The files are present but their keys are not: null (a missing key is an absent source)."""
    tel, _ = telemetry({"task_id": "t", "attempt": 1}, {}, {})
    assert all(v is None for v in tel.values()), tel


def test_only_assistant_tool_calls_counted_read_only_and_unknown_excluded_from_device_actions():
    history = history_doc(
        {"role": "user", "content": "x", "tool_calls": [{"id": "u", "name": "tap"}]},
        assistant("tap", "screenshot", "get_ui_tree", "swipe"),
        {"role": "tool", "tool_call_id": "c0", "content": "ok", "tool_calls": [{"id": "t", "name": "tap"}]},
        assistant("get_screen_text", "list_apps", "frobnicate", "scroll"),
        assistant(),
        {"role": "assistant", "content": "done"},  # no tool_calls key
        {"role": "assistant", "content": "", "tool_calls": None},
        {"role": "system", "content": "s", "tool_calls": [{"id": "s", "name": "go_home"}]},
    )
    tel, _ = telemetry(attempt_doc(), None, history)
    assert tel["tool_calls"] == 8
    assert tel["device_actions"] == 3  # tap, swipe, scroll


@pytest.mark.parametrize("name", ["tap", "long_press", "swipe", "scroll", "type_text", "press_key",
                                  "launch_app", "open_url", "go_back", "go_home"])
def test_default_device_actions(name):
    tel, _ = telemetry(attempt_doc(), None, history_doc(assistant(name)))
    assert (tel["tool_calls"], tel["device_actions"]) == (1, 1)


@pytest.mark.parametrize("name", ["screenshot", "get_ui_tree", "get_screen_text", "list_apps",
                                  "Tap", "tap ", "unknown_tool", "pinch"])
def test_non_device_actions(name):
    tel, _ = telemetry(attempt_doc(), None, history_doc(assistant(name)))
    assert (tel["tool_calls"], tel["device_actions"]) == (1, 0)


def test_llm_calls_count_messages_with_usage():
    history = history_doc(
        {"role": "user", "content": "go"},
        assistant("tap", usage={"input_tokens": 10, "output_tokens": 1}),
        assistant(usage={"input_tokens": 20, "output_tokens": 2}),
        assistant("swipe", usage=None),
        assistant(usage={"input_tokens": 30, "output_tokens": 3}),
    )
    tel, src = telemetry(attempt_doc(), None, history)
    assert tel["llm_calls"] == 3
    assert (tel["input_tokens"], tel["output_tokens"], tel["total_tokens"]) == (60, 6, 66)
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        assert src[key].startswith("history.json")


def test_device_execution_ms_only_complete_device_actions():
    events = [
        {"type": "device_action", "start_ms": 100, "end_ms": 150, "status": "ok"},       # 50
        {"type": "device_action", "start_ms": 200, "end_ms": None, "status": "error"},   # incomplete
        {"type": "device_action", "start_ms": None, "end_ms": 300, "status": "ok"},      # incomplete
        {"type": "device_action", "end_ms": 400, "status": "ok"},                         # no start key
        {"type": "device_action", "start_ms": 500, "status": "ok"},                       # no end key
        {"type": "device_action", "start_ms": 600, "end_ms": 600.5, "status": "error"},  # 0.5, errors count
        {"type": "tool_call", "start_ms": 0, "end_ms": 10000},                            # not a device action
        {"type": "device_action", "start_ms": 700, "end_ms": 712, "status": "ok"},       # 12
    ]
    tel, _ = telemetry(attempt_doc(), {"events": events}, None)
    assert tel["device_execution_ms"] == pytest.approx(62.5)
    assert tel["tool_errors"] == 0 and tel["replan_count"] == 0


def test_device_execution_ms_zero_when_no_complete_action():
    events = [{"type": "device_action", "start_ms": 5, "end_ms": None, "status": "error"}]
    tel, src = telemetry(attempt_doc(), {"events": events}, None)
    assert tel["device_execution_ms"] == 0 and "device_execution_ms" in src


def test_tool_errors_and_replans_counted():
    events = [{"type": "tool_error"}, {"type": "replan"}, {"type": "tool_error"}, {"type": "replan"},
              {"type": "replan"}, {"type": "tool_call"}, {"type": "error"}]
    tel, _ = telemetry(attempt_doc(), {"events": events}, None)
    assert (tel["tool_errors"], tel["replan_count"]) == (2, 3)


USAGE_HISTORY = history_doc(
    assistant("tap", usage={"input_tokens": 30, "output_tokens": 5, "total_tokens": 999}),
    assistant(usage={"input_tokens": 20, "output_tokens": 7, "total_tokens": 999,
                     "cached_input_tokens": 40, "reasoning_tokens": 3, "time_to_first_token_ms": 9}),
)


@pytest.mark.parametrize(
    "run_metrics, expected",
    [
        # all in run_metrics: history ignored
        ({"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
         {"input_tokens": (100, "episode"), "output_tokens": (10, "episode"), "total_tokens": (110, "episode")}),
        # one by one: output and total fall back, input does not
        ({"input_tokens": 100, "output_tokens": None, "total_tokens": None},
         {"input_tokens": (100, "episode"), "output_tokens": (12, "history"), "total_tokens": (62, "history")}),
        # a missing key falls back like a null one
        ({"input_tokens": 100, "output_tokens": 10},
         {"input_tokens": (100, "episode"), "output_tokens": (10, "episode"), "total_tokens": (62, "history")}),
        ({"output_tokens": 10, "total_tokens": 500},
         {"input_tokens": (50, "history"), "output_tokens": (10, "episode"), "total_tokens": (500, "episode")}),
        ({}, {"input_tokens": (50, "history"), "output_tokens": (12, "history"), "total_tokens": (62, "history")}),
        (None, {"input_tokens": (50, "history"), "output_tokens": (12, "history"), "total_tokens": (62, "history")}),
        # a zero in run_metrics is a value, not absent
        ({"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
         {"input_tokens": (0, "episode"), "output_tokens": (0, "episode"), "total_tokens": (0, "episode")}),
    ],
)
def test_tokens_fall_back_one_by_one(run_metrics, expected):
    episode = {"events": []} if run_metrics is None else {"run_metrics": run_metrics, "events": []}
    tel, src = telemetry(attempt_doc(), episode, USAGE_HISTORY)
    got = {k: (tel[k], src[k].partition(".json")[0]) for k in expected}
    assert got == expected
    # the episode-only fields never come from history usage
    for key in ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms"):
        assert tel[key] is None, key


def test_history_total_is_input_plus_output_ignoring_usage_total():
    tel, _ = telemetry(attempt_doc(), None, USAGE_HISTORY)
    assert tel["total_tokens"] == 50 + 12


def test_history_without_usage_is_no_token_source():
    history = history_doc({"role": "user", "content": "x"}, assistant("tap"), assistant("swipe", "screenshot"))
    tel, src = telemetry(attempt_doc(), None, history)
    assert (tel["input_tokens"], tel["output_tokens"], tel["total_tokens"]) == (None, None, None)
    assert tel["llm_calls"] == 0 and "llm_calls" in src
    assert (tel["tool_calls"], tel["device_actions"]) == (3, 2)


def test_history_without_usage_does_not_zero_episode_nulls():
    tel, _ = telemetry(attempt_doc(), episode_doc(input_tokens=None, output_tokens=None, total_tokens=None),
                       history_doc(assistant("tap")))
    assert (tel["input_tokens"], tel["output_tokens"], tel["total_tokens"]) == (None, None, None)


def test_episode_only_fields_from_run_metrics():
    episode = episode_doc(cached_input_tokens=123, reasoning_tokens=45, time_to_first_token_ms=67.5)
    tel, src = telemetry(attempt_doc(), episode, USAGE_HISTORY)
    assert (tel["cached_input_tokens"], tel["reasoning_tokens"], tel["time_to_first_token_ms"]) == (123, 45, 67.5)
    assert src["reasoning_tokens"] == "episode.json#/run_metrics/reasoning_tokens"


@pytest.mark.parametrize(
    "screenshots, expected",
    [
        ([{"capture_ms": 112}, {"capture_ms": 98}], 210),
        ([{"capture_ms": 12.5}], 12.5),
        ([], 0),
        ([{"capture_ms": 112}, {}], None),                     # an entry without capture_ms
        ([{"capture_ms": 112}, {"capture_ms": None}], None),
        ([{}], None),
    ],
)
def test_screenshot_capture_ms(screenshots, expected):
    tel, src = telemetry(attempt_doc(screenshots=screenshots))
    assert tel["screenshot_capture_ms"] == expected
    assert ("screenshot_capture_ms" in src) == (expected is not None)


def test_screenshot_capture_ms_missing_key():
    doc = attempt_doc()
    del doc["screenshots"]
    tel, _ = telemetry(doc)
    assert tel["screenshot_capture_ms"] is None


@pytest.mark.parametrize(
    "recovery, attempted, succeeded",
    [
        ({"attempted": True, "succeeded": True}, True, True),
        ({"attempted": True, "succeeded": False}, True, False),
        ({"attempted": False, "succeeded": None}, False, None),
        ({"attempted": True, "succeeded": None}, True, None),
        ({}, None, None),
        (None, False, None),        # none attempted
        ("MISSING", None, None),    # key absent
    ],
)
def test_recovery(recovery, attempted, succeeded):
    doc = attempt_doc(recovery=recovery)
    if recovery == "MISSING":
        del doc["recovery"]
    tel, src = telemetry(doc)
    assert (tel["recovery_attempted"], tel["recovery_succeeded"]) == (attempted, succeeded)
    assert type(tel["recovery_attempted"]) in (bool, type(None))


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"agent": {"status": "not_started", "task_wall_ms": None}}, "task_wall_ms"),
        ({"agent": {"status": "completed"}}, "task_wall_ms"),
        ({"agent": None}, "task_wall_ms"),
        ({"setup": {"status": "ok", "duration_ms": None}}, "setup_ms"),
        ({"setup": {"status": "ok"}}, "setup_ms"),
        ({"setup": None}, "setup_ms"),
    ],
)
def test_attempt_fields_null_when_absent(changes, field):
    tel, src = telemetry(attempt_doc(**changes))
    assert tel[field] is None and field not in src


def test_setup_ms_reported_for_failed_setup():
    tel, _ = telemetry(attempt_doc(setup=FAILED_SETUP, agent=NOT_STARTED))
    assert (tel["setup_ms"], tel["task_wall_ms"]) == (900, None)


# --------------------------------------------------------------------------- tool configuration


def test_default_tool_config_is_the_spec_lists():
    tools = load_tool_config()
    assert tools.device_actions == {"tap", "long_press", "swipe", "scroll", "type_text", "press_key",
                                    "launch_app", "open_url", "go_back", "go_home"}
    assert tools.read_only == {"screenshot", "get_ui_tree", "get_screen_text", "list_apps"}


def test_tool_config_override_from_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"device_actions": ["tap", "pinch"], "read_only": ["screenshot"]}), encoding="utf-8")
    tools = load_tool_config(path)
    assert tools == ToolConfig(frozenset({"tap", "pinch"}), frozenset({"screenshot"}))
    history = history_doc(assistant("tap", "pinch", "swipe", "screenshot"))
    tel, _ = telemetry(attempt_doc(), None, history, tools=tools)
    assert (tel["tool_calls"], tel["device_actions"]) == (4, 2)  # swipe no longer a device action
    tel, _ = telemetry(attempt_doc(), None, history)
    assert tel["device_actions"] == 2  # defaults: tap, swipe


def test_tool_config_without_read_only(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text('{"device_actions": ["pinch"]}', encoding="utf-8")
    assert load_tool_config(path) == ToolConfig(frozenset({"pinch"}), frozenset())


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"device_actions": "tap"}',
        '{"device_actions": [1, 2]}',
        '{"device_actions": ["tap"], "read_only": [null]}',
        '{"device_actions": ["tap", "screenshot"], "read_only": ["screenshot"]}',
    ],
)
def test_invalid_tool_config(tmp_path, text):
    path = tmp_path / "tools.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_tool_config(path)
    assert info.value.rule == "tools-config"
    assert str(path) in info.value.file


def test_missing_tool_config(tmp_path):
    with pytest.raises(InvalidRunError) as info:
        load_tool_config(tmp_path / "nope.json")
    assert info.value.rule == "tools-config"


# --------------------------------------------------------------------------- cost


PRICES = {"name": "prices/p1", "version": "2026-10-01", "effective_date": "2026-10-01",
          "models": {"m-large": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07},
                     "m-small": {"input": 1e-06, "output": 2e-06}}}


@pytest.fixture
def price_table(tmp_path) -> PriceTable:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES), encoding="utf-8")
    return load_price_table(path)


def test_load_price_table(price_table):
    assert price_table.source == "prices/p1@2026-10-01"
    assert price_table.name == "prices/p1" and price_table.effective_date == "2026-10-01"
    assert set(price_table.models) == {"m-large", "m-small"}


def tokens(inp, out, cached=None) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "cached_input_tokens": cached}


@pytest.mark.parametrize(
    "tel, model, expected",
    [
        # uncached input at input price, cached at cached price, output at output price
        (tokens(9100, 840, 6000), "m-large", 3100 * 2.5e-06 + 6000 * 6.25e-07 + 840 * 1e-05),
        (tokens(9100, 840, None), "m-large", 9100 * 2.5e-06 + 840 * 1e-05),
        (tokens(9100, 840, 0), "m-large", 9100 * 2.5e-06 + 840 * 1e-05),
        # no cached price: cached input tokens cost the input price
        (tokens(9100, 840, 6000), "m-small", 9100 * 1e-06 + 840 * 2e-06),
        (tokens(0, 0, 0), "m-large", 0.0),
        # the spec's example; sample run settings.wifi.toggle attempt 1
        (tokens(15590, 909, 11776), "m-large", 0.025985),
    ],
)
def test_price_cost(price_table, tel, model, expected):
    cost, source = price_cost(tel, model, price_table)
    assert cost == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert source == "prices/p1@2026-10-01"


@pytest.mark.parametrize(
    "tel, model",
    [
        (tokens(9100, 840, 6000), "m-unknown"),   # model not in the table
        (tokens(9100, 840, 6000), None),          # run names no model
        (tokens(None, 840, 6000), "m-large"),     # tokens null
        (tokens(9100, None, 6000), "m-large"),
        (tokens(None, None, None), "m-large"),
    ],
)
def test_price_cost_null(price_table, tel, model):
    assert price_cost(tel, model, price_table) == (None, None)


def test_no_price_table_no_cost():
    assert price_cost(tokens(9100, 840, 6000), "m-large", None) == (None, None)


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {k: v for k, v in PRICES.items() if k != "name"},
        PRICES | {"version": ""},
        PRICES | {"version": 20261001},
        PRICES | {"effective_date": None},
        PRICES | {"models": {}},
        PRICES | {"models": []},
        PRICES | {"models": {"m": 0.1}},
        PRICES | {"models": {"m": {"input": 1e-6}}},
        PRICES | {"models": {"m": {"input": -1e-6, "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": "1e-6", "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": True, "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": 1e-6, "output": 1e-6, "cached_input": -1}}},
        PRICES | {"models": {"m": {"input": 1e-6, "output": 1e-6, "cached_input": None}}},
    ],
)
def test_invalid_price_table(tmp_path, doc):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"
    assert str(path) in info.value.file


@pytest.mark.parametrize("text", ["{not json", "", '{"name":'])
def test_price_table_not_json(tmp_path, text):
    path = tmp_path / "prices.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"


@pytest.mark.parametrize("token", ["NaN", "Infinity"])
def test_price_table_non_finite_price(tmp_path, token):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES).replace("1e-05", token), encoding="utf-8")
    assert token in path.read_text()
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"


def test_price_table_missing_file(tmp_path):
    with pytest.raises(InvalidRunError) as info:
        load_price_table(tmp_path / "nope.json")
    assert info.value.rule == "price-table"


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
