"""What every ``capbench-nb`` command module shares: the program name, the exit codes and the
argument types (kept light: importing it loads no pandas, numpy or scipy)."""

from __future__ import annotations

import argparse

__all__ = ["PROG", "EXIT_OK", "EXIT_DISAGREE", "EXIT_INVALID", "EXIT_REPORT", "add_skip_evidence", "positive",
           "probability"]

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


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1], got {text}")
    return value
