"""The outcome of one attempt by the classification rules of spec section 4, applied in order."""

from __future__ import annotations

from dataclasses import dataclass

from capbench_nb.format import ATTEMPT, EPISODE

__all__ = ["Outcome", "classify", "judge_enabled", "json_equal", "preflight_drift"]


@dataclass(frozen=True)
class Outcome:
    """The classification fields of a record (spec section 3)."""

    success: bool
    agent_eligible: bool
    failure_class: str
    failure_stage: str | None = None
    evidence: tuple[str, ...] = ()
    quality_score: float | None = None


def judge_enabled(evaluation: dict, judge_default: bool | None) -> bool:
    """Whether the judge counted for an attempt (spec section 4): ``evaluation.judge_enabled``, else the
    manifest's ``config.judge`` (``judge_default``), else whether a judge result exists.

    Parameters
    ----------
    evaluation : dict
        ``attempt.json#/evaluation`` (``{}`` when absent).
    judge_default : bool or None
        The manifest's ``config.judge``.
    """
    if isinstance(evaluation.get("judge_enabled"), bool):
        return evaluation["judge_enabled"]
    if isinstance(judge_default, bool):
        return judge_default
    return evaluation.get("judge") is not None


def json_equal(a, b) -> bool:
    """JSON equality: numbers by value (``1`` equals ``1.0``), ``true`` never a number, objects and
    lists member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def preflight_drift(attempt: dict, lock: str | None) -> tuple[str, ...]:
    """The evidence of an attempt's drift (spec section 12), ``()`` when it did not drift.

    An attempt is drifted when its ``preflight`` names another lock than ``lock`` (the manifest's
    ``suite.lock``; a preflight without a ``lock`` key names none), evidence
    ``attempt.json#/preflight/lock``, or a probe's ``observed`` is not ``expected`` (JSON equality;
    an absent key reads as null), one ``attempt.json#/preflight/probes/N`` per failed probe, in order.
    """
    preflight = attempt.get("preflight")
    if not isinstance(preflight, dict):
        return ()
    refs = []
    if "lock" in preflight and preflight["lock"] != lock:
        refs.append(f"{ATTEMPT}#/preflight/lock")
    for i, probe in enumerate(preflight.get("probes") or []):
        if isinstance(probe, dict) and not json_equal(probe.get("observed"), probe.get("expected")):
            refs.append(f"{ATTEMPT}#/preflight/probes/{i}")
    return tuple(refs)


def classify(attempt: dict, episode: dict | None = None, *, judge_default: bool | None = None,
             lock: str | None = None) -> Outcome:
    """Outcome of one attempt by the rules of spec section 4, in order.

    1. ``skip`` set: skipped, not eligible.
    1b. drifted (:func:`preflight_drift` against ``lock``): environment, not eligible, stage ``setup``
       with the drift's evidence (spec section 12).
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
    lock : str, optional
        The manifest's ``suite.lock``, the digest a preflight must name.
    """
    if attempt.get("skip") is not None:
        return Outcome(False, False, "skipped")
    drift = preflight_drift(attempt, lock)
    if drift:
        return Outcome(False, False, "environment", "setup", drift)
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
    enabled = judge_enabled(evaluation, judge_default)
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
