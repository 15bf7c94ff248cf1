"""The gate's files (spec section 15): gate.json, gate.md and junit.xml, with hostile task ids.

junit.xml is validated against tests/data/junit-jenkins.xsd (the Jenkins JUnit schema's structure,
see its header) with lxml, and read back with junitparser, as CI tools read it.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped
from lxml import etree

from capbench_nb import gate
from capbench_nb.metrics.gate import gate_document
from capbench_nb.outputs.gate.files import write_gate
from capbench_nb.outputs.gate.junit import gate_junit, xml_text
from capbench_nb.outputs.gate.markdown import gate_markdown
from capbench_nb.records.run import load_run
from conftest import manifest, outcomes, write_run

XSD = Path(__file__).resolve().parents[1] / "data" / "junit-jenkins.xsd"

HOSTILE = [
    "<script>alert(1)</script>",
    "| a | b |",
    "`code` ``x`` ```",
    "*bold* _it_ [x](javascript:alert(1))",
    "a]]>b",
    "]]>",
    "<![CDATA[x]]>",
    "ctl\x00\x01\x07\x08\x1b[31mred\x7f\x9b",
    "rtl\u202eevil\u202c\u2066iso\u2069",
    "new\nline\r\ttab",
    "&amp; &lt; \" ' x=\"",
    "# heading",
    "\\|backslash pipe\\",
    "zero\u200bwidth\ufeffbom\u2028sep",
    "<details><summary>x</summary>",
    "-->",
]
RAW_FORBIDDEN = ["\x00", "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x9b", "\u202e", "\u2066", "\u2028", "\u200b",
                 "\ufeff", "\r"]


def schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(XSD)))


def hostile_pair(tmp_path: Path, *, candidate: str = "A", model_b: str = "m") -> tuple[Path, Path]:
    tasks = [(t, 1) for t in HOSTILE] + [(f"ok-{i}", 1) for i in range(30)]
    base = {t: "S" for t, _ in tasks}
    cand = {t: (candidate if t in HOSTILE else "S") for t, _ in tasks}
    doc_a, doc_b = manifest(tasks, k=1), manifest(tasks, k=1)
    doc_a["run_id"], doc_b["run_id"] = "base|`<b>`", "cand\u202e<i>"
    doc_b["config"]["model"] = model_b
    a = tmp_path / "a"
    b = tmp_path / "b"
    for path, doc, spec in ((a, doc_a, base), (b, doc_b, cand)):
        path.mkdir(parents=True)
        (path / "manifest.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        lines = [json.dumps(r, ensure_ascii=False) for r in outcomes(spec)]
        (path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return a, b


def parsed(text: str) -> etree._Element:
    return etree.fromstring(text.encode("utf-8"), etree.XMLParser(resolve_entities=False))


# --------------------------------------------------------------------------- gate.md


def test_gate_md_renders_hostile_task_ids_as_data(tmp_path):
    a, b = hostile_pair(tmp_path)
    doc = gate(a, b).document
    assert doc["decision"] == "fail"
    md = gate_markdown(doc)
    for ch in RAW_FORBIDDEN:
        assert ch not in md, repr(ch)
    lines = md.split("\n")
    assert lines[0] == "# capbench-nb gate: fail"  # the decision first
    items = [line for line in lines if line.startswith("- ")]
    assert len(items) == len(HOSTILE)  # one line per regression: no newline of a task id splits it
    # nothing that opens markup, code or a cell survives unescaped
    for line in items:
        body = re.sub(r"\\.", "", line)  # drop every backslash escape
        for ch in "`|<>[]*_&":
            assert ch not in body, (ch, line)
    # the table: one row per metric, exactly ten cell separators (nine cells)
    rows = [line for line in lines if line.startswith("| pass@1")]
    assert len(rows) == 1 and len(re.findall(r"(?<!\\)\|", rows[0])) == 10
    # the run ids in the header line are escaped too
    assert "base\\|\\`\\<b\\>\\`" in md and "\\u202e" in md
    assert md.index("<details>") < md.index("- ") and "</details>" in md


def test_gate_md_sections_per_decision(tmp_path):
    a, b = hostile_pair(tmp_path, candidate="S", model_b="other")
    doc = gate(a, b).document
    md = gate_markdown(doc)
    assert doc["decision"] == "incompatible" and md.startswith("# capbench-nb gate: incompatible")
    assert "## Compatibility" in md and "**model**" in md and "<details>" not in md
    allowed = gate_markdown(gate(a, b, allow_diff=["model"]).document)
    assert "(allowed by --allow-diff)" in allowed


def test_same_run_says_it_passes_trivially(tmp_path):
    a, _ = hostile_pair(tmp_path)
    doc = gate(a, a).document
    assert doc["decision"] == "pass"
    assert "passes trivially" in gate_markdown(doc)
    xml = gate_junit(doc)
    assert "passes trivially" in xml and 'name="same_run" value="true"' in xml


# --------------------------------------------------------------------------- junit.xml


def test_junit_validates_and_carries_hostile_ids_as_text(tmp_path):
    a, b = hostile_pair(tmp_path)
    doc = gate(a, b, metrics=["pass@1", "pass^k"]).document
    xml = gate_junit(doc)
    root = parsed(xml)
    assert schema().validate(root.getroottree()), schema().error_log
    failure = root.find("./testsuite/testcase[@name='pass@1']/failure")
    assert failure is not None and failure.get("type") == "regression"
    for t in HOSTILE:
        assert xml_text(t) in failure.text  # each id as visible text, back from the parser
    assert "a]]>b" in failure.text and "<script>alert(1)</script>" in failure.text
    assert "<script>" not in xml and "]]>" not in xml  # escaped in the bytes
    for ch in RAW_FORBIDDEN:
        assert ch not in xml, repr(ch)
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["baseline"] == "base|`<b>`" and props["candidate"] == "cand\\u202e<i>"


def test_junit_structure_read_by_junitparser(tmp_path):
    a, b = hostile_pair(tmp_path)
    write_gate(gate(a, b, metrics=["pass@1", "pass@k"], margin=0.02).document, tmp_path / "out")
    report = JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    suites = list(report)
    assert len(suites) == 1 and suites[0].name == "capbench-nb gate"
    cases = {c.name: c for c in suites[0]}
    assert list(cases) == ["pass@1", "pass@k", "compatibility"]
    assert all(c.classname == "capbench-nb.gate" for c in cases.values())
    assert isinstance(cases["pass@1"].result[0], Failure)
    assert cases["compatibility"].is_passed
    assert suites[0].tests == 3 and suites[0].failures == 2 and suites[0].errors == 0


@pytest.mark.parametrize("candidate, model_b, expected", [
    ("S", "m", {"pass@1": None, "compatibility": None}),
    ("A", "m", {"pass@1": Failure, "compatibility": None}),
    ("S", "other", {"pass@1": None, "compatibility": Failure}),
])
def test_junit_case_per_decision(tmp_path, candidate, model_b, expected):
    a, b = hostile_pair(tmp_path, candidate=candidate, model_b=model_b)
    xml = gate_junit(gate(a, b, margin=0.1).document)
    assert schema().validate(parsed(xml).getroottree())
    path = tmp_path / "junit.xml"
    path.write_text(xml, encoding="utf-8")
    cases = {c.name: c for c in next(iter(JUnitXml.fromfile(str(path))))}
    for name, kind in expected.items():
        assert (type(cases[name].result[0]) if cases[name].result else None) is kind, name


def test_inconclusive_is_skipped_with_needed_tasks(tmp_path):
    tasks = [(f"t{i}", 1) for i in range(10)]
    spec_a = {f"t{i}": "SA"[i % 2] for i in range(10)}
    spec_b = {f"t{i}": "SA"[(i // 2) % 2] for i in range(10)}
    a = write_run(tmp_path / "a", manifest(tasks, k=1), outcomes(spec_a))
    b = write_run(tmp_path / "b", manifest(tasks, k=1), outcomes(spec_b))
    doc = gate(a, b).document
    assert doc["decision"] == "inconclusive"
    root = parsed(gate_junit(doc))
    assert schema().validate(root.getroottree())
    skipped = root.find("./testsuite/testcase[@name='pass@1']/skipped")
    assert skipped is not None and not skipped.attrib and f"about {doc['metrics'][0]['needed_tasks']}" in skipped.text
    assert root.find("./testsuite").get("skipped") == "1"
    path = tmp_path / "j.xml"
    path.write_text(gate_junit(doc), encoding="utf-8")
    case = next(iter(next(iter(JUnitXml.fromfile(str(path))))))
    assert case.is_skipped and isinstance(case.result[0], Skipped)


def test_lone_surrogates_and_controls_in_a_document(tmp_path):
    """Runs cannot hold lone surrogates (rule invalid-unicode), but the writers never break on one."""
    a, b = hostile_pair(tmp_path)
    doc = copy.deepcopy(gate(a, b).document)
    doc["metrics"][0]["regressions"][0]["task_id"] = "lone\ud800high\udfff\x0c"
    doc["runs"]["baseline"]["run_id"] = "\udc80run"
    md = gate_markdown(doc)
    md.encode("utf-8")
    assert "lone\\\\ud800high\\\\udfff\\\\u000c" in md
    xml = gate_junit(doc)
    xml.encode("utf-8")
    root = parsed(xml)
    assert schema().validate(root.getroottree())
    assert "lone\\ud800high\\udfff\\u000c" in root.find(".//failure").text


# --------------------------------------------------------------------------- the three files


def test_write_gate_is_byte_identical_and_holds_no_clock(tmp_path):
    a, b = hostile_pair(tmp_path)
    runs = load_run(a), load_run(b)
    one = write_gate(gate_document(*runs), tmp_path / "one").parent
    two = write_gate(gate_document(*runs), tmp_path / "two").parent
    names = ("gate.json", "gate.md", "junit.xml")
    for name in names:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    xml = (one / "junit.xml").read_text(encoding="utf-8")
    assert "timestamp" not in xml and "hostname" not in xml and "time=" not in xml
    doc = json.loads((one / "gate.json").read_text(encoding="utf-8"))
    assert str(tmp_path) not in (one / "gate.json").read_text(encoding="utf-8")
    assert doc["schema_version"] == "capbench.gate/1" and doc["decision"] == "fail"
    assert (one / "gate.json").read_bytes().isascii()
