"""Damaged and hostile inputs to the importers: every outcome a valid run or one line, exit 2, nothing written.

The loader's promise, held by ``capbench-nb import inspect`` and ``import tau-bench`` (issue 14):
bad input gives one line ``FILE[:LINE]: reason [rule: RULE]`` on stderr and exit 2, never a
traceback, nothing under ``--out`` (no staging folder left beside it either), the inputs unchanged.
An input that imports must be an ordinary run: ``capbench-nb metrics`` on it exits 0.

Inputs: the real logs of ``tests/data/inspect`` (``.json`` and ``.eval``) and
``tests/data/taubench``, cut at many offsets, with random byte flips (hypothesis), with each
field's type swapped, with hostile strings as ids; the cases issue 14 lists one by one; the limits
of ``capbench_nb.format.limits`` (a zip bomb, too many members, a JSON log above its size limit).
Everything runs in-process through ``capbench_nb.cli.main``.  ``CAPBENCH_FUZZ=long`` tries more
offsets and examples and the real 1 GiB decompression limit against a 2 GiB member.  The
importers' safety net (rule ``import-unsupported``, an exception no check foresaw) must never fire.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import LONG, TESTS, check_error, cli
from hypothesis_profiles import PROFILE
from capbench_nb.format import limits
from capbench_nb.records.importers.common import dir_name
from capbench_nb.records.importers.inspect_logs import eval_reader_available

DATA = TESTS / "data"
TAU = DATA / "taubench" / "gpt-4o-airline.trials.jsonl"
CLEAN_EVAL = DATA / "inspect" / "mock_pass_k_clean.eval"
ERROR_JSON = DATA / "inspect" / "mock_pass_k_with_error.json"
TAU2 = DATA / "tau2" / "grok-3-airline-4x4.json"

needs_eval_reader = pytest.mark.skipif(not eval_reader_available(),
                                       reason="reading zstd .eval logs needs the optional extra capbench-nb[inspect]")


def examples(default: int, long: int) -> int:
    return long if LONG else default


def fuzz(default: int, long: int):
    """Hypothesis settings: ``default`` examples (``long`` with CAPBENCH_FUZZ=long), never more than the
    suite's profile (tests/hypothesis_profiles.py: 100, or 1,000 in the long run)."""
    return settings(max_examples=min(examples(default, long), PROFILE.max_examples), deadline=None,
                    derandomize=not LONG,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


# --------------------------------------------------------------------------- the outcome


def digest(path: Path) -> str:
    if not path.is_file():  # a FIFO or a device: not read here either
        return "special"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def outcome(work: Path, source: str, *paths: Path, extra=()) -> tuple[int, str]:
    """``import SOURCE PATHS --out OUT`` in ``work`` (emptied first): (exit code, stderr), all checked.

    Exit 0: ``metrics`` works on the run (run once per distinct run, see ``_run_digest``). Exit 2: one line with a rule, no traceback, nothing at OUT
    and no staging folder beside it. Either way the inputs are unchanged.
    """
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    for leftover in sorted(work.glob("*")):
        if leftover.name.startswith(("out", ".out", "metrics")):
            _remove(leftover)
    before = [digest(p) for p in paths]
    rc, stdout, err = cli("import", source, *paths, "--out", out, *extra)
    assert [digest(p) for p in paths] == before, "an input changed"
    assert rc in (0, 2), (rc, err)
    assert not [p.name for p in work.iterdir() if p.name.startswith(".out.")], "a staging folder was left"
    if rc == 2:
        check_error(err)
        assert "[rule: import-unsupported]" not in err, f"the safety net caught what no check did: {err}"
        assert not out.exists() and stdout == ""
    else:
        assert stdout.strip() == str(out)
        run = _run_digest(out)
        if run not in _METRICS_OK:
            rc_m, _, err_m = cli("metrics", out, "--out", work / "metrics")
            assert rc_m == 0, err_m
            _METRICS_OK.add(run)
    return rc, err


_METRICS_OK: set[str] = set()  # digests of imported runs on which `metrics` has exited 0 in this process


def _run_digest(run_dir: Path) -> str:
    """A digest of every file of an imported run, the sources' sha256 left out of the manifest.

    Most mutations leave the records alone and change only the digest of the input the manifest names
    (``import.sources[].sha256``), which no check or metric reads; runs equal apart from it give the same
    ``metrics`` outcome, so ``outcome`` runs ``metrics`` once for each.
    """
    h = hashlib.sha256()
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path == run_dir / "manifest.json":
            manifest = json.loads(data)
            for source in manifest.get("import", {}).get("sources", []):
                source.pop("sha256", None)
            data = json.dumps(manifest, sort_keys=True).encode()
        rel = path.relative_to(run_dir).as_posix().encode()
        h.update(len(rel).to_bytes(8, "big") + rel + hashlib.sha256(data).digest())
    return h.hexdigest()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            _remove(child)
        path.rmdir()
    else:
        path.unlink()


def rule_of(err: str) -> str:
    return err.rsplit("[rule: ", 1)[1].rstrip("]\n")


# --------------------------------------------------------------------------- inputs


def json_log() -> dict:
    return json.loads(ERROR_JSON.read_text())


def small_log() -> dict:
    """The error log cut to 3 samples of 2 tasks (t5 epoch 3 errored), event transcripts dropped: fast to import."""
    doc = json_log()
    doc["samples"] = [s for s in doc["samples"] if (s["id"], s["epoch"]) in (("t1", 1), ("t5", 3), ("t5", 1))]
    for sample in doc["samples"]:
        sample.pop("events", None)
        sample.pop("events_data", None)
    doc["eval"]["dataset"]["sample_ids"] = ["t1", "t5"]
    return doc


SMALL = small_log()


def put(path: Path, doc_or_text) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(doc_or_text, bytes):
        path.write_bytes(doc_or_text)
    else:
        path.write_text(doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text))
    return path


def eval_log(path: Path, doc: dict, *, compression=zipfile.ZIP_DEFLATED, extra_members=()) -> Path:
    """A deflate-compressed ``.eval`` archive of a JSON log's header and samples (readable without the extra)."""
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in doc.items() if k != "samples"}))
        for i, sample in enumerate(doc["samples"]):  # inspect names them <id>_epoch_<n>.json; any name is read
            archive.writestr(f"samples/{i}_epoch.json", json.dumps(sample))
        for name, data in extra_members:
            archive.writestr(name, data)
    return path


def mutated(doc: dict, path: tuple, value) -> dict:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def raw_with(doc: dict, path: tuple, literal: str) -> str:
    """The log as JSON text with the value at ``path`` replaced by a raw JSON literal (a 5000-digit integer...)."""
    marker = "@@capbench-literal@@"
    return json.dumps(mutated(doc, path, marker)).replace(json.dumps(marker), literal, 1)


TAU_LINES = TAU.read_text().splitlines()
BIG = "9" * 5000


def small_tau2() -> dict:
    """The real tau2 results cut to 2 tasks x 2 trials, 3 messages each, the domain's policy and tools dropped."""
    doc = json.loads(TAU2.read_text())
    ids = [t["id"] for t in doc["tasks"][:2]]
    doc["info"]["environment_info"] = {"domain_name": doc["info"]["environment_info"]["domain_name"]}
    doc["info"]["num_trials"] = 2
    doc["tasks"] = doc["tasks"][:2]
    doc["simulations"] = [dict(s, messages=s["messages"][:3]) for s in doc["simulations"]
                          if s["task_id"] in ids and s["trial"] < 2]
    return doc


SMALL_TAU2 = small_tau2()

# --------------------------------------------------------------------------- the cases issue 14 lists


def _inspect_case(path, value=None, literal=None):
    return ("inspect", lambda: raw_with(SMALL, path, literal) if literal is not None else mutated(SMALL, path, value))


ISSUE_CASES = {
    # name: (source, build, expected rule)
    "sample id lone surrogate": (*_inspect_case(("samples", 0, "id"), "t\udcff"), "invalid-unicode"),
    "dataset id lone surrogate": (*_inspect_case(("eval", "dataset", "sample_ids", 0), "t\udcff"), "invalid-unicode"),
    "metadata key lone surrogate": (*_inspect_case(("samples", 0, "metadata"), {"k\udcff": "v"}), "invalid-unicode"),
    "5000-digit epoch": (*_inspect_case(("samples", 0, "epoch"), literal=BIG), "number-too-large"),
    "5000-digit epochs": (*_inspect_case(("eval", "config", "epochs"), literal=BIG), "number-too-large"),
    "5000-digit negative in output": (*_inspect_case(("samples", 1, "output"), literal="-" + BIG), "number-too-large"),
    "5000-digit score value": (*_inspect_case(("samples", 0, "scores", "pattern_scorer", "value"), literal=BIG),
                               "number-too-large"),
    "eval.config [1]": (*_inspect_case(("eval", "config"), [1]), "inspect-format"),
    "eval.dataset 'x'": (*_inspect_case(("eval", "dataset"), "x"), "inspect-format"),
    "eval.packages 5": (*_inspect_case(("eval", "packages"), 5), "inspect-format"),
    "status []": (*_inspect_case(("status",), []), "inspect-format"),
    "status {}": (*_inspect_case(("status",), {}), "inspect-format"),
    "eval.scorers 5": (*_inspect_case(("eval", "scorers"), 5), "inspect-format"),
    "tool_calls 5": (*_inspect_case(("samples", 0, "messages", 1, "tool_calls"), 5), "inspect-format"),
    "working_time 1e306": (*_inspect_case(("samples", 0, "working_time"), 1e306), "inspect-format"),
    "total_time 10**4000": (*_inspect_case(("samples", 0, "total_time"), 10**4000), "inspect-format"),
    "score '²'": (*_inspect_case(("samples", 0, "scores", "pattern_scorer", "value"), "²"), "inspect-score-value"),
    "score '1²'": (*_inspect_case(("samples", 0, "scores", "pattern_scorer", "value"), "1²"), "inspect-score-value"),
    "score '①'": (*_inspect_case(("samples", 0, "scores", "pattern_scorer", "value"), "①"), "inspect-score-value"),
    "tau task id lone surrogate": ("tau-bench", lambda: '{"task_id": "t\\udcff", "trial": 0, "reward": 1}\n',
                                   "invalid-unicode"),
    "tau 5000-digit reward": ("tau-bench", lambda: TAU_LINES[0] + "\n" + '{"task_id": 1, "trial": 0, "reward": '
                              + BIG + "}\n", "number-too-large"),
    "tau 5000-digit on line 1": ("tau-bench", lambda: '{"task_id": 1, "trial": ' + BIG + ', "reward": 1}\n',
                                 "number-too-large"),
    "tau 5000-digit in info": ("tau-bench", lambda: json.dumps([{"task_id": 1, "trial": 0, "reward": 1,
                                                                 "info": {"n": 1}}]).replace('"n": 1', '"n": ' + BIG),
                               "number-too-large"),
    "tau 4300-digit reward": ("tau-bench", lambda: '{"task_id": 1, "trial": 0, "reward": ' + "1" * 4300 + "}\n",
                              "number-too-large"),
    "tau 4300-digit trial": ("tau-bench", lambda: '{"task_id": 1, "trial": ' + "1" * 4300 + ', "reward": 1}\n',
                             "tau-bench-format"),
    "tau lone surrogate in the list form": ("tau-bench", lambda: '[{"task_id": 1, "trial": 0, "reward": 1, '
                                            '"traj": ["\\ud800"]}]', "invalid-unicode"),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_issue_14_importer_cases_are_one_line_exit_2(tmp_path, case):
    source, build, rule = ISSUE_CASES[case]
    name = "log.json" if source == "inspect" else "trials.jsonl"
    rc, err = outcome(tmp_path / "w", source, put(tmp_path / name, build()))
    assert rc == 2 and rule_of(err) == rule, err
    assert str(tmp_path / name) in err


@pytest.mark.parametrize("case", ["sample id lone surrogate", "5000-digit epoch", "eval.config [1]", "tool_calls 5",
                                  "score '1²'", "working_time 1e306"])
def test_the_same_cases_in_an_eval_archive(tmp_path, case):
    source, build, rule = ISSUE_CASES[case]
    built = build()
    doc = built if isinstance(built, dict) else None
    if doc is None:  # a raw literal: put the text of each sample into its member unchanged
        log = tmp_path / "log.eval"
        parsed = json.loads(built.replace(BIG, "0"))
        with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("header.json", json.dumps({k: v for k, v in parsed.items() if k != "samples"}))
            archive.writestr("samples/t1_epoch_1.json", json.dumps(parsed["samples"][0]).replace(
                '"epoch": 0', '"epoch": ' + BIG))
    else:
        log = eval_log(tmp_path / "log.eval", doc)
    rc, err = outcome(tmp_path / "w", "inspect", log)
    assert rc == 2 and rule_of(err) == rule, err


def test_pointers_and_lines_name_the_value(tmp_path):
    log = put(tmp_path / "a.json", raw_with(SMALL, ("samples", 1, "epoch"), BIG))
    rc, err = outcome(tmp_path / "a", "inspect", log)
    assert "the value at /samples/1/epoch is an integer literal of 5000 digits" in err
    log = put(tmp_path / "b.json", mutated(SMALL, ("samples", 0, "id"), "t\udcff"))
    rc, err = outcome(tmp_path / "b", "inspect", log)
    assert r"the string at /samples/0/id ('t\udcff') holds \udcff" in err
    text = "\n".join(TAU_LINES[:3] + ['{"task_id": "t\\udcff", "trial": 0, "reward": 1}']) + "\n"
    rc, err = outcome(tmp_path / "c", "tau-bench", put(tmp_path / "c.jsonl", text))
    assert f"{tmp_path / 'c.jsonl'}:4: the string at /task_id" in err


# --------------------------------------------------------------------------- names


def test_an_id_and_its_own_truncation_get_different_directories(tmp_path):
    """Issue 14: a 200-character id and the 120-character name it was cut to collided (``File exists``)."""
    long_id = "a" * 200
    cut = dir_name(long_id)
    assert len(cut) == 120 and cut != long_id[:120]
    lines = [{"task_id": long_id, "trial": 0, "reward": 1.0}, {"task_id": cut, "trial": 0, "reward": 0.0},
             {"task_id": long_id[:120], "trial": 0, "reward": 0.0}, {"task_id": long_id[:103] + "~" + cut[-16:],
                                                                      "trial": 0, "reward": 0.0}]
    src = put(tmp_path / "names.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    rc, err = outcome(tmp_path / "w", "tau-bench", src)
    assert rc == 0, err
    records = [json.loads(x) for x in (tmp_path / "w" / "out" / "results.jsonl").read_text().split("\n")[:-1]]
    dirs = {r["artifact_dir"] for r in records}
    assert len(dirs) == 4 and all(len(d.split("/")[1]) <= 120 for d in dirs)


HOSTILE_IDS = ["a" * 200, "a" * 120, "a" * 119 + "%", ".", "..", "...", "/", "../x", "a/b", "%2F", "%", "~", "%~",
               "a\x00b", "line\nbreak", "\x1b[31mred", "\u202eevil", "é", "e\u0301", "😀", "CON", " ", "-1", "0",
               "x" * 5000, "%~" + "0" * 16]


@fuzz(40, 500)
@given(ids=st.lists(st.one_of(st.sampled_from(HOSTILE_IDS), st.text(min_size=1, max_size=300)), min_size=1,
                    max_size=6, unique=True))
def test_hostile_task_ids_map_to_distinct_directories_inside_the_run(tmp_path_factory, ids):
    work = tmp_path_factory.mktemp("ids")
    src = put(work / "ids.jsonl", "".join(json.dumps({"task_id": t, "trial": 0, "reward": 1.0}) + "\n" for t in ids))
    rc, err = outcome(work, "tau-bench", src)
    if any(not t.isprintable() or any("\ud800" <= c <= "\udfff" for c in t) for t in ids) and rc == 2:
        return  # only lone surrogates are refused (invalid-unicode); hypothesis text holds none
    assert rc == 0, err
    out = work / "out"
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().split("\n")[:-1]]
    assert sorted(r["task_id"] for r in records) == sorted(ids)
    assert len({r["artifact_dir"] for r in records}) == len(ids)
    for r in records:
        target = (out / r["artifact_dir"] / "record.json").resolve()
        assert target.is_file() and target.is_relative_to(out.resolve())


def test_hostile_sample_ids_in_an_inspect_log(tmp_path):
    doc = json.loads(json.dumps(SMALL))
    doc["eval"]["dataset"]["sample_ids"] = ["../up", "a" * 200]
    doc["samples"][0]["id"] = "../up"
    for sample in doc["samples"][1:]:
        sample["id"] = "a" * 200
    rc, err = outcome(tmp_path / "w", "inspect", put(tmp_path / "log.json", doc))
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "w" / "out" / "attempts").iterdir()) == sorted(
        [dir_name("../up"), dir_name("a" * 200)])


# --------------------------------------------------------------------------- truncation and byte flips


def offsets(size: int, count: int) -> list[int]:
    step = max(1, size // count)
    return sorted({0, 1, 2, 3, 4, size - 1, size - 2, *range(5, size, step)} - {size})


TAU_BYTES, JSON_BYTES, EVAL_BYTES = TAU.read_bytes(), ERROR_JSON.read_bytes(), CLEAN_EVAL.read_bytes()
SOURCES = {
    "tau": ("tau-bench", "trials.jsonl", TAU_BYTES),
    "json": ("inspect", "log.json", JSON_BYTES),
    "eval": ("inspect", "log.eval", EVAL_BYTES),
    "tau2": ("tau2-bench", "results.json", json.dumps(SMALL_TAU2, indent=1).encode()),
}
SOURCE_PARAMS = ["tau", "json", pytest.param("eval", marks=needs_eval_reader), "tau2"]


@pytest.mark.parametrize("which", SOURCE_PARAMS)
def test_truncation_at_many_offsets(tmp_path, which):
    source, name, data = SOURCES[which]
    codes = []
    for cut in offsets(len(data), examples(30, 600)):
        rc, _ = outcome(tmp_path / "w", source, put(tmp_path / name, data[:cut]))
        codes.append(rc)
    assert 2 in codes
    if which == "tau":  # a cut at a line boundary is a shorter, valid file
        assert 0 in codes


@pytest.mark.parametrize("which", SOURCE_PARAMS)
def test_byte_flips(tmp_path_factory, which):
    source, name, data = SOURCES[which]

    @fuzz(60, 1000)
    @given(flips=st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=4))
    def check(flips):
        buf = bytearray(data)
        for pos, value in flips:
            buf[pos] = value
        work = tmp_path_factory.mktemp("flip")
        outcome(work, source, put(work / name, bytes(buf)))

    check()


def test_byte_flips_in_the_eval_header_and_samples_without_the_extra(tmp_path_factory):
    """A deflated .eval: flips reach the zip structures, the deflate streams and their CRCs."""
    data = eval_log(tmp_path_factory.mktemp("src") / "log.eval", SMALL).read_bytes()

    @fuzz(40, 600)
    @given(flips=st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=3))
    def check(flips):
        buf = bytearray(data)
        for pos, value in flips:
            buf[pos] = value
        work = tmp_path_factory.mktemp("flip")
        outcome(work, "inspect", put(work / "log.eval", bytes(buf)))

    check()


# --------------------------------------------------------------------------- every field's type swapped


def paths_of(doc, prefix=(), depth=5) -> list[tuple]:
    found = []
    if depth == 0:
        return found
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        here = prefix + (key,)
        found.append(here)
        if isinstance(value, dict) or (isinstance(value, list) and len(value) <= 12):
            found.extend(paths_of(value, here, depth - 1))
    return found


FIELD_PATHS = [p for p in paths_of(SMALL) if p[0] != "samples" or len(p) <= 2 or p[1] == 0]
FIELD_PATHS += [("samples", 0, "messages", 1, "tool_calls"), ("samples", 1, "messages", 0, "tool_calls")]  # absent keys
TAU_FIELDS = [("task_id",), ("trial",), ("reward",), ("info",), ("info", "error"), ("info", "traceback"), ("traj",)]
SWAPS = [None, True, 0, -1, 7, 1e306, "x", "", [1], [], {}, {"a": 1}]
SWAP_IDS = ["null", "true", "0", "-1", "7", "1e306", "x", "empty-string", "[1]", "[]", "{}", "object"]


def test_every_inspect_field_is_swapped_through_the_matrix():
    assert len(FIELD_PATHS) > 60  # the header, one sample in full, every sample as a whole
    for path in (("eval", "config", "epochs"), ("eval", "dataset", "sample_ids", 0), ("samples", 0, "working_time"),
                 ("samples", 0, "scores", "pattern_scorer", "value"), ("samples", 0, "model_usage", "mockllm/model",
                                                                       "input_tokens"), ("status",)):
        assert path in FIELD_PATHS, path


@pytest.mark.parametrize("swap", range(len(SWAPS)), ids=SWAP_IDS)
def test_each_inspect_field_type_swapped(tmp_path, swap):
    """Every field of the header and of a sample replaced by a value of another JSON type. By default each
    field gets one of the swaps (in turn, so every swap meets a twelfth of the fields); every swap with
    CAPBENCH_FUZZ=long."""
    counts = {0: 0, 2: 0}
    for i, path in enumerate(FIELD_PATHS):
        if not LONG and i % len(SWAPS) != swap:
            continue
        log = put(tmp_path / f"log{i % 2}.json", mutated(SMALL, path, SWAPS[swap]))
        rc, _ = outcome(tmp_path / "w", "inspect", log)
        counts[rc] += 1
    assert sum(counts.values()) >= len(FIELD_PATHS) // len(SWAPS)


TAU2_FIELDS = [p for p in paths_of(SMALL_TAU2, depth=4)
               if not (p[0] in ("tasks", "simulations") and len(p) > 2 and p[1] != 0)]
TAU2_FIELDS += [("simulations", 0, "messages", 0, key) for key in ("role", "usage", "tool_calls")]
TAU2_FIELDS += [("simulations", 1, "messages", 2, "usage", "prompt_tokens"), ("simulations", 1, "duration")]


@pytest.mark.parametrize("swap", range(len(SWAPS)), ids=SWAP_IDS)
def test_each_tau2_field_type_swapped(tmp_path, swap):
    """Every field of the results (info, one task, one simulation in full) with a value of another JSON type;
    each field gets one of the swaps in turn (every swap with CAPBENCH_FUZZ=long)."""
    assert ("simulations", 0, "reward_info", "reward") in TAU2_FIELDS and ("info", "num_trials") in TAU2_FIELDS
    for i, path in enumerate(TAU2_FIELDS):
        if LONG or i % len(SWAPS) == swap:
            outcome(tmp_path / "w", "tau2-bench", put(tmp_path / "results.json", mutated(SMALL_TAU2, path, SWAPS[swap])))


@pytest.mark.parametrize("swap", range(len(SWAPS)), ids=SWAP_IDS)
def test_each_taubench_field_type_swapped(tmp_path, swap):
    base = {"task_id": 3, "trial": 1, "reward": 0.5, "info": {"error": "boom", "traceback": "tb"}, "traj": []}
    for i, path in enumerate(TAU_FIELDS):
        trial = mutated(base, path, SWAPS[swap])
        for form, text in (("jsonl", TAU_LINES[0] + "\n" + json.dumps(trial) + "\n"),
                           ("json", json.dumps([json.loads(TAU_LINES[0]), trial]))):
            outcome(tmp_path / "w", "tau-bench", put(tmp_path / f"t{i}.{form}", text))


LEAVES = (st.none() | st.booleans() | st.integers(-2**64, 2**64) | st.floats(allow_nan=True, allow_infinity=True)
          | st.text(max_size=20) | st.sampled_from(["C", "I", "P", "N", "1.0", "²", "t\udcff", "\ud83d", BIG]))
NESTED = st.lists(LEAVES, max_size=3) | st.dictionaries(st.text(max_size=5), LEAVES, max_size=3)
JSON_VALUES = LEAVES | NESTED | st.lists(NESTED, max_size=2) | st.dictionaries(st.text(max_size=5), NESTED, max_size=2)


def _with_big_literals(doc) -> str:
    return json.dumps(doc).replace(json.dumps(BIG), BIG)  # the BIG string becomes a 5000-digit integer literal


@fuzz(150, 3000)
@given(path=st.sampled_from(FIELD_PATHS), value=JSON_VALUES, as_eval=st.booleans())
def test_any_json_value_in_any_inspect_field(tmp_path_factory, path, value, as_eval):
    work = tmp_path_factory.mktemp("any")
    doc = mutated(SMALL, path, value)
    if as_eval and isinstance(doc.get("samples"), list):
        text = _with_big_literals(doc)
        log = eval_log(work / "log.eval", json.loads(text.replace(BIG, "0")) if BIG in text else doc)
    else:
        log = put(work / "log.json", _with_big_literals(doc))
    outcome(work, "inspect", log)


@fuzz(100, 2000)
@given(path=st.sampled_from(TAU_FIELDS), value=JSON_VALUES, listed=st.booleans())
def test_any_json_value_in_any_taubench_field(tmp_path_factory, path, value, listed):
    work = tmp_path_factory.mktemp("any")
    trial = mutated({"task_id": 3, "trial": 1, "reward": 0.5, "info": {"error": "e"}, "traj": []}, path, value)
    first = json.loads(TAU_LINES[0])
    text = _with_big_literals([first, trial]) if listed else json.dumps(first) + "\n" + _with_big_literals(trial)
    outcome(work, "tau-bench", put(work / "trials.json", text))


@fuzz(60, 2000)
@given(path=st.sampled_from(TAU2_FIELDS), value=JSON_VALUES)
def test_any_json_value_in_any_tau2_field(tmp_path_factory, path, value):
    work = tmp_path_factory.mktemp("any")
    outcome(work, "tau2-bench", put(work / "results.json", _with_big_literals(mutated(SMALL_TAU2, path, value))))


def test_deep_nesting_in_a_record(tmp_path):
    for depth in (50, 400, 900, 5000):
        text = raw_with(SMALL, ("samples", 0, "store"), "[" * depth + "]" * depth)
        outcome(tmp_path / "w", "inspect", put(tmp_path / "log.json", text))
        line = '{"task_id": 1, "trial": 0, "reward": 1, "traj": ' + "[" * depth + "]" * depth + "}\n"
        outcome(tmp_path / "w", "tau-bench", put(tmp_path / "t.jsonl", line))


# --------------------------------------------------------------------------- limits


def _bomb(path: Path, size: int, *, zstd: bool = False) -> Path:
    """An .eval whose one sample member inflates to ``size`` bytes (a JSON string of spaces inside)."""
    head = json.dumps({k: v for k, v in SMALL.items() if k != "samples"}).encode()
    module = zipfile
    method = zipfile.ZIP_DEFLATED
    if zstd:
        from backports.zstd import zipfile as module  # noqa: N813 (the optional extra)

        method = module.ZIP_ZSTANDARD
    with module.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("header.json", head)
        with archive.open("samples/t1_epoch_1.json", "w", force_zip64=True) as member:
            chunk = b" " * (1 << 20)
            for _ in range(size >> 20):
                member.write(chunk)
    return path


def test_zip_bomb_is_refused_after_about_the_limit(tmp_path, monkeypatch):
    """Issue 14: a 2 MB .eval inflating to 2 GiB took 152 s and wrote a 2 GiB record.json. Here the
    limit is lowered to 8 MiB and the member inflates to 256 MiB: refused, having read about 8 MiB."""
    monkeypatch.setattr(limits, "MAX_EVAL_DECOMPRESSED_BYTES", 8 << 20)
    log = _bomb(tmp_path / "bomb.eval", 256 << 20)
    assert log.stat().st_size < 1 << 20
    tracemalloc.start()
    started = time.monotonic()
    try:
        rc, err = outcome(tmp_path / "w", "inspect", log)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2 and rule_of(err) == "eval-too-large", err
    assert "samples/t1_epoch_1.json inflates past the limit of 8 MiB" in err and "MAX_EVAL_DECOMPRESSED_BYTES" in err
    assert peak < 40 << 20, peak  # about the limit, not the 256 MiB the member declares
    assert time.monotonic() - started < 10


def test_declared_sizes_above_the_limit_are_refused_unread(tmp_path, monkeypatch):
    log = eval_log(tmp_path / "log.eval", SMALL)
    monkeypatch.setattr(limits, "MAX_EVAL_DECOMPRESSED_BYTES", 4000)
    rc, err = outcome(tmp_path / "w", "inspect", log)
    assert rc == 2 and rule_of(err) == "eval-too-large", err


@pytest.mark.skipif(not LONG, reason="CAPBENCH_FUZZ=long: a 2 GiB member against the real 1 GiB limit")
@needs_eval_reader
def test_zstd_bomb_against_the_real_limit(tmp_path):
    log = _bomb(tmp_path / "bomb.eval", 2 << 30, zstd=True)
    started = time.monotonic()
    rc, err = outcome(tmp_path / "w", "inspect", log)
    assert rc == 2 and rule_of(err) == "eval-too-large", err
    assert time.monotonic() - started < 60


def test_too_many_members(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_EVAL_MEMBERS", 50)
    log = eval_log(tmp_path / "log.eval", SMALL, extra_members=[(f"attachments/{i}.txt", "x") for i in range(60)])
    rc, err = outcome(tmp_path / "w", "inspect", log)
    assert rc == 2 and rule_of(err) == "eval-too-many-members", err
    assert "more than 50 members" in err and "MAX_EVAL_MEMBERS" in err
    monkeypatch.setattr(limits, "MAX_EVAL_MEMBERS", 70)
    assert outcome(tmp_path / "w", "inspect", log)[0] == 0


def test_zip64_archive_is_counted_too(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_EVAL_MEMBERS", 3)
    log = tmp_path / "log.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in SMALL.items() if k != "samples"}))
        for i in range(5):
            with archive.open(f"samples/t{i}_epoch_1.json", "w", force_zip64=True) as member:
                member.write(json.dumps(dict(SMALL["samples"][0], id=f"t{i}")).encode())
    rc, err = outcome(tmp_path / "w", "inspect", log)
    assert rc == 2 and rule_of(err) == "eval-too-many-members", err


@pytest.mark.parametrize("which", ["tau", "json", "tau2"])
def test_json_log_above_the_size_limit_is_refused_unread(tmp_path, monkeypatch, which):
    source, name, data = SOURCES[which]
    monkeypatch.setattr(limits, "MAX_IMPORT_LOG_BYTES", len(data) - 1)
    rc, err = outcome(tmp_path / "w", source, put(tmp_path / name, data))
    assert rc == 2 and rule_of(err) == "import-too-large", err
    assert f"is {len(data)} bytes, above the limit of {len(data) - 1} bytes (MAX_IMPORT_LOG_BYTES" in err
    monkeypatch.setattr(limits, "MAX_IMPORT_LOG_BYTES", len(data))
    assert outcome(tmp_path / "w", source, put(tmp_path / name, data))[0] == 0


def test_the_limits_are_documented():
    notes = (TESTS.parent / "docs" / "format-notes.md").read_text()
    for name in ("MAX_IMPORT_LOG_BYTES", "MAX_EVAL_DECOMPRESSED_BYTES", "MAX_EVAL_MEMBERS"):
        assert f"`{name}`" in notes, name
    assert limits.MAX_IMPORT_LOG_BYTES == 256 << 20 and limits.MAX_EVAL_DECOMPRESSED_BYTES == 1 << 30
    assert limits.MAX_EVAL_MEMBERS == 200_000


@pytest.mark.parametrize("source", ["inspect", "tau-bench", "tau2-bench"])
def test_a_fifo_or_device_as_the_log_does_not_hang(tmp_path, source):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        rc, err = outcome(tmp_path / "w", source, path)
        assert rc == 2 and rule_of(err) == "import-unreadable" and "not a regular file" in err, err


def test_tau2_folders_hold_the_same_promise(tmp_path, monkeypatch):
    """A folder of results files and tau2's dir format: special files are never opened for reading, a
    damaged simulation file is named, the files together stay within MAX_IMPORT_LOG_BYTES."""
    files = tmp_path / "files"
    put(files / "a.json", SMALL_TAU2)
    os.mkfifo(files / "b.json")  # skipped with a note: not a regular file
    rc, err = outcome(tmp_path / "w", "tau2-bench", files)
    assert rc == 0, err
    monkeypatch.setattr(limits, "MAX_IMPORT_LOG_BYTES", (files / "a.json").stat().st_size - 1)
    rc, err = outcome(tmp_path / "w", "tau2-bench", files)
    assert rc == 2 and rule_of(err) == "import-too-large", err
    monkeypatch.undo()
    folder = tmp_path / "dir"
    put(folder / "results.json", {k: v for k, v in SMALL_TAU2.items() if k != "simulations"})
    for i, sim in enumerate(SMALL_TAU2["simulations"]):
        put(folder / "simulations" / f"{i}.json", sim)
    assert outcome(tmp_path / "w", "tau2-bench", folder)[0] == 0
    put(folder / "simulations" / "1.json", json.dumps(SMALL_TAU2["simulations"][1])[:-9])
    rc, err = outcome(tmp_path / "w", "tau2-bench", folder)
    assert rc == 2 and str(folder / "simulations" / "1.json") in err and "not valid JSON" in err, err
    (folder / "simulations" / "1.json").unlink()
    os.mkfifo(folder / "simulations" / "1.json")
    rc, err = outcome(tmp_path / "w", "tau2-bench", folder)
    assert rc == 2 and rule_of(err) == "import-unreadable" and "not a regular file" in err, err


def test_nan_sources_still_import(tmp_path):
    """What the checks must not refuse: bare NaN tokens (inspect writes them), a 4300-digit integer where
    no number is read, a huge integer score (a failure), a surrogate pair."""
    doc = mutated(SMALL, ("samples", 0, "scores", "pattern_scorer", "value"), 10**4000)
    doc["samples"][1]["output"] = {"nan": math.nan, "big": 10**4299, "emoji": "\ud83d\ude00"}
    rc, err = outcome(tmp_path / "w", "inspect", put(tmp_path / "log.json", doc))
    assert rc == 0, err
    out = tmp_path / "w" / "out"
    rec = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert (rec["task_id"], rec["success"], rec["quality_score"]) == ("t1", False, None)


def test_line_separators_inside_json_lines_strings(tmp_path):
    """Only "\\n" ends a line of the JSON-lines form: U+2028, U+0085 and a form feed inside a string do not."""
    lines = [json.dumps({"task_id": f"t{i}\u2028\x85\x0c", "trial": 0, "reward": 1.0, "info": {"note": "a\u2029b"}},
                        ensure_ascii=False) for i in range(3)]
    rc, err = outcome(tmp_path / "w", "tau-bench", put(tmp_path / "t.jsonl", "\r\n".join(lines) + "\r\n"))
    assert rc == 0, err
    assert len((tmp_path / "w" / "out" / "results.jsonl").read_text().split("\n")) == 4
