"""``capbench-nb export RUN --format eee --out DIR``: a run as Every Eval Ever records (spec section 14).

Every Eval Ever (EEE, schema 0.3.0) files an evaluation as ``data/<collection>/<developer>/<model>/``
``<uuid>.json`` (the aggregate record) with ``<uuid>_samples.jsonl`` beside it (instance-level
records); :func:`export_eee` writes both under DIR:

- collection = the suite name, developer = ``config.provider``, model = ``config.model`` (each made a
  portable path component; ``unspecified`` when absent); ``model_info.id`` is ``developer/model``.
- The aggregate holds pass@1, pass@k and pass^k of the run's metrics.json (value, Wilson interval,
  successes, n, coverage; a metric with an empty denominator has no value and is left out), k in
  ``metric_parameters``.
- One instance row per counted attempt (planned task, within its planned repeats), in results.jsonl
  order: ``sample_id`` the task_id, ``evaluation.is_correct`` its success (``score`` 1 or 0), and in
  ``metadata`` (EEE's string-valued extension object) ``attempt``, ``agent_eligible``,
  ``failure_class``, ``failure_stage``, ``cost`` and ``cost_source`` (when known) and the run's ``k`` and
  the task's ``planned_repeats``: enough to recompute pass@1, pass@k and pass^k of section 6 from the
  export alone.

A run without counted attempts is refused (``eee-no-attempts``), nothing written: EEE has no form for zero
instances (its validator refuses an empty samples file).

The files depend only on the run (the uuid is derived from its input hashes; ``retrieved_timestamp``
is the manifest's ``created_at`` as Unix time): the same run gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError
from capbench_nb.io.atomic import write_atomic
from capbench_nb.metrics.document import compute_metrics
from capbench_nb.records.run import Run, load_run

__all__ = ["EEE_SCHEMA_VERSION", "eee_records", "export_eee", "path_component"]

EEE_SCHEMA_VERSION = "0.3.0"
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_METRICS = (("pass@1", "pass_at_1", "pass@1"), ("pass@k", "pass_at_k", "pass@{k}"), ("pass^k", "pass_hat_k", "pass^{k}"))


def path_component(value: object) -> str:
    """A portable datastore directory name for ``value`` (``unspecified`` for none)."""
    text = _UNSAFE.sub("_", str(value)).strip().rstrip(". ") if isinstance(value, str) else ""
    if not text or text.lower() in ("unknown", "data"):
        return "unspecified" if not text else f"{text}_"
    return f"_{text}" if text.split(".", 1)[0].upper() in _RESERVED else text


def _epoch(created_at: object) -> str:
    """Unix time of ``created_at``; a time without an offset is read as UTC (not the exporting machine's zone:
    the same run gives the same bytes anywhere)."""
    try:
        moment = datetime.fromisoformat(str(created_at).replace("Z", "+00:00"))
    except ValueError:
        return "0"
    return str(int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()))


def _flag(value: object) -> str:
    return "true" if bool(value) else "false"


def _instance(row: dict, common: dict, k: int, planned: int) -> dict:
    tel = row.get  # a missing value is None already
    tokens = [tel("input_tokens"), tel("output_tokens"), tel("total_tokens")]
    usage = None if None in tokens else {
        "input_tokens": int(tokens[0]), "output_tokens": int(tokens[1]), "total_tokens": int(tokens[2]),
        "input_tokens_cache_read": None if tel("cached_input_tokens") is None else int(tel("cached_input_tokens")),
        "reasoning_tokens": None if tel("reasoning_tokens") is None else int(tel("reasoning_tokens"))}
    timing = {"latency_ms": tel("task_wall_ms"), "time_to_first_token_ms": tel("time_to_first_token_ms")}
    failure, stage = row["failure_class"], row["failure_stage"]
    metadata = {"run_id": common["run_id"], "attempt": str(int(row["attempt"])), "agent_eligible": _flag(row["agent_eligible"]),
                "success": _flag(row["success"]), "failure_class": failure, "k": str(k), "planned_repeats": str(planned)}
    if stage is not None:
        metadata["failure_stage"] = stage
    if row["quality_score"] is not None:
        metadata["quality_score"] = repr(float(row["quality_score"]))
    if row["cost"] is not None:  # USD, as the record (or ingest's price table) gives it
        metadata["cost"] = repr(float(row["cost"]))
    if row.get("cost_source") is not None:
        metadata["cost_source"] = str(row["cost_source"])
    return {
        "schema_version": EEE_SCHEMA_VERSION, "evaluation_id": common["evaluation_id"], "model_id": common["model_id"],
        "evaluation_name": common["evaluation_name"], "sample_id": row["task_id"],
        "sample_hash": hashlib.sha256(row["task_id"].encode("utf-8")).hexdigest(),
        "interaction_type": "agentic", "input": {"raw": row["task_id"], "reference": []}, "output": None,
        "messages": [], "answer_attribution": [],
        "evaluation": {"score": 1.0 if row["success"] else 0.0, "is_correct": bool(row["success"]),
                       "tool_calls_count": None if tel("tool_calls") is None else int(tel("tool_calls"))},
        "token_usage": usage, "performance": timing if any(v is not None for v in timing.values()) else None,
        "error": None if failure in ("", "agent") else (failure + (f" ({stage})" if stage else "")),
        "metadata": metadata,
    }


def _result(doc: dict, name: str, metric_id: str, label: str, suite: dict, created: object) -> dict | None:
    rate, k = doc["metrics"][name], doc["k"]
    if rate["value"] is None:
        return None
    result = {
        "evaluation_result_id": label.format(k=k), "evaluation_name": suite["name"],
        "source_data": {"dataset_name": suite["name"], "source_type": "other",
                        "additional_details": {"suite_version": suite["version"],
                                               "tasks_planned": str(doc["tasks"]["planned"])}},
        "metric_config": {
            "evaluation_description": f"{label.format(k=k)} of the capbench run format, section 6",
            "metric_id": metric_id, "metric_name": label.format(k=k), "metric_kind": "pass_rate",
            "metric_unit": "proportion", "metric_parameters": {"k": 1 if name == "pass@1" else k},
            "lower_is_better": False, "score_type": "continuous", "min_score": 0, "max_score": 1},
        "score_details": {
            "score": rate["value"],
            "details": {"successes": str(rate["successes"]), "n": str(rate["n"]), "coverage": repr(rate["coverage"])},
            "uncertainty": {"confidence_interval": {"lower": rate["ci_low"], "upper": rate["ci_high"],
                                                     "confidence_level": 0.95, "method": "wilson"},
                            "num_samples": rate["n"]}},
    }
    if isinstance(created, str):
        result["evaluation_timestamp"] = created
    return result


def eee_records(run: Run) -> tuple[str, dict, list[dict]]:
    """``(directory under DIR, aggregate record without its companion's checksum, instance rows)``."""
    manifest = run.manifest
    config = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
    suite_doc = manifest.get("suite") if isinstance(manifest.get("suite"), dict) else {}
    suite = {"name": str(suite_doc.get("name", "unspecified")), "version": str(suite_doc.get("version", ""))}
    developer, model = path_component(config.get("provider")), path_component(config.get("model"))
    collection = path_component(suite["name"])
    model_id = f"{developer}/{model}"
    created = manifest.get("created_at")
    retrieved = _epoch(created)
    common = {"run_id": run.run_id, "model_id": model_id, "evaluation_name": suite["name"],
              "evaluation_id": f"{suite['name']}/{model_id}/{run.run_id}"}
    doc = compute_metrics(run)
    runner = manifest.get("runner") if isinstance(manifest.get("runner"), dict) else {}
    aggregate = {
        "schema_version": EEE_SCHEMA_VERSION, "evaluation_id": common["evaluation_id"],
        "retrieved_timestamp": retrieved,
        "source_metadata": {"source_name": "capbench-nb", "source_type": "evaluation_run",
                            "source_organization_name": str(runner.get("name") or "unspecified"),
                            "evaluator_relationship": "other",
                            "additional_details": {"run_id": run.run_id, "status": str(manifest.get("status")),
                                                   "toolkit": "capbench-nb", "toolkit_version": __version__}},
        "eval_library": {"name": str(runner.get("name") or "unspecified"),
                         "version": str(runner.get("version") or "unknown")},
        "model_info": {"name": str(config.get("model") or "unspecified"), "id": model_id,
                       "developer": str(config.get("provider") or "unspecified"),
                       "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}},
        "evaluation_results": [r for name, metric_id, label in _METRICS
                               if (r := _result(doc, name, metric_id, label, suite, created)) is not None],
    }
    if isinstance(created, str):
        aggregate["evaluation_timestamp"] = created
    planned = dict(zip(run.plan["task_id"].astype(object), run.plan["planned_repeats"].astype(int)))
    attempts = run.attempts.astype(object).where(run.attempts.notna(), None)
    rows = [_instance(row, common, int(run.k), planned[row["task_id"]]) for row in attempts.to_dict("records")]
    return f"data/{collection}/{developer}/{model}", aggregate, rows


def export_eee(run: str | os.PathLike | Run, out: str | os.PathLike, *, allow_invalid: bool = False,
               skip_evidence: bool = False) -> Path:
    """Write the run's EEE aggregate record and its instance-level JSONL under ``out``; returns the aggregate's path.

    A run without counted attempts (an empty results.jsonl, or only anomalies) is refused (``eee-no-attempts``)
    and nothing is written: EEE's validator refuses a samples file without rows, and an aggregate alone, without
    ``detailed_evaluation_results``, would say the instance rows were not published (and hold no result: every
    rate of such a run has an empty denominator), not that there were none.
    """
    run = run if isinstance(run, Run) else load_run(run, strict=not allow_invalid, skip_evidence=skip_evidence)
    if run.attempts.empty:
        raise InvalidRunError(str(Path(run.path) / "results.jsonl"), "eee-no-attempts", "the run has no counted "
                              "attempts, so there is no instance-level record Every Eval Ever can hold (its "
                              "validator refuses an empty samples file): nothing written")
    where, aggregate, rows = eee_records(run)
    name = str(uuid.UUID(bytes=hashlib.sha256(json.dumps(run.hashes, sort_keys=True).encode()).digest()[:16], version=4))
    text = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
    aggregate["detailed_evaluation_results"] = {
        "format": "jsonl", "file_path": f"{where}/{name}_samples.jsonl", "hash_algorithm": "sha256",
        "checksum": hashlib.sha256(text.encode("utf-8")).hexdigest(), "total_rows": len(rows)}
    directory = Path(out) / where
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / f"{name}_samples.jsonl", text)
    return write_atomic(directory / f"{name}.json", json.dumps(aggregate, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
