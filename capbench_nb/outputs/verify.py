"""Recompute a run's outputs and list every disagreement with the files found.

metrics.json is compared value by value (JSON pointers); summary.md, when
present, line by line against the summary regenerated from the recomputed
metrics.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench_nb.errors import InvalidRunError, one_line
from capbench_nb.io.files import read_regular_file
from capbench_nb.io.jsonparse import DEFAULT_MESSAGES, JsonMessages, json_error
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.metrics.health import QUARANTINE_THRESHOLD, check_quarantine_threshold
from capbench_nb.metrics.slices import UnknownSliceError, slice_values
from capbench_nb.outputs.export import METRICS_FILE
from capbench_nb.records.run import load_run

__all__ = ["Disagreement", "diff_documents", "diff_lines", "read_output_json", "verify", "SUMMARY_FILE"]

SUMMARY_FILE = "summary.md"

#: How a metrics.json to verify words a failed parse.
_METRICS_MESSAGES = JsonMessages(
    syntax="metrics.json is not valid JSON: {msg}",
    nested="metrics.json is JSON nested too deeply to read",
    too_long="metrics.json holds an integer literal too long to read; this toolkit never writes one",
    too_long_rule=None,
    utf8="cannot read metrics.json: {exc}",
    utf8_rule="metrics-unreadable",
)


@dataclass(frozen=True)
class Disagreement:
    """One value that differs: where, what the file has, what was recomputed.

    ``pointer`` is a JSON pointer for JSON files (``/metrics/pass@1/value``),
    ``line N`` for text files such as summary.md.
    """

    file: str
    pointer: str
    found: Any
    expected: Any

    def __str__(self) -> str:
        def show(v: Any) -> str:
            if v is _ABSENT:
                return "nothing"
            try:
                text = json.dumps(v, ensure_ascii=True)
            except (RecursionError, ValueError):  # a hostile file: too deep, or an integer too long
                return "(a value too deeply nested or too long to show)"
            return text if len(text) <= 80 else text[:77] + "..."

        # The file's keys (in the pointer) and the path are shown escaped on one line, like the values:
        # a key holding a newline or a terminal escape must not forge or hide a line.
        file, pointer = one_line(self.file), one_line(self.pointer or "/")
        if not self.pointer.startswith("line "):
            return f"{file}#{pointer}: found {show(self.found)}, recomputed {show(self.expected)}"
        found, expected = self.found, self.expected
        if isinstance(found, str) and isinstance(expected, str):
            found, expected = _around_difference(found, expected)
        return f"{file} {pointer}: found {show(found)}, recomputed {show(expected)}"


def _around_difference(a: str, b: str, *, before: int = 20, width: int = 70) -> tuple[str, str]:
    """Two long lines cut to the same window around their first difference ("..." marks a cut)."""
    if max(len(a), len(b)) <= width:
        return a, b
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    start = max(0, start - before)

    def cut(text: str) -> str:
        part = text[start : start + width]
        return ("..." if start else "") + part + ("..." if start + width < len(text) else "")

    return cut(a), cut(b)


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def diff_documents(found: Any, expected: Any, *, file: str = METRICS_FILE, pointer: str = "") -> list[Disagreement]:
    """Every place where two JSON documents differ, as JSON pointers (RFC 6901).

    Numbers compare by value (``1`` equals ``1.0``); ``true`` never equals ``1``.
    """
    if isinstance(found, dict) and isinstance(expected, dict):
        out: list[Disagreement] = []
        for key in expected:
            where = f"{pointer}/{_escape(str(key))}"
            if key not in found:
                out.append(Disagreement(file, where, _ABSENT, expected[key]))
            else:
                out.extend(diff_documents(found[key], expected[key], file=file, pointer=where))
        for key in found:
            if key not in expected:
                out.append(Disagreement(file, f"{pointer}/{_escape(str(key))}", found[key], _ABSENT))
        return out
    if isinstance(found, list) and isinstance(expected, list):
        out = []
        for i in range(max(len(found), len(expected))):
            where = f"{pointer}/{i}"
            if i >= len(found):
                out.append(Disagreement(file, where, _ABSENT, expected[i]))
            elif i >= len(expected):
                out.append(Disagreement(file, where, found[i], _ABSENT))
            else:
                out.extend(diff_documents(found[i], expected[i], file=file, pointer=where))
        return out
    if type(found) in (dict, list) or type(expected) in (dict, list) or not _same_scalar(found, expected):
        return [Disagreement(file, pointer, found, expected)]
    return []


def diff_lines(found: str, expected: str, *, file: str = SUMMARY_FILE) -> list[Disagreement]:
    """Every line where two texts differ, numbered as in ``found`` (1-based).

    Lines are aligned first (difflib), so one inserted or deleted line is one
    disagreement, not a cascade: a changed line gives found and recomputed
    text, an extra line found text and ``nothing``, a missing line ``nothing``
    and the recomputed text (numbered where it belongs).  A missing final
    newline shows as a missing empty last line.
    """
    a, b = found.split("\n"), expected.split("\n")
    out: list[Disagreement] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for offset in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + offset, j1 + offset
            line_found = a[i] if i < i2 else _ABSENT
            line_expected = b[j] if j < j2 else _ABSENT
            out.append(Disagreement(file, f"line {min(i, i2) + 1}", line_found, line_expected))
    return out


def read_output_json(path: Path, *, rule: str, command: str, json_rule: str = "json",
                     messages: JsonMessages = DEFAULT_MESSAGES, what: str = "") -> Any:
    """The JSON document ``path`` (an output of ``capbench-nb COMMAND``) parsed, for a verify to compare.

    Parameters
    ----------
    path : Path
        The file; read only when it is a regular file (a FIFO would block, a device such as
        /dev/zero never end).
    rule : str
        The rule prefix: ``RULE-missing`` when there is no file, ``RULE-unreadable`` when it cannot
        be read.
    command : str
        The command that writes the file, named in the message of a missing one.
    json_rule, messages, what
        How a parse failure is worded (:func:`~capbench_nb.io.jsonparse.json_error`).

    Returns
    -------
    Any
        The parsed value, of any JSON type (the caller says whether it must be an object).

    Raises
    ------
    InvalidRunError
        The file is missing, unreadable, or not JSON.
    """
    try:
        return json.loads(read_regular_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise InvalidRunError(str(path), f"{rule}-missing",
                              f"no {path.name} to verify; run `capbench-nb {command}` first") from None
    except OSError as exc:
        raise InvalidRunError(str(path), f"{rule}-unreadable", f"cannot read {path.name}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, too long an integer, too deep
        raise json_error(exc, file=str(path), rule=json_rule, messages=messages, what=what) from None


def _stored_dimensions(run, options: Any, key: str) -> tuple[list[str], list[str]]:
    """The dimensions ``provenance.options[key]`` names, and those of them the run can resolve."""
    stored = options.get(key) if isinstance(options, dict) else None
    dims = [d for d in stored if isinstance(d, str)] if isinstance(stored, list) else []
    known = []
    for dim in dims:
        try:
            slice_values(run, dim)
            known.append(dim)
        except UnknownSliceError:
            pass
    return dims, known


def _stored_threshold(options: Any) -> float:
    """``provenance.options.quarantine_threshold`` when it is a valid one, else the default (a disagreement then)."""
    value = options.get("quarantine_threshold") if isinstance(options, dict) else None
    try:
        return check_quarantine_threshold(value)
    except ValueError:
        return QUARANTINE_THRESHOLD


def verify(run_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None, *, strict: bool = True,
           skip_evidence: bool = False, quarantine_threshold: float | None = None) -> list[Disagreement]:
    """Recompute every output of ``run_dir`` and compare with the files in ``out_dir``.

    Parameters
    ----------
    run_dir : path-like
        The run (manifest.json and results.jsonl are the only inputs).
    out_dir : path-like, optional
        Where the outputs are; default ``run_dir``.  metrics.json must be
        there; summary.md is checked when it is.
    strict : bool, default True
        As in :func:`capbench_nb.load_run`.  When the metrics.json found was
        written with ``allow_invalid``, the recomputation uses it too, so that
        the comparison is like for like.
    skip_evidence : bool, default False
        As in :func:`capbench_nb.load_run`; also implied when the metrics.json found says
        ``provenance.evidence_checked: false``.
    quarantine_threshold : float, optional
        Recompute ``health`` with this threshold; default: the one the metrics.json found
        records (``provenance.options.quarantine_threshold``), else 0.5.  Slice and cluster
        dimensions are always the file's.

    Returns
    -------
    list of Disagreement
        Empty when everything agrees.

    Raises
    ------
    InvalidRunError
        When the run is invalid, or metrics.json is missing or not JSON.
    """
    out = Path(out_dir) if out_dir is not None else Path(run_dir)
    metrics_path = out / METRICS_FILE
    found = read_output_json(metrics_path, rule="metrics", command="metrics", messages=_METRICS_MESSAGES)
    provenance = found.get("provenance") if isinstance(found, dict) else None
    options = provenance.get("options") if isinstance(provenance, dict) else None
    stored_allow = isinstance(options, dict) and options.get("allow_invalid") is True
    # A metrics.json written without resolving evidence is recomputed the same way (it says so).
    stored_skip = isinstance(provenance, dict) and provenance.get("evidence_checked") is False
    run = load_run(run_dir, strict=strict and not stored_allow, skip_evidence=skip_evidence or stored_skip)
    # The slice and cluster dimensions the file was computed with; a derived one registered in a
    # notebook cannot be recomputed here and shows as a disagreement under /slices or /health.
    slices, known_slices = _stored_dimensions(run, options, "slices")
    clusters, known_clusters = _stored_dimensions(run, options, "clusters")
    threshold = quarantine_threshold if quarantine_threshold is not None else _stored_threshold(options)
    recomputed = compute_metrics(run, slices=known_slices, quarantine_threshold=threshold, clusters=known_clusters)
    # keep provenance comparable: the file asked for these
    recomputed["provenance"]["options"].update(slices=slices, clusters=clusters)
    try:
        problems = diff_documents(found, recomputed, file=str(metrics_path))
    except RecursionError:  # parsed, but deeper than the comparison can follow
        raise InvalidRunError(str(metrics_path), "json", "metrics.json is JSON nested too deeply to compare") from None
    # Changed inputs explain everything else: list them first.
    problems.sort(key=lambda d: not d.pointer.startswith("/provenance/inputs"))
    summary_path = out / SUMMARY_FILE
    if summary_path.is_file():
        from capbench_nb.outputs.summary import summary_markdown  # only when there is a summary to check

        text = summary_path.read_bytes().decode("utf-8", errors="replace")
        problems.extend(diff_lines(text, summary_markdown(recomputed), file=str(summary_path)))
    return problems
