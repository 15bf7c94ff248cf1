"""A seeded simulator of realistic benchmark runs, with a ground-truth file.

:func:`simulate_run` writes a run directory in the run format v1
(``run-format.md``): ``manifest.json`` and either ``results.jsonl`` (without
artifacts) or ``attempts/<task_id>/<attempt>/`` artifact directories (with
``artifacts=True``; derive results.jsonl with ``capbench-nb ingest``).  Next to
them it writes ``simulation.json``, the ground truth: the parameters, every
task's latent success probability and, for every attempt, what happened
(``cause``) and the record a correct derivation must give (``record``).

How a run is simulated
----------------------
Every task has a latent success probability drawn from a Beta distribution.
Each attempt first draws whether the environment or the harness gets in the
way (a whole task may be skipped; setup failure, provider unavailable, agent
not started, agent crash, judge error), each independent of the task's
difficulty; otherwise it succeeds with the task's probability.  A failed
attempt fails in one of three ways: it times out (the runner's recovery
follows), a device action errors (stage ``device_execution``), or it simply
does the wrong thing.  The agent's trajectory is then played on a simulated
clock: one LLM call per tool call (log-normal latencies, token counts that grow
with the context, prefix-cached input), device actions with log-normal
durations and a screenshot after each, element-not-found tool errors followed
by replans.  Some telemetry sources go missing as they do in real runs
(no episode.json or history.json, a run_metrics gap, a screenshot without its
capture time, a history without usage, an attempt.json without ``recovery``).

Truth and derivation are kept apart: the truth record of an attempt is built
from the simulator's own draws (what it knows happened), never by reading the
artifacts back; the records of results.jsonl come from the toolkit's
derivation (``ingest``, or :func:`capbench_nb.derivation.classify` and
:func:`~capbench_nb.derivation.extract_telemetry` on the in-memory artifacts
when no artifacts are written).  Tests compare the two.

Without artifacts the runner keeps no file a record could cite, so no record
has evidence or a failure stage (the format sets a stage only with evidence);
``artifact_dir`` is null and the truth's ``cause`` still says what happened.

The truth file ``simulation.json``::

    {"schema_version": "capbench.simulation/1", "simulator_version": "1",
     "parameters": {"tasks", "repeats", "seed", "artifacts", every option; price_table as an object or null},
     "causes": {cause: description},
     "tasks": [{"task_id", "app", "planned_repeats", "p_success", "skipped",
                "attempts": [numbers that ran], "missing_attempts": [planned numbers that did not]}],
     "attempts": [{"task_id", "attempt", "above_planned_repeats", "cause",
                   "files": [artifact files written], "record": {the intended results.jsonl record}}]}

``tasks`` is in plan order, ``attempts`` in results.jsonl order (task_id, then
attempt).  ``record`` has every field of spec section 3 (outcome, evidence,
quality score, all telemetry with its sources, cost).

Determinism: every random draw comes from a ``random.Random`` seeded with a
string made of the seed and the task and attempt numbers (string seeds are
hashed with SHA-512, independent of ``PYTHONHASHSEED``); nothing reads the
clock; key order is fixed.  The same arguments give byte-identical files.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from capbench_nb.records.derivation import PriceTable, classify, extract_telemetry, price_cost
from capbench_nb.errors import InvalidRunError
from capbench_nb.format import CLASS_KEYS, RUN_SCHEMA_VERSION, TELEMETRY_FIELDS

__all__ = [
    "SimulationOptions",
    "SimulatedRun",
    "simulate_run",
    "build_run",
    "expected_metrics",
    "describe_run",
    "TRUTH_FILE",
    "TRUTH_SCHEMA_VERSION",
    "SIMULATOR_VERSION",
]

TRUTH_FILE = "simulation.json"
TRUTH_SCHEMA_VERSION = "capbench.simulation/1"
#: Bumped whenever the same arguments would give different bytes.
SIMULATOR_VERSION = "1"
CREATED_AT = "2026-11-28T10:00:00Z"  # fixed: a simulated run has no wall-clock time

ATTEMPT, EPISODE, HISTORY = "attempt.json", "episode.json", "history.json"
_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens")
_RUN_METRICS_KEYS = _TOKEN_KEYS + ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms")

#: Causes (``cause`` in the truth file) and what they are.
CAUSES = {
    "success": "the agent completed the task",
    "success_after_device_error": "the agent completed the task after a device action error it retried",
    "wrong_outcome": "the agent finished but did the wrong thing (missed the critical step)",
    "device_error": "a device action errored and the agent gave up",
    "timeout": "the agent ran until the runner's timeout; the runner attempted recovery",
    "skipped": "the task was skipped (deliberately, before setup)",
    "setup_failed": "the device setup failed",
    "provider_unavailable": "the model provider was unavailable",
    "not_started": "the agent runtime did not start",
    "crashed": "the agent runtime crashed mid-task",
    "judge_error": "the agent ran, but the LLM judge errored",
}


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class SimulationOptions:
    """Options of :func:`simulate_run` (all keyword-only there); rates are probabilities.

    Run configuration
        ``model``, ``provider``, ``platform``: the manifest's ``config``;
        ``judge``: whether the LLM judge is enabled (``False`` is a
        ``--no-judge`` run: success is the hard assertions alone and no judge
        error can happen); ``reasoning_tokens``: whether the model reports
        reasoning tokens (else that field is null throughout).
    Difficulty
        ``success_alpha``, ``success_beta``: the Beta distribution of the
        per-task latent success probability (default mean 0.6).
    Harness and environment (drawn per attempt, in this order, independent of
    difficulty)
        ``skip_rate`` (per task: every attempt of the task is skipped),
        ``setup_failure_rate``, ``provider_unavailable_rate``,
        ``not_started_rate``, ``crash_rate``, ``judge_error_rate``.
    How attempts fail
        ``timeout_rate`` and ``device_error_rate``: shares of the agent's
        failures that time out, or end on a device action error (the rest do
        the wrong thing); ``transient_device_error_rate``: share of successes
        that hit a device error and retried; ``tool_error_rate``: per tool call,
        an element-not-found error followed by a replan (doubled in failures);
        ``recovery_success_rate``: the runner's recovery after a timeout;
        ``timeout_ms``: the runner's per-attempt timeout.
    Missing telemetry sources
        ``episode_missing_rate``, ``history_missing_rate``,
        ``history_usage_missing_rate`` (history without any ``usage``),
        ``run_metrics_gap_rate`` (one run_metrics field null or absent),
        ``screenshot_gap_rate`` (one screenshot without ``capture_ms``),
        ``recovery_key_missing_rate`` (attempt.json without ``recovery``).
    Plan shape
        ``short_tasks``: tasks planned with one repeat fewer (then
        ``plan.k = repeats - 1``); ``empty_tasks``: planned tasks that never
        ran; ``missing_attempts``: tasks whose last planned attempt never ran;
        ``extra_attempts``: tasks with one attempt above their planned repeats
        (anomalies).  Missing attempts or empty tasks make the run ``partial``.
    Cost
        ``price_table``: a :class:`~capbench_nb.derivation.PriceTable`; with
        it, records with token counts get a cost (without artifacts directly;
        with artifacts the truth holds the cost that ``ingest --prices`` gives).
    """

    model: str = "m-large"
    provider: str = "p1"
    platform: str = "android"
    judge: bool = True
    reasoning_tokens: bool = False
    success_alpha: float = 1.5
    success_beta: float = 1.0
    skip_rate: float = 0.02
    setup_failure_rate: float = 0.02
    provider_unavailable_rate: float = 0.01
    not_started_rate: float = 0.01
    crash_rate: float = 0.02
    judge_error_rate: float = 0.02
    timeout_rate: float = 0.15
    device_error_rate: float = 0.2
    transient_device_error_rate: float = 0.03
    tool_error_rate: float = 0.04
    recovery_success_rate: float = 0.7
    timeout_ms: int = 180_000
    episode_missing_rate: float = 0.05
    history_missing_rate: float = 0.3
    history_usage_missing_rate: float = 0.02
    run_metrics_gap_rate: float = 0.05
    screenshot_gap_rate: float = 0.03
    recovery_key_missing_rate: float = 0.02
    short_tasks: int = 0
    missing_attempts: int = 0
    empty_tasks: int = 0
    extra_attempts: int = 0
    price_table: PriceTable | None = None

    def check(self, tasks: int, repeats: int) -> None:
        """Raise ValueError for an option outside its range."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_rate") and not (type(value) in (int, float) and 0 <= value <= 1):
                raise ValueError(f"{f.name} must be a probability in [0, 1], got {value!r}")
        for name in ("short_tasks", "missing_attempts", "empty_tasks", "extra_attempts"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= tasks:
                raise ValueError(f"{name} must be an integer in [0, tasks={tasks}], got {value!r}")
        if self.success_alpha <= 0 or self.success_beta <= 0:
            raise ValueError("success_alpha and success_beta must be positive")
        if type(self.timeout_ms) is not int or self.timeout_ms < 30_000:
            raise ValueError(f"timeout_ms must be an integer >= 30000, got {self.timeout_ms!r}")
        if self.short_tasks and repeats < 2:
            raise ValueError("short_tasks needs repeats >= 2 (a short task has repeats - 1)")
        if self.missing_attempts + self.extra_attempts + self.empty_tasks > tasks:
            raise ValueError("missing_attempts, extra_attempts and empty_tasks need distinct tasks: too many for the plan")
        if self.price_table is not None and not isinstance(self.price_table, PriceTable):
            raise ValueError("price_table must be a capbench_nb.derivation.PriceTable")

    def as_json(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = asdict(value) if isinstance(value, PriceTable) else value
        return out


# --------------------------------------------------------------------------- task catalogue

# (task_id, app, package, prompt, steps, critical step, assertions, final answer)
# A step is (tool, arguments) or (tool, arguments, tool result).
_SETTINGS, _CLOCK, _CONTACTS = "com.android.settings", "com.google.android.deskclock", "com.google.android.contacts"
_CHROME, _MESSAGING, _CAMERA = "com.android.chrome", "com.google.android.apps.messaging", "com.google.android.GoogleCamera"
_CALENDAR, _MAPS, _GMAIL = "com.google.android.calendar", "com.google.android.apps.maps", "com.google.android.gm"

_CATALOGUE = [
    ("settings.wifi.toggle", "settings", _SETTINGS, "Turn Wi-Fi off.",
     [("get_ui_tree", {}), ("tap", {"x": 540, "y": 612}), ("tap", {"x": 540, "y": 388}),
      ("tap", {"x": 960, "y": 402}), ("screenshot", {})], 3, ["wifi_disabled"]),
    ("settings.bluetooth.off", "settings", _SETTINGS, "Turn Bluetooth off.",
     [("tap", {"x": 540, "y": 780}), ("tap", {"x": 540, "y": 300}), ("tap", {"x": 960, "y": 300}),
      ("get_screen_text", {}, "Use Bluetooth: Off")], 2, ["bluetooth_disabled"]),
    ("settings.display.dark_mode", "settings", _SETTINGS, "Enable dark theme.",
     [("scroll", {"direction": "down"}), ("tap", {"x": 540, "y": 1150}), ("tap", {"x": 960, "y": 520}),
      ("screenshot", {})], 2, ["ui_night_mode_yes"]),
    ("settings.display.brightness", "settings", _SETTINGS, "Set screen brightness to about half.",
     [("scroll", {"direction": "down"}), ("tap", {"x": 540, "y": 1150}), ("tap", {"x": 540, "y": 420}),
      ("swipe", {"x1": 900, "y1": 420, "x2": 540, "y2": 420}), ("get_ui_tree", {})], 3, ["brightness_40_60"]),
    ("clock.alarm.create", "clock", _CLOCK, "Create an alarm for 6:45 AM labeled Gym.",
     [("tap", {"x": 135, "y": 2280}), ("tap", {"x": 540, "y": 1980}), ("tap", {"x": 300, "y": 1210}),
      ("tap", {"x": 790, "y": 880}), ("tap", {"x": 900, "y": 1620}), ("tap", {"x": 380, "y": 1020}),
      ("type_text", {"text": "Gym"}), ("tap", {"x": 900, "y": 1180}), ("get_ui_tree", {})], 6,
     ["alarm_exists_0645", "alarm_label_gym"]),
    ("clock.timer.start", "clock", _CLOCK, "Start a 10 minute timer.",
     [("tap", {"x": 540, "y": 2280}), ("type_text", {"text": "1000"}), ("tap", {"x": 540, "y": 2000}),
      ("screenshot", {})], 2, ["timer_running_600s"]),
    ("clock.stopwatch.lap", "clock", _CLOCK, "Start the stopwatch, record one lap, then stop it.",
     [("tap", {"x": 945, "y": 2280}), ("tap", {"x": 540, "y": 2000}), ("tap", {"x": 250, "y": 2000}),
      ("tap", {"x": 540, "y": 2000}), ("get_screen_text", {}, "Lap 1 00:02.41 (stopped)")], 2,
     ["stopwatch_stopped", "lap_count_1"]),
    ("contacts.contact.create", "contacts", _CONTACTS, "Add a contact Dana Whitfield, +1 415 555 0134.",
     [("tap", {"x": 940, "y": 2100}), ("tap", {"x": 540, "y": 720}), ("type_text", {"text": "Dana"}),
      ("tap", {"x": 540, "y": 860}), ("type_text", {"text": "Whitfield"}), ("tap", {"x": 540, "y": 1180}),
      ("type_text", {"text": "+14155550134"}), ("tap", {"x": 960, "y": 150}), ("get_ui_tree", {})], 7,
     ["contact_exists", "phone_matches"]),
    ("contacts.contact.search", "contacts", _CONTACTS, "Find Priya Raman and tell me her email address.",
     [("tap", {"x": 540, "y": 160}), ("type_text", {"text": "Priya"}), ("tap", {"x": 540, "y": 420}),
      ("get_screen_text", {}, "Priya Raman | priya.raman@example.com")], 2, ["answer_contains_email"]),
    ("browser.url.open", "browser", _CHROME, "Open example.org in the browser.",
     [("open_url", {"url": "https://example.org"}), ("get_screen_text", {}, "Example Domain")], 0,
     ["url_is_example_org"]),
    ("browser.search.query", "browser", _CHROME, "Search the web for capybara lifespan and open the first result.",
     [("tap", {"x": 540, "y": 210}), ("type_text", {"text": "capybara lifespan"}), ("press_key", {"key": "ENTER"}),
      ("get_ui_tree", {}), ("tap", {"x": 420, "y": 760}), ("get_screen_text", {}, "Capybara lifespan")], 4,
     ["search_performed", "first_result_opened"]),
    ("messages.sms.send", "messages", _MESSAGING, "Text 'On my way' to +1 415 555 0188.",
     [("tap", {"x": 860, "y": 2100}), ("type_text", {"text": "+14155550188"}), ("type_text", {"text": "On my way"}),
      ("tap", {"x": 990, "y": 2180})], 3, ["sms_sent"]),
    ("messages.inbox.read_latest", "messages", _MESSAGING, "Read me the latest message.",
     [("tap", {"x": 540, "y": 420}), ("get_screen_text", {}, "Sam: Running 10 min late"), ("go_back", {})], 0,
     ["answer_matches_latest_sms"]),
    ("camera.photo.capture", "camera", _CAMERA, "Take a photo with the rear camera.",
     [("get_ui_tree", {}), ("tap", {"x": 540, "y": 1880}), ("tap", {"x": 540, "y": 2120}), ("go_home", {})], 2,
     ["new_photo_in_gallery"]),
    ("camera.video.record", "camera", _CAMERA, "Record a 5 second video.",
     [("tap", {"x": 700, "y": 1880}), ("tap", {"x": 540, "y": 2120}), ("tap", {"x": 540, "y": 2120}),
      ("screenshot", {})], 2, ["new_video_in_gallery", "video_length_4_6s"]),
    ("calendar.event.create", "calendar", _CALENDAR, "Add a calendar event 'Dentist' tomorrow at 3 PM.",
     [("tap", {"x": 940, "y": 2100}), ("tap", {"x": 540, "y": 300}), ("type_text", {"text": "Dentist"}),
      ("tap", {"x": 540, "y": 700}), ("tap", {"x": 700, "y": 1300}), ("tap", {"x": 960, "y": 150}),
      ("get_ui_tree", {})], 5, ["event_exists", "event_time_1500"]),
    ("maps.directions.walk", "maps", _MAPS, "Show walking directions to the nearest pharmacy.",
     [("tap", {"x": 540, "y": 200}), ("type_text", {"text": "pharmacy"}), ("press_key", {"key": "ENTER"}),
      ("tap", {"x": 540, "y": 900}), ("tap", {"x": 300, "y": 1500}), ("tap", {"x": 620, "y": 400}),
      ("screenshot", {})], 5, ["directions_mode_walk"]),
    ("mail.compose.send", "mail", _GMAIL, "Email alex@example.com with subject 'Notes' and body 'Attached soon'.",
     [("tap", {"x": 900, "y": 2100}), ("type_text", {"text": "alex@example.com"}), ("tap", {"x": 540, "y": 600}),
      ("type_text", {"text": "Notes"}), ("tap", {"x": 540, "y": 800}), ("type_text", {"text": "Attached soon"}),
      ("tap", {"x": 960, "y": 150})], 6, ["mail_sent", "subject_matches"]),
]

_PACKAGE_RESULT = "launched {}"
_WANDER = [
    ("scroll", {"direction": "down"}), ("get_ui_tree", {}), ("go_back", {}), ("tap", {"x": 540, "y": 980}),
    ("scroll", {"direction": "up"}), ("screenshot", {}), ("swipe", {"x1": 540, "y1": 1600, "x2": 540, "y2": 600}),
    ("long_press", {"x": 540, "y": 760}), ("get_screen_text", {}),
]
_MISSING_LABELS = ("Save", "More options", "Search", "Next", "OK", "Allow")
_DEVICE_DURATION = {"launch_app": 950, "type_text": 600, "open_url": 800, "swipe": 420, "scroll": 380,
                    "long_press": 700}  # median ms; other device actions 260
_DEVICE_ERRORS = ("device offline", "adb: connection reset", "input injection timed out")
_READ_ONLY_RESULT = {"screenshot": "screenshot captured", "get_ui_tree": "ui tree: 41 nodes",
                     "get_screen_text": "(screen text)", "list_apps": "42 apps"}
#: Device actions and read-only tools of the run format (section 5), as the simulated agent knows them.
_DEVICE_TOOLS = frozenset(("tap", "long_press", "swipe", "scroll", "type_text", "press_key", "launch_app",
                           "open_url", "go_back", "go_home"))


@dataclass(frozen=True)
class _Task:
    index: int
    task_id: str
    app: str
    package: str
    prompt: str
    steps: tuple
    critical: int
    assertions: tuple
    planned: int
    p_success: float
    skipped: bool


def _catalogue_task(i: int) -> tuple:
    base = _CATALOGUE[i % len(_CATALOGUE)]
    cycle = i // len(_CATALOGUE)
    return base if cycle == 0 else (f"{base[0]}.v{cycle + 1}",) + base[1:]


# --------------------------------------------------------------------------- drawing


def _rng(seed: int, *parts: object) -> random.Random:
    """A stream of its own for each part of the run (string seeds hash with SHA-512)."""
    return random.Random("/".join(["capbench-sim", str(seed), *map(str, parts)]))


def _lognormal_ms(rng: random.Random, median: float, sigma: float) -> int:
    return max(1, int(round(rng.lognormvariate(math.log(median), sigma))))


@dataclass
class _Attempt:
    """Everything the simulator drew for one attempt: the single source of artifacts and truth."""

    task: _Task
    attempt: int
    cause: str
    setup_ms: int | None
    setup_failed: bool
    started: bool
    wall_ms: int | None
    # the trajectory (started attempts): LLM calls with their tool call, episode events
    calls: list  # [{"tool", "args", "result", "input", "output", "cached", "reasoning"}]; tool None = final answer
    events: list  # episode events, in order
    device_ms: int  # sum of end - start over device action events with both set
    device_error_events: list  # indices into events
    tool_errors: int
    replans: int
    screenshots: list | None  # capture_ms per screenshot, None for one without capture time
    ttft_ms: float | None
    recovery: str  # "none" | "missing" | "ok" | "failed"
    hard: list  # [(name, passed)]
    judge_status: str | None  # "ok" | "error" | None (disabled)
    verdict: str | None
    judge_score: float | None
    quality: float | None
    success: bool
    episode: bool
    history: bool
    history_usage: bool
    rm_gap: str | None  # run_metrics key that is missing
    rm_gap_absent: bool  # the gap is an absent key (else null)


def _plan(tasks: int, repeats: int, seed: int, opt: SimulationOptions) -> tuple[list[_Task], dict]:
    rng = _rng(seed, "plan")
    order = list(range(tasks))
    short = set(rng.sample(order, opt.short_tasks))
    pool = [i for i in order if i not in short] if tasks - len(short) >= opt.empty_tasks else order
    empty = set(rng.sample(pool, opt.empty_tasks))
    ran = [i for i in order if i not in empty]
    chosen = rng.sample(ran, opt.missing_attempts + opt.extra_attempts)
    missing, extra = set(chosen[: opt.missing_attempts]), set(chosen[opt.missing_attempts:])
    out = []
    for i in order:
        task_id, app, package, prompt, steps, critical, assertions = _catalogue_task(i)
        trng = _rng(seed, "task", i)
        p = round(trng.betavariate(opt.success_alpha, opt.success_beta), 4)
        skipped = trng.random() < opt.skip_rate
        out.append(_Task(i, task_id, app, package, prompt, tuple(steps), critical, tuple(assertions),
                         repeats - 1 if i in short else repeats, p, skipped))
    shape = {"short": short, "empty": empty, "missing": missing, "extra": extra}
    return out, shape


def _draw_attempt(task: _Task, attempt: int, seed: int, opt: SimulationOptions) -> _Attempt:
    rng = _rng(seed, "attempt", task.index, attempt)
    u = rng.random()
    agent_ok = rng.random() < task.p_success  # drawn for every attempt; decides only where the agent is judged
    mode = rng.random()
    cut = 0.0

    def band(rate: float) -> bool:
        nonlocal cut
        lo, cut = cut, cut + rate
        return lo <= u < cut

    if task.skipped:
        cause = "skipped"
    elif band(opt.setup_failure_rate):
        cause = "setup_failed"
    elif band(opt.provider_unavailable_rate):
        cause = "provider_unavailable"
    elif band(opt.not_started_rate):
        cause = "not_started"
    elif band(opt.crash_rate):
        cause = "crashed"
    elif opt.judge and band(opt.judge_error_rate):
        cause = "judge_error"
    elif agent_ok:
        cause = "success_after_device_error" if mode < opt.transient_device_error_rate else "success"
    elif mode < opt.timeout_rate:
        cause = "timeout"
    elif mode < opt.timeout_rate + opt.device_error_rate:
        cause = "device_error"
    else:
        cause = "wrong_outcome"

    a = _Attempt(task=task, attempt=attempt, cause=cause, setup_ms=None, setup_failed=False, started=False,
                 wall_ms=None, calls=[], events=[], device_ms=0, device_error_events=[], tool_errors=0, replans=0,
                 screenshots=None, ttft_ms=None, recovery="none", hard=[], judge_status=None, verdict=None,
                 judge_score=None, quality=None, success=False, episode=False, history=False, history_usage=False,
                 rm_gap=None, rm_gap_absent=False)
    if cause != "skipped":
        if cause == "setup_failed":
            a.setup_failed = True
            a.setup_ms = _lognormal_ms(rng, 14_000, 0.5)
        else:
            a.setup_ms = _lognormal_ms(rng, 3_200, 0.35)
    if rng.random() < opt.recovery_key_missing_rate:
        a.recovery = "missing"
    if cause in ("skipped", "setup_failed", "provider_unavailable", "not_started"):
        return a

    a.started = True
    _play(a, rng, opt, agent_ok)

    # evaluation
    if cause == "crashed":
        pass
    else:
        names = task.assertions
        if cause == "judge_error":
            hard_ok = agent_ok
            a.hard = [(n, hard_ok or i < len(names) - 1) for i, n in enumerate(names)]
            a.judge_status = "error"
        elif agent_ok:
            a.hard = [(n, True) for n in names]
            if opt.judge:
                a.judge_status, a.verdict = "ok", "pass"
                a.judge_score = round(rng.uniform(0.7, 1.0), 2)
            a.success = True
        else:
            r = rng.random()
            hard_fails = not opt.judge or r < 0.75
            a.hard = [(n, not hard_fails or i < len(names) - 1) for i, n in enumerate(names)]
            if opt.judge:
                fooled = hard_fails and r >= 0.6  # the judge passes what the hard assertions fail
                a.judge_status, a.verdict = "ok", "pass" if fooled else "fail"
                a.judge_score = round(rng.uniform(0.6, 0.85) if fooled else rng.uniform(0.02, 0.55), 2)
        if a.judge_status == "error":
            a.quality = None
        elif opt.judge:
            a.quality = a.judge_score
        else:
            a.quality = round(sum(p for _, p in a.hard) / len(a.hard), 4)
        if cause == "timeout":
            a.recovery = a.recovery if a.recovery == "missing" else (
                "ok" if rng.random() < opt.recovery_success_rate else "failed")

    # which sources the runtime and runner kept
    a.episode = rng.random() >= (0.5 if cause == "crashed" else opt.episode_missing_rate)
    a.history = rng.random() >= opt.history_missing_rate
    a.history_usage = rng.random() >= opt.history_usage_missing_rate
    if rng.random() < opt.run_metrics_gap_rate:
        a.rm_gap = rng.choice(_RUN_METRICS_KEYS)
        a.rm_gap_absent = rng.random() < 0.5
    if a.screenshots and rng.random() < opt.screenshot_gap_rate:
        a.screenshots[rng.randrange(len(a.screenshots))] = None
    return a


def _play(a: _Attempt, rng: random.Random, opt: SimulationOptions, agent_ok: bool) -> None:
    """Play the trajectory on a simulated clock: LLM calls, tool calls, device actions, events."""
    task, cause = a.task, a.cause
    golden = [("launch_app", {"package": task.package}, _PACKAGE_RESULT.format(task.package))] + [
        s if len(s) == 3 else (s[0], s[1], None) for s in task.steps]
    critical = task.critical + 1
    timeout = cause == "timeout"
    tool_error_rate = opt.tool_error_rate * (1 if agent_ok else 2)

    def wander(n: int) -> list:
        return [_WANDER[rng.randrange(len(_WANDER))] + (None,) for _ in range(n)]

    if agent_ok and cause in ("success", "success_after_device_error", "judge_error"):
        plan = golden + wander(rng.choice((0, 0, 0, 1, 2)))
    elif cause == "device_error":
        plan = golden[: critical + 1]
    elif timeout:
        plan = golden[:2] + wander(60)
    elif cause == "crashed":
        plan = golden[: 1 + rng.randrange(len(golden))]
    else:  # wrong outcome (or a judge error on a failed attempt): misses the critical step, wanders
        plan = golden[:critical] + wander(rng.randint(1, 4)) + golden[critical + 1:]
    # the critical device action errors; the agent retries it (after a transient error, successfully)
    fail_at = critical if cause in ("success_after_device_error", "device_error") else None
    retry = cause == "success_after_device_error" or (cause == "device_error" and rng.random() < 0.3)

    t = 0
    a.ttft_ms = round(rng.lognormvariate(math.log(650), 0.3), 1)
    base_input = rng.randint(1_700, 2_600)
    per_turn = rng.randint(110, 180)
    latency_median = 16_000 if timeout else 2_300
    prev_input = 0
    shots: list = [_lognormal_ms(rng, 110, 0.3)]  # the runner's first screenshot, before the prompt

    def llm(tool, args, result) -> dict:
        nonlocal t, prev_input
        t += _lognormal_ms(rng, latency_median, 0.35)
        n = len(a.calls)
        inp = base_input + n * per_turn + rng.randint(0, 90)
        call = {"tool": tool, "args": args, "result": result, "input": inp,
                "output": rng.randint(30, 90) if tool is None else rng.randint(45, 230),
                "cached": (prev_input // 128) * 128, "reasoning": rng.randint(0, 600) if opt.reasoning_tokens else None}
        prev_input = inp
        a.calls.append(call)
        return call

    def device(name, cid, error: bool) -> None:
        nonlocal t
        start = t + rng.randint(5, 40)
        if error:
            dur = _lognormal_ms(rng, 5_000, 0.2)
            end = start + dur if rng.random() < 0.5 else None
            a.device_error_events.append(len(a.events))
            a.events.append({"type": "device_action", "name": name, "call_id": cid, "start_ms": start,
                             "end_ms": end, "status": "error", "error": rng.choice(_DEVICE_ERRORS)})
            if end is not None:
                a.device_ms += end - start
            t = start + dur
            replan()
        else:
            dur = _lognormal_ms(rng, _DEVICE_DURATION.get(name, 260), 0.4)
            a.events.append({"type": "device_action", "name": name, "call_id": cid, "start_ms": start,
                             "end_ms": start + dur, "status": "ok"})
            a.device_ms += dur
            t = start + dur
            shots.append(_lognormal_ms(rng, 110, 0.3))

    def replan() -> None:
        nonlocal t
        t += rng.randint(80, 400)
        a.events.append({"type": "replan", "t_ms": t})
        a.replans += 1

    for i, (name, args, result) in enumerate(plan):
        if timeout and t >= opt.timeout_ms - 20_000:
            break
        if i > 0 and rng.random() < tool_error_rate:  # a tap on an element that is not on screen
            label = rng.choice(_MISSING_LABELS)
            llm("tap", {"text": label}, f"error: element not found: {label}")
            t += rng.randint(100, 500)
            a.events.append({"type": "tool_error", "call_id": f"c{len(a.calls)}",
                             "message": f"element not found: {label}"})
            a.tool_errors += 1
            replan()
        call = llm(name, args, None)
        if name not in _DEVICE_TOOLS:
            t += _lognormal_ms(rng, 300, 0.5)
            call["result"] = result or _READ_ONLY_RESULT[name]
        elif i != fail_at:
            device(name, f"c{len(a.calls)}", error=False)
            call["result"] = result or "ok"
        else:
            device(name, f"c{len(a.calls)}", error=True)
            call["result"] = "error: device action failed"
            if retry:
                again = llm(name, args, None)
                ok = cause == "success_after_device_error"
                device(name, f"c{len(a.calls)}", error=not ok)
                again["result"] = (result or "ok") if ok else "error: device action failed"
            if cause == "device_error":
                break  # the agent gives up

    if cause == "crashed":
        a.wall_ms = t + rng.randint(100, 800)
    elif timeout:
        a.wall_ms = opt.timeout_ms + rng.randint(5, 250)
    else:
        llm(None, None, None)  # the final answer
        a.wall_ms = t + rng.randint(200, 900)
    a.screenshots = shots


# --------------------------------------------------------------------------- artifacts


def _attempt_doc(a: _Attempt, opt: SimulationOptions) -> dict:
    doc: dict[str, Any] = {"task_id": a.task.task_id, "attempt": a.attempt}
    if a.cause == "skipped":
        doc["setup"] = None
    else:
        doc["setup"] = {"status": "failed" if a.setup_failed else "ok", "duration_ms": a.setup_ms,
                        "error": "adb: device not found after reboot" if a.setup_failed else None}
    unavailable = a.cause == "provider_unavailable"
    doc["provider"] = {"available": not unavailable, "error": "HTTP 503 after 3 retries" if unavailable else None}
    doc["skip"] = {"reason": "task needs telephony; the device has no SIM"} if a.cause == "skipped" else None
    if not a.started:
        doc["agent"] = {"status": "not_started", "task_wall_ms": None}
    else:
        status = {"crashed": "crashed", "timeout": "timeout"}.get(a.cause, "completed")
        doc["agent"] = {"status": status, "task_wall_ms": a.wall_ms}
    if a.recovery != "missing":
        doc["recovery"] = None if a.recovery == "none" else {"attempted": True, "succeeded": a.recovery == "ok"}
    if a.screenshots is not None:
        doc["screenshots"] = [{"capture_ms": ms} if ms is not None else {"error": "capture timed out"}
                              for ms in a.screenshots]
    if not a.started or a.cause == "crashed":
        doc["evaluation"] = None
    else:
        judge = None
        if opt.judge:
            if a.judge_status == "error":
                judge = {"status": "error", "verdict": None, "score": None, "error": "judge request timed out"}
            else:
                judge = {"status": "ok", "verdict": a.verdict, "score": a.judge_score, "error": None}
        doc["evaluation"] = {"judge_enabled": opt.judge,
                             "hard_assertions": [{"name": n, "passed": p} for n, p in a.hard],
                             "judge": judge, "quality_score": a.quality}
    return doc


def _episode_doc(a: _Attempt) -> dict:
    calls = a.calls
    rm: dict[str, Any] = {
        "input_tokens": sum(c["input"] for c in calls),
        "output_tokens": sum(c["output"] for c in calls),
    }
    rm["total_tokens"] = rm["input_tokens"] + rm["output_tokens"]
    rm["cached_input_tokens"] = sum(c["cached"] for c in calls)
    rm["reasoning_tokens"] = None if calls[0]["reasoning"] is None else sum(c["reasoning"] for c in calls)
    rm["time_to_first_token_ms"] = a.ttft_ms
    if a.rm_gap is not None:
        if a.rm_gap_absent:
            del rm[a.rm_gap]
        else:
            rm[a.rm_gap] = None
    return {"run_metrics": rm, "events": a.events}


def _history_doc(a: _Attempt) -> dict:
    messages: list[dict] = [{"role": "user", "content": a.task.prompt}]
    for i, call in enumerate(a.calls, start=1):
        msg: dict[str, Any] = {"role": "assistant", "content": "" if call["tool"] else _final_text(a)}
        if a.history_usage:
            msg["usage"] = {"input_tokens": call["input"], "output_tokens": call["output"]}
        if call["tool"]:
            msg["tool_calls"] = [{"id": f"c{i}", "name": call["tool"], "arguments": call["args"]}]
        messages.append(msg)
        if call["tool"]:
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": call["result"]})
    return {"messages": messages}


def _final_text(a: _Attempt) -> str:
    return "Done." if a.cause.startswith("success") or a.cause == "judge_error" else "I could not complete the task."


def _artifacts(a: _Attempt, opt: SimulationOptions) -> dict[str, dict]:
    files = {ATTEMPT: _attempt_doc(a, opt)}
    if a.started and a.episode:
        files[EPISODE] = _episode_doc(a)
    if a.started and a.history:
        files[HISTORY] = _history_doc(a)
    return files


# --------------------------------------------------------------------------- truth


def _truth_record(a: _Attempt, opt: SimulationOptions, *, with_artifacts: bool) -> dict:
    """The record a correct derivation gives, from the simulator's own draws (never from the artifacts)."""
    cause = a.cause
    episode, history = a.started and a.episode, a.started and a.history
    stage, evidence, quality = None, [], None
    if cause == "skipped":
        success, eligible, fclass = False, False, "skipped"
    elif cause in ("setup_failed", "provider_unavailable", "not_started"):
        success, eligible, fclass = False, False, "environment"
        if cause == "setup_failed":
            stage, evidence = "setup", [f"{ATTEMPT}#/setup"]
    elif cause == "crashed":
        success, eligible, fclass = False, False, "unknown"
    elif cause == "judge_error":
        success, eligible, fclass = False, False, "evaluation"
        stage, evidence = "evaluation", [f"{ATTEMPT}#/evaluation/judge"]
    elif a.success:
        success, eligible, fclass, quality = True, True, "", a.quality
    else:
        success, eligible, fclass, quality = False, True, "agent", a.quality
        if episode and a.device_error_events:
            stage, evidence = "device_execution", [f"{EPISODE}#/events/{i}" for i in a.device_error_events]
    if not with_artifacts:
        stage, evidence = None, []

    tel: dict[str, Any] = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(name: str, value: Any, source: str) -> None:
        if value is not None:
            tel[name], src[name] = value, source

    put("task_wall_ms", a.wall_ms, f"{ATTEMPT}#/agent/task_wall_ms")
    put("setup_ms", a.setup_ms, f"{ATTEMPT}#/setup/duration_ms")
    tool_calls = [c for c in a.calls if c["tool"] is not None]
    if history:
        put("tool_calls", len(tool_calls), f"{HISTORY}#/messages")
        put("device_actions", sum(c["tool"] in _DEVICE_TOOLS for c in tool_calls), f"{HISTORY}#/messages")
        put("llm_calls", len(a.calls) if a.history_usage else 0, f"{HISTORY}#/messages")
    drawn = {
        "input_tokens": sum(c["input"] for c in a.calls),
        "output_tokens": sum(c["output"] for c in a.calls),
        "cached_input_tokens": sum(c["cached"] for c in a.calls),
        "reasoning_tokens": sum(c["reasoning"] for c in a.calls) if opt.reasoning_tokens else None,
        "time_to_first_token_ms": a.ttft_ms,
    }
    drawn["total_tokens"] = drawn["input_tokens"] + drawn["output_tokens"]
    for key in _TOKEN_KEYS:
        if episode and a.rm_gap != key:
            put(key, drawn[key], f"{EPISODE}#/run_metrics/{key}")
        elif history and a.history_usage:
            put(key, drawn[key], f"{HISTORY}#/messages")
    for key in ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms"):
        if episode and a.rm_gap != key:
            put(key, drawn[key], f"{EPISODE}#/run_metrics/{key}")
    if episode:
        put("device_execution_ms", a.device_ms, f"{EPISODE}#/events")
        put("tool_errors", a.tool_errors, f"{EPISODE}#/events")
        put("replan_count", a.replans, f"{EPISODE}#/events")
    if a.screenshots is not None and None not in a.screenshots:
        put("screenshot_capture_ms", sum(a.screenshots), f"{ATTEMPT}#/screenshots")
    if a.recovery == "none":
        put("recovery_attempted", False, f"{ATTEMPT}#/recovery")
    elif a.recovery in ("ok", "failed"):
        put("recovery_attempted", True, f"{ATTEMPT}#/recovery/attempted")
        put("recovery_succeeded", a.recovery == "ok", f"{ATTEMPT}#/recovery/succeeded")

    cost = cost_source = None
    table = opt.price_table
    if table is not None and opt.model in table.models and tel["input_tokens"] is not None \
            and tel["output_tokens"] is not None:
        prices = table.models[opt.model]
        cached = min(tel["cached_input_tokens"] or 0, tel["input_tokens"])
        cost = round((tel["input_tokens"] - cached) * prices["input"]
                     + cached * prices.get("cached_input", prices["input"])
                     + tel["output_tokens"] * prices["output"], 12)
        cost_source = f"{table.name}@{table.version}"
    return {
        "task_id": a.task.task_id,
        "attempt": a.attempt,
        "artifact_dir": _artifact_dir(a) if with_artifacts else None,
        "success": success,
        "agent_eligible": eligible,
        "failure_class": fclass,
        "failure_stage": stage,
        "evidence": evidence,
        "quality_score": quality,
        "telemetry": tel,
        "telemetry_source": src,
        "cost": cost,
        "cost_source": cost_source,
    }


def _artifact_dir(a: _Attempt) -> str:
    return f"attempts/{a.task.task_id}/{a.attempt}"


def _derived_record(a: _Attempt, opt: SimulationOptions, files: dict) -> dict:
    """The record of a runner that writes results.jsonl itself, by the toolkit's derivation rules.

    It keeps no artifacts, so it can cite no evidence and sets no stage.
    """
    outcome = classify(files[ATTEMPT], files.get(EPISODE), judge_default=opt.judge)
    telemetry, sources = extract_telemetry(files[ATTEMPT], files.get(EPISODE), files.get(HISTORY))
    cost, cost_source = price_cost(telemetry, opt.model, opt.price_table)
    return {
        "task_id": files[ATTEMPT]["task_id"],
        "attempt": files[ATTEMPT]["attempt"],
        "artifact_dir": None,
        "success": outcome.success,
        "agent_eligible": outcome.agent_eligible,
        "failure_class": outcome.failure_class,
        "failure_stage": None,
        "evidence": [],
        "quality_score": outcome.quality_score,
        "telemetry": telemetry,
        "telemetry_source": sources,
        "cost": cost,
        "cost_source": cost_source,
    }


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class SimulatedRun:
    """A simulated run in memory: the manifest, the truth document and the draws."""

    manifest: dict
    truth: dict
    options: SimulationOptions
    attempts: tuple  # of _Attempt, sorted by task_id then attempt


def _sort_key(task_id: str, attempt: int) -> tuple:
    return (task_id.encode("utf-8", "surrogatepass"), attempt)


def build_run(*, tasks: int, repeats: int, seed: int, artifacts: bool = False, **options: Any) -> SimulatedRun:
    """Draw a run without touching the disk (see :func:`simulate_run` for the arguments)."""
    if type(tasks) is not int or tasks < 1:
        raise ValueError(f"tasks must be an integer >= 1, got {tasks!r}")
    if type(repeats) is not int or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be an integer, got {seed!r}")
    try:
        opt = SimulationOptions(**options)
    except TypeError:
        known = ", ".join(f.name for f in fields(SimulationOptions))
        unknown = sorted(set(options) - {f.name for f in fields(SimulationOptions)})
        raise TypeError(f"unknown simulation option(s) {unknown}; known: {known}") from None
    opt.check(tasks, repeats)
    plan_tasks, shape = _plan(tasks, repeats, seed, opt)

    drawn: list[_Attempt] = []
    task_truth = []
    for task in plan_tasks:
        if task.index in shape["empty"]:
            numbers: list[int] = []
        else:
            last = task.planned - (1 if task.index in shape["missing"] else 0)
            numbers = list(range(1, last + 1)) + ([task.planned + 1] if task.index in shape["extra"] else [])
        missing = [n for n in range(1, task.planned + 1) if n not in numbers]
        task_truth.append({"task_id": task.task_id, "app": task.app, "planned_repeats": task.planned,
                           "p_success": task.p_success, "skipped": task.skipped,
                           "attempts": numbers, "missing_attempts": missing})
        drawn.extend(_draw_attempt(task, n, seed, opt) for n in numbers)
    drawn.sort(key=lambda a: _sort_key(a.task.task_id, a.attempt))

    partial = bool(shape["missing"] or shape["empty"])
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": f"sim-{seed}",
        "suite": {"name": "mobile-core-sim", "version": "2026.11"},
        "created_at": CREATED_AT,
        "status": "partial" if partial else "completed",
        "runner": {"name": "capbench-nb-simulator", "version": SIMULATOR_VERSION},
        "config": {"model": opt.model, "provider": opt.provider, "platform": opt.platform, "judge": opt.judge},
        "plan": {
            "repeats_override": None,
            "k": min(t.planned for t in plan_tasks),
            "tasks": [{"task_id": t.task_id, "repeats": t.planned, "app": t.app, "platform": opt.platform}
                      for t in plan_tasks],
        },
    }
    attempts_truth = []
    for a in drawn:
        files = [ATTEMPT] + ([EPISODE] if a.started and a.episode else []) + ([HISTORY] if a.started and a.history else [])
        attempts_truth.append({
            "task_id": a.task.task_id,
            "attempt": a.attempt,
            "above_planned_repeats": a.attempt > a.task.planned,
            "cause": a.cause,
            "files": files if artifacts else [],
            "record": _truth_record(a, opt, with_artifacts=artifacts),
        })
    truth = {
        "schema_version": TRUTH_SCHEMA_VERSION,
        "simulator_version": SIMULATOR_VERSION,
        "parameters": {"tasks": tasks, "repeats": repeats, "seed": seed, "artifacts": artifacts, **opt.as_json()},
        "causes": CAUSES,
        "tasks": task_truth,
        "attempts": attempts_truth,
    }
    return SimulatedRun(manifest=manifest, truth=truth, options=opt, attempts=tuple(drawn))


def _dump_lines(doc: dict) -> str:
    """JSON with one top-level key per line and one list element per line: readable, and small."""
    parts = []
    for key, value in doc.items():
        head = json.dumps(key, ensure_ascii=False) + ": "
        if isinstance(value, list) and value:
            items = ",\n".join("    " + _compact(item) for item in value)
            parts.append(f"  {head}[\n{items}\n  ]")
        else:
            parts.append("  " + head + _compact(value))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def simulate_run(
    out_dir: str | os.PathLike,
    *,
    tasks: int,
    repeats: int,
    seed: int,
    artifacts: bool = False,
    **options: Any,
) -> Path:
    """Write a realistic, seeded run directory and its ground truth ``simulation.json``.

    Parameters
    ----------
    out_dir : path-like
        The run directory to create; it may exist only if empty.
    tasks, repeats : int
        Planned tasks and planned repeats per task (>= 1).
    seed : int
        The only source of randomness: the same arguments give byte-identical files.
    artifacts : bool, default False
        Write ``attempts/<task_id>/<attempt>/`` (attempt.json, and episode.json
        and history.json when kept) and no results.jsonl: derive it with
        ``capbench-nb ingest``.  Without, write results.jsonl directly.
    **options
        Keyword-only options, see :class:`SimulationOptions` (rates, plan
        shape ``short_tasks``, ``missing_attempts``, ``empty_tasks``,
        ``extra_attempts``, and ``price_table``).

    Returns
    -------
    Path
        ``out_dir``.

    Raises
    ------
    InvalidRunError
        ``out_dir`` exists and is not an empty directory (rule ``output-exists``).
    ValueError, TypeError
        Bad arguments or an unknown option.
    """
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidRunError(str(out), "output-exists",
                              "the output exists and is not an empty directory; give a new run directory")
    run = build_run(tasks=tasks, repeats=repeats, seed=seed, artifacts=artifacts, **options)
    opt = run.options
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "manifest.json", json.dumps(run.manifest, ensure_ascii=False, indent=2) + "\n")
    if artifacts:
        for a in run.attempts:
            for name, doc in _artifacts(a, opt).items():
                _write(out / _artifact_dir(a) / name, _dump_lines(doc))
    else:
        from capbench_nb.records.ingest import record_line  # the line format ingest writes

        lines = [record_line(_derived_record(a, opt, _artifacts(a, opt))) for a in run.attempts]
        _write(out / "results.jsonl", "".join(lines))
    _write(out / TRUTH_FILE, _dump_lines(run.truth))
    return out


# --------------------------------------------------------------------------- expected values


def expected_metrics(truth: dict) -> dict:
    """Headline numbers of a simulated run, counted by hand from its truth records (spec sections 6 and 8).

    Returns ``k``, ``tasks`` (planned, observed), ``attempts`` (total, eligible,
    by_failure_class), ``pass@1``, ``pass@k``, ``pass^k`` as ``(successes, n)``,
    and ``anomalies`` as ``[(task_id, attempt)]`` in results.jsonl order.
    """
    plan = {t["task_id"]: t["planned_repeats"] for t in truth["tasks"]}
    k = min(plan.values())
    counted = [x["record"] for x in truth["attempts"] if x["attempt"] <= plan[x["task_id"]]]
    by_task: dict[str, dict[int, dict]] = {t: {} for t in plan}
    for r in counted:
        by_task[r["task_id"]][r["attempt"]] = r
    classes = dict.fromkeys(CLASS_KEYS, 0)
    for r in counted:
        classes["success" if r["success"] else r["failure_class"]] += 1
    p1 = [recs[1]["success"] for recs in by_task.values() if 1 in recs and recs[1]["agent_eligible"]]
    keligible = [[recs[i]["success"] for i in range(1, k + 1)] for recs in by_task.values()
                 if all(i in recs and recs[i]["agent_eligible"] for i in range(1, k + 1))]
    return {
        "k": k,
        "tasks": {"planned": len(plan), "observed": sum(1 for recs in by_task.values() if recs)},
        "attempts": {"total": len(counted), "eligible": sum(r["agent_eligible"] for r in counted),
                     "by_failure_class": classes},
        "pass@1": (sum(p1), len(p1)),
        "pass@k": (sum(any(s) for s in keligible), len(keligible)),
        "pass^k": (sum(all(s) for s in keligible), len(keligible)),
        "anomalies": [(x["task_id"], x["attempt"]) for x in truth["attempts"] if x["attempt"] > plan[x["task_id"]]],
    }


def _md(value: Any) -> str:
    text = "null" if value is None else str(value)
    for ch in ("\\", "|", "`", "*", "<"):
        text = text.replace(ch, "\\" + ch)
    return text


def describe_run(run_dir: str | os.PathLike, *, command: str, title: str | None = None) -> str:
    """A Markdown description of a simulated run for checking its metrics by hand.

    Lists the plan, every task's latent success probability and attempts,
    every record's outcome and key telemetry, and the expected headline
    numbers (:func:`expected_metrics`), all read from ``simulation.json``.
    """
    run_dir = Path(run_dir)
    truth = json.loads((run_dir / TRUTH_FILE).read_text(encoding="utf-8"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    exp = expected_metrics(truth)
    params = truth["parameters"]
    plan = {t["task_id"]: t for t in truth["tasks"]}
    by_key = {(x["task_id"], x["attempt"]): x for x in truth["attempts"]}
    letters = {"": "S", "agent": "A", "environment": "E", "evaluation": "V", "skipped": "K", "unknown": "U"}
    k = exp["k"]

    def code(x: dict) -> str:
        r = x["record"]
        c = letters[r["failure_class"]] + ("" if r["agent_eligible"] else "*")
        return f"{x['attempt']}:{c}" + ("!" if x["above_planned_repeats"] else "")

    defaults = {f.name: f.default for f in fields(SimulationOptions)}
    changed = {key: value for key, value in params.items()
               if key in defaults and key != "price_table" and value != defaults[key]}
    price = params.get("price_table")
    counted_records = exp["attempts"]["total"]
    total_records = len(truth["attempts"])
    lines = [
        f"# {title or 'Simulated run'}: `{manifest['run_id']}`",
        "",
        f"Written by the capbench-nb simulator (version {truth['simulator_version']}): "
        f"{params['tasks']} tasks x {params['repeats']} repeats, seed {params['seed']}, model "
        f"`{manifest['config']['model']}` on `{manifest['config']['platform']}`, judge "
        f"{'enabled' if manifest['config']['judge'] else 'disabled'}. Status `{manifest['status']}`.",
        "Options other than the defaults: "
        + (", ".join(f"`{key}={value}`" for key, value in changed.items()) or "none")
        + (f"; price table `{price['name']}@{price['version']}`." if price else "."),
        "",
        "`simulation.json` is the ground truth: every task's latent success probability and, per attempt,",
        "what happened (`cause`) and the record the derivation must give. "
        + ("`results.jsonl` was derived from the attempt directories by `capbench-nb ingest`."
           if params["artifacts"] else "`results.jsonl` was written directly (no artifacts)."),
        "",
        "Regenerate (deterministic, byte-identical; the directory is deleted and recreated):",
        "",
        "```",
        command,
        "```",
        "",
        f"Plan: {len(plan)} tasks; planned repeats "
        + ", ".join(f"{n} for {sum(t['planned_repeats'] == n for t in plan.values())}"
                    for n in sorted({t['planned_repeats'] for t in plan.values()}, reverse=True))
        + f", so `plan.k` = {k}. `results.jsonl` has {total_records} records sorted by task_id then attempt;",
        f"{counted_records} are within their task's planned repeats. Plan order (= `per_task` order) is the",
        "order of the first table.",
        "",
        "## Tasks",
        "",
        "Attempts: `S` success, `A` agent, `E` environment, `V` evaluation, `K` skipped, `U` unknown;",
        "`*` not agent-eligible; `-` missing (planned, never ran); `!` above planned repeats (anomaly,",
        "enters no metric). p = the task's latent success probability.",
        "",
        "| task_id | app | planned | p | attempts | causes |",
        "|---|---|---|---|---|---|",
    ]
    for t in truth["tasks"]:
        cells = []
        causes = []
        for n in range(1, max([t["planned_repeats"]] + t["attempts"]) + 1):
            x = by_key.get((t["task_id"], n))
            cells.append(code(x) if x else f"{n}:-")
            if x and x["cause"] != "success":
                causes.append(f"{n}: {x['cause']}")
        lines.append(f"| `{t['task_id']}` | {t['app']} | {t['planned_repeats']} | {t['p_success']} | "
                     f"{' '.join(cells)} | {_md('; '.join(causes)) if causes else '-'} |")
    lines += [
        "",
        "## Records",
        "",
        "Files: `a` attempt.json, `e` episode.json, `h` history.json. Missing sources make telemetry",
        "null (never 0): without history.json `tool_calls`, `device_actions` and `llm_calls` are null;",
        "without episode.json the event fields are, and tokens come from history.json when it has `usage`.",
        "Notes list the null telemetry fields of attempts whose agent ran (`reasoning_tokens` is null",
        "throughout when the model does not report it; `recovery_succeeded` is null when no recovery was",
        "attempted) and the runner's timeout recovery.",
        "",
        "| task_id | attempt | files | class | stage | evidence | quality | task_wall_ms | total_tokens | cost | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in truth["attempts"]:
        r = x["record"]
        cls = "success" if r["success"] else r["failure_class"] + ("" if r["agent_eligible"] else " (inelig.)")
        files = " ".join(name[0] for name in x["files"]) or "-"
        tel = r["telemetry"]
        notes = []
        if tel["task_wall_ms"] is None:
            notes.append("agent did not run")
        else:
            nulls = [f for f in TELEMETRY_FIELDS if tel[f] is None
                     and not (f == "reasoning_tokens" and not params["reasoning_tokens"])
                     and not (f == "recovery_succeeded" and tel["recovery_attempted"] is False)]
            if nulls:
                notes.append("null: " + ", ".join(nulls))
        if tel["recovery_attempted"]:
            notes.append("recovery " + ("succeeded" if tel["recovery_succeeded"] else "failed"))
        lines.append(
            f"| `{r['task_id']}` | {r['attempt']}{' !' if x['above_planned_repeats'] else ''} | {files} | {cls} | "
            f"{_md(r['failure_stage'])} | {_md(', '.join(r['evidence'])) if r['evidence'] else '-'} | "
            f"{_md(r['quality_score'])} | {_md(tel['task_wall_ms'])} | {_md(tel['total_tokens'])} | {_md(r['cost'])} | "
            f"{_md('; '.join(notes)) if notes else '-'} |")

    def rate(name: str) -> str:
        x, n = exp[name]
        return f"{x}/{n}" + (f" = {x / n:.4f}" if n else "")

    def mark(value: bool | None) -> str:
        return "-" if value is None else str(int(value))

    lines += [
        "",
        f"## Per task (attempts within planned repeats; k = {k})",
        "",
        "`-` in a metric column: the task is not in that metric's denominator (attempt 1 absent or",
        f"ineligible for pass@1; not k-eligible, i.e. attempts 1..{k} not all present and eligible, for",
        "pass@k and pass^k).",
        "",
        "| task_id | attempts | eligible | successes | first success | pass@1 | k-eligible | pass@k | pass^k |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in truth["tasks"]:
        tid, planned = t["task_id"], t["planned_repeats"]
        recs = {n: by_key[(tid, n)]["record"] for n in range(1, planned + 1) if (tid, n) in by_key}
        first = min((n for n, r in recs.items() if r["success"]), default=None)
        p1 = recs[1]["success"] if 1 in recs and recs[1]["agent_eligible"] else None
        keligible = all(n in recs and recs[n]["agent_eligible"] for n in range(1, k + 1))
        prefix = [recs[n]["success"] for n in range(1, k + 1)] if keligible else None
        lines.append(
            f"| `{tid}` | {len(recs)} | {sum(r['agent_eligible'] for r in recs.values())} | "
            f"{sum(r['success'] for r in recs.values())} | {first if first is not None else '-'} | {mark(p1)} | "
            f"{'yes' if keligible else 'no'} | {mark(None if prefix is None else any(prefix))} | "
            f"{mark(None if prefix is None else all(prefix))} |")

    empty = [t["task_id"] for t in truth["tasks"] if not t["attempts"]]
    partly_run = [t for t in truth["tasks"] if t["missing_attempts"] and t["attempts"]]
    bc = exp["attempts"]["by_failure_class"]
    anomalies = ", ".join(f"`{t}` attempt {n}" for t, n in exp["anomalies"])
    lines += [
        "",
        f"## Expected values (k = {k})",
        "",
        "Counts cover records of planned tasks within planned repeats"
        + (f"; above planned repeats, hence only under `anomalies` (kind `above_planned_repeats`): {anomalies}."
           if exp["anomalies"] else "; there are no anomalies."),
        "",
        f"- tasks: planned {exp['tasks']['planned']}, observed {exp['tasks']['observed']}"
        + (f" (no attempts: {', '.join(f'`{t}`' for t in empty)})" if empty else ""),
        f"- attempts: total {exp['attempts']['total']}, eligible {exp['attempts']['eligible']}",
        "- by_failure_class: " + ", ".join(f"{key} {bc[key]}" for key in CLASS_KEYS),
        "- planned attempts that never ran: "
        + (", ".join(f"`{t['task_id']}` attempt {', '.join(map(str, t['missing_attempts']))}" for t in partly_run)
           or "none"),
        f"- pass@1 = {rate('pass@1')} (coverage {exp['pass@1'][1]}/{len(plan)})",
        f"- pass@k = {rate('pass@k')} (coverage {exp['pass@k'][1]}/{len(plan)})",
        f"- pass^k = {rate('pass^k')} (coverage {exp['pass^k'][1]}/{len(plan)})",
        "",
    ]
    return "\n".join(lines)
