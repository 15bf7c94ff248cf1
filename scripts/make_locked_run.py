#!/usr/bin/env python3
"""Regenerate the bundled locked sample run: a run of a frozen suite (spec section 12).

Usage:
    python scripts/make_locked_run.py [OUT_DIR]

OUT_DIR defaults to ``data/locked-run`` under the repository root.  The directory is deleted and
recreated, then filled in four steps (2-4 are ``make_sample_run.py``'s, its :func:`fill`):

1. the lock: :data:`SPEC` (AndroidWorld-style pins: a Pixel 6 on an API 33 system image and its
   snapshot, a fixed date and time, offline network, five apps with version codes, APK hashes and
   permissions, an account by reference, 12 tasks with seeds, k = 3) made a lock with its digest by
   ``capbench_nb.records.lock.make_lock`` (what ``capbench-nb suite lock`` does);
2. ``capbench_nb.simulation.writer.simulate_run`` writes a run of that lock, 12 tasks x 3 repeats, each
   attempt with a preflight and a drift rate of 0.22 (6 of the 36 attempts drift; ``simulate --lock
   --drift``), with ``suite.lock.json`` copied into the run;
3. ``capbench_nb.records.ingest.ingest_run`` derives ``results.jsonl`` (a drifted attempt is an
   environment failure at setup, rule 1b);
4. ``capbench_nb.simulation.describe.describe_run`` writes ``README.md``.

The spec's tasks are the simulator's first 12 (same ids and labels), so the run and its lock agree
and ``capbench-nb suite check`` finds nothing; the drifted attempts are what the report's "Suite lock"
section shows.  Deterministic: the same code gives byte-identical files.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from capbench_nb.records.lock import make_lock  # noqa: E402
from make_sample_run import fill, target  # noqa: E402  (the sample run's steps: simulate, ingest, describe)

DEFAULT_OUT = REPO_ROOT / "data" / "locked-run"
COMMAND = "python scripts/make_locked_run.py data/locked-run"
TASKS, REPEATS, SEED, DRIFT = 12, 3, 4, 0.22


def _sha(text: str) -> str:
    """A stand-in content hash (64 hex digits) for a pinned file this sample does not ship."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _app(package: str, version_code: int, *permissions: str) -> dict:
    return {"package": package, "version_code": version_code, "apk_sha256": _sha(f"{package}@{version_code}"),
            "permissions": list(permissions)}


def _task(task_id: str, app: str, seed: int) -> dict:
    return {"task_id": task_id, "labels": {"app": app, "platform": "android"}, "params": {}, "seed": seed,
            "setup": ["restore:init_state"], "cleanup": ["restore:init_state"]}


#: The frozen suite, without its digest (``make_lock`` adds it).
SPEC = {
    "schema_version": "capbench.suite-lock/1",
    "suite": {"name": "mobile-core-sim", "version": "2026.11"},
    "platform": {"device": "pixel_6", "emulator": "35.1.4",
                 "system_image": {"api": 33, "tag": "google_apis", "abi": "x86_64",
                                  "sha256": _sha("system-images;android-33;google_apis;x86_64")},
                 "snapshot": {"name": "init_state", "sha256": _sha("init_state")}},
    "device_state": {"locale": "en-US", "region": "US", "timezone": "UTC", "datetime": "2023-10-15T15:34:00Z",
                     "network": "offline"},
    "apps": [
        _app("com.android.settings", 33),
        _app("com.google.android.deskclock", 71003, "POST_NOTIFICATIONS", "SCHEDULE_EXACT_ALARM"),
        _app("com.google.android.contacts", 4107, "READ_CONTACTS", "WRITE_CONTACTS"),
        _app("org.chromium.chrome", 572811500, "INTERNET"),
        _app("com.google.android.apps.messaging", 185050, "SEND_SMS", "READ_SMS", "READ_CONTACTS"),
    ],
    "accounts": [{"id": "contacts-owner", "credential": "env:CONTACTS_TOKEN"}],
    "network_fixtures": [],
    "run_policy": {"k": 3, "isolation": "snapshot_restore"},
    "tasks": [
        _task("settings.wifi.toggle", "settings", 30),
        _task("settings.bluetooth.off", "settings", 31),
        _task("settings.display.dark_mode", "settings", 32),
        _task("settings.display.brightness", "settings", 33),
        _task("clock.alarm.create", "clock", 40),
        _task("clock.timer.start", "clock", 41),
        _task("clock.stopwatch.lap", "clock", 42),
        _task("contacts.contact.create", "contacts", 50),
        _task("contacts.contact.search", "contacts", 51),
        _task("browser.url.open", "browser", 60),
        _task("browser.search.query", "browser", 61),
        _task("messages.sms.send", "messages", 70),
    ],
    "selection": None,
}


def main(argv: list[str]) -> int:
    out_abs = target(argv, DEFAULT_OUT)
    if out_abs is None:
        return 2
    lock, problems = make_lock(SPEC, "SPEC")
    if problems:
        print("\n".join(str(p) for p in problems), file=sys.stderr)
        return 2
    records = fill(out_abs, command=COMMAND, title="Locked sample run", tasks=TASKS, repeats=REPEATS, seed=SEED,
                   lock=lock, drift=DRIFT)
    print(f"wrote {records} records of lock {lock.digest} to {out_abs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
