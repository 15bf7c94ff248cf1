"""The output set is byte-identical across runs and across a shuffled results.jsonl (apart from what must
differ: the input's hash and physical line numbers)."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from conftest import cli, comparable, read_doc

# =========================================================================== determinism


def _determinism_run(path: Path) -> Path:
    """A simulated run with artifacts and evidence, plus plan anomalies (no duplicates: order must not matter)."""
    rc, _, err = cli("simulate", "--tasks", "10", "--repeats", "3", "--seed", "11", "--out", path, "--artifacts")
    assert rc == 0, err
    rc, _, err = cli("ingest", path)
    assert rc == 0, err
    with open(path / "results.jsonl", "a", encoding="utf-8") as fh:
        tid = json.loads((path / "manifest.json").read_text())["plan"]["tasks"][0]["task_id"]
        fh.write(json.dumps({"task_id": "not-planned", "attempt": 1, "success": True, "agent_eligible": True,
                             "failure_class": ""}) + "\n")
        fh.write(json.dumps({"task_id": tid, "attempt": 9, "success": False, "agent_eligible": True,
                             "failure_class": "agent"}) + "\n")
    return path


_CELL_ID = re.compile(r'id="cell-id=[0-9a-f-]+"')  # the shuffled run's report.html may differ in them


@pytest.fixture(scope="module")
def determinism(tmp_path_factory):
    """Two reports of one run, and one of the same run with results.jsonl shuffled.  The shuffled copy lives in
    another folder under the same name, so relative evidence links are the same."""
    root = tmp_path_factory.mktemp("determinism")
    run = _determinism_run(root / "a" / "run")
    shuffled = root / "b" / "run"
    shutil.copytree(run, shuffled, symlinks=True)
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(3).shuffle(lines)
    (shuffled / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    outs = {"first": root / "a" / "out1", "second": root / "a" / "out2", "shuffled": root / "b" / "out1"}
    for name, src in (("first", run), ("second", run), ("shuffled", shuffled)):
        rc, _, err = cli("report", src, "--out", outs[name], "--slice", "app", "--no-progress")
        assert rc == 0, err
    return {"run": run, "shuffled": shuffled, "outs": outs}


def test_reports_are_identical_across_runs_and_across_shuffled_lines(determinism):
    """Two reports of one run: metrics.json, summary.md and report.html byte-identical (cell ids included);
    then the shuffled run's.  One test, so that the fixture's three reports are built once even when
    pytest-xdist would send this module's tests to both workers."""
    first, second = determinism["outs"]["first"], determinism["outs"]["second"]
    for name in ("metrics.json", "summary.md", "report.html"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    _shuffled_results_give_the_same_outputs(determinism)


def _without_file_order(text: str, hashes: list[str]) -> str:
    """What a shuffled results.jsonl may change: its hash, and anomalies' physical lines and file order."""
    for h in hashes:
        text = text.replace(h.split(":", 1)[1], "HASH")
    text = _CELL_ID.sub("CELL", text)
    text = re.sub(r"\bline \d+", "line N", text)
    # The anomalies table of report.html: one row per anomaly, with its line, in file order.
    for table in re.findall(r"<table\b(?:(?!</table>).)*?</table>", text, re.DOTALL):
        if "task_not_in_plan" in table or "above_planned_repeats" in table:
            rows = re.findall(r"<tr>(?:(?!</tr>).)*?</tr>", table, re.DOTALL)
            body = [re.sub(r'(<td class="[^"]*num[^"]*"[^>]*>)\d+(</td>)', r"\1N\2", r) for r in rows if "<td" in r]
            text = text.replace(table, "".join(r for r in rows if "<td" not in r) + "".join(sorted(body)))
    return text


def _shuffled_results_give_the_same_outputs(determinism):
    """A shuffled results.jsonl: everything is identical except what names the file's bytes: the results.jsonl hash and the physical
    line numbers of anomalies (and their order, which is file order)."""
    first, shuffled = determinism["outs"]["first"], determinism["outs"]["shuffled"]
    a, b = read_doc(first), read_doc(shuffled)
    assert comparable(a) == comparable(b)

    def anomaly_set(doc):
        return sorted((x["kind"], x["task_id"], x["attempt"], x["reason"]) for x in doc["anomalies"])

    assert anomaly_set(a) == anomaly_set(b) and a["anomaly_counts"] == b["anomaly_counts"]
    assert len(a["anomalies"]) == 2
    pa, pb = a["provenance"], b["provenance"]
    assert pa["inputs"]["manifest.json"] == pb["inputs"]["manifest.json"]
    assert pa["inputs"]["results.jsonl"] != pb["inputs"]["results.jsonl"]
    assert {k: v for k, v in pa.items() if k != "inputs"} == {k: v for k, v in pb.items() if k != "inputs"}
    hashes = [pa["inputs"]["results.jsonl"], pb["inputs"]["results.jsonl"]]
    for name in ("summary.md", "report.html"):
        ta = _without_file_order((first / name).read_text(encoding="utf-8"), hashes)
        tb = _without_file_order((shuffled / name).read_text(encoding="utf-8"), hashes)
        ta = ta.replace(str(determinism["run"]), "RUN")  # the run_dir parameter shown under provenance
        tb = tb.replace(str(determinism["shuffled"]), "RUN")
        assert ta == tb, (name, _first_difference(ta, tb))


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at {i}: {a[max(0, i - 150):i + 150]!r} vs {b[max(0, i - 150):i + 150]!r}"
