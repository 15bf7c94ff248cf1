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
