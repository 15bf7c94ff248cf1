"""The lock of a frozen suite (spec section 12): its digest by RFC 8785, its table-driven validation, secrets."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.limits import MAX_LOCK_BYTES
from capbench_nb.format.lock import LOCK, LOCK_CHECKS
from capbench_nb.records.lock import (
    dumps_lock, is_secret_reference, load_lock, lock_digest, lock_problems, make_lock, read_spec,
)
from conftest import cli

SPEC = {
    "schema_version": "capbench.suite-lock/1",
    "suite": {"name": "mobile-core-frozen", "version": "2026.12"},
    "platform": {"device": "pixel_6", "system_image": {"api": 33, "sha256": "ab"}},
    "device_state": {"locale": "en-US", "network": "offline"},
    "apps": [{"package": "net.osmand", "version_code": 4613}],
    "accounts": [{"id": "contacts-owner", "credential": "env:CONTACTS_TOKEN"}],
    "run_policy": {"k": 3, "isolation": "snapshot_restore"},
    "tasks": [{"task_id": "settings.wifi.toggle", "params": {}, "seed": 30, "setup": ["restore:init_state"],
               "labels": {"app": "settings"}}],
    "selection": None,
}


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def rules(doc, **kw):
    return [(e.rule, e.pointer) for e in lock_problems(doc, "suite.lock.json", **kw)]


# --------------------------------------------------------------------------- digest (RFC 8785)

@pytest.mark.parametrize("value, canonical", [
    # RFC 8785 section 3.2.2.3: numbers as ECMAScript's Number.prototype.toString
    (1.0, b"1"), (1e21, b"1e+21"), (1e-7, b"1e-7"), (-0.0, b"0"), (0.000001, b"0.000001"), (1e20, b"100000000000000000000"),
    (333333333.33333329, b"333333333.3333333"), (-1.5, b"-1.5"),
    # strings: UTF-8 as is, control characters as \uXXXX lowercase or their short escapes
    ("€ö", "\"€ö\"".encode()), ("\u000f", b'"\\u000f"'), ("\n\t\"\\", b'"\\n\\t\\"\\\\"'), ("\u007f", b'"\x7f"'),
])
def test_digest_is_the_sha256_of_the_rfc8785_form(value, canonical):
    # the lock's only key besides digest is "v": its JCS form is {"v":<canonical>}, written by hand
    assert lock_digest({"v": value, "digest": "ignored"}) == sha(b'{"v":' + canonical + b"}")


def test_digest_sorts_keys_by_utf16_code_units():
    # RFC 8785 section 3.2.3's example: U+1F600 (surrogates D83D DE00) sorts before U+FB33
    keys = ["\u20ac", "\r", "\ufb33", "1", "\U0001F600", "\u0080", "\u00f6"]
    expected = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"]
    canonical = "{" + ",".join(json.dumps(k, ensure_ascii=False).replace("\r", "\\r") + ":0" for k in expected) + "}"
    assert lock_digest({k: 0 for k in keys}) == sha(canonical.encode())


def test_digest_leaves_out_only_the_digest_key():
    assert lock_digest({"a": [1, {"b": None}], "digest": "x"}) == sha(b'{"a":[1,{"b":null}]}')
    assert lock_digest({"a": 1}) != lock_digest({"a": 1, "z": None})


def test_digest_of_a_value_with_no_canonical_form_is_an_error():
    with pytest.raises(ValueError):
        lock_digest({"n": 2**53})
    assert rules({**SPEC, "n": 2**60}, digest_required=False) == [("lock-canonical", None)]


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
                       max_size=5))
def test_digest_does_not_depend_on_key_order_or_the_written_text(doc):
    reordered = dict(reversed(list(doc.items())))
    assert lock_digest(doc) == lock_digest(reordered) == lock_digest(json.loads(json.dumps(doc)))


# --------------------------------------------------------------------------- validation


def test_a_spec_becomes_a_valid_lock():
    lock, problems = make_lock(copy.deepcopy(SPEC), "spec.json")
    assert problems == []
    assert lock["digest"] == lock_digest(SPEC)
    assert lock_problems(dict(lock), "suite.lock.json") == []


def test_every_rule_of_the_table_is_a_listed_check():
    listed = {rule for rule, _ in LOCK_CHECKS}
    for field in LOCK:
        assert field.type_rule in listed
        for rule in (field.low_rule, field.high_rule, field.vocabulary_rule):
            assert not rule or rule in listed


CASES = [
    (lambda d: d.pop("schema_version"), [("lock-schema-version", "/schema_version")]),
    (lambda d: d.update(schema_version="capbench.suite-lock/2"), [("lock-schema-version", "/schema_version")]),
    (lambda d: d["suite"].update(name=""), [("lock-suite", "/suite/name")]),
    (lambda d: d["suite"].pop("version"), [("lock-suite", "/suite/version")]),
    (lambda d: d.update(platform=[]), [("lock-platform", "/platform")]),
    (lambda d: d.update(device_state="x"), [("lock-device-state", "/device_state")]),
    (lambda d: d["apps"].append({"package": "net.osmand"}), [("lock-app-duplicate", "/apps/1/package")]),
    (lambda d: d["apps"].append({}), [("lock-apps", "/apps/1/package")]),
    (lambda d: d["run_policy"].update(k=0), [("lock-k", "/run_policy/k")]),
    (lambda d: d["run_policy"].update(k=True), [("lock-k", "/run_policy/k")]),
    (lambda d: d.pop("run_policy"), [("lock-run-policy", "/run_policy")]),
    (lambda d: d.update(tasks=[]), [("lock-tasks-empty", "/tasks")]),
    (lambda d: d["tasks"].append({"task_id": "settings.wifi.toggle"}), [("lock-task-id-duplicate", "/tasks/1/task_id")]),
    (lambda d: d["tasks"][0].update(task_id=""), [("lock-task-id", "/tasks/0/task_id")]),
    (lambda d: d["tasks"][0].update(labels={"app": 1}), [("lock-task-labels", "/tasks/0/labels/app")]),
    (lambda d: d["tasks"][0].update(params=[]), [("lock-task-params", "/tasks/0/params")]),
    (lambda d: d["tasks"][0].update(seed=1.5), [("lock-task-seed", "/tasks/0/seed")]),
    (lambda d: d["tasks"][0].update(setup=[1]), [("lock-task-setup", "/tasks/0/setup/0")]),
    (lambda d: d["tasks"][0].update(cleanup="x"), [("lock-task-cleanup", "/tasks/0/cleanup")]),
    (lambda d: d.update(digest=5), [("lock-digest", "/digest")]),
    (lambda d: d.update(accounts={}), [("lock-accounts", "/accounts")]),
    (lambda d: d.update(tasks=["a"]), [("lock-tasks", "/tasks/0")]),
]
#: Rules the other tests of this module (and tests/suite/test_check.py: lock-copy) break.
OTHER_CASES = {"lock-json", "lock-unreadable", "lock-type", "lock-digest-mismatch", "lock-canonical", "lock-secret",
               "lock-has-digest", "lock-copy", "lock-too-large"}


def test_every_lock_rule_has_a_case():
    assert {rule for _, expected in CASES for rule, _ in expected} | OTHER_CASES == {r for r, _ in LOCK_CHECKS}


@pytest.mark.parametrize("change, expected", CASES)
def test_each_rule_names_its_pointer(change, expected):
    doc = copy.deepcopy(SPEC)
    change(doc)
    assert rules(doc, digest_required=False) == expected


def test_every_problem_is_one_error():
    doc = copy.deepcopy(SPEC)
    doc["suite"]["name"] = 1
    doc["tasks"].append({"task_id": ""})
    doc["run_policy"]["k"] = -1
    assert rules(doc, digest_required=False) == [
        ("lock-suite", "/suite/name"), ("lock-k", "/run_policy/k"), ("lock-task-id", "/tasks/1/task_id")]


def test_a_lock_needs_its_digest_and_the_right_one():
    assert rules(copy.deepcopy(SPEC)) == [("lock-digest", "/digest")]
    lock = {**SPEC, "digest": lock_digest(SPEC)}
    assert rules(lock) == []
    assert rules({**lock, "selection": {"n": 5}}) == [("lock-digest-mismatch", "/digest")]


def test_other_keys_are_kept_and_enter_the_digest():
    lock, _ = make_lock({**SPEC, "extra": {"x": 1}}, "s")
    assert lock["extra"] == {"x": 1} and lock["digest"] != lock_digest(SPEC)


def test_a_not_an_object_lock():
    assert rules([1]) == [("lock-type", "")]


# --------------------------------------------------------------------------- secrets

SECRET = "hunter2-very-secret"


@pytest.mark.parametrize("where, pointer", [
    (lambda d: d["accounts"][0].update(credential=SECRET), "/accounts/0/credential"),
    (lambda d: d["platform"].update(API_KEY=SECRET), "/platform/API_KEY"),
    (lambda d: d["apps"][0].update(login={"Password": SECRET}), "/apps/0/login/Password"),
    (lambda d: d.update(db_secrets=["env:A", SECRET]), "/db_secrets/1"),
    (lambda d: d["device_state"].update(auth={"refresh_token": {"v": SECRET}}), "/device_state/auth/refresh_token/v"),
    (lambda d: d["accounts"][0].update(credential="env:"), "/accounts/0/credential"),
])
def test_a_secret_is_refused_by_its_key_never_shown(where, pointer):
    doc = copy.deepcopy(SPEC)
    where(doc)
    problems = lock_problems(doc, "s.json", digest_required=False)
    assert [(e.rule, e.pointer) for e in problems] == [("lock-secret", pointer)]
    assert SECRET not in str(problems[0]) and "hunter2" not in repr(problems[0].__dict__)


def test_references_and_numbers_under_secret_keys_are_fine():
    doc = copy.deepcopy(SPEC)
    doc["platform"].update(token="vault:kv/app/token", password_file="file:/run/pw", max_tokens=4096)
    assert rules(doc, digest_required=False) == []
    assert is_secret_reference("env:X") and not is_secret_reference("ENV:X") and not is_secret_reference("x")


# --------------------------------------------------------------------------- files


def test_load_lock_reads_what_dumps_lock_wrote(tmp_path):
    lock, _ = make_lock(copy.deepcopy({**SPEC, "suite": {"name": "süite", "version": "1"}}), "s")
    text = dumps_lock(lock)
    assert text.endswith("}\n") and "süite" in text and text.index('"apps"') < text.index('"digest"')
    assert text == json.dumps(dict(lock), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    (tmp_path / "suite.lock.json").write_text(text, encoding="utf-8")
    assert load_lock(tmp_path / "suite.lock.json") == lock


def test_load_lock_refuses_nan_and_a_missing_file(tmp_path):
    (tmp_path / "l.json").write_text('{"a": NaN}')
    with pytest.raises(InvalidRunError) as err:
        load_lock(tmp_path / "l.json")
    assert err.value.rule == "json-nan"
    with pytest.raises(InvalidRunError) as err:
        load_lock(tmp_path / "absent.json")
    assert err.value.rule == "lock-unreadable"


@pytest.mark.parametrize("reader", [load_lock, read_spec])
def test_a_lock_over_the_stated_limit_is_refused_before_it_is_read(tmp_path, reader):
    big = tmp_path / "suite.lock.json"
    with open(big, "wb") as fh:  # sparse: the size is real, the disk and memory are not used
        fh.truncate(MAX_LOCK_BYTES + 1)
    with pytest.raises(InvalidRunError) as err:
        reader(big)
    assert err.value.rule == "lock-too-large" and "100 MiB" in str(err.value)
    (tmp_path / "small.json").write_bytes(b" " * 10 + b"{}")  # far under the limit: read, then judged
    with pytest.raises(InvalidRunError) as err:
        load_lock(tmp_path / "small.json")
    assert err.value.rule != "lock-too-large"


def test_a_yaml_spec_keeps_timestamps_as_strings(tmp_path):
    (tmp_path / "spec.yaml").write_text(
        "schema_version: capbench.suite-lock/1\nsuite: {name: s, version: '1'}\n"
        "device_state: {datetime: 2023-10-15T15:34:00Z}\nrun_policy: {k: 2}\ntasks: [{task_id: a}]\n")
    spec = read_spec(tmp_path / "spec.yaml")
    assert spec["device_state"]["datetime"] == "2023-10-15T15:34:00Z"
    lock, problems = make_lock(spec, "spec.yaml")
    assert problems == [] and lock["digest"] == lock_digest(json.loads(json.dumps(spec)))


def test_a_yaml_spec_with_non_json_values(tmp_path):
    (tmp_path / "spec.yml").write_text("a: .nan\n1: x\n")
    assert [e.rule for e in lock_problems(read_spec(tmp_path / "spec.yml"), "s")] == ["lock-json", "lock-json"]
    (tmp_path / "bad.yml").write_text("a: [\n")
    with pytest.raises(InvalidRunError) as err:
        read_spec(tmp_path / "bad.yml")
    assert err.value.rule == "lock-json"


def _laughs(levels: int, indent: str = "") -> list[str]:
    """A billion laughs: level i is nine aliases of level i-1, so the last level stands for 9**levels strings."""
    lines = [f'{indent}l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    return lines + [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]


def _spec_text(params: str, pins: list[str] = ()) -> str:
    return "\n".join(["schema_version: capbench.suite-lock/1", "suite: {name: s, version: '1'}",
                      "run_policy: {k: 1}", *(["platform:", *pins] if pins else []),
                      f"tasks: [{{task_id: t, params: {params}}}]"]) + "\n"


@pytest.mark.parametrize("text, rule, message", [
    ("a: &a [*a]\n", "lock-json", "recursive alias"),
    ("a: &a {b: *a}\n", "lock-json", "recursive alias"),
    ("a: &a [1, [2, {c: *a}]]\n", "lock-json", "recursive alias"),
    ("[" * 100_000 + "\n", "lock-json", "nested too deeply"),  # PyYAML composes by recursion
    ("a: " + "[" * 600 + "]" * 600 + "\n", "lock-json", "nested too deeply"),
    ("a: " + "[" * 450 + "]" * 450 + "\n", "lock-json", "nested more than 400 levels deep"),
    ("\n".join(["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 2000)]) + "\n", "lock-json",
     "nested more than 400 levels deep"),  # aliases nest deeper than the text
    ("\n".join(_laughs(9)) + "\n", "lock-too-large", "larger than 100 MiB (MAX_LOCK_BYTES)"),
    ("\n".join(_laughs(40)) + "\n", "lock-too-large", "larger than 100 MiB (MAX_LOCK_BYTES)"),
    ("a: " + "9" * 5000 + "\n", "number-too-large", "the integer at line 1 is longer than 4300 digits"),
])
def test_a_yaml_spec_json_cannot_write_is_one_line_exit_2_nothing_written(tmp_path, text, rule, message):
    (tmp_path / "spec.yaml").write_text(text)
    with pytest.raises(InvalidRunError) as err:
        read_spec(tmp_path / "spec.yaml")
    assert err.value.rule == rule and message in str(err.value)
    rc, out, err = cli("suite", "lock", tmp_path / "spec.yaml", "--out", tmp_path / "lock.json")
    assert (rc, out) == (2, "") and err.count("\n") == 1 and f"[rule: {rule}]" in err
    assert not (tmp_path / "lock.json").exists()


def test_yaml_aliases_within_the_limits_are_the_values_they_repeat(tmp_path):
    # shared, not recursive: an alias used twice, in two places, and a merge
    (tmp_path / "spec.yaml").write_text(_spec_text("{steps: *s, again: *s, m: {<<: *m, y: 2}}", [
        "  steps: &s [restore:init_state, {wait: 1}]", "  base: &m {x: 1, y: 1}"]))
    spec = read_spec(tmp_path / "spec.yaml")
    assert spec["tasks"][0]["params"] == {"steps": ["restore:init_state", {"wait": 1}],
                                           "again": ["restore:init_state", {"wait": 1}], "m": {"x": 1, "y": 2}}
    # 9**5 laughs, about 3.6 MB written: under MAX_LOCK_BYTES, so a lock, written as load_lock reads it back
    (tmp_path / "laughs.yaml").write_text(_spec_text("{x: *l4}", _laughs(5, "  ")))
    lock, problems = make_lock(read_spec(tmp_path / "laughs.yaml"), "laughs.yaml")
    assert problems == []
    text = dumps_lock(lock)
    assert len(text) > 9**5 * 5 and len(text.encode()) <= MAX_LOCK_BYTES
    assert json.loads(text)["tasks"][0]["params"]["x"][8][8][8][8][8] == "lol"


def test_yaml_merges_of_merges_load_in_linear_time(tmp_path):
    # PyYAML before 6.0.4 copied a merged mapping's pairs once per alias (yaml/pyyaml#897): 9**30 pairs
    lines = ["  m0: &m0 {x: 1}"] + [f"  m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}], k{i}: {i}}}"
                                    for i in range(1, 30)]
    (tmp_path / "spec.yaml").write_text(_spec_text("{m: *m29}", lines))
    spec = read_spec(tmp_path / "spec.yaml")
    assert spec["tasks"][0]["params"]["m"] == {"x": 1, **{f"k{i}": i for i in range(1, 30)}}


def test_a_spec_with_a_digest_is_refused():
    lock, problems = make_lock({**SPEC, "digest": "sha256:00"}, "s")
    assert lock is None and [e.rule for e in problems] == ["lock-has-digest"]
