"""Readable views of a loaded run: its short text and HTML summaries, the attempts table, evidence.

``Run.attempts`` is the table the metric functions read, built for speed: ``evidence`` and
``telemetry_source`` are category columns of JSON text, a success has ``failure_class`` ``''``,
and provenance columns sit beside the outcome.  :func:`attempts_view` is the same rows for a
reader.  Every run-supplied string reaches the HTML views through :func:`escape_text`, as text,
never as markup.
"""

from __future__ import annotations

import html
import json
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.format import CLASS_KEYS, FAILURE_STAGES, TELEMETRY_FIELDS
from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.outcome import judge_enabled

__all__ = ["PROVENANCE_COLUMNS", "OUTCOME_CODES", "NO_STAGE", "judge_phrase", "attempts_view", "attempt_outcomes", "outcome_codes",
           "task_outcome_codes", "outcomes_by_stage", "eligibility_by_outcome", "attempt_evidence", "clip", "escape_text",
           "html_card", "run_summary", "run_html", "evaluation_contracts"]

#: Where a record came from, not what happened: out of :func:`attempts_view` unless asked for.
PROVENANCE_COLUMNS = ("line", "artifact_dir", "telemetry_source", "cost_source")

#: One character per attempt outcome: success, the failure classes, unknown split by eligibility.
OUTCOME_CODES = {"success": "S", "agent": "A", "environment": "E", "evaluation": "V", "skipped": "K",
                 "unknown": "U", "unknown_ineligible": "X", "missing": "."}

_CLIP = 48  # characters of a run-supplied string in a one-line summary


def clip(text: Any, limit: int = _CLIP) -> str:
    """``str(text)``, cut to ``limit`` characters with an ellipsis when longer."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def escape_text(text: Any) -> str:
    """``text`` as HTML text (``&``, ``<``, ``>`` and both quotes escaped): safe in an element or attribute."""
    return html.escape(str(text), quote=True)


def html_card(title: str, rows: list[tuple[str, str]], note: str = "") -> str:
    """A small two-column HTML table; every title, label and value is escaped here.

    ``note`` is a trusted, already escaped HTML fragment shown under the table (may be empty).
    """
    body = "".join(f"<tr><th style=\"text-align:left;padding-right:1em\">{escape_text(k)}</th>"
                   f"<td style=\"text-align:left;overflow-wrap:anywhere\">{escape_text(v)}</td></tr>" for k, v in rows)
    foot = f"<p style=\"margin:0.3em 0 0 0\">{note}</p>" if note else ""
    return (f"<div class=\"capbench-card\" style=\"max-width:100%\"><table style=\"max-width:100%\">"
            f"<caption style=\"text-align:left;font-weight:bold;overflow-wrap:anywhere\">"
            f"{escape_text(title)}</caption>{body}</table>{foot}</div>")


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def _repeats(plan: pd.DataFrame) -> str:
    if plan.empty:
        return "0 tasks"
    low, high = int(plan["planned_repeats"].min()), int(plan["planned_repeats"].max())
    tasks = _plural(len(plan), "task")
    return f"{tasks} x {low}" if low == high else f"{tasks} x {low}-{high}"


def _suite(manifest: dict) -> str:
    suite = manifest.get("suite")
    if not isinstance(suite, dict):
        return "none"
    name, version = suite.get("name"), suite.get("version")
    return clip(name if version is None else f"{name}@{version}", 40)


def run_summary(run) -> str:
    """``Run('sim-4759', suite mobile-core-sim@2026.11, partial, 13 tasks x 2-3, 37 attempts, k=2, 1 anomaly)``.

    Run-supplied strings are clipped, so the line stays short whatever the manifest holds.
    """
    parts = [repr(clip(run.run_id, 40)), f"suite {_suite(run.manifest)}"]
    status = run.manifest.get("status")
    if status is not None:
        parts.append(clip(status, 20))
    parts += [_repeats(run.plan), _plural(len(run.attempts), "attempt"), f"k={run.k}"]
    if len(run.anomalies):
        parts.append(_plural(len(run.anomalies), "anomaly", "anomalies"))
    return f"Run({', '.join(parts)})"


def judge_phrase(judge: Any) -> str:
    """How the run's judge mode reads, everywhere it is shown (``config.judge``: true, false or absent)."""
    if judge is True:
        return "on"
    if judge is False:
        return "off (--no-judge: hard assertions only)"
    return "not recorded (config.judge absent)"


def _config_text(config: dict) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
                     for k, v in config.items() if k not in ("model", "judge"))


def run_html(run) -> str:
    """The run as a small HTML card for Jupyter: identity, configuration, plan, attempts, anomalies."""
    manifest = run.manifest
    config = manifest.get("config") or {}
    runner = manifest.get("runner") or {}
    anomalies = run.anomalies["kind"].value_counts()
    rows = [
        ("suite", _suite(manifest)),
        ("status", manifest.get("status", "")),
        ("model", config.get("model", "not given")),
        ("judge", judge_phrase(config.get("judge"))),
        ("config", clip(_config_text(config), 200) or "none"),
        ("runner", clip(f"{runner.get('name', '?')} {runner.get('version', '')}".strip(), 80)),
        ("created", manifest.get("created_at", "")),
        ("plan", f"{_repeats(run.plan)} repeats, k={run.k}"),
        ("attempts", f"{len(run.attempts)} counted of {len(run.records)} records"),
        ("anomalies", ", ".join(f"{int(n)} {kind}" for kind, n in anomalies.items()) or "none"),
        ("path", str(run.path)),
    ]
    note = ("<code>run.attempts_view()</code>: the attempts, one row each; "
            "<code>run.evidence(task_id, attempt)</code>: an attempt's evidence; "
            "<code>cb.compute_metrics(run)</code>: every metric")
    return html_card(f"Run {clip(run.run_id, 80)}", rows, note)


def _parsed(column: pd.Series, copy) -> list:
    """A column of JSON text (often categorical: each distinct text parsed once) as Python values.

    Each row gets its own object (``copy``), so changing one row's list never changes another's.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        values = [json.loads(text) for text in column.cat.categories]
        codes = column.cat.codes.to_numpy()
        return [None if c < 0 else copy(values[c]) for c in codes.tolist()]
    return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))
            else copy(json.loads(v) if isinstance(v, str) else v) for v in column.tolist()]


def attempts_view(run, *, provenance: bool = False) -> pd.DataFrame:
    """The counted attempts, for reading: one row per attempt, the index of ``run.attempts``.

    Columns, in order: ``task_id``, ``attempt``, ``outcome`` (``success``, or the failure class:
    ``agent``, ``environment``, ``evaluation``, ``skipped``, ``unknown``; categorical), ``agent_eligible``,
    ``failure_stage`` (string, ``<NA>`` when none), ``evidence`` (a list of ``FILE#POINTER`` references, ``[]`` when none),
    ``quality_score``, ``cost`` and every telemetry field.  ``success`` and ``failure_class``
    are folded into ``outcome``.  With ``provenance=True`` the columns
    :data:`PROVENANCE_COLUMNS` follow (``telemetry_source`` as a dict: field -> source).

    This is a copy for display and questions; metric functions read ``run.attempts`` (or the
    run itself), which this does not change.
    """
    a = run.attempts
    outcome = pd.Categorical(attempt_outcomes(a), categories=list(CLASS_KEYS))
    view = pd.DataFrame({"task_id": a["task_id"], "attempt": a["attempt"]}, index=a.index)
    view["outcome"] = pd.Series(outcome, index=a.index)
    view["agent_eligible"] = a["agent_eligible"]
    view["failure_stage"] = a["failure_stage"].astype("string")  # <NA> when none, like every other null here
    view["evidence"] = pd.Series(_parsed(a["evidence"], list), index=a.index, dtype=object)
    for name in ("quality_score", "cost", *TELEMETRY_FIELDS):
        view[name] = a[name]
    if provenance:
        view["line"] = a["line"]
        view["artifact_dir"] = a["artifact_dir"]
        view["telemetry_source"] = pd.Series(_parsed(a["telemetry_source"], dict), index=a.index, dtype=object)
        view["cost_source"] = a["cost_source"]
    return view


def attempt_outcomes(attempts: pd.DataFrame) -> np.ndarray:
    """The outcome of each row of an attempts table (``run.attempts``), as an object array: ``success``,
    or the failure class (``agent``, ``environment``, ``evaluation``, ``skipped``, ``unknown``; any
    other value is ``unknown``).

    The one place an attempt's outcome is worked out from ``success`` and ``failure_class``:
    :func:`attempts_view`, :func:`outcome_codes` and the reports' tables and figures read it.
    """
    n = len(attempts)
    out = np.full(n, "unknown", dtype=object)
    if not n:
        return out
    fclass = attempts["failure_class"].astype(object).to_numpy()
    for cls in CLASS_KEYS[1:]:
        out[fclass == cls] = cls
    out[attempts["success"].to_numpy(dtype=bool, na_value=False)] = CLASS_KEYS[0]
    return out


def outcome_codes(attempts: pd.DataFrame) -> np.ndarray:
    """The outcome code (:data:`OUTCOME_CODES`) of each row of an attempts table, as a ``<U1`` array.

    :func:`attempt_outcomes`, one character each; an ``unknown`` attempt is ``U`` when eligible and
    ``X`` when not.
    """
    n = len(attempts)
    if not n:
        return np.array([], dtype="<U1")
    outcomes = attempt_outcomes(attempts)
    eligible = attempts["agent_eligible"].to_numpy(dtype=bool, na_value=False)
    codes = np.full(n, OUTCOME_CODES["unknown"], dtype="<U1")
    for cls in CLASS_KEYS[:-1]:
        codes[outcomes == cls] = OUTCOME_CODES[cls]
    codes[(outcomes == "unknown") & ~eligible] = OUTCOME_CODES["unknown_ineligible"]
    return codes


def task_outcome_codes(run, tasks: list[str] | None = None) -> list[str]:
    """Per task (``tasks``, default every planned task in plan order), the outcome code of each planned
    attempt in attempt order (:func:`outcome_codes`; ``.`` for an attempt without a counted record)."""
    plan_ids = run.plan["task_id"].astype(object).tolist()
    planned = dict(zip(plan_ids, run.plan["planned_repeats"].astype(int).tolist()))
    tasks = plan_ids if tasks is None else list(tasks)
    lengths = np.array([planned[t] for t in tasks], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    where = {t: i for i, t in enumerate(tasks)}
    a = run.attempts
    slot = np.array([where.get(t, -1) for t in a["task_id"].astype(object).tolist()], dtype=np.int64)
    keep = slot >= 0
    cells = np.full(int(offsets[-1]), ord(OUTCOME_CODES["missing"]), dtype=np.uint8)
    if keep.any():
        codes = outcome_codes(a[keep])
        number = a["attempt"].to_numpy(dtype="int64")[keep]
        cells[offsets[slot[keep]] + number - 1] = np.frombuffer("".join(codes.tolist()).encode("ascii"), dtype=np.uint8)
    raw = cells.tobytes().decode("ascii")
    return [raw[offsets[i]:offsets[i + 1]] for i in range(len(tasks))]


#: The row of :func:`outcomes_by_stage` for attempts without a failure stage.
NO_STAGE = "(no stage)"


def outcomes_by_stage(run) -> pd.DataFrame:
    """Counted attempts by failure stage (rows: each stage of the format, then :data:`NO_STAGE`) and
    outcome (columns: :data:`~capbench_nb.format.CLASS_KEYS`, then ``total``), as ``Int64`` counts."""
    a = run.attempts
    outcomes = attempt_outcomes(a)
    stages = np.array([s if isinstance(s, str) else NO_STAGE for s in a["failure_stage"].astype(object).tolist()],
                      dtype=object)
    rows = {}
    for stage in (*FAILURE_STAGES, NO_STAGE):
        at = stages == stage
        rows[stage] = [int((at & (outcomes == c)).sum()) for c in CLASS_KEYS] + [int(at.sum())]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[*CLASS_KEYS, "total"]).astype("Int64")
    frame.index.name = "failure_stage"
    return frame


def eligibility_by_outcome(run) -> pd.DataFrame:
    """Counted attempts by outcome (rows: :data:`~capbench_nb.format.CLASS_KEYS`, from
    :func:`attempt_outcomes`) and eligibility (columns ``eligible``: in the agent's denominators,
    ``ineligible``: ``agent_eligible`` false), as ``Int64`` counts (0 when none)."""
    a = run.attempts
    outcomes = attempt_outcomes(a)
    eligible = a["agent_eligible"].to_numpy(dtype=bool, na_value=False)
    rows = {c: [int((eligible & (outcomes == c)).sum()), int((~eligible & (outcomes == c)).sum())] for c in CLASS_KEYS}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["eligible", "ineligible"]).astype("Int64")
    frame.index.name = "outcome"
    return frame


def attempt_evidence(run, task_id: str, attempt: int) -> dict[str, Any]:
    """Every evidence reference of one counted attempt with the JSON value it points at, in record order.

    For an imported run, an errored attempt's reference names the source's error
    (``record.json#/error``), so its message is the value.

    Raises
    ------
    KeyError
        The run has no counted attempt ``attempt`` of ``task_id``.
    capbench_nb.io.pointer.EvidenceError
        A reference that cannot be followed (an artifact changed since the run was loaded).
    """
    a = run.attempts
    where = np.flatnonzero((a["task_id"] == task_id).to_numpy(dtype=bool, na_value=False)
                           & (a["attempt"] == attempt).to_numpy(dtype=bool, na_value=False))
    if not len(where):
        raise KeyError(f"run {clip(run.run_id)!r} has no counted attempt {attempt!r} of task {clip(task_id)!r}")
    row = a.iloc[int(where[0])]
    references = json.loads(row["evidence"]) if isinstance(row["evidence"], str) else list(row["evidence"])
    artifact_dir = None if pd.isna(row["artifact_dir"]) else str(row["artifact_dir"])
    resolver = EvidenceResolver(run.path)
    return {ref: resolver.resolve(artifact_dir, ref) for ref in references}


def evaluation_contracts(run, tasks) -> dict[str, tuple[tuple[str, ...], bool]]:
    """Per task of ``tasks``: (sorted hard-assertion names, judge enabled), the evaluation contract
    read from the ``attempt.json#/evaluation`` of its first evaluated (eligible, counted) attempt.

    The judge flag is resolved as ingest does (:func:`capbench_nb.records.outcome.judge_enabled`,
    the run's ``config.judge`` by default).  Tasks without an eligible attempt that has a readable
    evaluation object with a list of hard assertions are absent.  The facts the run comparison's
    ``evaluation`` warning compares (``capbench_nb.metrics.comparison``), read here so that metrics
    never opens an artifact.
    """
    a = run.attempts
    eligible = a["agent_eligible"].to_numpy(dtype="bool", na_value=False)
    frame = pd.DataFrame({
        "task_id": a["task_id"].astype(object).to_numpy(),
        "attempt": a["attempt"].to_numpy(dtype="int64"),
        "artifact_dir": a["artifact_dir"].astype(object).to_numpy(),
    })[eligible]
    frame = frame[frame["artifact_dir"].notna() & frame["task_id"].isin(set(tasks))]
    frame = frame.sort_values(["task_id", "attempt"], kind="stable")
    resolver = EvidenceResolver(run.path)
    judge_default = run.judge
    out: dict[str, tuple[tuple[str, ...], bool]] = {}
    for task_id, artifact_dir in zip(frame["task_id"], frame["artifact_dir"]):
        if task_id in out:
            continue
        try:
            evaluation = resolver.resolve(artifact_dir, "attempt.json#/evaluation")
        except EvidenceError:
            continue
        if not isinstance(evaluation, dict):
            continue
        hard = evaluation.get("hard_assertions") or []
        if not isinstance(hard, list):
            continue
        names = tuple(sorted(str(item.get("name")) if isinstance(item, dict) else str(item) for item in hard))
        out[task_id] = (names, bool(judge_enabled(evaluation, judge_default)))
    return out
