"""Usage errors of every command and subcommand: one line on stderr, exit 2 (issue 24 item 6)."""

from __future__ import annotations

import argparse

import pytest

from capbench_nb.cli import build_parser, main


def _all_parsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    yield prefix, parser
    for action in parser._actions:  # argparse keeps the subcommands here, no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _all_parsers(child, (*prefix, name))


COMMANDS = [path for path, _ in _all_parsers(build_parser())]


def test_nested_subcommands_are_walked():
    assert {("suite", "lock"), ("suite", "check"), ("suite", "select"), ("import", "tau-bench")} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "top")
def test_unknown_option_is_one_line(capsys, path):
    with pytest.raises(SystemExit) as info:
        main([*path, "--no-such-option-anywhere"])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("capbench-nb: error: ") and err.endswith(" [rule: usage]\n")
    assert "usage:" not in err and "Traceback" not in err


@pytest.mark.parametrize("argv,text", [
    (["suite", "lock"], "capbench-nb: error: suite lock: the following arguments are required: --out "
                        "(see capbench-nb suite lock --help) [rule: usage]\n"),
    (["suite", "check"], "capbench-nb: error: suite check: the following arguments are required: RUN "
                         "(see capbench-nb suite check --help) [rule: usage]\n"),
    (["import"], "capbench-nb: error: import: the following arguments are required: SOURCE "
                 "(see capbench-nb import --help) [rule: usage]\n"),
    (["simulate", "--tasks", "0", "--repeats", "1", "--seed", "1", "--out", "x"],
     "capbench-nb: error: simulate: argument --tasks: must be at least 1, got 0 "
     "(see capbench-nb simulate --help) [rule: usage]\n"),
])
def test_missing_argument_names_the_subcommand(capsys, argv, text):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr() == ("", text)


# --------------------------------------------------------------------------- start-up (issue 24 item 5)
HEAVY = ("pandas", "numpy", "scipy", "pyarrow", "matplotlib")


@pytest.mark.parametrize("code", [
    "import capbench_nb.cli",
    "import capbench_nb.cli as c; c.build_parser().format_help()",
], ids=["import", "build-every-parser"])
def test_the_cli_imports_no_numerical_stack(code):
    import json
    import subprocess
    import sys

    probe = f"{code}; import json, sys; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(proc.stdout) == []


def test_a_command_still_gets_what_it_needs(tmp_path, capsys):
    """The lazy imports resolve: a run simulated, then its metrics (pandas loaded by the command itself)."""
    run = tmp_path / "run"
    assert main(["simulate", "--tasks", "3", "--repeats", "2", "--seed", "1", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["metrics", str(run)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == str(run / "metrics.json")


# --------------------------------------------------------------------------- metrics headline, hints (item 7)
def test_metrics_of_a_run_with_only_attempts_says_ingest_first(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["simulate", "--tasks", "2", "--repeats", "1", "--seed", "1", "--artifacts", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["metrics", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"run `capbench-nb ingest {run}` first [rule: results-missing]" in err


@pytest.mark.parametrize("lines", [1, 2], ids=["one-trial-line", "json-lines"])
def test_import_tau2_of_a_tau_bench_file_hints_at_tau_bench(tmp_path, capsys, lines):
    import json

    trial = {"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": []}
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps({**trial, "task_id": i}) + "\n" for i in range(lines)))
    assert main(["import", "tau2-bench", str(path), "--out", str(tmp_path / "run")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "use `capbench-nb import tau-bench`" in err


# --------------------------------------------------------------------------- verify-board order (item 11)
def test_verify_board_with_the_runs_reordered_says_so_in_one_line(tmp_path, capsys):
    import json

    from capbench_nb.io.atomic import dumps
    from capbench_nb.metrics.board import board
    from capbench_nb.outputs.board.files import write_board
    from capbench_nb.records.run import load_run

    runs = []
    for seed in (1, 2, 3):
        run = tmp_path / f"run{seed}"
        assert main(["simulate", "--tasks", "4", "--repeats", "2", "--seed", str(seed), "--out", str(run)]) == 0
        runs.append(str(run))
    out = tmp_path / "board"
    write_board(json.loads(dumps(board([load_run(r) for r in runs], resamples=0))), out)
    capsys.readouterr()
    assert main(["verify-board", str(out), *runs]) == 0
    capsys.readouterr()
    assert main(["verify-board", str(out), runs[2], runs[0], runs[1]]) == 1
    stdout, _ = capsys.readouterr()
    assert stdout == (f"{out / 'board.json'}: the runs are in a different order than the board's; expected: "
                      f"{' '.join(runs)}\n")
