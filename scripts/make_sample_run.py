#!/usr/bin/env python3
"""Write the bundled sample run (run format v1, docs: run-format.md).

Usage:
    python scripts/make_sample_run.py [OUT_DIR]

OUT_DIR defaults to ``data/sample-run`` under the repository root. The
directory is deleted and recreated, then filled with ``manifest.json``,
``results.jsonl``, ``README.md`` and ``attempts/<task_id>/<attempt>/``
artifact directories.

The output is deterministic: stdlib only, every random choice comes from a
``random.Random`` seeded with a fixed string per attempt, no wall-clock time,
fixed key order. Running the script twice gives byte-identical files.

The artifacts are generated first; each results.jsonl record is then derived
from them with the rules of sections 4, 5 and 8 of the run format, except for
the one attempt the runner classified itself (camera.photo.capture/2, see
RUNNER_CLASSIFIED) and the few records that carry a cost.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "sample-run"

SCHEMA_VERSION = "capbench.run/1"
RUN_ID = "2026-11-28-pixel7-m-large"
CREATED_AT = "2026-11-28T10:00:00Z"
CONFIG = {"model": "m-large", "provider": "p1", "platform": "android", "judge": True}

DEVICE_ACTIONS = {
    "tap", "long_press", "swipe", "scroll", "type_text", "press_key",
    "launch_app", "open_url", "go_back", "go_home",
}
READ_ONLY = {"screenshot", "get_ui_tree", "get_screen_text", "list_apps"}

PRICE_SOURCE = "prices/p1@2026-10-01"
# USD per token of the price table named by PRICE_SOURCE (sample values).
PRICE_INPUT = 2.50e-6
PRICE_CACHED_INPUT = 0.625e-6
PRICE_OUTPUT = 10.00e-6

TIMEOUT_MS = 180_000

# --------------------------------------------------------------------------
# Tasks: plan order, planned repeats, labels, prompt, golden action script.
# A script step is (tool name, arguments, assistant note, tool result).
# "critical" is the index of the device action that makes the task succeed;
# an agent failure skips it (or hits a device error on it).
# --------------------------------------------------------------------------

SETTINGS = "com.android.settings"
CLOCK = "com.google.android.deskclock"
CONTACTS = "com.google.android.contacts"
CHROME = "com.android.chrome"
MESSAGING = "com.google.android.apps.messaging"
CAMERA = "com.google.android.GoogleCamera"

TASKS = [
    {
        "task_id": "settings.wifi.toggle", "repeats": 3, "app": "settings",
        "prompt": "Turn Wi-Fi off.",
        "script": [
            ("launch_app", {"package": SETTINGS}, "Opening Settings.", f"launched {SETTINGS}"),
            ("get_ui_tree", {}, "Looking for the network entry.", "ui tree: 38 nodes"),
            ("tap", {"x": 540, "y": 612}, "Tapping Network & internet.", "ok"),
            ("tap", {"x": 540, "y": 388}, "Tapping Internet.", "ok"),
            ("tap", {"x": 960, "y": 402}, "Switching the Wi-Fi toggle off.", "ok"),
            ("screenshot", {}, "Checking the toggle state.", "screenshot captured (1080x2400)"),
        ],
        "critical": 4,
        "assertions": ["wifi_disabled"],
        "done": "Wi-Fi is now off.",
    },
    {
        "task_id": "settings.bluetooth.off", "repeats": 3, "app": "settings",
        "prompt": "Turn Bluetooth off.",
        "script": [
            ("launch_app", {"package": SETTINGS}, "Opening Settings.", f"launched {SETTINGS}"),
            ("tap", {"x": 540, "y": 780}, "Tapping Connected devices.", "ok"),
            ("tap", {"x": 540, "y": 530}, "Tapping Connection preferences.", "ok"),
            ("tap", {"x": 540, "y": 300}, "Tapping Bluetooth.", "ok"),
            ("tap", {"x": 960, "y": 300}, "Switching Use Bluetooth off.", "ok"),
            ("get_screen_text", {}, "Verifying.", "Use Bluetooth: Off"),
        ],
        "critical": 4,
        "assertions": ["bluetooth_disabled"],
        "done": "Bluetooth is off.",
    },
    {
        "task_id": "settings.display.dark_mode", "repeats": 3, "app": "settings",
        "prompt": "Enable dark theme.",
        "script": [
            ("launch_app", {"package": SETTINGS}, "Opening Settings.", f"launched {SETTINGS}"),
            ("scroll", {"direction": "down", "amount": 600}, "Scrolling to Display.", "ok"),
            ("tap", {"x": 540, "y": 1150}, "Tapping Display.", "ok"),
            ("tap", {"x": 960, "y": 520}, "Switching Dark theme on.", "ok"),
            ("screenshot", {}, "Checking the result.", "screenshot captured (1080x2400)"),
        ],
        "critical": 3,
        "assertions": ["ui_night_mode_yes"],
        "done": "Dark theme is enabled.",
    },
    {
        "task_id": "clock.alarm.create", "repeats": 3, "app": "clock",
        "prompt": "Create an alarm for 6:45 AM labeled “Gym”.",
        "script": [
            ("launch_app", {"package": CLOCK}, "Opening Clock.", f"launched {CLOCK}"),
            ("tap", {"x": 135, "y": 2280}, "Opening the Alarm tab.", "ok"),
            ("tap", {"x": 540, "y": 1980}, "Adding an alarm.", "ok"),
            ("tap", {"x": 300, "y": 1210}, "Selecting hour 6.", "ok"),
            ("tap", {"x": 790, "y": 880}, "Selecting minute 45.", "ok"),
            ("tap", {"x": 880, "y": 560}, "Selecting AM.", "ok"),
            ("tap", {"x": 900, "y": 1620}, "Confirming the time.", "ok"),
            ("tap", {"x": 380, "y": 1020}, "Opening the label field.", "ok"),
            ("type_text", {"text": "Gym"}, "Typing the label.", "ok"),
            ("tap", {"x": 900, "y": 1180}, "Saving the label.", "ok"),
            ("get_ui_tree", {}, "Verifying the alarm.", "ui tree: 61 nodes"),
        ],
        "critical": 8,
        "assertions": ["alarm_exists_0645", "alarm_label_gym"],
        "done": "Created a 6:45 AM alarm labeled Gym.",
    },
    {
        "task_id": "clock.timer.start", "repeats": 2, "app": "clock",
        "prompt": "Start a 10 minute timer.",
        "script": [
            ("launch_app", {"package": CLOCK}, "Opening Clock.", f"launched {CLOCK}"),
            ("tap", {"x": 540, "y": 2280}, "Opening the Timer tab.", "ok"),
            ("tap", {"x": 200, "y": 1100}, "Typing 1.", "ok"),
            ("tap", {"x": 540, "y": 1700}, "Typing 0.", "ok"),
            ("tap", {"x": 540, "y": 1700}, "Typing 0.", "ok"),
            ("tap", {"x": 540, "y": 1700}, "Typing 0.", "ok"),
            ("tap", {"x": 540, "y": 2000}, "Starting the timer.", "ok"),
            ("screenshot", {}, "Checking that it runs.", "screenshot captured (1080x2400)"),
        ],
        "critical": 6,
        "assertions": ["timer_running_600s"],
        "done": "A 10 minute timer is running.",
    },
    {
        "task_id": "clock.stopwatch.lap", "repeats": 3, "app": "clock",
        "prompt": "Start the stopwatch, record one lap, then stop it.",
        "script": [
            ("launch_app", {"package": CLOCK}, "Opening Clock.", f"launched {CLOCK}"),
            ("tap", {"x": 945, "y": 2280}, "Opening the Stopwatch tab.", "ok"),
            ("tap", {"x": 540, "y": 2000}, "Starting the stopwatch.", "ok"),
            ("tap", {"x": 250, "y": 2000}, "Recording a lap.", "ok"),
            ("tap", {"x": 540, "y": 2000}, "Stopping the stopwatch.", "ok"),
            ("get_screen_text", {}, "Verifying.", "Lap 1 00:02.41 | 00:03.88 (stopped)"),
        ],
        "critical": 3,
        "assertions": ["stopwatch_stopped", "lap_count_1"],
        "done": "Stopwatch stopped with one lap recorded.",
    },
    {
        "task_id": "contacts.contact.create", "repeats": 3, "app": "contacts",
        "prompt": "Add a contact named Dana Whitfield with phone number +1 415 555 0134.",
        "script": [
            ("launch_app", {"package": CONTACTS}, "Opening Contacts.", f"launched {CONTACTS}"),
            ("tap", {"x": 940, "y": 2100}, "Creating a contact.", "ok"),
            ("tap", {"x": 540, "y": 720}, "Focusing First name.", "ok"),
            ("type_text", {"text": "Dana"}, "Typing the first name.", "ok"),
            ("tap", {"x": 540, "y": 860}, "Focusing Last name.", "ok"),
            ("type_text", {"text": "Whitfield"}, "Typing the last name.", "ok"),
            ("tap", {"x": 540, "y": 1180}, "Focusing Phone.", "ok"),
            ("type_text", {"text": "+14155550134"}, "Typing the number.", "ok"),
            ("tap", {"x": 960, "y": 150}, "Saving.", "ok"),
            ("get_ui_tree", {}, "Verifying the contact.", "ui tree: 47 nodes"),
        ],
        "critical": 8,
        "assertions": ["contact_exists", "phone_matches"],
        "done": "Saved Dana Whitfield with +1 415 555 0134.",
    },
    {
        "task_id": "contacts.contact.search", "repeats": 3, "app": "contacts",
        "prompt": "Find the contact Priya Raman and tell me her email address.",
        "script": [
            ("launch_app", {"package": CONTACTS}, "Opening Contacts.", f"launched {CONTACTS}"),
            ("tap", {"x": 540, "y": 160}, "Opening search.", "ok"),
            ("type_text", {"text": "Priya"}, "Searching for Priya.", "ok"),
            ("tap", {"x": 540, "y": 420}, "Opening Priya Raman.", "ok"),
            ("get_screen_text", {}, "Reading the contact card.",
             "Priya Raman | Mobile +1 650 555 0199 | Email priya.raman@example.com"),
        ],
        "critical": 3,
        "assertions": ["answer_contains_email"],
        "done": "Priya Raman's email address is priya.raman@example.com.",
    },
    {
        "task_id": "browser.url.open", "repeats": 3, "app": "browser",
        "prompt": "Open example.org in the browser.",
        "script": [
            ("launch_app", {"package": CHROME}, "Opening Chrome.", f"launched {CHROME}"),
            ("open_url", {"url": "https://example.org"}, "Opening the URL.", "ok"),
            ("get_screen_text", {}, "Checking the page.", "Example Domain | This domain is for use in illustrative examples"),
        ],
        "critical": 1,
        "assertions": ["url_is_example_org"],
        "done": "example.org is open in Chrome.",
    },
    {
        "task_id": "browser.search.query", "repeats": 3, "app": "browser",
        "prompt": "Search the web for “capybara lifespan” and open the first result.",
        "script": [
            ("launch_app", {"package": CHROME}, "Opening Chrome.", f"launched {CHROME}"),
            ("tap", {"x": 540, "y": 210}, "Focusing the address bar.", "ok"),
            ("type_text", {"text": "capybara lifespan"}, "Typing the query.", "ok"),
            ("press_key", {"key": "ENTER"}, "Submitting.", "ok"),
            ("get_ui_tree", {}, "Finding the first result.", "ui tree: 112 nodes"),
            ("tap", {"x": 420, "y": 760}, "Opening the first result.", "ok"),
            ("get_screen_text", {}, "Checking the page.", "Capybara - lifespan 8-10 years in the wild ..."),
        ],
        "critical": 5,
        "assertions": ["search_performed", "first_result_opened"],
        "done": "Opened the first result for “capybara lifespan”.",
    },
    {
        "task_id": "messages.sms.send", "repeats": 3, "app": "messages",
        "prompt": "Text “On my way” to +1 415 555 0188.",
        "script": [
            ("launch_app", {"package": MESSAGING}, "Opening Messages.", f"launched {MESSAGING}"),
            ("tap", {"x": 860, "y": 2100}, "Starting a chat.", "ok"),
            ("type_text", {"text": "+14155550188"}, "Typing the number.", "ok"),
            ("type_text", {"text": "On my way"}, "Typing the message.", "ok"),
            ("tap", {"x": 990, "y": 2180}, "Sending.", "ok"),
        ],
        "critical": 4,
        "assertions": ["sms_sent"],
        "done": "Sent.",
    },
    {
        "task_id": "messages.inbox.read_latest", "repeats": 3, "app": "messages",
        "prompt": "Read me the latest message in Messages.",
        "script": [
            ("launch_app", {"package": MESSAGING}, "Opening Messages.", f"launched {MESSAGING}"),
            ("tap", {"x": 540, "y": 420}, "Opening the newest conversation.", "ok"),
            ("get_screen_text", {}, "Reading the conversation.", "Sam: Running 10 min late, start without me"),
            ("go_back", {}, "Returning to the inbox.", "ok"),
        ],
        "critical": 1,
        "assertions": ["answer_matches_latest_sms"],
        "done": "The latest message, from Sam: “Running 10 min late, start without me”.",
    },
    {
        "task_id": "camera.photo.capture", "repeats": 3, "app": "camera",
        "prompt": "Take a photo with the rear camera.",
        "script": [
            ("launch_app", {"package": CAMERA}, "Opening Camera.", f"launched {CAMERA}"),
            ("get_ui_tree", {}, "Checking the camera mode.", "ui tree: 29 nodes"),
            ("tap", {"x": 540, "y": 1880}, "Selecting Photo mode.", "ok"),
            ("tap", {"x": 540, "y": 2120}, "Pressing the shutter.", "ok"),
            ("tap", {"x": 180, "y": 2120}, "Opening the thumbnail.", "ok"),
            ("screenshot", {}, "Checking the photo.", "screenshot captured (1080x2400)"),
            ("go_home", {}, "Returning home.", "ok"),
        ],
        "critical": 3,
        "assertions": ["new_photo_in_gallery"],
        "done": "Took a photo with the rear camera.",
    },
    {
        "task_id": "camera.video.record", "repeats": 3, "app": "camera",
        "prompt": "Record a 5 second video.",
        "script": [],
        "critical": None,
        "assertions": ["new_video_in_gallery"],
        "done": "",
    },
]
TASK_BY_ID = {t["task_id"]: t for t in TASKS}

# Steps an agent takes when it is lost (tool name, arguments, note, result).
WANDER = [
    ("scroll", {"direction": "down", "amount": 800}, "Looking further down.", "ok"),
    ("get_ui_tree", {}, "Re-reading the screen.", "ui tree: 44 nodes"),
    ("go_back", {}, "Going back.", "ok"),
    ("tap", {"x": 540, "y": 980}, "Trying this entry.", "ok"),
    ("scroll", {"direction": "up", "amount": 800}, "Scrolling back up.", "ok"),
    ("screenshot", {}, "Checking where I am.", "screenshot captured (1080x2400)"),
    ("swipe", {"x1": 540, "y1": 1600, "x2": 540, "y2": 600}, "Swiping up.", "ok"),
    ("long_press", {"x": 540, "y": 760}, "Long-pressing for options.", "ok"),
]

# --------------------------------------------------------------------------
# Attempts: (task_id, attempt) -> scenario. Tasks or attempts not listed did
# not run (camera.video.record entirely, browser.url.open/3).
#
# kind: success | agent_fail | setup_fail | provider_unavailable | skipped
#       | crash | judge_error | unknown_eligible
# options: tool_errors (int), wander (int), device_error, timeout,
#   recovery (None | "missing" | (attempted, succeeded)), episode (default
#   true), history (default false: history.json is written for some only),
#   screenshot_missing_capture, rm_total_missing, cost
# --------------------------------------------------------------------------

ATTEMPTS = {
    ("settings.wifi.toggle", 1): {"kind": "success", "cost": True, "history": True},
    ("settings.wifi.toggle", 2): {"kind": "success", "cost": True},
    ("settings.wifi.toggle", 3): {"kind": "success", "cost": True},
    ("settings.bluetooth.off", 1): {"kind": "success"},
    ("settings.bluetooth.off", 2): {"kind": "agent_fail", "tool_errors": 2, "wander": 2,
                                    "screenshot_missing_capture": True, "history": True},
    ("settings.bluetooth.off", 3): {"kind": "success", "tool_errors": 1},
    ("settings.display.dark_mode", 1): {"kind": "setup_fail", "recovery": "missing"},
    ("settings.display.dark_mode", 2): {"kind": "success"},
    ("settings.display.dark_mode", 3): {"kind": "success"},
    ("clock.alarm.create", 1): {"kind": "agent_fail", "device_error": True, "cost": True,
                                "history": True},
    ("clock.alarm.create", 2): {"kind": "success"},
    ("clock.alarm.create", 3): {"kind": "success"},
    ("clock.timer.start", 1): {"kind": "success"},
    ("clock.timer.start", 2): {"kind": "agent_fail", "wander": 1, "history": True},
    ("clock.stopwatch.lap", 1): {"kind": "success"},
    ("clock.stopwatch.lap", 2): {"kind": "success"},
    ("clock.stopwatch.lap", 3): {"kind": "provider_unavailable"},
    ("contacts.contact.create", 1): {"kind": "agent_fail", "wander": 3, "tool_errors": 1,
                                     "history": True},
    ("contacts.contact.create", 2): {"kind": "agent_fail", "device_error": True},
    ("contacts.contact.create", 3): {"kind": "agent_fail", "timeout": True,
                                     "recovery": (True, False)},
    ("contacts.contact.search", 1): {"kind": "success"},
    ("contacts.contact.search", 2): {"kind": "judge_error"},
    ("contacts.contact.search", 3): {"kind": "success", "rm_total_missing": True,
                                     "history": True},
    ("browser.url.open", 1): {"kind": "success", "history": True},
    ("browser.url.open", 2): {"kind": "success", "screenshot_missing_capture": True},
    ("browser.search.query", 1): {"kind": "agent_fail", "timeout": True, "recovery": (True, True),
                                  "episode": False},
    ("browser.search.query", 2): {"kind": "success", "history": True},
    ("browser.search.query", 3): {"kind": "success"},
    ("browser.search.query", 4): {"kind": "success"},  # above planned repeats: an anomaly
    ("messages.sms.send", 1): {"kind": "skipped"},
    ("messages.sms.send", 2): {"kind": "skipped"},
    ("messages.sms.send", 3): {"kind": "skipped"},
    ("messages.inbox.read_latest", 1): {"kind": "crash", "history": True},
    ("messages.inbox.read_latest", 2): {"kind": "agent_fail", "wander": 1, "episode": False,
                                        "history": True},
    ("messages.inbox.read_latest", 3): {"kind": "success", "history": True},
    ("camera.photo.capture", 1): {"kind": "success"},
    ("camera.photo.capture", 2): {"kind": "unknown_eligible"},
    ("camera.photo.capture", 3): {"kind": "agent_fail", "device_error": True, "history": True},
}

# Records whose classification the runner wrote itself; ingest (section 4)
# would derive class "agent" from these artifacts (no judge verdict).
RUNNER_CLASSIFIED = {
    ("camera.photo.capture", 2): {
        "success": False, "agent_eligible": True, "failure_class": "unknown",
        "failure_stage": None, "evidence": ["attempt.json#/evaluation/error"],
        "quality_score": None,
    },
}

# --------------------------------------------------------------------------
# Artifact generation
# --------------------------------------------------------------------------


def _seeded(task_id: str, attempt: int) -> random.Random:
    # String seeds hash with SHA-512 (seed version 2): independent of
    # PYTHONHASHSEED and stable across runs.
    return random.Random(f"capbench-sample/{task_id}/{attempt}")


def _build_steps(rng: random.Random, task: dict, sc: dict) -> list[dict]:
    """Turn the golden script plus scenario options into a list of steps."""
    script = task["script"]
    kind = sc["kind"]
    steps = [{"name": n, "args": a, "note": note, "result": r, "status": "ok"}
             for (n, a, note, r) in script]
    critical = task["critical"]

    if kind == "agent_fail" and sc.get("timeout"):
        # Stuck after the first two steps: wanders until the runner's timeout.
        head = steps[:2]
        tail = []
        for i in range(40):
            n, a, note, r = WANDER[(i * 3 + rng.randrange(len(WANDER))) % len(WANDER)]
            tail.append({"name": n, "args": a, "note": note, "result": r, "status": "ok"})
        steps = head + tail
        return steps

    if kind == "agent_fail" and sc.get("device_error"):
        # The critical device action fails on the device; the agent replans,
        # retries nothing useful and gives up.
        steps[critical]["status"] = "device_error"
        steps[critical]["result"] = "error: device offline (adb connection reset)"
        steps[critical]["replan_after"] = True
        rest = [
            {"name": "go_back", "args": {}, "note": "The device dropped; going back.", "result": "ok", "status": "ok"},
            {"name": "get_ui_tree", "args": {}, "note": "Re-reading the screen.", "result": "ui tree: 12 nodes", "status": "ok"},
        ]
        steps = steps[:critical + 1] + rest
    elif kind == "agent_fail":
        # Misses the critical step and wanders instead.
        wander = []
        for i in range(sc.get("wander", 0)):
            n, a, note, r = WANDER[rng.randrange(len(WANDER))]
            wander.append({"name": n, "args": a, "note": note, "result": r, "status": "ok"})
        steps = steps[:critical] + wander + steps[critical + 1:]

    for _ in range(sc.get("tool_errors", 0)):
        # A tap on an element that is not on screen, then a replan.
        pos = 1 + rng.randrange(max(1, len(steps) - 2))
        label = rng.choice(["Bluetooth", "Save", "More options", "Search", "Next"])
        steps.insert(pos, {
            "name": "tap", "args": {"text": label}, "note": f"Tapping “{label}”.",
            "result": f"error: element not found: text={label!r}", "status": "tool_error",
            "replan_after": True,
        })

    if kind == "crash":
        steps = steps[: max(2, len(steps) // 2)]
    return steps


def _simulate(rng: random.Random, task: dict, sc: dict) -> dict:
    """Play the steps on a simulated clock; return history, episode, timings."""
    steps = _build_steps(rng, task, sc)
    kind = sc["kind"]
    timeout = kind == "agent_fail" and bool(sc.get("timeout"))

    messages = [{"role": "user", "content": task["prompt"]}]
    events: list[dict] = []
    screenshots: list[dict] = []
    t = 0
    prev_input = 0
    ttft = rng.randint(450, 1400)
    tot_in = tot_out = tot_cached = 0
    call_no = 0

    def llm_call(final: bool) -> tuple[int, int]:
        nonlocal t, prev_input, tot_in, tot_out, tot_cached
        latency = rng.randint(1800, 4200) if not timeout else rng.randint(14000, 22000)
        t += latency
        inp = 1500 + len(messages) * rng.randint(70, 110) + rng.randint(0, 200)
        out = rng.randint(40, 120) if final else rng.randint(60, 220)
        cached = (prev_input // 256) * 256
        prev_input = inp
        tot_in += inp
        tot_out += out
        tot_cached += cached
        return inp, out

    for step in steps:
        if timeout and t > TIMEOUT_MS - 25_000:
            break  # the next step could not finish before the runner's timeout
        call_no += 1
        cid = f"c{call_no}"
        inp, out = llm_call(final=False)
        messages.append({
            "role": "assistant", "content": step["note"],
            "usage": {"input_tokens": inp, "output_tokens": out},
            "tool_calls": [{"id": cid, "name": step["name"], "arguments": step["args"]}],
        })
        name = step["name"]
        if step["status"] == "tool_error":
            t += rng.randint(200, 700)
            events.append({"type": "tool_error", "call_id": cid, "message": step["result"][len("error: "):]})
        elif name in DEVICE_ACTIONS:
            start = t + rng.randint(8, 30)
            if name == "launch_app":
                dur = rng.randint(600, 1500)
            elif name == "type_text":
                dur = rng.randint(350, 1100)
            else:
                dur = rng.randint(120, 650)
            if step["status"] == "device_error":
                t = start + 5000  # adb command timeout
                events.append({"type": "device_action", "name": name, "call_id": cid,
                               "start_ms": start, "end_ms": None, "status": "error",
                               "error": "device offline"})
            else:
                t = start + dur
                events.append({"type": "device_action", "name": name, "call_id": cid,
                               "start_ms": start, "end_ms": t, "status": "ok"})
                # The runner captures a screenshot after each device action.
                screenshots.append({"capture_ms": rng.randint(70, 190)})
        else:
            t += rng.randint(150, 600)
        messages.append({"role": "tool", "tool_call_id": cid, "content": step["result"]})
        if step.get("replan_after"):
            t += rng.randint(100, 400)
            events.append({"type": "replan", "t_ms": t})

    if kind == "crash":
        wall = t + rng.randint(200, 900)
    elif timeout:
        wall = TIMEOUT_MS
    else:
        inp, out = llm_call(final=True)
        if kind == "success" or kind in ("judge_error", "unknown_eligible"):
            content = task["done"]
        else:
            content = "I could not complete the task."
        messages.append({"role": "assistant", "content": content,
                         "usage": {"input_tokens": inp, "output_tokens": out}})
        wall = t + rng.randint(300, 1200)

    run_metrics = {
        "input_tokens": tot_in,
        "output_tokens": tot_out,
        "total_tokens": None if sc.get("rm_total_missing") else tot_in + tot_out,
        "cached_input_tokens": tot_cached,
        "reasoning_tokens": None,
        "time_to_first_token_ms": ttft,
    }
    if sc.get("screenshot_missing_capture") and screenshots:
        # One capture whose timing the runner failed to record.
        screenshots[len(screenshots) // 2] = {"dropped": True}
    return {
        "history": {"messages": messages},
        "episode": {"model": CONFIG["model"], "run_metrics": run_metrics, "events": events},
        "screenshots": screenshots,
        "wall": wall,
    }


def _make_artifacts(task: dict, attempt: int, sc: dict) -> dict[str, dict]:
    """Return {file name: JSON object} for one attempt directory."""
    rng = _seeded(task["task_id"], attempt)
    kind = sc["kind"]
    setup_ms = rng.randint(1500, 6000)
    doc: dict = {"task_id": task["task_id"], "attempt": attempt}
    files: dict[str, dict] = {}

    if kind == "setup_fail":
        doc["setup"] = {"status": "failed", "duration_ms": 5870,
                        "error": "adb: device not found after reboot (waited 5000 ms)"}
    else:
        doc["setup"] = {"status": "ok", "duration_ms": setup_ms, "error": None}
    if kind == "provider_unavailable":
        doc["provider"] = {"available": False,
                           "error": "p1: HTTP 503 Service Unavailable after 3 retries"}
    else:
        doc["provider"] = {"available": True, "error": None}
    doc["skip"] = ({"reason": "device has no SIM card; task requires telephony"}
                   if kind == "skipped" else None)

    if kind in ("setup_fail", "provider_unavailable", "skipped"):
        doc["agent"] = {"status": "not_started", "task_wall_ms": None}
        if sc.get("recovery") != "missing":
            doc["recovery"] = None
        doc["evaluation"] = None
        files["attempt.json"] = doc
        return files

    sim = _simulate(rng, task, sc)
    timeout = sc.get("timeout", False)
    if kind == "crash":
        doc["agent"] = {"status": "crashed", "task_wall_ms": sim["wall"],
                        "error": "agent runtime exited with signal 9 (out of memory)"}
    else:
        doc["agent"] = {"status": "timeout" if timeout else "completed",
                        "task_wall_ms": sim["wall"]}
    rec = sc.get("recovery")
    if rec is None:
        doc["recovery"] = None
    elif rec != "missing":
        doc["recovery"] = {"attempted": rec[0], "succeeded": rec[1]}
    doc["screenshots"] = sim["screenshots"]

    names = task["assertions"]
    if kind == "crash":
        doc["evaluation"] = None
    elif kind == "unknown_eligible":
        doc["evaluation"] = {
            "judge_enabled": True,
            "hard_assertions": [],
            "judge": None,
            "quality_score": None,
            "error": "evaluator output lost: device rebooted before the state dump",
        }
        doc["runner_classification"] = {
            "failure_class": "unknown", "agent_eligible": True,
            "reason": "agent finished normally; outcome could not be evaluated",
        }
    elif kind == "judge_error":
        doc["evaluation"] = {
            "judge_enabled": True,
            "hard_assertions": [{"name": n, "passed": True} for n in names],
            "judge": {"status": "error", "verdict": None, "score": None,
                      "error": "judge request timed out after 60 s"},
            "quality_score": None,
        }
    else:
        ok = kind == "success"
        if ok:
            score = round(rng.uniform(0.80, 0.98), 2)
        else:
            score = round(rng.uniform(0.05, 0.45), 2)
        doc["evaluation"] = {
            "judge_enabled": True,
            "hard_assertions": [{"name": n, "passed": ok or i < len(names) - 1}
                                for i, n in enumerate(names)],
            "judge": {"status": "ok", "verdict": "pass" if ok else "fail",
                      "score": score, "error": None},
            "quality_score": score,
        }

    files["attempt.json"] = doc
    if sc.get("episode", True):
        files["episode.json"] = sim["episode"]
    if sc.get("history", False):
        files["history.json"] = sim["history"]
    return files


# --------------------------------------------------------------------------
# Record derivation (run format sections 4, 5 and 8)
# --------------------------------------------------------------------------

TELEMETRY_FIELDS = [
    "task_wall_ms", "setup_ms", "tool_calls", "device_actions", "llm_calls",
    "input_tokens", "output_tokens", "total_tokens", "cached_input_tokens",
    "reasoning_tokens", "time_to_first_token_ms", "device_execution_ms",
    "screenshot_capture_ms", "tool_errors", "replan_count",
    "recovery_attempted", "recovery_succeeded",
]


def _get(obj, *keys):
    for k in keys:
        if not isinstance(obj, dict) or k not in obj:
            return None
        obj = obj[k]
    return obj


def _telemetry(att: dict, ep: dict | None, hist: dict | None) -> tuple[dict, dict]:
    tel = dict.fromkeys(TELEMETRY_FIELDS)
    src: dict[str, str] = {}

    def put(field, value, source):
        if value is not None:
            tel[field] = value
            src[field] = source

    put("task_wall_ms", _get(att, "agent", "task_wall_ms"), "attempt.json#/agent/task_wall_ms")
    put("setup_ms", _get(att, "setup", "duration_ms"), "attempt.json#/setup/duration_ms")

    hist_usage = None
    if hist is not None:
        msgs = hist.get("messages") or []
        calls = [c for m in msgs if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])]
        put("tool_calls", len(calls), "history.json#/messages")
        put("device_actions", sum(1 for c in calls if c.get("name") in DEVICE_ACTIONS),
            "history.json#/messages")
        with_usage = [m["usage"] for m in msgs if isinstance(m.get("usage"), dict)]
        put("llm_calls", len(with_usage), "history.json#/messages")
        if with_usage:
            hin = sum(u.get("input_tokens", 0) for u in with_usage)
            hout = sum(u.get("output_tokens", 0) for u in with_usage)
            hist_usage = {"input_tokens": hin, "output_tokens": hout, "total_tokens": hin + hout}

    rm = _get(ep, "run_metrics") if ep is not None else None
    for f in ("input_tokens", "output_tokens", "total_tokens"):
        v = _get(rm, f)
        if v is not None:
            put(f, v, f"episode.json#/run_metrics/{f}")
        elif hist_usage is not None:
            put(f, hist_usage[f], "history.json#/messages")
    for f in ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms"):
        put(f, _get(rm, f), f"episode.json#/run_metrics/{f}")

    if ep is not None:
        evs = ep.get("events") or []
        put("device_execution_ms",
            sum(e["end_ms"] - e["start_ms"] for e in evs
                if e.get("type") == "device_action"
                and e.get("start_ms") is not None and e.get("end_ms") is not None),
            "episode.json#/events")
    shots = att.get("screenshots")
    if isinstance(shots, list) and all("capture_ms" in s for s in shots):
        put("screenshot_capture_ms", sum(s["capture_ms"] for s in shots), "attempt.json#/screenshots")
    if ep is not None:
        evs = ep.get("events") or []
        put("tool_errors", sum(1 for e in evs if e.get("type") == "tool_error"), "episode.json#/events")
        put("replan_count", sum(1 for e in evs if e.get("type") == "replan"), "episode.json#/events")

    if "recovery" in att:
        rec = att["recovery"]
        if rec is None:
            put("recovery_attempted", False, "attempt.json#/recovery")
        else:
            put("recovery_attempted", rec.get("attempted"), "attempt.json#/recovery")
            put("recovery_succeeded", rec.get("succeeded"), "attempt.json#/recovery")
    return tel, src


def _classify(att: dict, ep: dict | None, judge_default: bool) -> dict:
    setup = att.get("setup") or {}
    provider = att.get("provider") or {}
    agent = att.get("agent") or {}
    ev = att.get("evaluation") or {}
    out = {"success": False, "agent_eligible": False, "failure_class": "",
           "failure_stage": None, "evidence": [], "quality_score": None}
    if att.get("skip"):
        out["failure_class"] = "skipped"
        return out
    if setup.get("status") == "failed" or provider.get("available") is False \
            or agent.get("status") == "not_started":
        out["failure_class"] = "environment"
        if setup.get("status") == "failed":
            out["failure_stage"] = "setup"
            out["evidence"] = ["attempt.json#/setup"]
        return out
    if agent.get("status") == "crashed":
        out["failure_class"] = "unknown"
        return out
    judge_enabled = ev.get("judge_enabled", judge_default)
    judge = ev.get("judge") or {}
    if judge_enabled and judge.get("status") == "error":
        out["failure_class"] = "evaluation"
        out["failure_stage"] = "evaluation"
        out["evidence"] = ["attempt.json#/evaluation/judge"]
        return out
    hard_ok = all(a.get("passed") is True for a in ev.get("hard_assertions") or [])
    success = hard_ok and (not judge_enabled or judge.get("verdict") == "pass")
    out["agent_eligible"] = True
    out["quality_score"] = ev.get("quality_score")
    if success:
        out["success"] = True
        return out
    out["failure_class"] = "agent"
    if ep is not None:
        refs = [f"episode.json#/events/{i}" for i, e in enumerate(ep.get("events") or [])
                if e.get("type") == "device_action" and e.get("status") == "error"]
        if refs:
            out["failure_stage"] = "device_execution"
            out["evidence"] = refs
    return out


def _cost(tel: dict) -> float:
    cached = tel["cached_input_tokens"] or 0
    return round((tel["input_tokens"] - cached) * PRICE_INPUT + cached * PRICE_CACHED_INPUT
                 + tel["output_tokens"] * PRICE_OUTPUT, 6)


def _record(task_id: str, attempt: int, sc: dict, files: dict) -> dict:
    att = files["attempt.json"]
    ep = files.get("episode.json")
    hist = files.get("history.json")
    cls = _classify(att, ep, CONFIG["judge"])
    cls.update(RUNNER_CLASSIFIED.get((task_id, attempt), {}))
    tel, src = _telemetry(att, ep, hist)
    cost = _cost(tel) if sc.get("cost") else None
    return {
        "task_id": task_id,
        "attempt": attempt,
        "artifact_dir": f"attempts/{task_id}/{attempt}",
        "success": cls["success"],
        "agent_eligible": cls["agent_eligible"],
        "failure_class": cls["failure_class"],
        "failure_stage": cls["failure_stage"],
        "evidence": cls["evidence"],
        "quality_score": cls["quality_score"],
        "telemetry": tel,
        "telemetry_source": src,
        "cost": cost,
        "cost_source": PRICE_SOURCE if cost is not None else None,
    }


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def _manifest() -> dict:
    repeats = [t["repeats"] for t in TASKS]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": RUN_ID,
        "suite": {"name": "mobile-core", "version": "2026.11"},
        "created_at": CREATED_AT,
        "status": "partial",
        "runner": {"name": "capbench-runner", "version": "0.9.2"},
        "config": dict(CONFIG),
        "plan": {
            "repeats_override": None,
            "k": min(repeats),
            "tasks": [{"task_id": t["task_id"], "repeats": t["repeats"], "app": t["app"],
                       "platform": CONFIG["platform"]} for t in TASKS],
        },
    }


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False))
        fh.write("\n")


def _md(s) -> str:
    s = str(s)
    for ch in ("\\", "|", "`", "*", "<"):
        s = s.replace(ch, "\\" + ch)
    return s


CASE_NOTES = {
    "settings.wifi.toggle": "all attempts succeed; every record has a cost",
    "settings.bluetooth.off": "mixed; tool errors and replans; a screenshot without capture_ms (2)",
    "settings.display.dark_mode": "attempt 1 setup failure (environment, stage setup, no recovery key): not in pass@1, not k-eligible",
    "clock.alarm.create": "device_execution stage (1, with cost); first success 2, so cost_to_first_success.cost is null",
    "clock.timer.start": "planned repeats 2 (defines k = 2)",
    "clock.stopwatch.lap": "provider unavailable (3, environment, no stage) outside the first k",
    "contacts.contact.create": "no success; device_execution stage (2); timeout with failed recovery (3)",
    "contacts.contact.search": "judge error (2, evaluation, stage evaluation): not k-eligible; run_metrics.total_tokens null, total from history (3)",
    "browser.url.open": "attempt 3 missing (partial run); a screenshot without capture_ms (2)",
    "browser.search.query": "timeout + recovery, no episode.json or history.json: token telemetry null (1); attempt 4 above planned repeats (anomaly)",
    "messages.sms.send": "all attempts skipped",
    "messages.inbox.read_latest": "agent crash (1, unknown, not eligible); no episode.json, tokens from history (2)",
    "camera.photo.capture": "unknown but eligible, runner-classified, evidence without stage (2); device_execution stage (3)",
    "camera.video.record": "planned, no attempts",
}


def _readme(records: list[dict], files_of: dict) -> str:
    planned = {t["task_id"]: t["repeats"] for t in TASKS}
    by_task: dict[str, list[dict]] = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(r)

    def cls(r):
        c = "success" if r["success"] else r["failure_class"]
        return c + ("" if r["agent_eligible"] else " (inelig.)")

    lines = [
        "# Sample run: `2026-11-28-pixel7-m-large`",
        "",
        "A small, synthetic but realistic run of the `mobile-core` suite (version",
        "2026.11): model `m-large` from provider `p1` driving an Android phone, with",
        "the LLM judge enabled. It follows the run format v1 and is used by the",
        "demo (`make demo`) and the tests. The run is `partial`: one planned attempt",
        "and one whole task never ran.",
        "",
        "Regenerate it (deterministic, byte-identical output; the directory is",
        "deleted and recreated, this README included):",
        "",
        "```",
        "python scripts/make_sample_run.py data/sample-run",
        "```",
        "",
        "Plan: 14 tasks, 13 with 3 repeats and `clock.timer.start` with 2, so",
        "`plan.k` = 2. `results.jsonl` has 38 records sorted by task_id then attempt;",
        "37 are within their task's planned repeats. Plan order (= `per_task` order) is",
        "the order of the table below, not alphabetical.",
        "",
        "## Tasks and cases",
        "",
        "Attempts: `S` success, `A` agent, `E` environment, `V` evaluation,",
        "`K` skipped, `U` unknown; `*` not agent-eligible; `-` missing;",
        "`!` above planned repeats (anomaly, enters no metric).",
        "",
        "| task_id | planned | attempts | case |",
        "|---|---|---|---|",
    ]
    letter = {"agent": "A", "environment": "E", "evaluation": "V", "skipped": "K", "unknown": "U"}
    for t in TASKS:
        tid = t["task_id"]
        recs = {r["attempt"]: r for r in by_task.get(tid, [])}
        top = max([planned[tid], *recs])
        cells = []
        for a in range(1, top + 1):
            r = recs.get(a)
            if r is None:
                cells.append(f"{a}:-")
                continue
            c = "S" if r["success"] else letter[r["failure_class"]]
            if not r["agent_eligible"]:
                c += "*"
            if a > planned[tid]:
                c += "!"
            cells.append(f"{a}:{c}")
        lines.append(f"| `{tid}` | {planned[tid]} | {' '.join(cells)} | {_md(CASE_NOTES[tid])} |")

    lines += [
        "",
        "## Records",
        "",
        "Files: `a` attempt.json, `e` episode.json, `h` history.json. Without",
        "history.json, `tool_calls`, `device_actions` and `llm_calls` are null;",
        "without episode.json, the `run_metrics` and event fields are null (token",
        "fields then come from history.json when it has `usage`).",
        "",
        "| task_id | attempt | files | class | stage | evidence | quality | task_wall_ms | total_tokens | cost |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def v(x):
        return "null" if x is None else str(x)

    for r in records:
        lines.append(
            f"| `{r['task_id']}` | {r['attempt']} | {files_of[(r['task_id'], r['attempt'])]} | "
            f"{cls(r)} | {v(r['failure_stage'])} | "
            f"{_md(', '.join(r['evidence'])) or '-'} | {v(r['quality_score'])} | "
            f"{v(r['telemetry']['task_wall_ms'])} | {v(r['telemetry']['total_tokens'])} | {v(r['cost'])} |"
        )

    lines += [
        "",
        "## Expected values (k = 2)",
        "",
        "Counts cover records of planned tasks within planned repeats",
        "(`browser.search.query` attempt 4 is excluded and reported as the only",
        "anomaly, kind `above_planned_repeats`).",
        "",
        "- tasks: planned 14, observed 13 (`camera.video.record` has no attempts)",
        "- attempts: total 37, eligible 30",
        "- by_failure_class: success 20, agent 9, environment 2, evaluation 1,",
        "  skipped 3, unknown 2",
        "- pass@1 = 7/10 (coverage 10/14): attempt 1 ineligible for",
        "  `settings.display.dark_mode`, `messages.sms.send`,",
        "  `messages.inbox.read_latest`; absent for `camera.video.record`; attempt 1",
        "  failed (agent) for `clock.alarm.create`, `contacts.contact.create`,",
        "  `browser.search.query`",
        "- k-eligible tasks (attempts 1 and 2 present and eligible): 9 (coverage",
        "  9/14): `settings.wifi.toggle`, `settings.bluetooth.off`,",
        "  `clock.alarm.create`, `clock.timer.start`, `clock.stopwatch.lap`,",
        "  `contacts.contact.create`, `browser.url.open`, `browser.search.query`,",
        "  `camera.photo.capture`",
        "- pass@k = 8/9 (all but `contacts.contact.create`)",
        "- pass^k = 3/9 (`settings.wifi.toggle`, `clock.stopwatch.lap`,",
        "  `browser.url.open`)",
        "",
        "## Notes for ingest",
        "",
        "Every record except one equals what the section 4/5 derivation gives from",
        "its artifact directory (cost aside: `cost` is set, with `cost_source`",
        "`prices/p1@2026-10-01`, on the three `settings.wifi.toggle` records and on",
        "`clock.alarm.create` attempt 1). The exception is",
        "`camera.photo.capture` attempt 2: the runner classified it `unknown` and",
        "eligible (see `runner_classification` in its attempt.json); its evaluation",
        "has no judge verdict, so derivation would give `agent`.",
        "",
        "Artifact edge cases: `settings.display.dark_mode/1` has no `recovery` key",
        "(both recovery fields null); not-started attempts have `recovery: null`",
        "(attempted false), no `screenshots` (capture time null) and `evaluation:",
        "null`; `reasoning_tokens` is null everywhere.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out_abs = out.resolve()
    if out_abs == Path(out_abs.anchor) or out_abs in (REPO_ROOT, *REPO_ROOT.parents):
        print(f"refusing to delete {out_abs}", file=sys.stderr)
        return 2
    if out_abs.exists():
        shutil.rmtree(out_abs)
    out_abs.mkdir(parents=True)

    _write_json(out_abs / "manifest.json", _manifest())
    records = []
    files_of = {}
    for (task_id, attempt) in sorted(ATTEMPTS):
        sc = ATTEMPTS[(task_id, attempt)]
        files = _make_artifacts(TASK_BY_ID[task_id], attempt, sc)
        adir = out_abs / "attempts" / task_id / str(attempt)
        for name, obj in files.items():
            _write_json(adir / name, obj)
        records.append(_record(task_id, attempt, sc, files))
        files_of[(task_id, attempt)] = " ".join(n[0] for n in files)

    with open(out_abs / "results.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False))
            fh.write("\n")
    with open(out_abs / "README.md", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(_readme(records, files_of))
    print(f"wrote {len(records)} records to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
