"""subset.json as ``suite estimate`` reads it (capbench_nb.records.subset): every row of the table and every rule
between values refuses its damage with one problem naming the value; a document ``suite select`` wrote has none."""

from __future__ import annotations

import copy
import json

import pytest

from capbench_nb.errors import InvalidRunError
from capbench_nb.format.subset import MAX_DRAWS, SUBSET_FIELDS, SUBSET_RULES
from capbench_nb.metrics.subset import select_subset
from capbench_nb.records.run import load_run
from capbench_nb.records.subset import read_subset, subset_problems
from capbench_nb.simulation.writer import simulate_run


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    root = tmp_path_factory.mktemp("subset-doc")
    runs = []
    for seed in (1, 2, 3):
        simulate_run(root / f"r{seed}", tasks=12, repeats=2, seed=seed)
        runs.append(load_run(root / f"r{seed}"))
    return json.loads(json.dumps(select_subset(runs, size=4, strata="app", seed=0)))


def _at(doc, pointer: str):
    """The parent of ``pointer`` (its first item where the pointer says ``*``) and the last key."""
    *parents, key = pointer.split("/")[1:]
    node = doc
    for token in parents:
        node = node[0 if token == "*" else token]
    return node, key


def test_a_selected_subset_has_no_problem(doc):
    assert subset_problems(doc) == []


@pytest.mark.parametrize("field", [f for f in SUBSET_FIELDS if f.name], ids=lambda f: f.name)
def test_each_row_refuses_its_value_missing_and_of_another_type(doc, field):
    missing = copy.deepcopy(doc)
    parent, key = _at(missing, field.name)
    del parent[key]
    problems = subset_problems(missing)
    where = field.name.replace("*", "0")
    assert problems == [f"{where} is required"]
    wrong = copy.deepcopy(doc)
    parent, key = _at(wrong, field.name)
    parent[key] = True  # a boolean is no value of any row's type
    [problem] = subset_problems(wrong)
    assert problem.startswith(f"{where} must be ") and problem.endswith("not a boolean")


@pytest.mark.parametrize("field", [f for f in SUBSET_FIELDS if f.minimum is not None or f.maximum is not None],
                         ids=lambda f: f.name)
def test_each_range_is_refused_past_its_ends(doc, field):
    where = field.name.replace("*", "0")
    for bound, word in ((field.minimum, ">="), (field.maximum, "<=")):
        bad = copy.deepcopy(doc)
        parent, key = _at(bad, field.name)
        parent[key] = bound - 1 if word == ">=" else bound * 2 + 1
        [problem] = subset_problems(bad)
        assert problem.startswith(f"{where} must be {word} "), problem


def test_repeated_tasks_and_task_ids_are_refused(doc):
    bad = copy.deepcopy(doc)
    bad["tasks"][1] = bad["tasks"][0]
    assert subset_problems(bad) == [f"/tasks/1 repeats {bad['tasks'][0]!r} (also at /tasks/0)"]
    bad = copy.deepcopy(doc)
    full = bad["estimator"]["full_suite"]
    full[2]["task_id"] = full[0]["task_id"]
    assert subset_problems(bad) == [f"/estimator/full_suite/2/task_id repeats {full[0]['task_id']!r} "
                                    "(also at /estimator/full_suite/0/task_id)"]


def test_the_rules_between_values_in_their_order(doc):
    assert [name for name, _ in SUBSET_RULES] == ["size", "full-suite", "known-tasks"]
    size = copy.deepcopy(doc)
    size["size"] = 5
    assert subset_problems(size) == ["/tasks has 4 task_ids, /size says 5"]
    full = copy.deepcopy(doc)
    full["full_tasks"] = 13
    assert subset_problems(full)[0].startswith("/estimator/full_suite has 12 tasks; it must have /full_tasks (13)")
    known = copy.deepcopy(doc)
    known["tasks"][0] = "no.such.task"
    assert subset_problems(known) == ["1 task(s) of /tasks not in /estimator/full_suite, e.g. 'no.such.task'"]


@pytest.mark.parametrize("text, rule, words", [
    ('{"schema_version": "capbench.subset/1", "x": NaN}', "json-nan", "NaN"),
    ("[" * 100_000 + "]" * 100_000, "subset", "nested too deeply"),
    ('["a list"]', "subset", "the document must be an object, not an array"),
    ("{", "subset", "not valid JSON"),
])
def test_the_file_is_strict_json_of_one_object(tmp_path, text, rule, words):
    path = tmp_path / "subset.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        read_subset(tmp_path)  # the directory holding it
    assert info.value.rule == rule and words in str(info.value)


def test_draws_are_bounded_by_the_memory_they_take(doc):
    bad = copy.deepcopy(doc)
    bad["estimator"]["draws"] = MAX_DRAWS + 1
    assert subset_problems(bad) == [f"/estimator/draws must be <= {MAX_DRAWS}, found {MAX_DRAWS + 1}"]
