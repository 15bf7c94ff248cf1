"""How an inspect_ai sample's score becomes an attempt's outcome: the scorer chosen, and its value's rule.

``--scorer NAME`` picks a scorer (default: the first the log lists).  A scorer may return a dict of
values, one per key (``{"answer": "C", "format": "I"}``, each reduced and reported by inspect as its
own score named by the key); ``--scorer NAME.KEY`` (or the key alone, when one scorer has it) picks one
of them.  The value then maps to success and quality as :func:`score_outcome` says.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.records.importers import common

__all__ = ["SampleError", "ScorerChoice", "choose_scorer", "outcome_fields", "score_outcome"]

# inspect_ai's value_to_float(): CORRECT "C" = 1, INCORRECT "I" = 0, PARTIAL "P" = 0.5, NOANSWER "N" = 0.
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
#: A numeric score string: ASCII digits with at most one decimal point (what inspect's check lets through
#: and ``float()`` reads).
_DECIMAL = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+", re.ASCII)


class SampleError(Exception):
    """A sample value no attempt can be made of: the message, and the rule (raised with the log's file named)."""

    def __init__(self, message: str, rule: str = "inspect-format") -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class ScorerChoice:
    """The scorer whose value decides success, and the key of its dict value (None: a single value)."""

    name: str
    key: str | None = None

    @property
    def label(self) -> str:
        """``NAME`` or ``NAME.KEY``, as ``config.scorer`` records it."""
        return self.name if self.key is None else f"{self.name}.{self.key}"


def _value_to_float(value: Any) -> float | None:
    """inspect_ai's ``value_to_float``, except that what it cannot convert (it warns and uses 0) is None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float (up to 4300 digits): a huge finite number
            return sys.float_info.max if value > 0 else -sys.float_info.max
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        low = value.lower()
        if low in _WORDS:
            return _WORDS[low]
        if _DECIMAL.fullmatch(value):  # ASCII digits only ("²" and "①" are refused before: outcome_fields)
            return float(value)
    return None


def score_outcome(value: Any) -> tuple[str, float | None]:
    """How one score value maps to an outcome: ``("success" | "failure" | "invalid", quality_score)``.

    - ``"C"`` success (quality 1); ``"I"`` and ``"N"`` failure (0); ``"P"``
      failure (0.5): inspect's letters, converted as its ``value_to_float``;
    - booleans, numbers and numeric strings (``"yes"``/``"true"``,
      ``"no"``/``"false"`` too): success when within 1e-6 of 1 (inspect's
      pass_at counts exactly 1.0 as correct); quality the value when it lies
      in [0, 1], else null;
    - a NaN (or infinite) score: ``"invalid"`` (no valid evaluation);
    - any other value (an unknown string, null): failure with quality null
      (inspect converts it to 0 with a warning).
    """
    number = _value_to_float(value)
    if number is None:
        return "failure", None
    if not math.isfinite(number):
        return "invalid", None
    if abs(number - 1.0) <= common.SUCCESS_TOLERANCE:
        return "success", common.unit_score(number)
    return "failure", common.unit_score(number)


def _scorer_names(header: dict, samples: list[dict]) -> list[str]:
    scorers = header["eval"].get("scorers")
    names = [s.get("name") for s in scorers or [] if isinstance(s, dict) and isinstance(s.get("name"), str)]
    if not names:  # older logs: the names used in the samples' scores
        for sample in samples:
            scores = sample.get("scores")
            for name in scores if isinstance(scores, dict) else ():
                if name not in names:
                    names.append(name)
    return names


def _dict_keys(samples: list[dict], name: str) -> list[str]:
    """The keys of the dict values scorer ``name`` gave, in first-seen order."""
    keys: list[str] = []
    for sample in samples:
        scores = sample.get("scores")
        score = scores.get(name) if isinstance(scores, dict) else None
        value = score.get("value") if isinstance(score, dict) else None
        for key in value if isinstance(value, dict) else ():
            if key not in keys:
                keys.append(key)
    return keys


def choose_scorer(file: str, header: dict, samples: list[dict], wanted: str | None) -> ScorerChoice:
    """The scorer (and key) ``wanted`` names in this log: ``NAME``, ``NAME.KEY``, or a key of one dict scorer.

    Default: the log's first scorer.  Raises InvalidRunError (rule ``inspect-scorer``) when nothing matches.
    """
    names = _scorer_names(header, samples)
    if wanted is None:
        if not names:
            raise InvalidRunError(file, "inspect-scorer", "the log names no scorer and no sample has a score")
        return ScorerChoice(names[0])
    if wanted in names:
        return ScorerChoice(wanted)
    for i, char in enumerate(wanted):
        if char == "." and wanted[:i] in names:
            name, key = wanted[:i], wanted[i + 1:]
            keys = _dict_keys(samples, name)
            if key not in keys:
                shown = ", ".join(map(repr, keys)) if keys else "none: its values are not dicts"
                raise InvalidRunError(file, "inspect-scorer", f"no score of {name!r} has the key {key!r}; "
                                                              f"its keys: {shown}")
            return ScorerChoice(name, key)
    owners = [name for name in names if wanted in _dict_keys(samples, name)]
    if len(owners) == 1:  # inspect reports each key of a dict scorer as a score of that name
        return ScorerChoice(owners[0], wanted)
    hint = f" (a key of {', '.join(map(repr, owners))}: use NAME.KEY)" if owners else ""
    raise InvalidRunError(file, "inspect-scorer", f"no scorer {wanted!r} in this log{hint}; it has "
                                                  f"{', '.join(map(repr, names)) or 'none'}")


def _unknown(evidence: str) -> dict:
    return {"agent_eligible": False, "failure_class": "unknown", "evidence": [common.RECORD_FILE + evidence]}


def outcome_fields(sample: dict, choice: ScorerChoice) -> dict:
    """The record fields a sample's score decides (success, eligibility, class, stage, evidence, quality).

    An errored epoch, or one without the chosen score (or key): ``unknown``, not eligible.  A NaN score:
    ``evaluation``.  Raises :class:`SampleError` for values no outcome can be read from.
    """
    scores = sample.get("scores")
    score = scores.get(choice.name) if isinstance(scores, dict) else None
    if sample.get("error"):
        # An exception ended the epoch (solver, tool, sandbox, provider or scorer): no fair outcome,
        # and no telling whose fault it was.  inspect drops it from its reducers too.
        return _unknown("#/error")
    if not isinstance(score, dict) or "value" not in score:
        return _unknown("#" + common.pointer("scores") if "scores" in sample else "#")
    value, path = score["value"], ("scores", choice.name, "value")
    if choice.key is not None:
        if not isinstance(value, dict):
            raise SampleError(f"score {choice.name!r} has a single value here, not a dict with the key "
                              f"{choice.key!r}", rule="inspect-score-value")
        if choice.key not in value:
            return _unknown("#" + common.pointer(*path))
        value, path = value[choice.key], path + (choice.key,)
    elif isinstance(value, dict):
        keys = sorted(value)
        example = f"--scorer {choice.name}.{keys[0]}" if keys else "another scorer"
        raise SampleError(f"score {choice.name!r} has a dict value (keys {common.describe(keys[:6])}); choose one "
                          f"key with {example}", rule="inspect-score-value")
    if isinstance(value, (dict, list)):
        raise SampleError(f"score {choice.label!r} has a {type(value).__name__} value; only single values "
                          "(C/I/P/N, numbers, booleans, strings) are supported", rule="inspect-score-value")
    if isinstance(value, str) and value.replace(".", "").isnumeric() and not _DECIMAL.fullmatch(value):
        # inspect's value_to_float takes it for a number and float() raises: inspect itself fails here
        raise SampleError(f"score {choice.label!r} has the value {common.describe(value)}, numeric to "
                          "str.isnumeric() but no number float() reads (inspect's value_to_float fails on it too)",
                          rule="inspect-score-value")
    outcome, quality = score_outcome(value)
    if outcome == "invalid":
        return {"agent_eligible": False, "failure_class": "evaluation", "failure_stage": "evaluation",
                "evidence": [common.RECORD_FILE + "#" + common.pointer(*path)]}
    success = outcome == "success"
    return {"success": success, "failure_class": "" if success else "agent", "quality_score": quality}
