"""Property-based tests of load_run + compute_metrics (spec sections 3, 6, 7, 8).

A hypothesis strategy builds random *valid* run directories (manifest.json and
results.jsonl, no artifacts), and every property is checked on the package's
metrics.json document and its canonical text (``capbench_nb.io.atomic.dumps``); section 7 checks
every property tag of the metric registry (``capbench_nb.metrics.registry``) on every metric that
claims it.

Example budgets: half the suite's hypothesis profile (tests/hypothesis_profiles.py; ``CAPBENCH_FUZZ=long``
runs ten times as many).  The registry tests of section 7 run on in-memory runs (the records DataFrame
``load_run`` would read, built from the records); one test checks that against a load from disk.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from scipy import stats as sps

import numpy as np
import pandas as pd

import capbench_nb
from capbench_nb.format import RECORD_COLUMNS, RECORD_DTYPES, TELEMETRY_FIELDS, new_record
from capbench_nb.records.exact_reader import CATEGORIES, record_values
from capbench_nb.records.manifest import fixed_k, plan_frame
from capbench_nb.records.run import classify_records
from capbench_nb.io.atomic import dumps
from capbench_nb.io.files import sha256_file
from capbench_nb.metrics.prepare import k_eligible_tasks
from capbench_nb.metrics.rates import Rate
from capbench_nb.metrics.registry import KINDS, METRICS, REGISTRY, TAGS, metrics_with, register

from conftest import SAMPLE_RUN
from hypothesis_profiles import PROFILE as SUITE_PROFILE, scaled

# --------------------------------------------------------------------------- settings

#: Half the suite's profile (tests/hypothesis_profiles.py: 100 examples, 1,000 with CAPBENCH_FUZZ=long):
#: each example here loads a run, or several.
PROFILE = scaled(SUITE_PROFILE, 1 / 2)

# --------------------------------------------------------------------------- vocabulary (spec 3, 5)

TELEMETRY_COUNT = (
    "tool_calls", "device_actions", "llm_calls", "input_tokens", "output_tokens", "total_tokens",
    "cached_input_tokens", "reasoning_tokens", "tool_errors", "replan_count",
)
TELEMETRY_MS = ("task_wall_ms", "setup_ms", "time_to_first_token_ms", "device_execution_ms", "screenshot_capture_ms")
TELEMETRY_BOOL = ("recovery_attempted", "recovery_succeeded")
TELEMETRY = (
    "task_wall_ms", "setup_ms", "tool_calls", "device_actions", "llm_calls", "input_tokens",
    "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens",
    "time_to_first_token_ms", "device_execution_ms", "screenshot_capture_ms", "tool_errors",
    "replan_count", "recovery_attempted", "recovery_succeeded",
)
NUMERIC_TELEMETRY = TELEMETRY_COUNT + TELEMETRY_MS
CLASS_KEYS = ("success", "agent", "environment", "evaluation", "skipped", "unknown")
INELIGIBLE_KINDS = ("environment", "evaluation", "skipped", "unknown")  # unknown: with eligible false
RATES = ("pass@1", "pass@k", "pass^k")
CLASS_WEIGHTS = ("success",) * 4 + ("agent",) * 3 + ("environment", "evaluation", "skipped", "unknown", "unknown")

# --------------------------------------------------------------------------- strategies

task_ids = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
    st.sampled_from(["a", "b", "NaN", "None", "null", "<NA>", "1", "a|b*`<x>", " ", "é\u2028"]),
)


@st.composite
def telemetry_values(draw):
    tele = {}
    for name in TELEMETRY:
        choice = draw(st.integers(0, 9))
        if choice == 0:
            continue  # a missing key reads as null (spec section 8)
        if choice <= 2:
            tele[name] = None
        elif name in TELEMETRY_BOOL:
            tele[name] = draw(st.booleans())
        elif name in TELEMETRY_COUNT:
            tele[name] = draw(st.integers(0, 10**6))
        else:
            tele[name] = draw(st.integers(0, 10**7))
    return tele


@st.composite
def records(draw, task_id: str, attempt: int):
    """A random record of spec section 3 that keeps every invariant."""
    # Weighted towards eligible outcomes so that k-eligible tasks (k > 1) are common.
    cls = draw(st.sampled_from(CLASS_WEIGHTS))
    success = cls == "success"
    if cls in ("success", "agent"):
        eligible = True
    elif cls == "unknown":
        eligible = draw(st.booleans())
    else:
        eligible = False
    tele = draw(telemetry_values())
    rec = new_record(
        task_id=task_id, attempt=attempt, success=success, agent_eligible=eligible,
        failure_class="" if success else cls,
        quality_score=draw(st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0, 1, 0.5]))),
        telemetry=tele,
        telemetry_source={name: f"attempt.json#/{name}" for name, v in tele.items() if v is not None},
    )
    if draw(st.integers(0, 9)) == 0:
        rec["x_extra"] = {"kept": [1, 2]}  # unknown extra fields are ignored (spec preamble)
    return rec


@dataclass
class RunSpec:
    manifest: dict
    records: list  # record dicts, in file order
    planned: dict  # task_id -> planned repeats, plan order
    k: int
    ensure_ascii: bool


@st.composite
def run_specs(draw):
    n_tasks = draw(st.integers(1, 8))
    ids = draw(st.lists(task_ids, min_size=n_tasks, max_size=n_tasks, unique=True))
    repeats = draw(st.lists(st.integers(1, 4), min_size=n_tasks, max_size=n_tasks))
    override = draw(st.one_of(st.none(), st.none(), st.integers(1, 4)))
    planned = {t: (override if override is not None else r) for t, r in zip(ids, repeats)}
    k = min(planned.values())
    drop_repeats = override is not None and draw(st.booleans())
    tasks = []
    for t, r in zip(ids, repeats):
        task = {"task_id": t}
        if not drop_repeats:
            task["repeats"] = r
        if draw(st.booleans()):
            task["app"] = draw(st.sampled_from(["settings", "maps", "mail"]))
        tasks.append(task)
    plan = {"repeats_override": override, "tasks": tasks}
    k_mode = draw(st.sampled_from(["absent", "null", "value"]))
    if k_mode == "value":
        plan["k"] = k
    elif k_mode == "null":
        plan["k"] = None
    manifest = {
        "schema_version": "capbench.run/1",
        "run_id": "prop-run",
        "suite": {"name": "prop-suite", "version": "1"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": draw(st.sampled_from(["completed", "partial", "aborted"])),
        "runner": {"name": "hypothesis", "version": "0"},
        "config": {"model": "m", "judge": draw(st.booleans())},
        "plan": plan,
    }

    recs = []
    for t, p in planned.items():
        present = draw(st.lists(st.integers(0, 5), min_size=p, max_size=p))
        for attempt, keep in enumerate(present, start=1):
            if keep:  # present 5 times in 6
                recs.append(draw(records(t, attempt)))
        if draw(st.integers(0, 7)) == 0:
            recs.append(draw(records(t, p + 1)))  # above the planned repeats
    if draw(st.integers(0, 3)) == 0:
        stranger = draw(task_ids.filter(lambda s: s not in planned))
        for attempt in range(1, draw(st.integers(1, 2)) + 1):
            recs.append(draw(records(stranger, attempt)))  # a task not in the plan
    order = draw(st.permutations(range(len(recs))))
    return RunSpec(
        manifest=manifest,
        records=[recs[i] for i in order],
        planned=planned,
        k=k,
        ensure_ascii=draw(st.booleans()),
    )


# --------------------------------------------------------------------------- helpers


def render(spec: RunSpec, recs=None, blanks_before=None) -> tuple[str, list[int]]:
    """results.jsonl text and the physical (1-based) line of each record.

    ``blanks_before[i]`` empty lines are written before record i.
    """
    recs = spec.records if recs is None else recs
    out, lines = [], []
    for i, rec in enumerate(recs):
        out.extend([""] * (blanks_before[i] if blanks_before else 0))
        out.append(json.dumps(rec, ensure_ascii=spec.ensure_ascii))
        lines.append(len(out))
    return "".join(line + "\n" for line in out), lines


def write_run(directory: str, manifest: dict, results_text: str) -> None:
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, ensure_ascii=False)
    with open(os.path.join(directory, "results.jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(results_text)


def metrics_of(manifest: dict, results_text: str) -> tuple[dict, str]:
    """(compute_metrics document, dumps text) of a run written to a fresh temp dir."""
    d = tempfile.mkdtemp(prefix="capbench-prop-")
    try:
        write_run(d, manifest, results_text)
        doc = capbench_nb.compute_metrics(capbench_nb.load_run(d))
        return doc, dumps(doc)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def spec_metrics(spec: RunSpec, recs=None, blanks_before=None) -> tuple[dict, str]:
    text, _ = render(spec, recs, blanks_before)
    return metrics_of(spec.manifest, text)


def counts(spec: RunSpec, rec: dict) -> bool:
    """The record enters metrics: a planned task, within its planned repeats (spec 6)."""
    p = spec.planned.get(rec["task_id"])
    return p is not None and rec["attempt"] <= p


def tele(rec: dict, name: str):
    return rec["telemetry"].get(name)


# --------------------------------------------------------------------------- 1. line order


def _normalised(doc: dict) -> str:
    doc = copy.deepcopy(doc)
    doc["provenance"]["inputs"]["results.jsonl"] = None
    for a in doc["anomalies"]:
        a["line"] = None
    # Anomalies are listed in file order (spec 8), so a shuffle reorders them.
    doc["anomalies"].sort(key=lambda a: (a["kind"], a["task_id"], a["attempt"], a["reason"]))
    return dumps(doc)


def _check_anomaly_lines(doc: dict, recs: list, lines: list[int]) -> None:
    got = [a["line"] for a in doc["anomalies"]]
    assert got == sorted(got), "anomalies must be in file order"
    where = {(r["task_id"], r["attempt"]): ln for r, ln in zip(recs, lines)}
    for a in doc["anomalies"]:
        assert a["line"] == where[(a["task_id"], a["attempt"])]


@settings(scaled(PROFILE, 1 / 2))  # two loads per example
@given(spec=run_specs(), data=st.data())
def test_shuffling_lines_and_blank_lines_change_nothing_else(spec, data):
    base_doc, base_text = spec_metrics(spec)
    perm = data.draw(st.permutations(range(len(spec.records))), label="permutation")
    shuffled = [spec.records[i] for i in perm]
    blanks = data.draw(st.lists(st.integers(0, 2), min_size=len(shuffled), max_size=len(shuffled)), label="blanks")
    trailing = data.draw(st.integers(0, 2), label="trailing blank lines")
    text, lines = render(spec, shuffled, blanks)
    text += "\n" * trailing
    doc, _ = metrics_of(spec.manifest, text)

    assert _normalised(doc) == _normalised(base_doc)
    # What may differ, differs only as the spec says.
    assert doc["provenance"]["inputs"]["manifest.json"] == base_doc["provenance"]["inputs"]["manifest.json"]
    _check_anomaly_lines(base_doc, spec.records, render(spec)[1])
    _check_anomaly_lines(doc, shuffled, lines)
    if text == render(spec)[0]:
        assert doc["provenance"] == base_doc["provenance"]
    else:
        assert doc["provenance"]["inputs"]["results.jsonl"] != base_doc["provenance"]["inputs"]["results.jsonl"]


# --------------------------------------------------------------------------- 2. ineligible == missing


@settings(scaled(PROFILE, 1 / 2))  # two loads per example
@given(spec=run_specs(), data=st.data())
def test_ineligible_attempt_moves_rates_exactly_as_a_missing_one(spec, data):
    assume(spec.records)
    i = data.draw(st.integers(0, len(spec.records) - 1), label="record index")
    kind = data.draw(st.sampled_from(INELIGIBLE_KINDS), label="ineligible class")
    target = spec.records[i]
    note(f"record {target['task_id']!r} attempt {target['attempt']} -> {kind}, ineligible")

    ineligible = copy.deepcopy(target)
    ineligible.update(success=False, agent_eligible=False, failure_class=kind)
    turned = spec.records[:i] + [ineligible] + spec.records[i + 1 :]
    removed = spec.records[:i] + spec.records[i + 1 :]
    a, _ = spec_metrics(spec, turned)
    b, _ = spec_metrics(spec, removed)

    for name in RATES:
        assert a["metrics"][name] == b["metrics"][name], name
    # Neither enters the oracle, the efficiency aggregates (eligible attempts only)
    # or the per-task success statistics.
    assert a["metrics"]["oracle_best_score@k"] == b["metrics"]["oracle_best_score@k"]
    for name in TELEMETRY:
        if name != "setup_ms":
            assert a["telemetry"][name] == b["telemetry"][name], name
    strip = lambda entries: [{key: v for key, v in e.items() if key != "attempts"} for e in entries]  # noqa: E731
    assert strip(a["per_task"]) == strip(b["per_task"])

    # Only the attempt counts differ, and by exactly this record when it counts.
    c = 1 if counts(spec, target) else 0
    assert a["attempts"]["total"] == b["attempts"]["total"] + c
    assert a["attempts"]["eligible"] == b["attempts"]["eligible"]
    expected_classes = dict(b["attempts"]["by_failure_class"])
    expected_classes[kind] += c
    assert a["attempts"]["by_failure_class"] == expected_classes
    setup_a, setup_b = a["telemetry"]["setup_ms"], b["telemetry"]["setup_ms"]
    assert setup_a["n"] + setup_a["nulls"] == setup_b["n"] + setup_b["nulls"] + c


# --------------------------------------------------------------------------- 3. orderings


@settings(PROFILE)
@given(spec=run_specs())
def test_rate_orderings_and_coverage(spec):
    doc, _ = spec_metrics(spec)
    m = doc["metrics"]
    planned = len(spec.planned)
    assert doc["tasks"]["planned"] == planned
    at, hat, one = m["pass@k"], m["pass^k"], m["pass@1"]
    assert at["n"] == hat["n"]
    assert (at["value"] is None) == (hat["value"] is None) == (at["n"] == 0)
    assert hat["successes"] <= at["successes"] <= at["n"]
    if at["value"] is not None:
        assert hat["value"] <= at["value"]
    # k-eligible tasks have an eligible attempt 1, and all-k successes include attempt 1.
    assert at["n"] <= one["n"] <= planned
    assert hat["successes"] <= one["successes"] <= one["n"]
    for name in RATES:
        r = m[name]
        assert 0 <= r["successes"] <= r["n"] <= planned
        assert r["coverage"] == r["n"] / planned
        if r["n"] == 0:
            assert r["value"] is None and r["ci_low"] is None and r["ci_high"] is None
        else:
            assert r["value"] == r["successes"] / r["n"]
            assert 0.0 <= r["ci_low"] <= r["value"] <= r["ci_high"] <= 1.0
    if spec.k == 1:
        assert m["pass@1"] == m["pass@k"] == m["pass^k"]
    assert doc["k"] == spec.k


# --------------------------------------------------------------------------- 4. nulls are not zeros


def _independent_values(spec: RunSpec, recs: list, name: str) -> list:
    pool = [r for r in recs if counts(spec, r) and (name == "setup_ms" or r["agent_eligible"])]
    return [tele(r, name) for r in pool if tele(r, name) is not None]


@settings(scaled(PROFILE, 1 / 2))  # three loads per example
@given(spec=run_specs(), data=st.data())
def test_null_telemetry_never_moves_an_aggregate_as_zero_would(spec, data):
    name = data.draw(st.sampled_from(NUMERIC_TELEMETRY + TELEMETRY_BOOL), label="field")
    candidates = [
        i for i, r in enumerate(spec.records) if counts(spec, r) and (r["agent_eligible"] or name == "setup_ms")
    ]
    assume(candidates)
    i = data.draw(st.sampled_from(candidates), label="record index")
    boolean = name in TELEMETRY_BOOL
    value = True if boolean else data.draw(st.integers(0, 10**6), label="original value")
    zero_value = False if boolean else 0

    def with_value(v):
        rec = copy.deepcopy(spec.records[i])
        rec["telemetry"][name] = v
        return spec.records[:i] + [rec] + spec.records[i + 1 :]

    orig, null, zero = (spec_metrics(spec, with_value(v))[0]["telemetry"][name] for v in (value, None, zero_value))
    note(f"field {name}: value={orig} null={null} zero={zero}")

    assert null["n"] == orig["n"] - 1
    assert null["nulls"] == orig["nulls"] + 1
    assert zero["n"] == orig["n"] and zero["nulls"] == orig["nulls"]
    rest = _independent_values(spec, with_value(None), name)
    assert len(rest) == null["n"]

    if boolean:  # booleans aggregate as counts of true (spec 6, 8)
        assert set(null) == {"n", "nulls", "true"}
        assert null["true"] == (sum(rest) if rest else None)
        assert zero["true"] == sum(rest)
        assert orig["true"] == sum(rest) + 1
        return

    if rest:
        exact_mean = Fraction(sum(rest), len(rest))
        assert null["mean"] == float(exact_mean)
        assert null["mean"] == math.fsum(rest) / len(rest)
        assert null["sum"] == sum(rest)
        assert null["min"] == min(rest) and null["max"] == max(rest)
        assert zero["mean"] == float(Fraction(sum(rest), len(rest) + 1))
        if exact_mean != 0:
            assert null["mean"] != zero["mean"]
    else:  # n = 0: every statistic null, sum included (spec 8)
        assert null == {"n": 0, "nulls": null["nulls"], "sum": None, "mean": None, "median": None,
                        "p90": None, "min": None, "max": None}
        assert zero["mean"] == 0 and zero["sum"] == 0
    assert zero["min"] == 0
    assert orig["mean"] == float(Fraction(sum(rest) + value, len(rest) + 1))


# --------------------------------------------------------------------------- 5. re-implementation


def _wilson_scipy(x: int, n: int):
    if n == 0:
        return None, None
    ci = sps.binomtest(x, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def _percentile(values: list, q: Fraction) -> Fraction:
    """Linear interpolation between order statistics (numpy's default), exactly."""
    s = sorted(values)
    h = (len(s) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def reference(spec: RunSpec, lines: list[int]) -> dict:
    """spec section 6, written out literally over the generated record dicts."""
    k = spec.k
    counted = [r for r in spec.records if counts(spec, r)]
    by_key = {(r["task_id"], r["attempt"]): r for r in counted}

    def present_eligible(t, j):
        r = by_key.get((t, j))
        return r is not None and r["agent_eligible"]

    def succeeded(t, j):
        r = by_key.get((t, j))
        return r is not None and r["success"]

    rates = {}
    den1 = [t for t in spec.planned if present_eligible(t, 1)]
    rates["pass@1"] = (sum(1 for t in den1 if succeeded(t, 1)), len(den1))
    k_eligible = [t for t in spec.planned if all(present_eligible(t, j) for j in range(1, k + 1))]
    rates["pass@k"] = (sum(1 for t in k_eligible if any(succeeded(t, j) for j in range(1, k + 1))), len(k_eligible))
    rates["pass^k"] = (sum(1 for t in k_eligible if all(succeeded(t, j) for j in range(1, k + 1))), len(k_eligible))

    by_class = {key: 0 for key in CLASS_KEYS}
    for r in counted:
        by_class["success" if r["success"] else r["failure_class"]] += 1

    per_task = []
    for t, p in spec.planned.items():
        mine = [r for r in counted if r["task_id"] == t]
        wins = [r["attempt"] for r in mine if r["success"]]
        first = min(wins) if wins else None
        cost = None
        if first is not None:
            upto = [r for r in mine if r["agent_eligible"] and r["attempt"] <= first]
            cost = {}
            for name in ("task_wall_ms", "total_tokens"):
                addends = [tele(r, name) for r in upto]
                cost[name] = None if any(v is None for v in addends) else sum(addends)
            cost["cost"] = None  # every generated record has cost null
        oracle = None
        if t in k_eligible:
            scores = [by_key[(t, j)]["quality_score"] for j in range(1, k + 1)]
            scores = [s for s in scores if s is not None]
            oracle = max(scores) if scores else None
        per_task.append(
            {
                "task_id": t,
                "planned_repeats": p,
                "attempts": len(mine),
                "eligible": sum(1 for r in mine if r["agent_eligible"]),
                "successes": len(wins),
                "k_eligible": t in k_eligible,
                "first_success_attempt": first,
                "cost_to_first_success": cost,
                "oracle_best_score": oracle,
            }
        )
    best = [e["oracle_best_score"] for e in per_task if e["oracle_best_score"] is not None]

    telemetry = {}
    for name in TELEMETRY:
        pool = [r for r in counted if name == "setup_ms" or r["agent_eligible"]]
        vals = [tele(r, name) for r in pool]
        present = [v for v in vals if v is not None]
        n = len(present)
        if name in TELEMETRY_BOOL:
            telemetry[name] = {"n": n, "nulls": len(vals) - n, "true": sum(present) if n else None}
        elif n == 0:
            telemetry[name] = dict(n=0, nulls=len(vals), sum=None, mean=None, median=None, p90=None, min=None, max=None)
        else:
            telemetry[name] = {
                "n": n,
                "nulls": len(vals) - n,
                "sum": sum(present),
                "mean": float(Fraction(sum(present), n)),
                "median": float(_percentile(present, Fraction(1, 2))),
                "p90": float(_percentile(present, Fraction(9, 10))),
                "min": min(present),
                "max": max(present),
            }

    anomalies = []
    for r, ln in zip(spec.records, lines):
        if r["task_id"] not in spec.planned:
            anomalies.append({"kind": "task_not_in_plan", "task_id": r["task_id"], "attempt": r["attempt"], "line": ln})
        elif r["attempt"] > spec.planned[r["task_id"]]:
            anomalies.append({"kind": "above_planned_repeats", "task_id": r["task_id"], "attempt": r["attempt"], "line": ln})

    return {
        "k": k,
        "rates": rates,
        "tasks": {"planned": len(spec.planned), "observed": len({r["task_id"] for r in counted})},
        "attempts": {
            "total": len(counted),
            "eligible": sum(1 for r in counted if r["agent_eligible"]),
            "by_failure_class": by_class,
        },
        "oracle": {"value": math.fsum(best) / len(best) if best else None, "n": len(best)},
        "per_task": per_task,
        "telemetry": telemetry,
        "anomalies": anomalies,
    }


@settings(PROFILE)
@given(spec=run_specs(), data=st.data())
def test_metrics_match_an_independent_reimplementation(spec, data):
    blanks = data.draw(st.lists(st.integers(0, 1), min_size=len(spec.records), max_size=len(spec.records)))
    text, lines = render(spec, blanks_before=blanks)
    doc, _ = metrics_of(spec.manifest, text)
    ref = reference(spec, lines)

    assert doc["k"] == ref["k"]
    planned = len(spec.planned)
    for name in RATES:
        successes, n = ref["rates"][name]
        got = doc["metrics"][name]
        assert (got["successes"], got["n"]) == (successes, n), name
        assert got["value"] == (successes / n if n else None), name
        assert got["coverage"] == n / planned, name
        low, high = _wilson_scipy(successes, n)
        if n == 0:
            assert got["ci_low"] is None and got["ci_high"] is None
        else:
            assert abs(got["ci_low"] - low) <= 1e-12 and abs(got["ci_high"] - high) <= 1e-12, name
    assert doc["attempts"] == ref["attempts"]
    assert list(doc["attempts"]["by_failure_class"]) == list(CLASS_KEYS)
    assert doc["tasks"] == ref["tasks"]
    assert [e["first_success_attempt"] for e in doc["per_task"]] == [e["first_success_attempt"] for e in ref["per_task"]]
    assert [e["task_id"] for e in doc["per_task"]] == list(spec.planned)


@settings(PROFILE)
@given(spec=run_specs())
def test_per_task_oracle_telemetry_and_anomalies_match_reimplementation(spec):
    text, lines = render(spec)
    doc, _ = metrics_of(spec.manifest, text)
    ref = reference(spec, lines)

    assert [{key: e[key] for key in ref["per_task"][0]} for e in doc["per_task"]] == ref["per_task"]
    assert doc["metrics"]["oracle_best_score@k"] == ref["oracle"]
    for name in TELEMETRY:
        got, want = doc["telemetry"][name], ref["telemetry"][name]
        assert set(got) == set(want), name
        for stat in want:
            if stat in ("median", "p90") and want[stat] is not None:
                assert got[stat] == pytest.approx(want[stat], rel=1e-12, abs=1e-9), (name, stat)
            else:
                assert got[stat] == want[stat], (name, stat)
    assert [{key: a[key] for key in ("kind", "task_id", "attempt", "line")} for a in doc["anomalies"]] == ref["anomalies"]
    kinds = [a["kind"] for a in ref["anomalies"]]
    assert doc["anomaly_counts"] == {
        kind: kinds.count(kind) for kind in ("above_planned_repeats", "task_not_in_plan", "invalid_line")
    }


# --------------------------------------------------------------------------- 6. determinism


@settings(scaled(PROFILE, 1 / 2))  # three loads per example
@given(spec=run_specs())
def test_metrics_text_is_deterministic(spec):
    text, _ = render(spec)
    first = tempfile.mkdtemp(prefix="capbench-prop-")
    second = tempfile.mkdtemp(prefix="capbench-prop-other-")
    try:
        write_run(first, spec.manifest, text)
        one = dumps(capbench_nb.compute_metrics(capbench_nb.load_run(first)))
        two = dumps(capbench_nb.compute_metrics(capbench_nb.load_run(first)))
        assert one == two
        # Another directory with the same bytes: no path leaks into the output.
        shutil.copy(os.path.join(first, "manifest.json"), second)
        shutil.copy(os.path.join(first, "results.jsonl"), second)
        three = dumps(capbench_nb.compute_metrics(capbench_nb.load_run(second)))
        assert three == one
        assert first not in one and os.path.basename(first) not in one
        # Canonical text: a JSON round trip of the same document, ASCII only, newline-terminated.
        assert one.endswith("\n") and one.isascii()
        assert json.loads(one) == json.loads(dumps(json.loads(one)))
        assert json.loads(one)["provenance"]["inputs"] == {
            "manifest.json": sha256_file(os.path.join(first, "manifest.json")),
            "results.jsonl": sha256_file(os.path.join(first, "results.jsonl")),
        }
    finally:
        shutil.rmtree(first, ignore_errors=True)
        shutil.rmtree(second, ignore_errors=True)


# --------------------------------------------------------------------------- 7. the metric registry
#
# Every property tag of capbench_nb.metrics.registry, checked on every registered metric that claims
# it (scikit-learn's sklearn/metrics/tests/test_common.py style), over the runs of run_specs().


#: A quarter of the examples of the document-level tests above (12 by default, as many per metric as
#: before); each example checks every metric of a tag on an in-memory run (no file written per example).
REGISTRY_PROFILE = scaled(PROFILE, 1 / 4)


@dataclass(frozen=True)
class MemoryRun:
    """What a registered metric reads of a loaded Run: the records (with ``anomaly``), the plan and k."""

    records: pd.DataFrame
    plan: pd.DataFrame
    k: int


def records_frame(recs: list[dict]) -> pd.DataFrame:
    """The records DataFrame ``load_run`` reads from a results.jsonl of ``recs`` (one per line, no blank
    line), built in memory: each record validated by the exact reader's ``record_values`` (evidence not
    resolved: the specs have none), each column of its dtype in ``RECORD_DTYPES``.
    test_in_memory_runs_are_what_load_run_reads checks it against a load from disk."""
    rows = [record_values(rec, None) for rec in recs]
    data = {"line": np.arange(1, len(recs) + 1, dtype="int64")}
    for j, name in enumerate(RECORD_COLUMNS[1:] + TELEMETRY_FIELDS):
        values = [row[j] for row in rows]
        if name in CATEGORIES:
            data[name] = pd.Categorical(values, categories=CATEGORIES[name])
        elif RECORD_DTYPES[name] == "category":
            data[name] = pd.Categorical(values)
        else:
            data[name] = pd.array(values, dtype=RECORD_DTYPES[name])
    return pd.DataFrame(data)


def in_memory(spec: RunSpec) -> MemoryRun:
    """The Run of a spec without a file: the plan, k and counted/anomaly classification of ``load_run``."""
    plan = plan_frame(spec.manifest)
    records = records_frame(spec.records)
    records["anomaly"] = classify_records(records, plan)
    return MemoryRun(records=records, plan=plan, k=fixed_k(spec.manifest))


@settings(PROFILE)
@given(spec=run_specs())
def test_in_memory_runs_are_what_load_run_reads(spec):
    """The one round trip through disk of the registry tests: a spec written as manifest.json and
    results.jsonl and loaded gives the records, plan and k of ``in_memory``, dtypes and categories included."""
    d = tempfile.mkdtemp(prefix="capbench-reg-")
    try:
        write_run(d, spec.manifest, render(spec)[0])
        run = capbench_nb.load_run(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    memory = in_memory(spec)
    pd.testing.assert_frame_equal(memory.records, run.records, check_exact=True)
    for name in memory.records.columns:
        x, y = memory.records[name], run.records[name]
        assert x.dtype == y.dtype, name
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert list(x.cat.categories) == list(y.cat.categories), name
            assert x.cat.categories.dtype == y.cat.categories.dtype, name
    pd.testing.assert_frame_equal(memory.plan, run.plan, check_exact=True)
    assert memory.k == run.k


def canon(result):
    """A registered metric's result as plain data: Rate/ScoreMean fields, or a list of them."""
    if isinstance(result, list):
        return [canon(r) for r in result]
    return result.to_dict()


def rates_in(result) -> list:
    return [r for r in (result if isinstance(result, list) else [result]) if isinstance(r, Rate)]


def points_in(result) -> list:
    return result if isinstance(result, list) else [result]


def _with_tag(tag: str) -> list:
    metrics = metrics_with(tag)
    assert metrics, f"no registered metric has the tag {tag}"
    return metrics


# Each test draws one run and checks every metric with its tag on it (the draw of a run costs more than
# a metric on it); an assertion names the metric.


@REGISTRY_PROFILE
@given(spec=run_specs(), data=st.data())
def test_registry_order_invariant(spec, data):
    run = in_memory(spec)
    for metric in _with_tag("order_invariant"):
        order = data.draw(st.permutations(range(len(run.records))), label=f"{metric.name}: row order")
        shuffled = run.records.iloc[list(order)].reset_index(drop=True)
        assert canon(metric(shuffled, run.plan, run.k)) == canon(metric(run.records, run.plan, run.k)), metric.name


@REGISTRY_PROFILE
@given(spec=run_specs(), data=st.data())
def test_registry_counted_only(spec, data):
    run = in_memory(spec)
    assume(len(run.records))
    planned = dict(zip(run.plan["task_id"].astype(object), run.plan["planned_repeats"]))
    counted = run.records[run.records["anomaly"].isna()].reset_index(drop=True)
    for metric in _with_tag("counted_only"):
        i = data.draw(st.integers(0, len(run.records) - 1), label=f"{metric.name}: copied row")
        extra = run.records.iloc[[i, i]].reset_index(drop=True)
        extra.loc[0, "task_id"] = "\x00not planned"
        task = extra.loc[1, "task_id"]
        extra.loc[1, "attempt"] = planned.get(task, 1) + data.draw(st.integers(1, 3), label=f"{metric.name}: above by")
        more = pd.concat([run.records, extra], ignore_index=True)
        want = canon(metric(counted, run.plan, run.k))
        assert canon(metric(run.records, run.plan, run.k)) == want, metric.name
        assert canon(metric(more, run.plan, run.k)) == want, metric.name


@REGISTRY_PROFILE
@given(spec=run_specs(), data=st.data())
def test_registry_ineligible_is_missing(spec, data):
    run = in_memory(spec)
    assume(len(run.records))
    for metric in _with_tag("ineligible_is_missing"):
        i = data.draw(st.integers(0, len(run.records) - 1), label=f"{metric.name}: row")
        kind = data.draw(st.sampled_from(INELIGIBLE_KINDS), label=f"{metric.name}: ineligible class")
        turned = run.records.copy()
        turned.loc[i, ["success", "agent_eligible", "failure_class"]] = [False, False, kind]
        removed = run.records.drop(index=i).reset_index(drop=True)
        assert canon(metric(turned, run.plan, run.k)) == canon(metric(removed, run.plan, run.k)), metric.name


@REGISTRY_PROFILE
@given(spec=run_specs())
def test_registry_ordered_family(spec):
    run = in_memory(spec)
    family = sorted(_with_tag("ordered_family"), key=lambda m: m.rank)
    assert [m.name for m in family] == ["pass^k", "pass@1", "pass@k"]
    same = run.plan[k_eligible_tasks(run.records, plan=run.plan, k=run.k)].reset_index(drop=True)
    results = [m(run.records, same, run.k) for m in family]
    assert len({r.n for r in results}) == 1 and results[0].n == len(same)
    successes = [r.successes for r in results]
    assert successes == sorted(successes), dict(zip([m.name for m in family], successes))


@REGISTRY_PROFILE
@given(spec=run_specs(), data=st.data())
def test_registry_null_on_empty(spec, data):
    run = in_memory(spec)
    for metric in _with_tag("null_on_empty"):
        if data.draw(st.booleans(), label=f"{metric.name}: no rows"):
            empty = run.records.iloc[:0]
        else:  # every row ineligible: every denominator is empty too
            empty = run.records.copy()
            empty["success"], empty["agent_eligible"], empty["failure_class"] = False, False, "environment"
        for point in points_in(metric(empty, run.plan, run.k)):
            assert point.value is None and point.n == 0, metric.name
            if isinstance(point, Rate):
                assert point.ci_low is None and point.ci_high is None and point.successes == 0, metric.name


@REGISTRY_PROFILE
@given(spec=run_specs())
def test_registry_interval_holds_value(spec):
    run = in_memory(spec)
    for metric in _with_tag("interval_holds_value"):
        rates = rates_in(metric(run.records, run.plan, run.k))
        assert rates, metric.name
        for r in rates:
            if r.value is None:
                assert r.ci_low is None and r.ci_high is None, metric.name
            else:
                assert 0.0 <= r.ci_low <= r.value <= r.ci_high <= 1.0, metric.name


#: The test of each tag: a tag without a test here fails test_every_tag_is_tested.
TAG_TESTS = {
    "order_invariant": test_registry_order_invariant,
    "counted_only": test_registry_counted_only,
    "ineligible_is_missing": test_registry_ineligible_is_missing,
    "ordered_family": test_registry_ordered_family,
    "null_on_empty": test_registry_null_on_empty,
    "interval_holds_value": test_registry_interval_holds_value,
}


def test_every_tag_is_tested():
    assert set(TAG_TESTS) == set(TAGS)


@pytest.mark.parametrize("metric", list(REGISTRY.values()), ids=lambda m: m.name)
def test_every_registered_metric_has_known_tags(metric):
    assert metric.tags, f"{metric.name} is registered without property tags"
    assert metric.tags <= set(TAGS), sorted(metric.tags - set(TAGS))
    assert (metric.rank is not None) == ("ordered_family" in metric.tags)


def test_registering_without_tags_fails():
    before = dict(REGISTRY)
    where = {"path": ("metrics", "x"), "description": "x"}
    with pytest.raises(ValueError, match="without property tags"):
        register("untagged", lambda attempts, plan, k: None, tags=(), **where)
    with pytest.raises(ValueError, match="unknown tags"):
        register("mistagged", lambda attempts, plan, k: None, tags=("monotone",), **where)
    with pytest.raises(ValueError, match="rank"):
        register("unranked", lambda attempts, plan, k: None, tags=("ordered_family",), **where)
    with pytest.raises(ValueError, match="unknown kind"):
        register("unkinded", lambda attempts, plan, k: None, tags=("order_invariant",), kind="percent", **where)
    with pytest.raises(ValueError, match="path"):
        register("nowhere", lambda attempts, plan, k: None, tags=("order_invariant",), path=(), description="x")
    assert REGISTRY == before


@pytest.mark.parametrize("metric", list(REGISTRY.values()), ids=lambda m: m.name)
def test_every_registered_metric_says_how_it_is_shown_and_where_it_sits(metric):
    doc = capbench_nb.compute_metrics(capbench_nb.load_run(SAMPLE_RUN))
    assert metric.kind in KINDS and metric.description and metric.label
    value = metric.value_in(doc)
    assert value is not None, metric.path
    if metric.headline:
        assert value == doc["metrics"][metric.name] and metric.path == ("metrics", metric.name)
    if "{k}" in metric.label:
        assert metric.display(3) == metric.label.replace("{k}", "3")


def test_headline_metrics_are_the_documents():
    doc = capbench_nb.compute_metrics(capbench_nb.load_run(SAMPLE_RUN))
    assert list(doc["metrics"]) == list(METRICS) == [m.name for m in REGISTRY.values() if m.headline]
    assert set(REGISTRY) >= {"pass@1", "pass@k", "pass^k", "oracle_best_score@k", "pass@j", "pass^j"}
