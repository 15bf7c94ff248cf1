"""What every ``capbench-nb`` command module shares: the program name, the exit codes and two
argument types (kept light: importing it loads no pandas, numpy or scipy)."""

from __future__ import annotations

import argparse

__all__ = ["PROG", "EXIT_OK", "EXIT_DISAGREE", "EXIT_INVALID", "EXIT_REPORT", "add_skip_evidence", "positive"]

EXIT_OK, EXIT_DISAGREE, EXIT_INVALID, EXIT_REPORT = 0, 1, 2, 3
PROG = "capbench-nb"


def add_skip_evidence(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-evidence", action="store_true",
                   help="a run shared without its attempts/: do not resolve evidence references "
                        "(metrics.json says provenance.evidence_checked: false)")


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
