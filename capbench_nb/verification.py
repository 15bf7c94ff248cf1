"""Recompute a run's outputs and list every disagreement with the files found."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InvalidRunError
from .export import METRICS_FILE, compute_metrics
from .loading import load_run

__all__ = ["Disagreement", "diff_documents", "verify"]


@dataclass(frozen=True)
class Disagreement:
    """One value that differs: where (file and JSON pointer), what the file has, what was recomputed."""

    file: str
    pointer: str
    found: Any
    expected: Any

    def __str__(self) -> str:
        def show(v: Any) -> str:
            if v is _ABSENT:
                return "nothing"
            text = json.dumps(v, ensure_ascii=True)
            return text if len(text) <= 80 else text[:77] + "..."

        return f"{self.file}#{self.pointer or '/'}: found {show(self.found)}, recomputed {show(self.expected)}"


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


def verify(run_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None, *, strict: bool = True) -> list[Disagreement]:
    """Recompute every output of ``run_dir`` and compare with the files in ``out_dir``.

    Parameters
    ----------
    run_dir : path-like
        The run (manifest.json and results.jsonl are the only inputs).
    out_dir : path-like, optional
        Where the outputs are; default ``run_dir``.
    strict : bool, default True
        As in :func:`capbench_nb.load_run`.  When the metrics.json found was
        written with ``allow_invalid``, the recomputation uses it too, so that
        the comparison is like for like.

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
    try:
        found = json.loads(metrics_path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise InvalidRunError(str(metrics_path), "metrics-missing", "no metrics.json to verify; run `capbench-nb metrics` first") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRunError(str(metrics_path), "metrics-unreadable", f"cannot read metrics.json: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidRunError(str(metrics_path), "json", f"metrics.json is not valid JSON: {exc.msg}", line=exc.lineno) from None
    provenance = found.get("provenance") if isinstance(found, dict) else None
    options = provenance.get("options") if isinstance(provenance, dict) else None
    stored_allow = isinstance(options, dict) and options.get("allow_invalid") is True
    run = load_run(run_dir, strict=strict and not stored_allow)
    problems = diff_documents(found, compute_metrics(run), file=str(metrics_path))
    # Changed inputs explain everything else: list them first.
    return sorted(problems, key=lambda d: not d.pointer.startswith("/provenance/inputs"))
