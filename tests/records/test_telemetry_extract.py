"""Telemetry from artifacts (capbench_nb.records.telemetry_extract): every field of the spec section 5
table from its authoritative source, null when the source is absent, 0 only over a present source.
"""

from __future__ import annotations

import json

import pytest
from conftest import attempt_doc, FAILED_SETUP, NOT_STARTED, episode_doc, history_doc, assistant, SPEC_HISTORY

from capbench_nb.format import TELEMETRY, TELEMETRY_FIELDS
from capbench_nb.io.pointer import resolve_pointer
from capbench_nb.records.prices import ToolConfig, load_tool_config
from capbench_nb.records.telemetry_extract import extract_telemetry

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


# --------------------------------------------------------------------------- with a tool configuration


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


def test_sources_are_the_format_tables():
    """Every source named is the one capbench_nb.format's telemetry table gives the field."""
    table = {f.name: f.source for f in TELEMETRY}
    episode = episode_doc(reasoning_tokens=12)
    tel, src = telemetry(attempt_doc(), episode, SPEC_HISTORY)
    assert {name for name in TELEMETRY_FIELDS if tel[name] is not None} == set(src)
    assert src == {name: table[name] for name in src}
    _, src = telemetry(attempt_doc(recovery=None), None, SPEC_HISTORY)  # tokens from the history instead
    assert src["input_tokens"] == src["tool_calls"] == "history.json#/messages"
    assert src["recovery_attempted"] == "attempt.json#/recovery"
