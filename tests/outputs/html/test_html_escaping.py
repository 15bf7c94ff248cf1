"""Run-supplied strings are escaped in every output: report.html, summary.md, report.ipynb, the comparison files.

Task ids, labels, run id, suite, config and error messages holding HTML,
Markdown table syntax, control characters, bidi overrides, very long and
non-Latin text render as data (``outputs.reporting`` escaping, ``outputs.comparison``,
the report and compare commands of ``outputs.report.run`` and ``outputs.comparison.run``), and output file names
never come from them.  Each ``capbench-nb report`` executes a notebook (~5-10 s),
so reports are built once per module fixture and inspected by several tests.
"""

from __future__ import annotations

import json
import os
import posixpath
import random
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import PAYLOADS, cli, tree_hashes
from capbench_nb.metrics.comparison import compare_runs
from capbench_nb.outputs.comparison.files import comparison_markdown
from capbench_nb.outputs.report.run import OUTPUT_FILES
from capbench_nb.records.run import load_run

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

_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_EVENT_ATTR = re.compile(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
_URL_ATTR = re.compile(r"""<[a-zA-Z][^>]*?\s(?:href|src|action|formaction|xlink:href)\s*=\s*(["']?)([^"'\s>]*)""", re.IGNORECASE)
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_LINK = re.compile(r'<a\b[^>]*?\shref\s*=\s*"([^"]*)"', re.IGNORECASE)


def assert_html_safe(html: str, *, run_dir: Path | None = None, report_dir: Path | None = None,
                     raw_characters: bool = True) -> None:
    islands = []
    for attributes, body in _SCRIPT.findall(html):
        if re.search(r'type\s*=\s*"application/json"', attributes):  # a data island: JSON, inserted as text
            assert not re.search(r"[<>&\u2028\u2029]", body), f"a raw markup character in a data island: {body[:200]!r}"
            islands.append(json.loads(body))
        else:
            assert "alert" not in body, f"run data inside a <script> element: {body[:200]!r}"
    assert not re.search(r"<script>alert", html, re.IGNORECASE)
    assert "<img src=x" not in html and "</table></div><b>broken" not in html
    assert not _EVENT_ATTR.search(html), _EVENT_ATTR.search(html).group(0)[:200]
    for _, url in _URL_ATTR.findall(html):
        assert not re.match(r"(?i)\s*(javascript|vbscript|data:text/html)", unquote(url)), url
    if run_dir is not None and report_dir is not None:  # evidence links: relative, into the run directory
        links = [url for url in _LINK.findall(html) if url and not url.startswith("#")]
        # The explorer builds its artifact links in the page from the island: link_base (the run
        # directory relative to the report) + an artifact_dir the loader checked stays inside the run.
        links += [island["link_base"] + "attempts" for island in islands if "link_base" in island]
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
