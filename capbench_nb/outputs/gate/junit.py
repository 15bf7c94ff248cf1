"""junit.xml: the gate as a JUnit XML test report (GitHub, GitLab and Jenkins read it).

One ``<testsuite name="capbench-nb gate">`` inside ``<testsuites>``, one
``<testcase>`` per gated metric (classname ``capbench-nb.gate``, name the
metric) with a ``<failure>`` for ``fail`` and a ``<skipped>`` for
``inconclusive``, and one ``compatibility`` test case, failed when a
compatibility warning is left.  The elements, attributes and their order
follow the Jenkins JUnit schema (``junit-4.xsd`` of Jenkins' dtkit, the schema
GitLab and the JUnit 5 project also validate against): ``skipped`` carries no
attribute, only text.  No time, timestamp or hostname: the same inputs give
the same bytes.

Run-supplied strings (task ids, run ids, warning messages) reach the XML as
text or attribute values, escaped by :mod:`xml.etree.ElementTree`; characters
XML 1.0 cannot hold at all (control characters, lone surrogates) and those
that would rearrange the text (bidirectional overrides) are first made visible
escapes such as ``\\u0007`` (:func:`capbench_nb.outputs.html.escaping.plain_label`,
uncut).  ``]]>`` needs nothing: there is no CDATA section and ``>`` is escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from capbench_nb.outputs.html.escaping import plain_label
from capbench_nb.outputs.gate.markdown import attempts_text, fmt_pct, fmt_pp

__all__ = ["gate_junit", "SUITE_NAME", "CLASSNAME", "xml_text"]

SUITE_NAME = "capbench-nb gate"
CLASSNAME = "capbench-nb.gate"
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'


def xml_text(text) -> str:
    """A run-supplied string made fit for XML 1.0 and shown as data: one line, invisibles as visible escapes."""
    s = "" if text is None else str(text)
    return plain_label(s, max_len=max(len(s), 1))


def _summary(doc: dict, e: dict) -> str:
    level = f"{100 * (1 - 2 * doc['alpha']):g}%"
    return (f"{e['metric']}: {e['decision']}; candidate {fmt_pct(e['candidate'])} vs baseline "
            f"{fmt_pct(e['baseline'])} on {e['n']} paired tasks, delta {fmt_pp(e['delta'])}, {level} CI "
            f"[{fmt_pp(e['ci_low'])}, {fmt_pp(e['ci_high'])}], margin {100 * doc['margin']:g} pp")


def _regressions_text(e: dict) -> str:
    lines = [f"{len(e['regressions'])} task(s) the baseline passed and the candidate did not:"]
    lines += [f"{xml_text(r['task_id'])}: baseline {attempts_text(r['baseline'])}; candidate "
              f"{attempts_text(r['candidate'])}" for r in e["regressions"]]
    return "\n".join(lines)


def _metric_case(suite: ET.Element, doc: dict, e: dict) -> None:
    case = ET.SubElement(suite, "testcase", {"name": e["metric"], "classname": CLASSNAME})
    summary = _summary(doc, e)
    if e["decision"] == "fail":
        failure = ET.SubElement(case, "failure", {"message": summary, "type": "regression"})
        failure.text = _regressions_text(e)
    elif e["decision"] == "inconclusive":
        skipped = ET.SubElement(case, "skipped")
        needed = ("" if e["needed_tasks"] is None
                  else f"; about {e['needed_tasks']} paired tasks would show non-inferiority with power 0.8")
        skipped.text = summary + needed
    if doc["same_run"]:
        ET.SubElement(case, "system-out").text = "baseline and candidate are the same run: passes trivially"
    elif e["regressions"] and e["decision"] != "fail":
        ET.SubElement(case, "system-out").text = _regressions_text(e)


def _compatibility_case(suite: ET.Element, doc: dict) -> None:
    case = ET.SubElement(suite, "testcase", {"name": "compatibility", "classname": CLASSNAME})
    left = doc["warnings"]
    if left:
        codes = ", ".join(xml_text(w["code"]) for w in left)
        failure = ET.SubElement(case, "failure", {"message": f"{len(left)} compatibility warning(s): {codes}",
                                                  "type": "incompatible"})
        failure.text = "\n".join(f"[{xml_text(w['code'])}] {xml_text(w['message'])}" for w in left)
    allowed = doc["allowed_warnings"]
    if allowed:
        ET.SubElement(case, "system-out").text = "\n".join(
            f"[{xml_text(w['code'])}] (allowed by --allow-diff) {xml_text(w['message'])}" for w in allowed)


def gate_junit(doc: dict) -> str:
    """junit.xml of a gate document (:func:`capbench_nb.metrics.gate.gate_document`), UTF-8 text with its declaration."""
    cases = len(doc["metrics"]) + 1
    failures = sum(e["decision"] == "fail" for e in doc["metrics"]) + bool(doc["warnings"])
    skipped = sum(e["decision"] == "inconclusive" for e in doc["metrics"])
    counts = {"tests": str(cases), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", {"name": SUITE_NAME, **counts})  # Jenkins' schema: no skipped count here
    suite = ET.SubElement(root, "testsuite", {"name": SUITE_NAME, **counts, "skipped": str(skipped)})
    runs = doc["runs"]
    properties = ET.SubElement(suite, "properties")
    for name, value in (("decision", doc["decision"]), ("margin", repr(doc["margin"])), ("alpha", repr(doc["alpha"])),
                        ("baseline", xml_text(runs["baseline"]["run_id"])),
                        ("candidate", xml_text(runs["candidate"]["run_id"])),
                        ("same_run", "true" if doc["same_run"] else "false")):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    for e in doc["metrics"]:
        _metric_case(suite, doc, e)
    _compatibility_case(suite, doc)
    ET.indent(root, space="  ")
    return XML_DECLARATION + ET.tostring(root, encoding="unicode") + "\n"
