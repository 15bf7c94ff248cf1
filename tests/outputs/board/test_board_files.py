"""board.md, board.json on disk and verify for a board (capbench_nb.outputs.board.files), and the command line's
one-line refusals (capbench-nb board, verify-board).  The notebook and the page: test_board_page.py."""

from __future__ import annotations

import json

import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.outputs.board.files import board_markdown, verify_board, write_board
from capbench_nb.outputs.html.escaping import md_escape

from conftest import check_error, cli, manifest, outcomes, selection_board, write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three small runs: A priced and best, B with a hostile id and model, priced; C unpriced with a task of its own."""
    root = tmp_path_factory.mktemp("board-report")
    specs = {
        "A": ({f"t{i}": "SS" for i in range(8)}, 0.01, "A"),
        "B|*<b>`x`</b>": ({f"t{i}": "AS" if i < 6 else "SS" for i in range(8)}, 0.002, "m|<i>odel</i>"),
        "C": ({**{f"t{i}": "SA" if i % 2 else "AA" for i in range(8)}, "only|c": "SS"}, None, "m"),
    }
    paths = []
    for n, (name, (spec, cost, model)) in enumerate(specs.items()):
        doc = manifest([(t, len(c)) for t, c in spec.items()])
        doc["run_id"], doc["config"]["model"] = name, model
        records = outcomes(spec)
        for rec in records:
            if cost is not None:
                rec.update(cost=cost, cost_source="prices/test@1")
        paths.append(write_run(root / f"run{n}", doc, records))
    return paths


def test_markdown_is_a_table_with_escaped_strings(runs):
    doc = cb.board(runs, resamples=100)
    text = board_markdown(doc)
    lines = text.splitlines()
    assert lines[0] == "# Board: 3 runs on unit 1, by pass@1"
    assert "Compared on the 8 tasks planned in every run, at the common k = 2; 1 task(s) planned in only some runs" in text
    header = next(i for i, line in enumerate(lines) if line.startswith("| rank |"))
    assert lines[header] == ("| rank | 95% rank interval | group | run | model | pass@1 | 95% interval | tasks | pass@2 | "
                             "pass^2 | cost / attempt | frontier |")
    rows = lines[header + 2: header + 5]
    assert [row.count(" | ") for row in rows] == [11, 11, 11]  # no escaped pipe opens a cell
    assert rows[0].startswith("| 1 | ") and "| A | A | 100.0% | [67.6%, 100.0%] | 8/8 |" in rows[0]
    assert md_escape("B|*<b>`x`</b>") in text and md_escape("m|<i>odel</i>") in text and "<b>" not in text
    # by rank: A (8/8), C (4/8, unpriced), B (2/8, the cheapest: on the frontier with A)
    assert "| unpriced | n/a (unpriced) |" in rows[1] and "$0.0020 | yes |" in rows[2] and "$0.0100 | yes |" in rows[0]
    assert "Unpriced (some eligible attempt has no cost; not placed on the cost axis, never counted as free): #3 C" in text
    assert text.rstrip().endswith(md_escape("only|c"))


def test_write_board_is_byte_identical_and_verify_agrees(runs, tmp_path):
    doc = cb.board(runs, seed=3, resamples=100)
    json_path, md_path = write_board(doc, tmp_path / "one")
    write_board(cb.board(runs, seed=3, resamples=100), tmp_path / "two")
    assert json_path.read_bytes() == (tmp_path / "two" / "board.json").read_bytes() == dumps(doc).encode()
    assert md_path.read_bytes() == (tmp_path / "two" / "board.md").read_bytes()
    assert verify_board(tmp_path / "one", runs) == []
    rc, out, err = cli("verify-board", tmp_path / "one", *runs)
    assert rc == 0 and out.startswith("verified: the board in ") and err == ""


def test_verify_lists_each_disagreement(runs, tmp_path):
    write_board(cb.board(runs, resamples=100), tmp_path)
    doc = json.loads((tmp_path / "board.json").read_text())
    doc["runs"][0]["values"]["pass@1"]["value"] = 0.5
    (tmp_path / "board.json").write_text(json.dumps(doc))
    md = tmp_path / "board.md"
    md.write_text(md.read_text().replace("# Board:", "# Bored:"))
    problems = [str(p) for p in verify_board(tmp_path, runs)]
    assert problems == [f"{tmp_path}/board.json#/runs/0/values/pass@1/value: found 0.5, recomputed 1.0",
                        f'{tmp_path}/board.md line 1: found "# Bored: 3 runs on unit 1, by pass@1", '
                        f'recomputed "# Board: 3 runs on unit 1, by pass@1"']
    rc, out, err = cli("verify-board", tmp_path, *runs)
    assert rc == 1 and len(out.splitlines()) == 2 and err.endswith("2 disagreement(s) between " f"{tmp_path} and the runs\n")
    # runs in another order: one disagreement saying so, with the order expected (issue 24 item 11)
    (only,) = verify_board(tmp_path, [runs[1], runs[0], runs[2]])
    assert only.pointer == "/runs" and only.expected == [str(r) for r in runs]
    assert "the runs are in a different order than the board's" in str(only)


@pytest.mark.parametrize("argv, rule, text", [
    (["board", "{a}"], "board-options", "a board compares at least 2 runs, got 1"),
    (["board", "{a}", "{b}", "--metric", "pass@3"], "board-options", "unknown board metric 'pass@3'"),
    (["board", "{a}", "{b}", "--alpha", "0,05"], "board-options", "--alpha takes a number, got '0,05'"),
    (["board", "{a}", "{b}", "--resamples", "-1"], "board-options", "resamples must be an integer from 0 to 1,000,000"),
    (["board", "{a}", "{missing}"], "run-dir", "the run directory does not exist"),
    (["verify-board", "{missing}", "{a}", "{b}"], "board-missing", "no board.json to verify"),
])
def test_bad_usage_is_one_line_and_exit_2(runs, tmp_path, argv, rule, text):
    names = {"a": runs[0], "b": runs[1], "missing": tmp_path / "missing"}
    extra = ["--out", tmp_path / "out"] if argv[0] == "board" else []
    rc, out, err = cli(*[a.format(**names) for a in argv], *extra)
    assert rc == 2 and out == ""
    assert check_error(err, rule=rule) and text in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, line, text", [
    (b"[1, 2]", None, "board.json is not a JSON object"),
    (b'{"metric":\n', 2, "board.json: not valid JSON: Expecting value (column 1)"),
    (b"\xff{}", None, "board.json: not valid UTF-8 at byte 0"),
], ids=["not-an-object", "truncated", "not-utf8"])
def test_a_damaged_board_json_is_refused_before_the_runs_are_read(tmp_path, content, line, text):
    (tmp_path / "board.json").write_bytes(content)
    with pytest.raises(cb.InvalidRunError) as info:
        verify_board(tmp_path, [tmp_path / "no-run-a", tmp_path / "no-run-b"])
    error = info.value
    assert (error.file, error.rule, error.line) == (str(tmp_path / "board.json"), "board-unreadable", line)
    assert text in str(error)


def test_selected_at_k_in_board_md_verify_and_the_command_line(tmp_path):
    """conftest.SELECTION_BOARD: A and B have selected@3, C none (no selection.jsonl), D none (k = 4)."""
    a, b, c, d = selection_board(tmp_path / "runs")
    text = board_markdown(cb.board([a, b, c, d], resamples=50))
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| rank |"))
    assert lines[header].endswith("| pass@3 | pass^3 | selected@3 | cost / attempt | frontier |")
    assert lines[header + 1] == "|" + "---|" * 13
    rows = {line.split(" | ")[3]: line for line in lines[header + 2: header + 6]}
    assert "| 16.7% | unpriced |" in rows["A"] and "| 62.5% | unpriced |" in rows["B"]
    assert "| n/a | unpriced |" in rows["C"] and "| n/a | unpriced |" in rows["D"]
    assert "- No selected@3 (n/a): #3 C (the run has no selection.jsonl); #4 D (its k = 4 is not the common k = 3" in text
    assert "- Separable pairs by selected@3 (Holm over the 1 pair(s) of the runs that have one, adjusted p < 0.05): none" in text
    # ordered by selected@k: verify recomputes it; with a run that has none the board is refused in one line
    write_board(cb.board([a, b], metric="selected@k", resamples=50), tmp_path / "by")
    assert verify_board(tmp_path / "by", [a, b]) == []
    rc, out, err = cli("board", a, c, "--metric", "selected@k", "--out", tmp_path / "out")
    assert rc == 2 and out == "" and not (tmp_path / "out").exists()
    assert check_error(err, rule="board-options") and '#2 "C" has none: the run has no selection.jsonl' in err
    rc, out, err = cli("verify-board", tmp_path / "by", a, d)
    assert rc == 2 and check_error(err, rule="board-options") and "cannot recompute this board" in err
