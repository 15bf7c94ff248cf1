"""README.md and docs/: the set-up commands, links that resolve, and example commands the parser accepts."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import REPO

from capbench_nb.cli import build_parser

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_readme_keeps_the_two_set_up_commands_and_stays_short():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make demo   # builds .venv, reports on the sample run in data/ and verifies the outputs\n" in text
    assert "make test   # builds .venv if missing, runs the whole test suite\n" in text
    assert len(text.splitlines()) <= 120, "README.md is for a newcomer: move details into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if ":" in target:  # a URL or a scheme quoted as data (javascript:...)
            continue
        assert (page.parent / target).exists(), f"{page.name}: link to {target} does not resolve"


def _example_commands(text: str):
    """``capbench-nb ...`` lines of the sh code blocks that are examples (not usage lines with [OPTIONS])."""
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for command in line.split("&&"):
                command = command.strip()
                if command.startswith("capbench-nb ") and "[" not in command and "..." not in command:
                    yield command


@pytest.mark.parametrize("page", [REPO / "README.md", REPO / "docs" / "usage.md"], ids=lambda p: p.name)
def test_example_commands_parse(page):
    commands = list(_example_commands(page.read_text(encoding="utf-8")))
    assert commands
    parser = build_parser()
    for command in commands:
        try:
            parser.parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"{page.name}: the parser refuses {command!r}")
