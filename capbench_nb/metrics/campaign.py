"""A campaign store opened for metrics: ``cb.campaign(DIR)`` (spec section 14).

:class:`Campaign` computes every run's pass@1, pass@k and pass^k (each at its own k) from the
store alone, no JSON file read, with the rules of :mod:`capbench_nb.metrics.campaign_rules` on an
engine: DuckDB, embedded (the default), or Apache Spark (``engine="spark"``: a local session, or any
cluster through ``spark.master``).  The counts are exact on both engines and the rates are
:meth:`~capbench_nb.metrics.rates.Rate.of` on them, so they equal each run's metrics.json.
:meth:`Campaign.run` reads a run back as the :class:`~capbench_nb.records.run.Run` the JSON path loads,
and :meth:`Campaign.board` gives the board.json of section 10 from the runs of the store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from capbench_nb.metrics.campaign_rules import COUNT_COLUMNS, run_counts
from capbench_nb.metrics.rates import Rate
from capbench_nb.records.campaign.reader import Store, corrupt_part, open_store, read_run
from capbench_nb.records.campaign.schema import ATTEMPTS_DIR, PART_FILE, RUNS_FILE
from capbench_nb.records.run import Run

__all__ = ["ENGINES", "Campaign", "campaign", "spark_session"]

ENGINES = ("duckdb", "spark")
#: Spark must read ``run_id=...`` partition values as strings, whatever they look like ("007", "1e3").
SPARK_CONF = {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}


def spark_session(conf: dict[str, str] | None = None):
    """A SparkSession (``getOrCreate``) with ``conf`` (e.g. ``{"spark.master": "spark://host:7077"}``).

    Without ``spark.master`` Spark's own default applies (``local[*]`` for a plain Python process,
    or what ``spark-submit`` and spark-defaults.conf say).
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("capbench-nb")
    for key, value in {**SPARK_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


class Campaign:
    """A campaign store and the engine its metrics run on.

    Parameters
    ----------
    path : path-like
        The store directory (written by ``capbench-nb export``).
    engine : {"duckdb", "spark"}, default "duckdb"
    spark : SparkSession, optional
        The session of ``engine="spark"`` (default: :func:`spark_session` with ``spark_conf``).
    spark_conf : dict, optional
        Spark configuration for a new session, e.g. ``{"spark.master": "local[2]"}``.
    duckdb_config : dict, optional
        DuckDB settings of the embedded connection, e.g. ``{"memory_limit": "3GB", "threads": 2}``.

    Notes
    -----
    A ``Campaign`` follows the store: an ``export --append`` (or ``--replace``) publishes a new store in
    DIR's place, and the next call reads that one, its run list and runs.parquet included, so the run list
    and the numbers of one call always come from the same store.  (An export that lands *during* a call
    may still be seen half by that call; the next call is whole again.)
    """

    def __init__(self, path: str | os.PathLike, *, engine: str = "duckdb", spark: Any = None,
                 spark_conf: dict[str, str] | None = None, duckdb_config: dict[str, Any] | None = None) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        if engine == "spark" and spark is None:
            try:
                import pyspark  # noqa: F401
            except ImportError:
                raise ImportError("engine='spark' needs PySpark (and Java 17+): pip install capbench-nb[spark]") from None
        self.path = Path(path)
        self._store, self._stamp = open_store(path), _stamp(self.path)
        self.engine = engine
        self._spark, self._spark_conf, self._duckdb_config = spark, spark_conf, dict(duckdb_config or {})
        self._con = None

    def __repr__(self) -> str:
        return f"Campaign({str(self.path)!r}, {len(self.run_ids)} runs, engine={self.engine!r})"

    @property
    def store(self) -> Store:
        """The store as it is now: read again when an export has published a new one since the last call."""
        stamp = _stamp(self.path)
        if stamp != self._stamp:
            self._store, self._stamp = open_store(self.path), stamp
        return self._store

    @property
    def run_ids(self) -> list[str]:
        """The store's runs, in store order."""
        return self.store.run_ids

    @property
    def runs(self) -> pd.DataFrame:
        """runs.parquet: one row per run (section 14's columns and the read-back ones)."""
        return self.store.runs

    def latest(self, by: str = "model") -> list[str]:
        """The run_id of the latest run of each value of the runs.parquet column ``by``, in store order.

        Latest is the greatest ``created_at`` read as a point in time (ISO 8601, offsets honoured, a time
        without one taken as UTC); a run whose ``created_at`` is null or not ISO 8601 is older than every
        dated run; at equal times the run later in store order wins.  A null ``by`` (a run without
        ``config.model``) is a value of its own.  ``c.board(c.latest())`` is the board of each model's latest run.
        """
        store = self.store
        runs = store.runs
        if by not in runs.columns:
            raise ValueError(f"by must be a column of runs.parquet ({', '.join(runs.columns)}), not {by!r}")
        frame = pd.DataFrame({"key": runs[by].astype(object).where(runs[by].notna(), None),
                              "when": pd.to_datetime(runs["created_at"], utc=True, errors="coerce", format="ISO8601"),
                              "position": range(len(runs))})
        last = frame.sort_values(["when", "position"], na_position="first").groupby("key", dropna=False).tail(1)
        return [store.run_ids[i] for i in sorted(last["position"])]

    def run(self, run_id: str) -> Run:
        """The run ``run_id`` read from Parquet: the :class:`Run` ``load_run`` gives from its directory."""
        return read_run(self.store, run_id)

    def _backend(self):
        if self._con is None:
            import ibis

            if self.engine == "duckdb":
                self._con = ibis.duckdb.connect(**self._duckdb_config)
            else:
                session = self._spark if self._spark is not None else spark_session(self._spark_conf)
                for key, value in SPARK_CONF.items():
                    session.conf.set(key, value)
                self._con = ibis.pyspark.connect(session)
        return self._con

    def tables(self):
        """``(attempts, runs)`` as Ibis tables of the engine (attempts with its ``run_id`` column)."""
        con = self._backend()
        runs = con.read_parquet(str(self.path / RUNS_FILE))
        if self.engine == "duckdb":
            attempts = con.read_parquet(str(self.path / ATTEMPTS_DIR / "*" / PART_FILE), hive_partitioning=True,
                                        hive_types_autocast=False)
        else:
            attempts = con.read_parquet(str(self.path / ATTEMPTS_DIR))
        return attempts, runs

    def counts(self) -> pd.DataFrame:
        """Per run, in store order: ``run_id``, ``k``, ``tasks_planned`` and the pass counts (exact integers)."""
        columns = ["run_id", "k", "tasks_planned"] + list(dict.fromkeys(n for _, s, d in COUNT_COLUMNS for n in (s, d)))
        run_ids = self.store.run_ids
        if not run_ids:
            return pd.DataFrame({c: pd.Series([], dtype="string" if c == "run_id" else "int64") for c in columns})
        try:
            attempts, runs = self.tables()
            table = self._backend().to_pyarrow(run_counts(attempts, runs)).to_pandas()
        except Exception:  # the engine's own error type; a damaged part file is named as bad input instead
            damaged = corrupt_part(self.path, run_ids)
            if damaged is None:
                raise
            raise damaged from None
        order = {rid: i for i, rid in enumerate(run_ids)}
        table = table.sort_values("run_id", key=lambda s: s.map(order)).reset_index(drop=True)
        return table[columns].astype({c: "int64" for c in columns[1:]}).astype({"run_id": "string"})

    def rates(self) -> dict[str, dict[str, Rate]]:
        """``{run_id: {"pass@1": Rate, "pass@k": Rate, "pass^k": Rate}}``, each run at its own k."""
        return {rid: by_metric for rid, _, by_metric in _rates_of(self.counts())}

    def metrics(self) -> pd.DataFrame:
        """One row per run and metric: ``run_id``, ``k``, ``metric``, ``value``, ``successes``, ``n``,
        ``ci_low``, ``ci_high``, ``coverage`` (the rates of metrics.json, nullable dtypes)."""
        rows = [{"run_id": rid, "k": k, "metric": metric, **rate.to_dict()}
                for rid, k, by_metric in _rates_of(self.counts()) for metric, rate in by_metric.items()]
        frame = pd.DataFrame(rows, columns=["run_id", "k", "metric", "value", "successes", "n", "ci_low", "ci_high",
                                            "coverage"])
        return frame.astype({"run_id": "string", "k": "Int64", "metric": "string", "value": "Float64",
                             "successes": "Int64", "n": "Int64", "ci_low": "Float64", "ci_high": "Float64",
                             "coverage": "Float64"})

    def board(self, run_ids: Sequence[str] | None = None, **options) -> dict:
        """The board.json document (spec section 10) of ``run_ids`` (default: every run, store order), read
        from the store; ``options`` are :func:`capbench_nb.metrics.board.board`'s."""
        from capbench_nb.metrics.board import board

        chosen = self.run_ids if run_ids is None else list(run_ids)  # [] is no runs, not every run
        return board([self.run(rid) for rid in chosen], **options)

    def close(self) -> None:
        """Close the DuckDB connection (its memory is freed now, not at garbage collection); a Spark session,
        given or created, stays up for others to use."""
        if self._con is not None and self.engine == "duckdb":
            self._con.disconnect()
        self._con = None


def _rates_of(counts: pd.DataFrame) -> list[tuple[str, int, dict[str, Rate]]]:
    """``(run_id, k, {metric: Rate})`` per row of :meth:`Campaign.counts`, each run at its own k."""
    out = []
    for row in counts.to_dict("records"):
        k = int(row["k"])
        out.append((row["run_id"], k, {
            metric: Rate.of(int(row[s]), int(row[d]), int(row["tasks_planned"]),
                            metric=metric.replace("k", str(k)) if metric != "pass@1" else metric)
            for metric, s, d in COUNT_COLUMNS}))
    return out


def _stamp(path: Path) -> tuple | None:
    """What changes when an export publishes a new store at ``path`` (it swaps in a new folder, with a new
    runs.parquet); None when there is no runs.parquet to stat (``open_store`` then says why)."""
    try:
        folder, runs = os.stat(path), os.stat(path / RUNS_FILE)
    except OSError:
        return None
    return folder.st_ino, folder.st_dev, runs.st_ino, runs.st_mtime_ns, runs.st_size


def campaign(path: str | os.PathLike, *, engine: str = "duckdb", spark: Any = None,
             spark_conf: dict[str, str] | None = None, duckdb_config: dict[str, Any] | None = None) -> Campaign:
    """Open the campaign store at ``path`` (see :class:`Campaign`)."""
    return Campaign(path, engine=engine, spark=spark, spark_conf=spark_conf, duckdb_config=duckdb_config)
