"""The facts the report's task explorer shows about each counted attempt, read from the run's
artifacts once, within size limits: :func:`attempt_details`.

For each attempt it keeps (in plan order, then attempt order) its outcome code, its evidence
references with the JSON value each one names (or why it could not be followed), the error
message of an errored or crashed attempt, and the artifact files its evidence and telemetry
name, each with whether it exists.  The pages render these facts; they read no file themselves.

Size policy (the explorer's, see :mod:`capbench_nb.outputs.report.explorer`): up to
:data:`FULL_DETAIL_ATTEMPTS` counted attempts every attempt has its details, beyond that the
successes are left out; the artifacts of at most :data:`RESOLVE_BUDGET` of the detailed
attempts are read (failed and ineligible attempts first, in plan order): beyond the budget the
references and files are named, unchecked.  Evidence values are kept as text of at most
:data:`VALUE_CHARS` characters, error messages of at most :data:`ERROR_CHARS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.views import outcome_codes

__all__ = ["FULL_DETAIL_ATTEMPTS", "RESOLVE_BUDGET", "VALUE_CHARS", "ERROR_CHARS", "AttemptDetails", "attempt_details",
           "clip_text", "evidence_texts"]

#: Counted attempts up to which every attempt keeps its details (beyond: successes are summarised).
FULL_DETAIL_ATTEMPTS = 200_000
#: Attempts whose artifacts are read (evidence values, error messages, file checks).
RESOLVE_BUDGET = 20_000
#: Characters of an evidence value shown inline.
VALUE_CHARS = 2_000
#: Characters of an error message shown.
ERROR_CHARS = 600


@dataclass(frozen=True)
class AttemptDetails:
    """The detailed attempts of a run and what their artifacts say (:func:`attempt_details`).

    Every per-row field is aligned with ``rows``: the detailed rows of ``run.attempts`` in plan
    order then attempt order.
    """

    rows: pd.DataFrame  #: the detailed attempts (rows of ``run.attempts``)
    task_position: np.ndarray  #: per row, the index of its task in ``run.plan``
    codes: np.ndarray  #: per row, its outcome code (:func:`~capbench_nb.records.views.outcome_codes`)
    references: list[list[str]]  #: per row, its evidence references in record order
    evidence: dict[int, list[list]]  #: row -> ``[reference, value text or None, why it did not resolve or None]``
    errors: dict[int, str]  #: row -> the error message its evidence or attempt.json holds (clipped)
    files: list[list[tuple[str, bool | None]] | None]  #: per row, ``(file, exists)`` (None: unchecked), or None
    attempts: int  #: counted attempts in all
    summarised: bool  #: whether the successes were left out (more than ``full_detail`` attempts)
    resolved: int  #: attempts whose artifacts were read
    full_detail: int
    resolve_budget: int


def _json_list(text: Any) -> list[str]:
    """An evidence or telemetry_source cell (JSON text, a list, or null) as a list of strings."""
    if text is None or text is pd.NA or (isinstance(text, float) and np.isnan(text)):
        return []
    if isinstance(text, (list, tuple)):
        return [str(v) for v in text]
    if isinstance(text, Mapping):
        return [str(v) for v in text.values()]
    try:
        value = json.loads(str(text))
    except ValueError:
        return [str(text)]
    if isinstance(value, Mapping):
        return [str(v) for v in value.values()]
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _per_category(column: pd.Series, fn) -> list:
    """``fn`` applied once per distinct value of a (category or object) column, mapped back to every row."""
    codes, uniques = pd.factorize(column.astype(object), use_na_sentinel=True)
    mapped = [fn(u) for u in uniques]
    empty = fn(None)
    return [mapped[c] if c >= 0 else empty for c in codes.tolist()]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def _value_text(value: Any) -> str:
    """An evidence value as shown, cut to :data:`VALUE_CHARS`: a string as its own text, an object with a
    multi-line string member (an error with its traceback) as ``key: value`` lines with that text as it is
    (real line breaks, not ``\\n``), anything else as indented JSON."""
    if isinstance(value, str):
        return _clip(value, VALUE_CHARS)
    if isinstance(value, dict) and any(isinstance(v, str) and "\n" in v for v in value.values()):
        return _clip("\n".join(f"{k}:\n{v}" if isinstance(v, str) and "\n" in v
                               else f"{k}: {json.dumps(v, ensure_ascii=False, allow_nan=True, default=repr)}"
                               for k, v in value.items()), VALUE_CHARS)
    try:
        text = json.dumps(value, ensure_ascii=False, indent=1, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, VALUE_CHARS)


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    return _clip(text, limit)


_ATTEMPT_ERRORS = (  # where attempt.json says why an attempt did not run or finish (spec section 4)
    ("skip", "reason", "skipped"),
    ("setup", "error", "setup failed"),
    ("provider", "error", "provider unavailable"),
    ("agent", "error", "agent error"),
    ("evaluation", "judge", "judge error"),
)


def _message_in(value: Any) -> str | None:
    """An error message inside a resolved evidence value (an error object or string)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        for key in ("message", "error", "reason"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
    return None


def _attempt_json_error(doc: Any) -> str | None:
    """The error of an attempt as attempt.json records it, or None."""
    if not isinstance(doc, Mapping):
        return None
    for section, key, what in _ATTEMPT_ERRORS:
        part = doc.get(section)
        if not isinstance(part, Mapping):
            continue
        if section == "evaluation":
            judge = part.get("judge")
            if isinstance(judge, Mapping) and judge.get("status") == "error":
                return f"{what}: {judge.get('error') or 'no message'} (attempt.json#/evaluation/judge)"
            continue
        if isinstance(part.get(key), str) and part[key]:
            return f"{what}: {part[key]} (attempt.json#/{section}/{key})"
    agent = doc.get("agent")
    if isinstance(agent, Mapping) and agent.get("status") in ("crashed", "timeout", "error"):
        return f"the agent {agent['status']} (attempt.json#/agent/status)"
    return None


class _Artifacts:
    """Reads an attempt's artifacts for the page, inside the run only (:class:`EvidenceResolver`)."""

    def __init__(self, run_dir: Path) -> None:
        self.resolver = EvidenceResolver(run_dir, cache_size=2048)

    def resolve(self, adir: str | None, ref: str) -> tuple[Any, str | None]:
        """The value ``ref`` names, and None; or None and why it did not resolve (never raised)."""
        try:
            return self.resolver.resolve(adir, ref), None
        except (EvidenceError, OSError, ValueError) as exc:
            return None, str(exc)

    def evidence(self, adir: str | None, refs: list[str]) -> tuple[list[list], str | None]:
        """Each reference with its value's text (or why it did not resolve), and the first error message in them."""
        out, message = [], None
        for ref in refs:
            value, problem = self.resolve(adir, ref)
            if problem is not None:
                out.append([ref, None, problem])
                continue
            out.append([ref, _value_text(value), None])
            found = _message_in(value)
            if message is None and found:
                message = f"{found} ({ref})"
        return out, message

    def exists(self, adir: str, file: str) -> bool:
        try:
            real, _, _ = self.resolver.locate(adir, file + "#")
        except (EvidenceError, OSError, ValueError):
            return False
        return os.path.isfile(real)

    def attempt_error(self, adir: str | None) -> str | None:
        """What attempt.json says went wrong, when the evidence held no message."""
        if adir is None:
            return None
        try:
            return _attempt_json_error(self.resolver.resolve(adir, "attempt.json#"))
        except (EvidenceError, OSError, ValueError):
            return None


def _ordered_attempts(run) -> tuple[pd.DataFrame, np.ndarray]:
    """The counted attempts in plan order then attempt order, and each one's task position."""
    a = run.attempts
    pos = pd.Index(run.plan["task_id"].astype(object)).get_indexer(a["task_id"].astype(object))
    order = np.lexsort((a["attempt"].to_numpy(dtype="int64"), pos))
    return a.iloc[order], pos[order]


def _files(artifacts: _Artifacts, adir: str | None, named: list[str], resolved: bool):
    if adir is None or not named:
        return None
    return [(f, artifacts.exists(adir, f) if resolved else None) for f in named]


def attempt_details(run, *, full_detail: int = FULL_DETAIL_ATTEMPTS,
                    resolve_budget: int = RESOLVE_BUDGET) -> AttemptDetails:
    """What the artifacts of a run's counted attempts say, within the size policy (module docstring).

    Parameters
    ----------
    run : Run
        The loaded run (attempt outcomes, evidence references, telemetry sources, artifact directories).
    full_detail, resolve_budget : int
        The limits: attempts beyond ``full_detail`` lose their successes' details; at most
        ``resolve_budget`` attempts have their artifacts read.
    """
    a, pos = _ordered_attempts(run)
    codes = outcome_codes(a)
    summarised = len(a) > full_detail
    keep = np.flatnonzero(codes != "S") if summarised else np.arange(len(a))
    d, dpos, dcodes = a.iloc[keep], pos[keep], codes[keep]
    adirs = d["artifact_dir"].astype(object).to_numpy()
    references = _per_category(d["evidence"], _json_list)
    sources = _per_category(d["telemetry_source"], lambda v: sorted({r.partition("#")[0] for r in _json_list(v)}))
    artifacts = _Artifacts(run.path)
    # failed and ineligible attempts first: they are the ones a reader opens
    first = np.concatenate([np.flatnonzero(dcodes != "S"), np.flatnonzero(dcodes == "S")])[:resolve_budget]
    in_budget = np.zeros(len(d), dtype=bool)
    in_budget[first] = True
    evidence, errors, files = {}, {}, []
    for r in range(len(d)):
        adir = adirs[r] if isinstance(adirs[r], str) else None
        refs, resolved, message = references[r], bool(in_budget[r]), None
        if refs and resolved:
            evidence[r], message = artifacts.evidence(adir, refs)
        elif refs:
            evidence[r] = [[ref, None, None] for ref in refs]
        if resolved and dcodes[r] != "S":
            message = message or artifacts.attempt_error(adir)
            if message:
                errors[r] = _clip(message, ERROR_CHARS)
        files.append(_files(artifacts, adir, sorted({ref.partition("#")[0] for ref in refs} | set(sources[r])), resolved))
    return AttemptDetails(rows=d, task_position=dpos, codes=dcodes, references=references, evidence=evidence,
                          errors=errors, files=files, attempts=int(len(a)), summarised=bool(summarised),
                          resolved=int(len(first)), full_detail=int(full_detail), resolve_budget=int(resolve_budget))


def evidence_texts(run, attempts, *, budget: int, text=str) -> tuple[dict[tuple[str, int], list[list]], int]:
    """The evidence of chosen counted attempts, each reference with what it names, read within a budget
    (the comparison page's flipped tasks).

    Parameters
    ----------
    run : Run
        The loaded run.
    attempts : iterable of (task_id, attempt)
        The attempts, in the order their references are resolved; a pair that is not a counted attempt
        is skipped.
    budget : int
        References resolved at most; the ones beyond are listed unresolved.
    text : callable, default str
        Applied to the JSON text of each value as it is read (a page's clipping), so that a long value
        is never kept whole.

    Returns
    -------
    (dict, int)
        ``(task_id, attempt) -> [[reference, value text or None, why it did not resolve or None], ...]`` in
        record order (both None: beyond the budget), and the number of references resolved.
    """
    frame = run.attempts
    index = {(task, int(number)): (adir if isinstance(adir, str) else None, refs)
             for task, number, adir, refs in zip(frame["task_id"].astype(object), frame["attempt"],
                                                 frame["artifact_dir"].astype(object), frame["evidence"].astype(object))}
    artifacts = _Artifacts(run.path)
    out: dict[tuple[str, int], list[list]] = {}
    used = 0
    for key in attempts:
        if key not in index or key in out:
            continue
        adir, refs = index[key]
        entries = []
        for ref in _json_list(refs):
            if used >= budget:
                entries.append([ref, None, None])
                continue
            used += 1
            value, problem = artifacts.resolve(adir, ref)
            shown = None if problem is not None else text(json.dumps(value, ensure_ascii=False, sort_keys=True))
            entries.append([ref, shown, problem])
        out[key] = entries
    return out, used
