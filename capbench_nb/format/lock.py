"""The frozen suite's lock (spec section 12), as data: its fields, its rules, its finding kinds.

:data:`LOCK` is the field table of ``suite.lock.json`` by JSON pointer (``*`` stands for every
index of a list); :mod:`capbench_nb.records.lock` validates a lock by walking it, and the reference
page renders it.  :data:`LOCK_CHECKS` are the rule ids a lock can break, :data:`PREFLIGHT` the
optional ``preflight`` key of attempt.json, :data:`FINDING_KINDS` what ``suite check`` reports.
"""

from __future__ import annotations

from capbench_nb.format.fields import ARTIFACT, Field
from capbench_nb.format.limits import MAX_SAFE_NUMBER

__all__ = [
    "LOCK_SCHEMA_VERSION", "LOCK_FILE", "LOCK", "LOCK_NONEMPTY", "LOCK_UNIQUE", "LOCK_CHECKS", "SECRET_KEY_WORDS",
    "SECRET_KEYS", "SECRET_PREFIXES", "FINDING_KINDS", "PREFLIGHT", "LOCK_PIN_ROWS", "LOCK_DETAIL_NAMES",
    "LOCK_DIFF_PATHS",
]

LOCK_SCHEMA_VERSION = "capbench.suite-lock/1"
#: The lock's file name, and the name of its copy in a run directory.
LOCK_FILE = "suite.lock.json"


def _l(pointer: str, json_type: str, rule: str, **kw) -> Field:
    return Field(pointer, json_type, type_rule=rule, **kw)


#: ``suite.lock.json`` by JSON pointer, parents before children; an absent optional key reads as
#: ``default``.  Every key not in the table is kept and enters the digest.
LOCK = (
    _l("", "object", "lock-type", required=True, description="the document"),
    _l("/schema_version", "string", "lock-schema-version", required=True, vocabulary=(LOCK_SCHEMA_VERSION,),
       vocabulary_rule="lock-schema-version", description="the lock format version"),
    _l("/suite", "object", "lock-suite", required=True, description="the frozen suite's identity"),
    _l("/suite/name", "string", "lock-suite", required=True, description="non-empty"),
    _l("/suite/version", "string", "lock-suite", required=True, description="non-empty"),
    _l("/platform", "object", "lock-platform", default={}, description="free-form pins (device, emulator, image, "
                                                                        "snapshot)"),
    _l("/device_state", "object", "lock-device-state", default={},
       description="free-form pins (locale, region, timezone, datetime, network)"),
    _l("/apps", "array", "lock-apps", items="object", default=[], description="the installed apps"),
    _l("/apps/*/package", "string", "lock-apps", required=True, description="non-empty, unique (lock-app-duplicate)"),
    _l("/accounts", "array", "lock-accounts", items="object", default=[], description="accounts the tasks use"),
    _l("/accounts/*/credential", "string", "lock-secret", nullable=True,
       description="a reference env:NAME, file:PATH or vault:PATH, never the secret"),
    _l("/run_policy", "object", "lock-run-policy", required=True, description="k and isolation"),
    _l("/run_policy/k", "integer", "lock-k", required=True, minimum=1, maximum=MAX_SAFE_NUMBER, low_rule="lock-k",
       high_rule="lock-k", description="the suite's k, an integer >= 1"),
    _l("/tasks", "array", "lock-tasks", required=True, items="object",
       description="the frozen tasks, non-empty (lock-tasks-empty)"),
    _l("/tasks/*/task_id", "string", "lock-task-id", required=True,
       description="non-empty, unique (lock-task-id-duplicate)"),
    _l("/tasks/*/params", "object", "lock-task-params", default={}, description="the task's parameters"),
    _l("/tasks/*/seed", "integer", "lock-task-seed", nullable=True, description="the task's seed"),
    _l("/tasks/*/setup", "array", "lock-task-setup", items="string", default=[], description="setup steps"),
    _l("/tasks/*/cleanup", "array", "lock-task-cleanup", items="string", default=[], description="cleanup steps"),
    _l("/tasks/*/labels", "object", "lock-task-labels", items="string", default={},
       description="the task's labels (slice dimensions), compared with the plan's"),
    _l("/digest", "string", "lock-digest", required=True,
       description='"sha256:" + hex SHA-256 of the RFC 8785 canonical form of the lock without digest'),
)

#: Strings that must not be empty, with the rule an empty one breaks.
LOCK_NONEMPTY = {"/suite/name": "lock-suite", "/suite/version": "lock-suite", "/apps/*/package": "lock-apps",
                 "/tasks/*/task_id": "lock-task-id"}
#: Values unique within their list, with the rule a repeat breaks.
LOCK_UNIQUE = {"/apps/*/package": "lock-app-duplicate", "/tasks/*/task_id": "lock-task-id-duplicate"}

#: A key whose name contains one of these (case-insensitive) holds only secret references.
SECRET_KEY_WORDS = ("password", "secret", "token", "api_key")
#: Pointers (``*``: any index) whose strings are secret references, whatever their key.
SECRET_KEYS = ("/accounts/*/credential",)
#: What a secret reference starts with (a non-empty name or path follows).
SECRET_PREFIXES = ("env:", "file:", "vault:")

#: Every rule id of the lock (spec section 12), with what it refuses.
LOCK_CHECKS = (
    ("lock-json", "the lock is valid UTF-8 JSON (or YAML for suite lock); a NaN or Infinity token is json-nan"),
    ("lock-unreadable", "the lock is a readable regular file"),
    ("lock-too-large", "the lock is at most MAX_LOCK_BYTES"),
    ("lock-type", "the lock is an object"),
    ("lock-schema-version", f"schema_version is {LOCK_SCHEMA_VERSION}"),
    ("lock-suite", "suite has non-empty string name and version"),
    ("lock-platform", "platform is an object"),
    ("lock-device-state", "device_state is an object"),
    ("lock-apps", "apps is a list of objects, each with a non-empty package"),
    ("lock-app-duplicate", "app packages are unique"),
    ("lock-accounts", "accounts is a list of objects"),
    ("lock-run-policy", "run_policy is an object"),
    ("lock-k", "run_policy.k is an integer >= 1"),
    ("lock-tasks", "tasks is a list of objects"),
    ("lock-tasks-empty", "tasks is not empty"),
    ("lock-task-id", "a task's task_id is a non-empty string"),
    ("lock-task-id-duplicate", "task_ids are unique"),
    ("lock-task-params", "a task's params is an object"),
    ("lock-task-seed", "a task's seed is an integer or null"),
    ("lock-task-setup", "a task's setup is a list of strings"),
    ("lock-task-cleanup", "a task's cleanup is a list of strings"),
    ("lock-task-labels", "a task's labels is an object of strings"),
    ("lock-digest", "digest is a string"),
    ("lock-digest-mismatch", "digest is the SHA-256 of the RFC 8785 canonical form of the lock without digest"),
    ("lock-canonical", "the lock has an RFC 8785 canonical form (integers within 2**53-1, string keys)"),
    ("lock-secret", "an account's credential, and every string under a key naming a password, secret, token or "
                    "api_key, is a reference env:NAME, file:PATH or vault:PATH (the error never shows the value)"),
    ("lock-has-digest", "suite lock SPEC: the spec has no digest yet (a lock is never edited: a change is a new lock)"),
    ("lock-copy", "a run's suite.lock.json has the digest its manifest names in suite.lock"),
)

#: Kinds of a finding of ``suite check`` (spec section 12), in the order they are reported.
FINDING_KINDS = ("lock_digest", "suite_identity", "task_set", "labels", "repeats", "drift_counted")
#: ``task_set`` names at most this many task_ids of each side.
LOCK_DETAIL_NAMES = 10
#: The ``lock`` warning of compare and board names at most this many differing paths.
LOCK_DIFF_PATHS = 5

#: The optional ``preflight`` of attempt.json (spec section 12): its rows of ``ARTIFACT``, which ``records.artifacts`` checks.
PREFLIGHT = tuple(f for f in ARTIFACT if f.name.startswith("attempt.json#/preflight"))

#: The pins the report shows of a lock: (label, JSON pointer), in table order.
LOCK_PIN_ROWS = (
    ("device", "/platform/device"),
    ("emulator", "/platform/emulator"),
    ("system image", "/platform/system_image"),
    ("snapshot", "/platform/snapshot/name"),
    ("locale", "/device_state/locale"),
    ("region", "/device_state/region"),
    ("timezone", "/device_state/timezone"),
    ("network", "/device_state/network"),
)
