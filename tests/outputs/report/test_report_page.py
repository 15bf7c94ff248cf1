"""Report content: formatters, escaping, summary.md, and every show_/plot_ function.

Displays are captured by replacing ``capbench_nb.outputs.html.tables.display`` (every section and figure
is displayed through ``tables.show_html`` or ``tables.show_style``); figures
are rendered off-screen (matplotlib Figure objects, Agg, no pyplot).
"""

from __future__ import annotations

import base64
import json
import re

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import capbench_nb as cb  # noqa: E402
from capbench_nb.outputs.html import tables  # noqa: E402
from capbench_nb.outputs.report import page as rp  # noqa: E402
from capbench_nb.outputs.report.page import (  # noqa: E402
    fmt_cost,
    fmt_count,
    fmt_interval,
    fmt_ms,
    fmt_pct,
    fmt_rate,
    html_escape,
    md_escape,
    summary_markdown,
)
from capbench_nb.metrics.stats import wilson_interval  # noqa: E402

from conftest import SAMPLE_RUN, html_of, manifest, outcomes, record, write_run  # noqa: E402

NASTY_IDS = [
    "<script>alert(1)</script>",
    "a|b",
    "`tick`",
    "*bold*_under_[link](javascript:alert(1))",
    "设置.无线.切换",
    "שלום\u202eevil.exe",
    "two\nlines\x07bell",
    "$\\frac{1}{$",
    "back\\slash &amp; <b>",
    "x" * 500,
]


# --------------------------------------------------------------------------- helpers


def images_of(shown) -> list[bytes]:
    """The PNG figures, displayed inline as data: URIs."""
    found = re.findall(r'<img class="cb-fig" [^>]*src="data:image/png;base64,([^"]+)"', html_of(shown))
    return [base64.b64decode(data) for data in found]


def run_everything(doc, run, parameters=None) -> None:
    rp.show_style()
    rp.show_headline(doc, run)
    rp.plot_headline(doc)
    rp.show_outcomes(doc, run)
    rp.show_telemetry(doc)
    rp.plot_telemetry(run, doc)
    rp.show_anomalies(doc)
    rp.show_provenance(doc, parameters or {"run_dir": "RUN", "k": None})


_UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")


def unescaped_pipes(line: str) -> int:
    """Number of ``|`` not preceded by an odd number of backslashes."""
    count = 0
    for i, ch in enumerate(line):
        if ch == "|":
            j, slashes = i - 1, 0
            while j >= 0 and line[j] == "\\":
                slashes += 1
                j -= 1
            count += slashes % 2 == 0
    return count


def assert_tables_are_rectangular(html: str) -> None:
    """Every row of every HTML table has as many cells as its header."""
    tables = re.findall(r"<table.*?</table>", html, flags=re.S)
    assert tables
    for table in tables:
        head = re.search(r"<thead>(.*?)</thead>", table, flags=re.S).group(1)
        width = head.count("<th")
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("</thead>")[1], flags=re.S):
            assert row.count("<td") == width, row


def table_lines(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


@pytest.fixture(scope="module")
def sample():
    run = cb.load_run(SAMPLE_RUN)
    return run, cb.compute_metrics(run)


@pytest.fixture
def nasty(tmp_path):
    """A run whose task ids and run id hold markup, pipes, backticks, bidi overrides and non-Latin text."""
    tasks = [(tid, 2) for tid in NASTY_IDS]
    man = manifest(tasks)
    man["run_id"] = "run <img src=x onerror=alert(1)> | `x`"
    man["suite"] = {"name": "<script>s</script>", "version": "1|2"}
    codes = ["SA", "AS", "EE", "SS", "KA", "XS", "AA", "S.", "VS", ""]
    spec = {tid: code for tid, code in zip(NASTY_IDS, codes)}
    records = outcomes(spec)
    # One attempt with a failure stage whose evidence lives in a directory with markup in its name.
    adir = "attempts/<script>x</script>/1"
    (tmp_path / "run" / adir).mkdir(parents=True)
    (tmp_path / "run" / adir / "attempt.json").write_text(json.dumps({"setup": {"status": "failed"}}))
    records = [r for r in records if not (r["task_id"] == NASTY_IDS[2] and r["attempt"] == 1)]
    records.append(
        record(NASTY_IDS[2], 1, "E", artifact_dir=adir, failure_stage="setup", evidence=["attempt.json#/setup"])
    )
    # Anomalies: a record outside the plan and one above planned repeats.
    records.append(record("<script>notplanned</script>", 1, "S"))
    records.append(record(NASTY_IDS[0], 3, "S"))
    run = cb.load_run(write_run(tmp_path / "run", man, records))
    return run, cb.compute_metrics(run)


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    "ms, text",
    [
        (0, "0 ms"),
        (0.2, "<1 ms"),
        (842, "842 ms"),
        (999, "999 ms"),
        (999.4, "999 ms"),
        (999.5, "1.0 s"),
        (1000, "1.0 s"),
        (12_400, "12.4 s"),
        (59_949, "59.9 s"),
        (59_950, "1 min 00 s"),
        (60_000, "1 min 00 s"),
        (185_000, "3 min 05 s"),
        (3_599_499, "59 min 59 s"),
        (3_599_500, "1 h 00 min"),
        (3_720_000, "1 h 02 min"),
        (90_000_000, "25 h 00 min"),
    ],
)
def test_fmt_ms_boundaries(ms, text):
    assert fmt_ms(ms) == text


@pytest.mark.parametrize("null", [None, float("nan"), pd.NA])
def test_nulls_are_never_zero(null):
    assert fmt_ms(null) == "n/a (no source)"
    assert fmt_count(null) == "n/a (no source)"
    assert fmt_cost(null) == "n/a (no source)"
    assert fmt_pct(null) == "n/a"
    assert fmt_interval(null, 0.5) == "n/a" and fmt_interval(0.1, null) == "n/a"
    for text in (fmt_ms(null), fmt_count(null), fmt_cost(null), fmt_pct(null)):
        assert "0" not in text


def test_fmt_count():
    assert fmt_count(0) == "0"
    assert fmt_count(12_345) == "12,345"
    assert fmt_count(1_234_567_890_123) == "1,234,567,890,123"
    assert fmt_count(1234.5) == "1,234.5"
    assert fmt_count(8.166666) == "8.2"
    assert fmt_count(pd.array([7], dtype="Int64")[0]) == "7"


def test_fmt_pct_and_interval():
    assert fmt_pct(0.7) == "70.0%"
    assert fmt_pct(0) == "0.0%" and fmt_pct(1) == "100.0%"
    assert fmt_pct(2 / 3) == "66.7%"
    assert fmt_pct(2 / 3, digits=2) == "66.67%"
    assert fmt_pct(0.00001) == "<0.1%"  # a success never rounds to none
    assert fmt_pct(0.99999) == ">99.9%"  # nor a failure to all
    assert fmt_interval(0.39731, 0.89220) == "[39.7%, 89.2%]"
    assert fmt_interval(0.0, 1.0) == "[0.0%, 100.0%]"


def test_fmt_rate():
    low, high = wilson_interval(7, 10)
    assert fmt_rate({"value": 0.7, "successes": 7, "n": 10, "ci_low": low, "ci_high": high, "coverage": 1.0}) == (
        "70.0% (7/10) [39.7%, 89.2%]"
    )
    empty = {"value": None, "successes": 0, "n": 0, "ci_low": None, "ci_high": None, "coverage": 0.0}
    assert fmt_rate(empty) == "n/a (no eligible tasks)"
    assert fmt_rate(cb.Rate(0.7, 7, 10, low, high, 1.0)) == "70.0% (7/10) [39.7%, 89.2%]"


def test_fmt_cost():
    assert fmt_cost(0.04680) == "$0.0468"
    assert fmt_cost(0.064875) == "$0.0649"
    assert fmt_cost(0) == "$0.0000"
    assert fmt_cost(1234.5) == "$1,234.5000"
    assert fmt_cost(0.0000123456) == "$0.0000123"  # small but never shown as zero


# --------------------------------------------------------------------------- escaping


def test_html_escape_markup_and_quotes():
    assert html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert html_escape("a\"b'c&d") == "a&quot;b&#x27;c&amp;d"
    assert html_escape("a|b `c` *d*") == "a|b `c` *d*"
    assert html_escape("设置.无线 مرحبا") == "设置.无线 مرحبا"  # non-Latin text untouched
    assert html_escape(None) == ""


def test_html_escape_makes_controls_and_bidi_visible():
    out = html_escape("abc\u202edef\u2066x\u2069\nnext\x00\x1b\u200f")
    assert out == "abc\\u202edef\\u2066x\\u2069\\nnext\\u0000\\u001b\\u200f"
    for ch in [
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\n",
        "\r",
        "\x85",
    ]:
        assert ch not in html_escape(f"a{ch}b")
    # a lone surrogate (valid in a JSON string) cannot break UTF-8 encoding of the report
    html_escape("x\ud800y").encode("utf-8")


def test_html_escape_caps_length():
    out = html_escape("<" * 1000)
    assert out == "&lt;" * 199 + "…"
    assert html_escape("x" * 1000, max_len=None) == "x" * 1000
    assert html_escape("short") == "short"


def test_md_escape():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("`x`") == "\\`x\\`"
    assert md_escape("*b* _u_ [l](u)") == "\\*b\\* \\_u\\_ \\[l\\](u)"
    assert md_escape("<script>") == "\\<script\\>"
    assert md_escape("a\\b") == "a\\\\b"
    assert md_escape("设置.无线") == "设置.无线"
    assert md_escape("two\nlines") == "two\\\\nlines"  # a visible \n, on one line
    assert md_escape("rtl\u202eevil") == "rtl\\\\u202eevil"
    for text in NASTY_IDS:
        out = md_escape(text)
        assert "\n" not in out and unescaped_pipes(out) == 0
        assert not re.search(r"(?<!\\)[<`*_\[\]]", out.replace("\\\\", ""))


# --------------------------------------------------------------------------- summary.md


def test_summary_numbers_are_the_document_numbers(sample):
    _, doc = sample
    md = summary_markdown(doc)
    assert md.endswith("\n") and not md.endswith("\n\n")
    m = doc["metrics"]
    for key in ("pass@1", "pass@k", "pass^k"):
        for text in (
            fmt_pct(m[key]["value"]),
            fmt_interval(m[key]["ci_low"], m[key]["ci_high"]),
            f"{m[key]['successes']}/{m[key]['n']}",
            f"{m[key]['successes']} / {m[key]['n']}",
            fmt_pct(m[key]["coverage"]),
        ):
            assert text in md, text
    assert "63.6%" in md and "[35.4%, 84.8%]" in md and "84.6%" in md  # pass@1 = 7/11 over 13 planned
    assert "k = 2" in md
    assert "8 ineligible attempts (3 environment, 1 evaluation, 3 skipped, 1 unknown)" in md
    assert "4 tasks are not k-eligible" in md and "browser.url.open" in md
    assert "1 record above the planned repeats" in md and "settings.display.dark\\_mode attempt 4, line 32" in md
    assert doc["provenance"]["inputs"]["results.jsonl"] in md
    assert "0.853" in md  # oracle_best_score@k


def test_summary_is_deterministic_and_depends_on_the_document_only(sample, tmp_path):
    run, doc = sample
    md = summary_markdown(doc)
    assert summary_markdown(doc) == md
    assert summary_markdown(cb.compute_metrics(cb.load_run(SAMPLE_RUN))) == md
    # the written metrics.json, parsed back, gives the same text
    path = cb.write_metrics(run, tmp_path)
    assert summary_markdown(json.loads(path.read_text(encoding="utf-8"))) == md
    assert str(SAMPLE_RUN) not in md and "/" not in md.replace("1..", "").split("\n")[0]


def test_summary_table_parses(sample):
    md = summary_markdown(sample[1])
    rows = table_lines(md)
    assert len(rows) == 6  # header, rule, pass@1, pass@k, pass^k, oracle
    assert len({unescaped_pipes(r) for r in rows}) == 1
    assert rows[1].count("---") == 5


def test_summary_with_nasty_ids_keeps_its_table(nasty):
    _, doc = nasty
    md = summary_markdown(doc)
    rows = table_lines(md)
    assert len(rows) == 6 and len({unescaped_pipes(r) for r in rows}) == 1
    paragraph = md.split("\n\n")[1]
    assert "\n" not in paragraph  # newlines in ids cannot split the paragraph
    assert unescaped_pipes(paragraph) == 0  # nor open a table
    assert not re.search(r"(?<!\\)[<`]", md.replace("\\\\", ""))  # every < and backtick is escaped
    assert "\\<script\\>" in md
    assert "\u202e" not in md and "\\\\u202e" in md
    assert "设置.无线.切换" in md


def test_summary_of_empty_denominators(tmp_path):
    run = cb.load_run(write_run(tmp_path / "r", manifest([("t1", 2), ("t2", 2)]), outcomes({"t1": "ES", "t2": "K."})))
    doc = cb.compute_metrics(run)
    md = summary_markdown(doc)
    assert "pass@1 is undefined (no eligible tasks; coverage 0.0%)" in md
    assert "n/a (no eligible tasks)" in md
    assert "0 / 0" in md
    assert " 0.0% (" not in md  # a rate without a denominator is never shown as 0%
    assert len({unescaped_pipes(r) for r in table_lines(md)}) == 1


# --------------------------------------------------------------------------- displays


def test_every_display_runs_on_the_sample_run(sample, captured):
    run, doc = sample
    run_everything(doc, run)
    html = html_of(captured)
    assert len(images_of(captured)) == 6  # headline rates and curves, four telemetry histograms
    assert all(img.startswith(b"\x89PNG") for img in images_of(captured))
    # headline
    assert "sim-4759" in html and "mobile-core-sim 2026.11" in html and "partial" in html
    assert "63.6%" in html and "[35.4%, 84.8%]" in html and "84.6%" in html
    assert "pass@1 is 63.6% (95% CI 35.4–84.8%) over 11 of 13 planned tasks; 8 attempts were ineligible" in html
    assert "model: <b>" in html and "m-large" in html  # the config, on the first screen
    # telemetry formatting: timings for people, tokens with separators, nulls as n/a
    assert "16 min 08 s" in html  # task_wall_ms sum 967,855 ms
    assert "641,910" in html  # total_tokens sum
    assert "2 true of 24" in html
    assert "n/a (no source)" in html  # reasoning_tokens has no source at all
    # anomalies in plain sight, provenance
    assert "above_planned_repeats" in html and "attempt 4 is above" in html
    assert doc["provenance"]["inputs"]["manifest.json"] in html
    assert "<script" not in html.lower()
    assert "http://" not in html and "https://" not in html  # self-contained
    assert_tables_are_rectangular(html)


def test_nasty_ids_are_escaped_in_every_display(nasty, captured):
    run, doc = nasty
    run_everything(doc, run, parameters={"run_dir": "<script>p</script>", "n": [1, "|"]})
    html = html_of(captured)
    assert "<script" not in html.lower()
    assert not re.search(r'<img(?! class="cb-fig" )', html, flags=re.I)  # only our own figures
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert_tables_are_rectangular(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for raw in ("\u202e", "\x07"):
        assert raw not in html
    # task ids are in the explorer's data island: \u escapes in ASCII JSON, every id back exactly
    from capbench_nb.outputs.report import explorer

    page = explorer.explorer_html(doc, run)
    island = re.search(r'<script type="application/json" id="cb-explorer-data">(.*?)</script>', page, re.S).group(1)
    assert island.isascii() and "<" not in island and "\\u202e" in island
    assert json.loads(island)["tasks"]["id"] == NASTY_IDS
    # no figure crashed on mathtext-like or multi-line ids (no telemetry here: the two headline figures)
    assert len(images_of(captured)) == 2 and "No telemetry to plot" in html


def test_every_display_runs_on_an_empty_run(tmp_path, captured):
    run = cb.load_run(write_run(tmp_path / "r", manifest([("t1", 3), ("t2", 2)]), []))
    doc = cb.compute_metrics(run)
    run_everything(doc, run)
    html = html_of(captured)
    assert "No anomalies." in html
    assert "n/a (no eligible tasks)" in html
    assert "No telemetry to plot" in html
    assert "pass@1 is undefined: none of the 2 planned tasks has an eligible first attempt" in html
    assert len(images_of(captured)) == 2  # the headline figures; no telemetry figure
    md = summary_markdown(doc)
    assert "pass@1 is undefined" in md and "(2 tasks without any attempt)" in md


def test_every_display_runs_when_every_denominator_is_empty(tmp_path, captured):
    records = outcomes({"t1": "EK", "t2": "VE", "t3": "XX"})
    records[0]["telemetry"]["setup_ms"] = 1500  # setup_ms counts over every attempt
    run = cb.load_run(write_run(tmp_path / "r", manifest([("t1", 2), ("t2", 2), ("t3", 2)], judge=False), records))
    doc = cb.compute_metrics(run)
    assert all(doc["metrics"][key]["n"] == 0 for key in ("pass@1", "pass@k", "pass^k"))
    run_everything(doc, run)
    html = html_of(captured)
    assert "off (--no-judge: hard assertions only)" in html
    assert "6 attempts were ineligible (2 environment, 1 evaluation, 1 skipped and 2 unknown)" in html
    assert "1.5 s" in html
    assert "0.0%" in html  # coverage is a real 0 ...
    cards = re.findall(r'class="cb-value">(.*?)</div>', html)
    assert len(cards) == 4 and not any("0.0%" in c for c in cards)  # ... but no rate card shows 0%
    md = summary_markdown(doc)
    assert "6 ineligible attempts (2 environment, 1 evaluation, 1 skipped, 2 unknown)" in md


def test_plot_headline_reads_the_document_not_the_run(sample, captured):
    run, doc = sample
    rp.plot_headline(doc)  # no run needed: rates and curves come from metrics.json
    first = images_of(captured)
    captured.clear()
    changed = json.loads(json.dumps(doc))
    changed["curves"]["planned_prefix"][0]["pass@j"]["value"] = 0.01
    rp.plot_headline(changed, run)
    second = images_of(captured)
    assert len(first) == len(second) == 2 and first[0] == second[0] and first[1] != second[1]


def test_verdict_sentence():
    doc = {"tasks": {"planned": 13}, "attempts": {"total": 39, "eligible": 36,
                                                   "by_failure_class": {"environment": 2, "evaluation": 1}},
           "metrics": {"pass@1": {"value": 0.62, "n": 13, "ci_low": 0.41, "ci_high": 0.79}}}
    assert rp.verdict(doc) == ("pass@1 is 62.0% (95% CI 41.0–79.0%) over 13 of 13 planned tasks; "
                               "3 attempts were ineligible (2 environment and 1 evaluation).")
    doc["attempts"] = {"total": 5, "eligible": 5, "by_failure_class": {}}
    assert rp.verdict(doc).endswith("; no attempt was ineligible.")


def test_figures_are_deterministic(sample, monkeypatch):
    run, doc = sample

    def render():
        shown: list = []
        monkeypatch.setattr(tables, "display", lambda obj, *a, **kw: shown.append(obj))
        rp.plot_headline(doc, run)
        rp.plot_telemetry(run, doc)
        return images_of(shown)

    first = render()
    assert render() == first
    assert all(b"Software" not in png[:200] for png in first)  # no PNG metadata text chunk


def test_show_anomalies_lists_invalid_lines(tmp_path, captured):
    records = [json.dumps(r) for r in outcomes({"t1": "SS"})] + ['{"task_id": "<b>t</b>", "attempt": 1', "not json"]
    write_run(tmp_path / "r", manifest([("t1", 2)]), records)
    run = cb.load_run(tmp_path / "r", strict=False)
    doc = cb.compute_metrics(run)
    rp.show_anomalies(doc)
    html = html_of(captured)
    assert html.count("invalid_line") == 2 and "cb-bad" in html
    assert "2 invalid lines" in html
    md = summary_markdown(doc)
    assert "2 invalid lines skipped with --allow-invalid" in md and "(with --allow-invalid)" in md


# --------------------------------------------------------------------------- show_table


def test_show_table_escapes_and_formats_every_cell(captured):
    frame = pd.DataFrame({
        "task_id": ["<b>t\u202e1</b>", "t2\x1b[2J"],
        "message": ["a & b\x00", None],
        "n": pd.array([1234567, None], dtype="Int64"),
        "p": pd.array([0.031250001, None], dtype="Float64"),
        "median": [23920.4, 1.5],
        "ok": [True, False],
    })
    rp.show_table(frame, caption="<i>cap</i>")
    html = html_of(captured)
    assert "<b>" not in html and "<i>" not in html and "&lt;b&gt;" in html and "&lt;i&gt;cap" in html
    for raw in ("\u202e", "\x1b", "\x00"):
        assert raw not in html
    assert "\\u202e" in html and '<bdi class="cb-id"' in html  # the id column as an identifier
    assert "a &amp; b" in html
    assert "1,234,567" in html and "0.03125" in html and "23,920" in html and "1.5" in html
    assert html.count(">n/a<") == 3  # a missing message, n and p: never 0, never blank
    assert ">yes<" in html and ">no<" in html
    cells = re.findall(r"<th( class=\"num\")?>([^<]*)</th>", html)
    assert [(bool(num), name) for num, name in cells] == [
        (False, "task_id"), (False, "message"), (True, "n"), (True, "p"), (True, "median"), (False, "ok")]


def test_show_table_caps_rows_and_says_so(captured):
    rp.show_table(pd.DataFrame({"x": range(12)}), max_rows=5)
    html = html_of(captured)
    assert html.count("<tr>") == 6 and "First 5 of 12 rows shown." in html
