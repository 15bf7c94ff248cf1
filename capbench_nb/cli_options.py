"""What every ``capbench-nb`` command module shares: the program name, the exit codes and the
argument types (kept light: importing it loads no pandas, numpy or scipy)."""

from __future__ import annotations

import argparse

__all__ = ["PROG", "EXIT_OK", "EXIT_DISAGREE", "EXIT_INVALID", "EXIT_REPORT", "Limit", "add_skip_evidence", "positive",
           "probability", "seed"]

EXIT_OK, EXIT_DISAGREE, EXIT_INVALID, EXIT_REPORT = 0, 1, 2, 3
PROG = "capbench-nb"


def add_skip_evidence(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-evidence", action="store_true",
                   help="a run shared without its attempts/: do not resolve evidence references "
                        "(metrics.json says provenance.evidence_checked: false)")


class Limit:
    """A limit of :mod:`capbench_nb.format.limits`, by name, read only when it is needed: importing the format
    loads numpy, which building the parsers must not (``--help`` answers at once).

    Called, it is an argparse ``type=``: an integer from 1 to the limit (``--repeats``).  Shown, it is the
    limit and its name, ``10,000 (MAX_REPEATS)``: a help text says ``%(type)s`` for the limit of its own
    type (argparse replaces only values with a ``__name__`` by that name), or ``%(limit)s`` with the
    instance set as the action's ``limit`` attribute when the value is parsed elsewhere (``board``)."""

    def __init__(self, name: str):
        self.name = name

    def value(self) -> int:
        from capbench_nb.format import limits

        return getattr(limits, self.name)

    def __str__(self) -> str:
        return f"{self.value():,} ({self.name})"

    def __call__(self, text: str) -> int:
        return _integer(text, 1, self)


def _integer(text: str, low: int, high: Limit | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    if high is not None and value > high.value():
        raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
    return value


def positive(text: str) -> int:
    return _integer(text, 1)


def seed(text: str) -> int:
    """A random seed: an integer from 0 (numpy's generators take no negative seed) to 2**53 - 1, the number rule
    of the documents that record it (comparison.json, board.json, subset.json)."""
    return _integer(text, 0, Limit("MAX_SAFE_NUMBER"))


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1], got {text}")
    return value
