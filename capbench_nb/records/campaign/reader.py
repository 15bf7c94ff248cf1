"""Reading a run back from a campaign store: the :class:`~capbench_nb.records.run.Run` the JSON path loads.

:func:`read_run` builds ``Run.records`` from the run's Parquet partition (no JSON file is read) with
the dtypes of :data:`~capbench_nb.format.fields.RECORD_DTYPES`, and the manifest, plan, k, input
hashes and anomalies from its runs.parquet row.  The store holds counted records only (section 14:
anomalies stay out of the attempts table), so ``records`` has those, with ``anomaly`` null;
``attempts``, ``anomalies`` and every metric are the JSON path's, selected@k included: ``selection`` is the
run's checked selection.jsonl, kept in runs.parquet.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from capbench_nb.errors import InvalidRunError, one_line
from capbench_nb.format import RECORD_ANOMALIES
from capbench_nb.format.fields import RECORD_COLUMNS, RECORD_DTYPES
from capbench_nb.records.campaign.schema import (
    ATTEMPTS_DIR, HIVE_NULL_PARTITION, PART_FILE, PARTITION_KEY, RUNS_COLUMNS, RUNS_FILE, STORE_SCHEMA_VERSION,
    TASKS_FILE, TELEMETRY_COLUMNS, partition_name, store_version,
)
from capbench_nb.records.exact_reader import CATEGORIES, canonical_json
from capbench_nb.records.manifest import fixed_k, plan_frame
from capbench_nb.records.run import Run
from capbench_nb.records.selection import selection_from_text

__all__ = ["Store", "open_store", "check_version", "partition_dir", "corrupt_part", "read_records", "read_run"]

_MASKED = {pa.int64(): pd.Int64Dtype(), pa.float64(): pd.Float64Dtype(), pa.bool_(): pd.BooleanDtype()}
#: runs.parquet columns :func:`open_store` leaves on disk: JSON text as large as the run's plan and anomalies.
_BULKY = ("manifest", "anomalies", "selection")
_ANOMALY_DTYPES = {"kind": "string", "task_id": "string", "attempt": "Int64", "line": "int64", "reason": "string",
                   "rule": "string"}


@dataclass(frozen=True)
class Store:
    """An open campaign store: its directory and its ``runs.parquet`` (one row per run, as a DataFrame, without
    the ``manifest`` and ``anomalies`` texts: :meth:`row` reads those for one run)."""

    path: Path
    runs: pd.DataFrame

    @property
    def run_ids(self) -> list[str]:
        return [str(r) for r in self.runs["run_id"]]

    def partition(self, run_id: str) -> Path:
        """The directory of a run's attempts (``attempts/run_id=<escaped>``)."""
        return partition_dir(self.path, run_id)

    def row(self, run_id: str) -> dict:
        """The run's whole runs.parquet row, its read-back columns included (read for this run only)."""
        if run_id not in set(self.run_ids):
            raise KeyError(run_id)
        found = pq.read_table(self.path / RUNS_FILE, filters=[("run_id", "==", run_id)])
        return found.slice(0, 1).to_pylist()[0]


def open_store(path: str | os.PathLike) -> Store:
    """Open the campaign store at ``path``; InvalidRunError (``campaign-not-a-store``) when it is none."""
    store = Path(path)
    if not (store / RUNS_FILE).is_file() or not (store / TASKS_FILE).is_file():
        raise InvalidRunError(str(store), "campaign-not-a-store",
                              f"not a campaign store: no {RUNS_FILE} and {TASKS_FILE} (write one with export)")
    check_version(store)
    summary = [name for name, _, _ in RUNS_COLUMNS if name not in _BULKY]  # a run's manifest is read with the run
    return Store(store, pq.read_table(store / RUNS_FILE, columns=summary).to_pandas(types_mapper=_MASKED.get))


def _unreadable(path: Path, exc: BaseException) -> InvalidRunError:
    """``campaign-corrupt``: ``path`` is not a readable Parquet file of the store."""
    return InvalidRunError(str(path), "campaign-corrupt", f"not a readable Parquet file: {one_line(str(exc), 200)}")


def check_version(store: Path) -> None:
    """InvalidRunError unless the store's runs.parquet is a readable Parquet file of this layout version
    (``campaign-corrupt``, ``campaign-schema``)."""
    path = store / RUNS_FILE
    try:
        found = store_version(pq.read_schema(path))
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    if found != STORE_SCHEMA_VERSION:
        raise InvalidRunError(str(path), "campaign-schema", f"a store of layout {found or 'without a version'}; this "
                              f"toolkit reads {STORE_SCHEMA_VERSION}: export the runs into a new store")


def partition_dir(store: Path, run_id: str) -> Path:
    """The directory of a run's attempts in ``store``: ``attempts/`` + :func:`partition_name`; for the run_id
    ``__HIVE_DEFAULT_PARTITION__`` in a store written before that name was escaped, its directory of then when
    only that one is there (the engines read its run_id as a null; an ``export --append`` renames it)."""
    path = store / ATTEMPTS_DIR / partition_name(run_id)
    if run_id == HIVE_NULL_PARTITION and not path.exists():
        before = store / ATTEMPTS_DIR / f"{PARTITION_KEY}={HIVE_NULL_PARTITION}"
        return before if before.is_dir() else path
    return path


def corrupt_part(store: Path, run_ids) -> InvalidRunError | None:
    """The error naming the first run partition file that is not a readable Parquet file, None when all are."""
    for run_id in run_ids:
        path = partition_dir(store, run_id) / PART_FILE
        try:
            pq.read_metadata(path)
        except (OSError, pa.ArrowException) as exc:
            return _unreadable(path, exc)
    return None


def _categorical(array: pa.ChunkedArray, categories=None) -> pd.Categorical:
    """A string column as a pandas Categorical: fixed ``categories``, or the sorted distinct values."""
    if pa.types.is_dictionary(array.type):  # read as the file's dictionary (read_records): no string per row
        encoded = array.unify_dictionaries().combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    else:
        encoded = pc.dictionary_encode(array).combine_chunks()
    texts = encoded.dictionary.to_pylist()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if categories is not None:
        dtype = pd.CategoricalDtype(pd.Categorical([], categories=categories).categories)
    else:  # the categories the JSON path infers from its values (None included when there is one)
        dtype = pd.CategoricalDtype(pd.Categorical(texts + [None] * bool((codes < 0).any())).categories)
    where = np.asarray(dtype.categories.get_indexer(texts), dtype=np.int64)
    return pd.Categorical.from_codes(np.where(codes >= 0, where[np.maximum(codes, 0)] if where.size else -1, -1),
                                     dtype=dtype)


def _strings(array: pa.ChunkedArray):
    """What ``pd.array(values, dtype="string")`` gives, built from Arrow."""
    dtype = pd.StringDtype()
    if dtype.storage == "pyarrow":
        return pd.arrays.ArrowStringArray(array.combine_chunks().cast(pa.large_string()))
    return pd.array(array.to_numpy(), dtype=dtype)


def _evidence(array: pa.ChunkedArray) -> pd.Categorical:
    """Evidence lists as their compact JSON text (``Run.records``' form), categorical."""
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy()
    texts = np.full(len(lengths), "[]", dtype=object)
    rows = np.flatnonzero(lengths)
    if rows.size:
        texts[rows] = [canonical_json(refs) for refs in array.take(pa.array(rows)).to_pylist()]
    return pd.Categorical(texts)


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """A run's attempts partition file as ``Run.records`` (columns and dtypes of the JSON path)."""
    # the categorical columns come as Parquet stored them, dictionary-encoded (a few distinct texts each)
    categorical = [name for name in RECORD_COLUMNS if RECORD_DTYPES.get(name) == "category" and name != "evidence"]
    table = pq.ParquetFile(path, read_dictionary=categorical).read()
    masked = [name for name in RECORD_COLUMNS + TELEMETRY_COLUMNS
              if RECORD_DTYPES.get(name) in ("Int64", "Float64", "boolean")]
    data = table.select(masked).to_pandas(types_mapper=_MASKED.get)
    frame = {"line": table.column("line").to_numpy()}
    for name in RECORD_COLUMNS[1:] + TELEMETRY_COLUMNS:
        dtype = RECORD_DTYPES[name]
        if name in masked:
            frame[name] = data[name].array
        elif name == "evidence":
            frame[name] = _evidence(table.column(name))
        elif dtype == "category":
            frame[name] = _categorical(table.column(name), CATEGORIES.get(name))
        else:
            frame[name] = _strings(table.column(name))
    records = pd.DataFrame(frame, copy=False)
    records["anomaly"] = pd.Categorical([None] * len(records), categories=list(RECORD_ANOMALIES))
    return records


def read_run(store: Store | str | os.PathLike, run_id: str) -> Run:
    """The run ``run_id`` of a store, as :func:`~capbench_nb.records.run.load_run` gives it from its directory.

    ``Run.path`` is the run's partition directory in the store.  KeyError-free: a run_id the store does
    not hold raises InvalidRunError (``campaign-unknown-run``).
    """
    store = store if isinstance(store, Store) else open_store(store)
    try:
        row = store.row(run_id)
    except KeyError:
        raise InvalidRunError(str(store.path), "campaign-unknown-run",
                              f"run_id {one_line(repr(run_id))} is not in the store") from None
    manifest = json.loads(row["manifest"])
    anomalies = pd.DataFrame(json.loads(row["anomalies"]), columns=list(_ANOMALY_DTYPES)).astype(_ANOMALY_DTYPES)
    where = store.partition(run_id)
    try:
        records = read_records(where / PART_FILE)
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(where / PART_FILE, exc) from None
    return Run(path=where, manifest=manifest, plan=plan_frame(manifest), k=fixed_k(manifest),
               records=records, anomalies=anomalies, hashes=json.loads(row["inputs"]),
               strict=bool(row["strict"]), evidence_checked=bool(row["evidence_checked"]),
               selection=None if row.get("selection") is None else selection_from_text(row["selection"]))
