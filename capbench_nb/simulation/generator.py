"""Drawing a simulated run: the task catalogue, the plan, and every attempt's trajectory.

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

A :class:`DrawnAttempt` is the single source of an attempt's artifacts
(:mod:`capbench_nb.simulation.artifacts`) and of its truth record
(:mod:`capbench_nb.simulation.truth`).

Determinism: every random draw comes from a ``random.Random`` seeded with a
string made of the seed and the task and attempt numbers (string seeds are
hashed with SHA-512, independent of ``PYTHONHASHSEED``); nothing reads the clock.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from capbench_nb.format import EPISODE_ONLY_FIELDS, TOKEN_FIELDS
from capbench_nb.simulation.options import SimulationOptions

__all__ = ["CATALOGUE", "DEVICE_TOOLS", "RUN_METRICS_KEYS", "PlannedTask", "DrawnAttempt", "draw_plan",
           "attempt_numbers", "draw_attempt"]

#: The keys of ``episode.json#/run_metrics`` (one of them may go missing).
RUN_METRICS_KEYS = TOKEN_FIELDS + EPISODE_ONLY_FIELDS

# --------------------------------------------------------------------------- task catalogue

# (task_id, app, package, prompt, steps, critical step, assertions, final answer)
# A step is (tool, arguments) or (tool, arguments, tool result).
_SETTINGS, _CLOCK, _CONTACTS = "com.android.settings", "com.google.android.deskclock", "com.google.android.contacts"
_CHROME, _MESSAGING, _CAMERA = "com.android.chrome", "com.google.android.apps.messaging", "com.google.android.GoogleCamera"
_CALENDAR, _MAPS, _GMAIL = "com.google.android.calendar", "com.google.android.apps.maps", "com.google.android.gm"

CATALOGUE = [
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
DEVICE_TOOLS = frozenset(("tap", "long_press", "swipe", "scroll", "type_text", "press_key", "launch_app",
                           "open_url", "go_back", "go_home"))


@dataclass(frozen=True)
class PlannedTask:
    """A task of the simulated plan, with its latent success probability and whether it is skipped."""

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
    base = CATALOGUE[i % len(CATALOGUE)]
    cycle = i // len(CATALOGUE)
    return base if cycle == 0 else (f"{base[0]}.v{cycle + 1}",) + base[1:]


# --------------------------------------------------------------------------- drawing


def _rng(seed: int, *parts: object) -> random.Random:
    """A stream of its own for each part of the run (string seeds hash with SHA-512)."""
    return random.Random("/".join(["capbench-sim", str(seed), *map(str, parts)]))


def _lognormal_ms(rng: random.Random, median: float, sigma: float) -> int:
    return max(1, int(round(rng.lognormvariate(math.log(median), sigma))))


@dataclass
class DrawnAttempt:
    """Everything the simulator drew for one attempt: the single source of artifacts and truth."""

    task: PlannedTask
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


def draw_plan(tasks: int, repeats: int, seed: int, opt: SimulationOptions) -> tuple[list[PlannedTask], dict]:
    """The planned tasks in plan order, and the plan's shape: sets of task indices
    ``short``, ``empty``, ``missing`` and ``extra`` (see :class:`SimulationOptions`)."""
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
        out.append(PlannedTask(i, task_id, app, package, prompt, tuple(steps), critical, tuple(assertions),
                         repeats - 1 if i in short else repeats, p, skipped))
    shape = {"short": short, "empty": empty, "missing": missing, "extra": extra}
    return out, shape


def attempt_numbers(task: PlannedTask, shape: dict) -> list[int]:
    """The attempt numbers of ``task`` that ran, given the plan's shape (:func:`draw_plan`)."""
    if task.index in shape["empty"]:
        return []
    last = task.planned - (1 if task.index in shape["missing"] else 0)
    return list(range(1, last + 1)) + ([task.planned + 1] if task.index in shape["extra"] else [])


def draw_attempt(task: PlannedTask, attempt: int, seed: int, opt: SimulationOptions) -> DrawnAttempt:
    """Draw what happened in one attempt: its cause, setup, trajectory, evaluation and kept sources."""
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

    a = DrawnAttempt(task=task, attempt=attempt, cause=cause, setup_ms=None, setup_failed=False, started=False,
                     wall_ms=None, calls=[], events=[], device_ms=0, device_error_events=[], tool_errors=0, replans=0,
                     screenshots=None, ttft_ms=None, recovery="none", hard=[], judge_status=None, verdict=None,
                     judge_score=None, quality=None, success=False, episode=False, history=False,
                     history_usage=False, rm_gap=None, rm_gap_absent=False)
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
    _evaluate(a, rng, opt, agent_ok)
    _keep_sources(a, rng, opt)
    return a


def _evaluate(a: DrawnAttempt, rng: random.Random, opt: SimulationOptions, agent_ok: bool) -> None:
    """Draw the evaluation of an attempt whose agent ran: hard assertions, judge, quality, recovery."""
    task, cause = a.task, a.cause
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


def _keep_sources(a: DrawnAttempt, rng: random.Random, opt: SimulationOptions) -> None:
    """Draw which telemetry sources the runtime and runner kept."""
    a.episode = rng.random() >= (0.5 if a.cause == "crashed" else opt.episode_missing_rate)
    a.history = rng.random() >= opt.history_missing_rate
    a.history_usage = rng.random() >= opt.history_usage_missing_rate
    if rng.random() < opt.run_metrics_gap_rate:
        a.rm_gap = rng.choice(RUN_METRICS_KEYS)
        a.rm_gap_absent = rng.random() < 0.5
    if a.screenshots and rng.random() < opt.screenshot_gap_rate:
        a.screenshots[rng.randrange(len(a.screenshots))] = None


# long function: the trajectory's steps share one simulated clock and one call list (closures)
def _play(a: DrawnAttempt, rng: random.Random, opt: SimulationOptions, agent_ok: bool) -> None:
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
        if name not in DEVICE_TOOLS:
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
