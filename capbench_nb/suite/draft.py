"""A draft lock from a run's plan (spec section 12: ``suite lock --from-run RUN``): tasks, labels and k,
every pin left empty for the user to fill in before ``suite lock`` adds the digest."""

from __future__ import annotations

import json
import os
from pathlib import Path

from capbench_nb.format.lock import LOCK_SCHEMA_VERSION
from capbench_nb.format.vocabulary import MANIFEST
from capbench_nb.records.manifest import fixed_k, load_manifest

__all__ = ["draft_from_run", "plan_labels"]


def plan_labels(task: dict) -> dict:
    """A plan task's labels (spec section 2), as a lock writes them: every key other than ``task_id`` and
    ``repeats``; a value that is not a string as its JSON text (a lock's labels are strings)."""
    return {key: value if isinstance(value, str) else _text(value)
            for key, value in task.items() if key not in ("task_id", "repeats")}


def draft_from_run(run_dir: str | os.PathLike) -> dict:
    """The draft lock of a run: a spec without a digest (``suite lock SPEC`` makes it a lock).

    ``suite`` is the manifest's name and version; ``run_policy.k`` its fixed k; ``tasks`` its plan, in
    plan order, with labels (a label that is not a string is written as its JSON text, since a lock's
    labels are strings); ``platform``, ``device_state``, ``apps``, ``accounts`` and ``network_fixtures``
    are empty, to be filled in.
    """
    manifest = load_manifest(Path(run_dir) / MANIFEST)
    suite = manifest.get("suite") if isinstance(manifest.get("suite"), dict) else {}
    tasks = [{"task_id": task["task_id"], "params": {}, "seed": None, "setup": [], "cleanup": [],
              "labels": plan_labels(task)}
             for task in manifest["plan"]["tasks"]]
    return {
        "schema_version": LOCK_SCHEMA_VERSION,
        "suite": {"name": suite.get("name") or "", "version": suite.get("version") or ""},
        "platform": {}, "device_state": {}, "apps": [], "accounts": [], "network_fixtures": [],
        "run_policy": {"k": fixed_k(manifest)},
        "tasks": tasks,
        "selection": None,
    }


def _text(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
