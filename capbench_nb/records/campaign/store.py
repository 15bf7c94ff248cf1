"""Writing a campaign store (spec section 14): ``export RUN... --out DIR [--append] [--replace]``.

Every export builds the whole new store in a staging folder beside DIR (the partitions of runs it
keeps are hard links, so an append copies nothing) and then puts it in DIR's place in one step
(:func:`capbench_nb.io.publish.switch`: one ``RENAME_EXCHANGE``).  A reader, or a kill at any
moment, sees the store as it was or as it is after the export: never half a run, never a run
without its tasks.  A killed export's staging folder is removed by the next one
(:func:`capbench_nb.io.publish.recover`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError, one_line
from capbench_nb.io import publish
from capbench_nb.io.atomic import fsync_directory, fsync_file
from capbench_nb.records.campaign.reader import check_version, partition_dir
from capbench_nb.records.campaign.schema import (
    ATTEMPT_EXTRA, ATTEMPT_FIELDS, ATTEMPTS_DIR, ATTEMPTS_SCHEMA, MAX_PARTITION_BYTES, PART_FILE, RUNS_FILE,
    RUNS_SCHEMA, STORE_NAMES, TASKS_FILE, TASKS_SCHEMA, partition_name,
)
from capbench_nb.records.run import Run
from capbench_nb.records.selection import selection_text

__all__ = ["attempts_table", "tasks_table", "run_row", "read_table", "write_store"]


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _categorical_array(series: pd.Series, kind: pa.DataType) -> pa.Array:
    """A pandas categorical column as a plain Arrow array (null where the value is missing)."""
    codes = series.cat.codes.to_numpy()
    dictionary = pa.array([str(c) for c in series.cat.categories], pa.string())
    indices = pa.array(codes.astype(np.int32), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).dictionary_decode().cast(kind)


def _evidence_array(series: pd.Series) -> pa.Array:
    """Evidence (compact JSON text per record, categorical) as Arrow lists of strings."""
    codes = series.cat.codes.to_numpy()
    lists = pa.array([json.loads(c) for c in series.cat.categories], pa.list_(pa.string()))
    return lists.take(pa.array(np.maximum(codes, 0).astype(np.int64))) if len(lists) else pa.array(
        [[]] * len(series), pa.list_(pa.string()))


def attempts_table(run: Run) -> pa.Table:
    """The counted records of ``run`` (planned tasks, within planned repeats) as the attempts table."""
    records = run.attempts
    arrays = []
    for name, kind, _ in ATTEMPT_FIELDS + ATTEMPT_EXTRA:
        column = records[name]
        if name == "evidence":
            arrays.append(_evidence_array(column))
        elif isinstance(column.dtype, pd.CategoricalDtype):
            arrays.append(_categorical_array(column, kind))
        else:
            arrays.append(pa.array(column, from_pandas=True).cast(kind))
    return pa.Table.from_arrays(arrays, schema=ATTEMPTS_SCHEMA)


def _label(value) -> str | None:
    return value if isinstance(value, str) or value is None else _json(value)


def tasks_table(run: Run) -> pa.Table:
    """One row per planned task of ``run``: plan position, planned repeats, labels (non-string values as JSON text)."""
    tasks = run.manifest["plan"]["tasks"]
    labels = [[(key, _label(value)) for key, value in task.items() if key not in ("task_id", "repeats")
               and value is not None] for task in tasks]
    return pa.Table.from_pydict({
        "run_id": [run.run_id] * len(tasks),
        "task_id": [str(t) for t in run.plan["task_id"].astype(object)],
        "position": list(range(len(tasks))),
        "planned_repeats": run.plan["planned_repeats"].astype("int64").tolist(),
        "labels": labels,
    }, schema=TASKS_SCHEMA)


def _anomaly_rows(run: Run) -> list[dict]:
    frame = run.anomalies.astype(object).where(run.anomalies.notna(), None)
    return [{key: (int(v) if key in ("attempt", "line") and v is not None else v) for key, v in row.items()}
            for row in frame.to_dict("records")]


def run_row(run: Run, metrics_sha256: str) -> dict:
    """The runs.parquet row of ``run`` (section 14's columns, then those a run is read back with)."""
    manifest = run.manifest
    suite = manifest.get("suite") if isinstance(manifest.get("suite"), dict) else {}
    config = manifest.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    text = lambda v: v if isinstance(v, str) or v is None else _json(v)  # noqa: E731
    return {
        "run_id": run.run_id, "suite_name": text(suite.get("name")), "suite_version": text(suite.get("version")),
        "lock": text(suite.get("lock")), "k": int(run.k), "status": manifest["status"],
        "created_at": text(manifest.get("created_at")), "model": text(model),
        "config": None if config is None else json.dumps(config, ensure_ascii=False, sort_keys=True),
        "tasks_planned": int(len(run.plan)), "metrics_sha256": metrics_sha256, "toolkit_version": __version__,
        "manifest": _json(manifest), "inputs": _json(dict(run.hashes)), "anomalies": _json(_anomaly_rows(run)),
        "strict": bool(run.strict), "evidence_checked": bool(run.evidence_checked),
        "selection": None if run.selection is None else selection_text(run.selection),
    }


def read_table(store: Path, name: str) -> pa.Table | None:
    """``runs.parquet`` or ``tasks.parquet`` of the store at ``store``, or None when it has none."""
    path = Path(store) / name
    return pq.read_table(path) if path.is_file() else None


def _check(out: Path, runs: Sequence[Run], append: bool, replace: bool) -> list[str]:
    """The run_ids the store already holds (raises when the export must be refused)."""
    existing = read_table(out, RUNS_FILE)
    if out.exists() and existing is None:
        if not out.is_dir() or any(not n.startswith(".") for n in os.listdir(out)):
            raise InvalidRunError(str(out), "campaign-not-a-store",
                                  "the output exists and is not a campaign store (no runs.parquet); give a new directory")
    if existing is not None:
        check_version(out)  # appending to a store of another layout would mix two
    if existing is not None and not append:
        raise InvalidRunError(str(out), "campaign-exists",
                              "a campaign store is already there; add runs with --append (and --replace to re-export one)")
    ids = [run.run_id for run in runs]
    seen: set[str] = set()
    for rid in ids:
        if rid in seen:
            raise InvalidRunError(str(out), "campaign-duplicate-run", f"run_id {one_line(repr(rid))} is given twice")
        seen.add(rid)
        if len(os.fsencode(partition_name(rid))) > MAX_PARTITION_BYTES:
            raise InvalidRunError(str(out), "campaign-run-id-too-long",
                                  f"run_id {one_line(repr(rid), 80)} makes a partition directory name longer than "
                                  f"{MAX_PARTITION_BYTES} bytes")
    held = [] if existing is None else existing.column("run_id").to_pylist()
    clash = [rid for rid in ids if rid in held]
    if clash and not replace:
        raise InvalidRunError(str(out), "campaign-run-exists",
                              f"run_id {one_line(repr(clash[0]))} is already in the store; re-export it with --replace")
    return held


def _link_tree(src: Path, dst: Path) -> None:
    dst.mkdir()
    for entry in sorted(os.listdir(src)):
        try:
            os.link(src / entry, dst / entry)
        except OSError:
            shutil.copy2(src / entry, dst / entry)


def _write(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path)
    fsync_file(path)


def _stage(staging: Path, out: Path, entries: Sequence[tuple[Run, str]], held: list[str]) -> None:
    """Write the new store into ``staging``: the kept runs' partitions linked, each new run's written."""
    new = {run.run_id: (run, digest) for run, digest in entries}
    attempts = staging / ATTEMPTS_DIR
    attempts.mkdir()
    old_runs, old_tasks = read_table(out, RUNS_FILE), read_table(out, TASKS_FILE)
    rows, tasks = [], []
    for i, rid in enumerate(held):
        if rid in new:  # --replace: the new version takes the old one's place in the order
            run, digest = new.pop(rid)
            rows.append(pa.Table.from_pylist([run_row(run, digest)], schema=RUNS_SCHEMA))
            tasks.append(tasks_table(run))
            (attempts / partition_name(rid)).mkdir()
            _write(attempts_table(run), attempts / partition_name(rid) / PART_FILE)
        else:
            rows.append(old_runs.slice(i, 1).cast(RUNS_SCHEMA))
            mask = np.asarray(old_tasks.column("run_id").to_pylist(), dtype=object) == rid
            tasks.append(old_tasks.filter(pa.array(mask)).cast(TASKS_SCHEMA))
            _link_tree(partition_dir(out, rid), attempts / partition_name(rid))
    for rid, (run, digest) in new.items():
        rows.append(pa.Table.from_pylist([run_row(run, digest)], schema=RUNS_SCHEMA))
        tasks.append(tasks_table(run))
        (attempts / partition_name(rid)).mkdir()
        _write(attempts_table(run), attempts / partition_name(rid) / PART_FILE)
    _write(pa.concat_tables(rows) if rows else RUNS_SCHEMA.empty_table(), staging / RUNS_FILE)
    _write(pa.concat_tables(tasks) if tasks else TASKS_SCHEMA.empty_table(), staging / TASKS_FILE)
    fsync_directory(attempts)
    fsync_directory(staging)


def write_store(out: str | os.PathLike, entries: Sequence[tuple[Run, str]], *, append: bool = False,
                replace: bool = False) -> Path:
    """Write (or, with ``append``, extend) the campaign store ``out`` with ``entries``, published in one step.

    Parameters
    ----------
    out : path-like
        The store directory: new (or empty), or, with ``append``, an existing store.
    entries : sequence of (Run, str)
        Each run with the sha256 (``"sha256:..."``) of the metrics.json the toolkit computes for it.
    append : bool, default False
        Add the runs to the existing store ``out``.
    replace : bool, default False
        A run_id already in the store is re-exported (in its place) instead of refused.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    InvalidRunError
        ``campaign-exists`` (a store without ``append``), ``campaign-not-a-store``,
        ``campaign-run-exists`` (without ``replace``), ``campaign-duplicate-run``,
        ``campaign-run-id-too-long``; the store is left as it was.
    """
    out = Path(out)
    publish.recover(out)  # a killed export's staging folder, or a .previous store a kill left aside
    held = _check(out, [run for run, _ in entries], append, replace)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=publish.sibling_prefix(out), suffix=publish.PARTIAL))
    lock = publish.lock(staging)
    try:
        _stage(staging, out, entries, held)
        if not publish.switch(staging, out, STORE_NAMES):
            raise OSError(f"{out} cannot be replaced (a mount point?)")
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        os.close(lock)
    return out
