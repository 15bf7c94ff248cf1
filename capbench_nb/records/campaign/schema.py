"""The tables of a campaign store (spec section 14), as data.

``attempts/run_id=<value>/part-0.parquet`` has one column per field of
:data:`~capbench_nb.format.fields.RECORD` that section 14 names, and one per telemetry field of
:data:`~capbench_nb.format.fields.RECORD_TELEMETRY`, each with the field's own ``arrow_type``: a
telemetry field added to the format appears in the store without touching this module.  Two
columns follow that section 14 does not name, kept so that a run read back from the store is the
run the JSON path loads (:mod:`~capbench_nb.records.campaign.reader`): ``line`` (the physical line
of results.jsonl) and ``telemetry_source`` (its compact JSON text, as ``Run.records`` holds it).

``runs.parquet`` and ``tasks.parquet`` are stated below, column by column; ``runs.parquet`` also
keeps ``manifest``, ``inputs`` (the run's input hashes), ``anomalies`` and ``selection`` (the run's checked
selection.jsonl of section 9, null without one) as JSON text, and ``strict`` and ``evidence_checked``,
for the same reason.
"""

from __future__ import annotations

import pyarrow as pa

from capbench_nb.format.fields import RECORD_FIELDS, RECORD_TELEMETRY

__all__ = [
    "RUNS_FILE", "TASKS_FILE", "ATTEMPTS_DIR", "PART_FILE", "PARTITION_KEY", "STORE_NAMES", "arrow_type",
    "ATTEMPT_FIELDS", "ATTEMPT_EXTRA", "ATTEMPTS_SCHEMA", "RUNS_COLUMNS", "RUNS_SCHEMA", "TASKS_SCHEMA",
    "TELEMETRY_COLUMNS", "hive_escape", "partition_name", "HIVE_NULL_PARTITION", "MAX_PARTITION_BYTES",
    "STORE_SCHEMA_VERSION", "SCHEMA_KEY", "store_version",
]

RUNS_FILE, TASKS_FILE, ATTEMPTS_DIR, PART_FILE = "runs.parquet", "tasks.parquet", "attempts", "part-0.parquet"
PARTITION_KEY = "run_id"
#: What a store directory holds (the whole set is published at once).
STORE_NAMES = (RUNS_FILE, TASKS_FILE, ATTEMPTS_DIR)

_ARROW = {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
          "large_string": pa.large_string(), "list<string>": pa.list_(pa.string())}


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type a field table names (``Field.arrow_type``, ``TelemetryField.arrow_type``)."""
    return _ARROW[name]


#: Section 14's attempt columns before the telemetry ones, then after them, in its order.
_BEFORE = ("task_id", "attempt", "success", "agent_eligible", "failure_class", "failure_stage", "quality_score",
           "cost", "cost_source")
_AFTER = ("evidence", "artifact_dir")
TELEMETRY_COLUMNS = tuple(f.name.split(".", 1)[1] for f in RECORD_TELEMETRY)

#: (column, arrow type, nullable) of the attempts table, from the field tables.
ATTEMPT_FIELDS = (
    *((name, arrow_type(RECORD_FIELDS[name].arrow_type), RECORD_FIELDS[name].nullable) for name in _BEFORE),
    *((f.name.split(".", 1)[1], arrow_type(f.arrow_type), True) for f in RECORD_TELEMETRY),
    *((name, arrow_type(RECORD_FIELDS[name].arrow_type), name != "evidence") for name in _AFTER),
)
#: Columns beyond section 14's list (see the module docstring).
ATTEMPT_EXTRA = (("line", pa.int64(), False), ("telemetry_source", pa.string(), False))
ATTEMPTS_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null in ATTEMPT_FIELDS + ATTEMPT_EXTRA])

#: runs.parquet: section 14's columns, then the ones that let a run be read back whole.
RUNS_COLUMNS = (
    ("run_id", pa.string(), False), ("suite_name", pa.string(), True), ("suite_version", pa.string(), True),
    ("lock", pa.string(), True), ("k", pa.int64(), False), ("status", pa.string(), False),
    ("created_at", pa.string(), True), ("model", pa.string(), True), ("config", pa.string(), True),
    ("tasks_planned", pa.int64(), False), ("metrics_sha256", pa.string(), False),
    ("toolkit_version", pa.string(), False),
    ("manifest", pa.string(), False), ("inputs", pa.string(), False), ("anomalies", pa.string(), False),
    ("strict", pa.bool_(), False), ("evidence_checked", pa.bool_(), False),
    ("selection", pa.string(), True),
)
#: The store's layout version, in runs.parquet's schema metadata (``SCHEMA_KEY``): a reader refuses another
#: (``campaign-schema``) instead of misreading it.
STORE_SCHEMA_VERSION = "capbench.campaign/1"
SCHEMA_KEY = b"capbench.schema_version"
RUNS_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null in RUNS_COLUMNS],
                        metadata={SCHEMA_KEY: STORE_SCHEMA_VERSION.encode()})


def store_version(schema: pa.Schema) -> str | None:
    """The layout version a runs.parquet schema declares (None for none)."""
    value = (schema.metadata or {}).get(SCHEMA_KEY)
    return None if value is None else value.decode("utf-8", "replace")
TASKS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False), pa.field("task_id", pa.string(), nullable=False),
    pa.field("position", pa.int64(), nullable=False), pa.field("planned_repeats", pa.int64(), nullable=False),
    pa.field("labels", pa.map_(pa.string(), pa.string())),
])

#: The characters Hive's ``FileUtils.escapePathName`` (and Spark's ``ExternalCatalogUtils``) escape as
#: ``%XX``; NUL too, which no file name may hold.  Everything else, non-ASCII included, stays as it is.
_HIVE_ESCAPED = frozenset(map(chr, range(0x20))) | frozenset('"#%\'*/:=?\\\x7f{[]^')
#: The partition directory value Hive writes for a null, and DuckDB, Spark and pyarrow read as one.
HIVE_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: NAME_MAX: a partition directory name (``run_id=`` + the escaped value) longer than this is refused.
MAX_PARTITION_BYTES = 255


def hive_escape(value: str) -> str:
    """``value`` percent-encoded as Hive encodes a partition value (``a/b`` -> ``a%2Fb``)."""
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED else c for c in value)


def partition_name(run_id: str) -> str:
    """The attempts directory of a run: ``run_id=<escaped run_id>``.

    One value more is escaped than Hive does: :data:`HIVE_NULL_PARTITION`, the name Hive writes for a null, is
    ``%5F_HIVE_DEFAULT_PARTITION__``.  DuckDB and Spark compare a directory's value with that name before they
    decode it, so they read this run_id back, where the name itself would be read as a null (and the run's
    attempts as no run's).  pyarrow's Hive partitioning decodes first, and reads it as a null either way.
    """
    value = hive_escape(run_id)
    return f"{PARTITION_KEY}={'%5F' + value[1:] if value == HIVE_NULL_PARTITION else value}"
