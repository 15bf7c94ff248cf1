"""Hardening (issue 8): untrusted strings, parameters as data, atomic outputs, determinism, large inputs.

* Run-supplied strings (task ids, labels, run id, suite, config, error
  messages) holding HTML, Markdown table syntax, control characters, bidi
  overrides, very long and non-Latin text are escaped in report.html,
  summary.md and the comparison outputs, and output file names never come
  from them; evidence and artifact_dir cannot read outside the run.
* Notebook parameters are data: run and output paths holding quotes,
  newlines and ``$(...)`` are handled without executing anything.
* A report killed with SIGKILL leaves the previous outputs or complete new
  ones, never a half-written metrics.json.
* The output set is byte-identical across runs and across a shuffled
  results.jsonl (apart from what must differ: the input's hash and physical
  line numbers).
* Large inputs: a 50 MB results.jsonl in bounded memory, 100 MB single lines
  in bounded time (a 1 GB file with ``CAPBENCH_FUZZ=long``).

Each ``capbench-nb report`` executes a notebook (~5-10 s), so reports are
built once per module fixture and inspected by several tests.  Known bugs are
``xfail(strict=True)`` with the reason; docs/damaged-inputs.md has the table.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import random
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from test_damaged_inputs import (
    LONG,
    check_error,
    cli,
    compact,
    comparable,
    read_doc,
    tree_hashes,
    write,
)

from capbench_nb.metrics.comparison import compare_runs, comparison_markdown
from capbench_nb.records.loading import load_run
from capbench_nb.outputs.reportrun import OUTPUT_FILES

# =========================================================================== hostile strings

LONG_TEXT = "L" * 10_000
HOSTILE = [
    "<script>alert(1)</script>",
    "</table></div><b>broken</b>",
    "| a | b |",
    "`code` ``x`` ```",
    "*bold* _it_ **b** ~~s~~",
    "[x](javascript:alert(1))",
    "![img](http://evil.example/x.png)",
    "<img src=x onerror=alert(3)>",
    "ctl\x00\x01\x07\x08\x1b[31mred\x1b[0m\x7f\x9b",
    "rtl\u202eevil\u202c\u2066iso\u2069",
    "new\nline\r\ttab",
    LONG_TEXT,
    "非拉丁 текст עברית العربية 😀",
    "&amp; &lt; &#x3C;script&#x3E;",
    "\" ' onmouseover=alert(2) x=\"",
    "{{7*7}} {% raw %} ${7*7} %s %(x)s",
    "# heading",
    "\\|backslash pipe\\",
    "zero\u200bwidth\ufeffbom\u2028sep",
    "-->",
]
#: Raw characters that must never reach an output from run data.
RAW_FORBIDDEN = ["\x00", "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x9b", "\u202e", "\u2066", "\u2028", "\u200b", "\ufeff"]
#: Directory names (inside the run) that evidence links point into.
HOSTILE_DIRS = ["javascript:alert(1)", "<img src=x onerror=alert(4)>", "a'b\"c d|e"]


def hostile_manifest(run_id_suffix: str = "", model: str = "m<script>alert('model')</script>\u202e|x|") -> dict:
    tasks = []
    for i, tid in enumerate(HOSTILE):
        tasks.append({"task_id": tid, "repeats": 2, "app": HOSTILE[(i + 3) % len(HOSTILE)],
                      "platform": "android" if i % 2 else "<b>ios</b>|"})
    return {
        "schema_version": "capbench.run/1",
        "run_id": "<script>alert('run')</script>|`id`*x*\u202e\x1b[1m" + run_id_suffix,
        "suite": {"name": "suite <i>|name|</i>", "version": "v`1`\x1b[2J"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": "partial",
        "runner": {"name": "runner <script>", "version": "0|1"},
        "config": {"model": model, "judge": True, "<b>key</b>|": "<script>alert('cfg')</script>"},
        "plan": {"repeats_override": None, "k": 2, "tasks": tasks},
    }


def hostile_records(seed: int = 0) -> list:
    """Records of every hostile task (varied outcomes, evidence into hostile directory names), plus anomalies."""
    rng = random.Random(seed)
    out = []
    for i, tid in enumerate(HOSTILE):
        for attempt in (1, 2):
            roll = rng.random()
            rec = {"task_id": tid, "attempt": attempt, "artifact_dir": None,
                   "telemetry": {"task_wall_ms": 1000 + 37 * i + attempt, "total_tokens": 100 * i + attempt},
                   "quality_score": round(rng.random(), 3)}
            if roll < 0.45:
                rec.update(success=True, agent_eligible=True, failure_class="")
            elif roll < 0.8:
                rec.update(success=False, agent_eligible=True, failure_class="agent")
                if i % 4 == 0:
                    d = HOSTILE_DIRS[i % len(HOSTILE_DIRS)]
                    rec.update(artifact_dir=f"attempts/{d}", failure_stage="device_execution",
                               evidence=["episode.json#/events/0", "attempt.json#/<script>alert(5)<~1script>"])
            else:
                rec.update(success=False, agent_eligible=False, failure_class="environment")
            out.append(rec)
    # Anomalies whose ids and reasons carry hostile text.
    out.append({"task_id": "<script>alert('not-in-plan')</script>\n|x|", "attempt": 1, "success": True,
                "agent_eligible": True, "failure_class": ""})
    out.append({"task_id": HOSTILE[0], "attempt": 3, "success": True, "agent_eligible": True, "failure_class": ""})
    return out


INVALID_HOSTILE_LINES = [  # enter only with --allow-invalid; their reasons quote run data
    {"task_id": HOSTILE[1], "attempt": 9, "success": False, "agent_eligible": True,
     "failure_class": "<script>alert('fc')</script>\x1b[2J|"},
    {"task_id": HOSTILE[8], "attempt": "<img src=x onerror=alert(6)>", "success": True, "agent_eligible": True,
     "failure_class": ""},
    "<script>alert('raw line')</script> | not json \u202e",
]


def write_hostile_run(path: Path, *, seed: int = 0, invalid: bool = True, **manifest_kw) -> Path:
    records = hostile_records(seed)
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    if invalid:
        lines[3:3] = [x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in INVALID_HOSTILE_LINES]
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text(json.dumps(hostile_manifest(**manifest_kw), indent=2, ensure_ascii=False),
                                        encoding="utf-8")
    (path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for d in HOSTILE_DIRS:
        art = path / "attempts" / d
        art.mkdir(parents=True, exist_ok=True)
        (art / "episode.json").write_text(json.dumps({"events": [{"type": "device_action", "status": "error"}]}))
        (art / "attempt.json").write_text(json.dumps({"<script>alert(5)</script>": 1}))
    return path


# --------------------------------------------------------------------------- checks on outputs

_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_EVENT_ATTR = re.compile(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
_URL_ATTR = re.compile(r"""<[a-zA-Z][^>]*?\s(?:href|src|action|formaction|xlink:href)\s*=\s*(["']?)([^"'\s>]*)""", re.IGNORECASE)
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_LINK = re.compile(r'<a\b[^>]*?\shref\s*=\s*"([^"]*)"', re.IGNORECASE)


def assert_html_safe(html: str, *, run_dir: Path | None = None, report_dir: Path | None = None,
                     raw_characters: bool = True) -> None:
    for body in _SCRIPT.findall(html):
        assert "alert" not in body, f"run data inside a <script> element: {body[:200]!r}"
    assert not re.search(r"<script>alert", html, re.IGNORECASE)
    assert "<img src=x" not in html and "</table></div><b>broken" not in html
    assert not _EVENT_ATTR.search(html), _EVENT_ATTR.search(html).group(0)[:200]
    for _, url in _URL_ATTR.findall(html):
        assert not re.match(r"(?i)\s*(javascript|vbscript|data:text/html)", unquote(url)), url
    if run_dir is not None and report_dir is not None:  # evidence links: relative, into the run directory
        links = [url for url in _LINK.findall(html) if url and not url.startswith("#")]
        assert links, "no evidence link in the report"
        for url in links:
            assert not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", url), f"a link with a scheme: {url!r}"
            target = posixpath.normpath(posixpath.join(str(report_dir), unquote(url)))
            assert target.startswith(str(run_dir) + "/"), f"a link outside the run directory: {url!r}"
    if raw_characters:
        assert_no_raw_characters(_TITLE.sub("<title></title>", html, count=1))  # <title>: see test_report_title_is_escaped


def assert_no_raw_characters(text: str) -> None:
    for ch in RAW_FORBIDDEN:
        i = text.find(ch)
        assert i < 0, f"raw {ch!r} in {text[max(0, i - 120):i + 40]!r}"


def _cells(row: str) -> int:
    """Number of cells of a GFM table row: unescaped pipes split cells (a backslash escapes the next character)."""
    pipes, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        pipes += row[i] == "|"
        i += 1
    return pipes - 1


def _unescaped(line: str):
    """(index, character) of every character of ``line`` not escaped by a backslash."""
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        yield i, line[i]
        i += 1


def assert_markdown_safe(text: str) -> None:
    """Tables keep their column count; run data opens no code span, raw HTML, link or image; no raw control
    or bidi character; no line break from run data."""
    for ch in RAW_FORBIDDEN + ["\r"]:
        assert ch not in text, f"raw {ch!r} in the Markdown"
    lines = text.split("\n")
    table: list[str] = []
    for line in lines + [""]:
        for i, ch in _unescaped(line):
            assert ch != "`", f"unescaped backtick at {i} in {line[:300]!r}"
            assert not (ch == "<" and re.match(r"[A-Za-z/!?]", line[i + 1:i + 2])), f"a tag opens at {i}: {line[:300]!r}"
            assert not (ch == "]" and line[i + 1:i + 2] == "("), f"a link opens at {i} in {line[:300]!r}"
            assert not (ch == "!" and line[i + 1:i + 2] == "["), f"an image opens at {i} in {line[:300]!r}"
        if line.startswith("|"):
            table.append(line)
            continue
        assert "|" not in [ch for _, ch in _unescaped(line)] or not line.strip().endswith("|"), line[:300]
        if table:
            width = _cells(table[0])
            assert len(table) >= 2 and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", table[1]), table[:2]
            for row in table:
                assert _cells(row) == width, f"row with {_cells(row)} cells, header has {width}: {row[:300]!r}"
            table = []
    for fragment in ("line\r", "\nline", "\n# heading", "\n-->", "\nevil"):
        assert fragment not in text


# =========================================================================== the hostile report


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    """One ``capbench-nb report --allow-invalid --slice app --slice platform`` on the hostile run."""
    root = tmp_path_factory.mktemp("hostile")
    run = write_hostile_run(root / "run")
    out = root / "out"
    before = tree_hashes(run)
    rc, stdout, stderr = cli("report", run, "--out", out, "--allow-invalid", "--slice", "app", "--slice", "platform",
                             "--no-progress")
    return {"root": root, "run": run, "out": out, "rc": rc, "stdout": stdout, "stderr": stderr, "before": before}


def test_hostile_report_succeeds_and_changes_no_input(hostile_report):
    r = hostile_report
    assert r["rc"] == 0, r["stderr"]
    assert r["stdout"].strip() == str(r["out"] / "report.html")
    assert r["stderr"].count("\n") == 1 and "3 invalid line(s)" in r["stderr"]
    assert tree_hashes(r["run"]) == r["before"]


def test_hostile_report_html_is_escaped(hostile_report):
    html = (hostile_report["out"] / "report.html").read_text(encoding="utf-8")
    assert_html_safe(html, run_dir=hostile_report["run"], report_dir=hostile_report["out"])
    # Rendered as data, not dropped: escaped forms and visible escapes are there, non-Latin text intact.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u202e" in html and "非拉丁 текст עברית العربية 😀" in html
    assert "&lt;img src=x onerror=alert(3)&gt;" in html
    assert len(html) < 20_000_000


def test_report_title_is_escaped(hostile_report):
    html = (hostile_report["out"] / "report.html").read_text(encoding="utf-8")
    title = _TITLE.search(html).group(1)
    assert "&lt;script&gt;" in title and "<script" not in title
    for ch in RAW_FORBIDDEN:
        assert ch not in title, f"raw {ch!r} in <title>{title!r}"


def test_hostile_summary_md_tables_keep_their_columns(hostile_report):
    text = (hostile_report["out"] / "summary.md").read_text(encoding="utf-8")
    assert_markdown_safe(text)
    assert "\\<script\\>alert" in text  # the ids are there, escaped


def test_hostile_metrics_json_keeps_every_string_exactly(hostile_report):
    raw = (hostile_report["out"] / "metrics.json").read_bytes()
    assert raw.isascii()
    doc = json.loads(raw)
    assert [t["task_id"] for t in doc["per_task"]] == HOSTILE  # lose nothing: ids round-trip unchanged
    assert doc["run_id"] == hostile_manifest()["run_id"]
    kinds = [a["kind"] for a in doc["anomalies"]]
    assert kinds.count("invalid_line") == 3 and "task_not_in_plan" in kinds and "above_planned_repeats" in kinds
    rc, _, err = cli("verify", hostile_report["run"], "--out", hostile_report["out"])
    assert rc == 0, err


def test_output_file_names_never_come_from_run_data(hostile_report):
    out = hostile_report["out"]
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    assert sorted(p.name for p in hostile_report["root"].iterdir()) == ["out", "run"]


def test_hostile_report_notebook_outputs_are_escaped(hostile_report):
    """report.ipynb holds the same HTML outputs (a reader may open it in Jupyter)."""
    nb = json.loads((hostile_report["out"] / "report.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html")
            if html:
                assert_html_safe("".join(html) if isinstance(html, list) else html)


# --------------------------------------------------------------------------- comparison


def test_comparison_markdown_escapes_hostile_runs(tmp_path):
    a = write_hostile_run(tmp_path / "a", seed=1, invalid=False)
    b = write_hostile_run(tmp_path / "b", seed=2, invalid=False, run_id_suffix="-b",
                          model="other \u202e<script>alert('b')</script>|")
    doc = compare_runs(load_run(a), load_run(b), n_boot=200)
    assert {w["code"] for w in doc["compatibility"]["warnings"]} >= {"model"}
    text = comparison_markdown(doc)
    assert_markdown_safe(text)
    assert json.loads(json.dumps(doc))  # the document itself is plain JSON


#: Path fragments that would run a command if a path were spliced into shell or Python source.
PAYLOADS = ("$(touch $CAPBENCH_PWNED) `touch $CAPBENCH_PWNED` $HOME %s %(run_dir)s \\x "
            "\"+__import__('os').system('touch $CAPBENCH_PWNED')+\" "
            "'+__import__('os').system('touch $CAPBENCH_PWNED')+' \"\"\" '''")


@pytest.fixture(scope="module")
def hostile_compare(tmp_path_factory):
    """``capbench-nb compare`` once on two hostile runs whose directory names hold quotes, a newline and $(...)."""
    root = tmp_path_factory.mktemp("compare")
    pwned = root / "pwned-compare"
    os.environ["CAPBENCH_PWNED"] = str(pwned)  # the payloads name it without a slash: they fit in a folder name
    weird = root / ("q\"uo't\nnl " + PAYLOADS)
    a = write_hostile_run(weird / "run a", seed=1, invalid=False)
    b = write_hostile_run(weird / "run b", seed=2, invalid=False, run_id_suffix="-b",
                          model="other \u202e<script>alert('b')</script>\x9b|")
    out = weird / "out $(touch x)"
    before = tree_hashes(weird)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        rc, stdout, stderr = cli("compare", a, b, "--out", out, "--seed", "3", "--no-progress")
    finally:
        os.chdir(cwd)
        del os.environ["CAPBENCH_PWNED"]
    return {"root": root, "weird": weird, "out": out, "rc": rc, "stdout": stdout, "stderr": stderr,
            "pwned": pwned, "before": before}


def test_hostile_compare_outputs_are_escaped(hostile_compare):
    c = hostile_compare
    assert c["rc"] == 0, c["stderr"]
    assert not c["pwned"].exists() and not (c["root"] / "x").exists()
    out = c["out"]
    assert sorted(p.name for p in out.iterdir()) == ["comparison.html", "comparison.ipynb", "comparison.json",
                                                     "comparison.md"]
    assert_html_safe((out / "comparison.html").read_text(encoding="utf-8"), raw_characters=False)  # see below
    assert_markdown_safe((out / "comparison.md").read_text(encoding="utf-8"))
    assert "Traceback" not in c["stderr"]
    after = {k: v for k, v in tree_hashes(c["weird"]).items() if not k.startswith("out $(touch x)")}
    assert after == c["before"]
    assert sorted(p.name for p in c["root"].iterdir()) == [c["weird"].name]


def test_hostile_compare_html_neutralises_control_and_bidi_characters(hostile_compare):
    html = (hostile_compare["out"] / "comparison.html").read_text(encoding="utf-8")
    assert_no_raw_characters(_TITLE.sub("<title></title>", html, count=1))


def test_hostile_compare_warnings_on_stderr_are_escaped(hostile_compare):
    lines = hostile_compare["stderr"].splitlines()
    assert lines and all(line.startswith("capbench-nb: warning: [") for line in lines), lines
    for line in lines:
        for ch in RAW_FORBIDDEN:
            assert ch not in line, f"raw {ch!r} on stderr: {line[:200]!r}"


# --------------------------------------------------------------------------- hostile error messages


@pytest.mark.parametrize("record,rule", [
    ({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True,
      "failure_class": "\x1b[2J\x1b[H<script>\u202e" + LONG_TEXT}, "failure-class"),
    ({"task_id": "t", "attempt": "\n\r\u2028" + LONG_TEXT, "success": True, "agent_eligible": True,
      "failure_class": ""}, "attempt"),
    pytest.param({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": "",
                  "artifact_dir": "../\x1b]0;title\x07" + LONG_TEXT}, "artifact-dir", id="artifact-dir"),
    pytest.param({"task_id": "t", "attempt": 1, "success": False, "agent_eligible": True, "failure_class": "agent",
                  "artifact_dir": ".", "evidence": ["manifest.json#/" + LONG_TEXT]}, "evidence", id="evidence"),
], ids=["failure-class", "attempt", "artifact-dir", "evidence"])
def test_error_messages_quoting_run_data_stay_one_clean_line(tmp_path, record, rule):
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                    "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}}
    run = write(tmp_path / "run", manifest_doc, json.dumps(record).encode() + b"\n")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2
    check_error(err, run, "results.jsonl:1", rule)  # one line, no raw control or bidi character
    assert len(err) < 1200


def test_duplicate_hostile_task_id_error_is_escaped(tmp_path):
    tid = "dup\x1b[31m\u202e\n<script>"
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                    "plan": {"tasks": [{"task_id": tid, "repeats": 2}]}}
    rec = {"task_id": tid, "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""}
    run = write(tmp_path / "run", manifest_doc, compact(rec) + b"\n" + compact(rec) + b"\n")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2
    check_error(err, run, "results.jsonl:2", "duplicate-attempt")


# --------------------------------------------------------------------------- reading outside the run


SECRET = "HARDENING-SECRET-OUTSIDE-THE-RUN"


@pytest.fixture
def outside_secret(tmp_path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "attempt.json").write_text(json.dumps({"setup": SECRET, "events": [SECRET]}))
    (secret / "episode.json").write_text(json.dumps({"events": [{"type": "x", "secret": SECRET}]}))
    return secret


def _escape_case(tmp_path: Path, secret: Path, case: str) -> tuple[Path, dict]:
    run = tmp_path / "run"
    art = run / "attempts" / "t" / "1"
    art.mkdir(parents=True)
    (art / "attempt.json").write_text(json.dumps({"setup": "inside"}))
    rec = {"task_id": "t", "attempt": 1, "success": False, "agent_eligible": True, "failure_class": "agent",
           "artifact_dir": "attempts/t/1", "evidence": ["attempt.json#/setup"]}
    if case == "artifact-dir-dotdot":
        rec["artifact_dir"] = f"../{secret.name}"
    elif case == "artifact-dir-absolute":
        rec["artifact_dir"] = str(secret)
    elif case == "artifact-dir-symlink":
        os.symlink(secret, run / "attempts" / "link")
        rec["artifact_dir"] = "attempts/link"
    elif case == "artifact-dir-parent-symlink":  # a symlinked directory higher up the path
        os.symlink(secret.parent, run / "attempts" / "up")
        rec["artifact_dir"] = f"attempts/up/{secret.name}"
    elif case == "evidence-dotdot":
        rec["evidence"] = [f"../../../../{secret.name}/attempt.json#/setup"]
    elif case == "evidence-absolute":
        rec["evidence"] = [f"{secret}/attempt.json#/setup"]
    elif case == "evidence-symlink":
        (art / "attempt.json").unlink()
        os.symlink(secret / "attempt.json", art / "attempt.json")
    elif case == "evidence-symlink-chain":  # inside -> inside -> outside
        (art / "attempt.json").unlink()
        os.symlink(secret / "attempt.json", run / "hop")
        os.symlink("../../../hop", art / "attempt.json")
    elif case == "evidence-backslash-dotdot":
        rec["evidence"] = [f"..\\..\\..\\..\\{secret.name}\\attempt.json#/setup"]
    elif case == "artifact-dir-is-run-dir":  # allowed: "." is inside the run
        rec["artifact_dir"] = "."
        rec["evidence"] = ["manifest.json#/run_id"]
    write(run, {"schema_version": "capbench.run/1", "run_id": "r", "status": "completed",
                "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}}, compact(rec) + b"\n")
    return run, rec


@pytest.mark.parametrize("case", [
    "artifact-dir-dotdot", "artifact-dir-absolute", "artifact-dir-symlink", "artifact-dir-parent-symlink",
    "evidence-dotdot", "evidence-absolute", "evidence-symlink", "evidence-symlink-chain", "evidence-backslash-dotdot",
])
def test_evidence_and_artifact_dir_cannot_read_outside_the_run(tmp_path, outside_secret, case):
    run, _ = _escape_case(tmp_path, outside_secret, case)
    before = tree_hashes(run)
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 2, f"{case}: accepted a reference outside the run"
    check_error(err, run, "results.jsonl:1", ["artifact-dir", "evidence"])
    assert SECRET not in err
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out", "--allow-invalid")
    assert rc == 0
    text = (tmp_path / "out" / "metrics.json").read_text()
    assert SECRET not in text and SECRET not in err
    assert [a["line"] for a in json.loads(text)["anomalies"]] == [1]
    assert tree_hashes(run) == before


def test_artifact_dir_dot_is_the_run_directory_itself(tmp_path, outside_secret):
    run, _ = _escape_case(tmp_path, outside_secret, "artifact-dir-is-run-dir")
    rc, _, err = cli("metrics", run, "--out", tmp_path / "out")
    assert rc == 0, err


def test_ingest_refuses_attempt_directories_linked_from_outside(tmp_path):
    """attempts/<task> a symlink to a folder outside the run: ingest must not derive records from it."""
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "2", "--repeats", "1", "--seed", "5", "--out", run, "--artifacts")
    assert rc == 0, err
    task_dir = min((run / "attempts").iterdir())
    outside = tmp_path / "outside" / task_dir.name
    outside.parent.mkdir()
    shutil.move(str(task_dir), outside)
    os.symlink(outside, task_dir)
    (run / "results.jsonl").unlink(missing_ok=True)
    before = tree_hashes(run)
    rc, _, err = cli("ingest", run)
    assert rc == 2, err
    check_error(err)
    assert not (run / "results.jsonl").exists()
    assert tree_hashes(run) == before


# =========================================================================== parameters are data


def test_report_paths_with_quotes_newlines_and_command_substitution(tmp_path, monkeypatch):
    pwned = tmp_path / "pwned"
    monkeypatch.setenv("CAPBENCH_PWNED", str(pwned))  # inherited by the kernel
    weird = tmp_path / ("a\"b'c\nd " + PAYLOADS)
    run = weird / "run"
    rc, _, err = cli("simulate", "--tasks", "4", "--repeats", "2", "--seed", "1", "--out", run)
    assert rc == 0, err
    out = weird / "out $(touch pwned2)"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rc, stdout, err = cli("report", run, "--out", out, "--no-progress")
    finally:
        os.chdir(cwd)
    assert rc == 0, err
    assert stdout.strip() == str(out / "report.html")
    assert not pwned.exists() and not (tmp_path / "pwned2").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [weird.name]
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    rc, _, err = cli("verify", run, "--out", out)
    assert rc == 0, err
    nb = json.loads((out / "report.ipynb").read_text(encoding="utf-8"))
    injected = next(c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec("".join(injected["source"]), namespace)  # noqa: S102 - the parameters cell holds literals: the paths come back exactly
    assert namespace["run_dir"] == str(run.absolute()) and namespace["report_dir"] == str(out.absolute())


@pytest.mark.parametrize("name", ["out{x}", "out{run_dir}"])
def test_report_output_directory_with_braces(tmp_path, name):
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "3", "--repeats", "1", "--seed", "1", "--out", run)
    assert rc == 0, err
    out = tmp_path / name
    rc, _, err = cli("report", run, "--out", out, "--no-progress")
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)


# =========================================================================== kill mid-report

#: A minimal report notebook (same parameters, writes metrics.json and summary.md like the real one): the
#: publishing step is the same, and a kernel running it costs a few seconds instead of a full report.
TINY_NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                 "language_info": {"name": "python"}},
    "cells": [
        {"cell_type": "code", "id": "params", "metadata": {"tags": ["parameters"]}, "execution_count": None,
         "outputs": [], "source": 'run_dir = ""\nout_dir = ""\nreport_dir = ""\nallow_invalid = False\nslices = []\n'},
        {"cell_type": "code", "id": "work", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "from pathlib import Path\nimport capbench_nb\nfrom capbench_nb import export, reporting\n"
                   "run = capbench_nb.load_run(run_dir, strict=not allow_invalid)\n"
                   "doc = capbench_nb.compute_metrics(run, slices=slices)\n"
                   "export.write_atomic(Path(out_dir) / 'metrics.json', export.dumps(doc))\n"
                   "export.write_atomic(Path(out_dir) / 'summary.md', reporting.summary_markdown(doc))\n"},
    ],
}

#: build_report with TINY_NOTEBOOK, killed (SIGKILL) right after the first output is renamed into OUT.
#: A report whose process is SIGKILLed at the commit point of publishing, right after it: with the folder
#: exchange (``exchange``), or, where the exchange is unsupported, between the fallback's two renames (``renames``).
_PUBLISH_KILLER = textwrap.dedent("""
    import errno, os, signal, sys
    from pathlib import Path
    from capbench_nb.outputs import reportrun
    run, out, notebook, mode = sys.argv[1:5]
    target = Path(out).absolute()
    if mode == "exchange":
        real_exchange = reportrun._rename_exchange
        def exchange(a, b):
            real_exchange(a, b)
            os.kill(os.getpid(), signal.SIGKILL)
        reportrun._rename_exchange = exchange
    else:
        def unsupported(a, b):
            raise OSError(errno.EINVAL, "exchange unsupported (test)")
        reportrun._rename_exchange = unsupported
        real_rename = os.rename
        def rename(src, dst, *args, **kwargs):
            real_rename(src, dst, *args, **kwargs)
            if Path(src).absolute() == target:
                os.kill(os.getpid(), signal.SIGKILL)
        os.rename = rename
    reportrun.build_report(run, out, progress=False, notebook=notebook)
""")


def _report_cmd(run: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "capbench_nb.cli", "report", str(run), "--out", str(out), "--no-progress"]


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                children = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except OSError:
                continue
            for c in map(int, children):
                if c not in found:
                    found.add(c)
                    todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _outputs(out: Path) -> dict:
    return {name: (out / name).read_bytes() for name in OUTPUT_FILES if (out / name).exists()}


def _staging(out: Path) -> list[str]:
    """Staging folders of reports into ``out``: beside it (``.OUT.capbench-*``) or, shared, inside it."""
    beside = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.capbench-")]
    inside = [p for p in out.iterdir() if p.name.startswith(".capbench-report-")] if out.is_dir() else []
    return sorted(str(p.relative_to(out.parent)) for p in beside + inside)


def _two_runs(root: Path) -> tuple[Path, Path]:
    old = root / "run-old"
    new = root / "run-new"
    for run, seed in ((old, 1), (new, 2)):
        rc, _, err = cli("simulate", "--tasks", "12", "--repeats", "3", "--seed", str(seed), "--out", run)
        assert rc == 0, err
    return old, new


@pytest.fixture(scope="module")
def killed_reports(tmp_path_factory):
    """Over complete outputs of run-old: ``capbench-nb report`` of run-new killed (SIGKILL) at random moments;
    then, in another copy, a report killed between two renames of the publishing step, and a normal report
    over what that left."""
    from capbench_nb.outputs.reportrun import build_report

    root = tmp_path_factory.mktemp("kill")
    old, new = _two_runs(root)
    notebook = root / "tiny.ipynb"
    notebook.write_text(json.dumps(TINY_NOTEBOOK), encoding="utf-8")
    out = root / "out"
    build_report(old, out, progress=False, notebook=notebook)
    previous = _outputs(out)
    assert sorted(previous) == sorted(OUTPUT_FILES)
    out_previous = root / "out-previous"
    shutil.copytree(out, out_previous)

    rng = random.Random(int(os.environ.get("CAPBENCH_FUZZ_SEED", "8")))
    observations = []
    # A report takes ~5-10 s here: loading, kernel start, the cells, nbconvert, publishing.  By default one kill
    # while the kernel runs and one later (nbconvert or publishing, or after the end: then the new report is
    # complete); CAPBENCH_FUZZ=long adds ten more anywhere.
    windows = [(1.0, 3.5), (3.5, 7.0)] + ([(0.2, 9.0)] * 10 if LONG else [])
    for low, high in windows:
        delay = rng.uniform(low, high)
        child = subprocess.Popen(_report_cmd(new, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        family = _descendants(child.pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in family):
            time.sleep(0.2)
        orphans = [p for p in family if _alive(p)]
        for p in orphans:  # processes this test started (through the report): end them by pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        observations.append({"delay": delay, "outputs": _outputs(out), "staging": _staging(out), "orphans": orphans,
                             "family": sorted(family),
                             "staging_files": {s: sorted(q.name for q in (out.parent / s).iterdir())
                                               for s in _staging(out)}})

    publish, recovery = {}, {}
    for mode in ("exchange", "renames"):
        target = root / f"publish-out-{mode}"
        shutil.copytree(out_previous, target)
        proc = subprocess.run([sys.executable, "-c", _PUBLISH_KILLER, str(new), str(target), str(notebook), mode],
                              check=False, capture_output=True, text=True, timeout=300)
        publish[mode] = {"rc": proc.returncode, "stderr": proc.stderr, "outputs": _outputs(target),
                         "staging": _staging(target), "out": target}
        try:
            build_report(new, target, progress=False, notebook=notebook)
            recovery[mode] = {"error": None}
        except Exception as exc:  # noqa: BLE001 - reported by test_report_after_a_kill_succeeds
            recovery[mode] = {"error": repr(exc)}
        recovery[mode].update(outputs=_outputs(target), staging=_staging(target), out=target)
    return {"old": old, "new": new, "out": out, "previous": previous,
            "observations": observations, "publish": publish, "recovery": recovery}


def _classify(outputs: dict, previous: dict, new_run: Path, out: Path) -> str:
    """'previous', 'new' (complete and verified against the new run), or a description of the mix."""
    if outputs == previous:
        return "previous"
    if not outputs:
        return "none"
    if sorted(outputs) == sorted(OUTPUT_FILES) and all(outputs[n] != previous[n] for n in ("metrics.json", "summary.md")):
        rc, _, err = cli("verify", new_run, "--out", out)
        return "new" if rc == 0 else f"new but verify fails: {err.strip()}"
    same = sorted(n for n in outputs if outputs[n] == previous.get(n))
    return f"mixed: previous {same}, changed {sorted(set(outputs) - set(same))}"


def test_killed_report_leaves_previous_or_complete_outputs(killed_reports):
    k = killed_reports
    for obs in k["observations"]:
        if "metrics.json" in obs["outputs"]:
            json.loads(obs["outputs"]["metrics.json"])  # never half-written
        state = _classify(obs["outputs"], k["previous"], k["new"], k["out"]) if obs["outputs"] != k["previous"] \
            else "previous"
        assert state in ("previous", "new"), (round(obs["delay"], 2), state)
        for files in obs["staging_files"].values():  # a leftover staging folder holds the partial files, not out/
            assert not set(files) - set(OUTPUT_FILES) - {".previous"}, files


def test_killed_report_leaves_no_kernel_running(killed_reports):
    for obs in killed_reports["observations"]:
        assert obs["orphans"] == [], f"kernel processes outlived the killed report by 15 s: {obs['orphans']}"


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_kill_at_the_commit_point_does_not_mix_two_reports(killed_reports, mode):
    """Killed right after the folder exchange: the new report, complete.  Killed between the fallback's two
    renames: no outputs (the previous ones wait in a hidden folder beside, restored by the next build)."""
    publish = killed_reports["publish"][mode]
    assert publish["rc"] == -signal.SIGKILL, publish["stderr"][-2000:]
    state = _classify(publish["outputs"], killed_reports["previous"], killed_reports["new"], publish["out"])
    assert state == {"exchange": "new", "renames": "none"}[mode], state
    if mode == "renames":
        assert [s for s in publish["staging"] if s.endswith(".previous")], publish["staging"]


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_report_after_a_kill_succeeds(killed_reports, mode):
    recovery = killed_reports["recovery"][mode]
    assert recovery["error"] is None, recovery["error"]
    assert _classify(recovery["outputs"], killed_reports["previous"], killed_reports["new"], recovery["out"]) == "new"


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_stale_staging_folders_are_removed_by_the_next_report(killed_reports, mode):
    assert killed_reports["publish"][mode]["staging"], "the killed publish left no staging folder (test premise)"
    assert killed_reports["recovery"][mode]["staging"] == []


def test_a_shared_output_directory_is_published_file_by_file(tmp_path):
    """An output directory holding other files (here the run itself) is never swapped: only the outputs change."""
    run = tmp_path / "run"
    rc, _, err = cli("simulate", "--tasks", "3", "--repeats", "1", "--seed", "1", "--out", run)
    assert rc == 0, err
    before = {p.name: p.stat().st_ino for p in run.iterdir()}
    rc, _, err = cli("report", run, "--no-progress")
    assert rc == 0, err
    after = {p.name: p.stat().st_ino for p in run.iterdir()}
    assert {n: after[n] for n in before} == before  # same files, same inodes: nothing moved
    assert set(after) - set(before) == set(OUTPUT_FILES) and not _staging(run)


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


_CELL_ID = re.compile(r'id="cell-id=[0-9a-f-]+"')


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


def test_metrics_and_summary_are_byte_identical_across_runs(determinism):
    first, second = determinism["outs"]["first"], determinism["outs"]["second"]
    for name in ("metrics.json", "summary.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_report_html_identical_apart_from_the_injected_cell_id(determinism):
    first, second = determinism["outs"]["first"], determinism["outs"]["second"]
    a = (first / "report.html").read_text(encoding="utf-8")
    b = (second / "report.html").read_text(encoding="utf-8")
    assert len(set(_CELL_ID.findall(a)) - set(_CELL_ID.findall(b))) <= 1  # the injected cell's, if any
    assert _CELL_ID.sub("CELL", a) == _CELL_ID.sub("CELL", b)


def test_report_html_is_byte_identical_across_runs(determinism):
    first, second = determinism["outs"]["first"], determinism["outs"]["second"]
    assert (first / "report.html").read_bytes() == (second / "report.html").read_bytes()


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
            body = [re.sub(r'(<td class="[^"]*num[^"]*">)\d+(</td>)', r"\1N\2", r) for r in rows if "<td" in r]
            text = text.replace(table, "".join(r for r in rows if "<td" not in r) + "".join(sorted(body)))
    return text


def test_shuffled_results_give_the_same_outputs(determinism):
    """Everything is identical except what names the file's bytes: the results.jsonl hash and the physical
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


# =========================================================================== large inputs

_MEASURE = textwrap.dedent("""
    import resource, sys, time
    from capbench_nb.cli import main
    start = time.monotonic()
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"MEASURE rc={rc} peak={peak} seconds={time.monotonic() - start:.2f}", file=sys.stderr)
    sys.exit(rc)
""")


def measure(*argv, timeout: float = 120) -> dict:
    """``capbench-nb ARGV`` in a fresh process: exit code, peak RSS (bytes), wall seconds, stderr without the probe."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, argv)], check=False, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.monotonic() - start
    m = re.search(r"MEASURE rc=(\S+) peak=(\d+) seconds=(\S+)", proc.stderr)
    assert m, proc.stderr[-2000:]
    stderr = proc.stderr[: m.start()]
    return {"rc": proc.returncode, "peak": int(m.group(2)), "wall": wall, "stderr": stderr}


def _big_run(path: Path, size: int, *, tasks: int = 1000) -> Path:
    """A valid run of about ``size`` bytes of results.jsonl: one record repeated with new ids.

    Planned repeats cover every attempt written (~700 bytes a record) and no more: k, and with it the size of
    metrics.json's curves, grows with repeats (see test_fuzz.py::test_plan_with_a_million_repeats...).
    """
    record = {"task_id": "@T@", "attempt": 999999, "artifact_dir": None, "success": False, "agent_eligible": True,
              "failure_class": "agent", "quality_score": 0.5,
              "telemetry": {"task_wall_ms": 1234.5, "input_tokens": 100, "output_tokens": 50, "total_tokens": 150,
                            "tool_calls": 3, "recovery_attempted": False},
              "telemetry_source": {"task_wall_ms": "attempt.json#/agent/task_wall_ms"}, "cost": None, "cost_source": None}
    template = json.dumps(record).replace('"@T@"', '"task-%05d"').replace("999999", "%d") + "\n"
    repeats = size // (len(template % (0, 1)) * tasks) + 2
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "big", "status": "completed",
                    "plan": {"k": None, "tasks": [{"task_id": f"task-{i:05d}", "repeats": repeats}
                                                  for i in range(tasks)]}}
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps(manifest_doc))
    with open(path / "results.jsonl", "w", encoding="utf-8") as fh:
        written, i, chunk = 0, 0, []
        while written < size:
            line = template % (i % tasks, i // tasks + 1)
            chunk.append(line)
            written += len(line)
            i += 1
            if len(chunk) == 20000:
                fh.write("".join(chunk))
                chunk = []
        fh.write("".join(chunk))
    return path


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory) -> int:
    root = tmp_path_factory.mktemp("baseline")
    run = write(root / "run", {"schema_version": "capbench.run/1", "run_id": "tiny", "status": "completed",
                               "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}},
                compact({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True,
                         "failure_class": ""}) + b"\n")
    result = measure("metrics", run, "--out", root / "out")
    assert result["rc"] == 0, result["stderr"]
    return result["peak"]


def test_50_mb_results_in_bounded_memory_and_time(tmp_path, baseline_rss):
    run = _big_run(tmp_path / "run", 50_000_000)
    size = (run / "results.jsonl").stat().st_size
    result = measure("metrics", run, "--out", tmp_path / "out")
    assert result["rc"] == 0, result["stderr"]
    extra = result["peak"] - baseline_rss
    print(f"50 MB: {size / 1e6:.0f} MB, {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB "
          f"({extra / 2**20:.0f} MiB above a tiny run)")
    assert result["wall"] < 60
    assert extra < 5 * size, f"{extra / 2**20:.0f} MiB above a tiny run for a {size / 1e6:.0f} MB file"
    doc = read_doc(tmp_path / "out")
    assert doc["attempts"]["total"] == (run / "results.jsonl").read_bytes().count(b"\n")


def test_damage_deep_in_a_large_file_is_found_on_its_line(tmp_path):
    """Damage past the first 16 MB (the fast path's first chunk): a NaN token, a duplicate of a record from the
    start of the file and a truncated last line.  Strict names the first, --allow-invalid lists all three."""
    run = _big_run(tmp_path / "run", 20_000_000)
    results = run / "results.jsonl"
    lines = results.read_bytes().split(b"\n")[:-1]
    offset, nan_at = 0, 0
    while offset <= 17_000_000:  # the first line starting past 16 MiB
        offset += len(lines[nan_at]) + 1
        nan_at += 1
    dup_at = nan_at + 1000
    lines[nan_at] = lines[nan_at].replace(b'"quality_score": 0.5', b'"quality_score": NaN')
    lines.insert(dup_at, lines[3])
    data = b"\n".join(lines) + b"\n" + lines[10][:57]
    results.write_bytes(data)
    total = len(lines) + 1
    result = measure("metrics", run, "--out", tmp_path / "out")
    assert result["rc"] == 2
    check_error(result["stderr"], run, f"results.jsonl:{nan_at + 1}", "json-nan")
    result = measure("metrics", run, "--out", tmp_path / "out", "--allow-invalid")
    assert result["rc"] == 0, result["stderr"]
    doc = read_doc(tmp_path / "out")
    assert [(a["line"], a["reason"].rsplit("[rule: ", 1)[1]) for a in doc["anomalies"]] == [
        (nan_at + 1, "json-nan]"), (dup_at + 1, "duplicate-attempt]"), (total, "truncated-line]")]
    assert doc["attempts"]["total"] == total - 3


@pytest.mark.parametrize("kind", ["valid-record-with-a-100-MB-field", "100-MB-of-garbage", "100-MB-truncated-record"])
def test_single_100_mb_line_finishes(tmp_path, kind):
    run = tmp_path / "run"
    first = compact({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""})
    blob = "x" * 100_000_000
    if kind.startswith("valid"):
        second = json.dumps({"task_id": "t", "attempt": 2, "success": False, "agent_eligible": True,
                             "failure_class": "agent", "notes": blob}).encode() + b"\n"
    elif kind.startswith("100-MB-of-garbage"):
        second = blob.encode() + b"\n"
    else:
        second = b'{"task_id": "t", "attempt": 2, "notes": "' + blob.encode()
    write(run, {"schema_version": "capbench.run/1", "run_id": "line", "status": "completed",
                "plan": {"tasks": [{"task_id": "t", "repeats": 2}]}}, first + b"\n" + second)
    del blob, second
    result = measure("metrics", run, "--out", tmp_path / "out")
    print(f"{kind}: {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB")
    assert result["wall"] < 60
    if kind.startswith("valid"):
        assert result["rc"] == 0, result["stderr"]
        assert read_doc(tmp_path / "out")["attempts"]["total"] == 2
        assert (tmp_path / "out" / "metrics.json").stat().st_size < 1_000_000
    else:
        assert result["rc"] == 2
        check_error(result["stderr"], run, "results.jsonl:2", "json" if "garbage" in kind else "truncated-line")
        assert len(result["stderr"]) < 1200


@pytest.mark.skipif(not LONG, reason="1 GB input: set CAPBENCH_FUZZ=long")
def test_1_gb_results_in_bounded_memory_or_refused(tmp_path, baseline_rss):
    run = _big_run(tmp_path / "run", 1_000_000_000)
    size = (run / "results.jsonl").stat().st_size
    result = measure("metrics", run, "--out", tmp_path / "out", timeout=900)
    print(f"1 GB: {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB, rc {result['rc']}")
    if result["rc"] == 2:
        check_error(result["stderr"])
    else:
        assert result["rc"] == 0, result["stderr"]
        assert result["peak"] < 2 * 2**30, f"peak RSS {result['peak'] / 2**20:.0f} MiB for {size / 1e9:.1f} GB"
