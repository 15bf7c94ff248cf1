"""The classification rules of spec section 4 (capbench_nb.records.outcome), in order and with their precedence."""

from __future__ import annotations

import pytest
from conftest import (
    attempt_doc,
    with_eval,
    judge,
    FAILED_SETUP,
    NO_PROVIDER,
    CRASHED,
    NOT_STARTED,
    TIMEOUT,
    episode_doc,
    ERROR_EVENTS,
)

from capbench_nb.io.pointer import resolve_pointer
from capbench_nb.records.outcome import classify

def outcome_tuple(o) -> tuple:
    return (o.success, o.agent_eligible, o.failure_class, o.failure_stage, tuple(o.evidence), o.quality_score)


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
