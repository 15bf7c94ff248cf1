"""The explorer's page data (outputs.report.explorer): every planned task, every attempt, evidence resolved, as safe JSON."""

from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import unquote

import pytest

import capbench_nb as cb
from capbench_nb.outputs.report import explorer
from conftest import HOSTILE_TEXTS, REPO, cli, hostile_page_run, manifest, outcomes, record, write_run

INSPECT_LOG = REPO / "tests" / "data" / "inspect" / "mock_pass_k_with_error.json"


def loaded(path):
    run = cb.load_run(path)
    return run, cb.compute_metrics(run)


def island_of(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="cb-explorer-data">(.*?)</script>', html, re.S)
    assert m, "no data island"
    return json.loads(m.group(1))


@pytest.fixture
def labelled(tmp_path):
    tasks = [{"task_id": "t1", "repeats": 3, "app": "clock"}, {"task_id": "t2", "repeats": 3, "app": "mail"},
             {"task_id": "t3", "repeats": 2}]
    records = outcomes({"t1": "SAS", "t2": "E.X", "t3": "VK"})
    records[0]["telemetry"]["task_wall_ms"] = 1234.0
    records[0]["telemetry"]["total_tokens"] = 987
    records[0]["quality_score"] = 0.75
    return loaded(write_run(tmp_path / "run", manifest(tasks, k=2), records))


def test_every_planned_task_with_its_outcome_codes_and_the_documents_numbers(labelled):
    run, doc = labelled
    data = explorer.page_data(doc, run)
    tasks = data["tasks"]
    assert tasks["id"] == ["t1", "t2", "t3"]
    assert tasks["outcomes"] == ["SAS", "E.X", "VK"]
    assert tasks["planned"] == [3, 3, 2]
    for i, entry in enumerate(doc["per_task"]):  # taken from the document, not recomputed
        assert tasks["successes"][i] == entry["successes"] and tasks["eligible"][i] == entry["eligible"]
        assert tasks["first_success"][i] == entry["first_success_attempt"]
        assert tasks["oracle"][i] == entry["oracle_best_score"]
        assert tasks["k_eligible"][i] == int(entry["k_eligible"])
    [app] = tasks["labels"]
    assert app["name"] == "app" and [app["values"][c] if c is not None else None for c in app["codes"]] == [
        "clock", "mail", None]
    att = data["attempts"]
    assert att["code"] == "SASEXVK" and att["attempt"] == [1, 2, 3, 1, 3, 1, 2] and att["start"] == [0, 3, 5, 7]
    assert att["stage"] == "......."
    names = [t[0] for t in data["telemetry"]]
    assert att["telemetry"][names.index("task_wall_ms")][0] == 1234  # integral values as ints
    assert att["telemetry"][names.index("total_tokens")][0] == 987 and att["quality"][0] == 0.75
    assert dict((t[0], t[1]) for t in data["telemetry"])["total_tokens"] == "tokens"


def test_the_health_columns_are_the_documents(labelled):
    run, doc = labelled
    tasks = explorer.page_data(doc, run)["tasks"]
    # t1 SA|S: inconsistent over 1..2; t2 E.X and t3 VK: one of two counted attempts is the suite's
    assert tasks["consistency"] == [2, None, None]
    assert tasks["ineligible"] == [[0, 0, 0, 0], [1, 0, 0, 1], [0, 1, 1, 0]]
    assert tasks["quarantine"] == [0, 1, 1]
    doc["health"]["per_task"][0]["quarantine"] = True  # read from the document, never recomputed
    assert explorer.page_data(doc, run)["tasks"]["quarantine"][0] == 1
    old = {key: value for key, value in doc.items() if key != "health"}  # a metrics.json of an older version
    tasks = explorer.page_data(old, run)["tasks"]
    assert tasks["consistency"] == tasks["ineligible"] == tasks["quarantine"] == [None] * 3


def test_evidence_into_an_artifact_file_resolves_to_its_value(tmp_path):
    root = tmp_path / "run"
    adir = root / "attempts" / "t1" / "2"
    adir.mkdir(parents=True)
    event = {"type": "device_action", "status": "error", "error": "tap missed the button"}
    (adir / "episode.json").write_text(json.dumps({"events": [{"type": "observe"}, event]}), encoding="utf-8")
    records = [record("t1", 1, "S"),
               record("t1", 2, "A", artifact_dir="attempts/t1/2", failure_stage="device_execution",
                      evidence=["episode.json#/events/1"])]
    run, doc = loaded(write_run(root, manifest([("t1", 2)]), records))
    out = tmp_path / "out"
    data = explorer.page_data(doc, run, report_dir=out)
    att = data["attempts"]
    [[ref, value, problem]] = att["evidence"][1]
    assert ref == "episode.json#/events/1" and problem is None and json.loads(value) == event
    assert att["errors"][1] == "tap missed the button (episode.json#/events/1)"
    assert att["stage"] == "." + str(data["stages"].index("device_execution"))
    assert att["dir"] == [None, -1]  # the conventional attempts/<task>/<attempt>
    [f] = data["file_sets"][att["files"][1]]
    assert data["files"][f] == "episode.json"  # it exists: linked
    target = posixpath.normpath(posixpath.join(str(out), unquote(data["link_base"]), "attempts/t1/2/episode.json"))
    assert target == str(adir / "episode.json")


def test_a_missing_artifact_file_is_named_not_linked(tmp_path):
    root = tmp_path / "run"
    (root / "attempts" / "t1" / "1").mkdir(parents=True)
    (root / "attempts" / "t1" / "1" / "attempt.json").write_text(json.dumps({"agent": {"status": "crashed"}}))
    rec = record("t1", 1, "X", artifact_dir="attempts/t1/1", telemetry_source={"task_wall_ms": "episode.json#/x"})
    run, doc = loaded(write_run(root, manifest([("t1", 1)]), [rec]))
    data = explorer.page_data(doc, run)
    [f] = data["file_sets"][data["attempts"]["files"][0]]
    assert f < 0 and data["files"][-1 - f] == "episode.json"
    assert data["attempts"]["errors"][0] == "the agent crashed (attempt.json#/agent/status)"


def test_an_imported_inspect_run_shows_the_source_error(tmp_path):
    rc, _, err = cli("import", "inspect", INSPECT_LOG, "--out", tmp_path / "insp")
    assert rc == 0, err
    run, doc = loaded(tmp_path / "insp")
    data = explorer.page_data(doc, run)
    att, ids = data["attempts"], data["tasks"]["id"]
    t5 = ids.index("t5")
    row = next(r for r in range(att["start"][t5], att["start"][t5 + 1]) if att["attempt"][r] == 3)
    assert att["code"][row] == "X"
    assert "deliberate failure for sample t5 epoch 3" in att["errors"][row]
    [[ref, value, _]] = att["evidence"][row]
    assert ref == "record.json#/error" and "deliberate failure for sample t5 epoch 3" in value


def test_the_island_keeps_hostile_strings_as_data(tmp_path):
    run, doc = loaded(hostile_page_run(tmp_path / "run"))
    html = explorer.explorer_html(doc, run, report_dir=tmp_path / "out")
    m = re.search(r'<script type="application/json" id="cb-explorer-data">(.*?)</script>', html, re.S)
    text = m.group(1)
    for raw in ("<", ">", "&", "\u2028", "\u2029", "\u202e"):
        assert raw not in text, raw
    assert "\\u003c/script\\u003e" in text and "\\u2028" in text
    data = json.loads(text)
    assert data["tasks"]["id"] == HOSTILE_TEXTS  # every string back exactly
    values = [json.loads(v) for ev in data["attempts"]["evidence"].values() for _, v, _ in ev]
    assert [v["error"] for v in values] == HOSTILE_TEXTS
    # the page's own script holds no run data, and the only script elements are ours
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    assert [attrs for attrs, _ in scripts] == [' type="application/json" id="cb-explorer-data"', ""]
    assert "alert" not in scripts[1][1]


def test_artifact_links_are_relative_percent_encoded_and_inside_the_run(tmp_path):
    run_dir = hostile_page_run(tmp_path / "runs" / "a run")
    run, doc = loaded(run_dir)
    out = tmp_path / "reports" / "r"
    data = explorer.page_data(doc, run, report_dir=out)
    assert data["link_base"] == "../../runs/a%20run/"
    assert not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", data["link_base"])
    assert data["dirs"] and all("<b>" in d for d in data["dirs"])  # raw data; the script encodes each segment
    assert [d for d in data["attempts"]["dir"] if d is not None] == list(range(len(data["dirs"])))


def test_size_policy_summarises_successes_and_keeps_every_failure(tmp_path):
    spec = {f"t{i}": "SAXS" for i in range(5)}
    run, doc = loaded(write_run(tmp_path / "run", manifest([(t, 4) for t in spec]), outcomes(spec)))
    data = explorer.page_data(doc, run, full_detail=10, resolve_budget=3)
    att = data["attempts"]
    assert att["code"] == "AX" * 5 and att["attempt"] == [2, 3] * 5  # failures and ineligible attempts stay
    assert data["tasks"]["outcomes"] == ["SAXS"] * 5  # the grid keeps every attempt
    assert data["policy"] == {"attempts": 20, "detailed": 10, "successes_summarised": True, "full_detail": 10,
                              "resolved": 3, "resolve_budget": 3}
    full = explorer.page_data(doc, run)
    assert full["attempts"]["code"] == "SAXS" * 5 and not full["policy"]["successes_summarised"]


def test_an_empty_run_and_a_bad_element_id(tmp_path):
    run, doc = loaded(write_run(tmp_path / "run", manifest([("t1", 2)]), []))
    data = explorer.page_data(doc, run)
    assert data["tasks"]["outcomes"] == [".."] and data["attempts"]["code"] == ""
    with pytest.raises(ValueError):
        explorer.explorer_html(doc, run, element_id='x" onload="y')
