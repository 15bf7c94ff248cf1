"""Shared helpers: build small run directories from compact descriptions."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

import pytest

from capbench_nb.format import TELEMETRY_FIELDS

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SAMPLE_RUN = REPO / "data" / "sample-run"

# Outcome codes: S success, A agent failure, E environment, V evaluation,
# K skipped, U unknown (eligible), X unknown (not eligible).
_CODES = {
    "S": (True, True, ""),
    "A": (False, True, "agent"),
    "E": (False, False, "environment"),
    "V": (False, False, "evaluation"),
    "K": (False, False, "skipped"),
    "U": (False, True, "unknown"),
    "X": (False, False, "unknown"),
}


def record(task_id: str, attempt: int, code: str = "S", *, telemetry: dict | None = None, **fields) -> dict:
    """A valid attempt record of outcome ``code`` with all-null telemetry unless given."""
    success, eligible, fclass = _CODES[code]
    tel = {name: None for name in TELEMETRY_FIELDS}
    tel.update(telemetry or {})
    rec = {
        "task_id": task_id,
        "attempt": attempt,
        "artifact_dir": None,
        "success": success,
        "agent_eligible": eligible,
        "failure_class": fclass,
        "failure_stage": None,
        "evidence": [],
        "quality_score": None,
        "telemetry": tel,
        "telemetry_source": {name: "test" for name, value in tel.items() if value is not None},
        "cost": None,
        "cost_source": None,
    }
    rec.update(fields)
    return rec


def manifest(tasks, *, k=None, repeats_override=None, status="completed", judge=True) -> dict:
    """A valid manifest; ``tasks`` is a list of (task_id, repeats) or plan-task dicts."""
    plan_tasks = [t if isinstance(t, dict) else {"task_id": t[0], "repeats": t[1]} for t in tasks]
    return {
        "schema_version": "capbench.run/1",
        "run_id": "test-run",
        "suite": {"name": "unit", "version": "1"},
        "created_at": "2026-11-28T10:00:00Z",
        "status": status,
        "runner": {"name": "tests", "version": "0"},
        "config": {"model": "m", "judge": judge},
        "plan": {"repeats_override": repeats_override, "k": k, "tasks": plan_tasks},
    }


def write_run(path: Path, manifest_doc: dict, records: list, *, trailing_newline: bool = True) -> Path:
    """Write manifest.json and results.jsonl; records may be dicts or raw line strings."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text(json.dumps(manifest_doc, indent=2), encoding="utf-8")
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    (path / "results.jsonl").write_text(text, encoding="utf-8")
    return path


def outcomes(spec: dict[str, str]) -> list[dict]:
    """Records from ``{"t1": "SAS", "t2": "E.S"}``; ``.`` is a missing attempt."""
    out = []
    for task_id, codes in spec.items():
        for i, code in enumerate(codes, start=1):
            if code != ".":
                out.append(record(task_id, i, code))
    return out


@pytest.fixture
def sample_run_dir() -> Path:
    return SAMPLE_RUN


class Hang(BaseException):
    """Raised by :func:`deadline`: not an Exception, so no handler under test can turn it into an answer."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Raise :class:`Hang` in the block after ``seconds`` (a test that would block fails instead;
    not a timing assertion: the work takes milliseconds)."""

    def handler(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
