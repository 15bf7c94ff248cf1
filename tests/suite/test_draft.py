"""A draft lock from a run's plan (suite lock --from-run)."""

from __future__ import annotations

import json

from capbench_nb.suite.draft import draft_from_run, plan_labels
from capbench_nb.records.lock import make_lock
from conftest import SAMPLE_RUN, manifest, write_run


def test_the_draft_of_the_sample_run_is_a_valid_spec():
    draft = draft_from_run(SAMPLE_RUN)
    plan = json.loads((SAMPLE_RUN / "manifest.json").read_text())
    assert [t["task_id"] for t in draft["tasks"]] == [t["task_id"] for t in plan["plan"]["tasks"]]
    assert draft["run_policy"] == {"k": 2} and "digest" not in draft
    assert draft["platform"] == {} and draft["device_state"] == {} and draft["apps"] == []
    assert draft["tasks"][0] == {"task_id": "settings.wifi.toggle", "params": {}, "seed": None, "setup": [],
                                 "cleanup": [], "labels": {"app": "settings", "platform": "android"}}
    lock, problems = make_lock(draft, "draft.json")
    assert problems == [] and lock["suite"] == {"name": "mobile-core-sim", "version": "2026.11"}


def test_labels_that_are_not_strings_become_their_json_text(tmp_path):
    path = write_run(tmp_path / "run", manifest([{"task_id": "a", "repeats": 3, "hard": True, "n": 2}]), [])
    assert draft_from_run(path)["tasks"][0]["labels"] == {"hard": "true", "n": "2"}
    assert draft_from_run(path)["run_policy"]["k"] == 3
    assert plan_labels({"task_id": "a", "repeats": 1, "x": {"b": 1, "a": None}}) == {"x": '{"a": null, "b": 1}'}
