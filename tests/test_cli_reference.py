"""docs/cli.md is what ``capbench_nb.cli_reference`` renders from the parsers of ``capbench_nb.cli``."""

from __future__ import annotations

import argparse
import subprocess
import sys

from conftest import REPO

from capbench_nb import cli_reference
from capbench_nb.cli import build_parser


def test_the_cli_page_is_what_the_generator_renders():
    page = REPO / cli_reference.PAGE
    assert page.read_text(encoding="utf-8") == cli_reference.render(), (
        f"docs/cli.md is stale: run {cli_reference.REGENERATE}")


def _commands(parser: argparse.ArgumentParser, prog: str):
    for name, _, sub in cli_reference._subcommands(parser):
        yield f"{prog} {name}", sub
        yield from _commands(sub, f"{prog} {name}")


def test_every_subcommand_and_every_option_is_on_the_page():
    text = cli_reference.render()
    commands = list(_commands(build_parser(), "capbench-nb"))
    assert {"capbench-nb compare", "capbench-nb import inspect", "capbench-nb verify-board"} <= {c for c, _ in commands}
    for command, parser in commands:
        assert f"`{command}`" in text, command
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in text, (command, option)


def test_usage_lines_follow_the_parser():
    text = cli_reference.render()
    assert "capbench-nb compare RUN_A RUN_B [--out DIR] [--strict] [--allow-diff KIND]... [--seed S] " \
           "[--allow-invalid] [--skip-evidence] [--progress|--no-progress]" in text
    assert "[--selector ACCURACY]" in text
    assert "capbench-nb simulate --tasks N --repeats R --seed S --out RUN_DIR [--artifacts]" in text
    assert "capbench-nb board [RUN...] [--campaign STORE] [--out DIR]" in text


def test_a_new_subcommand_is_picked_up_without_edits():
    # what a later `floor` subcommand of cli.build_parser() would look like: a section of its own
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    floor = sub.add_parser("floor", help="fail when a metric falls below a floor")
    floor.add_argument("run_dir", metavar="RUN_DIR", help="the run")
    floor.add_argument("--min", dest="floors", action="append", default=[], metavar="METRIC=VALUE", help="a floor")
    floor.add_argument("--ratio", type=float, default=0.5, help="the ratio, %(default)s by default")
    text = cli_reference.render(parser)
    assert "### `capbench-nb floor`" in text
    assert "fail when a metric falls below a floor." in text
    assert "capbench-nb floor RUN_DIR [--min METRIC=VALUE]... [--ratio RATIO]" in text
    assert "| `--min METRIC=VALUE` | a floor (repeatable) |  |" in text
    assert "| `--ratio RATIO` | the ratio, 0.5 by default | `0.5` |" in text
    assert "[`capbench-nb floor`](#capbench-nb-floor)" in text
    assert "capbench-nb floor" not in cli_reference.render()


def test_main_prints_the_page_and_refuses_other_arguments(capsys):
    assert cli_reference.main([]) == 0
    assert capsys.readouterr().out == cli_reference.render()
    assert cli_reference.main(["--bogus"]) == 2


def test_the_module_runs_as_a_program():
    done = subprocess.run([sys.executable, "-m", "capbench_nb.cli_reference"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == cli_reference.render()
