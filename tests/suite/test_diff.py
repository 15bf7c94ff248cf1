"""How two locks differ, and the ``lock`` warning of compare and board (spec section 12)."""

from __future__ import annotations

import copy
import shutil

from capbench_nb.metrics.board import board
from capbench_nb.metrics.compatibility import WARNING_CODES, compatibility_warnings
from capbench_nb.records.run import load_run
from capbench_nb.suite.diff import differing_paths, lock_differences
from capbench_nb.records.lock import dumps_lock, make_lock
from conftest import SAMPLE_RUN

BASE = {
    "schema_version": "capbench.suite-lock/1", "suite": {"name": "s", "version": "1"},
    "platform": {"device": "pixel_6", "system_image": {"api": 33, "sha256": "aa"}},
    "apps": [{"package": "a.one", "version_code": 1}, {"package": "b.two", "version_code": 2}],
    "run_policy": {"k": 2},
    "tasks": [{"task_id": "t/1", "seed": 1}, {"task_id": "t2", "seed": 2}],
}


def test_apps_and_tasks_by_their_key_not_their_position():
    other = copy.deepcopy(BASE)
    other["apps"].reverse()
    other["apps"][0]["version_code"] = 3  # b.two
    other["tasks"][0]["seed"] = 9  # t/1
    other["platform"]["system_image"]["sha256"] = "bb"
    other["network_fixtures"] = []
    sections, paths, n = lock_differences(BASE, other)
    assert sections == ["apps", "network_fixtures", "platform", "tasks"]
    assert paths == ["/apps/b.two/version_code", "/network_fixtures", "/platform/system_image/sha256", "/tasks/t~11/seed"]
    assert n == 4


def test_at_most_five_paths_and_the_digest_left_out():
    other = copy.deepcopy(BASE)
    other["platform"] = {f"k{i}": i for i in range(7)}
    other["digest"] = "sha256:x"
    sections, paths, n = lock_differences({**BASE, "digest": "sha256:y"}, other)
    assert sections == ["platform"] and len(paths) == 5 and n == 9
    assert lock_differences(BASE, copy.deepcopy(BASE)) == ([], [], 0)


def test_json_equality_of_leaves_and_position_for_other_lists():
    assert list(differing_paths({"a": 1, "l": [1, 2]}, {"a": 1.0, "l": [1]})) == ["/l/1"]
    assert list(differing_paths({"a": True}, {"a": 1})) == ["/a"]
    # apps without unique packages fall back to positions
    assert list(differing_paths({"apps": [{}, {}]}, {"apps": [{}, {"x": 1}]})) == ["/apps/1/x"]


def _locked_copy(tmp_path, name, spec):
    lock, problems = make_lock(spec, "spec")
    assert problems == []
    run = tmp_path / name
    shutil.copytree(SAMPLE_RUN, run)
    doc = __import__("json").loads((run / "manifest.json").read_text())
    doc["suite"]["lock"] = lock.digest
    (run / "manifest.json").write_text(__import__("json").dumps(doc))
    (run / "suite.lock.json").write_text(dumps_lock(lock))
    return run, lock


def test_compare_and_board_warn_of_different_locks(tmp_path):
    a, lock_a = _locked_copy(tmp_path, "a", copy.deepcopy(BASE))
    other = copy.deepcopy(BASE)
    other["platform"]["device"] = "pixel_7"
    b, lock_b = _locked_copy(tmp_path, "b", other)
    warnings = [w for w in compatibility_warnings(load_run(a), load_run(b)) if w["code"] == "lock"]
    assert len(warnings) == 1
    assert warnings[0]["details"] == {"a": lock_a.digest, "b": lock_b.digest, "sections": ["platform"],
                                      "paths": ["/platform/device"], "differing_paths": 1}
    assert "/platform/device" in warnings[0]["message"]
    assert "lock" in WARNING_CODES
    # one names none: the warning, without paths
    none = [w for w in compatibility_warnings(load_run(a), load_run(SAMPLE_RUN)) if w["code"] == "lock"]
    assert none[0]["details"] == {"a": lock_a.digest, "b": None} and "B names none" in none[0]["message"]
    # the same lock, or none at all: no warning
    assert not [w for w in compatibility_warnings(load_run(a), load_run(a)) if w["code"] == "lock"]
    assert not [w for w in compatibility_warnings(load_run(SAMPLE_RUN), load_run(SAMPLE_RUN)) if w["code"] == "lock"]
    doc = board([load_run(a), load_run(b), load_run(SAMPLE_RUN)], resamples=50)
    lock_warnings = [w for w in doc["compatibility"]["warnings"] if w["code"] == "lock"]
    assert lock_warnings and lock_warnings[0]["runs"] == [1, 2]
