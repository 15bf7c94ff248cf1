"""Render the command-line reference, ``docs/cli.md``, from the argparse parsers of ``capbench_nb.cli``.

``python -m capbench_nb.cli_reference`` prints the page; ``--write`` writes it to ``docs/cli.md`` of the
repository (a test fails when the file is stale).  Every subcommand of ``cli.build_parser()``, nested ones
(``import inspect``) included, gets a section: its usage line, its help, and a table of its arguments, so
a subcommand added to the parser appears here without an edit to this module.

argparse has no public way to list a parser's arguments: the walk reads ``parser._actions`` (and the
subcommands' one-line help from ``_choices_actions``), which every Python 3 argparse has.  The page is
built from the arguments themselves, not from argparse's help text, so it does not depend on the
terminal width or on argparse's wording of the Python version at hand.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from capbench_nb.cli import build_parser
from capbench_nb.format.reference import page_main

__all__ = ["render", "PAGE", "main"]

#: Where ``--write`` puts the page, relative to the repository.
PAGE = Path("docs") / "cli.md"

REGENERATE = "python -m capbench_nb.cli_reference --write"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand of ``parser``, in the order they were added."""
    out = []
    for action in parser._actions:  # no public accessor (see the module docstring)
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias names the same parser again
                    continue
                seen.add(id(sub))
                out.append((name, helps.get(name, ""), sub))
    return out


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
            and a.help is not argparse.SUPPRESS]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    return action.dest.upper() if action.option_strings else action.dest


def _is_flag(action: argparse.Action) -> bool:
    return action.nargs == 0  # store_true, store_const, version, BooleanOptionalAction: no value


def _spelling(action: argparse.Action) -> str:
    """The argument as typed: ``RUN...``, ``--out DIR``, ``--progress|--no-progress``."""
    if not action.option_strings:
        name = _metavar(action)
        return {"+": f"{name}...", "*": f"[{name}...]", "?": f"[{name}]"}.get(action.nargs, name)
    names = "|".join(action.option_strings) if isinstance(action, argparse.BooleanOptionalAction) \
        else max(action.option_strings, key=len)
    return names if _is_flag(action) else f"{names} {_metavar(action)}"


def _repeatable(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._AppendAction, argparse._CountAction))


def usage(prog: str, parser: argparse.ArgumentParser) -> str:
    """One line: the command, its positional arguments and its options (optional ones in brackets)."""
    parts = [prog]
    subs = _subcommands(parser)
    for action in _arguments(parser):
        if isinstance(action, argparse._VersionAction):
            continue
        text = _spelling(action)
        if action.option_strings and not action.required:
            text = f"[{text}]"
        parts.append(text + ("..." if _repeatable(action) else ""))
    if subs:
        parts.append("{" + ",".join(name for name, _, _ in subs) + "} ...")
    return " ".join(parts)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(action: argparse.Action) -> str:
    if action.required or _is_flag(action) or action.default in (None, [], argparse.SUPPRESS):
        return ""
    return f"`{action.default}`"


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:  # argparse's own expansion of %(default)s and the like
        text = text % {**vars(action), "prog": ""}
    if _repeatable(action):
        text += " (repeatable)" if "repeatable" not in text else ""
    if action.required and action.option_strings:
        text += " (required)"
    return text


def _section(prog: str, help_line: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = ["#" * level + f" `{prog}`", ""]
    for text in dict.fromkeys(t for t in (help_line, parser.description) if t):
        out += [text.rstrip(".") + ".", ""]
    out += ["```", usage(prog, parser), "```", ""]
    arguments = _arguments(parser)
    if arguments:
        out += ["| argument | what | default |", "|---|---|---|"]
        out += [f"| `{_cell(_spelling(a))}` | {_cell(_help(a))} | {_cell(_default(a))} |" for a in arguments]
        out.append("")
    subs = _subcommands(parser)
    if subs:
        out += ["| command | what |", "|---|---|"]
        out += [f"| [`{prog} {name}`](#{_anchor(prog + ' ' + name)}) | {_cell(text)} |" for name, text, _ in subs]
        out.append("")
    for name, text, sub in subs:
        out += _section(f"{prog} {name}", text, sub, min(level + 1, 3))
    return out


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading ``\\`title\\```: lower case, spaces to hyphens, punctuation dropped."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The Markdown page of ``parser`` (default: ``capbench_nb.cli.build_parser()``)."""
    parser = build_parser() if parser is None else parser
    out = ["# Command-line reference", "",
           f"Generated from the argparse parsers of `capbench_nb/cli.py` by `{REGENERATE}`; do not edit by hand "
           "(a test fails when this page is stale). What the commands do, with examples, is in "
           "[usage.md](usage.md); exit codes are listed there too.", ""]
    out += _section(parser.prog, "", parser, 2)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    return page_main(argv, render, PAGE, "capbench_nb.cli_reference")


if __name__ == "__main__":
    raise SystemExit(main())
